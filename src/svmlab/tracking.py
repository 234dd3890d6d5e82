"""The only module that talks to MLflow during training.

A :class:`Tracker` is a context manager around one MLflow run. It logs the flattened config as
params, tags, the dataset as a run input, the convergence trace as metric histories
(``trace/<column>``, step = iteration, timestamp = run start + the solver's elapsed time, so the
UI's relative-time axis is solver time), final metrics, artifacts and the model. Whatever happens
inside the block, the run ends: FINISHED, FAILED (exception, error recorded) or KILLED (Ctrl-C,
SIGTERM); no run is left RUNNING.

Several processes may share one store (the jobs of a parallel sweep). For a SQLite store the
schema is created under a file lock beside the database file, so no two processes run MLflow's
schema migration on a new database at once, and put in write-ahead-log mode; MLflow's own
sessions wait up to 20 s for SQLite's write lock.
"""

from __future__ import annotations

import functools
import json
import os
import signal
import sqlite3
import threading
import time
import traceback
from collections.abc import Iterable, Iterator, Mapping
from contextlib import closing, contextmanager
from importlib.metadata import version
from pathlib import Path
from typing import Any

import mlflow
from filelock import FileLock
from mlflow import MlflowClient
from mlflow.data.code_dataset_source import CodeDatasetSource
from mlflow.data.meta_dataset import MetaDataset
from mlflow.entities import Metric, Param, RunStatus
from mlflow.exceptions import MlflowException
from mlflow.models import infer_signature
from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

TRACE_PREFIX = "trace/"
MAX_BATCH = 1000  # MLflow's limit on metrics per log_batch call
MAX_PARAMS = 100  # and on params per call
ERROR_TAG = "svmlab.error"
MODEL_REQUIREMENTS = ("scikit-learn", "numpy", "scipy", "skops")  # a model's pip requirements


class Terminated(KeyboardInterrupt):
    """Raised in the main thread when the process receives SIGTERM."""


class DeferredSignals:
    """SIGINT and SIGTERM as exceptions, held back while a store write is under way.

    An exception raised in the middle of a database commit can leave MLflow's session unusable,
    and then the run could not be ended; a signal that arrives during a write is raised as soon
    as the outermost write completes. Signal handlers exist only in the main thread.
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self):
        self._depth = 0
        self._pending: int | None = None
        self._previous: dict = {}

    def install(self) -> None:
        if threading.current_thread() is threading.main_thread():
            self._previous = {s: signal.signal(s, self._handle) for s in self.SIGNALS}

    def restore(self) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous = {}

    def _handle(self, signum, frame) -> None:
        if self._depth:
            self._pending = signum
        else:
            raise self._interruption(signum)

    @staticmethod
    def _interruption(signum: int) -> KeyboardInterrupt:
        if signum == signal.SIGINT:
            return KeyboardInterrupt()
        return Terminated(f"received signal {signal.Signals(signum).name}")

    @contextmanager
    def held(self) -> Iterator[None]:
        """Hold signals back for the duration of the block, then raise one that arrived."""
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1
        if not self._depth and self._pending is not None:
            signum, self._pending = self._pending, None
            raise self._interruption(signum)


def _store_write(method):
    """A Tracker method that writes to the store: not interrupted half-way by a signal."""

    @functools.wraps(method)
    def held_method(self, *args, **kwargs):
        with self._signals.held():
            return method(self, *args, **kwargs)

    return held_method


def flatten(tree: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Every leaf of a nested mapping under its dotted key (lists keep their JSON form)."""
    flat: dict[str, Any] = {}
    for key, value in tree.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            flat |= flatten(value, dotted + ".")
        else:
            flat[dotted] = json.dumps(value) if isinstance(value, (list, dict)) else value
    return flat


def sqlite_path(uri: str) -> Path | None:
    """The database file of a ``sqlite:///...`` tracking URI; None for any other store."""
    if not uri.startswith("sqlite:"):
        return None
    from sqlalchemy.engine import make_url

    database = make_url(uri).database
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


def ui_command(uri: str) -> str:
    """The command that opens the MLflow UI on the store at ``uri``."""
    if uri.startswith(("http://", "https://")):
        return f"open {uri}"
    return f"mlflow ui --backend-store-uri {uri}"


