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

    python benchmarks/bench_sweep.py --workflow alm_paper --scale medium [--seeds 2]

A workflow's own sweep instead: its preset and the scale's overrides as ``svmlab workflow``
runs them (``svmlab.app.workflow.sweep_arguments``; ``--seeds K``: the scale's first K seeds
only), with each launcher into a new SQLite store. Prints each command's wall time split into
its start (to the first job: the checks of every job, the store, the parent run, the workers),
its jobs and its end (the summary), the speed-up of joblib (target >= 1.8x), the gap between
two jobs of one worker (Hydra's own per-job work: the job's config, folder and files), and the
per-job serial cost in the launching process, CPU milliseconds measured here: composing and
checking a job (done once, by the workers of a joblib sweep), Hydra's own composition of it
(the sweeper's check before launching, no longer done; the basic launcher's, to run it) and
joblib's pickling of the job's task.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from itertools import pairwise
from pathlib import Path

from commands import timed

PHASES = ("fit", "certificate", "compile", "data", "evaluate", "store", "model", "rest")

JOBS = ["-m", "solver=liblinear,libsvm,nesvm", "dataset=a1a,a2a,a3a,w1a", "seed=0,1,2,3"]
LAUNCHERS = {"basic": [], "joblib": ["hydra/launcher=joblib", "hydra.launcher.n_jobs=2"]}


def run_sweep(folder: Path, launcher: str, data_dir: str) -> tuple[float, list[dict]]:
    """Wall seconds of the command and the jobs' outcomes."""
    arguments = [
        *JOBS,
        *LAUNCHERS[launcher],
        f"tracking.uri=sqlite:///{folder}/mlflow.db",
        f"paths.data_dir={data_dir}",
        f"hydra.sweep.dir={folder}/sweep",
    ]
    wall, outcomes, _ = sweep_command(folder, arguments, f"{launcher} sweep")
    return wall, outcomes


def sweep_command(folder: Path, arguments: list[str], what: str) -> tuple[float, list[dict], dict]:
    """Wall seconds of ``svmlab train -m`` with ``arguments`` (whose hydra.sweep.dir is
    ``folder/sweep``), the jobs' outcomes and the sweep's state (``sweep.json``), with the
    command's start and end (``time.time()``) as ``command_start`` and ``command_end``."""
    state_dir = folder / "sweep" / ".svmlab"
    start = time.time()
    wall, _ = timed([shutil.which("svmlab"), "train", *arguments], folder, what)
    outcomes = [json.loads(p.read_text()) for p in (state_dir / "jobs").glob("*.json")]
    state = json.loads((state_dir / "sweep.json").read_text())
    return wall, outcomes, state | {"command_start": start, "command_end": start + wall}


def warm_jobs(outcomes: list[dict]) -> list[dict]:
    """The outcomes of the jobs that are not their worker process's first."""
    first = {}
    for o in outcomes:
        if o["pid"] not in first or o["started_at"] < first[o["pid"]]["started_at"]:
            first[o["pid"]] = o
    return [o for o in outcomes if o is not first[o["pid"]]]


def overhead(outcome: dict) -> float:
    """A job's time less its fit and compile time."""
    return (
        outcome["time_s"]
        - outcome["metrics"]["fit_time_s"]
        - outcome["metrics"].get("compile_time_s", 0.0)
    )


def phases(outcome: dict) -> dict[str, float]:
    """Seconds of each of PHASES in one job (the fit phase split into the solver's time and the
    certificate; what no phase holds is the rest)."""
    recorded = dict(outcome["phases"])
    metrics = outcome["metrics"]
    split = {"fit": metrics["fit_time_s"], "certificate": metrics["certificate_time_s"]}
    recorded["rest"] = (
        outcome["time_s"] - sum(recorded.values()) + recorded.pop("fit", 0.0) - sum(split.values())
    )
    return {name: {**recorded, **split}.get(name, 0.0) for name in PHASES}


