"""Run `svmlab train` against a temporary SQLite store, in-process or as a real subprocess."""

import os
import re
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

from mlflow import MlflowClient

from svmlab.app import cli
from svmlab.tracking.store import prepare_store

SUPPORT_CONF = Path(__file__).parent / "conf"
TESTS_DIR = Path(__file__).parents[1]
# A sweep's progress line: done, total, job number, name, status
PROGRESS = re.compile(
    r"^\[\s*(\d+)/(\d+)\] #(\d+) (.+?)  (FINISHED|FAILED|SKIPPED)  ", re.MULTILINE
)


def child_env(**extra: str) -> dict[str, str]:
    """This process's environment for a child process, with the tests' folder first on its
    Python path (for the test-only solvers) and the rest of the path kept."""
    path = os.pathsep.join(p for p in (str(TESTS_DIR), os.environ.get("PYTHONPATH")) if p)
    return os.environ | {"PYTHONPATH": path} | extra


def train_args(store: Path, *overrides: str) -> list[str]:
    """`svmlab train` arguments that keep every output under the store's folder."""
    folder = store.parent
    flags = [o for o in overrides if o.startswith("-")]  # Hydra wants -m before the overrides
    overrides = tuple(o for o in overrides if not o.startswith("-"))
    return [
        "train",
        *flags,
        f"tracking.uri=sqlite:///{store}",
        f"hydra.run.dir={folder}/outputs",
        f"hydra.sweep.dir={folder}/multirun",
        f"hydra.searchpath=[file://{SUPPORT_CONF}]",
        *overrides,
    ]


def train(store: Path, *overrides: str) -> int:
    """`svmlab train` in this process; Hydra turns an error into SystemExit(1)."""
    return cli.main(train_args(store, *overrides))


def train_process(store: Path, *overrides: str, **popen) -> subprocess.Popen:
    """`svmlab train` as a child process (for signals and for the real console script)."""
    env = child_env()
    return subprocess.Popen(
        [sys.executable, "-m", "svmlab.app.cli", *train_args(store, *overrides)],
        env=env,
        text=True,
        **popen,
    )


def store_template(store: Path) -> Path:
    """A new store at ``store`` as its first opening leaves it (schema migrated, write-ahead
    log), less the default experiment: each copy creates its own when first opened, with the
    artifact location a new store would give it. Migrating a new store takes seconds; a copy
    (`copy_store`) takes milliseconds."""
    prepare_store(f"sqlite:///{store}")
    with closing(sqlite3.connect(store)) as db, db:
        db.execute("DELETE FROM experiments WHERE experiment_id = 0")
    return store


def copy_store(template: Path, store: Path) -> Path:
    """A new store at ``store`` holding what ``template`` holds (SQLite's backup: a consistent
    copy even while the template is open)."""
    with closing(sqlite3.connect(template)) as source, closing(sqlite3.connect(store)) as copy:
        source.backup(copy)
    return store


def runs(store: Path, experiment: str = "svmlab") -> list:
    """Every run of the experiment in the store, oldest first."""
    client = MlflowClient(tracking_uri=f"sqlite:///{store}")
    found = client.get_experiment_by_name(experiment)
    if found is None:
        return []
    return client.search_runs([found.experiment_id], order_by=["attributes.start_time ASC"])


def parent_and_children(store: Path, sweep_dir: Path | None = None) -> tuple:
    """The parent run of the sweep in ``sweep_dir`` (else the last sweep) and its children."""
    found = runs(store)
    parents = [
        r
        for r in found
        if r.data.tags.get("svmlab.role") == "sweep"
        and (sweep_dir is None or r.data.tags["svmlab.sweep_dir"] == str(sweep_dir))
    ]
    parent = parents[-1]
    children = [r for r in found if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
    return parent, children
