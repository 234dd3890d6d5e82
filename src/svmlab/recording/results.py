"""What a fitted solver says of itself on a dataset: its record (the trace, the solver's own
records, the final metrics: accuracies, timings, objectives, sizes, the certificate; the tags of
its fit), built without a store, and its certified line."""

from __future__ import annotations

import math
import time

import numpy as np

from svmlab.errors import TrainingError
from svmlab.estimator.trace import certified_gap
from svmlab.tracking.record import RunRecord, final_points, trace_points
from svmlab.vocabulary import (
    CERTIFICATE_TAG,
    CONVERGED_TAG,
    FORMULATION_TAG,
    STOP_REASON_TAG,
    STOPPING_RULE_TAG,
    TRACE_ARTIFACT,
    WARM_START_TAG,
)


def fit_record(
    estimator, dataset, compile_s: float = 0.0, fold: int | None = None, start_ms: int = 0
) -> tuple[RunRecord, dict[str, float]]:
    """The record of a fit (its trace and records, its final metrics on ``dataset`` with the
    warm-up's ``compile_s``, its tags) and the metrics. A fold (``fold=k``, one of a trial's
    fits) has its final metrics at step k rather than at its last iteration, and its trace and
    records after the first fold's under names of their own. ``start_ms``: the fit's start,
    the time of its trace's first row."""
    record = trace_record(estimator.trace_.columns(), fold, start_ms)
    for name, columns in estimator.records_.items():  # e.g. a budget's merges
        record.tables[
            f"records/fold{fold}/{name}.parquet" if fold else f"records/{name}.parquet"
        ] = columns
    metrics = evaluate(estimator, dataset)
    metrics["compile_time_s"] += compile_s
    record.tags = fit_tags(estimator)
    step = int(estimator.n_iter_) if fold is None else fold
    record.metrics = final_points(metrics, step) + record.metrics
    return record, metrics


def trace_record(trace: dict, fold: int | None, start_ms: int) -> RunRecord:
    """A trace (checked finite) as ``trace/trace.parquet`` and its metric histories, or as
    ``trace/fold<k>.parquet`` for a later fold."""
    check_trace_finite(trace)
    if fold:
        return RunRecord(tables={f"trace/fold{fold}.parquet": trace})
    return RunRecord(tables={TRACE_ARTIFACT: trace}, metrics=trace_points(trace, start_ms))


def evaluate(estimator, dataset) -> dict[str, float]:
    """Metrics every run reports, whatever the solver.

    ``fit_time_s`` is the solver's own time, ``compile_time_s`` the warm-up before it and
    ``certificate_time_s`` the certificate after it (see ``svmlab.estimator.base``).
    The training accuracy, the objectives and the certificate come from the fit, which computes
    the training decision values once for all three; the test decision values are computed once
    here. Objectives are evaluated on the training set and named by formulation
    (``svmlab.estimator.objectives``), so runs of different solvers compare on the same
    quantity; the certificate adds ``primal_``, ``dual_``, ``gap_`` and ``rel_gap_`` of the
    solver's own formulation. ``test_majority_rate`` is the test set's majority-class rate.
    """
    start = time.perf_counter()
    test_pred = estimator.predict(dataset.X_test)
    predict_time_s = time.perf_counter() - start
    metrics = {
        "fit_time_s": estimator.fit_time_s_,
        "compile_time_s": estimator.compile_time_s_,
        "certificate_time_s": estimator.certificate_time_s_,
        "predict_time_s": predict_time_s,
        "train_accuracy": estimator.train_accuracy_,
        "test_accuracy": float(np.mean(test_pred == dataset.y_test)),
        "test_majority_rate": majority_rate(dataset.y_test),
        "n_iter": float(estimator.n_iter_),
        **estimator.train_objectives_,
    }
    if estimator.n_support_ is not None:
        metrics["n_support"] = float(np.sum(estimator.n_support_))
    if estimator.n_passes_ is not None:  # passes over the data, a solver's cost in its paper
        metrics["n_passes"] = float(estimator.n_passes_)
    if estimator.gamma_ is not None:  # a gamma rule's value on this data
        metrics["kernel_gamma"] = float(estimator.gamma_)
    if estimator.certificate_ is not None:
        metrics |= estimator.certificate_.metrics()
    check_finite(metrics, "final metrics")
    return metrics


def majority_rate(y: np.ndarray) -> float:
    """The share of the most frequent class: the accuracy of a constant classifier, which an
    accuracy is read against (on imbalanced data it is high)."""
    return float(np.unique(y, return_counts=True)[1].max() / len(y))


def check_finite(values: dict[str, float], what: str) -> None:
    """Refuse NaN or inf: a run that produced them has failed, whatever else it reports."""
    bad = sorted(k for k, v in values.items() if not math.isfinite(v))
    if bad:
        raise TrainingError(f"{what} contain NaN or inf: {', '.join(bad)}")


def check_trace_finite(columns: dict[str, np.ndarray]) -> None:
    """Refuse a convergence trace (its columns) with NaN or inf, except NaN in a gap column,
    which means the gap was not computed at that row (``svmlab.estimator.trace``)."""
    bad = sorted(
        k
        for k, col in columns.items()
        if not np.all(np.isfinite(col) | (np.isnan(col) & certified_gap(k)))
    )
    if bad:
        raise TrainingError(f"the convergence trace contains NaN or inf in: {', '.join(bad)}")


#: the tag of a run with a fit that started from another fit's solution: its times measure a
#: step along a path, not a fit from scratch, and no analysis or claim reads them


def fit_tags(estimator) -> dict:
    """What the fit says of itself: converged (its stated rule held), the rule that ended it
    (where the solver names one), the rule, the certificate's formulation (or why there is
    none), and WARM_START_TAG where it started from another fit."""
    certificate = estimator.certificate_
    return {
        WARM_START_TAG: "true" if estimator.warm_started_ else None,
        CONVERGED_TAG: str(bool(estimator.converged_)).lower(),
        STOP_REASON_TAG: estimator.stop_reason_,
        STOPPING_RULE_TAG: estimator.stopping_rule(),
        FORMULATION_TAG: certificate.formulation if certificate else None,
        CERTIFICATE_TAG: (
            f"certified by a dual point from the {certificate.source}"
            + (" (the free-set refinement tried)" if certificate.refined else "")
            if certificate
            else "none: no dual bound for this solver"
        ),
    }


def certified_line(estimator) -> str:
    """What the fit proved of itself: the certified relative duality gap of the problem it
    solved, and whether its stopping rule held."""
    certificate = estimator.certificate_
    return certificate_text(
        certificate
        and (certificate.formulation, certificate.rel_gap, certificate.primal, certificate.dual),
        estimator.converged_,
        estimator.stopping_rule(),
    )


def certificate_text(
    certificate: tuple[str, float, float, float] | None, converged: bool, rule: str
) -> str:
    """The certified line of a fit (or of a run read back): ``certificate`` is (formulation,
    relative gap, primal value, dual bound), None for a solver without a dual bound."""
    proof = "certified: nothing (no dual bound for this solver)"
    if certificate:
        formulation, rel_gap, primal, dual = certificate
        proof = (
            f"certified: relative duality gap {rel_gap:.1e} of {formulation} "
            f"(primal {primal:.6g}, dual bound {dual:.6g})"
        )
    return f"{proof}; {'converged' if converged else 'NOT converged'}: {rule}"
