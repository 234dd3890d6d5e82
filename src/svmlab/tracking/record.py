"""A run's record as plain values: built without MLflow (``svmlab.recording``), written on the
run by one call (``Tracker.write``). Also the shape of a trace's metric histories: at most
MAX_HISTORY_POINTS log-spaced rows, and each gap's order of magnitude."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from svmlab.estimator.trace import certified_gap
from svmlab.vocabulary import TRACE_PREFIX

MAX_HISTORY_POINTS = 250  # rows of a trace kept as metric histories (a chart shows no more)


class Point(NamedTuple):
    """One value of a metric: a final value, or one row of its history."""

    key: str
    value: float
    timestamp: int  # milliseconds since the epoch
    step: int


@dataclass
class RunRecord:
    """What one write puts on a run: params, tags (None values left out), metric points,
    Parquet tables and texts by artifact path, matplotlib figures by image path, and a fitted
    model with an input example."""

    params: dict[str, Any] = field(default_factory=dict)
    tags: dict[str, Any] = field(default_factory=dict)
    metrics: list[Point] = field(default_factory=list)
    tables: dict[str, Mapping[str, np.ndarray]] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)
    figures: dict[str, Any] = field(default_factory=dict)
    model: tuple[Any, Any] | None = None


def final_points(metrics: Mapping[str, float], step: int = 0) -> list[Point]:
    """Final values, stamped now, at ``step`` (e.g. the last iteration)."""
    now = int(time.time() * 1000)
    return [Point(k, float(v), now, step) for k, v in metrics.items()]


def history_rows(iterations: np.ndarray, max_points: int = MAX_HISTORY_POINTS) -> np.ndarray:
    """Indices of at most ``max_points`` rows of a trace, log-spaced in the iteration.

    The rows nearest to (at or after) log-spaced targets between the first and the last
    iteration; the first and the last row are always included.
    """
    n = len(iterations)
    if n <= max_points:
        return np.arange(n)
    first, last = float(iterations[0]), float(iterations[-1])
    targets = first - 1.0 + np.geomspace(1.0, last - first + 1.0, max_points - 1)
    rows = np.searchsorted(iterations, targets, side="left")
    return np.unique(np.concatenate([[0], np.minimum(rows, n - 1), [n - 1]]))


def trace_points(columns: Mapping[str, np.ndarray], start_ms: int) -> list[Point]:
    """At most MAX_HISTORY_POINTS log-spaced rows of a trace as the histories
    ``trace/<column>``, and each gap column's order of magnitude as ``trace/log10_<column>``.

    ``columns`` holds 'iteration', 'time_s' (solver seconds) and any float columns;
    ``start_ms`` is the wall-clock time of the fit's start. A gap falls by orders of magnitude,
    so on the UI's linear axis its first values hide the rest; its log10 (rows where it is
    positive) shows the convergence as the papers draw it.
    """
    kept = history_rows(np.asarray(columns["iteration"]))
    steps = np.asarray(columns["iteration"])[kept].astype(np.int64)
    stamps = start_ms + np.round(1000.0 * np.asarray(columns["time_s"])[kept]).astype(np.int64)
    points = []
    for key, column in columns.items():
        if key == "iteration":
            continue
        values = np.asarray(column, dtype=np.float64)[kept]
        points += [
            Point(TRACE_PREFIX + key, float(v), int(t), int(k))
            for v, t, k in zip(values, stamps, steps)
        ]
        if certified_gap(key) or key.endswith("_gap"):
            positive = values > 0  # NaN: the gap was not computed at that row
            points += [
                Point(f"{TRACE_PREFIX}log10_{key}", float(v), int(t), int(k))
                for v, t, k in zip(np.log10(values[positive]), stamps[positive], steps[positive])
            ]
    return points
