"""A sweep of realistic jobs with Hydra's joblib launcher (2 workers) against the basic launcher.

    python benchmarks/bench_sweep.py [--repeats 1] [--data-dir ../shared/data/libsvm]

48 jobs: LIBLINEAR, LIBSVM (linear kernel) and NESVM (its defaults: a certified 1 % gap) on
a1a, a2a, a3a and w1a (the subsets in the shared folder), seeds 0-3, every job logging its
model, each sweep into a new SQLite store.
Prints for each launcher the median wall time of the whole command and the speed-up of joblib
(target >= 1.8x), and the per-job overhead in a warm worker: the job's wall time less its fit
and compile time, over the jobs that are not a worker's first (target <= 0.3 s). Then where a
warm job's time goes, medians over those jobs of the phases each job records
(``svmlab.app.train.timed``): the solver's fit (``fit_time_s``), the certificate
(``certificate_time_s``), the warm-up that loads the compiled code, the data load, the
evaluation, the store writes (opening and ending the run, params, dataset input, metrics, trace
and config artifacts), the model, and the rest (the job's time less all of these: Hydra's job
set-up, the fit's thread). Beside them, the same 48 jobs in this one process without tracking
(the data load, the warm-up, the fit and the evaluation only), which is what a job costs
without MLflow.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
from pathlib import Path

from commands import timed

PHASES = ("fit", "certificate", "compile", "data", "evaluate", "store", "model", "rest")

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


def warm_jobs(outcomes: list[dict]) -> list[dict]:
    """The outcomes of the jobs that are not their worker process's first."""
    first = {}
    for o in outcomes:
        if o["pid"] not in first or o["started_at"] < first[o["pid"]]["started_at"]:
            first[o["pid"]] = o
    return [o for o in outcomes if o is not first[o["pid"]]]


def overhead(outcome: dict) -> float:
    """A job's time less its fit and compile time."""
    return (outcome["time_s"] - outcome["metrics"]["fit_time_s"]
            - outcome["metrics"].get("compile_time_s", 0.0))


def phases(outcome: dict) -> dict[str, float]:
    """Seconds of each of PHASES in one job (the fit phase split into the solver's time and the
    certificate; what no phase holds is the rest)."""
    recorded = dict(outcome["phases"])
    metrics = outcome["metrics"]
    split = {"fit": metrics["fit_time_s"], "certificate": metrics["certificate_time_s"]}
    recorded["rest"] = (outcome["time_s"] - sum(recorded.values())
                        + recorded.pop("fit", 0.0) - sum(split.values()))
    return {name: {**recorded, **split}.get(name, 0.0) for name in PHASES}


def untracked_jobs(data_dir: str) -> list[dict[str, float]]:
    """The sweep's jobs in this process without MLflow: seconds of the data load, the warm-up,
    the fit (solver and certificate) and the evaluation of each, after one job to warm up."""
    import itertools

    from hydra import compose, initialize_config_module
    from omegaconf import OmegaConf

    from svmlab import data
    from svmlab.app.config import build_estimator, register_configs
    from svmlab.recording.results import evaluate
    from svmlab.recording.run import timed as timed_phase
    from svmlab.recording.warm_up import warm_up

    register_configs()
    values = [arg.split("=", 1) for arg in JOBS[1:]]
    combinations = itertools.product(*[[f"{key}={v}" for v in vals.split(",")]
                                       for key, vals in values])
    with initialize_config_module("svmlab.conf", version_base="1.3"):
        configs = [compose("config", overrides=[*c, f"paths.data_dir={data_dir}"])
                   for c in combinations]
    jobs = []
    for cfg in [configs[0], *configs]:
        took: dict[str, float] = {}
        estimator = build_estimator(cfg)
        with timed_phase(took, "data"):
            dataset = data.load(**OmegaConf.to_container(cfg.dataset, resolve=True),
                                seed=cfg.seed, data_dir=data_dir)
        with timed_phase(took, "compile"):
            warm_up(estimator, dataset.X_train, dataset.y_train)
        with timed_phase(took, "fit_phase"):
            estimator.fit(dataset.X_train, dataset.y_train)
        with timed_phase(took, "evaluate"):
            evaluate(estimator, dataset)
        took |= {"fit": estimator.fit_time_s_, "certificate": estimator.certificate_time_s_}
        took["rest"] = took.pop("fit_phase") - took["fit"] - took["certificate"]
        jobs.append(took)
    return jobs[1:]


def median_row(name: str, jobs: list[dict[str, float]]) -> str:
    cells = [f"{statistics.median(job.get(p, 0.0) for job in jobs):.3f}" for p in PHASES]
    return f"| {name} | {len(jobs)} | " + " | ".join(cells) + " |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--data-dir", default=str(Path(__file__).parents[1] / "../shared/data/libsvm"))
    args = parser.parse_args()
    data_dir = str(Path(args.data_dir).resolve())
    walls: dict[str, list[float]] = {name: [] for name in LAUNCHERS}
    warm: dict[str, list[dict]] = {name: [] for name in LAUNCHERS}
    fits: list[float] = []
    for _ in range(args.repeats):
        for name in LAUNCHERS:  # alternate, so that changes of load hit both alike
            with tempfile.TemporaryDirectory() as tmp:
                wall, outcomes = run_sweep(Path(tmp), name, data_dir)
            walls[name].append(wall)
            warm[name] += warm_jobs(outcomes)
            fits += [o["metrics"]["fit_time_s"] for o in outcomes]
    print(f"{len(outcomes)} jobs; fit_time_s per job: median {statistics.median(fits):.2f} s, "
          f"min {min(fits):.2f} s, max {max(fits):.2f} s; sum per sweep "
          f"{sum(fits) / (2 * args.repeats):.1f} s")
    for name in LAUNCHERS:
        o = [overhead(job) for job in warm[name]]
        print(f"{name:7s} command median {statistics.median(walls[name]):6.1f} s "
              f"(min {min(walls[name]):.1f}, max {max(walls[name]):.1f}); per-job overhead in a "
              f"warm worker: median {statistics.median(o):.3f} s, max {max(o):.3f} s "
              f"(target <= 0.3 s: {'met' if statistics.median(o) <= 0.3 else 'NOT met'})")
    speedup = statistics.median(walls["basic"]) / statistics.median(walls["joblib"])
    print(f"joblib speed-up over basic: {speedup:.2f}x (target >= 1.8x: "
          f"{'met' if speedup >= 1.8 else 'NOT met'})")
    print("\nWhere a warm job's time goes, seconds, medians over the jobs:\n")
    print("| jobs | n | " + " | ".join(PHASES) + " |")
    print("| --- | --- |" + " --- |" * len(PHASES))
    for name in LAUNCHERS:
        print(median_row(f"{name} sweep", [phases(job) for job in warm[name]]))
    print(median_row("one process, no tracking", untracked_jobs(data_dir)))


if __name__ == "__main__":
    main()
