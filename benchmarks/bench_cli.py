"""Start-up time of the ``svmlab`` command: wall seconds of whole processes, median of N runs.

    python benchmarks/bench_cli.py [--repeat 7]

Targets: ``svmlab --help`` and a config error under 1 s; the default ``svmlab train`` (NESVM on
breast_cancer, into a SQLite store the warm-up run created) under 3 s with a warm numba cache.
Each command runs once before the timed runs, so that caches (numba's, the OS's) are warm.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

COMMANDS = [  # label, arguments after `svmlab`, target seconds
    ("svmlab --help", ["--help"], 1.0),
    ("svmlab datasets --help", ["datasets", "--help"], 1.0),
    ("config error: misspelt key (solver.CC=1)", ["train", "solver.CC=1"], 1.0),
    ("config error: solver.C=-1", ["train", "solver.C=-1"], 1.0),
    ("svmlab train (defaults, warm cache)", ["train"], 3.0),
]


def wall_seconds(args: list[str], folder: Path) -> float:
    store = folder / "mlflow.db"
    extra = ([f"tracking.uri=sqlite:///{store}", f"hydra.run.dir={folder}/outputs"]
             if args[:1] == ["train"] and "--help" not in args else [])
    start = time.perf_counter()
    subprocess.run([shutil.which("svmlab"), *args, *extra], cwd=folder, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    repeat = parser.parse_args().repeat
    print(f"{'command':44s} {'median s':>9s} {'min s':>7s} {'max s':>7s} {'target':>7s}  met")
    with tempfile.TemporaryDirectory() as tmp:
        for label, args, target in COMMANDS:
            wall_seconds(args, Path(tmp))  # warm-up
            times = [wall_seconds(args, Path(tmp)) for _ in range(repeat)]
            median = statistics.median(times)
            print(f"{label:44s} {median:9.2f} {min(times):7.2f} {max(times):7.2f} "
                  f"{target:7.1f}  {'yes' if median < target else 'NO'}")


if __name__ == "__main__":
    main()
