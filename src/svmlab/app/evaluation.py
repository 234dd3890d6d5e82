"""Final metrics of a fitted solver on a dataset: accuracies, timings, objectives, sizes."""

from __future__ import annotations

import math
import time

import numpy as np

from svmlab.errors import TrainingError


def evaluate(estimator, dataset, fit_time_s: float) -> dict[str, float]:
    """Metrics every run reports, whatever the solver.

    Objectives are evaluated on the training set and named by formulation (see
    ``svmlab.estimator.objectives``), so runs of different solvers compare on the same quantity.
    """
    start = time.perf_counter()
    test_pred = estimator.predict(dataset.X_test)
    predict_time_s = time.perf_counter() - start
    metrics = {
        "fit_time_s": fit_time_s,
        "predict_time_s": predict_time_s,
        "train_accuracy": float(np.mean(estimator.predict(dataset.X_train) == dataset.y_train)),
        "test_accuracy": float(np.mean(test_pred == dataset.y_test)),
        "n_iter": float(estimator.n_iter_),
        **estimator.objectives(dataset.X_train, dataset.y_train),
    }
    if hasattr(estimator, "n_support_"):
        metrics["n_support"] = float(np.sum(estimator.n_support_))
    check_finite(metrics, "final metrics")
    return metrics


def check_finite(values: dict[str, float], what: str) -> None:
    """Refuse NaN or inf: a run that produced them has failed, whatever else it reports."""
    bad = sorted(k for k, v in values.items() if not math.isfinite(v))
    if bad:
        raise TrainingError(f"{what} contain NaN or inf: {', '.join(bad)}")


def check_trace_finite(trace) -> None:
    """Refuse a convergence trace with NaN or inf in any column."""
    bad = sorted(k for k, col in trace.columns().items() if not np.all(np.isfinite(col)))
    if bad:
        raise TrainingError(f"the convergence trace contains NaN or inf in: {', '.join(bad)}")
