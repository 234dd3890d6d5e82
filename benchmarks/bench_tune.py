"""`svmlab tune` with TPE and pruning against LIBSVM's grid.py grid, and 2 workers against 1.

    python benchmarks/bench_tune.py [--dataset a9a] [--cv 5] [--c -5 15 2] [--gamma 3 -15 -2]
                                    [--trials 30] [--subset ROWS] [--subset-seed 0]
                                    [--searches grid tpe grid2] [--data-dir ../shared/data/libsvm]

LIBSVM (scikit-learn's SVC) with the rbf kernel on the dataset's training set. The baseline is
the grid that grid.py searches by default: log2 C from -5 to 15 step 2, log2 gamma from 3 to
-15 step -2 (110 points), with 5-fold cross-validation; ``--c``/``--gamma`` (log2 start, stop,
step, both ends included) and ``--cv`` make it smaller. ``--subset ROWS`` searches on a
stratified subset of the training file drawn with ``--subset-seed`` (written to a data folder of
its own and loaded with ``dataset.verify=false``, so each run logs the subset's digest and that
it is not the official file). Each search runs as `svmlab tune` in a new folder (SQLite
stores), without the refit:

- grid: ``--sampler grid --pruner none`` over every point;
- TPE with the median pruner, ``--trials`` trials, with 1 worker and with ``--jobs 2``.

Prints, for each, the best CV accuracy and its point, the total fit time (the solver's own
seconds, summed over every fold of every trial run), the wall time of the command and the
1-minute load average before and after it; then the targets: TPE within 0.2 pp of the grid's
best with at most a third of its fit time, and 2 workers at least 1.7x faster (wall time) than
1. ``--searches`` chooses the searches; ``grid2`` adds the grid with ``--jobs 2``, whose wall
time against the grid's is the speed-up of 2 workers at equal work (TPE's searches with 1 and
2 workers differ in their samples and in what the pruner stops).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
import optuna
from commands import timed
from mlflow import MlflowClient


def log2_values(start: float, stop: float, step: float) -> list[float]:
    """2^start, 2^(start+step), ... up to 2^stop included."""
    count = round((stop - start) / step) + 1
    return [2.0 ** (start + i * step) for i in range(count)]


def subset_folder(folder: Path, dataset: str, data_dir: str, rows: int, seed: int) -> Path:
    """A data folder holding ``dataset`` with its training file cut to a stratified subset of
    ``rows`` rows drawn with ``seed`` (the test file linked unchanged)."""
    from sklearn.datasets import dump_svmlight_file, load_svmlight_file
    from sklearn.model_selection import train_test_split

    from svmlab import data

    train, *others = data.fetch(dataset, data_dir)
    X, y = load_svmlight_file(str(train))
    keep, _ = train_test_split(np.arange(len(y)), train_size=rows, stratify=y, random_state=seed)
    (folder / dataset).mkdir(parents=True)
    keep = np.sort(keep)
    dump_svmlight_file(
        X[keep], y[keep], str(folder / dataset / Path(train.name).stem), zero_based=False
    )
    for path in others:
        (folder / dataset / path.name).symlink_to(path.resolve())
    labels, counts = np.unique(y[keep], return_counts=True)
    print(
        f"training rows: a stratified subset of {rows} of {len(y)} drawn with seed {seed} "
        f"({', '.join(f'{c} of class {label:g}' for label, c in zip(labels, counts))})",
        flush=True,
    )
    return folder


def search(folder: Path, fixed: list[str], space: list[str], *options: str) -> dict:
    """Run `svmlab tune` in ``folder``; its best score and point, total fit time, wall time and
    the load average before and after."""
    folder.mkdir()
    load_before = os.getloadavg()[0]
    command = [
        sys.executable,
        "-m",
        "svmlab.app.cli",
        "tune",
        "--no-refit",
        "--study",
        "bench",
        "--storage",
        f"sqlite:///{folder}/optuna.db",
        *options,
        *fixed,
        *space,
        f"tracking.uri=sqlite:///{folder}/mlflow.db",
        "tracking.log_model=false",
    ]
    wall, _ = timed(command, folder, "svmlab tune")
    client = MlflowClient(f"sqlite:///{folder}/mlflow.db")
    experiment = client.get_experiment_by_name("svmlab").experiment_id
    runs = client.search_runs([experiment], "tags.`svmlab.role` = 'trial'", max_results=5000)
    [parent] = client.search_runs([experiment], "tags.`svmlab.role` = 'study'")
    states = [r.data.tags.get("svmlab.trial_state") for r in runs]
    best = optuna.load_study(study_name="bench", storage=f"sqlite:///{folder}/optuna.db")
    point = ", ".join(
        f"log2 {k.split('.')[-1]} {np.log2(v):.2f}" for k, v in best.best_params.items()
    )
    return {
        "best": parent.data.metrics["best_cv_accuracy"],
        "point": point,
        "wall_s": wall,
        "load": (load_before, os.getloadavg()[0]),
        "fit_s": float(np.sum([r.data.metrics.get("fit_time_s", 0.0) for r in runs])),
        "trials": len(runs),
        "pruned": states.count("PRUNED"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="a9a")
    parser.add_argument("--cv", type=int, default=5)
    parser.add_argument(
        "--c", type=float, nargs=3, default=(-5, 15, 2), metavar=("START", "STOP", "STEP")
    )
    parser.add_argument(
        "--gamma", type=float, nargs=3, default=(3, -15, -2), metavar=("START", "STOP", "STEP")
    )
    parser.add_argument("--trials", type=int, default=30)
    parser.add_argument(
        "--subset",
        type=int,
        default=0,
        metavar="ROWS",
        help="search on a stratified subset of the training rows (0: all)",
    )
    parser.add_argument("--subset-seed", type=int, default=0)
    parser.add_argument(
        "--searches",
        nargs="+",
        choices=("grid", "tpe", "grid2"),
        default=("grid", "tpe"),
        help="tpe: with 1 worker, then with 2; grid2: the grid with 2 workers "
        "(the same trials: the parallel speed-up at equal work)",
    )
    parser.add_argument(
        "--data-dir", default=str(Path(__file__).parents[1] / "../shared/data/libsvm")
    )
    args = parser.parse_args()
    c_values, gamma_values = log2_values(*args.c), log2_values(*args.gamma)
    folds = ["--cv", str(args.cv)]
    grid = [
        f"solver.C=choice({', '.join(map(repr, c_values))})",
        f"kernel.gamma=choice({', '.join(map(repr, gamma_values))})",
    ]
    low_c, high_c = sorted((c_values[0], c_values[-1]))
    low_g, high_g = sorted((gamma_values[0], gamma_values[-1]))
    tpe = [
        f"solver.C=tag(log, interval({low_c!r}, {high_c!r}))",
        f"kernel.gamma=tag(log, interval({low_g!r}, {high_g!r}))",
    ]
    print(
        f"{args.dataset}, LIBSVM rbf, {args.cv}-fold CV; grid {len(c_values)} C x "
        f"{len(gamma_values)} gamma = {len(c_values) * len(gamma_values)} points; "
        f"TPE {args.trials} trials, median pruner",
        flush=True,
    )
    grid_options = (
        grid,
        "--sampler",
        "grid",
        "--pruner",
        "none",
        "--trials",
        str(len(c_values) * len(gamma_values)),
    )
    searches = {
        "grid": grid_options,
        "tpe, 1 worker": (tpe, "--trials", str(args.trials)),
        "tpe, 2 workers": (tpe, "--trials", str(args.trials), "--jobs", "2"),
        "grid, 2 workers": (*grid_options, "--jobs", "2"),
    }
    chosen = {
        "grid": ["grid"],
        "tpe": ["tpe, 1 worker", "tpe, 2 workers"],
        "grid2": ["grid, 2 workers"],
    }
    print(
        f"{'search':<16}{'trials':>8}{'pruned':>8}{'best CV acc':>13}{'fit s':>10}{'wall s':>10}"
        f"{'load':>12}  best point",
        flush=True,
    )
    root, results = Path(tempfile.mkdtemp(prefix="bench-tune-")), {}
    try:
        data_dir = Path(args.data_dir).resolve()
        fixed = ["solver=libsvm", "kernel=rbf", f"dataset={args.dataset}"]
        if args.subset:
            data_dir = subset_folder(
                root / "data", args.dataset, str(data_dir), args.subset, args.subset_seed
            )
            fixed.append("dataset.verify=false")
        fixed.append(f"paths.data_dir={data_dir}")
        for i, (name, (space, *options)) in enumerate(searches.items()):
            if not any(name in chosen[c] for c in args.searches):
                continue
            r = results[name] = search(root / str(i), fixed, space, *folds, *options)
            print(
                f"{name:<16}{r['trials']:>8}{r['pruned']:>8}{r['best']:>13.4f}"
                f"{r['fit_s']:>10.1f}{r['wall_s']:>10.1f}{r['load'][0]:>6.1f}-"
                f"{r['load'][1]:<5.1f}  {r['point']}",
                flush=True,
            )
    finally:
        shutil.rmtree(root, ignore_errors=True)
    grid_r, one, two, grid_two = (results.get(k) for k in searches)
    if grid_r and one:
        gap_pp = 100 * (grid_r["best"] - one["best"])
        fit_ratio = one["fit_s"] / grid_r["fit_s"]
        print(
            f"TPE's best is {gap_pp:.2f} pp below the grid's (target <= 0.2): "
            f"{'met' if gap_pp <= 0.2 else 'missed'}"
        )
        print(
            f"TPE's fit time is {fit_ratio:.2f} of the grid's (target <= 0.33): "
            f"{'met' if fit_ratio <= 1 / 3 else 'missed'}"
        )
    if one and two:
        speedup = one["wall_s"] / two["wall_s"]
        print(
            f"2 workers are {speedup:.2f}x faster than 1 (target >= 1.7): "
            f"{'met' if speedup >= 1.7 else 'missed'}"
        )
    if grid_r and grid_two:
        print(
            f"the grid (the same trials) is {grid_r['wall_s'] / grid_two['wall_s']:.2f}x "
            f"faster with 2 workers than with 1"
        )


if __name__ == "__main__":
    main()
