"""A team's store: a password in the tracking URI reaches neither the store nor the output, and
`svmlab server --auth` (MLflow's basic-auth app) refuses who it should, in one line.

Real parts: a throwaway PostgreSQL cluster (SQLite where PostgreSQL is not installed for the
server's backend), a real `svmlab server --auth`, `svmlab train` as a child process. The
cluster trusts loopback connections, so any password in the URI is accepted: the password is
still the URI's, and svmlab must keep it out of everything it writes and prints.
"""

import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from mlflow import MlflowClient
from mlflow.server.auth.client import AuthServiceClient

from conftest import closed_port
from support.runs import child_env, copy_store
from support.servers import postgres_bin, postgres_cluster, tracking_server, train_command
from svmlab.tracking.server import is_loopback, server_command

SECRET = "Xq7-never-stored-pw"  # a user's password in a URI: masked wherever svmlab writes
ADMIN = {"MLFLOW_AUTH_ADMIN_USERNAME": "admin", "MLFLOW_AUTH_ADMIN_PASSWORD": "admin-pw-0123456"}
WRITER, READER = ("alice", SECRET), ("bob", "bob-pw-0123456789")
CREDENTIALS = ("MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD")

needs_postgres = pytest.mark.skipif(postgres_bin() is None, reason="PostgreSQL not installed")


