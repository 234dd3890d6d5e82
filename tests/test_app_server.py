"""A parallel sweep against a real tracking server (`svmlab server`) over HTTP, on a PostgreSQL
backend store (SQLite where PostgreSQL is not installed); artifacts are served from the server's
local folder."""

import socket
import subprocess
import sys

import mlflow
import numpy as np
import pytest
from mlflow import MlflowClient

from conftest import closed_port
from support.runs import child_env, copy_store
from support.servers import postgres_bin, postgres_cluster, tracking_server, train_command
from svmlab import data
from svmlab.tracking.queries import load_trace
from svmlab.tracking.server import server_command, server_environment


def sweep_against(url: str, folder, *overrides: str) -> subprocess.CompletedProcess:
    """`svmlab train -m ...` run in ``folder`` with tracking.uri pointing at the server."""
    return subprocess.run(
        train_command(url, folder, *overrides),
        env=child_env(),
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


@pytest.fixture(scope="module")
def server(tmp_path_factory, store_template):
    """(url, artifact folder) of a running server on a new backend store: PostgreSQL, a team's
    store, where it is installed, else SQLite (a server on SQLite is also what the reliability
    tests stop and restart)."""
    folder = tmp_path_factory.mktemp("server")
    artifacts = folder / "artifacts"
    if postgres_bin() is None:
        store = copy_store(store_template, folder / "mlflow.db")
        with tracking_server(f"sqlite:///{store}", artifacts) as url:
            yield url, artifacts, folder
        return
    with postgres_cluster() as database, tracking_server(database, artifacts) as url:
        yield url, artifacts, folder


@pytest.mark.slow
def test_parallel_sweep_over_http_logs_every_run_history_and_model(server):
    url, artifacts, folder = server
    client_folder = folder / "client"
    done = sweep_against(
        url,
        client_folder,
        "-m",
        "hydra/launcher=joblib",
        "hydra.launcher.n_jobs=2",
        "solver=liblinear,libsvm",
        "seed=0,1",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "4 jobs: 4 finished, 0 failed" in done.stdout
    assert {p.name for p in client_folder.iterdir()} == {"multirun"}  # no local store

    client = MlflowClient(url)
    mlflow.set_tracking_uri(url)
    experiment = client.get_experiment_by_name("svmlab")
    found = client.search_runs([experiment.experiment_id])
    (parent,) = [r for r in found if r.data.tags.get("svmlab.role") == "sweep"]
    children = [r for r in found if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
    assert parent.info.status == "FINISHED" and parent.data.metrics["jobs_finished"] == 4
    assert sorted((r.data.tags["solver"], r.data.tags["seed"]) for r in children) == [
        ("liblinear", "0"),
        ("liblinear", "1"),
        ("libsvm", "0"),
        ("libsvm", "1"),
    ]
    for run in children:
        run_id = run.info.run_id
        assert run.info.status == "FINISHED"
        assert run.info.artifact_uri.startswith("mlflow-artifacts:")  # served, not a local path
        trace = load_trace(url, run_id)
        for column in trace.columns.drop("iteration"):
            history = client.get_metric_history(run_id, f"trace/{column}")
            assert sorted(m.step for m in history) == sorted(trace["iteration"]), column
        assert mlflow.models.get_model_info(f"runs:/{run_id}/model").signature is not None
        model = mlflow.sklearn.load_model(f"runs:/{run_id}/model")
        split = data.load("breast_cancer", seed=int(run.data.tags["seed"]))
        accuracy = np.mean(model.predict(split.X_test) == split.y_test)
        assert accuracy == run.data.metrics["test_accuracy"]
    assert len(list(artifacts.rglob("MLmodel"))) == 4  # in the server's own artifact folder


def test_server_command_listens_on_loopback_with_served_artifacts(tmp_path):
    command = server_command("postgresql://mlflow@127.0.0.1:5432/mlflow", tmp_path / "a")
    assert command[1:4] == ["-m", "mlflow", "server"]
    assert command[command.index("--host") + 1] == "127.0.0.1"
    assert "--serve-artifacts" in command
    assert command[command.index("--artifacts-destination") + 1] == str(tmp_path / "a")


def test_the_server_starts_no_job_runner_unless_asked(monkeypatch):
    monkeypatch.delenv("MLFLOW_SERVER_ENABLE_JOB_EXECUTION", raising=False)
    assert server_environment()["MLFLOW_SERVER_ENABLE_JOB_EXECUTION"] == "false"
    monkeypatch.setenv("MLFLOW_SERVER_ENABLE_JOB_EXECUTION", "true")
    assert server_environment()["MLFLOW_SERVER_ENABLE_JOB_EXECUTION"] == "true"


def test_server_refuses_an_unreachable_database_at_once(refused_url):
    port = refused_url.rsplit(":", 1)[1]
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "svmlab.app.cli",
            "server",
            "--backend-store-uri",
            f"postgresql://mlflow@127.0.0.1:{port}/mlflow",
            "--port",
            str(closed_port()),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 3, done.stderr
    assert "cannot open the backend store" in done.stderr and "refused" in done.stderr


def test_server_refuses_a_uri_that_is_not_a_database():
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "svmlab.app.cli",
            "server",
            "--backend-store-uri",
            "file:///tmp/mlruns",
            "--port",
            str(closed_port()),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "must be a database URI" in done.stderr and done.stderr.count("\n") == 1


def test_server_refuses_a_port_that_is_taken(tmp_path):
    """mlflow server itself would log the error and exit 0."""
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "svmlab.app.cli",
                "server",
                "--port",
                str(port),
                "--backend-store-uri",
                "sqlite:///unused.db",
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            cwd=tmp_path,
        )
    assert done.returncode == 2, done.stderr
    assert f"cannot listen on 127.0.0.1:{port}: Address already in use" in done.stderr
    assert done.stderr.count("\n") == 1
