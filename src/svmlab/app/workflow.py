"""``svmlab workflow NAME [--scale quick|medium|paper]``: a paper's reproduction in one command.

The steps, each a run nested under one outer run (experiment ``workflow-<name>-<scale>``):

0. with a ``select`` block, the selection: one ``svmlab tune`` study per dataset over the
   block's grid, scored on a validation split (``svmlab.app.workflow_selection``); the sweep then runs
   once per dataset with that dataset's selected values;
1. the sweep: ``svmlab train -m +experiment=<preset> <scale overrides> +resume=true`` as a
   child process, so that its exit status and Hydra's behaviour are those of the command
   itself; its parent run learns the outer run from ``SVMLAB_PARENT_RUN_ID``;
2. the analysis (``svmlab analyze`` with the workflow's measures and hypotheses), whose
   figures are copied to the outer run;
3. the report: the significance-report notebook executed on the same selection;
4. the claims tables (Markdown, HTML, CSV) on the outer run: the paper's claims and svmlab's
   own statements.

The analysis, the report and the claims read only the runs of the current sweep: those its
latest sweep run in each sweep folder listed, trained or (``+resume=true``) finished before
with the same config; other runs of the experiment (a dataset since removed) are left out.

Running a workflow again reopens its outer run (found by its tags) and completes what is
missing: a step is done when its run finished (a sweep only while every run it listed still
exists), and every step after one that had to run again runs again. The studies and the sweep
resume, so no configuration is trained twice.

``svmlab workflow table NAME... --scale S`` prints the claims of each workflow's latest finished
outer run at scale S as Markdown: the count of each verdict per workflow (the README's summary),
then the paper's claims and svmlab's statements (docs/results.md's tables).
"""

from __future__ import annotations

import hashlib
import io
import os
import signal
import subprocess
import sys
import tempfile
from importlib.resources import files
from pathlib import Path

import pandas as pd

from svmlab.app.config.overrides import override_key, override_value, replaced
from svmlab.app.exit_codes import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK
from svmlab.errors import SvmlabError
from svmlab.masking import mask
from svmlab.vocabulary import (
    ROLE_TAG,
    SWEEP_DIR_TAG,
    WORKFLOW_DIGEST_TAG,
    WORKFLOW_SCALE_TAG,
    WORKFLOW_TAG,
)
from svmlab.workflows import claims as claims_table
from svmlab.workflows.spec import SCALES, Workflow, load, names

STEPS = 4
FIGURES = ("cd_diagram.png", "performance_profile.png", "data_profile.png")


def add_parser(subparsers) -> None:
    """Register ``workflow`` on an argparse subparsers object."""
    parser = subparsers.add_parser(
        "workflow",
        epilog="svmlab workflow list: the workflows and what they reproduce; "
        "svmlab workflow table NAME... --scale medium: their claims tables",
    )
    parser.add_argument(
        "name",
        help="a workflow (see 'svmlab workflow list'), the path of a "
        "workflow file (*.yaml), 'list', or 'table' followed by "
        "workflow names (default: all): the claims tables of "
        "their latest finished runs at --scale, as Markdown",
    )
    parser.add_argument(
        "--scale",
        choices=SCALES,
        default="quick",
        help="quick: minutes on a laptop; medium: the paper's datasets and "
        "protocol with fewer seeds or values of C; paper: the paper's "
        "experiment "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--tracking-uri",
        metavar="URI",
        help="MLflow store (default: $MLFLOW_TRACKING_URI, else MLflow's default)",
    )
    parser.add_argument(
        "--launcher",
        choices=launchers(),
        default="joblib",
        help="Hydra launcher of the sweep (default: %(default)s)",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        metavar="N",
        help="worker processes of the joblib launcher (default: one per CPU)",
    )
    parser.add_argument(
        "--storage",
        default="sqlite:///optuna.db",
        metavar="URL",
        help="Optuna storage of the selection studies (default: %(default)s)",
    )
    parser.add_argument(
        "overrides",
        nargs="*",
        metavar="OVERRIDE",
        help="more Hydra overrides for the sweep, e.g. paths.data_dir=DIR",
    )
    parser.set_defaults(func=command)


