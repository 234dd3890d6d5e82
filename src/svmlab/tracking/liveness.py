"""Where a run's process lives and whether it still does.

Every run svmlab opens (a training run, a sweep's parent run) carries the tags ``svmlab.host``,
``svmlab.pid`` and ``svmlab.pid_started`` (the process's start time, which tells a reused pid
apart) and ``svmlab.heartbeat``, the time of its last sign of life, refreshed every
``HEARTBEAT_S`` seconds by a daemon thread while the run is open. A process of a SLURM job adds
``svmlab.slurm_job``, the job's id as ``squeue`` and ``scancel`` take it (``<array>_<task>`` for
an array task): any machine of the cluster can then ask SLURM whether the job still runs.
Times are ISO 8601 in UTC (``2026-11-26T10:53:45.123Z``), readable in the UI; :func:`tag_time`
reads them, and the epoch seconds that earlier runs carry. The thread only writes a tag:
it never touches the solver, whose clock runs inside the estimator, and signals are handled in
the main thread only, so no interruption lands in one of its writes.
"""

from __future__ import annotations

import os
import socket
import subprocess
import threading
import time
from datetime import UTC, datetime

import psutil
from mlflow import MlflowClient

HOST_TAG = "svmlab.host"
PID_TAG = "svmlab.pid"
PID_STARTED_TAG = "svmlab.pid_started"
HEARTBEAT_TAG = "svmlab.heartbeat"
SLURM_JOB_TAG = "svmlab.slurm_job"
HEARTBEAT_S = 30.0
SAME_START_S = 1.0  # start times of one process, read twice, agree within this


def process_started(pid: int) -> float | None:
    """The start time (seconds since the epoch) of process ``pid``; None if it is gone."""
    try:
        process = psutil.Process(pid)
        if process.status() == psutil.STATUS_ZOMBIE:
            return None
        return process.create_time()
    except psutil.NoSuchProcess:
        return None


#: SLURM's states of a job that has not ended (squeue's long names).
SLURM_LIVE_STATES = frozenset({
    "PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "STOPPED", "SIGNALING",
    "STAGE_OUT", "RESIZING", "REQUEUED", "REQUEUE_FED", "REQUEUE_HOLD", "RESV_DEL_HOLD"})
SLURM_ASK_S = 30.0  # squeue and sacct answer within this, or SLURM cannot be asked


def slurm_job() -> str | None:
    """The SLURM job this process runs in (``<array job>_<task>`` for an array task); None
    outside SLURM."""
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
    accounted = ask("sacct", "--noheader", "--allocations", "--parsable2", f"--jobs={job}",
                    "--format=State")
    if accounted is not None and accounted.returncode == 0 and accounted.stdout.split():
        return accounted.stdout.split()[0]  # "CANCELLED by 0": CANCELLED
    return None


def this_process() -> dict[str, str]:
    """Tags naming this process: host, pid, start time, and its SLURM job if it runs in one."""
    tags = {HOST_TAG: socket.gethostname(), PID_TAG: str(os.getpid()),
            PID_STARTED_TAG: iso_time(process_started(os.getpid()))}
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


class Heartbeat:
    """Refreshes tag ``svmlab.heartbeat`` of a run every ``interval_s`` from a daemon thread.

    A write that fails (the store is briefly down) is simply tried again at the next beat.
    """

    def __init__(self, uri: str, run_id: str, interval_s: float = HEARTBEAT_S):
        self.client = MlflowClient(uri)
        self.run_id = run_id
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
            try:
                self.client.set_tag(self.run_id, HEARTBEAT_TAG, now_tag())
            except Exception:  # the next beat tries again
                pass


def now_tag() -> str:
    """The current time as a heartbeat value."""
    return iso_time(time.time())


def iso_time(seconds: float) -> str:
    """Seconds since the epoch as ISO 8601 in UTC, to the millisecond."""
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="milliseconds").replace(
        "+00:00", "Z")


def tag_time(value: str) -> float:
    """Seconds since the epoch of a time tag: ISO 8601, or epoch seconds (earlier runs)."""
    try:
        return float(value)
    except ValueError:
        return datetime.fromisoformat(value).timestamp()


def start_tags() -> dict[str, str]:
    """The tags a run gets when it opens: this process and a first heartbeat."""
    return this_process() | {HEARTBEAT_TAG: now_tag()}
