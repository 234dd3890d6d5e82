"""``svmlab runs reap``: runs left RUNNING by a process that died are marked KILLED.

A run is ended by the process that opened it. When that process dies without ending it (SIGKILL,
out of memory, a lost node, a store that was down at the end), the run would stay RUNNING for
good. The reap ends such a run KILLED, with the reason in tag ``svmlab.error``, when

- it ran as a SLURM job (tag ``svmlab.slurm_job``) that SLURM, asked from this machine, says
  has ended (cancelled, timed out, failed, its node lost: ``squeue``, then ``sacct``), or
- its process ran on this host and is gone (its pid is free, or taken by a process started at
  another time), or
- it ran on another host (or says not where) and its heartbeat (``svmlab.tracking.liveness``;
  runs without one: their start) is older than the limit: ``tracking.stale_after_s`` (default
  600 s), ``--older-than`` here.

It runs by itself at the start of every ``svmlab train``, sweep and resume on the experiment they
use, and on demand on any store and experiments.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Iterable

from mlflow import MlflowClient
from mlflow.entities import Run, RunStatus, ViewType

from svmlab.errors import SvmlabError
from svmlab.tracking import figures
from svmlab.tracking.liveness import (HEARTBEAT_TAG, HOST_TAG, PID_STARTED_TAG, PID_TAG,
                                      SLURM_JOB_TAG, SLURM_LIVE_STATES, is_alive, slurm_job_state,
                                      tag_time)
from svmlab.tracking.queries import experiment_ids
from svmlab.tracking.runs import ERROR_TAG
from svmlab.tracking.store import ensure_experiment, resolved_uri, store_error_line

STALE_AFTER_S = 600.0
RUNNING = "attributes.status = 'RUNNING'"


def last_sign_of_life(run: Run) -> float:
    """Seconds since the epoch of the run's last heartbeat, else of its start."""
    beat = run.data.tags.get(HEARTBEAT_TAG)
    return tag_time(beat) if beat else run.info.start_time / 1000.0


def why_dead(run: Run, stale_after_s: float, now: float) -> str | None:
    """Why a RUNNING run has no process behind it any more, or None if it may still run."""
    tags = run.data.tags
    job = tags.get(SLURM_JOB_TAG)
    state = slurm_job_state(job) if job else None
    if state is not None and state not in SLURM_LIVE_STATES:  # SLURM's word, from any machine
        return f"its SLURM job {job} ended {state}"
    host, pid = tags.get(HOST_TAG), tags.get(PID_TAG)
    alive = is_alive(host, pid, tags.get(PID_STARTED_TAG))
    if alive is not None:  # its process is on this host: seen, not guessed from silence
        return None if alive else f"its process {pid} on {host} is gone"
    silent = now - last_sign_of_life(run)
    if silent > stale_after_s:
        return f"no sign of life for {silent:.0f} s (limit {stale_after_s:.0f} s)"
    return None


def kill(client: MlflowClient, run: Run, reason: str, end_s: float) -> None:
    """End a run KILLED at ``end_s`` with ``reason`` in its error tag."""
    client.set_tag(run.info.run_id, ERROR_TAG, f"ended by svmlab: {reason}")
    client.set_terminated(run.info.run_id, RunStatus.to_string(RunStatus.KILLED),
                          end_time=int(end_s * 1000))


def running_runs(client: MlflowClient, ids: list[str],
                 extra_filter: str = "") -> Iterable[Run]:
    """Every RUNNING run of the experiments (matching ``extra_filter`` too)."""
    query = " and ".join(f for f in (RUNNING, extra_filter) if f)
    token = None
    while True:
        page = client.search_runs(ids, query, ViewType.ACTIVE_ONLY, page_token=token)
        yield from page
        token = page.token
        if not token:
            return


