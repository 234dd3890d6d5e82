"""`svmlab tune` with TPE and pruning against LIBSVM's grid.py grid, and 2 workers against 1.

    python benchmarks/bench_tune.py [--dataset a9a] [--cv 5] [--c -5 15 2] [--gamma 3 -15 -2]
                                    [--trials 30] [--data-dir ../shared/data/libsvm]

LIBSVM (scikit-learn's SVC) with the rbf kernel on the dataset's training set. The baseline is
the grid that grid.py searches by default: log2 C from -5 to 15 step 2, log2 gamma from 3 to
-15 step -2 (110 points), with 5-fold cross-validation; ``--c``/``--gamma`` (log2 start, stop,
step, both ends included) and ``--cv`` make it smaller. Each search runs as `svmlab tune` in a
new folder (SQLite stores), without the refit:

- grid: ``--sampler grid --pruner none`` over every point;
- TPE with the median pruner, ``--trials`` trials, with 1 worker and with ``--jobs 2``.

Prints, for each, the best CV accuracy, the total fit time (the solver's own seconds, summed
over every fold of every trial run) and the wall time of the command; then the targets: TPE
within 0.2 pp of the grid's best with at most a third of its fit time, and 2 workers at least
1.7x faster (wall time) than 1.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
from mlflow import MlflowClient

from commands import timed


def log2_values(start: float, stop: float, step: float) -> list[float]:
    """2^start, 2^(start+step), ... up to 2^stop included."""
    count = int(round((stop - start) / step)) + 1
    return [2.0 ** (start + i * step) for i in range(count)]


def search(folder: Path, fixed: list[str], space: list[str], *options: str) -> dict:
    """Run `svmlab tune` in ``folder``; its best score, total fit time and wall time."""
    folder.mkdir()
    command = [sys.executable, "-m", "svmlab.app.cli", "tune", "--no-refit", "--study", "bench",
               "--storage", f"sqlite:///{folder}/optuna.db", *options, *fixed, *space,
               f"tracking.uri=sqlite:///{folder}/mlflow.db", "tracking.log_model=false"]
    wall, _ = timed(command, folder, "svmlab tune")
    client = MlflowClient(f"sqlite:///{folder}/mlflow.db")
    experiment = client.get_experiment_by_name("svmlab").experiment_id
    runs = client.search_runs([experiment], "tags.`svmlab.role` = 'trial'", max_results=5000)
    [parent] = client.search_runs([experiment], "tags.`svmlab.role` = 'study'")
    states = [r.data.tags.get("svmlab.trial_state") for r in runs]
    return {"best": parent.data.metrics["best_cv_accuracy"], "wall_s": wall,
            "fit_s": float(np.sum([r.data.metrics.get("fit_time_s", 0.0) for r in runs])),
            "trials": len(runs), "pruned": states.count("PRUNED")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="a9a")
    parser.add_argument("--cv", type=int, default=5)
    parser.add_argument("--c", type=float, nargs=3, default=(-5, 15, 2),
                        metavar=("START", "STOP", "STEP"))
    parser.add_argument("--gamma", type=float, nargs=3, default=(3, -15, -2),
                        metavar=("START", "STOP", "STEP"))
    parser.add_argument("--trials", type=int, default=30)
    parser.add_argument("--data-dir",
                        default=str(Path(__file__).parents[1] / "../shared/data/libsvm"))
    args = parser.parse_args()
    c_values, gamma_values = log2_values(*args.c), log2_values(*args.gamma)
    fixed = ["solver=libsvm", "kernel=rbf", f"dataset={args.dataset}",
             f"paths.data_dir={Path(args.data_dir).resolve()}"]
    folds = ["--cv", str(args.cv)]
    grid = [f"solver.C=choice({', '.join(map(repr, c_values))})",
            f"kernel.gamma=choice({', '.join(map(repr, gamma_values))})"]
    low_c, high_c = sorted((c_values[0], c_values[-1]))
    low_g, high_g = sorted((gamma_values[0], gamma_values[-1]))
    tpe = [f"solver.C=tag(log, interval({low_c!r}, {high_c!r}))",
           f"kernel.gamma=tag(log, interval({low_g!r}, {high_g!r}))"]
    print(f"{args.dataset}, LIBSVM rbf, {args.cv}-fold CV; grid {len(c_values)} C x "
          f"{len(gamma_values)} gamma = {len(c_values) * len(gamma_values)} points; "
          f"TPE {args.trials} trials, median pruner", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-tune-") as tmp:
        root = Path(tmp)
        results = {
            "grid": search(root / "grid", fixed, grid, *folds, "--sampler", "grid",
                           "--pruner", "none", "--trials", str(len(c_values) * len(gamma_values))),
            "tpe, 1 worker": search(root / "tpe1", fixed, tpe, *folds,
                                    "--trials", str(args.trials)),
            "tpe, 2 workers": search(root / "tpe2", fixed, tpe, *folds,
                                     "--trials", str(args.trials), "--jobs", "2"),
        }
        shutil.rmtree(root, ignore_errors=True)
    print(f"{'search':<16}{'trials':>8}{'pruned':>8}{'best CV acc':>13}{'fit s':>10}{'wall s':>10}")
    for name, r in results.items():
        print(f"{name:<16}{r['trials']:>8}{r['pruned']:>8}{r['best']:>13.4f}{r['fit_s']:>10.1f}"
              f"{r['wall_s']:>10.1f}")
    grid_r, one, two = results["grid"], results["tpe, 1 worker"], results["tpe, 2 workers"]
    gap_pp = 100 * (grid_r["best"] - one["best"])
    fit_ratio = one["fit_s"] / grid_r["fit_s"]
    speedup = one["wall_s"] / two["wall_s"]
    print(f"TPE's best is {gap_pp:.2f} pp below the grid's (target <= 0.2): "
          f"{'met' if gap_pp <= 0.2 else 'missed'}")
    print(f"TPE's fit time is {fit_ratio:.2f} of the grid's (target <= 0.33): "
          f"{'met' if fit_ratio <= 1 / 3 else 'missed'}")
    print(f"2 workers are {speedup:.2f}x faster than 1 (target >= 1.7): "
          f"{'met' if speedup >= 1.7 else 'missed'}")


if __name__ == "__main__":
    main()
