"""What a command imports: a config error stops before the training path's heavy dependencies."""

import subprocess
import sys

import pytest

HEAVY = ("numba", "mlflow", "sklearn", "matplotlib", "svmlab.solvers")


@pytest.mark.parametrize(
    "override",
    ["kernel.gamma=0", "seed=-1", "tracking.stale_after_s=0", "solver.C=-1", "solver.max_iter=0"],
)
def test_a_config_error_imports_no_solver_dependency(tmp_path, override):
    code = (
        "import sys\n"
        "from svmlab.app import cli\n"
        "try:\n"
        f"    cli.main(['train', {override!r}, 'hydra.run.dir={tmp_path}/out',\n"
        f"              'tracking.uri=sqlite:///{tmp_path}/mlflow.db'])\n"
        "except SystemExit as exc:\n"
        "    print(exc.code)\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.stdout.split("\n")[:2] == ["2", "[]"], out.stdout + out.stderr
    assert "svmlab: error:" in out.stderr
