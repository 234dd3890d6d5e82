"""``svmlab runs reap``: runs left RUNNING by a process that died are marked KILLED.

A run is ended by the process that opened it. When that process dies without ending it (SIGKILL,
out of memory, a lost node, a store that was down at the end), the run would stay RUNNING for
good. The reap ends such a run KILLED, with the reason in tag ``svmlab.error``, when

- its process ran on this host and is gone (its pid is free, or taken by a process started at
  another time), or
- it ran on another host (or says not where) and its heartbeat (``svmlab.lifecycle``; runs
  without one: their start) is older than the limit: ``tracking.stale_after_s`` (default
  600 s), ``--older-than`` here.

It runs by itself at the start of every ``svmlab train``, sweep and resume on the experiment they
use, and on demand on any store and experiments.
"""

from __future__ import annotations

import argparse
import sys

from svmlab.errors import StoreError, SvmlabError
from svmlab.lifecycle import STALE_AFTER_S
from svmlab.masking import mask
from svmlab.tracking.existing import require_store
from svmlab.tracking.figures import plot_runs
from svmlab.tracking.liveness import reap
from svmlab.tracking.queries import experiment_ids
from svmlab.tracking.store import resolved_uri, store_error_line

TRACKING_URI_HELP = "the store (default: $MLFLOW_TRACKING_URI, else sqlite:///mlflow.db)"


def add_parser(sub) -> None:
    runs = sub.add_parser("runs", description="Runs of a tracking store.")
    commands = runs.add_subparsers(dest="runs_command", required=True)
    parser = commands.add_parser(
        "reap", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        help="mark KILLED the RUNNING runs whose process is gone")
    parser.add_argument("--tracking-uri", default=None, help=TRACKING_URI_HELP)
    parser.add_argument("-e", "--experiment", action="append", default=[],
                        help="an experiment to look in (repeatable; default: every experiment)")
    parser.add_argument("--older-than", type=float, default=STALE_AFTER_S, metavar="SECONDS",
                        help="a run silent for longer is dead, wherever it ran "
                             f"(default: {STALE_AFTER_S:.0f})")
    parser.set_defaults(func=run_reap)
    plotting = commands.add_parser("plot", help="draw and log the convergence figure of runs",
                                   description=plot_runs.__doc__)
    plotting.add_argument("run_ids", nargs="+", metavar="RUN_ID")
    plotting.add_argument("--tracking-uri", default=None, help=TRACKING_URI_HELP)
    plotting.set_defaults(func=run_plot)


def run_reap(args: argparse.Namespace) -> int:
    """Reap the chosen experiments and say what was done."""
    if args.older_than <= 0:
        return _error("reap", "--older-than must be a positive number of seconds", 2)
    uri = resolved_uri(args.tracking_uri)

    def work() -> None:
        reaped = reap(uri, experiment_ids(uri, args.experiment or None), args.older_than)
        for run_id, reason in reaped:
            print(f"run {run_id} KILLED: {reason}")
        print(f"reaped {len(reaped)} run(s) in {mask(uri)}")

    return answered("reap", uri, work)


def run_plot(args: argparse.Namespace) -> int:
    """Draw the runs' convergence figures and say where they went."""
    uri = resolved_uri(args.tracking_uri)
    return answered("plot", uri, lambda: plot_runs(uri, args.run_ids))


def answered(command: str, uri: str, work) -> int:
    """``work()`` on the existing store at ``uri``; its failure in one line naming the command:
    status 2 for a user's mistake, 3 for the store."""
    try:
        require_store(uri)
        work()
    except StoreError as exc:
        return _error(command, str(exc), 3)
    except SvmlabError as exc:
        return _error(command, str(exc), 2)
    except Exception as exc:
        line = store_error_line(exc, uri)
        if line is None:
            raise
        return _error(command, line, 3)
    return 0


def _error(command: str, message: str, status: int) -> int:
    print(f"svmlab runs {command}: error: {message}", file=sys.stderr)
    return status
