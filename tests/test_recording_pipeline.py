"""One recipe for every training run: a `svmlab train` run and a tune trial of the same config
record the same params, tags, metrics, dataset input and artifacts (``svmlab.recording``),
except what a trial leaves out or adds on purpose, listed here with the reason."""

import pytest
from mlflow import MlflowClient

from support.runs import SUPPORT_CONF, runs, train
from svmlab.app import cli

#: BSGD: a fast solver with records (its merges), a traced held-out accuracy, support vectors
CONFIG = (
    "solver=bsgd",
    "kernel=rbf",
    "kernel.gamma=0.05",
    "solver.budget=20",
    "solver.epochs=2",
    "tracking.log_model=true",
)

#: metrics only a trial logs: its fold scores, their summary, the pruner's checkpoints
TRIAL_ONLY_METRICS = {
    "cv_accuracy",
    "cv_accuracy_mean",
    "cv_accuracy_std",
    "n_folds",  # the fold scores
    "max_rel_gap_hinge_l2",  # the worst certified gap over the folds
    "checkpoint_accuracy",  # the validation accuracy reported to the pruner mid-fit
}
#: tags only a trial has: its place in the study (nested under the study's run)
TRIAL_ONLY_TAGS = {
    "svmlab.role",
    "svmlab.study",
    "svmlab.trial",
    "svmlab.trial_state",
    "mlflow.parentRunId",
}
#: tags whose values are the config's, not the fit's or the process's
CONFIG_TAGS = (
    "solver",
    "dataset",
    "kernel",
    "seed",
    "svmlab.version",
    "svmlab.git_commit",
    "svmlab.config_sha256",
    "svmlab.formulation",
    "svmlab.stopping_rule",
)
#: artifacts only a trial logs: the later folds' traces and records
TRIAL_ONLY_ARTIFACTS = {"trace/fold1.parquet", "records/fold1", "records/fold1/merges.parquet"}


def artifacts(client: MlflowClient, run_id: str, path: str | None = None) -> set[str]:
    """The run's artifact paths, folders opened."""
    found = set()
    for item in client.list_artifacts(run_id, path):
        found.add(item.path)
        if item.is_dir:
            found |= artifacts(client, run_id, item.path)
    return found


def inputs(run) -> list[tuple]:
    return [
        (
            i.dataset.name,
            i.dataset.digest,
            i.dataset.source,
            i.dataset.profile,
            sorted((t.key, t.value) for t in i.tags),
        )
        for i in run.inputs.dataset_inputs
    ]


@pytest.fixture(scope="module")
def train_and_trial(tmp_path_factory):
    """A `svmlab train` run and a one-trial study (2 folds) of the same config, one store."""
    folder = tmp_path_factory.mktemp("pipeline")
    store = folder / "mlflow.db"
    assert train(store, *CONFIG, "solver.C=2.0") == 0
    assert (
        cli.main(
            [
                "tune",
                "--storage",
                f"sqlite:///{folder / 'optuna.db'}",
                "--study",
                "s",
                "--trials",
                "1",
                "--cv",
                "2",
                "--sampler",
                "grid",
                "--pruner",
                "none",
                "--no-refit",
                f"tracking.uri=sqlite:///{store}",
                f"hydra.searchpath=[file://{SUPPORT_CONF}]",
                *CONFIG,
                "solver.C=choice(2.0)",
            ]
        )
        == 0
    )
    by_role = {r.data.tags.get("svmlab.role"): r for r in runs(store)}
    return MlflowClient(f"sqlite:///{store}"), by_role[None], by_role["trial"]


def test_a_trial_logs_the_params_and_tags_of_a_training_run(train_and_trial):
    _, run, trial = train_and_trial
    assert trial.data.params == run.data.params
    assert set(trial.data.tags) - TRIAL_ONLY_TAGS == set(run.data.tags)
    assert {k: trial.data.tags[k] for k in CONFIG_TAGS} == {
        k: run.data.tags[k] for k in CONFIG_TAGS
    }


def test_a_trial_logs_the_metrics_of_a_training_run_and_its_fold_scores(train_and_trial):
    _, run, trial = train_and_trial
    assert set(trial.data.metrics) - TRIAL_ONLY_METRICS == set(run.data.metrics)
    assert set(trial.data.metrics) >= TRIAL_ONLY_METRICS
    assert {"n_support", "trace/test_accuracy", "compile_time_s"} <= set(run.data.metrics)


def test_a_trial_logs_the_dataset_input_and_artifacts_of_a_training_run(train_and_trial):
    client, run, trial = train_and_trial
    assert inputs(trial) == inputs(run) and len(inputs(run)) == 1
    run_files = artifacts(client, run.info.run_id)
    trial_files = artifacts(client, trial.info.run_id)
    assert {
        "config/config.yaml",
        "config/overrides.yaml",
        "trace/trace.parquet",
        "records/merges.parquet",
    } <= run_files
    assert run_files == trial_files - TRIAL_ONLY_ARTIFACTS
    assert trial_files >= TRIAL_ONLY_ARTIFACTS


def test_only_a_training_run_logs_the_model(train_and_trial):
    """A fold's model saw part of the training set: the study's refit logs the chosen one."""
    _, run, trial = train_and_trial
    assert len(run.outputs.model_outputs) == 1 and trial.outputs.model_outputs == []


def test_each_fold_of_a_trial_is_recorded_at_its_step(train_and_trial):
    client, _, trial = train_and_trial
    for name in ("fit_time_s", "test_accuracy", "rel_gap_hinge_l2", "cv_accuracy"):
        assert [m.step for m in client.get_metric_history(trial.info.run_id, name)] == [0, 1]
