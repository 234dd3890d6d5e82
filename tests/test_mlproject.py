"""`mlflow run .` end to end: the MLproject builds its environment and trains (slow)."""

import os
import sys
from pathlib import Path

import pytest
import subprocess

from support.runs import runs, train

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent  # mlflow, virtualenv and uv of the test environment


def mlflow_run(tmp_path, *args):
    store = tmp_path / "mlflow.db"
    env = os.environ | {"MLFLOW_TRACKING_URI": f"sqlite:///{store}",
                        "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    for leaked in ("MLFLOW_RUN_ID", "MLFLOW_EXPERIMENT_ID"):  # mlflow.set_experiment exports it
        env.pop(leaked, None)
    result = subprocess.run([str(BIN / "mlflow"), "run", str(ROOT), *args], env=env,
                            capture_output=True, text=True, timeout=1500)
    return store, result


@pytest.mark.slow
@pytest.mark.parametrize("env_manager", [[], ["--env-manager", "uv"], ["--env-manager", "local"]],
                         ids=["virtualenv-default", "uv", "local"])
def test_mlflow_run_with_overrides(tmp_path, env_manager):
    overrides = f"solver=liblinear solver.C=0.5 seed=4 hydra.run.dir={tmp_path}/outputs"
    store, result = mlflow_run(tmp_path, "-P", f"overrides={overrides}", "--experiment-name",
                               "svmlab", *env_manager)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    (run,) = runs(store)
    assert run.info.status == "FINISHED"
    assert run.data.tags["solver"] == "liblinear" and run.data.tags["seed"] == "4"
    assert run.data.params["solver.C"] == "0.5"
    assert run.data.tags["mlflow.project.entryPoint"] == "main"
    assert "test_accuracy" in run.data.metrics


@pytest.mark.slow
def test_mlflow_run_without_parameters_trains_the_default(tmp_path):
    store, result = mlflow_run(tmp_path, "--env-manager", "local")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    (run,) = runs(store, experiment="Default")
    assert run.info.status == "FINISHED"
    assert run.data.tags["dataset"] == "breast_cancer"


@pytest.mark.slow
def test_mlflow_run_analyze_entry_point(tmp_path):
    store = tmp_path / "mlflow.db"
    for solver in ("liblinear", "libsvm"):
        for dataset in ("breast_cancer", "synthetic_gaussian"):
            assert train(store, f"solver={solver}", f"dataset={dataset}",
                         "tracking.log_model=false") == 0
    _, result = mlflow_run(tmp_path, "-e", "analyze", "--env-manager", "local",
                           "--experiment-name", "svmlab-analysis", "-P", "control=libsvm")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    (run,) = runs(store, experiment="svmlab-analysis")
    assert run.info.status == "FINISHED"
    assert run.data.params["control"] == "libsvm"  # the entry point's own parameter
    assert "test_accuracy.iman_davenport_p" in run.data.metrics
