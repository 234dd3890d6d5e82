"""``svmlab server``: an MLflow tracking server for a team, on a SQL database.

It runs ``mlflow server`` with a backend store (PostgreSQL for a team; SQLite works for one
machine) and a local folder for artifacts, which the server serves itself: clients send models
and files over HTTP (``--serve-artifacts``) and need no access to the server's disk. Everybody
then trains with ``tracking.uri=http://<host>:<port>``.

The store's schema is created before the server starts, once: ``mlflow server`` starts several
worker processes, which would otherwise race to migrate a new database.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from svmlab.errors import ConfigError, SvmlabError, require_extra
from svmlab.tracking.store import POSTGRES_DRIVERS, store_lock

SERVED_ARTIFACTS = "mlflow-artifacts:/"  # artifacts go through the server (--serve-artifacts)


def server_command(backend_store_uri: str, artifacts: str | os.PathLike, host: str = "127.0.0.1",
                   port: int = 5000, workers: int = 2) -> list[str]:
    """The ``mlflow server`` command line (with this interpreter's MLflow)."""
    return [sys.executable, "-m", "mlflow", "server",
            "--backend-store-uri", backend_store_uri,
            "--serve-artifacts", "--artifacts-destination", str(Path(artifacts).resolve()),
            "--host", host, "--port", str(port), "--workers", str(workers)]


def server_environment() -> dict[str, str]:
    """This process's environment, with MLflow's job execution off unless it is asked for:
    it starts a job runner and several Huey consumers (each a Python process importing MLflow)
    for GenAI scoring jobs, which svmlab never submits."""
    return {"MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"} | dict(os.environ)


def prepare_backend(backend_store_uri: str) -> None:
    """Create or upgrade the store's schema now; ConfigError if the URI is not a database's,
    SvmlabError if the database is unreachable."""
    import sqlalchemy
    from mlflow.exceptions import MlflowException
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore
    from sqlalchemy.exc import SQLAlchemyError

    if not backend_store_uri.startswith(("postgresql", "sqlite", "mysql", "mssql")):
        raise ConfigError(f"--backend-store-uri must be a database URI "
                          f"(postgresql://user@host:port/db or sqlite:///file.db); "
                          f"got {backend_store_uri!r}")
    if backend_store_uri.startswith("postgresql"):
        require_extra(POSTGRES_DRIVERS, "server", "a PostgreSQL backend store")
    try:
        with sqlalchemy.create_engine(backend_store_uri).connect():  # once, not MLflow's retries
            pass
        with store_lock(backend_store_uri):  # the Default experiment's artifacts: the server's
            SqlAlchemyStore(backend_store_uri, default_artifact_root=SERVED_ARTIFACTS)
    except (MlflowException, SQLAlchemyError, ImportError) as exc:
        raise SvmlabError(f"cannot open the backend store "
                          f"{backend_store_uri}: {str(exc).splitlines()[0]}") from None