def untracked_jobs(data_dir: str) -> list[dict[str, float]]:
    """The sweep's jobs in this process without MLflow: seconds of the data load, the warm-up,
    the fit (solver and certificate) and the evaluation of each, after one job to warm up."""
    import itertools

    from hydra import compose, initialize_config_module
    from omegaconf import OmegaConf

    from svmlab import data
    from svmlab.app.config.schema import build_estimator, register_configs
    from svmlab.recording.results import evaluate
    from svmlab.recording.run import timed as timed_phase
    from svmlab.recording.warm_up import warm_up

    register_configs()
    values = [arg.split("=", 1) for arg in JOBS[1:]]
    combinations = itertools.product(
        *[[f"{key}={v}" for v in vals.split(",")] for key, vals in values]
    )
    with initialize_config_module("svmlab.conf", version_base="1.3"):
        configs = [
            compose("config", overrides=[*c, f"paths.data_dir={data_dir}"]) for c in combinations
        ]
    jobs = []
    for cfg in [configs[0], *configs]:
        took: dict[str, float] = {}
        estimator = build_estimator(cfg)
        with timed_phase(took, "data"):
            dataset = data.load(
                **OmegaConf.to_container(cfg.dataset, resolve=True),
                seed=cfg.seed,
                data_dir=data_dir,
            )
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


def workflow_arguments(
    name: str, scale: str, seeds: int | None, launcher: str, folder: Path, data_dir: str
) -> list[str]:
    """The sweep of workflow ``name`` at ``scale`` as ``svmlab workflow`` runs it, with
    ``launcher`` (2 joblib workers), into ``folder`` (its store and sweep folder); ``seeds``:
    the scale's first seeds only."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from svmlab.app.config.overrides import override_value
    from svmlab.app.workflow import sweep_arguments
    from svmlab.workflows.spec import load

    workflow = load(name)
    extra = [f"hydra.sweep.dir={folder}/sweep", f"paths.data_dir={data_dir}"]
    if seeds is not None:
        values = override_value(workflow.sweep_overrides(scale), "seed")
        (seed,) = OverridesParser.create().parse_overrides([f"seed={values}"])
        extra.append("seed=" + ",".join(str(s) for s in list(seed.sweep_iterator())[:seeds]))
    return [
        "-m",
        *sweep_arguments(
            workflow,
            scale,
            f"sqlite:///{folder}/mlflow.db",
            launcher,
            2 if launcher == "joblib" else None,
            extra,
        ),
    ]


def worker_gaps(outcomes: list[dict]) -> list[float]:
    """Seconds between one job's end and the next job's start in the same worker process."""
    by_pid: dict[int, list[dict]] = {}
    for o in outcomes:
        by_pid.setdefault(o["pid"], []).append(o)
    gaps = []
    for jobs in by_pid.values():
        jobs.sort(key=lambda o: o["started_at"])
        gaps += [b["started_at"] - a["started_at"] - a["time_s"] for a, b in pairwise(jobs)]
    return gaps


def first_jobs(outcomes: list[dict]) -> list[dict]:
    """Each worker process's first job."""
    firsts: dict[int, dict] = {}
    for o in sorted(outcomes, key=lambda o: o["started_at"]):
        firsts.setdefault(o["pid"], o)
    return list(firsts.values())


def launcher_costs(arguments: list[str], samples: int = 12) -> dict[str, float]:
    """CPU milliseconds per job of what the launching process of a sweep with ``arguments``
    does for every job, medians over its first ``samples`` jobs, measured in this process:
    ``check`` (compose and check, ``preflight.check_chunk``), ``hydra_compose`` (Hydra's
    ``load_sweep_config``: the basic sweeper's check before launching, the basic launcher's
    composition to run a job) and ``pickle`` (the task joblib sends for a job: the config,
    Hydra's config loader and state)."""
    from hydra import initialize_config_module
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.hydra_config import HydraConfig
    from hydra.core.singleton import Singleton
    from hydra.types import RunMode
    from joblib.externals.loky.backend.reduction import dumps

    from svmlab.app.config.schema import register_configs
    from svmlab.app.launch.preflight import check_chunk, job_overrides

    register_configs()
    overrides = [a for a in arguments if a != "-m"]
    costs: dict[str, list[float]] = {"check": [], "hydra_compose": [], "pickle": []}
    with initialize_config_module("svmlab.conf", version_base="1.3"):
        loader = GlobalHydra.instance().config_loader()
        config = loader.load_configuration("config", overrides, RunMode.MULTIRUN)
        HydraConfig.instance().set_config(config)
        hydra_overrides = list(config.hydra.overrides.hydra)
        for num, job in list(enumerate(job_overrides(config)))[:samples]:
            steps = {
                "check": (check_chunk, "config", hydra_overrides, [(num, job)]),
                "hydra_compose": (loader.load_sweep_config, config, list(job)),
                "pickle": (dumps, (loader, config, Singleton.get_state())),
            }
            for name, (step, *values) in steps.items():
                start = time.process_time()
                step(*values)
                costs[name].append(1000 * (time.process_time() - start))
    return {name: statistics.median(ms) for name, ms in costs.items()}