def svmlab_train(
    uri: str, folder: Path, *overrides: str, **env: str
) -> subprocess.CompletedProcess:
    """`svmlab train ...` in ``folder`` against ``uri``, with ``env`` added to its environment."""
    return subprocess.run(
        train_command(uri, folder, "solver=liblinear", *overrides),
        env=child_env(**env),
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def database_text(database: str) -> str:
    """Everything the store's database holds (every param, tag, metric name, run), as SQL."""
    if database.startswith("sqlite:///"):
        with closing(sqlite3.connect(database.removeprefix("sqlite:///"))) as db:
            return "\n".join(db.iterdump())
    url = urlsplit(database)
    return subprocess.run(
        [
            str(postgres_bin() / "pg_dump"),
            "-h",
            url.hostname,
            "-p",
            str(url.port),
            "-U",
            url.username,
            url.path.lstrip("/"),
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout


def files_holding(folder: Path, secret: str) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]


def as_user(monkeypatch, user: tuple[str, str]) -> None:
    """This process's MLflow requests authenticate as ``user`` (MLflow reads the variables at
    each request)."""
    for name, value in zip(CREDENTIALS, user):
        monkeypatch.setenv(name, value)


def finished_runs(client: MlflowClient, experiment: str) -> list:
    found = client.get_experiment_by_name(experiment)
    return client.search_runs([found.experiment_id]) if found else []


@needs_postgres
@pytest.mark.slow
def test_a_password_in_a_postgresql_uri_is_masked_in_the_store_and_the_output(
    tmp_path, monkeypatch
):
    """The cluster asks for the password: given in the URI (masked wherever svmlab writes), or
    read from PGPASSFILE with none in the URI."""
    monkeypatch.delenv("PGPASSWORD", raising=False)
    monkeypatch.delenv("PGPASSFILE", raising=False)
    pgpass = tmp_path / "pgpass"
    pgpass.write_text(f"127.0.0.1:*:*:mlflow:{SECRET}\n")
    pgpass.chmod(0o600)
    with postgres_cluster(password=SECRET) as database:
        uri = database.replace("mlflow@", f"mlflow:{SECRET}@", 1)
        single = svmlab_train(uri, tmp_path / "single")
        sweep = svmlab_train(uri, tmp_path / "sweep", "-m", "seed=0,1")
        from_file = svmlab_train(database, tmp_path / "from-file", "seed=2", PGPASSFILE=str(pgpass))
        for done in (single, sweep, from_file):
            assert done.returncode == 0, done.stdout + done.stderr
            assert SECRET not in done.stdout + done.stderr
        monkeypatch.setenv("PGPASSFILE", str(pgpass))  # this process reads the store too
        client = MlflowClient(database)
        runs = finished_runs(client, "svmlab")
        assert sorted(r.info.status for r in runs) == ["FINISHED"] * 5  # 1 + (1 + 2) + 1
        assert {r.data.params.get("tracking.uri") for r in runs if "seed" in r.data.tags} == {
            database.replace("mlflow@", "mlflow:***@", 1),
            database,
        }  # on record, masked
        stored = database_text(database)
        assert "mlflow:***@" in stored and SECRET not in stored
        artifacts = Path(urlsplit(client.get_experiment_by_name("svmlab").artifact_location).path)
        assert list(artifacts.rglob("config.yaml")) and files_holding(artifacts, SECRET) == []
        assert list(tmp_path.rglob("multirun.yaml"))
        assert files_holding(tmp_path, SECRET) == [pgpass]  # nor in Hydra's or svmlab's files


@pytest.fixture(scope="module")
def auth_server(tmp_path_factory, store_template):
    """(url, backend database, artifact folder, folder) of `svmlab server --auth` on a new
    store (PostgreSQL where installed, else SQLite), with a writer and a reader created by the
    admin through MLflow's auth API."""
    folder = tmp_path_factory.mktemp("auth-server")
    artifacts = folder / "artifacts"
    if postgres_bin() is None:
        database = f"sqlite:///{copy_store(store_template, folder / 'mlflow.db')}"
        with tracking_server(database, artifacts, auth_env=ADMIN) as url:
            yield _with_users(url), database, artifacts, folder
        return
    with (
        postgres_cluster() as database,
        tracking_server(database, artifacts, auth_env=ADMIN) as url,
    ):
        yield _with_users(url), database, artifacts, folder


def _with_users(url: str) -> str:
    with pytest.MonkeyPatch.context() as monkeypatch:
        as_user(monkeypatch, tuple(ADMIN.values()))
        users = AuthServiceClient(url)
        for name, password in (WRITER, READER):
            users.create_user(name, password)
    return url


@pytest.mark.slow
def test_the_server_refuses_an_unauthenticated_write_in_one_line(auth_server, monkeypatch):
    url, _, _, folder = auth_server
    done = svmlab_train(url, folder / "anonymous", "tracking.experiment=anonymous")
    assert done.returncode == 3, done.stdout + done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert "401" in line and all(name in line for name in CREDENTIALS)
    assert not (folder / "anonymous" / "outputs").exists()
    as_user(monkeypatch, tuple(ADMIN.values()))
    assert MlflowClient(url).get_experiment_by_name("anonymous") is None


@pytest.mark.slow
def test_an_authenticated_sweep_logs_everything_and_its_password_nowhere(auth_server, monkeypatch):
    url, database, artifacts, folder = auth_server
    with_password = url.replace("http://", f"http://{WRITER[0]}:{WRITER[1]}@", 1)
    done = svmlab_train(
        with_password, folder / "writer", "-m", "seed=0,1", "tracking.experiment=team"
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 jobs: 2 finished, 0 failed" in done.stdout
    assert SECRET not in done.stdout + done.stderr
    as_user(monkeypatch, WRITER)
    client = MlflowClient(url)
    runs = finished_runs(client, "team")
    jobs = [r for r in runs if "seed" in r.data.tags]
    assert sorted(r.info.status for r in runs) == ["FINISHED"] * 3 and len(jobs) == 2
    for run in jobs:
        assert run.data.metrics["test_accuracy"] > 0.9
        assert client.get_metric_history(run.info.run_id, "trace/time_s")
        assert {a.path for a in client.list_artifacts(run.info.run_id)} >= {"config", "trace"}
        assert run.data.params["tracking.uri"] == url.replace("http://", "http://alice:***@")
    assert SECRET not in database_text(database)
    assert len(list(artifacts.rglob("MLmodel"))) == 2 and files_holding(artifacts, SECRET) == []
    assert files_holding(folder / "writer", SECRET) == []  # Hydra's and the sweep's own files


@pytest.mark.slow
def test_a_user_with_read_permission_only_cannot_write(auth_server, monkeypatch):
    url, _, _, folder = auth_server
    as_user(monkeypatch, tuple(ADMIN.values()))
    experiment_id = MlflowClient(url).create_experiment("read-only")
    AuthServiceClient(url).grant_user_permission(READER[0], "experiment", experiment_id, "READ")
    done = svmlab_train(
        url, folder / "reader", "tracking.experiment=read-only", **dict(zip(CREDENTIALS, READER))
    )
    assert done.returncode == 3, done.stdout + done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert "403" in line and all(name in line for name in CREDENTIALS)
    as_user(monkeypatch, READER)
    assert MlflowClient(url).search_runs([experiment_id]) == []  # may read, has written nothing


def svmlab_server(folder: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "svmlab.app.cli",
            "server",
            "--port",
            str(closed_port()),
            "--backend-store-uri",
            "sqlite:///mlflow.db",
            *args,
        ],
        env=child_env(**env),
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_another_address_than_loopback_needs_auth_or_insecure(tmp_path):
    done = svmlab_server(tmp_path, "--host", "0.0.0.0")
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "--auth" in done.stderr and "--insecure" in done.stderr
    assert list(tmp_path.iterdir()) == []
    assert is_loopback("127.0.0.1") and is_loopback("::1") and not is_loopback("0.0.0.0")


def test_auth_without_an_admin_password_is_refused_and_creates_nothing(tmp_path, monkeypatch):
    monkeypatch.delenv("MLFLOW_AUTH_ADMIN_PASSWORD", raising=False)
    monkeypatch.delenv("MLFLOW_AUTH_CONFIG_PATH", raising=False)
    done = svmlab_server(tmp_path, "--auth")
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "MLFLOW_AUTH_ADMIN_PASSWORD" in done.stderr
    assert list(tmp_path.iterdir()) == []  # neither the auth database nor the store


def test_the_auth_server_is_mlflows_basic_auth_app(tmp_path):
    command = server_command("sqlite:///m.db", tmp_path, auth=True)
    assert command[command.index("--app-name") + 1] == "basic-auth"
    assert "--app-name" not in server_command("sqlite:///m.db", tmp_path)
