"""The worker processes of a ``hydra/launcher=joblib`` sweep, put to work before its first job.

Hydra's joblib launcher starts its workers (joblib's loky backend) when it launches the jobs,
and each worker then imports the training path (MLflow, scikit-learn, numba: about 4 s) in its
first job. Here the sweep's checks (``svmlab.app.launch.preflight``) run in the same workers
instead of one by one in the launching process: :func:`parallel` asks joblib for them with the
arguments the launcher will pass (its config, as ``hydra_joblib_launcher._core`` prepares it),
so that joblib hands the launcher the same, reusable pool. A worker's first task, once its
checks are done, starts importing the training path and the store's code in a thread, which
goes on while the launching process creates the sweep's store and parent run; a job waits for
that thread before it starts (``SweepCallback.on_job_start``). Hydra's launcher is used as it
is.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import threading

from omegaconf import DictConfig, OmegaConf

#: What a job imports before its fit beside its solver (which its checks imported): the
#: recording pipeline (MLflow, numba's warm-up) and the store queries.
TRAINING_PATH = (
    "svmlab.recording.run",
    "svmlab.recording.results",
    "svmlab.tracking.patience",
    "svmlab.tracking.queries",
)
_WARMING: list[threading.Thread] = []  # this process's import thread, once started


def joblib_arguments(config: DictConfig) -> dict | None:
    """The arguments Hydra's joblib launcher gives ``joblib.Parallel`` for this sweep; None for
    another launcher or a single worker (whose jobs run in the launching process)."""
    launcher = config.hydra.launcher
    if not str(launcher.get("_target_", "")).endswith(".JoblibLauncher"):
        return None
    from hydra_plugins.hydra_joblib_launcher._core import process_joblib_cfg

    arguments = {
        k: v for k, v in OmegaConf.to_container(launcher, resolve=True).items() if k != "_target_"
    }
    arguments["backend"] = "loky"  # as the launcher sets it
    process_joblib_cfg(arguments)
    return arguments if arguments.get("n_jobs") not in (None, 1) else None


def parallel(arguments: dict | None):
    """``joblib.Parallel`` over the sweep's workers (``joblib_arguments``), or None."""
    if arguments is None:
        return None
    from joblib import Parallel

    return Parallel(**arguments)


def warm_in_background(uri: str | None) -> int:
    """Start importing the training path, and the code that opens the store at ``uri``, in a
    thread of this process, once; its pid."""
    if not _WARMING:
        _WARMING.append(
            threading.Thread(
                target=_import_training_path, args=(uri,), daemon=True, name="svmlab-warm-up"
            )
        )
        _WARMING[0].start()
    return os.getpid()


def wait_until_warm() -> None:
    """Let the import thread of this process finish before a job imports anything: two
    threads importing the same packages at once may wait on each other."""
    for thread in _WARMING:
        thread.join()


def _import_training_path(uri: str | None) -> None:
    with contextlib.suppress(Exception):  # a job imports what failed here, and reports it
        for module in TRAINING_PATH:
            importlib.import_module(module)
        from svmlab.tracking.store import load_store_code

        load_store_code(uri)
