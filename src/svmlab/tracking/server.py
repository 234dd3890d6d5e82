"""``svmlab server``: an MLflow tracking server for a team, on a SQL database.

It runs ``mlflow server`` with a backend store (PostgreSQL for a team; SQLite works for one
machine) and a local folder for artifacts, which the server serves itself: clients send models
and files over HTTP (``--serve-artifacts``) and need no access to the server's disk. Everybody
then trains with ``tracking.uri=http://<host>:<port>``.

The store's schema is created before the server starts, once: ``mlflow server`` starts several
worker processes, which would otherwise race to migrate a new database.

With ``auth`` it runs MLflow's basic-auth app: users, passwords and per-experiment permissions
in the auth database that the auth config names (``MLFLOW_AUTH_CONFIG_PATH``, else svmlab's
``basic_auth.ini`` beside this module: ``sqlite:///basic_auth.db`` in the working folder,
default permission READ, a checked password remembered for 60 s). The admin user is created
at the first start, from the environment (``MLFLOW_AUTH_ADMIN_USERNAME``, default admin, and
``MLFLOW_AUTH_ADMIN_PASSWORD``) or from the config file's ``admin_password``, never from the
command line. Clients authenticate with ``MLFLOW_TRACKING_USERNAME`` and
``MLFLOW_TRACKING_PASSWORD``.
"""

from __future__ import annotations

import ipaddress
import os
import secrets
import socket
import sys
import warnings
from pathlib import Path

from svmlab.errors import ConfigError, StoreError, require_extra
from svmlab.masking import mask
from svmlab.tracking.store import POSTGRES_DRIVERS, sqlite_path, store_lock

SERVED_ARTIFACTS = "mlflow-artifacts:/"  # artifacts go through the server (--serve-artifacts)
SECRET_KEY = "MLFLOW_FLASK_SERVER_SECRET_KEY"  # the auth app's CSRF key, the same in every worker
AUTH_CONFIG = "MLFLOW_AUTH_CONFIG_PATH"
DEFAULT_AUTH_CONFIG = Path(__file__).with_name("basic_auth.ini")


def server_command(
    backend_store_uri: str,
    artifacts: str | os.PathLike,
    host: str = "127.0.0.1",
    port: int = 5000,
    workers: int = 2,
    auth: bool = False,
) -> list[str]:
    """The ``mlflow server`` command line (with this interpreter's MLflow); with ``auth``,
    MLflow's basic-auth app."""
    return [
        sys.executable,
        "-m",
        "mlflow",
        "server",
        "--backend-store-uri",
        backend_store_uri,
        "--serve-artifacts",
        "--artifacts-destination",
        str(Path(artifacts).resolve()),
        "--host",
        host,
        "--port",
        str(port),
        "--workers",
        str(workers),
        *(["--app-name", "basic-auth"] if auth else []),
    ]


def server_environment(auth: bool = False) -> dict[str, str]:
    """This process's environment, with MLflow's job execution off unless it is asked for:
    it starts a job runner and several Huey consumers (each a Python process importing MLflow)
    for GenAI scoring jobs, which svmlab never submits. With ``auth``, svmlab's auth config and
    a CSRF key of this server's own, unless they are set (several servers behind one address
    must share their key)."""
    defaults = {"MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    if auth:
        defaults |= {AUTH_CONFIG: str(DEFAULT_AUTH_CONFIG), SECRET_KEY: secrets.token_hex(32)}
    return defaults | dict(os.environ)


def is_loopback(host: str) -> bool:
    """Whether every address ``host`` names is this machine's loopback (127.0.0.1, ::1)."""
    try:
        found = socket.getaddrinfo(host, None)
    except OSError:
        return False
    return bool(found) and all(ipaddress.ip_address(info[4][0]).is_loopback for info in found)


def prepare_auth() -> None:
    """Create the auth database and its admin user now, once, as for the backend store;
    ConfigError in one line when the admin cannot be made (no password given for a new one),
    StoreError when the auth database cannot be opened."""
    from mlflow.exceptions import MlflowException
    from sqlalchemy.exc import SQLAlchemyError

    os.environ.setdefault(AUTH_CONFIG, str(DEFAULT_AUTH_CONFIG))  # read when MLflow's is imported
    with warnings.catch_warnings():  # its web framework's deprecation notes are not the user's
        warnings.simplefilter("ignore")
        from mlflow.server.auth import auth_config, bootstrap_admin_user
    path = sqlite_path(auth_config.database_uri)
    new = path is not None and not path.exists()
    try:
        with store_lock(auth_config.database_uri):
            bootstrap_admin_user()
    except (MlflowException, SQLAlchemyError) as exc:
        if new:  # a SQLite file made for an admin that could not be made
            for made in (path, Path(f"{path}.lock")):
                made.unlink(missing_ok=True)
        database = next((e for e in (exc, exc.__cause__) if isinstance(e, SQLAlchemyError)), None)
        if database is not None:
            raise StoreError(
                f"cannot open the auth database {mask(auth_config.database_uri)}: "
                f"{mask(str(database).splitlines()[0])}"
            ) from None
        raise ConfigError(f"--auth: {mask(' '.join(str(exc.message).split()))}") from None


def prepare_backend(backend_store_uri: str) -> None:
    """Create or upgrade the store's schema now; ConfigError if the URI is not a database's,
    StoreError if the database is unreachable."""
    import sqlalchemy
    from mlflow.exceptions import MlflowException
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore
    from sqlalchemy.exc import SQLAlchemyError

    if not backend_store_uri.startswith(("postgresql", "sqlite", "mysql", "mssql")):
        raise ConfigError(
            f"--backend-store-uri must be a database URI "
            f"(postgresql://user@host:port/db or sqlite:///file.db); "
            f"got {mask(backend_store_uri)!r}"
        )
    if backend_store_uri.startswith("postgresql"):
        require_extra(POSTGRES_DRIVERS, "server", "a PostgreSQL backend store")
    try:
        with sqlalchemy.create_engine(backend_store_uri).connect():  # once, not MLflow's retries
            pass
        with store_lock(backend_store_uri):  # the Default experiment's artifacts: the server's
            SqlAlchemyStore(backend_store_uri, default_artifact_root=SERVED_ARTIFACTS)
    except (MlflowException, SQLAlchemyError, ImportError) as exc:
        raise StoreError(
            f"cannot open the backend store "
            f"{mask(backend_store_uri)}: {mask(str(exc).splitlines()[0])}"
        ) from None
