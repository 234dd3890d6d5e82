"""The tracking store: its URI, its schema, experiments, and safe use by parallel processes.

Several processes may share one store (the jobs of a parallel sweep). For a SQLite store the
schema is created under a file lock beside the database file, so no two processes run MLflow's
schema migration on a new database at once, and put in write-ahead-log mode; MLflow's own
sessions wait up to 20 s for SQLite's write lock.

A store that is unavailable for a while is waited for within bounds: MLflow's HTTP client retries
a request to a tracking server once with a 1 s backoff factor and a 10 s timeout (instead of
its default 7 retries with a 2 s factor and 120 s, which add up to minutes per request; here at
most about 20 s), unless the user set ``MLFLOW_HTTP_REQUEST_*`` variables, so that
``svmlab.tracking.patience`` decides how long a write waits, and a sweep whose server is gone
ends within its wait plus about a minute. :func:`store_problem` names what is wrong with a
store in a few words, for one-line messages; an error is the store's only when it comes from the
store: a network failure must name the store's host (a failed download is not the store's), and
an error svmlab raised about the user's data or config is never the store's.
"""

from __future__ import annotations

import errno
import logging
import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import mlflow
from filelock import FileLock
from mlflow import MlflowClient
from mlflow.exceptions import MlflowException

from svmlab.errors import SvmlabError, require_extra
from svmlab.masking import mask

HTTP_LIMITS = {
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "1",
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "10",
}
for _name, _value in HTTP_LIMITS.items():  # read by MLflow at every request
    os.environ.setdefault(_name, _value)
# MLflow's "View run ... at <uri>" lines would show a URI's password; svmlab prints its own
os.environ.setdefault("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")


class _RaisedAnyway(logging.Filter):
    """Drops MLflow's log of a SQL error (its whole traceback, some 200 lines): MLflow raises
    the same error right after, and svmlab reports it in one line."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("SQLAlchemy database error")


logging.getLogger("mlflow.store.db.utils").addFilter(_RaisedAnyway())
# its news of a new store's tables: svmlab says itself, in one line, that it creates a store
logging.getLogger("mlflow.store.db.utils").setLevel(logging.WARNING)

#: The drivers SQLAlchemy can open a ``postgresql://`` store with (svmlab[server] installs psycopg).
POSTGRES_DRIVERS = ("psycopg", "psycopg2")
UNREACHABLE = "unreachable"
DAMAGED = "damaged (not a readable SQLite database)"
# (words in an error or its causes, what the store is) - the first match names the problem
PROBLEMS = (
    (("database is locked",), "locked (another process holds SQLite's write lock)"),
    (("readonly database", "read-only file system"), "read-only"),
    (("disk is full", "no space left"), "full (no space left on the device)"),
    (("database disk image is malformed", "file is not a database"), DAMAGED),
    (
        (
            "connection refused",
            "max retries exceeded",
            "failed to establish",
            "timed out",
            "name or service not known",
            "connection aborted",
            "remote end closed",
        ),
        UNREACHABLE,
    ),
    (
        ("could not find a registered", "unsupported uri", "not a valid uri"),
        "not a tracking URI MLflow knows (sqlite:///file.db, http://host:port, postgresql://...)",
    ),
    (
        ("error code 401", "401 client error"),
        "refusing svmlab (401, not authenticated): set MLFLOW_TRACKING_USERNAME and "
        "MLFLOW_TRACKING_PASSWORD to a user of the server",
    ),
    (
        ("error code 403", "403 client error"),
        "refusing this user (403, permission denied): an admin grants the user of "
        "MLFLOW_TRACKING_USERNAME permission on the experiment, or set MLFLOW_TRACKING_USERNAME "
        "and MLFLOW_TRACKING_PASSWORD to another user",
    ),
    (
        ("password authentication failed", "no password supplied"),
        "refusing svmlab (wrong or no password): PostgreSQL's client reads it from the file "
        "PGPASSFILE names, else ~/.pgpass",
    ),
    (("permission denied", "unable to open database"), "not writable (permission denied)"),
    (
        ("is in maintenance mode",),
        "a file store, which MLflow 3 no longer writes to (use sqlite:///<folder>/mlflow.db)",
    ),
)
TRANSIENT = ("locked", UNREACHABLE)  # what may pass if one waits
_ERRNO_PROBLEMS = {
    errno.ENOSPC: "full (no space left on the device)",
    errno.EROFS: "read-only",
    errno.EACCES: "not writable (permission denied)",
    errno.EPERM: "not writable (permission denied)",
    errno.ENOTDIR: "not usable: a file stands where a folder of it should be",
}


def sqlite_path(uri: str) -> Path | None:
    """The database file of a ``sqlite:///...`` tracking URI; None for any other store."""
    if not uri.startswith("sqlite:"):
        return None
    from sqlalchemy.engine import make_url

    database = make_url(uri).database
    if database and database.startswith("file:"):  # SQLite's URI filename (...?uri=true)
        database = database.removeprefix("file:")
    return Path(database).resolve() if database and database != ":memory:" else None


