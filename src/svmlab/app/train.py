"""Hydra entry point for one training run: the composition root, with no numerics of its own.

compose config -> check it -> start an MLflow run -> load data -> fit -> evaluate -> log.
Run it as ``svmlab train [overrides]`` or ``python -m svmlab.app.train [overrides]``; with ``-m`` each
job of the sweep is one child run of the sweep's parent run (see ``svmlab.app.launch.sweep``).

The training path (MLflow, scikit-learn, numba, matplotlib: about 4 s) is imported by the
functions that train, not with this module: the launching process of a sweep with worker
processes needs only the entry point, and starts its first job sooner.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from svmlab.app.config.schema import (
    checked_estimator,
    composition_error_line,
    register_configs,
    unknown_key_hints,
)
from svmlab.app.exit_codes import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_USAGE, failure
from svmlab.app.launch import sweep
from svmlab.errors import ConfigError, MissingExtra, require_extra


@dataclass
class RunContext:
    """What Hydra knows about this job beyond the config: choices, overrides, sweep position.

    ``run_name``, ``run_id``, ``metrics`` and ``phases`` (wall seconds of each step of the run,
    :func:`timed`) are filled in by :func:`run` as they become known, so that a sweep can report
    a job that failed half-way and say where a job's time went. ``launcher`` names the sweep's
    launching process (host, pid, start), which a job stops without.
    """

    choices: dict = field(default_factory=dict)
    overrides: list = field(default_factory=list)
    sweep_dir: str | None = None
    job_num: int | None = None
    parent_run_id: str | None = None
    launcher: dict | None = None
    run_name: str | None = None
    run_id: str | None = None
    metrics: dict = field(default_factory=dict)
    phases: dict = field(default_factory=dict)

    @property
    def shared(self) -> Path | None:
        """The sweep's state folder, where its processes share one wait for the store."""
        return sweep.state_dir(self.sweep_dir) if self.sweep_dir else None

    @classmethod
    def from_hydra(cls) -> RunContext:
        if not HydraConfig.initialized():
            return cls()
        hc = HydraConfig.get()
        multirun = hc.mode == RunMode.MULTIRUN
        sweep_dir = str(Path(hc.sweep.dir).resolve()) if multirun else None
        state = sweep.read_state(sweep_dir) if multirun else {}
        return cls(
            choices=dict(hc.runtime.choices),
            overrides=list(hc.overrides.task),
            sweep_dir=sweep_dir,
            job_num=hc.job.num if multirun else None,
            parent_run_id=state.get("parent_run_id"),
            launcher=state.get("launcher"),
        )


def finished_before(cfg: DictConfig, shared: Path | None = None) -> str | None:
    """With ``+resume=true``: the id of a FINISHED run of this exact config, else None
    (``shared``: the state folder of the sweep whose job asks)."""
    resume = cfg.get("resume", False)
    if not isinstance(resume, bool):
        raise ConfigError(f"resume must be true or false; got {resume!r}")
    if not resume:
        return None
    from svmlab.recording.config import DIGEST_TAG, config_digest
    from svmlab.tracking.patience import Patience
    from svmlab.tracking.queries import find_finished_run

    return Patience(cfg.tracking.uri, cfg.tracking.wait_s, shared=shared)(
        find_finished_run,
        cfg.tracking.uri,
        cfg.tracking.experiment,
        {DIGEST_TAG: config_digest(OmegaConf.to_container(cfg, resolve=True))},
    )