def reap(uri: str | None, ids: list[str],
         stale_after_s: float = STALE_AFTER_S) -> list[tuple[str, str]]:
    """End KILLED every RUNNING run of the experiments ``ids`` whose process is gone; returns
    (run id, reason) of each."""
    client = MlflowClient(resolved_uri(uri))
    now = time.time()
    reaped = []
    own = os.environ.get("MLFLOW_RUN_ID")  # under `mlflow run`: the run this process will use
    for run in list(running_runs(client, ids)):
        reason = None if run.info.run_id == own else why_dead(run, stale_after_s, now)
        if reason:
            kill(client, run, reason, min(now, last_sign_of_life(run)))
            reaped.append((run.info.run_id, reason))
    return reaped


def reap_on_start(uri: str | None, experiment: str, stale_after_s: float) -> None:
    """The reap that starts every run, sweep and resume: on its own experiment; one line on
    stderr per run it ends."""
    for run_id, reason in reap(uri, [ensure_experiment(uri, experiment)], stale_after_s):
        print(f"svmlab: run {run_id} was left RUNNING; marked KILLED: {reason}",
              file=sys.stderr, flush=True)


def kill_children(uri: str | None, parent_run_id: str, reason: str) -> None:
    """End KILLED the RUNNING children of a sweep's parent run (the sweep is stopping and its
    jobs with it)."""
    client = MlflowClient(resolved_uri(uri))
    parent = client.get_run(parent_run_id)
    for run in list(running_runs(client, [parent.info.experiment_id],
                                 f"tags.`mlflow.parentRunId` = '{parent_run_id}'")):
        kill(client, run, reason, time.time())


def end_job_run(uri: str | None, parent_run_id: str, job_num: int, reason: str) -> Run | None:
    """The run of job ``job_num`` of a sweep, ended KILLED with ``reason`` if it was still
    RUNNING (its job ended without ending it); None when the job left no run."""
    client = MlflowClient(resolved_uri(uri))
    parent = client.get_run(parent_run_id)
    found = client.search_runs([parent.info.experiment_id],
                               f"tags.`mlflow.parentRunId` = '{parent_run_id}' and "
                               f"tags.`svmlab.job_num` = '{job_num}'", ViewType.ACTIVE_ONLY)
    if not found:
        return None
    if found[0].info.status == "RUNNING":
        kill(client, found[0], reason, time.time())
    return client.get_run(found[0].info.run_id)


def add_parser(sub) -> None:
    runs = sub.add_parser("runs", description="Runs of a tracking store.")
    commands = runs.add_subparsers(dest="runs_command", required=True)
    parser = commands.add_parser(
        "reap", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
        help="mark KILLED the RUNNING runs whose process is gone")
    parser.add_argument("--tracking-uri", default=None,
                        help="the store (default: $MLFLOW_TRACKING_URI, else sqlite:///mlflow.db)")
    parser.add_argument("-e", "--experiment", action="append", default=[],
                        help="an experiment to look in (repeatable; default: every experiment)")
    parser.add_argument("--older-than", type=float, default=STALE_AFTER_S, metavar="SECONDS",
                        help="a run silent for longer is dead, wherever it ran "
                             f"(default: {STALE_AFTER_S:.0f})")
    parser.set_defaults(func=run_reap)
    figures.add_parser(commands)


def run_reap(args: argparse.Namespace) -> int:
    """Reap the chosen experiments and say what was done."""
    if args.older_than <= 0:
        return _error("--older-than must be a positive number of seconds", 2)
    uri = resolved_uri(args.tracking_uri)
    try:
        ids = (experiment_ids(uri, args.experiment) if args.experiment
               else [e.experiment_id for e in MlflowClient(uri).search_experiments()])
        reaped = reap(uri, ids, args.older_than)
    except SvmlabError as exc:
        return _error(str(exc), 2)
    except Exception as exc:
        line = store_error_line(exc, uri)
        if line is None:
            raise
        return _error(line, 3)
    for run_id, reason in reaped:
        print(f"run {run_id} KILLED: {reason}")
    print(f"reaped {len(reaped)} run(s) in {uri}")
    return 0


def _error(message: str, status: int) -> int:
    print(f"svmlab runs reap: error: {message}", file=sys.stderr)
    return status