@contextmanager
def store_lock(uri: str) -> Iterator[None]:
    """Exclusive use of a SQLite store's file ``<db>.lock`` by this process (no-op otherwise)."""
    path = sqlite_path(uri)
    if path is None:
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(f"{path}.lock", timeout=300):
        yield


# MLflow 3's UI opens an experiment in its GenAI view (traces) unless the experiment page's URL
# asks for the machine-learning one; the choice it otherwise keeps is the browser's, not the
# store's. The tag files the experiment as model training for MLflow's other readers.
EXPERIMENT_KIND = {"mlflow.experimentKind": "custom_model_development"}
ML_VIEW = "workflowType=machine_learning"
UI_ADDRESS = "http://127.0.0.1:5000"  # where `mlflow ui` and `svmlab server` serve by default


def ui_command(uri: str) -> str:
    """The command that serves the MLflow UI on the store at ``uri`` (its secrets masked); ''
    for a server's URI."""
    if uri.startswith(("http://", "https://")):
        return ""
    return f"mlflow ui --backend-store-uri {mask(uri)} --port {UI_ADDRESS.rsplit(':', 1)[1]}"


def ui_url(
    uri: str, experiment_id: str, run_id: str | None = None, artifact: str | None = None
) -> str:
    """The UI's page of an experiment's runs table (or of one run, or of one of its artifacts)
    on the server of ``uri``: the server itself for an HTTP store, else the one
    :func:`ui_command` starts; a user and password in the URI are left out of the address (the
    browser asks for them)."""
    base = UI_ADDRESS
    if uri.startswith(("http://", "https://")):
        parts = urlsplit(uri)
        base = urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[-1])).rstrip("/")
    run = f"/{run_id}" if run_id else ""
    shown = f"/artifacts/{artifact}" if run_id and artifact else ""
    return f"{base}/#/experiments/{experiment_id}/runs{run}{shown}?{ML_VIEW}"


def ui_line(uri: str, experiment_id: str, run_id: str | None = None) -> str:
    """The lines a command ends with: the UI's page of the experiment's runs (and of the run),
    and for a store without a server, the command that serves them. The UI's default workers
    can fail to come up on a small, loaded machine, where one worker does."""
    lines = [f"runs in the MLflow UI:  {ui_url(uri, experiment_id)}"]
    if run_id:
        lines.append(f"this run:               {ui_url(uri, experiment_id, run_id)}")
    command = ui_command(uri)
    if command:
        lines.append(f"  served by:  {command}  (on a loaded machine: add --workers 1)")
    return "\n".join(lines)


def resolved_uri(uri: str | None) -> str:
    """``uri``, or MLflow's default tracking URI when it is None or empty."""
    return uri or mlflow.get_tracking_uri()


def absolute_uri(uri: str | None) -> str:
    """``uri`` (or MLflow's current one) with a relative SQLite path made absolute, so that a
    process started elsewhere (a notebook) opens the same store."""
    uri = resolved_uri(uri)
    prefix = "sqlite:///"
    if uri.startswith(prefix) and not uri[len(prefix) :].startswith("/"):
        return prefix + str(Path(uri[len(prefix) :]).resolve())
    return uri


