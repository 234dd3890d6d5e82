"""The worker pool behind ``hydra/launcher=parallel`` (``hydra_plugins.svmlab_launcher``).

Jobs run in ``n_jobs`` worker processes of a loky pool (the process pool behind joblib). Hydra's
joblib launcher sends every job the whole sweep context (config loader, master config, task
function, Hydra's global state) and restores it in the worker before the job; here a worker
receives that context once, when it starts, and then only each job's override list. It composes
the job's config itself (``load_sweep_config``, as the basic launcher does) and runs it through
``hydra.core.utils.run_job``, so job numbers, sweep subdirectories, the job's log and saved
config, and the Hydra callbacks (``svmlab.sweep.SweepCallback``) are those of any launcher.

Where the platform has a fork server (Linux, macOS), the workers are forked from it after it has
imported the task function's module and the launcher's ``preload`` modules (for svmlab: MLflow,
scikit-learn, the solvers): those imports are paid once rather than once per worker. The
callback ``ForkServerStart`` starts the fork server as the sweep starts, so they run while the
launching process creates the sweep's parent run and Hydra checks that every job's config
composes. Elsewhere every worker is a new interpreter.

Ctrl-C or SIGTERM in the launching process, or a job that raises past its task function (its
config does not compose, a worker died), stops the sweep: the jobs not started are cancelled
and the workers get SIGTERM, so their running jobs end KILLED and each worker leaves the pool.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.forkserver
import multiprocessing.reduction
import multiprocessing.resource_tracker
import os
import sys
from collections.abc import Sequence
from concurrent.futures import Future, wait

from hydra.core.hydra_config import HydraConfig
from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, run_job, setup_globals
from hydra.experimental.callback import Callback
from hydra.plugins.launcher import Launcher
from hydra.types import HydraContext, TaskFunction
from joblib.externals.loky import ProcessPoolExecutor, cpu_count, wrap_non_picklable_objects
from omegaconf import DictConfig, open_dict

STOP_GRACE_S = 60  # how long stopped workers have to end their runs before they are killed


def worker_count(n_jobs: int, jobs: int) -> int:
    """``n_jobs`` workers (-1: one per CPU), never more than the sweep has jobs."""
    if n_jobs != -1 and n_jobs < 1:
        raise ValueError(f"hydra.launcher.n_jobs must be -1 (one per CPU) or at least 1; "
                         f"got {n_jobs}")
    return min(cpu_count() if n_jobs == -1 else n_jobs, jobs)


def module_name(function) -> str:
    """The name of the module that defines ``function``, also when it runs as ``__main__``
    (``python -m svmlab.train``)."""
    if function.__module__ == "__main__" and sys.modules["__main__"].__spec__ is not None:
        return sys.modules["__main__"].__spec__.name
    return function.__module__


def start_fork_server(preload: Sequence[str]) -> multiprocessing.context.BaseContext | None:
    """Start the fork server, which imports the modules ``preload`` in the background and then
    freezes them (``svmlab.frozen_imports``); the context that forks workers from it (None where
    there is none: loky's own start method). A fork server already running is reused with what
    it has imported."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return None
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([*preload, "svmlab.frozen_imports"])
    multiprocessing.resource_tracker.ensure_running()
    with _streams_to_devnull():
        multiprocessing.forkserver.ensure_running()
    return context


@contextlib.contextmanager
def _streams_to_devnull():
    """Standard output and error go to /dev/null in processes started meanwhile.

    The fork server inherits them and keeps them open until it has exited, which takes a
    second or so once it has imported the training path: a caller reading the sweep's output
    through a pipe would wait that long after the sweep has ended. Workers get the real
    streams from ``StandardStream``.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(fd) for fd in (1, 2)]
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        for fd in (1, 2):
            os.dup2(devnull, fd)
        yield
    finally:
        for fd, copy in zip((1, 2), saved):
            os.dup2(copy, fd)
            os.close(copy)
        os.close(devnull)


class ForkServerStart(Callback):
    """Hydra callback: in a sweep with this launcher, start the fork server as the sweep starts.

    Hydra runs the callbacks' ``on_multirun_start`` before it creates the launcher; listed
    before callbacks with slow starts (svmlab's SweepCallback imports MLflow to create the
    parent run), it lets the fork server's imports run alongside them on another core.
    """

    def on_multirun_start(self, config: DictConfig, **kwargs) -> None:
        from hydra_plugins.svmlab_launcher.parallel_launcher import ParallelLauncherConf

        launcher = config.hydra.launcher
        if launcher.get("_target_") == ParallelLauncherConf._target_:
            start_fork_server(launcher.preload)


class StandardStream:
    """Standard output or error of the launching process, handed to a forked worker: a fork
    server keeps the streams it started with, which in-process sweeps may have redirected
    since (pytest captures each test's output)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def __reduce__(self):  # pickled as the worker is started: the fd goes with it
        return _stream_fd, (self.fd, multiprocessing.reduction.DupFd(self.fd))


def _stream_fd(fd: int, duplicate) -> tuple[int, int]:
    return fd, duplicate.detach()


class WorkerPool:
    """The worker processes of one launch; ``run`` runs the jobs and shuts the pool down."""

    def __init__(self, launcher: Launcher, jobs: int,
                 context: multiprocessing.context.BaseContext | None) -> None:
        self.workers = worker_count(launcher.n_jobs, jobs)
        self.other_children = set(multiprocessing.active_children())
        state = (launcher.hydra_context, launcher.config, launcher.task_function,
                 Singleton.get_state(), dict(os.environ))
        streams = (StandardStream(1), StandardStream(2)) if context else ()
        self.executor = ProcessPoolExecutor(  # cloudpickle: the task function, OmegaConf resolvers
            max_workers=self.workers, context=context, initializer=_start_worker,
            initargs=(wrap_non_picklable_objects(state, keep_wrapper=False), *streams))

    def run(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> list[JobReturn]:
        """Each job's JobReturn, in the order of ``job_overrides``."""
        futures = []
        try:
            for idx, overrides in enumerate(job_overrides, start=initial_job_idx):
                futures.append(self.executor.submit(_run, idx, list(overrides)))
            results = [future.result() for future in futures]
        except BaseException:
            self._stop(futures)
            raise
        self.executor.shutdown(wait=True)
        return results

    def _stop(self, futures: list[Future]) -> None:
        """Cancel the jobs not started and SIGTERM the workers (the children this process has
        started since the pool was created, including any worker loky replaced), whose
        running jobs then end KILLED."""
        for future in futures:
            future.cancel()
        for worker in set(multiprocessing.active_children()) - self.other_children:
            worker.terminate()
        wait(futures, timeout=STOP_GRACE_S)
        self.executor.shutdown(wait=True, kill_workers=True)


# -- in a worker process -----------------------------------------------------------------------

_sweep: tuple[HydraContext, DictConfig, TaskFunction] | None = None


def _start_worker(state: tuple, *streams: tuple[int, int]) -> None:
    """Once per worker: the launching process's environment and standard streams (a fork
    server keeps the ones it started with), Hydra's global state, and the sweep context that
    every job uses."""
    global _sweep
    hydra_context, config, task_function, singleton_state, environ = state
    os.environ.clear()
    os.environ.update(environ)
    for fd, duplicate in streams:
        os.dup2(duplicate, fd)
        os.close(duplicate)
    setup_globals()
    Singleton.set_state(singleton_state)
    _sweep = (hydra_context, config, task_function)


def _run(job_num: int, overrides: list[str]) -> JobReturn:
    """One job: compose its config from its overrides, then run it as Hydra runs a job.

    When an interruption (Ctrl-C, SIGTERM) reaches this point, the job's run has ended KILLED;
    the worker then exits rather than take the next job from the queue.
    """
    hydra_context, config, task_function = _sweep
    try:
        job_config = hydra_context.config_loader.load_sweep_config(config, overrides)
        with open_dict(job_config):
            job_config.hydra.job.id = f"{job_config.hydra.job.name}_{job_num}"
            job_config.hydra.job.num = job_num
        HydraConfig.instance().set_config(job_config)
        return run_job(hydra_context=hydra_context, task_function=task_function,
                       config=job_config, job_dir_key="hydra.sweep.dir",
                       job_subdir_key="hydra.sweep.subdir")
    except KeyboardInterrupt:
        os._exit(130)
