"""Sweeps: the parent run of a Hydra multirun, progress lines, the summary and the exit status.

``SweepCallback`` is a Hydra callback (``hydra.callbacks.svmlab_sweep`` in ``conf/config.yaml``):

- ``on_multirun_start`` (the launching process, before any job): checks the launcher's settings
  and every job (``svmlab.app.launch.preflight``: nothing is created for a sweep refused there),
  creates the store and the experiment once, ends the experiment's runs that were left RUNNING
  (``svmlab.tracking.liveness``), opens the sweep's parent run (overrides, launcher, number of
  jobs) and writes ``<sweep dir>/.svmlab/sweep.json``, from which every job learns its parent run id
  and the launching process (it also says how long the checks took, and in which worker
  processes of the joblib launcher: ``benchmarks/bench_sweep.py`` reads it). A file, not an
  environment variable, because jobs may run in other processes or on other machines (joblib,
  submitit); the sweep folder is the one thing Hydra gives them all. A workflow names the run
  the parent run is nested under in ``SVMLAB_PARENT_RUN_ID``: only the launching process reads
  it. A sweep that cannot start exits with status 2 (3: the store's fault) and leaves no parent
  run RUNNING.
- ``on_job_start`` (wherever the job runs): waits for the worker's imports of the training path
  (``svmlab.app.launch.workers``).
- ``on_job_end`` (wherever the job ran): writes the job's outcome to
  ``<sweep dir>/.svmlab/jobs/<job number>.json`` and prints one progress line.
- ``on_multirun_end`` (the launching process): counts the outcomes, logs them to the parent run
  (metrics ``jobs_*``, artifact ``jobs.tsv``), ends it FINISHED (no failure) or FAILED, prints
  the summary and exits with status 1 when any job failed, 3 when the store failed.

A sweep that never reaches its end (a configuration error found by Hydra before launching,
Ctrl-C, SIGTERM, a crashed worker) ends its parent run and its jobs' runs still RUNNING KILLED
when the process exits.

MLflow (about 2.5 s to import) is imported when the parent run is created, through
``svmlab.tracking.sweeps``, not with this module.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from filelock import FileLock
from hydra.core.utils import JobReturn
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from svmlab.app.exit_codes import EXIT_FAILED, EXIT_STORE, EXIT_USAGE, failure
from svmlab.app.launch.preflight import check_jobs
from svmlab.errors import ConfigError
from svmlab.masking import mask

if TYPE_CHECKING:
    from svmlab.tracking.sweeps import ParentRun

STATE_DIR = ".svmlab"
KEY_METRIC = "test_accuracy"
STATUSES = ("FINISHED", "FAILED", "KILLED", "SKIPPED")


def state_dir(sweep_dir: str | os.PathLike) -> Path:
    return Path(sweep_dir) / STATE_DIR


def read_state(sweep_dir: str | os.PathLike) -> dict:
    """What ``on_multirun_start`` wrote for the jobs; {} outside an svmlab sweep."""
    path = state_dir(sweep_dir) / "sweep.json"
    return json.loads(path.read_text()) if path.is_file() else {}


def read_outcomes(sweep_dir: str | os.PathLike) -> list[dict]:
    """The outcomes of the jobs that have ended, by job number."""
    files = (state_dir(sweep_dir) / "jobs").glob("*.json")
    return sorted((json.loads(f.read_text()) for f in files), key=lambda o: o["job_num"])


def time_left(started_at: float | None, done: int, total: int | None) -> str:
    """``  about 3 min left`` at the pace of the ``done`` jobs so far since ``started_at``
    (``time.time()``); empty when all are done or the total is unknown."""
    if not started_at or not total or not 0 < done < total:
        return ""
    seconds = (time.time() - started_at) / done * (total - done)
    return (
        "  about "
        + (
            f"{seconds:.0f} s"
            if seconds < 90
            else f"{seconds / 60:.0f} min"
            if seconds < 5400
            else f"{seconds / 3600:.1f} h"
        )
        + " left"
    )


def progress_line(outcome: dict, done: int, total: int | None, same_as: int | None = None) -> str:
    """``[  3/48] #2 name  STATUS  test_accuracy=0.9561  1.2s`` (the error for a failed job;
    ``same_as``: the number of a job that reported the same error, which is not repeated)."""
    width = len(str(total)) if total else 1
    count = f"[{done:>{width}}/{total if total else '?'}]"
    metric = outcome["metrics"].get(KEY_METRIC)
    error = f"the same error as #{same_as}" if same_as is not None else outcome["error"] or ""
    detail = {
        "FINISHED": f"{KEY_METRIC}={metric:.4f}" if metric is not None else "",
        "SKIPPED": f"FINISHED before as run {outcome['run_id']}",
        "FAILED": error,
        "KILLED": error,
    }[outcome["status"]]
    return (
        f"{count} #{outcome['job_num']} {outcome['name']}  {outcome['status']}  {detail}  "
        f"{outcome['time_s']:.1f}s"
    )


def job_outcome(job_num: int, job_return: JobReturn) -> dict:
    """The outcome ``train.run_job`` returned, or a FAILED outcome if the job raised anyway."""
    try:
        value = job_return.return_value  # re-raises what the job raised
        if isinstance(value, dict):
            return value
        error = f"the job returned {value!r} instead of its outcome"
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"
    return {
        "job_num": job_num,
        "overrides": job_return.overrides,
        "name": " ".join(job_return.overrides or []),
        "status": "FAILED",
        "run_id": None,
        "error": error,
        "metrics": {},
        "time_s": 0.0,
    }


def record_outcome(sweep_dir: str | os.PathLike, outcome: dict) -> int:
    """Store one job's outcome; returns how many jobs of the sweep have ended so far."""
    jobs = state_dir(sweep_dir) / "jobs"
    jobs.mkdir(parents=True, exist_ok=True)
    with FileLock(str(state_dir(sweep_dir) / "jobs.lock"), timeout=300):
        partial = jobs / f".{outcome['job_num']}.json.part"
        partial.write_text(mask(json.dumps(outcome)))
        partial.replace(jobs / f"{outcome['job_num']}.json")
        return len(list(jobs.glob("*.json")))