def load_store_code(uri: str | None) -> None:
    """Import the code that opens a database store (MLflow's SQL store: 1-2 s), so that a
    process can import it ahead of its first run, e.g. in a thread; nothing for another store."""
    if resolved_uri(uri).split(":", 1)[0].split("+")[0] in ("sqlite", "postgresql", "mysql"):
        import mlflow.store.tracking.sqlalchemy_store  # noqa: F401


SCHEMA_STILL_S = 10.0  # a schema whose creation shows no progress for this long is left alone
# what a store says while another process creates its schema: a table made by the other first,
# a migration the other moved on, a schema the other has not brought to its last version yet
SCHEMA_RACE = (
    "already exists",
    "online migration expected",
    "out-of-date database schema",
    "no such table",
    "duplicate column",
)


def prepare_store(uri: str) -> MlflowClient:
    """A client of the store at ``uri``, whose schema it creates (or upgrades) if needed.

    Call it under :func:`store_lock` when other processes may open the same new SQLite file.
    A process that does not take that lock (any MLflow client) must not see a schema half
    made: a new SQLite store is made whole in a file of its own, then put in place
    (:func:`_new_sqlite_store`). When the other process created the file first, both would run
    MLflow's migrations, and the slower one fails on what the other made
    (:data:`SCHEMA_RACE`): the store is opened again while the other's work goes on; an error
    that stays the same for ``SCHEMA_STILL_S`` (an old store's schema, which MLflow wants
    upgraded by hand) is raised.
    """
    if uri.startswith("postgresql"):
        require_extra(POSTGRES_DRIVERS, "server", "a PostgreSQL tracking store")
    path = sqlite_path(uri)
    if path is not None and not path.exists():
        _new_sqlite_store(path)
    error, since = "", time.monotonic()
    while True:
        client = MlflowClient(uri)
        try:
            client.search_experiments(max_results=1)  # a SQL store migrates when it opens
            break
        except Exception as exc:
            now = time.monotonic()
            if str(exc) != error:
                error, since = str(exc), now
            racing = any(words in error.lower() for words in SCHEMA_RACE)
            if not racing or now - since > SCHEMA_STILL_S:
                raise
            time.sleep(0.5)
    if path is not None:
        _write_ahead_log(path)
    return client


def _new_sqlite_store(path: Path) -> None:
    """Create a SQLite store's schema in a file beside ``path``, then link that file to
    ``path`` in one step, unless a file is there by then (another process's store, left as it
    is) or the file system has no hard links (MLflow then creates the store in place)."""
    import sqlalchemy
    from mlflow.store.db.utils import _initialize_tables

    part = path.with_name(f".{path.name}.{os.getpid()}.new")
    engine = sqlalchemy.create_engine(f"sqlite:///{part}")
    try:
        _initialize_tables(engine)
        engine.dispose()  # no connection left open on the part's name
        os.link(part, path)
    except OSError:
        pass
    finally:
        engine.dispose()
        part.unlink(missing_ok=True)


def _write_ahead_log(path: Path) -> None:
    """Put a SQLite store in write-ahead-log mode (it stays so): readers no longer block the
    writer and a commit is one append, so parallel jobs wait less for the lock. Local disks
    only, as SQLite itself."""
    with closing(sqlite3.connect(path, timeout=20)) as db:
        try:
            if db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                db.execute("PRAGMA journal_mode=WAL")
        except sqlite3.OperationalError:  # busy: the store stays as it is, only slower
            pass


_EXPERIMENT_IDS: dict[tuple[str, str], str] = {}  # (uri, name): id, found by this process


def ensure_experiment(uri: str | None, name: str) -> str:
    """The id of experiment ``name``, creating the store's schema and the experiment if needed.

    Safe when several processes call it at once: on SQLite the file lock serializes them; on a
    tracking server a concurrent creation is answered RESOURCE_ALREADY_EXISTS, and then the
    experiment is looked up again. A process asks the store once per experiment: the start-up
    reap and the run it starts share the answer (an experiment's id never changes).
    """
    uri = resolved_uri(uri)
    if (uri, name) not in _EXPERIMENT_IDS:
        _EXPERIMENT_IDS[uri, name] = _find_or_create_experiment(uri, name)
    return _EXPERIMENT_IDS[uri, name]