def launchers() -> list[str]:
    """Hydra's basic launcher and those of conf/hydra/launcher."""
    folder = files("svmlab.conf") / "hydra" / "launcher"
    return ["basic", *sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".yaml"))]


def command(args) -> int:
    """List the workflows, or run one; 2 on a user error."""
    if args.name == "list":
        print(listing())
        return EXIT_OK
    if args.name == "table":
        return table_command(
            [load(n) for n in args.overrides or names()], args.scale, args.tracking_uri
        )
    workflow = load(args.name)
    workflow.sweep_overrides(args.scale)  # the scale exists
    return run_workflow(
        workflow,
        args.scale,
        args.tracking_uri,
        args.launcher,
        args.jobs,
        args.overrides,
        args.storage,
    )


def listing() -> str:
    """One paragraph per shipped workflow: name, paper, claims, preset, and per scale its runs
    and measured wall time."""
    lines = []
    for name in names():
        w = load(name)
        usage = f"svmlab workflow {name} --scale quick|medium|paper"
        selects = (
            f"selects {', '.join(w.select.grid)} per dataset by validation; " if w.select else ""
        )
        lines += [
            f"{name}: {w.paper}",
            f"    {w.description}",
            f"    {len(w.claims)} claims; {selects}sweep +experiment={w.preset}; {usage}",
            *(f"    {scale:<7} {w.budgets[scale].line()}" for scale in w.scales),
            "",
        ]
    return "\n".join(lines).rstrip()


def table_command(workflows: list[Workflow], scale: str, uri: str | None) -> int:
    """Print the claims of each workflow's latest finished run at ``scale`` as Markdown: one
    table of the papers' claims, one of svmlab's own statements; 1 when a workflow has none
    (named on stderr); a store that fails: ``cli.run_command``."""
    from svmlab.tracking.existing import require_store
    from svmlab.tracking.workflows import latest_claims

    rows, missing, tallies = {kind: [] for kind in claims_table.TITLES}, [], []
    uri = require_store(uri)
    for workflow in workflows:
        found = latest_claims(uri, experiment_name(workflow, scale), outer_tags(workflow, scale))
        if found is None:
            missing.append(workflow.name)
            continue
        frame = pd.read_csv(io.StringIO(found[1]), dtype=str, keep_default_na=False)
        tallies.append(claims_table.tally_row(workflow.name, frame))
        for row in frame.to_dict("records"):
            # a companion stands beside its paper claim, in the paper's table
            kind = "paper" if row.get("beside") else row.get("kind", "paper")
            rows[kind].append(
                {
                    "workflow": f"`{workflow.name}`",
                    "claim (source)": f"{row['claim']} ({row['source']})",
                    "paper": row["paper"],
                    "n": row.get("n", ""),
                    "unit": row.get("unit", ""),
                    "confidence": row.get("confidence", ""),
                    f"svmlab ({scale} scale)": row.get("estimate", row.get("svmlab", "")),
                    "interval": row.get("interval", ""),
                    "verdict": row["verdict"],
                }
            )
    for name in missing:
        print(
            f"svmlab: workflow {name} has no finished run at scale {scale} in {mask(uri)}; run "
            f"'svmlab workflow {name} --scale {scale}'",
            file=sys.stderr,
        )
    shown = [
        f"{claims_table.TITLES[kind]}:\n\n{claims_table.markdown(pd.DataFrame(found))}"
        for kind, found in rows.items()
        if found
    ]
    if tallies:
        shown.insert(
            0, f"{claims_table.TALLY_TITLE}:\n\n{claims_table.markdown(pd.DataFrame(tallies))}"
        )
    if shown:
        print("\n".join(shown), end="")
    return EXIT_FAILED if missing else EXIT_OK


def experiment_name(workflow: Workflow, scale: str) -> str:
    return f"workflow-{workflow.name}-{scale}"


def outer_tags(workflow: Workflow, scale: str) -> dict[str, str]:
    """The tags that identify a workflow's outer runs at ``scale``."""
    return {WORKFLOW_TAG: workflow.name, WORKFLOW_SCALE_TAG: scale}