def run(cfg: DictConfig, context: RunContext | None = None) -> str:
    """Train, evaluate and log one configuration; returns the MLflow run id."""
    context = context or RunContext()
    estimator = checked_estimator(cfg, context.choices.get("dataset"))
    from svmlab import data
    from svmlab.recording.config import config_record, prelude, run_name
    from svmlab.recording.run import finished_lines, timed, train

    tree = OmegaConf.to_container(cfg, resolve=True)
    tracking = tree["tracking"]
    record = config_record(
        tree,
        context.overrides,
        context.choices.get("solver") or type(estimator).__name__,
        context.sweep_dir,
        context.job_num,
    )
    context.run_name = tracking["run_name"] or run_name(record)
    with timed(context.phases, "data"):  # a dataset that cannot be had creates no run
        dataset = data.load(
            **tree["dataset"],
            seed=cfg.seed,
            data_dir=cfg.paths.data_dir,
            cache_dir=cfg.paths.cache_dir,
        )
    if context.sweep_dir is None:  # a sweep's launcher did this for all its jobs
        with timed(context.phases, "store"):
            prelude(tracking)
    recording, context.metrics = train(
        tracking,
        context.run_name,
        record,
        estimator,
        dataset,
        context.parent_run_id,
        context.phases,
        context.shared,
        launcher=context.launcher,
        compile_lock=context.shared / "compile.lock" if context.shared else None,
        opened=functools.partial(setattr, context, "run_id"),
    )
    if context.sweep_dir is None:  # a sweep reports its jobs in one line each
        from svmlab.app.runs import next_line

        print("\n".join(finished_lines(recording, context.run_name, context.metrics, estimator)))
        print(next_line(tracking["uri"], tracking["experiment"]))
    return recording.run_id


def run_job(cfg: DictConfig, context: RunContext) -> dict:
    """One job of a sweep; its outcome for the sweep's report, never an exception.

    A failing job must not stop the sweep: its run ends FAILED (the Tracker records the error)
    and the outcome carries the error (in one line when the store failed). Ctrl-C and SIGTERM
    still stop the sweep. A job whose launcher is gone ends its run KILLED and its process: a
    worker without a launcher must not go on with the queued jobs. A job of a sweep whose store
    stayed away for the sweep's whole wait does not start.
    """
    from svmlab.lifecycle import LauncherGone, mark_left, stop_without_launcher
    from svmlab.masking import mask
    from svmlab.tracking.patience import gone_line
    from svmlab.tracking.store import store_error_line

    start = time.perf_counter()
    outcome = {
        "job_num": context.job_num,
        "overrides": context.overrides,
        "error": None,
        "pid": os.getpid(),
        "started_at": time.time(),
    }
    try:
        stop_without_launcher(context.launcher)
        gone = gone_line(context.shared, cfg.tracking.uri)
        previous = None if gone else finished_before(cfg, context.shared)
        if gone:
            outcome |= {"status": "FAILED", "run_id": None, "error": gone}
        elif previous:
            outcome |= {"status": "SKIPPED", "run_id": previous}
        else:
            run(cfg, context)
            outcome |= {"status": "FINISHED", "run_id": context.run_id}
    except LauncherGone as exc:
        print(f"svmlab: job #{context.job_num} stops: {exc}", file=sys.stderr, flush=True)
        end_orphaned_sweep(cfg.tracking.uri, context.parent_run_id, str(exc))
        os._exit(EXIT_INTERRUPTED)
    except Exception as exc:
        error = store_error_line(exc, cfg.tracking.uri)
        if error and context.run_id:  # the store is gone: the run may be left RUNNING
            mark_left(context.sweep_dir, context.run_id)
        outcome |= {
            "status": "FAILED",
            "run_id": context.run_id,
            "error": error or mask(f"{type(exc).__name__}: {exc}"),
        }
    return outcome | {
        "name": context.run_name or " ".join(context.overrides),
        "metrics": context.metrics,
        "phases": context.phases,
        "time_s": time.perf_counter() - start,
    }


def end_orphaned_sweep(uri: str | None, parent_run_id: str | None, reason: str) -> None:
    """The parent run of a sweep whose launcher is gone, ended KILLED by the job that saw it;
    a store that does not answer leaves it to the reap."""
    if parent_run_id is None:
        return
    from svmlab.tracking.liveness import end_orphaned_parent

    with contextlib.suppress(Exception):
        end_orphaned_parent(uri, parent_run_id, reason)


