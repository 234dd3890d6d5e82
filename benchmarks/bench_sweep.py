"""Sweep throughput: 48 small jobs with the joblib launcher (2 workers) against the basic launcher.

Each job trains LIBLINEAR on the embedded breast_cancer data and logs to a fresh SQLite store,
without the model (``tracking.log_model=false``), so the sweep machinery is what is measured.
Both launchers run in the same invocation, alternating, ``--repeats`` times; the script prints
the medians and the ratio (target: joblib at least 1.7x faster), then the per-job overhead:

- interpreter start (``python -c pass``) and the imports of the training path, which a job pays
  when it runs in a new process (submitit, SLURM) and a joblib worker pays once;
- numba: compiling a small ``@njit(cache=True)`` CSR kernel against loading it from the cache
  that ``cache=True`` writes (every later process of a sweep loads instead of compiling);
- inside a job: its wall time (data, fit, evaluation, MLflow logging) and the share that is not
  the fit itself (the jobs' outcomes and their ``fit_time_s``).

    python benchmarks/bench_sweep.py [--jobs 48] [--repeats 3] [--job "solver=nesvm"]

``--job`` replaces the job's overrides (default: ``solver=liblinear tracking.log_model=false``),
for example ``--job ""`` to sweep the default job (NESVM, model logged).
"""

from __future__ import annotations

import argparse
import shlex
import re
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from svmlab.sweep import read_outcomes

NUMBA_KERNEL = textwrap.dedent("""
    import numpy as np
    from numba import njit

    @njit(cache=True)
    def csr_matvec(data, indices, indptr, x):
        out = np.zeros(indptr.size - 1)
        for i in range(indptr.size - 1):
            for k in range(indptr[i], indptr[i + 1]):
                out[i] += data[k] * x[indices[k]]
        return out
""")


def timed(command: list[str], **kwargs) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, **kwargs)
    return time.perf_counter() - start


def sweep(folder: Path, jobs: int, launcher: list[str], job: list[str]) -> tuple[float, float]:
    """One `svmlab train -m` sweep of `jobs` seeds into a new store in `folder`: the command's
    wall time, and the time from the sweep's start to its end (its summary line), which leaves
    out the launching process's own start."""
    seeds = ",".join(map(str, range(jobs)))
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "svmlab.cli", "train", "-m", *launcher,
                          *job, "dataset=breast_cancer", f"seed={seeds}",
                          f"tracking.uri=sqlite:///{folder}/mlflow.db",
                          f"hydra.sweep.dir={folder}/multirun"],
                         cwd=folder, check=True, capture_output=True, text=True).stdout
    wall = time.perf_counter() - start
    (inside,) = re.findall(rf"{jobs} jobs: {jobs} finished.* in ([0-9.]+)s;", out)
    return wall, float(inside)


def job_times(folder: Path) -> tuple[list[float], list[float]]:
    """Per job: wall time inside the job, and that time less the fit."""
    outcomes = read_outcomes(folder / "multirun")
    return ([o["time_s"] for o in outcomes],
            [o["time_s"] - o["metrics"]["fit_time_s"] for o in outcomes])


def numba_compile_and_load(folder: Path) -> tuple[float, float]:
    """First call of a cached kernel in a new process (numba already imported): cold, it
    compiles and writes the cache; warm, it loads the cache."""
    (folder / "kernel_mod.py").write_text(NUMBA_KERNEL)
    probe = ("import time, numba, numpy as np; t = time.perf_counter(); "
             "from kernel_mod import csr_matvec;"
             "csr_matvec(np.ones(2), np.arange(2, dtype=np.int32), np.array([0, 1, 2], "
             "dtype=np.int32), np.ones(2)); print(time.perf_counter() - t)")
    first_calls = [subprocess.run([sys.executable, "-c", probe], cwd=folder, check=True,
                                  capture_output=True, text=True).stdout for _ in range(2)]
    return float(first_calls[0]), float(first_calls[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=48)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--job", default="solver=liblinear tracking.log_model=false",
                        help="the overrides of every job")
    args = parser.parse_args()
    job = shlex.split(args.job)

    launchers = {"basic": [], "joblib-2": ["hydra/launcher=joblib", "hydra.launcher.n_jobs=2"]}
    walls: dict[str, list[float]] = {name: [] for name in launchers}
    sweeps: dict[str, list[float]] = {name: [] for name in launchers}
    inside: dict[str, tuple[list[float], list[float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for repeat in range(args.repeats):
            for name, launcher in launchers.items():
                folder = Path(tmp) / f"{name}-{repeat}"
                folder.mkdir()
                wall, sweep_s = sweep(folder, args.jobs, launcher, job)
                walls[name].append(wall)
                sweeps[name].append(sweep_s)
                inside[name] = job_times(folder)
                print(f"  {name:9s} repeat {repeat}: command {wall:.1f} s, sweep {sweep_s:.1f} s",
                      flush=True)
        python_start = statistics.median(timed([sys.executable, "-c", "pass"]) for _ in range(5))
        imports = statistics.median(
            timed([sys.executable, "-c", "import svmlab.train, mlflow.sklearn"]) for _ in range(3))
        compile_s, load_s = numba_compile_and_load(Path(tmp))

    print(f"\n{args.jobs} jobs, median of {args.repeats} sweeps:")
    for label, times in (("`svmlab train -m` command", walls), ("sweep start to end", sweeps)):
        basic, parallel = (statistics.median(times[n]) for n in launchers)
        print(f"  {label}: basic {basic:.1f} s ({basic / args.jobs:.2f} s/job), joblib with 2 "
              f"workers {parallel:.1f} s; speed-up {basic / parallel:.2f}x (target >= 1.7x)")
    print("\nper-job overhead:")
    print(f"  interpreter start                      {python_start:.2f} s")
    print(f"  imports (svmlab.train, mlflow.sklearn) {imports - python_start:.2f} s")
    print(f"  numba kernel: compile {compile_s:.2f} s, load from cache {load_s:.2f} s")
    for name, (wall, not_fit) in inside.items():
        print(f"  inside a job ({name:8s}): median {statistics.median(wall):.3f} s, "
              f"of which not fitting (data, evaluation, MLflow logging) "
              f"{statistics.median(not_fit):.3f} s")


if __name__ == "__main__":
    main()
