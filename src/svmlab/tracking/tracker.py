"""One MLflow run at a time: :class:`Tracker`, used by training runs and analysis runs alike.

A Tracker is a context manager around one MLflow run. It logs params, tags, the dataset as a
run input, final metrics, the convergence trace, artifacts and the model. Whatever happens inside
the block, the run ends: FINISHED, FAILED (exception, error recorded) or KILLED (Ctrl-C,
SIGTERM: ``svmlab.lifecycle``). Every write waits out a store that is briefly locked or
unreachable (``svmlab.tracking.patience``, ``wait_s``). A run whose process dies without ending
it (SIGKILL, a lost machine) is found by its host, pid and heartbeat tags and ended by the reap
(``svmlab.tracking.liveness``).

Everything goes through MLflow's public API, in few calls: params, tags and metrics in one
``log_batch`` each time (as many as MLflow's limits per call allow), artifacts staged in a local
folder and written together by :meth:`Tracker.upload_staged` (what is staged when a run fails is
written as it ends). The convergence trace is written after the fit, off the solver's clock:
the whole trace as the artifact ``trace/trace.parquet``, and at most
``MAX_HISTORY_POINTS`` rows of it (log-spaced in the iteration, the first and the last always
among them) as metric histories ``trace/<column>`` written with ``log_batch``; a history's step is
the iteration and its timestamp the fit's start plus the solver's elapsed time, so the UI's
relative-time axis is solver time.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import tempfile
import time
import traceback
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import mlflow
import numpy as np
import pandas as pd
from mlflow import MlflowClient
from mlflow.data.code_dataset_source import CodeDatasetSource
from mlflow.data.meta_dataset import MetaDataset
from mlflow.entities import Metric, Param, RunStatus, RunTag

from svmlab.estimator.trace import certified_gap
from svmlab.lifecycle import DeferredSignals, start_tags
from svmlab.masking import mask
from svmlab.tracking.liveness import ERROR_TAG, RunHeartbeat
from svmlab.tracking.patience import WAIT_S, Patience, PatientClient
from svmlab.tracking.store import again_if_duplicate, ensure_experiment, ui_line

TRACE_PREFIX = "trace/"
TRACE_ARTIFACT = "trace/trace.parquet"
MAX_HISTORY_POINTS = 250  # rows of a trace kept as metric histories (a chart shows no more)
MAX_BATCH = 1000  # MLflow's limit on metrics per log_batch call (params, tags and metrics)
MAX_PARAMS = 100  # and on params per call (tags likewise)


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


def final_metrics(metrics: Mapping[str, float], step: int = 0) -> list[Metric]:
    """Final values as MLflow metrics, stamped now, at ``step`` (e.g. the last iteration)."""
    now = int(time.time() * 1000)
    return [Metric(k, float(v), now, step) for k, v in metrics.items()]


def history_rows(iterations: np.ndarray, max_points: int = MAX_HISTORY_POINTS) -> np.ndarray:
    """Indices of at most ``max_points`` rows of a trace, log-spaced in the iteration.

    The rows nearest to (at or after) log-spaced targets between the first and the last
    iteration; the first and the last row are always included.
    """
    n = len(iterations)
    if n <= max_points:
        return np.arange(n)
    first, last = float(iterations[0]), float(iterations[-1])
    targets = first - 1.0 + np.geomspace(1.0, last - first + 1.0, max_points - 1)
    rows = np.searchsorted(iterations, targets, side="left")
    return np.unique(np.concatenate([[0], np.minimum(rows, n - 1), [n - 1]]))


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

    def __init__(self, uri: str | None, experiment: str, run_name: str | None = None,
                 parent_run_id: str | None = None, wait_s: float = WAIT_S,
                 shared: Path | None = None):
        self.uri = uri
        self.wait_s = wait_s
        self.shared = shared
        self.experiment = experiment
        self.run_name = run_name
        self.parent_run_id = parent_run_id
        self.run_id: str | None = None
        self.experiment_id: str | None = None
        self._start_ms = 0
        self._signals = DeferredSignals()
        self._heartbeat: RunHeartbeat | None = None

    # -- run lifecycle -------------------------------------------------------------------------

    def __enter__(self) -> Tracker:
        if self.uri:
            mlflow.set_tracking_uri(self.uri)
        self.patience = patience = Patience(self.uri, self.wait_s, self.run_name or "",
                                            self._signals.raise_held, self.shared)
        self.client = PatientClient(MlflowClient(), patience)
        project_run = os.environ.get("MLFLOW_RUN_ID")  # under `mlflow run`: the project's run
        experiment_id = (self.client.get_run(project_run).info.experiment_id if project_run
                         else None)
        if experiment_id in (None, DEFAULT_EXPERIMENT_ID):
            experiment_id = patience(ensure_experiment, self.uri, self.experiment)
        else:
            project_run = None  # the project's run is this run
        patience(mlflow.set_experiment, experiment_id=experiment_id)
        with environ_without("MLFLOW_RUN_ID" if project_run else None):
            run = patience(mlflow.start_run, run_name=self.run_name,
                           parent_run_id=self.parent_run_id, tags=start_tags())
        self.run_id, self.experiment_id = run.info.run_id, experiment_id
        if project_run:
            self.client.set_tag(project_run, "mlflow.note.content",
                                f"svmlab logged this run to experiment {self.experiment!r} as run "
                                f"{self.run_id} (`mlflow run --experiment-name NAME` chooses "
                                f"another experiment)")
            self.client.set_tag(project_run, "svmlab.run_id", self.run_id)
        self._start_ms = int(time.time() * 1000)
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
    def log_batch(self, params: Mapping[str, Any] | None = None,
                  tags: Mapping[str, Any] | None = None, metrics: list[Metric] = ()) -> None:
        """Params, tags (None values left out) and metrics in as few ``log_batch`` calls as
        MLflow's limits allow (one for a training run's config, one for its results); a secret
        in a value (a URI's password) is masked."""
        params = [Param(k, mask(str(v))) for k, v in (params or {}).items()]
        tags = [RunTag(k, mask(str(v))) for k, v in (tags or {}).items() if v is not None]
        metrics = list(metrics)
        while params or tags or metrics:
            p, params = params[:MAX_PARAMS], params[MAX_PARAMS:]
            t, tags = tags[:MAX_PARAMS], tags[MAX_PARAMS:]
            m, metrics = (metrics[:MAX_BATCH - len(p) - len(t)],
                          metrics[MAX_BATCH - len(p) - len(t):])
            self.client.log_batch(self.run_id, metrics=m, params=p, tags=t)

    def log_params(self, params: Mapping[str, Any]) -> None:
        self.log_batch(params=params)

    def set_tags(self, tags: Mapping[str, Any]) -> None:
        self.log_batch(tags=tags)

    def log_metrics(self, metrics: Mapping[str, float], step: int = 0) -> None:
        self.log_batch(metrics=final_metrics(metrics, step))

    @_store_write
    def log_dataset(self, dataset) -> None:
        self.patience(again_if_duplicate,
                      lambda: mlflow.log_input(_SplitDataset(dataset), context="training"))

    @_store_write
    def log_text(self, text: str, artifact_file: str) -> None:
        """``text`` (its secrets masked) as the artifact ``artifact_file``."""
        self.client.log_text(self.run_id, mask(text), artifact_file)

    def _staged_path(self, artifact_file: str) -> Path:
        path = Path(self._staging.name) / artifact_file
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    def stage_text(self, text: str, artifact_file: str) -> None:
        """``text`` (its secrets masked) as the artifact ``artifact_file``, written by the next
        `upload_staged`."""
        self._staged_path(artifact_file).write_text(mask(text))

    def stage_columns(self, columns: Mapping[str, np.ndarray], artifact_file: str
                      ) -> pd.DataFrame:
        """Equal-length columns as the Parquet artifact ``artifact_file`` (a trace, or a
        solver's record of events such as a budgeted solver's merges), written by the next
        `upload_staged`; returns the frame."""
        frame = pd.DataFrame(dict(columns))
        frame.to_parquet(self._staged_path(artifact_file), index=False)
        return frame

    def stage_figure(self, figure, artifact_file: str) -> None:
        """A matplotlib figure as the image ``artifact_file``, written by the next
        `upload_staged`."""
        figure.savefig(self._staged_path(artifact_file))

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

    def log_trace(self, columns: Mapping[str, np.ndarray], start_ms: int | None = None) -> None:
        """The convergence trace, written at once: the whole of it as ``trace/trace.parquet``
        and its metric histories (`trace_metrics`)."""
        self.stage_columns(columns, TRACE_ARTIFACT)
        self.upload_staged()
        self.log_batch(metrics=self.trace_metrics(columns, start_ms))

    def trace_metrics(self, columns: Mapping[str, np.ndarray], start_ms: int | None = None
                      ) -> list[Metric]:
        """At most MAX_HISTORY_POINTS log-spaced rows of a trace as the histories
        ``trace/<column>``, and each gap column's order of magnitude as ``trace/log10_<column>``.

        ``columns`` holds 'iteration', 'time_s' (solver seconds) and any float columns;
        ``start_ms`` is the wall-clock time of the fit's start (default: the run's start). A gap
        falls by orders of magnitude, so on the UI's linear axis its first values hide the rest;
        its log10 (rows where it is positive) shows the convergence as the papers draw it.
        """
        base_ms = self._start_ms if start_ms is None else start_ms
        kept = history_rows(np.asarray(columns["iteration"]))
        steps = np.asarray(columns["iteration"])[kept].astype(np.int64)
        stamps = base_ms + np.round(1000.0 * np.asarray(columns["time_s"])[kept]).astype(np.int64)
        metrics = []
        for key, column in columns.items():
            if key == "iteration":
                continue
            values = np.asarray(column, dtype=np.float64)[kept]
            metrics += [Metric(TRACE_PREFIX + key, float(v), int(t), int(k))
                        for v, t, k in zip(values, stamps, steps)]
            if certified_gap(key) or key.endswith("_gap"):
                positive = values > 0  # NaN: the gap was not computed at that row
                metrics += [Metric(f"{TRACE_PREFIX}log10_{key}", float(v), int(t), int(k))
                            for v, t, k in zip(np.log10(values[positive]), stamps[positive],
                                               steps[positive])]
        return metrics

    def log_columns(self, columns: Mapping[str, np.ndarray], artifact_file: str) -> pd.DataFrame:
        """`stage_columns`, written at once."""
        frame = self.stage_columns(columns, artifact_file)
        self.upload_staged()
        return frame

    @_store_write
    def log_model(self, estimator, X_example, name: str = "model") -> None:
        """Log the fitted estimator (scikit-learn flavor) with signature and input example."""
        from svmlab.tracking.models import log_sklearn_model

        self.patience(log_sklearn_model, estimator, X_example, name)
