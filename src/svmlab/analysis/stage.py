"""An analysis from selection to MLflow run: select, run the protocol on every measure, draw the
convergence curves, write the report files and log them as a run of the analysis experiment."""

from __future__ import annotations

import tempfile
import warnings
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pandas as pd

from svmlab.analysis import compare, measurements, notebooks, report
from svmlab.analysis.table import DEFAULT_MEASURES, Measure, parse_measure
from svmlab.errors import SvmlabError

ANALYSIS_EXPERIMENT = "svmlab-analysis"
RUNS_PER_TAG = 200  # run ids per svmlab.analysis.runs.<i> tag (MLflow tags hold 8000 characters)


@dataclass
class Request:
    """What to analyse: MLflow experiments and a filter, or a CSV file; measures; keys."""

    experiments: list[str] = field(default_factory=lambda: ["svmlab"])
    filter_string: str = ""
    csv: str | None = None
    measures: list[Measure] = field(
        default_factory=lambda: [parse_measure(m) for m in DEFAULT_MEASURES]
    )
    blocks: list[str] = field(default_factory=lambda: ["dataset"])
    treatments: list[str] = field(default_factory=lambda: ["solver"])
    repetition: str = "seed"
    tracking_uri: str | None = None
    objective: str | None = None  # trace column of the convergence curves; None: detect
    run_ids: list[str] | None = None  # only these runs (a workflow's current sweep); None: all


@dataclass
class Analysis:
    selection: measurements.Selection
    measures: list[compare.MeasureAnalysis]
    warnings: list[str]


def analyze(request: Request, options: compare.Options | None = None) -> Analysis:
    """Select the results and run the protocol on each measure (warnings are collected too)."""
    options = options or compare.Options()
    names = [m.name for m in request.measures]
    stray = [h.spec for h in options.hypotheses if h.measure not in (None, *names)]
    if stray:
        raise SvmlabError(
            f"hypothesis for a measure not analysed: {', '.join(stray)}; "
            f"measures: {', '.join(names)}"
        )
    if request.csv:
        selection = measurements.from_csv(
            request.csv, names, request.blocks, request.treatments, request.repetition
        )
    else:
        selection = measurements.from_mlflow(
            request.experiments,
            request.filter_string,
            measures=names,
            blocks=request.blocks,
            treatments=request.treatments,
            repetition=request.repetition,
            tracking_uri=request.tracking_uri,
            run_ids=None if request.run_ids is None else set(request.run_ids),
        )
    if selection.confounds and options.strict:
        raise SvmlabError(measurements.confound_message(selection.confounds))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if selection.confounds:
            warnings.warn(measurements.confound_message(selection.confounds), stacklevel=1)
        for note in selection.notes:
            warnings.warn(note, stacklevel=1)
        analyses = _measures(selection, request.measures, options)
    # once each: the same table (its dropped blocks) warns for every measure
    return Analysis(selection, analyses, list(dict.fromkeys(str(w.message) for w in caught)))


def _measures(
    selection: measurements.Selection, measures: list[Measure], options: compare.Options
) -> list[compare.MeasureAnalysis]:
    """The protocol on every measure; a measure whose table is too small is left out with a
    warning while another can be analysed (an error with --strict, or when none can)."""
    analyses, skipped = [], []
    for measure in measures:
        try:
            analyses.append(
                compare.analyze_measure(selection.long, measure, options, selection.columns)
            )
        except compare.TooFewBlocks as exc:
            if options.strict:
                raise
            skipped.append(exc)
    if not analyses:
        raise skipped[0]
    for exc in skipped:
        warnings.warn(f"not analysed: {exc}", stacklevel=2)
    return analyses


def traces(
    selection: measurements.Selection, objective: str | None = None, tracking_uri: str | None = None
) -> tuple[str | None, dict[str, pd.DataFrame]]:
    """Convergence histories per block: columns treatment, run_id, iteration, time_s, value.

    ``objective`` is a trace column (``objective_hinge_l2``); by default the objective column
    that most of the runs logged."""
    from svmlab.tracking import queries

    if not selection.run_ids:
        return None, {}
    logged = {run_id: queries.logged_metrics(tracking_uri, run_id) for run_id in selection.run_ids}
    if objective is None:
        counts = Counter(
            k for keys in logged.values() for k in keys if k.startswith("trace/objective")
        )
        if not counts:
            return None, {}
        objective = min(counts, key=lambda k: (-counts[k], k))[len("trace/") :]
    frames: dict[str, list[pd.DataFrame]] = {}
    for row in selection.long.itertuples():
        if f"trace/{objective}" not in logged[row.run_id]:
            continue
        value = queries.metric_history(tracking_uri, row.run_id, f"trace/{objective}")
        time_s = queries.metric_history(tracking_uri, row.run_id, "trace/time_s")
        frame = value.rename("value").to_frame().join(time_s.rename("time_s"), how="left")
        frame = frame.rename_axis("iteration").reset_index()
        frame["treatment"], frame["run_id"] = row.treatment, row.run_id
        frames.setdefault(row.block, []).append(frame)
    return objective, {block: pd.concat(f, ignore_index=True) for block, f in frames.items()}