def same_error(outcome: dict, outcomes: list[dict]) -> int | None:
    """The number of the first other job in ``outcomes`` whose error is ``outcome``'s."""
    return next(
        (
            o["job_num"]
            for o in outcomes
            if outcome["error"]
            and o["error"] == outcome["error"]
            and o["job_num"] != outcome["job_num"]
        ),
        None,
    )


def failure_lines(outcomes: list[dict], shown: int = 8) -> list[str]:
    """One line per distinct error of the failed and killed jobs, with the jobs it hit (their
    count, and the first ``shown`` numbers)."""
    groups: dict[tuple, list[dict]] = {}
    for o in outcomes:
        if o["status"] in ("FAILED", "KILLED"):
            groups.setdefault((o["status"], o["error"]), []).append(o)
    lines = []
    for (status, error), hit in groups.items():
        jobs = (
            f"#{hit[0]['job_num']} {hit[0]['name']}"
            if len(hit) == 1
            else f"{len(hit)} jobs ("
            + ", ".join(f"#{o['job_num']}" for o in hit[:shown])
            + (", ..." if len(hit) > shown else "")
            + ")"
        )
        lines.append(f"  {status.lower()}: {jobs}: {error}")
    return lines


def summary(outcomes: list[dict], total: int | None) -> dict[str, int]:
    """Counts per status (KILLED: a job its cluster ended, ``svmlab.app.launch.slurm``), and
    ``missing``: jobs that never reported (a crashed worker)."""
    counts = {status.lower(): sum(o["status"] == status for o in outcomes) for status in STATUSES}
    counts["missing"] = max(0, (total or len(outcomes)) - len(outcomes))
    counts["total"] = total or len(outcomes)
    return counts


def jobs_table(outcomes: list[dict]) -> str:
    """One tab-separated line per job: number, name, status, key metric, time, run id, error."""
    lines = ["job\tname\tstatus\t" + KEY_METRIC + "\ttime_s\trun_id\terror"]
    for o in outcomes:
        metric = o["metrics"].get(KEY_METRIC, "")
        lines.append(
            f"{o['job_num']}\t{o['name']}\t{o['status']}\t{metric}\t{o['time_s']:.3f}\t"
            f"{o['run_id'] or ''}\t{(o['error'] or '').replace(chr(10), ' ')}"
        )
    return "\n".join(lines) + "\n"


