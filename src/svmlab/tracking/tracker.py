"""One MLflow run at a time: :class:`Tracker`, used by training runs and analysis runs alike.

A Tracker is a context manager around one MLflow run. It logs params, tags, the dataset as a
run input, final metrics, the convergence trace, artifacts and the model. Whatever happens inside
the block, the run ends: FINISHED, FAILED (exception, error recorded) or KILLED (Ctrl-C,
SIGTERM: ``svmlab.lifecycle``). Every write waits out a store that is briefly locked or
unreachable (``svmlab.tracking.patience``, ``wait_s``). A run whose process dies without ending
it (SIGKILL, a lost machine) is found by its host, pid and heartbeat tags and ended by the reap
(``svmlab.tracking.liveness``).

Everything goes through MLflow's public API, in few calls: a run's record
(``svmlab.tracking.record.RunRecord``, built without MLflow) is written by :meth:`Tracker.write`,
its params, tags and metrics in one ``log_batch`` each time (as many as MLflow's limits per call
allow), its artifacts staged in a local folder and written together (what is staged when a run
fails is written as it ends). The convergence trace is written after the fit, off the solver's
clock: the whole trace as the artifact ``trace/trace.parquet``, and log-spaced rows of it as
metric histories (``svmlab.tracking.record.trace_points``); a history's step is the iteration
and its timestamp the fit's start plus the solver's elapsed time, so the UI's relative-time
axis is solver time.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import tempfile
import traceback
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import mlflow
import pandas as pd
from mlflow import MlflowClient
from mlflow.data.code_dataset_source import CodeDatasetSource
from mlflow.data.meta_dataset import MetaDataset
from mlflow.entities import Metric, Param, RunStatus, RunTag

from svmlab.lifecycle import DeferredSignals, start_tags
from svmlab.masking import mask
from svmlab.tracking.liveness import ERROR_TAG, RunHeartbeat
from svmlab.tracking.patience import WAIT_S, Patience, PatientClient
from svmlab.tracking.record import RunRecord, final_points
from svmlab.tracking.store import again_if_duplicate, ensure_experiment, ui_line
from svmlab.vocabulary import PROJECT_RUN_TAG

MAX_BATCH = 1000  # MLflow's limit on metrics per log_batch call (params, tags and metrics)
MAX_PARAMS = 100  # and on params per call (tags likewise)


def _store_write(method):
    """A Tracker method that writes to the store: not interrupted half-way by a signal."""

    @functools.wraps(method)
    def held_method(self, *args, **kwargs):
        with self._signals.held():
            return method(self, *args, **kwargs)

    return held_method


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


DEFAULT_EXPERIMENT_ID = "0"  # MLflow's "Default" experiment


@contextmanager
def environ_without(name: str | None) -> Iterator[None]:
    """Environment variable ``name`` unset inside the block (nothing when None)."""
    value = os.environ.pop(name, None) if name else None
    try:
        yield
    finally:
        if value is not None:
            os.environ[name] = value


class Tracker:
    """One MLflow run: ``with Tracker(uri, experiment, run_name) as tracker: ...``.

    With ``parent_run_id`` the run is a child of that run (a sweep's jobs). Under ``mlflow run``
    (``MLFLOW_RUN_ID`` set) the project's run is the one used, unless MLflow filed it in its
    "Default" experiment (``mlflow run .`` without ``--experiment-name``): then the run goes to
    ``experiment`` like any other, and the project's run names it in its description.
    ``shared``: the state folder of the sweep the run is a job of, whose processes share one
    wait for the store (``svmlab.tracking.patience``).
    """

    def __init__(
        self,
        uri: str | None,
        experiment: str,
        run_name: str | None = None,
        parent_run_id: str | None = None,
        wait_s: float = WAIT_S,
        shared: Path | None = None,
    ):
        self.uri = uri
        self.wait_s = wait_s
        self.shared = shared
        self.experiment = experiment
        self.run_name = run_name
        self.parent_run_id = parent_run_id
        self.run_id: str | None = None
        self.experiment_id: str | None = None
        self._signals = DeferredSignals()
        self._heartbeat: RunHeartbeat | None = None

    # -- run lifecycle -------------------------------------------------------------------------

    def __enter__(self) -> Tracker:
        if self.uri:
            mlflow.set_tracking_uri(self.uri)
        self.patience = patience = Patience(
            self.uri, self.wait_s, self.run_name or "", self._signals.raise_held, self.shared
        )
        self.client = PatientClient(MlflowClient(), patience)
        project_run = os.environ.get("MLFLOW_RUN_ID")  # under `mlflow run`: the project's run
        experiment_id = self.client.get_run(project_run).info.experiment_id if project_run else None
        if experiment_id in (None, DEFAULT_EXPERIMENT_ID):
            experiment_id = patience(ensure_experiment, self.uri, self.experiment)
        else:
            project_run = None  # the project's run is this run
        patience(mlflow.set_experiment, experiment_id=experiment_id)
        with environ_without("MLFLOW_RUN_ID" if project_run else None):
            run = patience(
                mlflow.start_run,
                run_name=self.run_name,
                parent_run_id=self.parent_run_id,
                tags=start_tags(),
            )
        self.run_id, self.experiment_id = run.info.run_id, experiment_id
        if project_run:
            self.client.set_tag(
                project_run,
                "mlflow.note.content",
                f"svmlab logged this run to experiment {self.experiment!r} as run "
                f"{self.run_id} (`mlflow run --experiment-name NAME` chooses "
                f"another experiment)",
            )
            self.client.set_tag(project_run, PROJECT_RUN_TAG, self.run_id)
        self._staging = tempfile.TemporaryDirectory(prefix="svmlab-artifacts-")
        self._heartbeat = RunHeartbeat(mlflow.get_tracking_uri(), self.run_id).start()
        self._signals.install()
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        try:
            with self._signals.held():  # the run must end, whatever arrives meanwhile
                self._heartbeat.stop()
                self._end(exc, tb)
        finally:
            self._signals.restore()
        return False

    def _end(self, exc: BaseException | None, tb) -> None:
        status = RunStatus.to_string(RunStatus.FINISHED)
        if exc is not None:
            killed = isinstance(exc, KeyboardInterrupt)
            status = RunStatus.to_string(RunStatus.KILLED if killed else RunStatus.FAILED)
            self._record_error(exc, tb)
        try:
            self.upload_staged()  # e.g. the config of a run that failed
        except Exception:  # as for the error record: the run must end all the same
            if exc is None:
                raise
        finally:
            self._staging.cleanup()
        try:
            mlflow.end_run(status=status)
        except Exception:  # the run is off MLflow's stack already; its store may come back
            self.client.set_terminated(self.run_id, status)

    def _record_error(self, exc: BaseException, tb) -> None:
        message = mask(f"{type(exc).__name__}: {exc}")
        try:
            self.client.set_tag(self.run_id, ERROR_TAG, message[:5000])
            text = mask("".join(traceback.format_exception(type(exc), exc, tb)))
            self.client.log_text(self.run_id, text, "error.txt")
        except Exception:  # a store that is down must not keep the run from ending
            pass

    @property
    def ui_line(self) -> str:
        """Where the MLflow UI shows this run and its experiment's runs."""
        return ui_line(mlflow.get_tracking_uri(), self.experiment_id, self.run_id)

    # -- what a run logs -----------------------------------------------------------------------

    @_store_write
    def log_batch(
        self,
        params: Mapping[str, Any] | None = None,
        tags: Mapping[str, Any] | None = None,
        metrics: list[Metric] = (),
    ) -> None:
        """Params, tags (None values left out) and metrics in as few ``log_batch`` calls as
        MLflow's limits allow (one for a training run's config, one for its results); a secret
        in a value (a URI's password) is masked."""
        params = [Param(k, mask(str(v))) for k, v in (params or {}).items()]
        tags = [RunTag(k, mask(str(v))) for k, v in (tags or {}).items() if v is not None]
        metrics = list(metrics)
        while params or tags or metrics:
            p, params = params[:MAX_PARAMS], params[MAX_PARAMS:]
            t, tags = tags[:MAX_PARAMS], tags[MAX_PARAMS:]
            m, metrics = (
                metrics[: MAX_BATCH - len(p) - len(t)],
                metrics[MAX_BATCH - len(p) - len(t) :],
            )
            self.client.log_batch(self.run_id, metrics=m, params=p, tags=t)

    def log_params(self, params: Mapping[str, Any]) -> None:
        self.log_batch(params=params)

    def set_tags(self, tags: Mapping[str, Any]) -> None:
        self.log_batch(tags=tags)

    def log_metrics(self, metrics: Mapping[str, float], step: int = 0) -> None:
        self.log_batch(metrics=[Metric(*p) for p in final_points(metrics, step)])

    @_store_write
    def log_dataset(self, dataset) -> None:
        self.patience(
            again_if_duplicate, lambda: mlflow.log_input(_SplitDataset(dataset), context="training")
        )

    def _staged_path(self, artifact_file: str) -> Path:
        path = Path(self._staging.name) / artifact_file
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    def write(self, record: RunRecord) -> None:
        """A run's record in one go: its params, tags and metrics (``log_batch``), its tables
        (Parquet), texts (their secrets masked) and figures written together with what was
        staged before, then its model."""
        for path, columns in record.tables.items():
            pd.DataFrame(dict(columns)).to_parquet(self._staged_path(path), index=False)
        for path, text in record.texts.items():
            self._staged_path(path).write_text(mask(text))
        for path, figure in record.figures.items():
            figure.savefig(self._staged_path(path))
        self.log_batch(record.params, record.tags, [Metric(*p) for p in record.metrics])
        self.upload_staged()
        if record.model is not None:
            self.log_model(*record.model)

    @_store_write
    def upload_staged(self) -> None:
        """Write every staged artifact in one call, and empty the staging folder."""
        folder = Path(self._staging.name)
        if any(folder.iterdir()):
            self.client.log_artifacts(self.run_id, str(folder))
            for child in folder.iterdir():
                shutil.rmtree(child) if child.is_dir() else child.unlink()

    @_store_write
    def log_artifacts(self, folder: str | os.PathLike, artifact_path: str | None = None) -> None:
        self.client.log_artifacts(self.run_id, str(folder), artifact_path)

    @_store_write
    def log_model(self, estimator, X_example, name: str = "model") -> None:
        """Log the fitted estimator (scikit-learn flavor) with signature and input example."""
        from svmlab.tracking.models import log_sklearn_model

        self.patience(log_sklearn_model, estimator, X_example, name)
