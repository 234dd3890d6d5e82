"""How svmlab's processes stop and how their death is seen: signals, the fit thread, process
identity, heartbeats and the judgement that a run's process is gone.

One module for all of it, because the pieces only work together: a run's signal handlers raise
in the main thread, so a fit runs in a thread the main thread waits for in short joins; a
signal that arrives during a store write is held back until the write completes; a process that
dies without ending its runs (SIGKILL, a lost machine) is recognised by the host, pid, start
time and heartbeat it wrote when they opened. It imports neither MLflow nor Hydra, so that every
layer that starts or stops work can use it: ``svmlab.tracking`` (runs, sweep and study parent
runs), ``svmlab.app`` (fits, sweeps, workflows) and ``svmlab.data`` (downloads). The MLflow calls
(writing the heartbeat tag, ending runs KILLED) are in ``svmlab.tracking.liveness``.

Tags: every run svmlab opens carries ``svmlab.host``, ``svmlab.pid``, ``svmlab.pid_started`` (the
process's start time, which tells a reused pid apart) and ``svmlab.heartbeat``, the time of its
last sign of life, refreshed every ``HEARTBEAT_S`` seconds by a daemon thread while the run is
open. Times are ISO 8601 in UTC (``2026-11-26T10:53:45.123Z``), readable in the UI;
:func:`tag_time` reads them, and the epoch seconds that earlier runs carry. The heartbeat thread
only writes a tag: it never touches the solver, whose clock runs inside the estimator, and
signals are handled in the main thread only, so no interruption lands in one of its writes.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psutil

from svmlab.vocabulary import (
    HEARTBEAT_TAG,
    HOST_TAG,
    PID_STARTED_TAG,
    PID_TAG,
    SLURM_JOB_TAG,
    SWEEP_DIR_TAG,
)

HEARTBEAT_S = 30.0
SAME_START_S = 1.0  # start times of one process, read twice, agree within this
STALE_AFTER_S = 600.0  # a run on another host silent for longer is dead
WAIT_S = 0.1  # a signal is handled within this while a fit runs
WATCH_S = 1.0  # a sweep's launcher is looked at this often
ALIVE_S = 30.0  # a fit still running says so this often


# -- signals -----------------------------------------------------------------------------------


class Terminated(KeyboardInterrupt):
    """Raised in the main thread when the process receives SIGTERM."""


class DeferredSignals:
    """SIGINT and SIGTERM as exceptions, held back while a store write is under way.

    An exception raised in the middle of a database commit can leave MLflow's session unusable,
    and then the run could not be ended; a signal that arrives during a write is raised as soon
    as the outermost write completes. Signal handlers exist only in the main thread.
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self):
        self._depth = 0
        self._pending: int | None = None
        self._previous: dict = {}

    def install(self) -> None:
        if threading.current_thread() is threading.main_thread():
            self._previous = {s: signal.signal(s, self._handle) for s in self.SIGNALS}

    def restore(self) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous = {}

    def _handle(self, signum, frame) -> None:
        if self._depth:
            self._pending = signum
        else:
            raise self._interruption(signum)

    @staticmethod
    def _interruption(signum: int) -> KeyboardInterrupt:
        if signum == signal.SIGINT:
            return KeyboardInterrupt()
        return Terminated(f"received signal {signal.Signals(signum).name}")

    def raise_held(self) -> None:
        """Raise a signal held back, at a point where no write is under way (a pause between
        two attempts of a write to a store that is away)."""
        if self._pending is not None:
            signum, self._pending = self._pending, None
            raise self._interruption(signum)

    @contextmanager
    def held(self) -> Iterator[None]:
        """Hold signals back for the duration of the block, then raise one that arrived."""
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1
        if not self._depth and self._pending is not None:
            signum, self._pending = self._pending, None
            raise self._interruption(signum)


def raise_keyboard_interrupt(signum, frame):
    """A signal handler that turns SIGTERM into KeyboardInterrupt, as Ctrl-C."""
    raise KeyboardInterrupt(f"sweep received signal {signal.Signals(signum).name}")


@contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """Within the block, SIGTERM raises KeyboardInterrupt, so that a sweep or a workflow stops
    as on Ctrl-C: its runs end KILLED. The handler before the block is restored after it."""
    previous = signal.signal(signal.SIGTERM, raise_keyboard_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous or signal.SIG_DFL)


@contextmanager
def sigterm_exits() -> Iterator[None]:
    """Within the block, SIGTERM raises SystemExit, so that ``finally`` clauses run (a download
    removes its part file).

    SIGTERM's default action ends the process at once; a handler can only be installed in the
    main thread, and one installed by the caller is left as it is.
    """
    replace = (
        threading.current_thread() is threading.main_thread()
        and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    )
    if replace:
        signal.signal(signal.SIGTERM, _exit)
    try:
        yield
    finally:
        if replace:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _exit(signum, frame) -> None:
    raise SystemExit(128 + signum)


# -- the fit thread ----------------------------------------------------------------------------


