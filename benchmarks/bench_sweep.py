"""A sweep of realistic jobs with Hydra's joblib launcher (2 workers) against the basic launcher.

    python benchmarks/bench_sweep.py [--repeats 1] [--data-dir ../shared/data/libsvm]

48 jobs: LIBLINEAR, LIBSVM (linear kernel) and NESVM (its defaults: a certified 1 % gap) on
a1a, a2a, a3a and w1a (the subsets in the shared folder), seeds 0-3, every job logging its
model, each sweep into a new SQLite store.
Prints for each launcher the median wall time of the whole command and the speed-up of joblib
(target >= 1.8x), and the per-job overhead in a warm worker: the job's wall time less its fit
and compile time (data, evaluation, MLflow logging with the model and the convergence figure),
over the jobs that are not a worker's first (target <= 0.3 s), and the median
``certificate_time_s`` of each solver (part of that overhead).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
from pathlib import Path

from commands import timed

JOBS = ["-m", "solver=liblinear,libsvm,nesvm", "dataset=a1a,a2a,a3a,w1a", "seed=0,1,2,3"]
LAUNCHERS = {"basic": [], "joblib": ["hydra/launcher=joblib", "hydra.launcher.n_jobs=2"]}


def run_sweep(folder: Path, launcher: str, data_dir: str) -> tuple[float, list[dict]]:
    """Wall seconds of the command and the jobs' outcomes."""
    sweep_dir = folder / "sweep"
    command = [shutil.which("svmlab"), "train", *JOBS, *LAUNCHERS[launcher],
               f"tracking.uri=sqlite:///{folder}/mlflow.db", f"paths.data_dir={data_dir}",
               f"hydra.sweep.dir={sweep_dir}"]
    wall, _ = timed(command, folder, f"{launcher} sweep")
    outcomes = [json.loads(p.read_text()) for p in (sweep_dir / ".svmlab/jobs").glob("*.json")]
    return wall, outcomes


def warm_overheads(outcomes: list[dict]) -> list[float]:
    """Job time less fit and compile time, leaving out each worker process's first job."""
    first = {}
    for o in outcomes:
        if o["pid"] not in first or o["started_at"] < first[o["pid"]]["started_at"]:
            first[o["pid"]] = o
    return [o["time_s"] - o["metrics"]["fit_time_s"] - o["metrics"].get("compile_time_s", 0.0)
            for o in outcomes if o is not first[o["pid"]]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--data-dir", default=str(Path(__file__).parents[1] / "../shared/data/libsvm"))
    args = parser.parse_args()
    data_dir = str(Path(args.data_dir).resolve())
    walls: dict[str, list[float]] = {name: [] for name in LAUNCHERS}
    overheads: dict[str, list[float]] = {name: [] for name in LAUNCHERS}
    fits: list[float] = []
    certificates: dict[str, list[float]] = {}
    for _ in range(args.repeats):
        for name in LAUNCHERS:  # alternate, so that changes of load hit both alike
            with tempfile.TemporaryDirectory() as tmp:
                wall, outcomes = run_sweep(Path(tmp), name, data_dir)
            walls[name].append(wall)
            overheads[name] += warm_overheads(outcomes)
            fits += [o["metrics"]["fit_time_s"] for o in outcomes]
            for o in outcomes:
                solver = next(a.split("=", 1)[1] for a in o["overrides"] if a.startswith("solver="))
                certificates.setdefault(solver, []).append(o["metrics"]["certificate_time_s"])
    print(f"{len(outcomes)} jobs; fit_time_s per job: median {statistics.median(fits):.2f} s, "
          f"min {min(fits):.2f} s, max {max(fits):.2f} s; sum per sweep "
          f"{sum(fits) / (2 * args.repeats):.1f} s")
    for name in LAUNCHERS:
        o = overheads[name]
        print(f"{name:7s} command median {statistics.median(walls[name]):6.1f} s "
              f"(min {min(walls[name]):.1f}, max {max(walls[name]):.1f}); per-job overhead in a "
              f"warm worker: median {statistics.median(o):.3f} s, max {max(o):.3f} s "
              f"(target <= 0.3 s: {'met' if statistics.median(o) <= 0.3 else 'NOT met'})")
    print("certificate_time_s per job, median: " + ", ".join(
        f"{name} {statistics.median(values):.3f} s" for name, values in certificates.items()))
    speedup = statistics.median(walls["basic"]) / statistics.median(walls["joblib"])
    print(f"joblib speed-up over basic: {speedup:.2f}x (target >= 1.8x: "
          f"{'met' if speedup >= 1.8 else 'NOT met'})")


if __name__ == "__main__":
    main()