def resolved_uri(uri: str | None) -> str:
    """``uri``, or MLflow's default tracking URI when it is None or empty."""
    return uri or mlflow.get_tracking_uri()


def prepare_store(uri: str) -> MlflowClient:
    """A client of the store at ``uri``, whose schema it creates (or upgrades) if needed.

    Call it under :func:`store_lock` when other processes may open the same new SQLite file.
    """
    client = MlflowClient(uri)
    client.search_experiments(max_results=1)  # a SQL store runs its migrations when it opens
    path = sqlite_path(uri)
    if path is not None:
        _write_ahead_log(path)
    return client


def _write_ahead_log(path: Path) -> None:
    """Put a SQLite store in write-ahead-log mode (it stays so): readers no longer block the
    writer and a commit is one append, so parallel jobs wait less for the lock; with two joblib
    workers a small job took half the time (docs/benchmarks.md). Local disks only, as
    SQLite itself."""
    with closing(sqlite3.connect(path, timeout=20)) as db:
        try:
            if db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                db.execute("PRAGMA journal_mode=WAL")
        except sqlite3.OperationalError:  # busy: the store stays as it is, only slower
            pass


def ensure_experiment(uri: str | None, name: str) -> str:
    """The id of experiment ``name``, creating the store's schema and the experiment if needed.

    Safe when several processes call it at once: on SQLite the file lock serializes them; on a
    tracking server a concurrent creation is answered RESOURCE_ALREADY_EXISTS, and then the
    experiment is looked up again.
    """
    uri = resolved_uri(uri)
    with store_lock(uri):
        client = prepare_store(uri)
        found = client.get_experiment_by_name(name)
        if found is not None:
            return found.experiment_id
        try:
            return client.create_experiment(name)
        except MlflowException as exc:
            if exc.error_code != "RESOURCE_ALREADY_EXISTS":
                raise
            return client.get_experiment_by_name(name).experiment_id


def find_finished_run(uri: str | None, experiment: str, tags: Mapping[str, str]) -> str | None:
    """The id of a FINISHED run of ``experiment`` carrying all ``tags``, or None."""
    client = MlflowClient(resolved_uri(uri))
    found = client.get_experiment_by_name(experiment)
    if found is None:
        return None
    conditions = [f"tags.`{key}` = '{value}'" for key, value in tags.items()]
    runs = client.search_runs([found.experiment_id],
                              " and ".join([*conditions, "attributes.status = 'FINISHED'"]),
                              max_results=1)
    return runs[0].info.run_id if runs else None


class _SplitDataset(MetaDataset):
    """A train/test dataset as an MLflow run input: name, source, digest and a shape profile."""

    def __init__(self, dataset):
        self._profile = {
            "sha256": dataset.digest,
            "n_train": dataset.n_train,
            "n_test": dataset.n_test,
            "n_features": dataset.n_features,
            "classes": [str(c) for c in dataset.classes],
            "sparse": bool(hasattr(dataset.X_train, "indptr")),
        }
        source = CodeDatasetSource({"source": dataset.source})
        # The store keeps at most 36 characters of digest; the full sha256 is in the profile.
        super().__init__(source=source, name=dataset.name, digest=dataset.digest[:32])

    @property
    def profile(self) -> dict:
        return self._profile

    def to_dict(self) -> dict[str, str]:
        return super().to_dict() | {"profile": json.dumps(self._profile)}


