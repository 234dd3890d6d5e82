"""A hyper-parameter study in MLflow: one parent run per study, each trial a nested run.

The parent run is found by its tags (``svmlab.role`` = study, ``svmlab.study`` = the study's
name) in the experiment, so a second invocation of the same study, or a worker on another
machine, files its trials under the same parent. Two processes that create it at once both
search again after creating theirs, keep the oldest and delete the other.
"""

from __future__ import annotations

import time

from mlflow import MlflowClient
from mlflow.entities import Metric, Param, RunStatus, RunTag

from svmlab.lifecycle import start_tags
from svmlab.masking import mask
from svmlab.tracking.liveness import RunHeartbeat
from svmlab.tracking.patience import Patience
from svmlab.tracking.store import ensure_experiment, resolved_uri
from svmlab.vocabulary import (
    ERROR_TAG,
    PARENT_TAG,
    REFIT_TAG,
    REFIT_TRIAL_TAG,
    ROLE_TAG,
    STORAGE_TAG,
    STUDY_TAG,
    TRIAL_STATE_TAG,
)


class StudyRun:
    """The parent run of study ``name`` in ``experiment``; opened RUNNING by :meth:`open`."""

    def __init__(self, uri: str | None, experiment: str, name: str):
        self.uri = resolved_uri(uri)
        self.experiment_id = ensure_experiment(self.uri, experiment)
        self.client = MlflowClient(self.uri)
        self.name = name
        self.run_id: str | None = None
        self.heartbeat: RunHeartbeat | None = None
        #: the last refit: (run id, trial number, its metrics)
        self.refit: tuple[str, str, dict] | None = None

    def _find(self) -> list:
        query = f"tags.`{ROLE_TAG}` = 'study' and tags.`{STUDY_TAG}` = '{self.name}'"
        return self.client.search_runs(
            [self.experiment_id], query, order_by=["attributes.start_time ASC"]
        )

    def finished(self) -> bool:
        """Whether the parent run exists and the last invocation of the study ended it
        FINISHED."""
        found = self._find()
        return bool(found) and found[0].info.status == "FINISHED"

    def open(self, params: dict, storage: str, parent_run_id: str | None = None) -> str:
        """Find or create the parent run (nested under ``parent_run_id`` when given), mark it
        RUNNING in this process; returns its id."""
        found = self._find()
        if found:
            self.run_id = found[0].info.run_id
            tags = found[0].data.tags
            if REFIT_TAG in tags:
                metrics = self.client.get_run(tags[REFIT_TAG]).data.metrics
                self.refit = tags[REFIT_TAG], tags.get(REFIT_TRIAL_TAG), metrics
            self.client.update_run(self.run_id, RunStatus.to_string(RunStatus.RUNNING))
            self.client.log_batch(self.run_id, tags=[RunTag(k, v) for k, v in start_tags().items()])
        else:
            tags = {
                ROLE_TAG: "study",
                STUDY_TAG: self.name,
                STORAGE_TAG: mask(storage),
                **start_tags(),
            }
            if parent_run_id:
                tags[PARENT_TAG] = parent_run_id
            mine = self.client.create_run(self.experiment_id, run_name=self.name, tags=tags)
            oldest = self._find()[0].info.run_id  # a concurrent creator may have been first
            if oldest != mine.info.run_id:
                self.client.delete_run(mine.info.run_id)
            else:
                self.client.log_batch(
                    mine.info.run_id,
                    params=[Param(k, mask(str(v))[:6000]) for k, v in params.items()],
                )
            self.run_id = oldest
        self.heartbeat = RunHeartbeat(self.uri, self.run_id).start()
        return self.run_id

    def log_summary(
        self,
        metrics: dict[str, float],
        texts: dict[str, str],
        figures: dict,
        refit: tuple[str, int] | None,
    ) -> None:
        """The study's outcome on the parent: metrics, text artifacts, figures (closed), and
        the refit run (run id, trial number), which is tagged as such."""
        import matplotlib.pyplot as plt

        now = int(time.time() * 1000)
        self.client.log_batch(
            self.run_id, metrics=[Metric(k, float(v), now, 0) for k, v in metrics.items()]
        )
        for path, text in texts.items():
            self.client.log_text(self.run_id, mask(text), path)
        for path, figure in figures.items():
            try:
                self.client.log_figure(self.run_id, figure, path)
            finally:
                plt.close(figure)
        if refit:
            run_id, trial = refit
            self.client.log_batch(
                self.run_id, tags=[RunTag(REFIT_TAG, run_id), RunTag(REFIT_TRIAL_TAG, str(trial))]
            )
            self.client.log_batch(
                run_id, tags=[RunTag(ROLE_TAG, "refit"), RunTag(STUDY_TAG, self.name)]
            )

    def end(self, status: str, error: str | None = None) -> None:
        """End the parent run (FINISHED, FAILED or KILLED); later calls do nothing."""
        if self.run_id is None:
            return
        run_id, self.run_id = self.run_id, None
        if self.heartbeat is not None:
            self.heartbeat.stop()
        patience = Patience(self.uri, who=f"study {self.name}")
        if error:
            patience(self.client.set_tag, run_id, ERROR_TAG, mask(error)[:5000])
        patience(self.client.set_terminated, run_id, status)


def fail_run(uri: str | None, run_id: str, reason: str) -> bool:
    """End a trial's run FAILED with ``reason`` if it is still RUNNING; True if it was."""
    client = MlflowClient(resolved_uri(uri))
    run = client.get_run(run_id)
    if run.info.status != "RUNNING":
        return False
    client.set_tag(run_id, ERROR_TAG, f"ended by svmlab: {reason}")
    client.set_tag(run_id, TRIAL_STATE_TAG, "FAIL")
    client.set_terminated(run_id, RunStatus.to_string(RunStatus.FAILED))
    return True


def trial_runs(uri: str | None, parent_run_id: str) -> list:
    """The nested runs of a study's parent run, oldest first."""
    client = MlflowClient(resolved_uri(uri))
    parent = client.get_run(parent_run_id)
    return client.search_runs(
        [parent.info.experiment_id],
        f"tags.`{PARENT_TAG}` = '{parent_run_id}'",
        order_by=["attributes.start_time ASC"],
    )


def study_figures(study) -> dict:
    """Optuna's plots of a study (matplotlib): optimisation history, parameter importances
    (two or more finished trials) and contour (two or more parameters), by artifact path."""
    import warnings

    import matplotlib

    matplotlib.use("Agg")
    from optuna.visualization import matplotlib as plots

    complete = [t for t in study.trials if t.state.name == "COMPLETE"]
    wanted = {"plots/optimization_history.png": plots.plot_optimization_history}
    if len(complete) >= 2:
        wanted["plots/param_importances.png"] = plots.plot_param_importances
    if len({k for t in complete for k in t.params}) >= 2:
        wanted["plots/contour.png"] = plots.plot_contour
    figures = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Optuna marks its matplotlib backend experimental
        for path, plot in wanted.items():
            axes = plot(study)
            first = axes.flat[0] if hasattr(axes, "flat") else axes
            figures[path] = first.get_figure()
    return figures
