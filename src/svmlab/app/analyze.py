"""``svmlab analyze`` (significance tests over runs, logged as an analysis run) and ``svmlab
report`` (the same, plus the executed significance-report notebook)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # the command draws into files only
from svmlab.analysis import (
    compare,
    friedman,
    hypotheses,
    notebooks,
    posthoc,
    report,
    stage,
    table,
    ties,
    wilcoxon,
)
from svmlab.app.exit_codes import EXIT_OK
from svmlab.errors import SvmlabError
from svmlab.tracking.existing import require_store
from svmlab.tracking.queries import artifact_location, run_ui_line


def add_parser(subparsers) -> None:
    """Register ``analyze`` and ``report`` on an argparse subparsers object; each sets ``func``,
    which takes the parsed arguments and returns the exit status."""
    analyze = subparsers.add_parser("analyze")
    _add_arguments(analyze)
    analyze.set_defaults(func=analyze_command)
    reporting = subparsers.add_parser("report")
    _add_arguments(reporting)
    reporting.add_argument(
        "--notebook",
        metavar="FILE",
        default=str(notebooks.SIGNIFICANCE_REPORT),
        help="notebook to execute (default: %(default)s)",
    )
    reporting.add_argument(
        "--timeout",
        type=int,
        default=600,
        metavar="SECONDS",
        help="seconds a notebook cell may take (default: %(default)s)",
    )
    reporting.set_defaults(func=report_command)


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    select = parser.add_argument_group("what to analyse")
    select.add_argument(
        "--experiment",
        "-e",
        action="append",
        dest="experiments",
        metavar="NAME",
        help="MLflow experiment (repeatable or comma-separated; default: svmlab)",
    )
    select.add_argument(
        "--filter",
        default="",
        dest="filter_string",
        metavar="STRING",
        help="MLflow filter string, e.g. \"params.`solver.C` = '1.0'\"",
    )
    select.add_argument(
        "--csv",
        metavar="FILE",
        help="results table instead of MLflow runs: "
        "block, treatment, repetition (optional), one column per measure; or "
        "block, treatment, measure, value (key names such as dataset, solver "
        "may stand for block, treatment)",
    )
    select.add_argument(
        "--measure",
        "-m",
        action="append",
        dest="measures",
        metavar="SPEC",
        help="NAME[:higher|lower[:ROPE]], ROPE absolute (0.01) or relative on "
        "log-ratios (10%%) (repeatable or comma-separated; default: "
        f"{' '.join(table.DEFAULT_MEASURES)})",
    )
    select.add_argument(
        "--block",
        action="append",
        dest="blocks",
        metavar="KEY",
        help="param or tag that defines a block (several are combined; default: dataset)",
    )
    select.add_argument(
        "--treatment",
        action="append",
        dest="treatments",
        metavar="KEY",
        help="param or tag that defines a treatment (several are combined; default: solver)",
    )
    select.add_argument(
        "--repetition",
        default="seed",
        metavar="KEY",
        help="param or tag of the repetitions (default: %(default)s)",
    )
    select.add_argument(
        "--tracking-uri",
        metavar="URI",
        help="MLflow store (default: $MLFLOW_TRACKING_URI, else MLflow's default)",
    )
    tests = parser.add_argument_group("tests")
    tests.add_argument(
        "--aggregate",
        choices=table.AGGREGATES,
        default="mean",
        help="over repetitions (default: %(default)s)",
    )
    tests.add_argument(
        "--strict",
        action="store_true",
        help="fail on missing cells instead of dropping their blocks, and on "
        "treatments whose runs differ in other params instead of warning",
    )
    tests.add_argument(
        "--alpha",
        action="append",
        dest="alphas",
        metavar="ALPHA",
        help="significance level (repeatable or comma-separated; default: 0.01 0.05 0.10)",
    )
    tests.add_argument(
        "--hypothesis",
        "-H",
        action="append",
        dest="hypotheses",
        metavar="[MEASURE:]A<B",
        help="directed H1 for one pair: A<B (A's values lower), A>B, A!=B; "
        "without MEASURE for every measure (repeatable or comma-separated; "
        "other pairs: two-sided)",
    )
    tests.add_argument(
        "--zero-method",
        choices=wilcoxon.ZERO_METHODS,
        default="pratt",
        help="zero differences in Wilcoxon's test (default: %(default)s)",
    )
    tests.add_argument(
        "--method",
        choices=wilcoxon.METHODS,
        default="auto",
        help=f"Wilcoxon p-value; auto: exact up to {wilcoxon.EXACT_MAX_N} "
        "differences, else normal (default: %(default)s)",
    )
    tests.add_argument(
        "--no-continuity",
        action="store_false",
        dest="continuity",
        help="no continuity correction in the normal approximation (as R's coin)",
    )
    tests.add_argument(
        "--friedman-method",
        choices=friedman.METHODS,
        default="auto",
        help="omnibus p-value; auto: permutation (exact, else Monte Carlo) up to "
        f"{friedman.PERMUTATION_MAX_BLOCKS} blocks, else Iman-Davenport "
        "(default: %(default)s)",
    )
    tests.add_argument(
        "--tie-rtol",
        type=float,
        default=ties.RTOL,
        metavar="RTOL",
        help="values equal within this relative tolerance tie, in every test "
        "(0: exact comparison; default: %(default)g)",
    )
    tests.add_argument(
        "--correction",
        choices=posthoc.CORRECTIONS,
        default="holm",
        help="for the pairwise Wilcoxon tests (default: %(default)s)",
    )
    tests.add_argument(
        "--control", metavar="TREATMENT", help="also compare every treatment with this one"
    )
    tests.add_argument(
        "--bayes-samples",
        type=int,
        default=20000,
        metavar="N",
        help="posterior samples of the Bayesian test (default: %(default)s)",
    )
    output = parser.add_argument_group("output")
    output.add_argument(
        "--analysis-experiment",
        default=stage.ANALYSIS_EXPERIMENT,
        metavar="NAME",
        help="experiment of the analysis run (default: %(default)s)",
    )
    output.add_argument("--run-name", metavar="NAME", help="name of the analysis run")
    output.add_argument(
        "--objective",
        metavar="COLUMN",
        help="trace column of the convergence curves (default: the objective most runs logged)",
    )


def _listed(values: list[str] | None) -> list[str]:
    """Repeated options, each of which may also be a comma-separated list; empty items dropped."""
    return [item.strip() for value in values or [] for item in value.split(",") if item.strip()]


def _request(args) -> tuple[stage.Request, compare.Options]:
    """The request and options of the parsed arguments (empty strings mean 'not given', as an
    MLproject entry point passes them)."""
    try:
        alphas = tuple(float(a) for a in _listed(args.alphas)) or compare.Options.alphas
    except ValueError:
        raise SvmlabError(f"--alpha takes numbers in (0, 1); got {args.alphas}") from None
    request = stage.Request(
        experiments=_listed(args.experiments) or ["svmlab"],
        filter_string=args.filter_string,
        csv=args.csv or None,
        blocks=_listed(args.blocks) or ["dataset"],
        treatments=_listed(args.treatments) or ["solver"],
        repetition=args.repetition,
        tracking_uri=args.tracking_uri or None,
        objective=args.objective or None,
        measures=[table.parse_measure(m) for m in _listed(args.measures) or table.DEFAULT_MEASURES],
    )
    options = compare.Options(
        aggregate=args.aggregate,
        strict=args.strict,
        alphas=alphas,
        hypotheses=tuple(hypotheses.parse(h) for h in _listed(args.hypotheses)),
        zero_method=args.zero_method,
        method=args.method,
        friedman_method=args.friedman_method,
        rtol=args.tie_rtol,
        continuity=args.continuity,
        correction=args.correction,
        control=args.control or None,
        bayes_samples=args.bayes_samples,
    )
    return request, options


def analyze_command(args: argparse.Namespace, notebook: dict | None = None) -> int:
    """Run the analysis, log it, print the summary (its errors: ``cli.run_command``)."""
    request, options = _request(args)
    if not request.csv:
        require_store(request.tracking_uri)
    run_id, analysis, summary = stage.execute(
        request,
        options,
        experiment=args.analysis_experiment,
        run_name=args.run_name,
        notebook=notebook,
        convergence=not request.csv,
    )
    for message in analysis.warnings:
        print(f"svmlab: warning: {message}", file=sys.stderr)
    print(report.console_summary(summary), end="")
    print(f"\nanalysis run: {run_id} (experiment {args.analysis_experiment})")
    pages = ["report.html"] + (
        [f"notebook/{Path(notebook['notebook']).stem}.html"] if notebook else []
    )
    for page in pages:
        print(f"  {page}: {artifact_location(request.tracking_uri, run_id, page)}")
    print(run_ui_line(request.tracking_uri, run_id))
    return EXIT_OK


def report_command(args: argparse.Namespace) -> int:
    """``analyze`` plus the significance-report notebook, executed with the same selection."""
    request, options = _request(args)
    parameters = stage.notebook_parameters(request, options)
    return analyze_command(
        args,
        notebook={"notebook": args.notebook, "parameters": parameters, "timeout_s": args.timeout},
    )