def _find_or_create_experiment(uri: str, name: str) -> str:
    with store_lock(uri):
        client = prepare_store(uri)
        found = client.get_experiment_by_name(name)
        if found is not None:
            return found.experiment_id
        try:
            return client.create_experiment(name, tags=EXPERIMENT_KIND)
        except MlflowException as exc:
            if exc.error_code != "RESOURCE_ALREADY_EXISTS":
                raise
            return client.get_experiment_by_name(name).experiment_id


def again_if_duplicate(call, attempts: int = 3, errors: tuple = (MlflowException,)):
    """``call()``, tried again when a concurrent writer inserted the same row (or created the
    same schema object) first.

    MLflow looks a dataset up and inserts it if missing, in one transaction: two jobs logging
    the same dataset at once (solver=a,b with the same seed, in parallel) both miss it, and the
    second insert fails on the unique key (SQLite: "UNIQUE constraint failed", PostgreSQL:
    "duplicate key value"). Optuna's storage creates its schema when first opened: two workers
    opening a new database at once both create it, and the second fails on what the first made
    ("already exists", "duplicate key"). The transaction is rolled back; tried again, it finds
    the row. ``errors``: the exception types to look at (MLflow's by default).
    """
    for attempt in range(attempts):
        try:
            return call()
        except errors as exc:
            text = str(exc).lower()
            if attempt == attempts - 1 or not (
                "unique constraint" in text or "duplicate key" in text or "already exists" in text
            ):
                raise
            time.sleep(0.2 * (attempt + 1))


def _chain(exc: BaseException) -> list[BaseException]:
    """The exception and its causes (``raise ... from``, or raised while handling)."""
    found: list[BaseException] = []
    while exc is not None and exc not in found:
        found.append(exc)
        exc = (
            exc.__cause__
            if exc.__cause__ is not None or exc.__suppress_context__
            else exc.__context__
        )
    return found


def _store_links(exc: BaseException) -> list[BaseException]:
    """The links of ``exc``'s chain that may be the store's: those before the first error
    svmlab raised about the user's data or config (a failed download, say), which names its own
    cause."""
    links = _chain(exc)
    mine = [i for i, link in enumerate(links) if isinstance(link, SvmlabError)]
    return links[: mine[0]] if mine else links


def _diagnosis(exc: BaseException, uri: str | None) -> tuple[str, str] | None:
    """(what is wrong with the store at ``uri``, the line of the error that says so), or None.

    A network failure is the store's only when its line names the store's host: a SQLite
    store has none, and a download that failed names another."""
    host = (urlsplit(resolved_uri(uri)).hostname or "").lower()
    for link in _store_links(exc):
        if isinstance(link, OSError) and link.errno in _ERRNO_PROBLEMS:
            return _ERRNO_PROBLEMS[link.errno], str(link)
        for line in f"{type(link).__name__}: {link}".splitlines():
            for words, problem in PROBLEMS:
                if not any(word in line.lower() for word in words):
                    continue
                if problem != UNREACHABLE or (host and host in line.lower()):
                    return problem, line.strip()
    return None


def store_problem(exc: BaseException, uri: str | None) -> str | None:
    """What is wrong with the store at ``uri``, in a few words ('read-only', 'unreachable',
    ...), when ``exc`` or one of its causes says so; None for an error that is not the
    store's."""
    found = _diagnosis(exc, uri)
    return found[0] if found else None


def store_error_line(exc: BaseException, uri: str | None) -> str | None:
    """One line naming the store, its problem, the line of the error that shows it and, for a
    damaged SQLite file, what to do (secrets masked); None when the error is not the store's."""
    found = _diagnosis(exc, uri)
    if found is None:
        return None
    problem, evidence = found
    uri = resolved_uri(uri)
    line = f"the tracking store {uri} is {problem}: {evidence[:200]}"
    if problem == DAMAGED:
        line += (
            f"; svmlab left {sqlite_path(uri) or uri} as it is: restore it from a backup, "
            f"or start a new store (another tracking URI, e.g. sqlite:///new.db)"
        )
    return mask(line)
