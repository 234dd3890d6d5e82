"""`mlflow run .` end to end: the MLproject builds its environment and trains (slow)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from support.runs import runs, train

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent  # mlflow, virtualenv and uv of the test environment


def mlflow_run(store, *args):
    env = os.environ | {
        "MLFLOW_TRACKING_URI": f"sqlite:///{store}",
        "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
    }
    for leaked in ("MLFLOW_RUN_ID", "MLFLOW_EXPERIMENT_ID"):  # mlflow.set_experiment exports it
        env.pop(leaked, None)
    result = subprocess.run(
        [str(BIN / "mlflow"), "run", str(ROOT), *args],
        env=env,
        check=False,
        capture_output=True,
        text=True,
        timeout=1500,
    )
    return result


@pytest.mark.slow
@pytest.mark.parametrize(
    "env_manager", [[], ["--env-manager", "uv"]], ids=["virtualenv-default", "uv"]
)  # `local`: the tests below
def test_mlflow_run_with_overrides(store, tmp_path, env_manager):
    overrides = f"solver=liblinear solver.C=0.5 seed=4 hydra.run.dir={tmp_path}/outputs"
    result = mlflow_run(
        store, "-P", f"overrides={overrides}", "--experiment-name", "svmlab", *env_manager
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    (run,) = runs(store)
    assert run.info.status == "FINISHED"
    assert run.data.tags["solver"] == "liblinear" and run.data.tags["seed"] == "4"
    assert run.data.params["solver.C"] == "0.5"
    assert run.data.tags["mlflow.project.entryPoint"] == "main"
    assert "test_accuracy" in run.data.metrics


@pytest.mark.slow
def test_mlflow_run_without_parameters_trains_the_default(store):
    result = mlflow_run(store, "--env-manager", "local")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    (run,) = runs(store)  # in experiment svmlab, like `svmlab train`'s
    assert run.info.status == "FINISHED"
    assert run.data.tags["dataset"] == "breast_cancer"
    (project,) = runs(store, experiment="Default")  # MLflow's own run points to it
    assert project.data.tags["svmlab.run_id"] == run.info.run_id


@pytest.mark.slow
def test_mlflow_run_analyze_entry_point(store):
    for solver in ("liblinear", "libsvm"):
        for dataset in ("breast_cancer", "synthetic_gaussian"):
            assert (
                train(store, f"solver={solver}", f"dataset={dataset}", "tracking.log_model=false")
                == 0
            )
    result = mlflow_run(
        store,
        "-e",
        "analyze",
        "--env-manager",
        "local",
        "--experiment-name",
        "svmlab-analysis",
        "-P",
        "control=libsvm",
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    (run,) = runs(store, experiment="svmlab-analysis")
    assert run.info.status == "FINISHED"
    assert run.data.params["control"] == "libsvm"  # the entry point's own parameter
    assert "test_accuracy.iman_davenport_p" in run.data.metrics


@pytest.mark.slow
def test_mlflow_run_workflow_entry_point_nests_the_steps_under_the_project_run(store, tmp_path):
    workflow = tmp_path / "small.yaml"  # a shipped preset on embedded data, no LIBSVM files
    workflow.write_text(
        yaml.safe_dump(
            {
                "paper": "NESVM",
                "description": "LIBLINEAR and LIBSVM on embedded data",
                "sweep": {
                    "preset": "nesvm_adult",
                    "overrides": [
                        "solver=liblinear_hinge,libsvm",
                        "dataset=breast_cancer,synthetic_gaussian",
                        "solver.C=1.0",
                        "seed=0",
                        "tracking.log_model=false",
                        f"hydra.sweep.dir={tmp_path}/multirun",
                    ],
                },
                "scales": {"quick": {}, "paper": {}},
                "analysis": {"measures": ["test_accuracy"]},
                "claims": [
                    {
                        "claim": "equal accuracy",
                        "source": "Fig. 3",
                        "measure": "test_accuracy",
                        "value": {"solver": "libsvm"},
                        "relative_to": {"solver": "liblinear_hinge"},
                        "combine": "difference",
                        "paper": 0.0,
                        "decide": {"tolerance": 0.05},
                    }
                ],
            }
        )
    )
    result = mlflow_run(
        store,
        "-e",
        "workflow",
        "--env-manager",
        "local",
        "--experiment-name",
        "workflow-small-quick",
        "-P",
        f"name={workflow}",
        "-P",
        "scale=quick",
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    found = runs(store, experiment="workflow-small-quick")
    (outer,) = [r for r in found if r.data.tags.get("mlflow.project.entryPoint") == "workflow"]
    assert outer.info.status == "FINISHED" and outer.data.tags["svmlab.role"] == "workflow"
    steps = {
        r.data.tags.get("svmlab.role"): r
        for r in found
        if r.data.tags.get("mlflow.parentRunId") == outer.info.run_id
    }
    assert set(steps) == {"sweep", "analysis"}
    assert (
        sum(r.data.tags.get("mlflow.parentRunId") == steps["sweep"].info.run_id for r in found) == 4
    )
    assert outer.data.metrics["claims_inconclusive"] == 1  # two blocks: too few to decide
