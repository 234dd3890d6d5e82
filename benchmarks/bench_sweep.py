"""Sweep throughput: 48 small jobs with 2 workers (svmlab's parallel launcher, Hydra's joblib
launcher) against the basic launcher.

Each job trains LIBLINEAR on the embedded breast_cancer data and logs to a fresh SQLite store,
without the model (``tracking.log_model=false``), so the sweep machinery is what is measured.
The three launchers run in the same invocation, alternating, ``--repeats`` times; the script
prints the medians and the speed-ups over the basic launcher (target: at least 1.7x with two
workers), then the per-job overhead:

- interpreter start (``python -c pass``) and the imports of the training path (the parallel
  launcher's ``preload`` modules), which a job pays when it runs in a new process (submitit,
  SLURM), a joblib worker once, and the parallel launcher's fork server once per sweep;
- numba: compiling a small ``@njit(cache=True)`` CSR kernel against loading it from the cache
  that ``cache=True`` writes (every later process of a sweep loads instead of compiling);
- composing one job's config (Hydra's ``load_sweep_config``, in this process), and Hydra's
  check, in the launching process of every sweep, that all the jobs' configs compose (from
  Hydra's debug log of the sweep);
- inside a job: its wall time (data, fit, evaluation, MLflow logging) and the share that is not
  the fit itself (the jobs' outcomes and their ``fit_time_s``);
- outside the jobs: what a sweep costs per job beyond the jobs' own time (Hydra's check,
  composing, Hydra's job set-up, starting workers, waiting), from the sweep time, the number of
  workers and the median job.

Then the CPU time of each sweep, all its processes together (the machine's busy time from
``/proc/stat`` over the command; Linux only, and it counts anything else running at the time).
A sweep takes at least its CPU time divided by the machine's cores, so a launcher's speed-up
over basic is at most (basic command time) x cores / (its CPU time), however well it overlaps
its work: spending more CPU than the basic launcher (the training path imported again in a fork
server or in each worker, each worker warming up) caps it below the number of cores.

    python benchmarks/bench_sweep.py [--jobs 48] [--repeats 3] [--job "solver=nesvm"]

``--job`` replaces the job's overrides (default: ``solver=liblinear tracking.log_model=false``),
for example ``--job ""`` to sweep the default job (NESVM, model logged).
"""

from __future__ import annotations

import argparse
import importlib.resources
import os
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import yaml

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
LAUNCHERS = {"basic": [],  # name: overrides
             "parallel-2": ["hydra/launcher=parallel", "hydra.launcher.n_jobs=2"],
             "joblib-2": ["hydra/launcher=joblib", "hydra.launcher.n_jobs=2"]}
WORKERS = {"basic": 1, "parallel-2": 2, "joblib-2": 2}
CPU_SETTLE_S = 1.0
SWEEPER_LOG = "hydra.verbose=hydra._internal.core_plugins.basic_sweeper"  # its debug line


def busy_cpu_s() -> float | None:
    """CPU seconds the machine has spent busy since boot (all cores; None off Linux)."""
    try:
        with open("/proc/stat") as stat:
            ticks = [int(field) for field in stat.readline().split()[1:]]
    except OSError:
        return None
    idle, iowait, steal = ticks[3], ticks[4], ticks[7]
    return (sum(ticks) - idle - iowait - steal) / os.sysconf("SC_CLK_TCK")


def timed(command: list[str], **kwargs) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, **kwargs)
    return time.perf_counter() - start


def sweep(folder: Path, jobs: int, launcher: list[str], job: list[str]) -> tuple[float, ...]:
    """One `svmlab train -m` sweep of `jobs` seeds into a new store in `folder`: the command's
    wall time; the time from the sweep's start to its end (its summary line), which leaves out
    the launching process's own start; Hydra's check that every job's config composes; and
    the machine's CPU time over the command (None off Linux)."""
    seeds = ",".join(map(str, range(jobs)))
    cpu_before = busy_cpu_s()
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "svmlab.cli", "train", "-m", *launcher,
                          *job, "dataset=breast_cancer", f"seed={seeds}",
                          f"tracking.uri=sqlite:///{folder}/mlflow.db",
                          f"hydra.sweep.dir={folder}/multirun", SWEEPER_LOG],
                         cwd=folder, check=True, capture_output=True, text=True).stdout
    wall = time.perf_counter() - start
    cpu = None
    if cpu_before is not None:
        time.sleep(CPU_SETTLE_S)  # the fork server exits just after the command
        cpu = busy_cpu_s() - cpu_before
    (inside,) = re.findall(rf"{jobs} jobs: {jobs} finished.* in ([0-9.]+)s;", out)
    (check,) = re.findall(rf"Validated configs of {jobs} jobs in ([0-9.]+) seconds", out)
    return wall, float(inside), float(check), cpu


def training_path() -> list[str]:
    """The modules a job imports: those the parallel launcher's fork server preloads."""
    launcher = importlib.resources.files("svmlab.conf") / "hydra" / "launcher" / "parallel.yaml"
    return yaml.safe_load(launcher.read_text())["preload"]