class Tracker:
    """One MLflow run: ``with Tracker(...) as tracker: ...``.

    ``on_iteration`` is the solver callback: trace rows are buffered and written in batches of
    ``flush_rows`` rows. With ``parent_run_id`` the run is a child of that run (a sweep's jobs).
    """

    def __init__(self, uri: str | None, experiment: str, run_name: str | None = None,
                 flush_rows: int = 1000, parent_run_id: str | None = None):
        self.uri = uri
        self.experiment = experiment
        self.run_name = run_name
        self.flush_rows = flush_rows
        self.parent_run_id = parent_run_id
        self.run_id: str | None = None
        self._rows: list[Mapping[str, float]] = []
        self._start_ms = 0
        self._signals = DeferredSignals()

    # -- run lifecycle -------------------------------------------------------------------------

    def __enter__(self) -> Tracker:
        if self.uri:
            mlflow.set_tracking_uri(self.uri)
        if "MLFLOW_RUN_ID" not in os.environ:  # under `mlflow run` the run already exists
            mlflow.set_experiment(experiment_id=ensure_experiment(self.uri, self.experiment))
        run = mlflow.start_run(run_name=self.run_name, parent_run_id=self.parent_run_id)
        self.run_id = run.info.run_id
        self.client = MlflowClient()
        self._store = self.client._tracking_client.store
        self._start_ms = int(time.time() * 1000)
        self._signals.install()
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        try:
            with self._signals.held():  # the run must end, whatever arrives meanwhile
                self._end(exc, tb)
        finally:
            self._signals.restore()
        return False

    def _end(self, exc: BaseException | None, tb) -> None:
        status = RunStatus.to_string(RunStatus.FINISHED)
        try:
            self.flush()
        except Exception as flush_exc:  # the run still has to end; keep the first error
            exc = exc or flush_exc
            tb = tb or flush_exc.__traceback__
        if exc is not None:
            killed = isinstance(exc, KeyboardInterrupt)
            status = RunStatus.to_string(RunStatus.KILLED if killed else RunStatus.FAILED)
            self._record_error(exc, tb)
        mlflow.end_run(status=status)

    def _record_error(self, exc: BaseException, tb) -> None:
        message = f"{type(exc).__name__}: {exc}"
        try:
            self.client.set_tag(self.run_id, ERROR_TAG, message[:5000])
            text = "".join(traceback.format_exception(type(exc), exc, tb))
            self.client.log_text(self.run_id, text, "error.txt")
        except Exception:  # a store that is down must not keep the run from ending
            pass

    @property
    def ui_command(self) -> str:
        """The command that opens the MLflow UI on this run's store."""
        return ui_command(mlflow.get_tracking_uri())

    # -- what a run logs -----------------------------------------------------------------------

    @_store_write
    def log_params(self, params: Mapping[str, Any]) -> None:
        items = [Param(k, "None" if v is None else str(v)) for k, v in params.items()]
        for i in range(0, len(items), MAX_PARAMS):
            self.client.log_batch(self.run_id, params=items[i:i + MAX_PARAMS])

    @_store_write
    def set_tags(self, tags: Mapping[str, Any]) -> None:
        mlflow.set_tags({k: str(v) for k, v in tags.items() if v is not None})

    @_store_write
    def log_metrics(self, metrics: Mapping[str, float], step: int = 0) -> None:
        now = int(time.time() * 1000)
        self._write([(k, float(v), now, step) for k, v in metrics.items()])

    @_store_write
    def log_dataset(self, dataset) -> None:
        _again_if_duplicate(lambda: mlflow.log_input(_SplitDataset(dataset), context="training"))

    @_store_write
    def log_text(self, text: str, artifact_file: str) -> None:
        self.client.log_text(self.run_id, text, artifact_file)

    @_store_write
    def log_figure(self, figure, artifact_file: str) -> None:
        """Log a matplotlib figure as an image and close it (a sweep runs many jobs in one
        process: open figures would accumulate)."""
        import matplotlib.pyplot as plt

        try:
            self.client.log_figure(self.run_id, figure, artifact_file)
        finally:
            plt.close(figure)

    @_store_write
    def log_model(self, estimator, X_example, name: str = "model") -> None:
        """Log the fitted estimator (scikit-learn flavor) with signature and input example."""
        example = X_example.toarray() if hasattr(X_example, "toarray") else X_example
        signature = infer_signature(example, estimator.predict(example))
        mlflow.sklearn.log_model(estimator, name=name, signature=signature,
                                 input_example=example,
                                 pip_requirements=_model_requirements(estimator),
                                 skops_trusted_types=_trusted_types(estimator))

    # -- the convergence trace -----------------------------------------------------------------

    def on_iteration(self, row: Mapping[str, float]) -> None:
        """Solver callback: buffer one trace row, write a batch every ``flush_rows`` rows."""
        self._rows.append(row)
        if len(self._rows) >= self.flush_rows:
            self.flush()

    @_store_write
    def flush(self) -> None:
        """Write the buffered trace rows as ``trace/<column>`` metric histories."""
        rows, self._rows = self._rows, []
        if rows and self.run_id is not None:
            self._write(self._trace_metrics(rows))

    def _trace_metrics(self, rows: Iterable[Mapping[str, float]]) -> list[tuple]:
        points = []
        for row in rows:
            step = int(row["iteration"])
            timestamp = self._start_ms + int(1000 * row["time_s"])
            points += [(TRACE_PREFIX + key, float(value), timestamp, step)
                       for key, value in row.items() if key != "iteration"]
        return points

    def _write(self, points: list[tuple]) -> None:
        """Write (key, value, timestamp, step) points with as few store calls as possible.

        On a SQL store, all but the last point of each key go in one bulk insert through
        MLflow's own table model (the per-object ORM path of log_batch costs about 0.1 ms a
        point); the last point of each key then goes through log_batch, which checks that the
        run is active and updates the latest values shown in the UI. Other stores (a tracking
        server over HTTP) get log_batch calls of up to 1000 metrics.
        """
        if isinstance(self._store, SqlAlchemyStore) and len(points) > MAX_BATCH:
            last = {p[0]: i for i, p in enumerate(points)}
            keep = set(last.values())
            _bulk_insert(self._store, self.run_id,
                         [p for i, p in enumerate(points) if i not in keep])
            points = [points[i] for i in sorted(keep)]
        metrics = [Metric(*p) for p in points]
        for i in range(0, len(metrics), MAX_BATCH):
            self.client.log_batch(self.run_id, metrics=metrics[i:i + MAX_BATCH])