class LauncherGone(Terminated):
    """The sweep's launching process is gone: this job has nobody to report to."""


def stop_without_launcher(launcher: dict | None) -> None:
    """Raise LauncherGone when the process named by ``launcher`` (tags of `this_process`) ran on
    this host and no longer does."""
    if (
        launcher
        and is_alive(launcher.get(HOST_TAG), launcher.get(PID_TAG), launcher.get(PID_STARTED_TAG))
        is False
    ):
        raise LauncherGone(f"the sweep's launching process {launcher[PID_TAG]} is gone")


def run_interruptibly(
    call: Callable[[], Any],
    launcher: dict | None = None,
    alive: Callable[[float], None] | None = None,
    alive_s: float = ALIVE_S,
) -> Any:
    """``call()`` in a daemon thread, waited for by this thread in short joins; its result,
    or its exception re-raised here.

    Python runs signal handlers in the main thread only, between bytecodes: a fit sitting in
    compiled code (LIBSVM on a large problem) would not see Ctrl-C for minutes. Here the
    handlers run during the joins and raise (``KeyboardInterrupt``, ``Terminated``); the caller
    ends its run KILLED, and the abandoned fit thread ends with the process. Compiled code that
    holds the interpreter lock (numba loops) delays the handlers until it returns to Python.

    A job of a sweep also watches the sweep's ``launcher`` when it runs on the same host: once
    the launcher is gone (SIGKILL), nobody collects the job's outcome, so the job stops
    (``LauncherGone``) instead of working on as an orphan. ``alive(seconds)`` is called every
    ``alive_s`` seconds while the call runs: a long fit (LIBSVM reports nothing while it works)
    shows that it is alive.
    """
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = call()
        except BaseException as exc:  # handed to the waiting thread
            outcome["error"] = exc

    thread = threading.Thread(target=target, name="svmlab-fit", daemon=True)
    thread.start()
    started = watched = time.monotonic()
    beats = 0
    while thread.is_alive():
        thread.join(WAIT_S)
        now = time.monotonic()
        if now - watched > WATCH_S:
            stop_without_launcher(launcher)
            watched = now
        if alive is not None and now - started >= (beats + 1) * alive_s and thread.is_alive():
            beats += 1
            alive(now - started)
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


# -- process identity and signs of life ----------------------------------------------------------


def process_started(pid: int) -> float | None:
    """The start time (seconds since the epoch) of process ``pid``; None if it is gone."""
    try:
        process = psutil.Process(pid)
        if process.status() == psutil.STATUS_ZOMBIE:
            return None
        return process.create_time()
    except psutil.NoSuchProcess:
        return None


def pid_running(pid: int) -> bool:
    """Whether a process ``pid`` exists on this machine (another user's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # another user's process
    return True


#: SLURM's states of a job that has not ended (squeue's long names).
SLURM_LIVE_STATES = frozenset(
    {
        "PENDING",
        "CONFIGURING",
        "RUNNING",
        "COMPLETING",
        "SUSPENDED",
        "STOPPED",
        "SIGNALING",
        "STAGE_OUT",
        "RESIZING",
        "REQUEUED",
        "REQUEUE_FED",
        "REQUEUE_HOLD",
        "RESV_DEL_HOLD",
    }
)
SLURM_ASK_S = 30.0  # squeue and sacct answer within this, or SLURM cannot be asked


def slurm_job() -> str | None:
    """The SLURM job this process runs in (``<array job>_<task>`` for an array task), as
    ``squeue`` and ``scancel`` take it; None outside SLURM."""
    array, task = os.environ.get("SLURM_ARRAY_JOB_ID"), os.environ.get("SLURM_ARRAY_TASK_ID")
    return f"{array}_{task}" if array and task else os.environ.get("SLURM_JOB_ID")


def slurm_job_state(job: str) -> str | None:
    """SLURM's state of ``job``: ``RUNNING``, ``CANCELLED``, ``COMPLETED``, ... (squeue while the
    controller holds the job, then the accounting's sacct); None when that cannot be known from
    here: no SLURM commands, no controller, or a job neither knows (one of another cluster)."""

    def ask(*command: str) -> subprocess.CompletedProcess | None:
        try:
            return subprocess.run(command, capture_output=True, text=True, timeout=SLURM_ASK_S)
        except (OSError, subprocess.SubprocessError):
            return None

    queued = ask("squeue", "--noheader", "--states=all", f"--jobs={job}", "--format=%T")
    if queued is None:
        return None
    if queued.returncode == 0 and queued.stdout.split():
        return queued.stdout.split()[0]
    if queued.returncode != 0 and "Invalid job id" not in queued.stderr:
        return None  # the controller did not answer
    accounted = ask(
        "sacct", "--noheader", "--allocations", "--parsable2", f"--jobs={job}", "--format=State"
    )
    if accounted is not None and accounted.returncode == 0 and accounted.stdout.split():
        return accounted.stdout.split()[0]  # "CANCELLED by 0": CANCELLED
    return None


def this_process() -> dict[str, str]:
    """Tags naming this process: host, pid, start time, and its SLURM job if it runs in one."""
    tags = {
        HOST_TAG: socket.gethostname(),
        PID_TAG: str(os.getpid()),
        PID_STARTED_TAG: iso_time(process_started(os.getpid())),
    }
    job = slurm_job()
    return tags | ({SLURM_JOB_TAG: job} if job else {})


def is_alive(host: str | None, pid: str | None, started: str | None) -> bool | None:
    """Whether the process named by these tags still runs: None when that cannot be seen
    from here (another host, or tags missing); False when its pid is gone or now belongs to a
    process started at another time."""
    if not (host and pid and started) or host != socket.gethostname():
        return None
    now_started = process_started(int(pid))
    return now_started is not None and abs(now_started - tag_time(started)) < SAME_START_S


def last_sign_of_life(tags: dict[str, str], start_s: float) -> float:
    """Seconds since the epoch of a run's last heartbeat, else of its start ``start_s``."""
    beat = tags.get(HEARTBEAT_TAG)
    return tag_time(beat) if beat else start_s


