"""Start-up time of the ``svmlab`` command: wall seconds of whole processes, median of N runs.

    python benchmarks/bench_cli.py [--repeat 7]

Targets: ``svmlab --help`` under 0.1 s, a config error under 1 s, the default ``svmlab train``
(into a SQLite store the warm-up run created) under 2.5 s with a warm numba cache. Each command
runs once before the timed runs, so that caches (numba's, the OS's) are warm.

Then each config error once under ``python -X importtime``: whether it imported a heavy
dependency of the training path (numba, scikit-learn, MLflow, matplotlib; a config
error should import none of them) and the slowest top-level imports.
"""

from __future__ import annotations

import argparse
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

COMMANDS = [  # label, arguments after `svmlab`, target seconds
    ("svmlab --help", ["--help"], 0.1),
    ("svmlab datasets --help", ["datasets", "--help"], 1.0),
    ("config error: misspelt key (solver.CC=1)", ["train", "solver.CC=1"], 1.0),
    ("config error: solver.C=-1", ["train", "solver.C=-1"], 1.0),
    ("svmlab train (defaults, warm cache)", ["train"], 2.5),
]


def reference_seconds() -> float:
    """An interpreter that starts and stops (``python -c pass``): the machine's load in the same
    run, to read the figures against."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], capture_output=True)
    return time.perf_counter() - start


def wall_seconds(args: list[str], folder: Path) -> tuple[float, float]:
    """(wall, CPU) seconds of one command; CPU is user + system time of the process and its
    children, which the wall time approaches on an idle machine."""
    store = folder / "mlflow.db"
    extra = (
        [f"tracking.uri=sqlite:///{store}", f"hydra.run.dir={folder}/outputs"]
        if args[:1] == ["train"] and "--help" not in args
        else []
    )
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([shutil.which("svmlab"), *args, *extra], cwd=folder, capture_output=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


HEAVY = ("numba", "sklearn", "mlflow", "matplotlib")


def import_profile(args: list[str], folder: Path) -> tuple[list[str], list[tuple[float, str]]]:
    """(heavy modules imported, the 8 slowest top-level imports in seconds) of one command."""
    extra = [f"tracking.uri=sqlite:///{folder / 'mlflow.db'}", f"hydra.run.dir={folder}/outputs"]
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "svmlab.app.cli", *args, *extra],
        cwd=folder,
        capture_output=True,
        text=True,
    )
    rows = [
        m.groups() for m in re.finditer(r"import time:\s+\d+ \|\s+(\d+) \|( *)(\S+)", done.stderr)
    ]
    names = {name for _, _, name in rows}
    top = sorted(
        ((int(cum) / 1e6, name) for cum, indent, name in rows if len(indent) == 1), reverse=True
    )
    return [h for h in HEAVY if h in names], top[:8]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    repeat = parser.parse_args().repeat
    print(
        f"{'command':44s} {'median s':>9s} {'min s':>7s} {'max s':>7s} {'cpu s':>7s} "
        f"{'target':>7s}  met"
    )
    reference = statistics.median(reference_seconds() for _ in range(repeat))
    print(f"{'reference: python -c pass':44s} {reference:9.2f}")
    with tempfile.TemporaryDirectory() as tmp:
        for label, args, target in COMMANDS:
            wall_seconds(args, Path(tmp))  # warm-up
            measured = [wall_seconds(args, Path(tmp)) for _ in range(repeat)]
            times = [wall for wall, _ in measured]
            median = statistics.median(times)
            cpu = statistics.median(c for _, c in measured)
            print(
                f"{label:44s} {median:9.2f} {min(times):7.2f} {max(times):7.2f} {cpu:7.2f} "
                f"{target:7.1f}  {'yes' if median < target else 'NO'}"
            )
        for label, args, _ in COMMANDS:
            if label.startswith("config error"):
                heavy, top = import_profile(args, Path(tmp))
                print(
                    f"\n{label}: heavy imports: {', '.join(heavy) or 'none'}; slowest "
                    "top-level imports (s): "
                    + ", ".join(f"{name} {seconds:.2f}" for seconds, name in top)
                )


if __name__ == "__main__":
    main()