def left_line(uri: str, sweep_dir: Path) -> str:
    """One line naming the runs a sweep left RUNNING for want of its store (recorded in
    ``<sweep dir>/.svmlab/left``) and the command that ends them."""
    from svmlab.tracking.store import absolute_uri

    left = sorted(p.name for p in (state_dir(sweep_dir) / "left").glob("*"))
    return (
        f"svmlab: error: the tracking store is gone: runs left RUNNING: {', '.join(left)}; "
        f"once it is back, any svmlab command on it ends them KILLED, e.g. "
        f"svmlab runs reap --tracking-uri {mask(absolute_uri(uri))}"
    )


def remove_dated_folder(folder: Path, key: str, hydra_overrides) -> None:
    """Remove ``folder`` (Hydra's ``outputs/<date>/<time>`` or ``multirun/<date>/<time>``) of a
    command that failed before it did anything, and its date folder and ``outputs`` or
    ``multirun`` once empty, unless the user chose the folder (``key``, e.g. ``hydra.run.dir``,
    among ``hydra_overrides``)."""
    shutil.rmtree(folder, ignore_errors=True)
    if any(o.startswith(f"{key}=") for o in hydra_overrides):
        return
    for parent in (folder.parent, folder.parent.parent):
        with contextlib.suppress(OSError):
            parent.rmdir()  # only when empty


_STARTED: list[SweepCallback] = []  # the sweep this process launched, once it has started


def abandon_start() -> None:
    """The sweep of this process stops before any job ran (Hydra refused a job's config): its
    parent run is deleted and its folder removed, as if it had never started."""
    if _STARTED:
        _STARTED.pop().abandon()


def check_launcher_settings(config: DictConfig) -> None:
    """Launcher settings the launcher itself would answer with a traceback."""
    n_jobs = config.hydra.launcher.get("n_jobs")
    if n_jobs is not None and (not isinstance(n_jobs, int) or n_jobs == 0):
        raise ConfigError(
            f"hydra.launcher.n_jobs must be a number of worker processes (1, 2, "
            f"...) or -1 for one per CPU; got {n_jobs!r}"
        )


# Loky's resource tracker, a process of the launcher's, frees the semaphores and folders of a
# launcher that died (SIGKILL) once its workers have stopped, and warns that they leaked:
# nothing is left for the user to do. Its own warning filters are inherited from here.
QUIET_TRACKER = "ignore:resource_tracker:UserWarning"


def quiet_resource_tracker() -> None:
    """Let the resource tracker of this process's workers free what is left without a warning
    (``PYTHONWARNINGS``, read by the processes started from here on)."""
    current = os.environ.get("PYTHONWARNINGS", "")
    if QUIET_TRACKER not in current.split(","):
        os.environ["PYTHONWARNINGS"] = ",".join(filter(None, (current, QUIET_TRACKER)))


def failure_line(exc: BaseException, uri: str | None) -> tuple[str, int]:
    """One line saying what failed and the exit status (``exit_codes.failure``; an error of
    another kind is named with its type, EXIT_USAGE)."""
    return failure(exc, uri) or (mask(f"{type(exc).__name__}: {exc}"), EXIT_USAGE)


def sweep_name(overrides: list[str]) -> str:
    """The parent run's name: what the sweep sweeps (``sweep solver=a,b dataset=x``), its
    overrides without those saying where runs go (``tracking.*``, ``paths.*``)."""
    shown = [o for o in overrides if not o.lstrip("+~").startswith(("tracking.", "paths."))]
    name = "sweep " + (" ".join(shown) or "(the defaults)")
    return name if len(name) <= 250 else name[:247] + "..."


