"""Cost of logging a convergence trace, and fit_time_s with a slow trace consumer vs without.

    python benchmarks/bench_trace_logging.py [--rows 1000000] [--repeats 5]

1. A trace of ``--rows`` rows (iteration, time_s and two objective-like columns) written by
   ``Tracker.write`` (its record: ``recording.results.trace_record``) into a fresh SQLite store:
   the Parquet artifact plus at most 1000 log-spaced rows per column through ``log_batch``. Target: under 1 s per 1,000,000 rows.
2. The same fit (NESVM, linear, on the embedded breast_cancer data, a fixed number of updates)
   with no callback and with a callback that sleeps 1 ms per trace row, as a store written
   during the fit would: ``fit_time_s_`` must not move (the callback runs off the solver's
   clock), while the wall time grows by the sleeps. Medians over repeats, ratios in one run.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from svmlab.data import load
from svmlab.recording.results import trace_record
from svmlab.solvers.nesvm import NESVM
from svmlab.tracking.queries import load_trace
from svmlab.tracking.tracker import Tracker

SLOW_ROW_S = 1e-3  # what the slow consumer spends per trace row


def trace_columns(n: int) -> dict[str, np.ndarray]:
    i = np.arange(n)
    return {
        "iteration": i,
        "time_s": 1e-6 * i,
        "objective_hinge_l2": 1.0 / (i + 1.0),
        "rel_gap_hinge_l2": 1.0 / (i + 2.0),
    }


def time_log_trace(folder: Path, columns: dict[str, np.ndarray], repeat: int) -> float:
    uri = f"sqlite:///{folder}/logging{repeat}.db"
    with Tracker(uri, "bench") as tracker:
        start = time.perf_counter()
        tracker.write(trace_record(columns, None, 0))
        elapsed = time.perf_counter() - start
    stored = load_trace(uri, tracker.run_id)
    assert len(stored) == len(columns["iteration"]), "trace rows lost"
    return elapsed


def timed_fit(X, y, callback) -> tuple[float, float, int]:
    """(fit_time_s_, wall seconds, trace rows) of a fit of exactly 2000 updates."""
    model = NESVM(C=1.0, stop="paper", eps=1e-300, max_iter=2000)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(X, y, callback=callback)
    return model.fit_time_s_, time.perf_counter() - start, len(model.trace_)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    columns = trace_columns(args.rows)
    with tempfile.TemporaryDirectory() as folder:
        logging_s = [time_log_trace(Path(folder), columns, r) for r in range(args.repeats)]
    per_million = statistics.median(logging_s) * 1e6 / args.rows
    print(
        f"1. log_trace of {args.rows:,} rows x {len(columns) - 1} columns: median "
        f"{statistics.median(logging_s):.3f} s (min {min(logging_s):.3f}, max "
        f"{max(logging_s):.3f}); per 1,000,000 rows {per_million:.3f} s "
        f"(target < 1 s: {'met' if per_million < 1.0 else 'NOT met'})"
    )

    data = load("breast_cancer")
    X, y = data.X_train, data.y_train
    timed_fit(X, y, None)  # compile or load numba's cache before anything is timed
    fast, slow = [], []
    for _ in range(args.repeats):  # alternate, so that load changes hit both alike
        fast.append(timed_fit(X, y, None))
        slow.append(timed_fit(X, y, lambda row: time.sleep(SLOW_ROW_S)))
    fit_fast, fit_slow = (statistics.median(r[0] for r in runs) for runs in (fast, slow))
    wall_fast, wall_slow = (statistics.median(r[1] for r in runs) for runs in (fast, slow))
    print(
        f"2. NESVM, breast_cancer, {fast[0][2]} trace rows, callback sleeping "
        f"{SLOW_ROW_S * 1e3:.0f} ms per row (medians of {args.repeats}):"
    )
    print(f"   no callback:   fit_time_s {fit_fast:.4f} s, wall {wall_fast:.3f} s")
    print(f"   slow callback: fit_time_s {fit_slow:.4f} s, wall {wall_slow:.3f} s")
    print(
        f"   fit_time_s ratio slow/none {fit_slow / fit_fast:.3f}; wall ratio "
        f"{wall_slow / wall_fast:.1f}"
    )


if __name__ == "__main__":
    main()
