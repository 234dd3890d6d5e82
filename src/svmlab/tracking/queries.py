"""Reading runs back: the searches that resume and the analysis stage need."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Mapping
from pathlib import Path

import pandas as pd
from mlflow import MlflowClient
from mlflow.exceptions import MlflowException
from mlflow.tracking.client import SEARCH_MAX_RESULTS_DEFAULT

from svmlab.errors import SvmlabError
from svmlab.masking import mask
from svmlab.tracking import columns
from svmlab.tracking.store import resolved_uri, ui_line, ui_url
from svmlab.vocabulary import ROLE_TAG, TRACE_ARTIFACT


def find_finished_run(uri: str | None, experiment: str, tags: Mapping[str, str]) -> str | None:
    """The id of a FINISHED training run of ``experiment`` carrying all ``tags``, or None. Runs
    with a role (a study's trials, scored on part of the training set; its refit) are not
    training runs of their config: the analysis leaves them out, so resume does too."""
    client = MlflowClient(resolved_uri(uri))
    found = client.get_experiment_by_name(experiment)
    if found is None:
        return None
    runs = client.search_runs([found.experiment_id], matching(tags, "FINISHED"))
    return next((r.info.run_id for r in runs if ROLE_TAG not in r.data.tags), None)


def matching(tags: Mapping[str, str], status: str | None = None) -> str:
    """The filter of the runs that carry all ``tags`` (and have ``status``)."""
    conditions = [f"tags.`{key}` = '{value}'" for key, value in tags.items()]
    return " and ".join(conditions + ([f"attributes.status = '{status}'"] if status else []))


def experiment_ids(uri: str | None, names: list[str] | None) -> list[str]:
    """The ids of the named experiments (None: of every experiment); SvmlabError naming the
    unknown ones and the known."""
    client = MlflowClient(resolved_uri(uri))
    known = {e.name: e.experiment_id for e in client.search_experiments()}
    if names is None:
        return list(known.values())
    unknown = [name for name in names if name not in known]
    if unknown:
        raise SvmlabError(
            f"unknown experiment(s) {', '.join(unknown)}; the store "
            f"{mask(client.tracking_uri)} has: {', '.join(sorted(known)) or 'none'}"
        )
    return [known[name] for name in names]


def search_runs(
    uri: str | None, experiment_ids: list[str], filter_string: str = "", latest: int | None = None
) -> pd.DataFrame:
    """One row per run, oldest first: run_id, experiment_id, status and one column per param,
    tag and metric and per number of the profile of the run's dataset (``n_train``), named by
    ``tracking.columns`` (the layout of ``mlflow.search_runs``, without touching the global
    store). With ``latest``, the latest that many runs only.

    A filter MLflow cannot parse raises SvmlabError with MLflow's message.
    """
    client = MlflowClient(resolved_uri(uri))
    rows, token = [], None
    order = "DESC" if latest else "ASC"
    while True:
        try:
            page = client.search_runs(
                experiment_ids,
                filter_string,
                page_token=token,
                max_results=latest or SEARCH_MAX_RESULTS_DEFAULT,
                order_by=[f"attributes.start_time {order}"],
            )
        except MlflowException as exc:
            raise SvmlabError(f"bad filter {filter_string!r}: {exc.message}") from None
        rows += [
            {
                "run_id": r.info.run_id,
                "experiment_id": r.info.experiment_id,
                "status": r.info.status,
                **{columns.param(k): v for k, v in r.data.params.items()},
                **{columns.tag(k): v for k, v in r.data.tags.items()},
                **{columns.metric(k): v for k, v in r.data.metrics.items()},
                **_profile(r),
            }
            for r in page
        ]
        token = None if latest else page.token
        if not token:
            return pd.DataFrame(rows[::-1] if latest else rows)


def find_run(uri: str | None, run_id: str):
    """The run ``run_id`` of the store at ``uri``; SvmlabError when the store has none."""
    try:
        return MlflowClient(resolved_uri(uri)).get_run(run_id)
    except MlflowException as exc:
        if exc.error_code != "RESOURCE_DOES_NOT_EXIST":
            raise
        raise SvmlabError(
            f"no run {run_id} in the tracking store {mask(resolved_uri(uri))}; "
            f"the MLflow UI or svmlab analyze names the runs"
        ) from None


def run_ui_line(uri: str | None, run_id: str) -> str:
    """Where the MLflow UI shows the run ``run_id`` and its experiment's runs."""
    return ui_line(resolved_uri(uri), find_run(uri, run_id).info.experiment_id, run_id)


def _profile(run) -> dict[str, float]:
    """The numbers of the profile of the run's dataset input (``inputs.n_train``, ...)."""
    found = {}
    for item in run.inputs.dataset_inputs if run.inputs else ():
        profile = json.loads(item.dataset.profile or "{}")
        found |= {
            columns.profile(k): v
            for k, v in profile.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool)
        }
    return found


def artifact_paths(uri: str | None, run_id: str) -> list[str]:
    """The paths of a run's artifacts, files and folders (those end in '/'), to two levels."""
    client = MlflowClient(resolved_uri(uri))
    found = []
    for item in client.list_artifacts(run_id):
        found.append(item.path + "/" if item.is_dir else item.path)
        if item.is_dir:
            found += [
                f.path + ("/" if f.is_dir else "") for f in client.list_artifacts(run_id, item.path)
            ]
    return found


def logged_metrics(uri: str | None, run_id: str) -> set[str]:
    """The names of the metrics a run logged."""
    return set(MlflowClient(resolved_uri(uri)).get_run(run_id).data.metrics)


def metric_history(uri: str | None, run_id: str, key: str) -> pd.Series:
    """A metric's history: value by step."""
    points = MlflowClient(resolved_uri(uri)).get_metric_history(run_id, key)
    return pd.Series({p.step: p.value for p in points}, dtype=float).sort_index()


def load_trace(uri: str | None, run_id: str) -> pd.DataFrame:
    """The whole convergence trace a run logged (``trace/trace.parquet``)."""
    client = MlflowClient(resolved_uri(uri))
    with tempfile.TemporaryDirectory() as folder:
        path = client.download_artifacts(run_id, TRACE_ARTIFACT, folder)
        return pd.read_parquet(Path(path))


def artifact_location(uri: str | None, run_id: str, path: str) -> str:
    """Where artifact ``path`` of a run is: a file path for a local artifact store, the MLflow
    UI's view of it for artifacts a tracking server serves, else its URI."""
    info = MlflowClient(resolved_uri(uri)).get_run(run_id).info
    location = f"{info.artifact_uri.rstrip('/')}/{path}"
    if location.startswith("mlflow-artifacts:") and resolved_uri(uri).startswith("http"):
        return ui_url(resolved_uri(uri), info.experiment_id, run_id, path)
    return location.removeprefix("file://")
