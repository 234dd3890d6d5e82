"""``svmlab runs list``, ``runs show``, ``runs plot`` and ``runs reap``.

``runs reap``: runs left RUNNING by a process that died are marked KILLED.

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

from svmlab.app.exit_codes import EXIT_OK
from svmlab.errors import SvmlabError
from svmlab.lifecycle import STALE_AFTER_S
from svmlab.masking import mask
from svmlab.tracking import columns
from svmlab.tracking.existing import require_store
from svmlab.tracking.figures import plot_runs
from svmlab.tracking.liveness import reap
from svmlab.tracking.queries import (
    artifact_paths,
    experiment_ids,
    find_run,
    matching,
    run_ui_line,
    search_runs,
)
from svmlab.tracking.store import resolved_uri
from svmlab.vocabulary import (
    CONVERGED_TAG,
    DATASET_TAG,
    ERROR_TAG,
    FORMULATION_TAG,
    RUN_NAME_TAG,
    SOLVER_TAG,
    STOPPING_RULE_TAG,
)

TRACKING_URI_HELP = "the store (default: $MLFLOW_TRACKING_URI, else sqlite:///mlflow.db)"
STATUSES = ("RUNNING", "FINISHED", "FAILED", "KILLED", "SCHEDULED")
KEY_METRICS = ("test_accuracy", "fit_time_s", "n_iter")  # and the certified relative gap


def add_parser(sub) -> None:
    runs = sub.add_parser("runs", description="Runs of a tracking store.")
    commands = runs.add_subparsers(dest="runs_command", required=True)
    parser = commands.add_parser(
        "reap",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        help="mark KILLED the RUNNING runs whose process is gone",
    )
    parser.add_argument("--tracking-uri", default=None, help=TRACKING_URI_HELP)
    parser.add_argument(
        "-e",
        "--experiment",
        action="append",
        default=[],
        help="an experiment to look in (repeatable; default: every experiment)",
    )
    parser.add_argument(
        "--older-than",
        type=float,
        default=STALE_AFTER_S,
        metavar="SECONDS",
        help=f"a run silent for longer is dead, wherever it ran (default: {STALE_AFTER_S:.0f})",
    )
    parser.set_defaults(func=run_reap)
    listing = commands.add_parser("list", help="the runs of a store, one line each")
    listing.add_argument("--tracking-uri", default=None, help=TRACKING_URI_HELP)
    listing.add_argument(
        "-e",
        "--experiment",
        action="append",
        default=[],
        help="an experiment to list (repeatable; default: every experiment)",
    )
    listing.add_argument(
        "--status", type=str.upper, choices=STATUSES, help="only runs with this status"
    )
    listing.add_argument("--solver", help="only runs of this solver (its config name)")
    listing.add_argument("--dataset", help="only runs on this dataset")
    listing.add_argument(
        "--last", type=int, default=50, metavar="N", help="the latest N runs (default: 50)"
    )
    listing.set_defaults(func=run_list)
    showing = commands.add_parser(
        "show",
        help="one run: params, metrics, certificate, artifacts, where the MLflow UI shows it",
    )
    showing.add_argument("run_id", metavar="RUN_ID")
    showing.add_argument("--tracking-uri", default=None, help=TRACKING_URI_HELP)
    showing.set_defaults(func=run_show)
    plotting = commands.add_parser(
        "plot", help="draw and log the convergence figure of runs", description=plot_runs.__doc__
    )
    plotting.add_argument("run_ids", nargs="+", metavar="RUN_ID")
    plotting.add_argument("--tracking-uri", default=None, help=TRACKING_URI_HELP)
    plotting.set_defaults(func=run_plot)


def run_reap(args: argparse.Namespace) -> int:
    """Reap the chosen experiments and say what was done."""
    if args.older_than <= 0:
        raise SvmlabError("--older-than must be a positive number of seconds")
    uri = resolved_uri(args.tracking_uri)

    def work() -> None:
        reaped = reap(uri, experiment_ids(uri, args.experiment or None), args.older_than)
        for run_id, reason in reaped:
            print(f"run {run_id} KILLED: {reason}")
        print(f"reaped {len(reaped)} run(s) in {mask(uri)}")

    return answered("reap", uri, work)


def next_line(uri: str | None, experiment: str) -> str:
    """What to do after a train, sweep or tune: list, compare and report the experiment's
    runs (on the same store)."""
    line = (
        f"next: svmlab analyze -e {experiment}  /  svmlab report -e {experiment}  /  "
        f"svmlab runs list -e {experiment}"
    )
    return line + (f"\n      (each with --tracking-uri {mask(uri)})" if uri else "")


def run_list(args: argparse.Namespace) -> int:
    """Print the chosen runs as a table, latest last."""
    if args.last <= 0:
        raise SvmlabError("--last must be a positive number of runs")
    uri = resolved_uri(args.tracking_uri)
    tags = {
        key: value
        for key, value in ((SOLVER_TAG, args.solver), (DATASET_TAG, args.dataset))
        if value
    }

    def work() -> None:
        found = search_runs(
            uri,
            experiment_ids(uri, args.experiment or None),
            matching(tags, args.status),
            latest=args.last,
        )
        print(runs_table(found) if len(found) else "no runs")

    return answered("list", uri, work)


def runs_table(found) -> str:
    """One line per run: id, status, name, solver, dataset, the key metrics and the relative
    duality gap of its certificate."""
    import pandas as pd

    def column(name: str):
        return found[name] if name in found else pd.Series("", index=found.index)

    table = pd.DataFrame(
        {
            "run_id": found["run_id"],
            "status": found["status"],
            "name": column(columns.tag(RUN_NAME_TAG)),
            "solver": column(columns.tag(SOLVER_TAG)),
            "dataset": column(columns.tag(DATASET_TAG)),
        }
    )
    for metric in KEY_METRICS:
        table[metric] = column(columns.metric(metric))
    table["rel_gap"] = [
        row.get(columns.metric(f"rel_gap_{row.get(columns.tag(FORMULATION_TAG))}"))
        for _, row in found.iterrows()
    ]
    shown = table.astype(object).where(table.notna(), "")
    return shown.to_string(index=False, float_format=lambda v: f"{v:.4g}")


def run_show(args: argparse.Namespace) -> int:
    """Print one run: params, final metrics, certified line, artifacts and its UI page."""
    uri = resolved_uri(args.tracking_uri)

    def work() -> None:
        run = find_run(uri, args.run_id)
        info, data = run.info, run.data
        print(
            f"run {info.run_id}  {info.status}  {info.run_name}  (experiment {info.experiment_id})"
        )
        sections = (
            ("params", data.params),
            (
                "metrics",
                {k: f"{v:.6g}" for k, v in data.metrics.items() if not k.startswith("trace/")},
            ),
        )
        for title, values in sections:
            print(f"{title}:")
            for key in sorted(values):
                print(f"  {key} = {values[key]}")
        if CONVERGED_TAG in data.tags:
            print(certificate_of(data.tags, data.metrics))
        if ERROR_TAG in data.tags:
            print(f"error: {data.tags[ERROR_TAG]}")
        print("artifacts:")
        for path in artifact_paths(uri, info.run_id):
            print(f"  {path}")
        print(run_ui_line(uri, info.run_id))

    return answered("show", uri, work)


def certificate_of(tags: dict, metrics: dict) -> str:
    """The certified line a run's fit printed, from its tags and metrics."""
    from svmlab.recording.results import certificate_text

    formulation = tags.get(FORMULATION_TAG)
    values = [metrics.get(f"{kind}_{formulation}") for kind in ("rel_gap", "primal", "dual")]
    certificate = (formulation, *values) if formulation and None not in values else None
    return certificate_text(
        certificate,
        tags[CONVERGED_TAG] == "true",
        tags.get(STOPPING_RULE_TAG, "(no rule recorded)"),
    )


def run_plot(args: argparse.Namespace) -> int:
    """Draw the runs' convergence figures and say where they went."""
    uri = resolved_uri(args.tracking_uri)
    return answered("plot", uri, lambda: plot_runs(uri, args.run_ids))


def answered(command: str, uri: str, work) -> int:
    """``work()`` on the existing store at ``uri`` (its failure: ``cli.run_command``)."""
    require_store(uri, reap_left=command != "reap")  # the reap itself ends them
    work()
    return EXIT_OK