def job_times(folder: Path) -> tuple[list[float], list[float]]:
    """Per job: wall time inside the job, and that time less the fit."""
    outcomes = read_outcomes(folder / "multirun")
    return ([o["time_s"] for o in outcomes],
            [o["time_s"] - o["metrics"]["fit_time_s"] for o in outcomes])


def composition_time(job: list[str], repeats: int = 20) -> float:
    """Median time to compose one job's config from the sweep's, as every launcher does."""
    from hydra import compose, initialize_config_module
    from hydra.core.global_hydra import GlobalHydra

    import svmlab.train  # noqa: F401  (registers svmlab's schema)

    with initialize_config_module("svmlab.conf", version_base="1.3"):
        config = compose("config", overrides=job, return_hydra_config=True)
        loader = GlobalHydra.instance().config_loader()
        times = []
        for seed in range(repeats):
            start = time.perf_counter()
            loader.load_sweep_config(config, [*job, "dataset=breast_cancer", f"seed={seed}"])
            times.append(time.perf_counter() - start)
    return statistics.median(times)


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

    walls: dict[str, list[float]] = {name: [] for name in LAUNCHERS}
    sweeps: dict[str, list[float]] = {name: [] for name in LAUNCHERS}
    checks: list[float] = []
    cpus: dict[str, list[float]] = {name: [] for name in LAUNCHERS}
    inside: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in LAUNCHERS}
    with tempfile.TemporaryDirectory() as tmp:
        for repeat in range(args.repeats):
            for name, launcher in LAUNCHERS.items():
                folder = Path(tmp) / f"{name}-{repeat}"
                folder.mkdir()
                wall, sweep_s, check_s, cpu = sweep(folder, args.jobs, launcher, job)
                walls[name].append(wall)
                sweeps[name].append(sweep_s)
                checks.append(check_s)
                if cpu is not None:
                    cpus[name].append(cpu)
                for pooled, found in zip(inside[name], job_times(folder)):
                    pooled.extend(found)
                cpu_note = "" if cpu is None else f", CPU {cpu:.1f} s"
                print(f"  {name:10s} repeat {repeat}: command {wall:.1f} s, sweep {sweep_s:.1f} s"
                      f"{cpu_note}", flush=True)
        python_start = statistics.median(timed([sys.executable, "-c", "pass"]) for _ in range(5))
        imports = statistics.median(
            timed([sys.executable, "-c", f"import {', '.join(training_path())}"]) for _ in range(3))
        compile_s, load_s = numba_compile_and_load(Path(tmp))
    compose_s = composition_time(job)

    print(f"\n{args.jobs} jobs, median of {args.repeats} sweeps; speed-up over basic "
          f"(target >= 1.7x with 2 workers):")
    for label, times in (("`svmlab train -m` command", walls), ("sweep start to end", sweeps)):
        medians = {name: statistics.median(times[name]) for name in LAUNCHERS}
        print(f"  {label}: " + ", ".join(
            f"{name} {m:.1f} s" + ("" if name == "basic" else f" ({medians['basic'] / m:.2f}x)")
            for name, m in medians.items()))
    print("\nper-job overhead:")
    print(f"  interpreter start                      {python_start:.2f} s")
    print(f"  imports of the training path           {imports - python_start:.2f} s")
    print(f"  numba kernel: compile {compile_s:.2f} s, load from cache {load_s:.2f} s")
    print(f"  composing one job's config             {compose_s:.3f} s")
    print(f"  Hydra's check that all {args.jobs} configs compose, in the launching process: "
          f"{statistics.median(checks):.2f} s (median of all sweeps)")
    for name, (wall, not_fit) in inside.items():
        print(f"  inside a job ({name:10s}): median {statistics.median(wall):.3f} s, "
              f"of which not fitting (data, evaluation, MLflow logging) "
              f"{statistics.median(not_fit):.3f} s")
    for name in LAUNCHERS:
        per_job = statistics.median(sweeps[name]) * WORKERS[name] / args.jobs
        print(f"  outside the jobs ({name:10s}): {per_job - statistics.median(inside[name][0]):.3f}"
              f" s per job and worker (sweep time x {WORKERS[name]} / {args.jobs} jobs, less the "
              f"median job)")
    print_cpu_bound(cpus, statistics.median(walls["basic"]))


def print_cpu_bound(cpus: dict[str, list[float]], basic_wall: float) -> None:
    """Each launcher's CPU time per sweep and the speed-up it bounds (see the module's doc)."""
    if not cpus["basic"]:
        print("\nCPU time not measured: no /proc/stat")
        return
    cores = os.cpu_count()
    print(f"\nCPU time of a sweep, all processes (median); bound on the speed-up over basic's "
          f"command ({basic_wall:.1f} s) on {cores} cores:")
    for name, times in cpus.items():
        cpu = statistics.median(times)
        bound = "" if name == "basic" else f", at most {basic_wall * cores / cpu:.2f}x"
        print(f"  {name:10s} {cpu:.1f} s{bound}")


if __name__ == "__main__":
    main()