def workflow_main(args, data_dir: str) -> None:
    """The ``--workflow`` mode (see the module docstring)."""
    walls: dict[str, float] = {}
    for launcher in LAUNCHERS:
        with tempfile.TemporaryDirectory() as tmp:
            arguments = workflow_arguments(
                args.workflow, args.scale, args.seeds, launcher, Path(tmp), data_dir
            )
            wall, outcomes, state = sweep_command(Path(tmp), arguments, f"{launcher} sweep")
        walls[launcher] = wall
        first = min(o["started_at"] for o in outcomes)
        last = max(o["started_at"] + o["time_s"] for o in outcomes)
        checks = state.get("checks_s", float("nan"))  # nan: a version that did not record it
        print(
            f"{launcher:7s} {len(outcomes)} jobs, command {wall:6.1f} s: start "
            f"{first - state['command_start']:.1f} s (checks {checks:.1f} s, "
            f"{1000 * checks / len(outcomes):.0f} ms a job, in "
            f"{len(state.get('checked_in', [])) or 'no'} workers), jobs {last - first:.1f} s, "
            f"end {state['command_end'] - last:.1f} s; gap between a worker's jobs: median "
            f"{statistics.median(worker_gaps(outcomes)):.3f} s; each worker's first job: "
            + ", ".join(f"{o['time_s']:.1f} s" for o in first_jobs(outcomes)),
            flush=True,
        )
    speedup = walls["basic"] / walls["joblib"]
    print(
        f"joblib speed-up over basic: {speedup:.2f}x (target >= 1.8x: "
        f"{'met' if speedup >= 1.8 else 'NOT met'})"
    )
    costs = launcher_costs(arguments)
    print(
        "launching process, CPU ms per job (medians): "
        + ", ".join(f"{name} {ms:.1f}" for name, ms in costs.items())
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument(
        "--data-dir", default=str(Path(__file__).parents[1] / "../shared/data/libsvm")
    )
    parser.add_argument("--workflow", help="a workflow's own sweep (e.g. alm_paper)")
    parser.add_argument("--scale", default="medium")
    parser.add_argument("--seeds", type=int, help="the scale's first SEEDS seeds only")
    args = parser.parse_args()
    data_dir = str(Path(args.data_dir).resolve())
    if args.workflow:
        workflow_main(args, data_dir)
        return
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
    print(
        f"{len(outcomes)} jobs; fit_time_s per job: median {statistics.median(fits):.2f} s, "
        f"min {min(fits):.2f} s, max {max(fits):.2f} s; sum per sweep "
        f"{sum(fits) / (2 * args.repeats):.1f} s"
    )
    for name in LAUNCHERS:
        o = [overhead(job) for job in warm[name]]
        print(
            f"{name:7s} command median {statistics.median(walls[name]):6.1f} s "
            f"(min {min(walls[name]):.1f}, max {max(walls[name]):.1f}); per-job overhead in a "
            f"warm worker: median {statistics.median(o):.3f} s, max {max(o):.3f} s "
            f"(target <= 0.3 s: {'met' if statistics.median(o) <= 0.3 else 'NOT met'})"
        )
    speedup = statistics.median(walls["basic"]) / statistics.median(walls["joblib"])
    print(
        f"joblib speed-up over basic: {speedup:.2f}x (target >= 1.8x: "
        f"{'met' if speedup >= 1.8 else 'NOT met'})"
    )
    print("\nWhere a warm job's time goes, seconds, medians over the jobs:\n")
    print("| jobs | n | " + " | ".join(PHASES) + " |")
    print("| --- | --- |" + " --- |" * len(PHASES))
    for name in LAUNCHERS:
        print(median_row(f"{name} sweep", [phases(job) for job in warm[name]]))
    print(median_row("one process, no tracking", untracked_jobs(data_dir)))


if __name__ == "__main__":
    main()
