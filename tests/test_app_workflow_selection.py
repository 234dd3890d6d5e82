"""A workflow's selection step: one grid study per dataset on a seeded validation split, the
best value checked against fits by hand on the same split, an interrupted workflow that leaves
nothing RUNNING and whose study continues without training a point twice, the sweep trained at
each dataset's value, and bad input."""

from dataclasses import replace
from pathlib import Path

import mlflow
import numpy as np
import optuna
import pytest
import yaml
from mlflow import MlflowClient
from omegaconf import OmegaConf
from optuna.trial import TrialState
from sklearn.model_selection import StratifiedShuffleSplit

from support.configs import composed
from support.runs import SUPPORT_CONF
from svmlab import data
from svmlab.app import cli, workflow_selection
from svmlab.app.config.schema import build_estimator
from svmlab.app.workflow import sweep_arguments
from svmlab.tuning import trial as tuning_trial
from svmlab.workflows import spec

SELECT = Path(__file__).parent / "support" / "workflows" / "select.yaml"
GRID = [2.0**-12, 2.0**-6, 2.0**2]  # select.yaml's grid


def extra(folder: Path) -> list[str]:
    return [f"hydra.searchpath=[file://{SUPPORT_CONF}]", f"hydra.sweep.dir={folder}/multirun"]


def by_hand(dataset: str) -> tuple[float, float]:
    """(C, validation accuracy) of the best C: LIBLINEAR fitted on 70 % of the training set (the
    split drawn with seed 0) and scored on the other 30 %; the best must be unique."""
    cfg = composed(
        f"hydra.searchpath=[file://{SUPPORT_CONF}]",
        "+experiment=tiny",
        "solver=liblinear",
        f"dataset={dataset}",
        "seed=0",
    )
    loaded = data.load(
        **OmegaConf.to_container(cfg.dataset, resolve=True),
        seed=0,
        data_dir=cfg.paths.data_dir,
        cache_dir=cfg.paths.cache_dir,
    )
    ((fit, valid),) = StratifiedShuffleSplit(1, test_size=0.3, random_state=0).split(
        loaded.X_train, loaded.y_train
    )
    scores = []
    for c in GRID:
        cfg.solver.C = c
        model = build_estimator(cfg).fit(loaded.X_train[fit], loaded.y_train[fit])
        scores.append(float(np.mean(model.predict(loaded.X_train[valid]) == loaded.y_train[valid])))
    best = int(np.argmax(scores))
    assert scores.count(scores[best]) == 1, scores
    return GRID[best], scores[best]


def runs_of(store: Path, role: str | None = None) -> list:
    client = MlflowClient(f"sqlite:///{store}")
    found = client.get_experiment_by_name("workflow-select-quick")
    runs = client.search_runs([found.experiment_id], order_by=["attributes.start_time ASC"])
    return [r for r in runs if r.data.tags.get("svmlab.role") == role]


