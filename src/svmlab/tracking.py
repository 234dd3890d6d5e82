"""The only module that talks to MLflow during training.

A :class:`Tracker` is a context manager around one MLflow run. It logs the flattened config as
params, tags, the dataset as a run input, the convergence trace as metric histories
(``trace/<column>``, step = iteration, timestamp = run start + the solver's elapsed time, so the
UI's relative-time axis is solver time), final metrics, artifacts and the model. Whatever happens
inside the block, the run ends: FINISHED, FAILED (exception, error recorded) or KILLED (Ctrl-C,
SIGTERM); no run is left RUNNING.
"""

from __future__ import annotations

import json
import os
import signal
import time
import traceback
from collections.abc import Iterable, Mapping
from typing import Any

import mlflow
from mlflow import MlflowClient
from mlflow.data.code_dataset_source import CodeDatasetSource
from mlflow.data.meta_dataset import MetaDataset
from mlflow.entities import Metric, Param, RunStatus
from mlflow.models import infer_signature
from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

TRACE_PREFIX = "trace/"
MAX_BATCH = 1000  # MLflow's limit on metrics per log_batch call
MAX_PARAMS = 100  # and on params per call
ERROR_TAG = "svmlab.error"


class Terminated(KeyboardInterrupt):
    """Raised in the main thread when the process receives SIGTERM."""


def _raise_terminated(signum, frame):
    raise Terminated(f"received signal {signal.Signals(signum).name}")


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
    ``flush_rows`` rows.
    """

    def __init__(self, uri: str | None, experiment: str, run_name: str | None = None,
                 flush_rows: int = 1000):
        self.uri = uri
        self.experiment = experiment
        self.run_name = run_name
        self.flush_rows = flush_rows
        self.run_id: str | None = None
        self._rows: list[Mapping[str, float]] = []
        self._start_ms = 0
        self._previous_sigterm = None

    # -- run lifecycle -------------------------------------------------------------------------

    def __enter__(self) -> Tracker:
        if self.uri:
            mlflow.set_tracking_uri(self.uri)
        if "MLFLOW_RUN_ID" not in os.environ:  # under `mlflow run` the run already exists
            mlflow.set_experiment(self.experiment)
        run = mlflow.start_run(run_name=self.run_name)
        self.run_id = run.info.run_id
        self.client = MlflowClient()
        self._store = self.client._tracking_client.store
        self._start_ms = int(time.time() * 1000)
        self._previous_sigterm = signal.signal(signal.SIGTERM, _raise_terminated)
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        signal.signal(signal.SIGTERM, self._previous_sigterm or signal.SIG_DFL)
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
        return False

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
        uri = mlflow.get_tracking_uri()
        if uri.startswith(("http://", "https://")):
            return f"open {uri}"
        return f"mlflow ui --backend-store-uri {uri}"

    # -- what a run logs -----------------------------------------------------------------------

    def log_params(self, params: Mapping[str, Any]) -> None:
        items = [Param(k, "None" if v is None else str(v)) for k, v in params.items()]
        for i in range(0, len(items), MAX_PARAMS):
            self.client.log_batch(self.run_id, params=items[i:i + MAX_PARAMS])

    def set_tags(self, tags: Mapping[str, Any]) -> None:
        mlflow.set_tags({k: str(v) for k, v in tags.items() if v is not None})

    def log_metrics(self, metrics: Mapping[str, float], step: int = 0) -> None:
        now = int(time.time() * 1000)
        self._write([(k, float(v), now, step) for k, v in metrics.items()])

    def log_dataset(self, dataset) -> None:
        mlflow.log_input(_SplitDataset(dataset), context="training")

    def log_text(self, text: str, artifact_file: str) -> None:
        self.client.log_text(self.run_id, text, artifact_file)

    def log_figure(self, figure, artifact_file: str) -> None:
        self.client.log_figure(self.run_id, figure, artifact_file)

    def log_model(self, estimator, X_example, name: str = "model") -> None:
        """Log the fitted estimator (scikit-learn flavor) with signature and input example."""
        example = X_example.toarray() if hasattr(X_example, "toarray") else X_example
        signature = infer_signature(example, estimator.predict(example))
        mlflow.sklearn.log_model(estimator, name=name, signature=signature,
                                 input_example=example,
                                 skops_trusted_types=_svmlab_types(estimator))

    # -- the convergence trace -----------------------------------------------------------------

    def on_iteration(self, row: Mapping[str, float]) -> None:
        """Solver callback: buffer one trace row, write a batch every ``flush_rows`` rows."""
        self._rows.append(row)
        if len(self._rows) >= self.flush_rows:
            self.flush()

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


def _svmlab_types(estimator) -> list[str]:
    """svmlab's own classes in the model, which skops (MLflow's serializer) must be told to trust.

    Any other type skops does not know stays untrusted, so logging such a model still fails.
    """
    import skops.io

    found = skops.io.get_untrusted_types(data=skops.io.dumps(estimator))
    return [name for name in found if name.startswith("svmlab.")]


def _bulk_insert(store: SqlAlchemyStore, run_id: str, points: list[tuple]) -> None:
    from sqlalchemy import insert
    from mlflow.store.tracking.dbmodels.models import SqlMetric

    rows = []
    for key, value, timestamp, step in points:
        is_nan, value = store.sanitize_metric_value(value)
        rows.append({"run_uuid": run_id, "key": key, "value": value,
                     "timestamp": timestamp, "step": step, "is_nan": is_nan})
    with store.ManagedSessionMaker() as session:
        session.execute(insert(SqlMetric.__table__), rows)
