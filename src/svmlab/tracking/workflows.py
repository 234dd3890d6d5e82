"""The outer run of a workflow: created once, found again by its tags and reopened when the
workflow runs again, so that a second run completes the first instead of repeating it. Its
steps (the sweep's parent run, the analysis and report runs) are its child runs, each tagged
with its role."""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from mlflow import MlflowClient
from mlflow.entities import Metric, Param, RunStatus, RunTag

from svmlab.lifecycle import start_tags
from svmlab.tracking.liveness import RunHeartbeat
from svmlab.tracking.store import ensure_experiment, resolved_uri
from svmlab.tracking.sweeps import JOBS_TABLE
from svmlab.vocabulary import PARENT_TAG, ROLE_TAG, SWEEP_DIR_TAG


class OuterRun:
    """The run of one workflow at one scale in experiment ``experiment``.

    ``tags`` identify it: the latest run carrying them is reopened (``reused``) unless it was
    deleted. Under ``mlflow run`` (``MLFLOW_RUN_ID`` set) the project's run is the outer run; the
    variable is then cleared, so that the runs of the steps are runs of their own.
    """

    def __init__(self, uri: str | None, experiment: str, name: str, tags: dict[str, str]):
        _quiet_downloads()
        self.uri = resolved_uri(uri)
        self.experiment_id = ensure_experiment(self.uri, experiment)
        self.client = MlflowClient(self.uri)
        project_run = os.environ.pop("MLFLOW_RUN_ID", None)
        found = None if project_run else self._find(tags)
        self.reused = found is not None
        if project_run:
            self.run_id = project_run
        elif found:
            self.run_id = found
            self.client.update_run(found, status="RUNNING")
        else:
            self.run_id = self.client.create_run(self.experiment_id, run_name=name).info.run_id
        # its process and a heartbeat, as every run svmlab opens: a step's reap (a sweep's, at
        # its start) must see the outer run alive however long the steps before it took
        self.client.log_batch(
            self.run_id,
            tags=[
                RunTag(k, str(v)) for k, v in {**tags, ROLE_TAG: "workflow", **start_tags()}.items()
            ],
        )
        self.heartbeat = RunHeartbeat(self.uri, self.run_id).start()

    def _find(self, tags: dict[str, str]) -> str | None:
        runs = self.client.search_runs(
            [self.experiment_id],
            _outer_filter(tags),
            max_results=1,
            order_by=["attributes.start_time DESC"],
        )
        return runs[0].info.run_id if runs else None

    def latest(self, role: str, tags: dict[str, str] | None = None) -> tuple[str, str] | None:
        """(run id, status) of the latest child run with the role ``role`` (sweep, analysis,
        report) and ``tags``, or None."""
        conditions = {PARENT_TAG: self.run_id, ROLE_TAG: role, **(tags or {})}
        runs = self.client.search_runs(
            [self.experiment_id],
            " and ".join(f"tags.`{k}` = '{v}'" for k, v in conditions.items()),
            max_results=1,
            order_by=["attributes.start_time DESC"],
        )
        return (runs[0].info.run_id, runs[0].info.status) if runs else None

    def done(self, role: str, tags: dict[str, str] | None = None) -> str | None:
        """The id of the latest child run with the role ``role`` (and ``tags``) if it
        FINISHED, else None."""
        latest = self.latest(role, tags)
        return latest[0] if latest and latest[1] == "FINISHED" else None

    def listed_runs(self, sweep_run_id: str) -> set[str]:
        """The runs a sweep listed in its jobs table: those its jobs trained, and for a job
        skipped under ``+resume=true`` the run that FINISHED before with the same config; none
        when the sweep ended without a table."""
        if JOBS_TABLE not in self.artifacts(sweep_run_id):
            return set()
        with tempfile.TemporaryDirectory() as folder:
            path = self.client.download_artifacts(sweep_run_id, JOBS_TABLE, folder)
            lines = Path(path).read_text().splitlines()[1:]
        return {line.split("\t")[5] for line in lines if line.split("\t")[5]}

    def swept_runs(self, folders: list[str]) -> set[str]:
        """The runs of this workflow's current sweep: those listed by the latest sweep run in
        each sweep folder of ``folders``; runs of the experiment that no current sweep listed
        (a dataset since removed, another scale's settings) are not among them."""
        found = set()
        for folder in folders:
            latest = self.latest("sweep", {SWEEP_DIR_TAG: str(Path(folder).resolve())})
            if latest:
                found |= self.listed_runs(latest[0])
        return found

    def missing_jobs(self, sweep_run_id: str) -> list[str]:
        """The runs a finished sweep listed (finished or skipped jobs) that are no longer
        FINISHED runs of the experiment: deleted, or replaced by nothing."""
        listed = self.listed_runs(sweep_run_id)
        finished, token = set(), None
        while True:
            page = self.client.search_runs(
                [self.experiment_id], "attributes.status = 'FINISHED'", page_token=token
            )
            finished |= {r.info.run_id for r in page}
            token = page.token
            if not token:
                return sorted(listed - finished)

    def copy_artifacts(
        self, source_run_id: str, wanted: Callable[[str], bool], destination: str
    ) -> list[str]:
        """Copy the artifacts of another run whose paths ``wanted`` accepts to ``destination``
        of this run, under the same relative paths; returns the paths copied."""
        copied = []
        with tempfile.TemporaryDirectory() as folder:
            for path in self.artifacts(source_run_id):
                if wanted(path):
                    local = self.client.download_artifacts(source_run_id, path, folder)
                    self.client.log_artifact(
                        self.run_id, local, str(Path(destination) / Path(path).parent)
                    )
                    copied.append(path)
        return copied

    def download(self, folder: str, into: str | os.PathLike) -> dict[str, Path]:
        """This run's artifacts under ``folder``, downloaded into ``into``: {artifact path:
        local path}."""
        return {
            path: Path(self.client.download_artifacts(self.run_id, path, str(into)))
            for path in self.artifacts(folder=folder)
        }

    def artifacts(self, run_id: str | None = None, folder: str = "") -> list[str]:
        """The paths of every artifact of a run (default: this one) under ``folder``."""
        paths = []
        for item in self.client.list_artifacts(run_id or self.run_id, folder or None):
            paths += self.artifacts(run_id, item.path) if item.is_dir else [item.path]
        return paths

    def log(self, folder: str | os.PathLike, metrics: dict[str, float]) -> None:
        """Log the files of ``folder`` as artifacts and ``metrics`` (step 0)."""
        self.client.log_artifacts(self.run_id, str(folder))
        self.log_values({}, metrics)

    def log_values(self, params: dict, metrics: dict[str, float]) -> None:
        """Log ``params`` and ``metrics`` (step 0) on the run."""
        now = int(time.time() * 1000)
        self.client.log_batch(
            self.run_id,
            params=[Param(k, str(v)) for k, v in params.items()],
            metrics=[Metric(k, float(v), now, 0) for k, v in metrics.items()],
        )

    def end(self, status: str) -> None:
        """End the run FINISHED, FAILED or KILLED."""
        self.heartbeat.stop()
        self.client.set_terminated(self.run_id, RunStatus.to_string(getattr(RunStatus, status)))


def _quiet_downloads() -> None:
    """No MLflow progress bar per copied file: it would bury the lines the commands print."""
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")


def _outer_filter(tags: dict[str, str]) -> str:
    """The search filter of the outer runs carrying ``tags``."""
    return " and ".join(f"tags.`{k}` = '{v}'" for k, v in {**tags, ROLE_TAG: "workflow"}.items())


def latest_claims(uri: str | None, experiment: str, tags: dict[str, str]) -> tuple[str, str] | None:
    """(run id, text of ``claims.csv``) of the outer run carrying ``tags`` in ``experiment`` that
    FINISHED last, or None when there is none."""
    _quiet_downloads()
    client = MlflowClient(resolved_uri(uri))
    found = client.get_experiment_by_name(experiment)
    if found is None:
        return None
    runs = client.search_runs(
        [found.experiment_id],
        f"{_outer_filter(tags)} and attributes.status = 'FINISHED'",
        max_results=1,
        order_by=["attributes.end_time DESC"],
    )
    if not runs:
        return None
    with tempfile.TemporaryDirectory() as folder:
        path = client.download_artifacts(runs[0].info.run_id, "claims.csv", folder)
        return runs[0].info.run_id, Path(path).read_text()
