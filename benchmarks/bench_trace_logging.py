"""Time to log a 10,000-row convergence trace to a fresh SQLite MLflow store.

Compares svmlab's Tracker (bulk insert + log_batch for the last point) with MLflow's plain
``log_batch`` in chunks of 1000, measured in the same process. Prints medians over repeats.

    python benchmarks/bench_trace_logging.py [--rows 10000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import mlflow
from mlflow import MlflowClient
from mlflow.entities import Metric

from svmlab.tracking import Tracker

COLUMNS = ("objective_hinge_l2", "gap")


def trace_rows(n: int) -> list[dict]:
    return [{"iteration": i, "time_s": 1e-4 * i, **{c: 1.0 / (i + 1) for c in COLUMNS}}
            for i in range(n)]


def time_tracker(uri: str, rows: list[dict]) -> float:
    with Tracker(uri, "bench", flush_rows=len(rows)) as tracker:
        start = time.perf_counter()
        for row in rows:
            tracker.on_iteration(row)
        tracker.flush()
        elapsed = time.perf_counter() - start
    history = MlflowClient().get_metric_history(tracker.run_id, "trace/objective_hinge_l2")
    assert len(history) == len(rows), "trace points lost"
    return elapsed


def time_log_batch(uri: str, rows: list[dict]) -> float:
    mlflow.set_tracking_uri(uri)
    mlflow.set_experiment("bench")
    with mlflow.start_run() as run:
        start = time.perf_counter()
        now = int(time.time() * 1000)
        metrics = [Metric(f"trace/{k}", float(v), now, row["iteration"])
                   for row in rows for k, v in row.items() if k != "iteration"]
        client = MlflowClient()
        for i in range(0, len(metrics), 1000):
            client.log_batch(run.info.run_id, metrics=metrics[i:i + 1000])
        return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    rows = trace_rows(args.rows)
    points = args.rows * (len(rows[0]) - 1)
    ours, plain = [], []
    for _ in range(args.repeats):
        with tempfile.TemporaryDirectory() as tmp:
            uri = f"sqlite:///{Path(tmp) / 'mlflow.db'}"
            time_tracker(uri, rows[:10])  # create the schema outside the timed region
            ours.append(time_tracker(uri, rows))
            plain.append(time_log_batch(uri, rows))
    med_ours, med_plain = statistics.median(ours), statistics.median(plain)
    print(f"trace: {args.rows} rows x {len(rows[0]) - 1} columns = {points} metric points, "
          f"{args.repeats} repeats, fresh SQLite store each")
    print(f"svmlab Tracker      median {med_ours:.3f} s  (min {min(ours):.3f}, max {max(ours):.3f})")
    print(f"mlflow log_batch    median {med_plain:.3f} s  (min {min(plain):.3f}, max {max(plain):.3f})")
    print(f"speed-up            {med_plain / med_ours:.1f}x")


if __name__ == "__main__":
    main()