def _again_if_duplicate(call, attempts: int = 3):
    """``call()``, tried again when a concurrent writer inserted the same row first.

    MLflow looks a dataset up and inserts it if missing, in one transaction: two jobs logging
    the same dataset at once (solver=a,b with the same seed, in parallel) both miss it, and the
    second insert fails on the unique key (SQLite: "UNIQUE constraint failed", PostgreSQL:
    "duplicate key value"). The transaction is rolled back; tried again, it finds the row.
    """
    for attempt in range(attempts):
        try:
            return call()
        except MlflowException as exc:
            text = str(exc).lower()
            if attempt == attempts - 1 or not ("unique constraint" in text or "duplicate key" in text):
                raise
            time.sleep(0.2 * (attempt + 1))


def _model_requirements(estimator) -> list[str]:
    """What loading the model needs, pinned to the versions in use.

    Given explicitly: otherwise MLflow infers the list by loading the model in a subprocess,
    about 9 s a run, most of the time of a small job in a sweep.
    """
    names = [*MODEL_REQUIREMENTS, *(["svmlab"] if type(estimator).__module__.startswith("svmlab.")
                                    else [])]
    return [f"{name}=={version(name)}" for name in names]


TRUSTED_MODULES = ("svmlab.", "scipy.sparse.")  # scipy.sparse: support vectors of CSR input


def _trusted_types(estimator) -> list[str]:
    """The types in the model that skops (MLflow's serializer) must be told to trust: svmlab's
    own classes, and scipy's sparse matrices (the support vectors of a model trained on CSR
    input; skops stores them as arrays, which load without running code).

    Any other type skops does not know stays untrusted, so logging such a model still fails.
    """
    import skops.io

    found = skops.io.get_untrusted_types(data=skops.io.dumps(estimator))
    return [name for name in found if name.startswith(TRUSTED_MODULES)]


def _bulk_insert(store: SqlAlchemyStore, run_id: str, points: list[tuple]) -> None:
    from sqlalchemy import insert
    from mlflow.store.tracking.dbmodels.models import SqlMetric

    rows = []
    for key, value, timestamp, step in points:
        is_nan, value = store.sanitize_metric_value(value)
        rows.append({"run_uuid": run_id, "key": key, "value": value,
                     "timestamp": timestamp, "step": step, "is_nan": is_nan})
    with store.ManagedSessionMaker(read_only=False) as session:  # a write: primary database
        session.execute(insert(SqlMetric.__table__), rows)
