"""Measures at equal precision: ``time_to_gap_<tol>`` and ``iters_to_gap_<tol>``, the solver time
and the iteration at which a run's certified relative duality gap first fell to ``tol``.

They are read from the run's trace artifact (``trace/trace.parquet``): the column
``rel_gap_<formulation>`` of the formulation the run certified (tag ``svmlab.formulation``),
NaN in rows without a certificate. When no trace row reaches ``tol`` (or the trace has no
certified rows) the final certificate decides: a run whose final gap is within ``tol`` reached it
by its end, so its fit time and iteration count are reported (an upper bound, listed in the
notes; a solver's final point can be better than its last traced one), and ``<name>:lower``
(LOWER) gives the lower bound, the last certified trace row's time (0 without one): the time is
interval-censored, known only to lie between the two, and the claims read it so. A run that
never reached ``tol`` gets +inf, which the performance profiles count as a failure and the
significance tests as a missing cell. The names are MLflow-safe (no parentheses), e.g.
``time_to_gap_1e-3``.

``time_to_obj_<tol>`` and ``iters_to_obj_<tol>`` are the same for a measure that needs no
certificate, the one of Nie et al. (ICML 2014): the first trace row whose objective is within
``tol`` of the reference optimum, (obj - obj*) / |obj*| <= tol. The objective is the run's loss
and penalty with a free bias (``objective_hinge_l2`` for every hinge-loss run, however it treats
its bias), and obj* is the least final value of that objective among the runs of the same
dataset, C and seed (a seeded split trains on other data): the tight solve the selection holds
(e.g. LIBLINEAR's last fit of a ``tol_path``) sets it, and the notes give each reference and
the run it came from.

``time_to_acc_<a>`` and ``iters_to_acc_<a>`` compare at equal test accuracy where a paper
compares at its own stop and the solvers trace their test accuracy (``traces_eval_set``): the
first trace row whose ``test_accuracy`` is at least ``a``; +inf when none is.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from svmlab import vocabulary
from svmlab.errors import SvmlabError
from svmlab.estimator.formulations import metric_name
from svmlab.tracking import columns

#: The suffix of a derived measure's lower bound, where its value is only an upper bound.
LOWER = ":lower"
PATTERN = re.compile(r"^(time|iters)_to_(gap|obj|acc)_(.+)$")
#: What each target is, in words.
TARGETS = {
    "gap": "a certified relative gap of",
    "obj": "a relative distance to the optimum of",
    "acc": "a test accuracy of",
}
FORMULATION = columns.tag(vocabulary.FORMULATION_TAG)
# runs that share a reference optimum: the seed can change the training data (a seeded split)
REFERENCE_KEYS = {
    columns.tag(vocabulary.DATASET_TAG): "",
    columns.param("solver.C"): "C = ",
    columns.tag(vocabulary.SEED_TAG): "seed ",
}


def parse(name: str) -> tuple[str, float] | None:
    """('time' or 'iters', tol) for a derived measure name, None for any other name."""
    found = PATTERN.match(name)
    if not found:
        return None
    try:
        tol = float(found[3])
    except ValueError:
        tol = float("nan")
    if not 0 < tol < 1:
        what = {"gap": "gap", "obj": "distance to the optimum", "acc": "test accuracy"}[found[2]]
        raise SvmlabError(
            f"measure {name!r}: the tolerance after '{found[1]}_to_{found[2]}_' "
            f"must be a relative {what} in (0, 1), e.g. "
            f"{found[1]}_to_{found[2]}_1e-3"
        )
    return found[1], tol


def metric_of(kind: str, formulation) -> str | None:
    """The metric of ``kind`` of a run's formulation tag (`formulations.metric_name`; the
    objective is the loss and penalty with a free bias: 'squared_hinge_l2_penalised_bias' ->
    'objective_squared_hinge_l2'), None for a run without a formulation svmlab knows."""
    try:
        return metric_name(kind, formulation) if isinstance(formulation, str) else None
    except ValueError:
        return None


def describe(name: str) -> str:
    """A derived measure in words: 'at a certified relative gap of 1e-2 (time to reach it)';
    any other measure by its name."""
    found = PATTERN.match(name)
    if not found:
        return f"by {name}"
    parse(name)
    unit = "time" if found[1] == "time" else "iterations"
    return f"at {TARGETS[found[2]]} {found[3]} ({unit} to reach it)"


def first_reach(trace: pd.DataFrame, column: str, tol: float) -> tuple[float, float]:
    """(time_s, iteration) of the first trace row whose ``column`` is <= tol; (inf, inf) if
    none is."""
    reached = trace[column].to_numpy(float) <= tol  # NaN rows compare False
    if not reached.any():
        return float("inf"), float("inf")
    row = trace.iloc[int(np.argmax(reached))]
    return float(row["time_s"]), float(row["iteration"])


def derive(
    runs: pd.DataFrame, names: list[str], tracking_uri: str | None, load_trace
) -> tuple[dict[str, np.ndarray], list[str]]:
    """Values of the derived measures ``names`` for every run (rows of ``runs``, the layout of
    :func:`svmlab.tracking.queries.search_runs`), and notes on how they were obtained.

    ``load_trace(uri, run_id)`` returns a run's trace; it is called once per run for the
    ``*_to_gap_*`` measures, once for the ``*_to_acc_*`` ones and once for the ``*_to_obj_*``
    ones."""
    gaps = [n for n in names if PATTERN.match(n)[2] == "gap"]
    values, notes = _to_gap(runs, gaps, tracking_uri, load_trace) if gaps else ({}, [])
    accuracies = [n for n in names if PATTERN.match(n)[2] == "acc"]
    if accuracies:
        values |= _to_accuracy(runs, accuracies, tracking_uri, load_trace)
    objectives = [n for n in names if n not in gaps and n not in accuracies]
    if objectives:
        more, more_notes = _to_objective(runs, objectives, tracking_uri, load_trace)
        values |= more
        notes += more_notes
    return values, notes


def _to_objective(
    runs: pd.DataFrame, names: list[str], tracking_uri: str | None, load_trace
) -> tuple[dict[str, np.ndarray], list[str]]:
    """``time_to_obj_<tol>`` and ``iters_to_obj_<tol>`` (module docstring)."""
    wanted = {name: parse(name) for name in names}
    values = {name: np.full(len(runs), np.nan) for name in names}
    objective = [
        metric_of("objective", f) for f in runs.get(FORMULATION, pd.Series([None] * len(runs)))
    ]
    keys = [k for k in REFERENCE_KEYS if k in runs]
    groups = runs[keys].astype(str).agg("|".join, axis=1)
    references, notes = {}, []
    for i, (_, run) in enumerate(runs.iterrows()):
        column = objective[i]
        if column is None or pd.isna(run.get(columns.metric(column))):
            continue
        key = (groups.iloc[i], column)
        if key not in references:
            peers = runs.loc[(groups == groups.iloc[i]).to_numpy(), columns.metric(column)]
            best = peers.astype(float).dropna().idxmin()  # the run's own value is among them
            references[key] = float(peers[best])
            notes.append(
                f"reference optimum {column} = {references[key]:.10g} for "
                f"{_describe(keys, key[0])}: the final value of run "
                f"{runs.loc[best, 'run_id']} (solver "
                f"{runs.loc[best].get(columns.tag(vocabulary.SOLVER_TAG))})"
            )
        reference = references[key]
        trace = load_trace(tracking_uri, run["run_id"])
        distance = (
            (trace[column] - reference) / abs(reference)
            if column in trace
            else pd.Series(np.nan, index=trace.index)
        )
        for name, (kind, tol) in wanted.items():
            time_s, iteration = first_reach(trace.assign(distance=distance), "distance", tol)
            values[name][i] = time_s if kind == "time" else iteration
    return values, notes


def _to_accuracy(
    runs: pd.DataFrame, names: list[str], tracking_uri: str | None, load_trace
) -> dict[str, np.ndarray]:
    """``time_to_acc_<a>`` and ``iters_to_acc_<a>`` (module docstring); NaN for a run whose
    trace has no test accuracy."""
    values = {name: np.full(len(runs), np.nan) for name in names}
    for i, run_id in enumerate(runs["run_id"]):
        trace = load_trace(tracking_uri, run_id)
        if "test_accuracy" not in trace:
            continue
        shortfall = trace.assign(shortfall=-trace["test_accuracy"])
        for name in names:
            kind, target = parse(name)
            time_s, iteration = first_reach(shortfall, "shortfall", -target)
            values[name][i] = time_s if kind == "time" else iteration
    return values


def _describe(keys: list[str], group: str) -> str:
    """'d, C = 1.0, seed 0' for the group 'd|1.0|0' of the reference keys ``keys``."""
    return ", ".join(REFERENCE_KEYS[k] + v for k, v in zip(keys, group.split("|")))


def _to_gap(
    runs: pd.DataFrame, names: list[str], tracking_uri: str | None, load_trace
) -> tuple[dict[str, np.ndarray], list[str]]:
    """``time_to_gap_<tol>`` and ``iters_to_gap_<tol>`` (module docstring)."""
    wanted = {name: parse(name) for name in names}
    values = {name: np.full(len(runs), np.nan) for name in [*names, *(n + LOWER for n in names)]}
    fallback, uncertified = [], []
    for i, (_, run) in enumerate(runs.iterrows()):
        column = metric_of("rel_gap", run.get(FORMULATION))
        if column is None or pd.isna(run.get(columns.metric(column))):
            uncertified.append(run["run_id"])
            continue
        trace = load_trace(tracking_uri, run["run_id"])
        traced = column in trace and trace[column].notna().any()
        last = (
            trace[trace[column].notna()].iloc[-1] if traced else {"time_s": 0.0, "iteration": 0.0}
        )
        for name, (kind, tol) in wanted.items():
            time_s, iteration = (
                first_reach(trace, column, tol) if traced else (float("inf"), float("inf"))
            )
            if np.isinf(time_s) and run[columns.metric(column)] <= tol:
                time_s = run[columns.metric("fit_time_s")]
                iteration = run[columns.metric("n_iter")]
                values[name + LOWER][i] = float(last["time_s" if kind == "time" else "iteration"])
                fallback.append(run["run_id"])
            values[name][i] = time_s if kind == "time" else iteration
    notes = []
    fallback = list(dict.fromkeys(fallback))
    if fallback:
        notes.append(
            f"{len(fallback)} run(s) reached a target only by their final certificate "
            f"(none in the trace, or a better final point); their {', '.join(names)} "
            f"there are the fit time and iterations, an upper bound (claims take "
            f"each as interval-censored, after the last certified trace row): "
            f"{', '.join(fallback)}"
        )
    if uncertified:
        notes.append(
            f"{len(uncertified)} run(s) have no certificate, so no "
            f"{', '.join(names)}: {', '.join(uncertified)}"
        )
    return values, notes
