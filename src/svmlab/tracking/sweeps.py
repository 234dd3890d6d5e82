"""The parent run of a sweep: created by the launching process, ended once with the outcome."""

from __future__ import annotations

from pathlib import Path

from mlflow import MlflowClient
from mlflow.entities import Metric, Param, RunStatus

from svmlab.lifecycle import start_tags
from svmlab.masking import mask
from svmlab.tracking.liveness import RunHeartbeat
from svmlab.tracking.patience import WAIT_S, Patience, PatientClient
from svmlab.tracking.store import ensure_experiment, resolved_uri
from svmlab.vocabulary import ERROR_TAG, PARENT_TAG, ROLE_TAG, SWEEP_DIR_TAG

JOBS_TABLE = "jobs.tsv"  # the sweep's jobs, one line each, with the run each trained or reused
#: Set by a workflow: the run its sweep's parent run is nested under.
PARENT_ENV = "SVMLAB_PARENT_RUN_ID"


class ParentRun:
    """The sweep's parent run in experiment ``experiment`` of the store at ``uri``.

    Its params record the overrides, the launcher and the number of jobs; ``end`` logs the
    counts per outcome (metrics ``jobs_<status>``) and the jobs table, then ends the run. With
    ``parent_run_id`` (a workflow's run) it is nested under that run. Like every run it carries
    its process and a heartbeat; a parent that cannot be set up is ended FAILED at once.
    ``shared``: the sweep's state folder, where its processes share one wait for the store.
    """

    def __init__(
        self,
        uri: str | None,
        experiment: str,
        name: str,
        sweep_dir: str,
        params: dict,
        overrides_yaml: str,
        parent_run_id: str | None = None,
        wait_s: float = WAIT_S,
        shared: Path | None = None,
    ):
        self.uri = resolved_uri(uri)
        self.nested = bool(parent_run_id)
        patience = Patience(self.uri, wait_s, "the sweep", shared=shared)
        experiment_id = patience(ensure_experiment, self.uri, experiment)
        self.client = PatientClient(MlflowClient(self.uri), patience)
        tags = {SWEEP_DIR_TAG: sweep_dir, ROLE_TAG: "sweep", **start_tags()}
        if parent_run_id:
            tags[PARENT_TAG] = parent_run_id
        run = self.client.create_run(experiment_id, run_name=name, tags=tags)
        self.experiment_id = experiment_id
        self.run_id: str | None = run.info.run_id
        self.heartbeat = RunHeartbeat(self.uri, self.run_id).start()
        try:
            self.client.log_batch(
                self.run_id, params=[Param(k, mask(str(v))[:6000]) for k, v in params.items()]
            )
            self.client.log_text(self.run_id, mask(overrides_yaml), "overrides.yaml")
        except Exception as exc:
            self.fail(exc)
            raise

    def fail(self, exc: BaseException) -> None:
        """End the run FAILED with the error (the sweep could not start or could not end)."""
        if self.run_id is not None:
            self.client.set_tag(self.run_id, ERROR_TAG, mask(f"{type(exc).__name__}: {exc}")[:5000])
            self.end("FAILED")

    def end(
        self, status: str, counts: dict[str, int] | None = None, jobs_table: str | None = None
    ) -> None:
        """End the run once (FINISHED, FAILED or KILLED); later calls do nothing."""
        if self.run_id is None:
            return
        run_id, self.run_id = self.run_id, None
        self.heartbeat.stop()
        if counts:
            self.client.log_batch(
                run_id, metrics=[Metric(f"jobs_{k}", float(v), 0, 0) for k, v in counts.items()]
            )
        if jobs_table is not None:
            self.client.log_text(run_id, mask(jobs_table), JOBS_TABLE)
        self.client.set_terminated(run_id, RunStatus.to_string(getattr(RunStatus, status)))

    def discard(self) -> None:
        """End and delete the run: a resumed sweep that had nothing to do adds no run."""
        run_id = self.run_id
        self.end("FINISHED")
        if run_id is not None:
            self.client.delete_run(run_id)
