"""The MLflow side of ``svmlab.lifecycle``: a run's heartbeat tag written, and the runs whose
process is gone ended KILLED (the reap).

A run is ended by the process that opened it. When that process dies without ending it (SIGKILL,
out of memory, a lost node, a store that was down at the end), the run would stay RUNNING for
good; the reap ends it KILLED, with the reason in tag ``svmlab.error``, when
``lifecycle.why_dead`` finds its process gone. It runs by itself at the start of every
``svmlab train``, sweep and resume on the experiment they use, and on demand
(``svmlab runs reap``) on any store and experiments.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterable

from mlflow import MlflowClient
from mlflow.entities import Run, RunStatus, ViewType

from svmlab.lifecycle import (
    HEARTBEAT_S,
    STALE_AFTER_S,
    Heartbeat,
    last_sign_of_life,
    left_by_its_job,
    why_dead,
)
from svmlab.tracking.store import ensure_experiment, resolved_uri
from svmlab.vocabulary import ERROR_TAG, HEARTBEAT_TAG, JOB_NUM_TAG, PARENT_TAG

RUNNING = "attributes.status = 'RUNNING'"


class RunHeartbeat(Heartbeat):
    """Refreshes tag ``svmlab.heartbeat`` of run ``run_id`` every ``interval_s``."""

    def __init__(self, uri: str, run_id: str, interval_s: float = HEARTBEAT_S):
        client = MlflowClient(uri)
        super().__init__(lambda value: client.set_tag(run_id, HEARTBEAT_TAG, value), interval_s)


def _start_s(run: Run) -> float:
    return run.info.start_time / 1000.0


def kill(client: MlflowClient, run: Run, reason: str, end_s: float) -> None:
    """End a run KILLED at ``end_s`` with ``reason`` in its error tag."""
    client.set_tag(run.info.run_id, ERROR_TAG, f"ended by svmlab: {reason}")
    client.set_terminated(
        run.info.run_id, RunStatus.to_string(RunStatus.KILLED), end_time=int(end_s * 1000)
    )


def running_runs(client: MlflowClient, ids: list[str], extra_filter: str = "") -> Iterable[Run]:
    """Every RUNNING run of the experiments (matching ``extra_filter`` too)."""
    query = " and ".join(f for f in (RUNNING, extra_filter) if f)
    token = None
    while True:
        page = client.search_runs(ids, query, ViewType.ACTIVE_ONLY, page_token=token)
        yield from page
        token = page.token
        if not token:
            return


def reap(
    uri: str | None, ids: list[str], stale_after_s: float = STALE_AFTER_S
) -> list[tuple[str, str]]:
    """End KILLED every RUNNING run of the experiments ``ids`` whose process is gone; returns
    (run id, reason) of each."""
    now = time.time()
    own = os.environ.get("MLFLOW_RUN_ID")  # under `mlflow run`: the run this process will use
    return _end_dead(
        MlflowClient(resolved_uri(uri)),
        ids,
        lambda run: (
            None
            if run.info.run_id == own
            else left_by_its_job(run.data.tags, run.info.run_id)
            or why_dead(run.data.tags, _start_s(run), stale_after_s, now)
        ),
    )


def _end_dead(
    client: MlflowClient, ids: list[str], why: Callable[[Run], str | None]
) -> list[tuple[str, str]]:
    """End KILLED, at its last sign of life, every RUNNING run of the experiments ``ids`` for
    which ``why(run)`` gives a reason; (run id, reason) of each."""
    now = time.time()
    reaped = []
    for run in list(running_runs(client, ids)) if ids else []:
        reason = why(run)
        if reason:
            kill(client, run, reason, min(now, last_sign_of_life(run.data.tags, _start_s(run))))
            reaped.append((run.info.run_id, reason))
    return reaped


def reap_on_start(uri: str | None, experiment: str, stale_after_s: float) -> None:
    """The reap that starts every run, sweep and resume: on its own experiment; one line on
    stderr per run it ends."""
    _say_reaped(reap(uri, [ensure_experiment(uri, experiment)], stale_after_s))


def reap_left(uri: str | None) -> None:
    """End KILLED, in every experiment of the store, the runs that a sweep recorded as left
    for want of its store (``lifecycle.left_by_its_job``): dead for sure, so any command that
    reaches the store again ends them; one line on stderr per run."""
    client = MlflowClient(resolved_uri(uri))
    ids = [e.experiment_id for e in client.search_experiments()]
    _say_reaped(_end_dead(client, ids, lambda run: left_by_its_job(run.data.tags, run.info.run_id)))


def _say_reaped(reaped: list[tuple[str, str]]) -> None:
    for run_id, reason in reaped:
        print(
            f"svmlab: run {run_id} was left RUNNING; marked KILLED: {reason}",
            file=sys.stderr,
            flush=True,
        )


def kill_children(uri: str | None, parent_run_id: str, reason: str) -> None:
    """End KILLED the RUNNING children of a sweep's parent run (the sweep is stopping and its
    jobs with it)."""
    client = MlflowClient(resolved_uri(uri))
    parent = client.get_run(parent_run_id)
    for run in list(
        running_runs(
            client, [parent.info.experiment_id], f"tags.`{PARENT_TAG}` = '{parent_run_id}'"
        )
    ):
        kill(client, run, reason, time.time())


def end_orphaned_parent(uri: str | None, parent_run_id: str, reason: str) -> None:
    """End KILLED a sweep's parent run still RUNNING whose launching process is gone: a job
    that outlives its launcher does it at once, so that no reap has to."""
    client = MlflowClient(resolved_uri(uri))
    parent = client.get_run(parent_run_id)
    if parent.info.status == "RUNNING":
        kill(client, parent, reason, time.time())


def end_job_run(uri: str | None, parent_run_id: str, job_num: int, reason: str) -> Run | None:
    """The run of job ``job_num`` of a sweep, ended KILLED with ``reason`` if it was still
    RUNNING (its job ended without ending it); None when the job left no run."""
    client = MlflowClient(resolved_uri(uri))
    parent = client.get_run(parent_run_id)
    found = client.search_runs(
        [parent.info.experiment_id],
        f"tags.`{PARENT_TAG}` = '{parent_run_id}' and tags.`{JOB_NUM_TAG}` = '{job_num}'",
        ViewType.ACTIVE_ONLY,
    )
    if not found:
        return None
    if found[0].info.status == "RUNNING":
        kill(client, found[0], reason, time.time())
    return client.get_run(found[0].info.run_id)