def test_the_best_validation_score_is_selected_per_dataset_and_an_interrupted_study_resumes(
    store, tmp_path, monkeypatch, capsys
):
    workflow = spec.load(str(SELECT))
    uri, storage = f"sqlite:///{store}", f"sqlite:///{tmp_path / 'optuna.db'}"
    arguments = sweep_arguments(workflow, "quick", uri, "basic", None, extra(tmp_path))
    assert workflow_selection.datasets(arguments) == ["breast_cancer", "synthetic_gaussian"]

    real, started = tuning_trial.fit_fold, []

    def ctrl_c_in_the_second_fit(setup, trial, recording, estimator, k):
        started.append(trial.number)
        if len(started) == 2:
            raise KeyboardInterrupt
        return real(setup, trial, recording, estimator, k)

    monkeypatch.setattr(tuning_trial, "fit_fold", ctrl_c_in_the_second_fit)
    assert (
        cli.main(
            [
                "workflow",
                str(SELECT),
                "--launcher",
                "basic",
                "--tracking-uri",
                uri,
                "--storage",
                storage,
                *extra(tmp_path),
            ]
        )
        == 130
    )
    [outer], [killed] = runs_of(store, "workflow"), runs_of(store, "study")
    assert (outer.info.status, killed.info.status) == ("KILLED", "KILLED")
    assert [r.info.status for r in runs_of(store, "trial")] == ["FINISHED", "KILLED"]
    assert not runs_of(store, "sweep")
    monkeypatch.undo()
    outer_id = outer.info.run_id

    chosen, status = workflow_selection.run(workflow, "quick", arguments, storage, outer_id)
    assert status == 0
    hand = {dataset: by_hand(dataset) for dataset in ("breast_cancer", "synthetic_gaussian")}
    assert [(p.dataset, p.values, p.score) for p in chosen] == [
        (d, {"solver.C": c}, pytest.approx(score)) for d, (c, score) in hand.items()
    ]
    assert chosen[0].values != chosen[1].values  # chosen per dataset
    assert chosen[0].overrides() == [
        "dataset=breast_cancer",
        f"solver.C={hand['breast_cancer'][0]!r}",
    ]
    assert "trial 1 was interrupted: its values are queued again" in capsys.readouterr().err

    studies = [optuna.load_study(study_name=c.study, storage=storage) for c in chosen]
    states = [[t.state for t in s.trials] for s in studies]
    assert states == [
        [TrialState.COMPLETE, TrialState.FAIL] + [TrialState.COMPLETE] * 2,
        [TrialState.COMPLETE] * 3,
    ]
    for study in studies:  # every grid point trained once
        complete = study.get_trials(states=(TrialState.COMPLETE,))
        assert sorted(t.params["solver.C"] for t in complete) == GRID
    trials = [r for r in runs_of(store, "trial") if r.info.status == "FINISHED"]
    assert len(trials) == 6 and {r.data.tags["mlflow.parentRunId"] for r in trials} == {
        r.info.run_id for r in runs_of(store, "study")
    }
    assert [r.info.status for r in runs_of(store, "study")] == ["FINISHED", "FINISHED"]
    assert {r.data.tags["mlflow.parentRunId"] for r in runs_of(store, "study")} == {outer_id}

    assert workflow_selection.run(workflow, "quick", arguments, storage, outer_id) == (chosen, 0)
    assert capsys.readouterr().out.count("finished before") == 2
    assert len(runs_of(store, "trial")) == 7


def write_select(folder: Path, **changes) -> Path:
    path = folder / "bad.yaml"
    content = yaml.safe_load(SELECT.read_text())
    content["select"] |= changes
    path.write_text(yaml.safe_dump(content))
    return path


def test_a_scales_select_grid_replaces_the_values_at_that_scale_only(tmp_path):
    content = yaml.safe_load(SELECT.read_text())
    content["scales"]["paper"]["select_grid"] = {"solver.C": "choice(2^-6, 2^2)"}
    workflow = spec.parse(content, tmp_path / "select.yaml")
    assert workflow.at_scale("quick") is workflow
    assert workflow.at_scale("paper").select == replace(
        workflow.select, grid={"solver.C": "choice(2^-6, 2^2)"}
    )
    storage = f"sqlite:///{tmp_path / 'optuna.db'}"
    args = {
        scale: workflow_selection.study(
            workflow.at_scale(scale),
            scale,
            sweep_arguments(workflow, scale, "sqlite:///x.db", "basic", None, extra(tmp_path)),
            "breast_cancer",
            storage,
        )
        for scale in ("quick", "paper")
    }
    assert (args["quick"].trials, args["paper"].trials) == (3, 2)
    assert args["quick"].space["solver.C"].choices == (2**-12, 2**-6, 2**2)
    assert args["paper"].space["solver.C"].choices == (2**-6, 2**2)

    content["scales"]["paper"]["select_grid"] = {"solver.gamma": "choice(1, 2)"}
    with pytest.raises(
        spec.WorkflowError,
        match=r"scales.paper.select_grid: other values of "
        r"the select block's parameters \(solver.C\); got solver.gamma",
    ):
        spec.parse(content, tmp_path / "select.yaml")
    del content["select"]
    with pytest.raises(spec.WorkflowError, match="there is no select block"):
        spec.parse(content, tmp_path / "select.yaml")


