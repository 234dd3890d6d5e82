"""Convergence figures: one panel per traced quantity against the iteration, as the papers draw
them, with gaps, objectives and other positive quantities on a log axis.

Drawn with matplotlib's object API (no pyplot state: nothing to close, safe in a worker that
runs many jobs), imported only when a figure is drawn.
"""

from __future__ import annotations

import math

import numpy as np

from svmlab.vocabulary import CONVERGENCE_FIGURE, TRACE_ARTIFACT

ORDER = ("rel_gap_", "gap_", "objective_", "dual_", "primal_")  # panels first, in this order
PANEL_COLUMNS = 3
MAX_POINTS = 1000  # per curve, half log-spaced, half evenly spaced: a panel shows no more


def panel_keys(columns: dict) -> list[str]:
    """The traced quantities, gaps first, then objectives and dual values, then the rest."""
    keys = [k for k in columns if k not in ("iteration", "time_s")]

    def rank(key: str) -> int:
        return next((i for i, prefix in enumerate(ORDER) if key.startswith(prefix)), len(ORDER))

    return sorted(keys, key=rank)


def drawn_rows(iterations: np.ndarray) -> np.ndarray:
    """Indices of at most MAX_POINTS rows: log-spaced in the iteration (the fast start) and
    evenly spaced (the long tail), the first and the last among them."""
    from svmlab.tracking.record import history_rows

    n = len(iterations)
    if n <= MAX_POINTS:
        return np.arange(n)
    even = np.linspace(0, n - 1, MAX_POINTS // 2).astype(np.int64)
    return np.union1d(history_rows(iterations, MAX_POINTS // 2), even)


def convergence_figure(columns: dict, title: str):
    """One panel per trace column but iteration and time: its finite values against the
    iteration (a gap is NaN in rows where it was not computed), on a log axis when they are all
    positive; the solver's time at the last row is in the title. Returns a matplotlib Figure."""
    from matplotlib.figure import Figure

    keys = panel_keys(columns) or ["time_s"]
    rows = math.ceil(len(keys) / PANEL_COLUMNS)
    cols = min(len(keys), PANEL_COLUMNS)
    fig = Figure(figsize=(4.2 * cols, 2.9 * rows))
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    fig.subplots_adjust(left=0.08, right=0.98, bottom=0.1, top=0.88, wspace=0.3, hspace=0.55)
    iteration = np.asarray(columns["iteration"], dtype=float)
    for ax, key in zip(axes, keys):
        values = np.asarray(columns[key], dtype=float)
        shown = np.flatnonzero(np.isfinite(values))
        shown = shown[drawn_rows(iteration[shown])]
        x, y = iteration[shown], values[shown]
        ax.plot(x, y, marker="." if len(x) < 50 else None, linewidth=1.2)
        if len(y) and (y > 0).all() and y.max() > y.min():
            ax.set_yscale("log")
        ax.set_title(key, fontsize="medium")
        ax.set_xlabel("iteration")
        ax.grid(True, which="both", alpha=0.3)
    for ax in axes[len(keys) :]:
        ax.set_visible(False)
    times = np.asarray(columns["time_s"], dtype=float)
    seconds = f", {times[-1]:.3g} s of solver time" if len(times) else ""
    fig.suptitle(f"{title} ({len(iteration)} trace rows{seconds})")
    return fig


def plot_runs(uri: str | None, run_ids: list[str]) -> None:
    """Draw each run's convergence figure from its trace artifact and log it to the run as
    ``trace/convergence.png`` (the jobs of a sweep leave it out, to keep off their path)."""
    from mlflow import MlflowClient

    from svmlab.errors import SvmlabError
    from svmlab.tracking.queries import find_run, load_trace
    from svmlab.tracking.store import resolved_uri

    client = MlflowClient(resolved_uri(uri))
    for run_id in run_ids:
        run = find_run(uri, run_id)
        if TRACE_ARTIFACT not in {a.path for a in client.list_artifacts(run_id, "trace")}:
            raise SvmlabError(
                f"run {run_id} ({run.info.status}) has no trace "
                f"({TRACE_ARTIFACT}): only a run that trained to its end has one"
            )
        trace = load_trace(uri, run_id)
        title = run.info.run_name or run_id
        figure = convergence_figure({k: trace[k].to_numpy() for k in trace.columns}, title)
        client.log_figure(run_id, figure, CONVERGENCE_FIGURE)
        print(f"run {run_id}: {CONVERGENCE_FIGURE}")