def execute(
    request: Request,
    options: compare.Options | None = None,
    *,
    experiment: str = ANALYSIS_EXPERIMENT,
    run_name: str | None = None,
    notebook: dict | None = None,
    convergence: bool = True,
    parent_run_id: str | None = None,
    tags: dict | None = None,
) -> tuple[str, Analysis, dict]:
    """Analyse, then log everything as one MLflow run; returns (run id, analysis, summary).

    ``notebook`` (keyword arguments of :func:`svmlab.analysis.notebooks.execute` without the
    output folder) also executes a report notebook and logs it, executed and as HTML. The run
    is nested under ``parent_run_id`` if given (a workflow's run) and carries ``tags`` too."""
    options = options or compare.Options()
    analysis = analyze(request, options)
    objective, curves = (
        traces(analysis.selection, request.objective, request.tracking_uri)
        if convergence
        else (None, {})
    )
    with tempfile.TemporaryDirectory() as tmp:
        run_id, summary = _log(
            Path(tmp),
            request,
            options,
            analysis,
            curves,
            objective,
            experiment,
            run_name,
            notebook,
            parent_run_id,
            tags or {},
        )
    return run_id, analysis, summary


def _log(
    folder: Path,
    request: Request,
    options: compare.Options,
    analysis: Analysis,
    curves: dict,
    objective: str | None,
    experiment: str,
    run_name: str | None,
    notebook: dict | None,
    parent_run_id: str | None,
    tags: dict,
) -> tuple[str, dict]:
    """Write the report into ``folder`` and log it as one run, ended FAILED if anything raises
    (under ``mlflow run``, the project's run)."""
    from svmlab.tracking.tracker import Tracker

    with Tracker(request.tracking_uri, experiment, run_name, parent_run_id) as tracker:
        summary = report.write(
            folder, analysis.selection, analysis.measures, options, curves, objective
        )
        summary["warnings"] = analysis.warnings
        tracker.log_params(_params(request, options, objective))
        tracker.log_metrics(_metrics(analysis))
        tracker.set_tags(_tags(request, analysis.selection) | tags)
        if notebook is not None:
            notebooks.execute(output_dir=folder / "notebook", **notebook)
        tracker.log_artifacts(folder)
    return tracker.run_id, summary


def _tags(request: Request, selection: measurements.Selection) -> dict:
    ids = selection.run_ids
    tags = {
        "svmlab.analysis.source": selection.source,
        "svmlab.analysis.n_runs": str(len(ids)),
        "svmlab.analysis.excluded": ", ".join(f"{n} {s}" for s, n in selection.excluded.items())
        or "none",
    }
    if request.filter_string:
        tags["svmlab.analysis.filter"] = request.filter_string
    for i in range(0, len(ids), RUNS_PER_TAG):
        tags[f"svmlab.analysis.runs.{i // RUNS_PER_TAG}"] = ",".join(ids[i : i + RUNS_PER_TAG])
    return tags


def _params(request: Request, options: compare.Options, objective: str | None) -> dict:
    """The analysis settings under ``analysis.``: under ``mlflow run`` the run already holds the
    entry point's own parameters (``measures``, ...), which MLflow does not let us change."""
    params = {f"option.{k}": v for k, v in asdict(options).items() if k != "hypotheses"}
    params["hypotheses"] = ",".join(h.spec for h in options.hypotheses) or None
    params.update(
        {
            "experiments": ",".join(request.experiments),
            "csv": request.csv,
            "measures": ",".join(m.spec for m in request.measures),
            "blocks": ",".join(request.blocks),
            "treatments": ",".join(request.treatments),
            "repetition": request.repetition,
            "objective": objective,
        }
    )
    return {f"analysis.{k}": v for k, v in params.items() if v is not None}


def _metrics(analysis: Analysis) -> dict:
    out = {}
    for a in analysis.measures:
        f = a.friedman
        out.update(
            {
                f"{a.measure.name}.friedman_chi2": f.chi2_tied,
                f"{a.measure.name}.iman_davenport_f": f.iman_davenport_f_tied,
                f"{a.measure.name}.iman_davenport_p": f.iman_davenport_p_tied,
                f"{a.measure.name}.omnibus_p": f.p_value,
                f"{a.measure.name}.n_blocks": len(a.table),
            }
        )
        out.update(
            {
                f"{a.measure.name}.mean_rank.{report.safe_name(t)}": r
                for t, r in a.mean_ranks.items()
            }
        )
    return {k: float(v) for k, v in out.items() if pd.notna(v) and abs(float(v)) != float("inf")}


def notebook_parameters(request: Request, options: compare.Options) -> dict:
    """The significance-report notebook's parameters for this request."""
    from svmlab.tracking.store import absolute_uri

    return {
        "tracking_uri": absolute_uri(request.tracking_uri),
        "experiments": request.experiments,
        "filter_string": request.filter_string,
        "csv": request.csv,
        "measures": [m.spec for m in request.measures],
        "blocks": request.blocks,
        "treatments": request.treatments,
        "repetition": request.repetition,
        "alphas": list(options.alphas),
        "aggregate": options.aggregate,
        "strict": options.strict,
        "hypotheses": [h.spec for h in options.hypotheses],
        "zero_method": options.zero_method,
        "method": options.method,
        "friedman_method": options.friedman_method,
        "continuity": options.continuity,
        "tie_rtol": options.rtol,
        "correction": options.correction,
        "control": options.control,
        "objective": request.objective,
        "run_ids": request.run_ids,
    }