def main() -> None:
    """The entry point: Hydra's, with a config that Hydra cannot compose (an unknown option or
    key, a wrong type) refused in one line with the close matches and status 2, one line for an
    interruption (the runs it stopped have ended KILLED), and one line for a sweep stopped by
    its launcher (a crashed worker). With HYDRA_FULL_ERROR set (the user's setting wins), Hydra
    reports composition errors itself; it is set here so that they reach this function."""
    register_configs()  # here, so that a solver imported before the run is an option too
    require_launcher(sys.argv[1:])
    sweeping = bool({"-m", "--multirun"} & set(sys.argv[1:]))
    reporting = "HYDRA_FULL_ERROR" not in os.environ
    try:
        with environ_set("HYDRA_FULL_ERROR", "1" if reporting else None):
            hydra_main()
    except SystemExit as exc:
        if exc.code == 1:  # Hydra could not compose the config (and said so in full)
            print_key_hints()
        raise
    except KeyboardInterrupt as exc:
        print(f"svmlab: interrupted{f': {exc}' if str(exc) else ''}", file=sys.stderr)
        raise SystemExit(EXIT_INTERRUPTED) from None
    except Exception as exc:
        if not reporting:
            raise
        line = composition_error_line(exc, sys.argv[1:])
        if line is not None:
            print(f"svmlab: error: {line}", file=sys.stderr)
            sweep.abandon_start()  # a job's config Hydra refused before any job ran
            raise SystemExit(EXIT_USAGE) from None
        if not sweeping:
            raise
        first = (str(exc).strip().splitlines() or [""])[0]
        print(f"svmlab: error: {type(exc).__name__}: {first}", file=sys.stderr)
        raise SystemExit(EXIT_FAILED) from None


def require_launcher(argv: list[str]) -> None:
    """One line and status 2 when the sweep asks for a submitit launcher (``submitit_local``,
    ``submitit_slurm``) and svmlab[cluster], which brings Hydra's submitit plugin, is absent."""
    if any(arg.startswith("hydra/launcher=submitit") for arg in argv):
        try:
            require_extra(
                ("hydra_plugins.hydra_submitit_launcher",), "cluster", "hydra/launcher=submitit_*"
            )
        except MissingExtra as exc:
            print(f"svmlab: error: {exc}", file=sys.stderr)
            raise SystemExit(EXIT_USAGE) from None


@contextlib.contextmanager
def environ_set(name: str, value: str | None):
    """Environment variable ``name`` set to ``value`` inside the block (nothing when None)."""
    if value is None:
        yield
        return
    os.environ[name] = value
    try:
        yield
    finally:
        os.environ.pop(name, None)


def print_key_hints() -> None:
    for hint in unknown_key_hints(sys.argv[1:]):
        print(f"svmlab: error: {hint}", file=sys.stderr)


def remove_job_folder() -> None:
    """Remove the folder Hydra made for this run (``outputs/<date>/<time>/``) when it holds
    only Hydra's files: a config refused before training leaves nothing behind. The date
    folder and ``outputs`` go too once empty, unless ``hydra.run.dir`` was set."""
    if not HydraConfig.initialized():
        return
    hc = HydraConfig.get()
    folder = Path(hc.runtime.output_dir)
    if folder.resolve() == Path.cwd().resolve() or not folder.is_dir():
        return
    if any(p.name != ".hydra" and p.suffix != ".log" for p in folder.iterdir()):
        return
    sweep.remove_dated_folder(folder, "hydra.run.dir", hc.overrides.hydra)


@hydra.main(config_path="pkg://svmlab.conf", config_name="config", version_base="1.3")
def hydra_main(cfg: DictConfig) -> dict | None:
    context = RunContext.from_hydra()
    if context.sweep_dir is not None:
        return run_job(cfg, context)
    try:
        previous = finished_before(cfg)
        if previous:
            print(f"run {previous} FINISHED before with this exact config: skipped (resume)")
        else:
            run(cfg, context)
    except Exception as exc:
        # a user's mistake or the store's fault: one clear line; anything else: its traceback
        found = failure(exc, cfg.tracking.uri)
        if found is None:
            raise
        print(f"svmlab: error: {found[0]}", file=sys.stderr)
        if context.run_id is None:  # refused before any run, or the store failed: no job folder
            remove_job_folder()
        raise SystemExit(found[1]) from None
    return None


if __name__ == "__main__":
    sys.exit(main())
