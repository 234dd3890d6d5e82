"""Final metrics of a fitted solver on a dataset: accuracies, timings, objectives, sizes."""

from __future__ import annotations

import math
import time

import numpy as np

from svmlab.errors import TrainingError
from svmlab.estimator.trace import certified_gap


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
    if hasattr(estimator, "n_support_"):
        metrics["n_support"] = float(np.sum(estimator.n_support_))
    if hasattr(estimator, "n_passes_"):  # passes over the data, a solver's cost in its paper
        metrics["n_passes"] = float(estimator.n_passes_)
    if getattr(estimator, "gamma_", None) is not None:  # a gamma rule's value on this data
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
    bad = sorted(k for k, col in columns.items()
                 if not np.all(np.isfinite(col) | (np.isnan(col) & certified_gap(k))))
    if bad:
        raise TrainingError(f"the convergence trace contains NaN or inf in: {', '.join(bad)}")
