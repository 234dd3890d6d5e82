"""A workflow's selection step, cold (every C from scratch) against warm-started (the grid in
increasing C, each fit from the previous solution), on the same datasets.

    SVMLAB_DATA_DIR=../shared/data/libsvm python benchmarks/bench_selection.py --dataset w3a
        [--workflow fw_paper] [--scale medium] [--dataset a2a ...]

For each dataset, the study that the workflow's ``select`` step runs (its grid at that scale,
its solver and validation split), as ``svmlab tune`` in a new process on a new store, once cold
and once warm, in alternating order; prints each study's wall time, the selected C and its
validation score, and the ratios cold / warm of the summed wall times of the commands, of their
trials (each trial's fit, its MLflow run and its scoring; the command adds the process's start,
a new store, the data load and the study's runs) and of the fits' own solver seconds
(fit_time_s) (target >= 3 on fw_paper medium). The selected C must be the same: the warm path's
fits stop at the same tolerance, not at the same iterate, so a validation score may move where
two Cs are close.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import optuna
from commands import timed
from mlflow import MlflowClient

from svmlab.app import workflow_selection
from svmlab.app.workflow import sweep_arguments
from svmlab.tuning.study import best_trial
from svmlab.workflows import spec

#: the seconds at the end of each trial's line (``tuning.trial.run_trial``)
TRIAL_SECONDS = re.compile(r"^trial \d+ COMPLETE: .*\(([0-9.]+) s\)$", re.MULTILINE)
WORKFLOWS = Path(__file__).resolve().parents[1] / "src" / "svmlab" / "workflows"


def study(
    workflow, scale: str, dataset: str, warm: bool, folder: Path
) -> tuple[float, float, float, dict]:
    """(wall seconds of the study's ``svmlab tune`` command, the sum of its trials' seconds, the
    sum of their fits' solver seconds, the best trial's values and score)."""
    workflow = replace(workflow, select=replace(workflow.select, warm_start=warm))
    uri, storage = f"sqlite:///{folder / 'mlflow.db'}", f"sqlite:///{folder / 'optuna.db'}"
    arguments = sweep_arguments(workflow, scale, uri, "basic", None, [f"dataset={dataset}"])
    chosen = workflow_selection.study(workflow, scale, arguments, dataset, storage)
    assert chosen.warm_start == warm, "the selecting solver cannot start from another fit"
    overrides = workflow_selection.study_overrides(workflow.select, arguments, dataset)
    command = [
        sys.executable,
        "-m",
        "svmlab.app.cli",
        "tune",
        "--trials",
        str(chosen.trials),
        "--sampler",
        "grid",
        "--pruner",
        "none",
        "--validation",
        str(chosen.validation),
        "--metric",
        chosen.metric,
        "--storage",
        storage,
        "--study",
        chosen.name,
        "--no-refit",
        *(["--warm-start"] if warm else []),
        "--",
        *overrides,
    ]
    wall, done = timed(command, folder, f"the {'warm' if warm else 'cold'} study of {dataset}")
    trials = sum(float(m) for m in TRIAL_SECONDS.findall(done.stdout))
    client = MlflowClient(uri)
    ids = [e.experiment_id for e in client.search_experiments()]
    fits = sum(
        r.data.metrics["fit_time_s"]
        for r in client.search_runs(ids, "tags.`svmlab.role` = 'trial'", max_results=1000)
    )
    loaded = optuna.load_study(study_name=chosen.name, storage=storage)
    best = best_trial(loaded, chosen.metric)
    return wall, trials, fits, {**best.params, chosen.metric: round(best.value, 4)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workflow", default="fw_paper")
    parser.add_argument("--scale", default="medium")
    parser.add_argument("--dataset", action="append", required=True)
    options = parser.parse_args()
    workflow = spec.load(str(WORKFLOWS / f"{options.workflow}.yaml")).at_scale(options.scale)
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    totals = {what: {False: 0.0, True: 0.0} for what in ("command", "trials", "fits")}
    for i, dataset in enumerate(options.dataset):
        for warm in (bool(i % 2), not i % 2):
            with tempfile.TemporaryDirectory() as folder:
                *seconds, best = study(workflow, options.scale, dataset, warm, Path(folder))
            for what, value in zip(totals, seconds):
                totals[what][warm] += value
            print(
                f"{options.workflow} {options.scale} {dataset} {'warm' if warm else 'cold'}: "
                f"{seconds[0]:.1f} s ({seconds[1]:.1f} s in its trials, {seconds[2]:.1f} s "
                f"in their fits), selected {best}",
                flush=True,
            )
    for what, total in totals.items():
        print(
            f"selection ({what}): cold {total[False]:.1f} s, warm {total[True]:.1f} s: "
            f"{total[False] / total[True]:.2f}x",
            flush=True,
        )


if __name__ == "__main__":
    main()