def sweep_arguments(
    workflow: Workflow,
    scale: str,
    uri: str,
    launcher: str = "joblib",
    jobs: int | None = None,
    extra: list[str] = (),
) -> list[str]:
    """The overrides of the sweep step: the preset and the scale's overrides, the workflow's
    experiment, resume, the sweep folder and the launcher (unless the workflow sets them), then
    ``extra``, which replace any of those that set the same key."""
    defaults = [
        f"tracking.experiment={experiment_name(workflow, scale)}",
        f"tracking.uri={uri}",
        "+resume=true",
        f"hydra.sweep.dir=multirun/workflows/{workflow.name}-{scale}",
    ]
    if launcher != "basic":
        defaults.append(f"hydra/launcher={launcher}")
    if jobs is not None and launcher == "joblib":
        defaults.append(f"hydra.launcher.n_jobs={jobs}")
    own = workflow.sweep_overrides(scale)
    own += [o for o in defaults if override_key(o) not in {override_key(w) for w in own}]
    return replaced(own, extra)


def run_workflow(
    workflow: Workflow,
    scale: str,
    uri: str | None = None,
    launcher: str = "joblib",
    jobs: int | None = None,
    extra: list[str] = (),
    storage: str = "sqlite:///optuna.db",
) -> int:
    """Run (or complete) the workflow; EXIT_OK when every step finished, EXIT_FAILED when one
    failed, EXIT_INTERRUPTED when interrupted; SvmlabError for a selection that cannot run."""
    from svmlab.app import workflow_selection
    from svmlab.lifecycle import sigterm_interrupts
    from svmlab.tracking.store import absolute_uri, ui_line
    from svmlab.tracking.workflows import OuterRun

    uri = absolute_uri(uri)
    workflow = workflow.at_scale(scale)
    arguments = sweep_arguments(workflow, scale, uri, launcher, jobs, extra)
    if workflow.select:
        try:
            workflow_selection.check(workflow, scale, arguments, storage)
        except SvmlabError as exc:
            raise SvmlabError(f"{workflow.path}: select: {exc}") from None
    # what the outer run stands for: the workflow's text, the scale and the sweep's overrides
    # (but not where the store is)
    identity = [
        workflow.path.read_text(),
        scale,
        *(a for a in arguments if not a.startswith("tracking.uri=")),
    ]
    digest = hashlib.sha256("\n".join(identity).encode()).hexdigest()
    outer = OuterRun(
        uri,
        experiment_name(workflow, scale),
        f"workflow {workflow.name} ({scale})",
        outer_tags(workflow, scale) | {WORKFLOW_DIGEST_TAG: digest},
    )
    print(
        f"workflow {workflow.name} ({scale}): outer run {outer.run_id}"
        + (" (reopened: completing it)" if outer.reused else ""),
        flush=True,
    )
    try:
        with sigterm_interrupts():
            failed = _steps(workflow, scale, uri, arguments, outer, storage)
    except KeyboardInterrupt:
        outer.end("KILLED")
        print(
            f"workflow {workflow.name}: interrupted; run the same command again to complete it",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    except BaseException:
        outer.end("FAILED")
        raise
    outer.end("FAILED" if failed else "FINISHED")
    print(ui_line(uri, outer.experiment_id, outer.run_id))
    return EXIT_FAILED if failed else EXIT_OK


def _steps(
    workflow: Workflow, scale: str, uri: str, arguments: list[str], outer, storage: str
) -> list[str]:
    """Run every step that is not done; returns the names of the steps that failed."""
    failed, first = [], int(workflow.select is not None)
    steps = STEPS + first
    title = f"[{first + 1}/{steps}] sweep"
    sweeps, chosen = [(title, arguments)], []
    if workflow.select:  # one sweep per dataset, with its values, in a folder of its own
        chosen = _select(workflow, scale, arguments, storage, outer, f"[1/{steps}] select")
        folder = override_value(arguments, "hydra.sweep.dir")
        sweeps = [
            (
                f"{title} {c.dataset}",
                replaced(arguments, [f"hydra.sweep.dir={folder}/{c.dataset}", *c.overrides()]),
            )
            for c in chosen
        ]
    redo = False
    for title, part in sweeps:
        ran, part_failed = _sweep_step(part, outer, title)
        redo |= ran
        if part_failed:  # some jobs failed: the others are analysed, the next run retries them
            failed.append("sweep")

    run_ids = outer.swept_runs([override_value(part, "hydra.sweep.dir") for _, part in sweeps])
    request, options = analysis_request(workflow, scale, uri, run_ids)
    for number, role, step in ((2, "analysis", _analysis), (3, "report", _report)):
        number += first
        if role == "report" and workflow.notebook is None:
            continue
        done = None if redo else outer.done(role)
        if done:
            print(f"[{number}/{steps}] {role}: finished before (run {done})")
            continue
        redo = True
        try:
            run_id = step(workflow, scale, request, options, outer)
        except SvmlabError as exc:
            print(f"[{number}/{steps}] {role}: failed: {exc}", file=sys.stderr)
            failed.append(role)
            break
        print(f"[{number}/{steps}] {role}: run {run_id}", flush=True)

    judged = _claims(workflow, scale, uri, outer, chosen, run_ids)
    print(f"[{steps}/{steps}] claims: {claims_table.summary(judged)}")
    for kind, group in claims_table.sections(judged).items():
        print(f"{claims_table.TITLES[kind]}:\n{claims_table.markdown(claims_table.table(group))}")
    _print_pages(workflow, uri, outer)
    return failed


def _print_pages(workflow: Workflow, uri: str, outer) -> None:
    """Where the workflow's pages are: the analysis's report, the executed notebook, the
    claims."""
    from svmlab.tracking.queries import artifact_location

    pages = [
        ("report", outer.done("analysis"), "report.html"),
        ("notebook", outer.done("report"), f"{workflow.notebook}.html"),
        ("claims", outer.run_id, "claims.md"),
    ]
    for name, run_id, path in pages:
        if run_id:
            print(f"{name}: {artifact_location(uri, run_id, path)}")


def _select(
    workflow: Workflow, scale: str, arguments: list[str], storage: str, outer, title: str
) -> list:
    """The selection step: every dataset's study, its values logged on the outer run (params
    ``selected.<dataset>.<key>``, metrics ``selected.<dataset>.validation_<metric>``)."""
    from svmlab.app import workflow_selection

    print(
        f"{title}: {', '.join(workflow.select.grid)} per dataset by validation, storage {storage}",
        flush=True,
    )
    chosen, status = workflow_selection.run(workflow, scale, arguments, storage, outer.run_id)
    if status == EXIT_INTERRUPTED:
        raise KeyboardInterrupt
    if status:
        print(f"{title}: a study did not finish (exit status {status})", file=sys.stderr)
        raise SystemExit(status)
    metric = workflow.select.metric
    outer.log_values(
        {f"selected.{c.dataset}.{k}": v for c in chosen for k, v in c.values.items()},
        {f"selected.{c.dataset}.validation_{metric}": c.score for c in chosen},
    )
    print(claims_table.selection_markdown(workflow.select, chosen), flush=True)
    return chosen


def _sweep_step(arguments: list[str], outer, title: str) -> tuple[bool, bool]:
    """One sweep, unless a FINISHED sweep in the same folder still has all its runs: (whether
    it ran, whether some of its jobs failed)."""
    tags = {SWEEP_DIR_TAG: str(Path(override_value(arguments, "hydra.sweep.dir")).resolve())}
    sweep_run = outer.done("sweep", tags)
    missing = outer.missing_jobs(sweep_run) if sweep_run else []
    if sweep_run and not missing:
        print(f"{title}: finished before (run {sweep_run})")
        return False, False
    if missing:
        print(f"{title}: {len(missing)} run(s) it listed are gone; resuming it")
    print(f"{title}: svmlab train -m {' '.join(arguments)}", flush=True)
    before = outer.latest("sweep", tags)
    status = _sweep(arguments, outer.run_id)
    after = outer.latest("sweep", tags)
    if status and (after in (None, before) or after[1] != "FAILED"):
        print(f"{title}: stopped before its end (exit status {status})", file=sys.stderr)
        raise SystemExit(status if status > 0 else 1)
    return True, bool(status)


def _sweep(arguments: list[str], parent_run_id: str) -> int:
    """``svmlab train -m`` as a child process nested under ``parent_run_id``; its exit status.
    The child is stopped with the workflow (Ctrl-C reaches both; SIGTERM is passed on)."""
    from svmlab.tracking.sweeps import PARENT_ENV

    env = {
        k: v for k, v in os.environ.items() if k not in ("MLFLOW_RUN_ID", "MLFLOW_EXPERIMENT_ID")
    }
    child = subprocess.Popen(
        [sys.executable, "-m", "svmlab.app.cli", "train", "-m", *arguments],
        env=env | {PARENT_ENV: parent_run_id},
    )
    try:
        return child.wait()
    except KeyboardInterrupt:
        child.send_signal(signal.SIGTERM)
        child.wait()
        raise


def analysis_request(workflow: Workflow, scale: str, uri: str, run_ids: set[str] | None = None):
    """The analysis step's request and options (``svmlab analyze``'s), on ``run_ids`` when
    given (the current sweep's runs)."""
    from svmlab.analysis import compare, hypotheses, stage, table

    a = workflow.analysis
    # selected values are set per dataset: part of each block (w1a / 32), not a difference
    # between the runs of a treatment
    selected = [k for k in (workflow.select.grid if workflow.select else ()) if k not in a.blocks]
    request = stage.Request(
        experiments=[experiment_name(workflow, scale)],
        filter_string=a.filter,
        measures=[table.parse_measure(m) for m in a.measures],
        blocks=[*a.blocks, *selected],
        treatments=a.treatments,
        tracking_uri=uri,
        objective=a.objective,
        run_ids=None if run_ids is None else sorted(run_ids),
    )
    options = compare.Options(
        hypotheses=tuple(hypotheses.parse(h) for h in a.hypotheses), control=a.control
    )
    return request, options


def _analysis(workflow: Workflow, scale: str, request, options, outer) -> str:
    """The analysis run, nested under the outer run; its figures are copied to the outer run."""
    from svmlab.analysis import stage

    run_id, analysis, _ = stage.execute(
        request,
        options,
        experiment=experiment_name(workflow, scale),
        run_name=f"analysis {workflow.name} ({scale})",
        parent_run_id=outer.run_id,
        tags={ROLE_TAG: "analysis"},
    )
    for message in analysis.warnings:
        print(f"svmlab: warning: {message}", file=sys.stderr)
    outer.copy_artifacts(
        run_id, lambda p: Path(p).name in FIGURES or p.startswith("convergence/"), "figures"
    )
    return run_id


def _report(workflow: Workflow, scale: str, request, options, outer) -> str:
    """The report notebook executed on the analysis's selection, as a run of its own."""
    from svmlab.analysis import notebooks
    from svmlab.analysis.stage import notebook_parameters
    from svmlab.tracking.tracker import Tracker

    notebook = notebooks.NOTEBOOK_DIR / f"{workflow.notebook}.ipynb"
    with Tracker(
        request.tracking_uri,
        experiment_name(workflow, scale),
        f"report {workflow.name} ({scale})",
        outer.run_id,
    ) as tracker:
        tracker.set_tags({ROLE_TAG: "report"})
        with tempfile.TemporaryDirectory() as folder:
            notebooks.execute(notebook, Path(folder), notebook_parameters(request, options))
            tracker.log_artifacts(folder)
    return tracker.run_id


def _claims(
    workflow: Workflow, scale: str, uri: str, outer, chosen: list, run_ids: set[str]
) -> list:
    """Judge the claims on the finished runs of the current sweep (``run_ids``); log the
    tables to the outer run."""
    from svmlab.analysis import measurements, precision
    from svmlab.tracking import queries

    try:
        runs, _ = measurements.finished_runs(
            [experiment_name(workflow, scale)], workflow.analysis.filter, uri, run_ids
        )
    except SvmlabError:  # nothing finished yet: every claim is untestable
        runs = pd.DataFrame()
    notes = []

    def derive(wanted):
        values, more = precision.derive(runs, wanted, uri, queries.load_trace)
        notes.extend(more)
        return values

    judged = claims_table.judge_all(workflow.claims, runs, derive)
    with tempfile.TemporaryDirectory() as folder, tempfile.TemporaryDirectory() as drawn:
        claims_table.write(
            Path(folder), workflow, scale, judged, outer.download("figures", drawn), notes, chosen
        )
        outer.log(folder, claims_table.metrics(judged))
    return judged
