"""Quiet by default, verbose on request: one line per job, no launch lines of Hydra, no progress
bars of MLflow, no warning twice; ``--verbose`` (or Hydra's own ``hydra.verbose``) restores them."""

import subprocess
import sys

import numba
import pytest
from numba.core import event

from support.runs import PROGRESS, child_env, train_process
from svmlab.recording import warm_up

SWEEP = ("-m", "solver=liblinear", "solver.max_iter=2", "seed=0,1", "tracking.log_model=false")


def sweep_output(store, *extra: str) -> str:
    proc = train_process(store, *SWEEP, *extra, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out = proc.communicate(timeout=600)[0]
    assert proc.returncode == 0, out
    return out


@pytest.mark.slow
def test_a_sweep_is_quiet_by_default_and_verbose_on_request(store):
    quiet = sweep_output(store)
    assert len(PROGRESS.findall(quiet)) == 2
    assert "[HYDRA]" not in quiet and "Launching 2 jobs" not in quiet
    # one ConvergenceWarning per job: svmlab's, not scikit-learn's of the same stop
    assert quiet.count("ConvergenceWarning") == 2, quiet
    assert quiet.count("Liblinear stopped before its stopping rule held") == 2
    assert "Liblinear failed to converge" not in quiet

    verbose = sweep_output(store, "--verbose")
    assert "[HYDRA] Launching 2 jobs locally" in verbose
    assert verbose.count("[HYDRA] \t#") == 2  # a launch line per job
    assert verbose.count("Liblinear failed to converge") == 2
    assert verbose.count("ConvergenceWarning") == 4

    assert "[HYDRA] Launching 2 jobs locally" in sweep_output(store, "hydra.verbose=true")


@pytest.mark.parametrize("verbose", [False, True])
def test_mlflow_artifact_progress_bars_only_when_verbose(tmp_path, verbose):
    """MLflow's own progress bar (one per artifact copy) after the command has set up its
    process: off unless ``--verbose``."""
    args = ["datasets", "list", "--data-dir", str(tmp_path)] + ["--verbose"] * verbose
    code = (
        "import contextlib, io, sys\n"
        "from svmlab.app import cli\n"
        "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
        f"    cli.main({args!r})\n"
        "from mlflow.utils.file_utils import ArtifactProgressBar\n"
        "with ArtifactProgressBar.files('Downloading artifacts', total=3) as bar:\n"
        "    for _ in range(3):\n"
        "        bar.update()\n"
    )
    env = {
        k: v
        for k, v in child_env().items()
        if k not in ("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "SVMLAB_VERBOSE")
    }
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=True,
    )
    assert ("Downloading artifacts" in done.stderr) == verbose, done.stderr


def test_the_compile_notice_gives_the_last_compile_time_once_per_process_and_solver(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.setattr(numba.core.config, "CACHE_DIR", str(tmp_path))
    assert warm_up.compile_times() == {}
    warm_up.record_compile_time("QuietToy", 12.4)
    assert warm_up.compile_times() == {"QuietToy": 12.4}
    assert warm_up.compile_times_file().parent == tmp_path

    @numba.njit(cache=False)
    def thrice(x):
        return 3 * x

    for value in (1.0, 2):  # two compilations (two types), two warm-ups of one solver
        estimate = warm_up.compile_times().get("QuietToy")
        with event.install_listener("numba:compile", warm_up.SayCompiling("QuietToy", estimate)):
            thrice(value)
    out = capsys.readouterr().out
    assert out == "compiling solvers (first run only, about 12 s on this machine)\n"
