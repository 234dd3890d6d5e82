"""The optional parts of svmlab (extras of its package): a command that needs one that is
missing stops with one line naming it and the pip command, and leaves nothing behind. A
missing extra is simulated by blocking its modules' import in the command's interpreter."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from svmlab.errors import MissingExtra, require_extra

BIN = Path(sys.executable).parent


def test_require_extra_names_the_extra_and_the_pip_command():
    require_extra(("no_such_module_here", "json"), "server", "a thing")  # one present is enough
    with pytest.raises(MissingExtra, match=r"pip install 'svmlab\[server\]'"):
        require_extra(("no_such_module_here",), "server", "a PostgreSQL store")


def without(tmp_path: Path, *modules: str) -> dict:
    """An environment whose interpreters cannot import ``modules`` (a sitecustomize that
    blocks them), as where the extra that brings them is not installed."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import sys\n" + "".join(f"sys.modules[{m!r}] = None\n" for m in modules)
    )
    path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p)
    return dict(os.environ, PYTHONPATH=path, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}")


def svmlab(tmp_path, env, *args):
    return subprocess.run(
        ["svmlab", *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )


def test_a_submitit_sweep_without_the_cluster_extra_is_refused_in_one_line(tmp_path):
    env = without(tmp_path, "hydra_plugins.hydra_submitit_launcher")
    done = svmlab(tmp_path, env, "train", "-m", "hydra/launcher=submitit_local", "seed=0,1")
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "pip install 'svmlab[cluster]'" in lines[0]
    assert not (tmp_path / "multirun").exists() and not (tmp_path / "mlflow.db").exists()


def test_a_postgresql_store_without_the_server_extra_is_refused_in_one_line(tmp_path):
    env = without(tmp_path, "psycopg", "psycopg2")
    done = svmlab(tmp_path, env, "train", "tracking.uri=postgresql://svmlab@127.0.0.1:9/none")
    assert done.returncode == 2, done.stderr
    assert "pip install 'svmlab[server]'" in done.stderr
    assert "Traceback" not in done.stderr