def why_dead(tags: dict[str, str], start_s: float, stale_after_s: float, now: float) -> str | None:
    """Why a RUNNING run (its tags, its start) has no process behind it any more, or None if it
    may still run: it ran as a SLURM job that SLURM, asked from this machine, says has ended
    (cancelled, timed out, failed, its node lost), or its process ran on this host and is gone
    (its pid is free, or taken by a process started at another time), or it ran elsewhere (or
    says not where) and has been silent for longer than ``stale_after_s``."""
    job = tags.get(SLURM_JOB_TAG)
    state = slurm_job_state(job) if job else None
    if state is not None and state not in SLURM_LIVE_STATES:  # SLURM's word, from any machine
        return f"its SLURM job {job} ended {state}"
    host, pid = tags.get(HOST_TAG), tags.get(PID_TAG)
    alive = is_alive(host, pid, tags.get(PID_STARTED_TAG))
    if alive is not None:  # its process is on this host: seen, not guessed from silence
        return None if alive else f"its process {pid} on {host} is gone"
    silent = now - last_sign_of_life(tags, start_s)
    if silent > stale_after_s:
        return f"no sign of life for {silent:.0f} s (limit {stale_after_s:.0f} s)"
    return None


LEFT_REASON = "its job lost the tracking store before it could end it"


def left_marker(sweep_dir: str, run_id: str) -> Path:
    """The file that says a job of the sweep in ``sweep_dir`` lost its store for good while
    run ``run_id`` was open: the run may be left RUNNING, though its process lives on (a
    sweep's worker goes on to the next job)."""
    return Path(sweep_dir) / ".svmlab" / "left" / run_id


def mark_left(sweep_dir: str | None, run_id: str) -> None:
    """Record run ``run_id`` as left by its job (nothing outside a sweep, whose process ends)."""
    if sweep_dir:
        with suppress(OSError):
            left_marker(sweep_dir, run_id).parent.mkdir(parents=True, exist_ok=True)
            left_marker(sweep_dir, run_id).touch()


def left_by_its_job(tags: dict[str, str], run_id: str) -> str | None:
    """Why run ``run_id`` (its tags) is dead for sure: its job recorded that it left it."""
    sweep_dir = tags.get(SWEEP_DIR_TAG)
    if sweep_dir and left_marker(sweep_dir, run_id).exists():
        return LEFT_REASON
    return None


class Heartbeat:
    """Calls ``write(now_tag())`` every ``interval_s`` from a daemon thread.

    A write that fails (the store is briefly down) is simply tried again at the next beat.
    """

    def __init__(self, write: Callable[[str], None], interval_s: float = HEARTBEAT_S):
        self.write = write
        self.interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="svmlab-heartbeat", daemon=True)

    def start(self) -> Heartbeat:
        self._thread.start()
        return self

    def stop(self) -> None:
        """No more beats; waits briefly for a beat under way (a store that hangs is not
        waited for: the thread is a daemon)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=2.0)

    def _beat(self) -> None:
        while not self._stop.wait(self.interval_s):
            with suppress(Exception):  # the next beat tries again
                self.write(now_tag())


def now_tag() -> str:
    """The current time as a heartbeat value."""
    return iso_time(time.time())


def iso_time(seconds: float) -> str:
    """Seconds since the epoch as ISO 8601 in UTC, to the millisecond."""
    return (
        datetime.fromtimestamp(seconds, UTC)
        .isoformat(timespec="milliseconds")
        .replace("+00:00", "Z")
    )


def tag_time(value: str) -> float:
    """Seconds since the epoch of a time tag: ISO 8601, or epoch seconds (earlier runs)."""
    try:
        return float(value)
    except ValueError:
        return datetime.fromisoformat(value).timestamp()


def start_tags() -> dict[str, str]:
    """The tags a run gets when it opens: this process and a first heartbeat."""
    return this_process() | {HEARTBEAT_TAG: now_tag()}