class SweepCallback(Callback):
    """Parent run, progress and summary of an svmlab sweep (see the module docstring)."""

    def __init__(self) -> None:
        self.parent: ParentRun | None = None
        self.started = 0.0
        self.sigterm: contextlib.ExitStack | None = None
        self.config: DictConfig | None = None

    def __getstate__(self) -> dict:
        """The copy a launcher sends to its workers: without the parent run (and its heartbeat
        thread), which only the launching process ends."""
        return self.__dict__ | {"parent": None, "sigterm": None, "config": None}

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        try:
            self._start(config)
        except Exception as exc:  # Hydra would only warn and run the sweep with nobody counting
            line, status = failure_line(exc, config.tracking.uri)
            for problem in line.splitlines():  # a job's config: one line per problem
                print(f"svmlab: error: cannot start the sweep: {problem}", file=sys.stderr)
            self.abandon(config)
            raise SystemExit(status) from None

    def _start(self, config: DictConfig) -> None:
        check_launcher_settings(config)
        quiet_resource_tracker()  # before the checks start the workers (joblib)
        checks = time.perf_counter()
        total, workers = check_jobs(config)  # before the store, the parent run or a folder exists
        checks = time.perf_counter() - checks
        from svmlab.lifecycle import sigterm_interrupts, this_process
        from svmlab.recording.config import prelude
        from svmlab.tracking.sweeps import PARENT_ENV, ParentRun

        sweep_dir = Path(str(config.hydra.sweep.dir)).resolve()
        state = state_dir(sweep_dir)
        try:
            (state / "jobs").mkdir(parents=True, exist_ok=True)
            for old in (state / "jobs").glob("*.json"):  # a previous sweep in the same folder
                old.unlink()
        except OSError as exc:
            raise ConfigError(
                f"the sweep folder {sweep_dir} cannot be used (hydra.sweep.dir): "
                f"{exc.strerror or exc}"
            ) from None
        overrides = list(config.hydra.overrides.task)
        launcher = str(config.hydra.launcher._target_).rsplit(".", 1)[-1]
        prelude(config.tracking)
        self.parent = ParentRun(
            config.tracking.uri,
            config.tracking.experiment,
            sweep_name(overrides),
            str(sweep_dir),
            {
                "sweep.overrides": " ".join(overrides),
                "sweep.launcher": launcher,
                "sweep.jobs": total,
            },
            OmegaConf.to_yaml(overrides),
            parent_run_id=os.environ.get(PARENT_ENV),
            wait_s=config.tracking.wait_s,
            shared=state,
        )
        (state / "sweep.json").write_text(
            json.dumps(
                {
                    "parent_run_id": self.parent.run_id,
                    "jobs": total,
                    "launcher": this_process(),
                    "started_at": time.time(),
                    "checks_s": checks,
                    "checked_in": workers,
                }
            )
        )
        print(
            f"sweep: {total if total else 'unknown number of'} jobs with {launcher}; "
            f"parent run {self.parent.run_id}",
            flush=True,
        )
        self.started = time.perf_counter()
        self.config = config
        _STARTED.append(self)
        self.sigterm = contextlib.ExitStack()  # SIGTERM stops the sweep as Ctrl-C does
        self.sigterm.enter_context(sigterm_interrupts())
        atexit.register(self._stopped)

    def abandon(self, config: DictConfig | None = None) -> None:
        """Undo a start that ran no job: the parent run deleted, the sweep folder removed. Once
        a job has ended, the sweep is stopped as any other (the exit hook ends it KILLED)."""
        config = config or self.config
        sweep_dir = Path(str(config.hydra.sweep.dir)).resolve()
        if read_outcomes(sweep_dir):
            return
        atexit.unregister(self._stopped)
        if self.sigterm is not None:
            self.sigterm.close()
        if self.parent is not None:
            self._quietly(self.parent.discard)
        made = {STATE_DIR, "multirun.yaml"}  # what a start writes; a job's folder is a number
        if sweep_dir.is_dir() and all(p.name in made for p in sweep_dir.iterdir()):
            remove_dated_folder(sweep_dir, "hydra.sweep.dir", config.hydra.overrides.hydra)

    def on_job_start(self, config: DictConfig, **kwargs: Any) -> None:
        from svmlab.app.launch.workers import wait_until_warm

        wait_until_warm()  # a worker's imports of the training path (joblib), before the job's

    def on_job_end(self, config: DictConfig, job_return: JobReturn, **kwargs: Any) -> None:
        sweep_dir = Path(str(config.hydra.sweep.dir)).resolve()
        state = read_state(sweep_dir)
        if not state:  # the callback's start did not run (store unreachable): nothing to report to
            return
        outcome = job_outcome(config.hydra.job.num, job_return)
        done = record_outcome(sweep_dir, outcome)
        same_as = same_error(outcome, read_outcomes(sweep_dir)) if outcome["error"] else None
        print(
            progress_line(outcome, done, state["jobs"], same_as)
            + time_left(state.get("started_at"), done, state["jobs"]),
            flush=True,
        )

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        if self.parent is None or self.parent.run_id is None:
            return
        from svmlab.lifecycle import LEFT_REASON, mark_left
        from svmlab.tracking.liveness import kill_children
        from svmlab.tracking.store import ui_line

        sweep_dir = Path(str(config.hydra.sweep.dir)).resolve()
        outcomes = read_outcomes(sweep_dir)
        counts = summary(outcomes, read_state(sweep_dir)["jobs"])
        run_id = parent_id = self.parent.run_id
        failed = counts["failed"] + counts["killed"] + counts["missing"]
        if counts["total"] and counts["skipped"] == counts["total"] and not self.parent.nested:
            atexit.unregister(self._stopped)
            stored = self._quietly(self.parent.discard)
            run_id = f"{run_id}: nothing to do, so no parent run was kept"
        else:
            stored = self._quietly(
                self._end_parent, "FAILED" if failed else "FINISHED", counts, jobs_table(outcomes)
            )
        self.sigterm.close()
        if stored:  # runs whose jobs lost the store (recorded in the sweep folder) end now
            stored = self._quietly(kill_children, self.parent.uri, parent_id, LEFT_REASON)
        else:  # the parent stays RUNNING: the reap finds it by the record
            mark_left(str(sweep_dir), parent_id)

        print(
            f"sweep: {counts['total']} jobs: {counts['finished']} finished, "
            f"{counts['failed']} failed, {counts['skipped']} skipped (finished before)"
            + (f", {counts['killed']} killed" if counts["killed"] else "")
            + (f", {counts['missing']} never reported" if counts["missing"] else "")
            + f" in {time.perf_counter() - self.started:.1f}s; parent run {run_id}",
            flush=True,
        )
        for line in failure_lines(outcomes):
            print(line, flush=True)
        print(ui_line(self.parent.uri, self.parent.experiment_id), flush=True)
        if not self.parent.nested:  # a workflow's sweep: the workflow analyzes its runs
            from svmlab.app.runs import next_line

            print(next_line(config.tracking.uri, config.tracking.experiment), flush=True)
        if not stored:
            print(left_line(self.parent.uri, sweep_dir), file=sys.stderr, flush=True)
            raise SystemExit(EXIT_STORE)
        if failed:
            raise SystemExit(EXIT_FAILED)

    def _end_parent(
        self, status: str, counts: dict | None = None, table: str | None = None
    ) -> None:
        """End the parent run once; later calls (the exit hook after a normal end) do nothing."""
        atexit.unregister(self._stopped)
        if self.parent is not None:
            self.parent.end(status, counts, table)

    def _stopped(self) -> None:
        """At exit before the sweep's end: the jobs still RUNNING and the parent end KILLED."""
        from svmlab.tracking.liveness import kill_children

        if self.parent is not None and self.parent.run_id is not None:
            reason = "the sweep stopped before this job ended"
            self._quietly(kill_children, self.parent.uri, self.parent.run_id, reason)
            self._quietly(self._end_parent, "KILLED")
        if self.sigterm is not None:  # restored now: at the interpreter's teardown it cannot be
            self.sigterm.close()

    def _quietly(self, step, *args) -> bool:
        """Run a store step of the sweep; on failure one line on stderr instead of a traceback
        (Hydra would turn it into a warning). Returns whether it succeeded."""
        try:
            step(*args)
            return True
        except Exception as exc:
            uri = self.parent.uri if self.parent else None
            print(
                f"svmlab: error: the sweep's runs could not be updated: "
                f"{failure_line(exc, uri)[0]}",
                file=sys.stderr,
                flush=True,
            )
            return False