@pytest.mark.parametrize(
    "changes, words",
    [
        ({"grid": {}}, "select.grid: a mapping of each parameter to its values"),
        ({"grid": {"solver.C": "range(4, 1)"}}, "holds no value (empty or inverted range)"),
        ({"grid": {"solver.C": "interval(1, 4)"}}, "needs a finite space"),
        ({"grid": {"solver.gama": "choice(1, 2)"}}, "solver.gama"),
        ({"validation": 1.5}, "select.validation: the fraction of the training set held out"),
        ({"metric": "f1"}, "unknown metric 'f1'"),
    ],
)
def test_a_selection_that_cannot_run_is_one_line_and_exit_2_and_creates_nothing(
    store, tmp_path, capsys, changes, words
):
    path = write_select(tmp_path, **changes)
    assert (
        cli.main(
            [
                "workflow",
                str(path),
                "--tracking-uri",
                f"sqlite:///{store}",
                "--storage",
                f"sqlite:///{tmp_path / 'optuna.db'}",
                *extra(tmp_path),
            ]
        )
        == 2
    )
    err = capsys.readouterr().err.strip()
    assert err.startswith("svmlab workflow: error: ") and words in err and "\n" not in err
    assert not (tmp_path / "optuna.db").exists()
    names = [e.name for e in MlflowClient(f"sqlite:///{store}").search_experiments()]
    assert not [n for n in names if n.startswith("workflow-")]


@pytest.mark.slow
def test_the_sweep_trains_each_dataset_at_its_selected_c_and_a_second_run_trains_nothing(
    store, tmp_path, capfd
):
    command = [
        "workflow",
        str(SELECT),
        "--launcher",
        "basic",
        "--tracking-uri",
        f"sqlite:///{store}",
        "--storage",
        f"sqlite:///{tmp_path / 'optuna.db'}",
        *extra(tmp_path),
    ]
    assert cli.main(command) == 0
    out, err = capfd.readouterr()
    assert "runs differ in" not in err  # each dataset's C is part of its block, not a confound
    [outer] = runs_of(store, "workflow")
    selected = {
        k.split(".")[1]: float(v) for k, v in outer.data.params.items() if k.startswith("selected.")
    }
    assert selected == {d: by_hand(d)[0] for d in ("breast_cancer", "synthetic_gaussian")}
    assert {k for k in outer.data.metrics if k.startswith("selected.")} == {
        "selected.breast_cancer.validation_accuracy",
        "selected.synthetic_gaussian.validation_accuracy",
    }
    training = runs_of(store)
    assert len(training) == 4 and all(r.info.status == "FINISHED" for r in training)
    for run in training:  # both solvers at their dataset's C
        assert float(run.data.params["solver.C"]) == selected[run.data.tags["dataset"]]
    sweeps = runs_of(store, "sweep")
    assert len(sweeps) == 2 and {r.data.tags["mlflow.parentRunId"] for r in sweeps} == {
        outer.info.run_id
    }
    assert "[2/5] sweep breast_cancer: svmlab train -m" in out
    claims_md = mlflow.artifacts.load_text(f"{outer.info.artifact_uri}/claims.md")
    assert "Selected by validation, per dataset, before the sweep" in claims_md
    assert "| breast_cancer |" in claims_md  # one seed: one block, too few to decide
    assert outer.data.metrics["claims_inconclusive"] == 1

    assert cli.main(command) == 0  # done: nothing is trained again
    out = capfd.readouterr().out
    assert out.count("finished before") == 2 + 2 + 1  # the studies, the sweeps, the analysis
    assert len(runs_of(store)) == 4 and len(runs_of(store, "trial")) == 6


def test_a_study_that_cannot_load_its_data_is_reported_by_the_workflow(
    store, tmp_path, capsys, isolated_data_env
):
    with pytest.raises(SystemExit) as stopped:
        cli.main(
            [
                "workflow",
                str(SELECT),
                "--tracking-uri",
                f"sqlite:///{store}",
                "--storage",
                f"sqlite:///{tmp_path / 'optuna.db'}",
                *extra(tmp_path),
                "dataset=a4a",
            ]
        )
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert "svmlab workflow: error: DownloadError: download of" not in err  # one line, its own
    assert "svmlab workflow: error: a4a is not in the cache " in err and "svmlab tune" not in err
    assert "download of" in err
