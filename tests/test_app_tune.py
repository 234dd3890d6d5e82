"""`svmlab tune`: the search-space parser, the study's parent and nested runs, resume, pruning,
a killed trial, workers sharing one study (SQLite, PostgreSQL), and bad input."""

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest
from mlflow import MlflowClient
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution
from optuna.trial import TrialState

from conftest import closed_port
from support.runs import SUPPORT_CONF, child_env
from support.servers import postgres_bin, postgres_cluster
from svmlab.app import cli
from svmlab.app import tune as tune_module
from svmlab.app.config import search_space
from svmlab.errors import ConfigError
from svmlab.tuning import spec as tuning_spec
from svmlab.tuning import trial as tuning_trial

LOG_C = "solver.C=tag(log, interval(2^-5, 2^5))"


# -- the search space ---------------------------------------------------------------------------


def test_powers_are_read_as_their_values():
    assert search_space.expand_powers("interval(2^-5, 2^15)") == "interval(0.03125, 32768)"
    assert search_space.expand_powers("choice(2^3, 10^-1, x^2)") == "choice(8, 0.1, x^2)"


def test_sweep_overrides_become_distributions_and_the_rest_stays_fixed():
    space, fixed = search_space.parse(
        [
            "solver=libsvm",
            "solver.C=tag(log, interval(2^-5, 2^15))",
            "kernel.gamma=interval(0.1, 1.0)",
            "solver.max_iter=range(100, 1000, 300)",
            "kernel=linear,rbf",
            "solver.tol=choice(1e-3, 1e-4)",
        ]
    )
    assert fixed == ["solver=libsvm"]
    assert space["solver.C"] == FloatDistribution(0.03125, 32768.0, log=True)
    assert space["kernel.gamma"] == FloatDistribution(0.1, 1.0)
    assert space["solver.max_iter"] == IntDistribution(100, 700, step=300)  # Hydra: stop excluded
    assert space["kernel"] == CategoricalDistribution(["linear", "rbf"])
    assert tuning_spec.grid({k: space[k] for k in ("solver.max_iter", "kernel", "solver.tol")}) == {
        "solver.max_iter": [100, 400, 700],
        "kernel": ["linear", "rbf"],
        "solver.tol": [1e-3, 1e-4],
    }


@pytest.mark.parametrize(
    "override, words",
    [
        ("solver.C=interval(10, 1)", "empty or inverted"),
        ("solver.C=interval(1, 1)", "empty or inverted"),
        ("solver.C=tag(log, interval(0, 1))", "positive lower end"),
        ("solver.max_iter=range(10, 1)", "holds no value"),
        ("seed=range(0, 3)", "cannot be searched"),
        ("dataset=a1a,w1a", "cannot be searched"),
    ],
)
def test_empty_or_forbidden_spaces_are_refused(override, words):
    with pytest.raises(ConfigError, match=words):
        search_space.parse([override])


def test_the_grid_sampler_needs_a_finite_space():
    space, _ = search_space.parse([LOG_C])
    with pytest.raises(ConfigError, match="finite space"):
        tuning_spec.grid(space)


def test_a_preset_gives_its_search_space_and_the_command_line_adds_to_it():
    parser = argparse.ArgumentParser()
    tune_module.add_parser(parser.add_subparsers())
    args = parser.parse_args(
        [
            "tune",
            "--sampler",
            "grid",
            "+experiment=fw_tune_c",
            "dataset=w1a",
            "solver.eps=choice(1e-3, 1e-4)",
        ]
    )
    spec, _, tree = tune_module.prepare(tune_module.spec_of(args.overrides, sampler=args.sampler))
    assert tuning_spec.grid(spec.space) == {
        "solver.C": [2**k for k in range(13)],
        "solver.eps": [1e-3, 1e-4],
    }
    assert spec.name == "tune-mfw-w1a-rbf" and tree["tracking"]["experiment"] == "fw_tune_c"


# -- helpers ------------------------------------------------------------------------------------


def tune_args(folder: Path, *args: str, study: str = "s") -> list[str]:
    return [
        "tune",
        "--storage",
        f"sqlite:///{folder / 'optuna.db'}",
        "--study",
        study,
        *args,
        f"tracking.uri=sqlite:///{folder / 'mlflow.db'}",
        "tracking.log_model=false",
        f"hydra.searchpath=[file://{SUPPORT_CONF}]",
    ]


def tune(folder: Path, *args: str, **kwargs) -> int:
    """`svmlab tune` in this process."""
    return cli.main(tune_args(folder, *args, **kwargs))


def tune_process(folder: Path, *args: str, storage: str | None = None, **popen):
    command = [sys.executable, "-m", "svmlab.app.cli", *tune_args(folder, *args)]
    if storage:
        command[command.index("--storage") + 1] = storage
    return subprocess.Popen(command, env=child_env(), cwd=folder, text=True, **popen)


def runs_of(folder: Path) -> list:
    client = MlflowClient(f"sqlite:///{folder / 'mlflow.db'}")
    found = client.get_experiment_by_name("svmlab")
    return (
        client.search_runs([found.experiment_id], order_by=["attributes.start_time ASC"])
        if found
        else []
    )


def study_of(folder: Path, name: str = "s", storage: str | None = None) -> optuna.Study:
    from svmlab.tuning.study import storage_url

    return optuna.load_study(
        study_name=name, storage=storage_url(storage or f"sqlite:///{folder / 'optuna.db'}")
    )


def by_role(runs: list, role: str) -> list:
    return [r for r in runs if r.data.tags.get("svmlab.role") == role]


@pytest.mark.parametrize(
    "metric, scores, chosen",
    [
        ("accuracy", [0.9, 0.95, 0.95, 0.8], 2.0),  # a tie: the smaller C, not the first trial
        ("accuracy", [0.9, 0.95, 0.96, 0.8], 2.0),
        ("accuracy", [0.99, 0.95, 0.95, 0.8], 8.0),
        ("roc_auc", [0.7, 0.7, 0.7, 0.7], 1.0),
        ("fit_time_s", [0.5, 0.9, 0.5, 0.9], 2.0),  # minimised
    ],
)
def test_the_best_trial_has_the_best_score_and_among_ties_the_smallest_values(
    metric, scores, chosen
):
    from svmlab.tuning.study import best_trial

    study = optuna.create_study(direction="maximize")
    distribution = {"solver.C": FloatDistribution(0.5, 16)}
    for c, score in zip([8.0, 4.0, 2.0, 1.0], scores):
        study.add_trial(
            optuna.trial.create_trial(
                params={"solver.C": c}, distributions=distribution, value=score
            )
        )
    study.add_trial(
        optuna.trial.create_trial(
            params={"solver.C": 0.5}, distributions=distribution, state=TrialState.FAIL
        )
    )
    assert best_trial(study, metric).params["solver.C"] == chosen
    with pytest.raises(ValueError, match="no trial completed"):
        best_trial(optuna.create_study(), metric)


def test_the_summary_says_why_a_pruned_score_can_beat_the_best_final_score():
    """A pruned trial's score is on fewer folds (here one of five): the note says it is not
    comparable, and names the pruned score above the best final one."""
    from svmlab.tuning.study import best_trial, pruning_note

    study = optuna.create_study(direction="maximize")
    distribution = {"solver.C": FloatDistribution(0.5, 16)}
    for c, score in ((1.0, 0.90), (2.0, 0.93)):
        study.add_trial(
            optuna.trial.create_trial(
                params={"solver.C": c}, distributions=distribution, value=score
            )
        )
    assert pruning_note(study, "accuracy", 5, best_trial(study, "accuracy")) is None
    study.add_trial(
        optuna.trial.create_trial(
            params={"solver.C": 8.0},
            distributions=distribution,
            state=TrialState.PRUNED,
            intermediate_values={0: 0.97},
        )
    )
    note = pruning_note(study, "accuracy", 5, best_trial(study, "accuracy"))
    assert note.startswith(
        "  1 trial(s) pruned: a pruned trial's score is an intermediate "
        "score (on fewer folds than the 5 of a final score, or at a "
        "checkpoint mid-fit), not comparable to a final score"
    )
    assert note.endswith("trial 2's 0.9700 looks better than the best final score for that reason")
    # minimised: a pruned time that is no better than the best says only why it differs
    fastest = best_trial(study, "fit_time_s")
    assert "looks better" not in pruning_note(study, "fit_time_s", 5, fastest)


# -- end to end ---------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_study_resumes_prunes_and_files_every_trial_under_one_parent(tmp_path, store, capsys):
    space = ("--sampler", "random", "--cv", "3", "solver=liblinear")
    assert tune(tmp_path, "--trials", "2", "--no-refit", *space, "solver.C=interval(0.5, 2)") == 0
    assert tune(tmp_path, "--trials", "3", "--no-refit", *space, "solver.C=interval(0.5, 2)") == 0
    # a hopeless value: below the median of the three trials at the first fold, so pruned there
    assert tune(tmp_path, "--trials", "4", *space, "solver.C=interval(1e-6, 2e-6)") == 0
    out = capsys.readouterr().out
    assert "trial 3 PRUNED after fold 1: cv_accuracy=" in out and " on 1 of 3 folds" in out
    assert "1 trial(s) pruned: a pruned trial's score is an intermediate score" in out

    runs = runs_of(tmp_path)
    [parent] = by_role(runs, "study")
    trials, [refit] = by_role(runs, "trial"), by_role(runs, "refit")
    assert parent.info.status == "FINISHED"
    assert {r.data.tags["mlflow.parentRunId"] for r in [*trials, refit]} == {parent.info.run_id}
    values = [float(r.data.params["solver.C"]) for r in trials]  # each trial trained once
    assert len(set(values)) == 4 and all(0.5 <= c <= 2 for c in values[:3]) and values[3] < 1e-5
    states = {r.data.tags["svmlab.trial"]: r.data.tags["svmlab.trial_state"] for r in trials}
    assert states == {"0": "COMPLETE", "1": "COMPLETE", "2": "COMPLETE", "3": "PRUNED"}
    assert all(r.info.status == "FINISHED" for r in trials)
    complete = [r for r in trials if r.data.tags["svmlab.trial_state"] == "COMPLETE"]
    assert all(
        r.data.metrics["n_folds"] == 3
        and "max_rel_gap_squared_hinge_l2_penalised_bias" in r.data.metrics
        for r in complete
    )
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    history = client.get_metric_history(complete[0].info.run_id, "cv_accuracy")
    assert [m.step for m in history] == [0, 1, 2]
    assert {"trace/trace.parquet", "trace/fold1.parquet", "trace/fold2.parquet"} <= {
        a.path for a in client.list_artifacts(complete[0].info.run_id, "trace")
    }

    study = study_of(tmp_path)
    assert [t.state for t in study.trials] == [TrialState.COMPLETE] * 3 + [TrialState.PRUNED]
    best = min(
        study.get_trials(states=(TrialState.COMPLETE,)),
        key=lambda t: (-t.value, t.params["solver.C"]),
    )  # ties: the smallest C
    assert parent.data.metrics["best_cv_accuracy"] == pytest.approx(best.value)
    assert parent.data.tags["svmlab.refit_trial"] == str(best.number)
    assert float(refit.data.params["solver.C"]) == best.params["solver.C"]
    assert parent.data.metrics["refit_test_accuracy"] == refit.data.metrics["test_accuracy"]
    artifacts = {a.path for a in client.list_artifacts(parent.info.run_id)} | {
        a.path for a in client.list_artifacts(parent.info.run_id, "plots")
    }
    assert {
        "best",
        "trials.csv",
        "plots/optimization_history.png",
        "plots/param_importances.png",
    } <= artifacts


@pytest.mark.slow
def test_a_trial_killed_mid_fit_is_failed_in_optuna_and_mlflow_and_trained_again(tmp_path, store):
    started, stop = tmp_path / "started", tmp_path / "stop"
    args = (
        "--trials",
        "2",
        "--cv",
        "2",
        "--no-refit",
        "--sampler",
        "grid",
        "solver=slow",
        f"+solver.started_file={started}",
        f"+solver.stop_file={stop}",
        "solver.C=choice(1.0, 2.0)",
    )
    proc = tune_process(tmp_path, *args)
    deadline = time.monotonic() + 300  # a safety net: the test waits for the file
    while not started.exists():
        assert proc.poll() is None and time.monotonic() < deadline, "the fit never started"
        time.sleep(0.1)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    [killed] = study_of(tmp_path).trials
    assert killed.state == TrialState.RUNNING
    assert by_role(runs_of(tmp_path), "trial")[0].info.status == "RUNNING"

    stop.touch()  # the fits of the next invocation end at once
    assert tune(tmp_path, *args) == 0
    trials = study_of(tmp_path).trials
    assert trials[0].state == TrialState.FAIL
    assert sorted(t.params["solver.C"] for t in trials if t.state == TrialState.COMPLETE) == [
        1.0,
        2.0,
    ]
    runs = {r.info.run_id: r for r in by_role(runs_of(tmp_path), "trial")}
    failed = runs[killed.user_attrs["mlflow_run_id"]]
    assert failed.info.status == "FAILED" and failed.data.tags["svmlab.trial_state"] == "FAIL"
    assert "gone" in failed.data.tags["svmlab.error"]
    assert [r.info.status for r in runs.values()].count("FINISHED") == 2


def blocked_fits(folder: Path) -> tuple[Path, tuple[str, ...]]:
    """(stop file, args): a study whose fits wait for the stop file (the test solver Slow)."""
    stop = folder / "stop"
    return stop, (
        "--trials",
        "4",
        "--cv",
        "2",
        "--no-refit",
        "--pruner",
        "none",
        "solver=slow",
        f"+solver.stop_file={stop}",
        "solver.C=interval(0.5, 2.0)",
    )


def work_together(folder: Path, study, stop: Path, workers: list) -> None:
    """Wait until two processes each hold a RUNNING trial, then let every fit end, and wait
    for the workers."""
    deadline = time.monotonic() + 300  # a safety net: the test waits for the state
    while True:
        try:
            running = study().get_trials(states=(TrialState.RUNNING,))
        except KeyError:  # the study is not created yet
            running = []
        if len({t.user_attrs.get("svmlab.pid") for t in running} - {None}) == 2:
            break
        assert all(w.poll() is None for w in workers) and time.monotonic() < deadline, (
            "two workers never held a trial at once"
        )
        time.sleep(0.2)
    stop.touch()
    outputs = [w.communicate(timeout=600)[0] for w in workers]
    assert [w.returncode for w in workers] == [0] * len(workers), outputs


def check_shared_study(folder: Path, study: optuna.Study, wanted: int) -> None:
    """Two processes worked the study: ``wanted`` finished trials (one more when both were
    mid-trial as the count was reached), one parent, every trial run nested under it."""
    finished = [t for t in study.trials if t.state == TrialState.COMPLETE]
    assert wanted <= len(finished) <= wanted + 1
    assert len({t.user_attrs["svmlab.pid"] for t in finished}) == 2
    runs = runs_of(folder)
    [parent] = by_role(runs, "study")
    trials = by_role(runs, "trial")
    assert len(trials) == len(finished)
    assert all(
        r.info.status == "FINISHED" and r.data.tags["mlflow.parentRunId"] == parent.info.run_id
        for r in trials
    )


@pytest.mark.slow
def test_two_workers_share_one_study_on_sqlite(tmp_path, store):
    stop, args = blocked_fits(tmp_path)
    worker = tune_process(
        tmp_path, "--jobs", "2", *args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    work_together(tmp_path, lambda: study_of(tmp_path), stop, [worker])
    check_shared_study(tmp_path, study_of(tmp_path), 4)


@pytest.mark.slow
def test_two_machines_share_one_study_on_postgresql(tmp_path, store):
    if postgres_bin() is None:
        pytest.skip("PostgreSQL is not installed (.ci/run installs Debian's postgresql package)")
    stop, args = blocked_fits(tmp_path)
    with postgres_cluster() as database:
        workers = [
            tune_process(
                tmp_path, *args, storage=database, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
            )
            for _ in range(2)
        ]
        work_together(tmp_path, lambda: study_of(tmp_path, storage=database), stop, workers)
        check_shared_study(tmp_path, study_of(tmp_path, storage=database), 4)


def test_a_trial_is_pruned_mid_fit_at_a_trace_checkpoint(tmp_path, store, capsys):
    """BSGD traces its validation accuracy once per epoch: a hopeless kernel width (every kernel
    value ~0, so f = 0 everywhere) is below the median of a sound trial at the first checkpoint,
    and its fit stops after one epoch of five."""
    parser = argparse.ArgumentParser()
    tune_module.add_parser(parser.add_subparsers())
    args = parser.parse_args(
        tune_args(
            tmp_path,
            "--cv",
            "2",
            "solver=bsgd",
            "kernel=rbf",
            "solver.epochs=5",
            "solver.budget=20",
            "kernel.gamma=tag(log, interval(1e-3, 1e3))",
        )
    )
    spec, configure, tree = tune_module.prepare(
        tune_module.spec_of(args.overrides, name=args.study, cv=args.cv, storage=args.storage)
    )
    setup = tuning_trial.Setup(spec, configure, tree)
    tuning_trial.load_folds(setup)
    study = optuna.create_study(
        direction="maximize", pruner=optuna.pruners.MedianPruner(n_startup_trials=1)
    )
    study.enqueue_trial({"kernel.gamma": 0.03})
    study.enqueue_trial({"kernel.gamma": 1e3})
    study.optimize(lambda trial: tuning_trial.run_trial(setup, trial), n_trials=2)

    sound, hopeless = study.trials
    assert (sound.state, hopeless.state) == (TrialState.COMPLETE, TrialState.PRUNED)
    assert sorted(sound.intermediate_values) == [0, 1, 2, 3, 4, 7, 8, 9, 10, 11, 12, 15]
    assert list(hopeless.intermediate_values) == [0]
    assert hopeless.intermediate_values[0] < sound.intermediate_values[0] - 0.3
    runs = {r.data.tags["svmlab.trial"]: r for r in by_role(runs_of(tmp_path), "trial")}
    run, n_train = runs["1"], len(setup.folds[0][0])
    assert run.info.status == "FINISHED" and run.data.tags["svmlab.trial_state"] == "PRUNED"
    assert runs["0"].data.tags["svmlab.trial_state"] == "COMPLETE"
    pruned_at = {k: run.data.tags[f"svmlab.pruned_at_{k}"] for k in ("step", "fold", "iteration")}
    assert pruned_at == {"step": "0", "fold": "0", "iteration": str(n_train)}  # first epoch
    assert run.data.metrics["checkpoint_accuracy"] == hopeless.intermediate_values[0]
    assert "n_folds" not in run.data.metrics
    assert (
        f"trial 1 PRUNED in fold 1 at iteration {n_train}: checkpoint_accuracy="
        in capsys.readouterr().out
    )
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    steps = [
        [m.step for m in client.get_metric_history(r.info.run_id, "trace/test_accuracy")]
        for r in (runs["0"], run)
    ]  # the first fold's trace, by iteration
    assert steps == [[n_train * e for e in range(1, 6)], [n_train]]


def test_a_failing_fit_fails_its_trial_and_a_study_without_a_complete_trial_fails(
    tmp_path, store, capsys
):
    assert (
        tune(
            tmp_path,
            "--trials",
            "1",
            "--cv",
            "2",
            "solver=nan_trace",
            "solver.C=interval(0.5, 2.0)",
        )
        == 1
    )
    assert "trial 0 FAIL: the convergence trace contains NaN" in capsys.readouterr().out
    runs = runs_of(tmp_path)
    assert [r.info.status for r in by_role(runs, "study")] == ["FAILED"]
    [trial] = by_role(runs, "trial")
    assert trial.info.status == "FAILED" and "NaN" in trial.data.tags["svmlab.error"]
    assert [t.state for t in study_of(tmp_path).trials] == [TrialState.FAIL]


# -- bad input ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args, status, words",
    [
        (("solver=liblinear", "solver.C=interval(10, 1)"), 2, "empty or inverted"),
        (("solver=liblinear", "solver.gamma=interval(0.1, 1.0)"), 2, "unknown key solver.gamma"),
        (("solver=liblinear", "solver.C=interval(-1.0, 1.0)"), 2, "invalid solver parameter"),
        (("--metric", "f1", "solver=liblinear", LOG_C), 2, "unknown metric 'f1'"),
        (("solver=liblinear",), 2, "no search range"),
        (("--sampler", "grid", "solver=liblinear", LOG_C), 2, "finite space"),
        (
            (
                "--storage",
                f"postgresql://u@127.0.0.1:{closed_port()}/optuna",
                "solver=liblinear",
                LOG_C,
            ),
            3,
            "the study storage postgresql://u@127.0.0.1:",
        ),
    ],
)
def test_bad_input_is_one_line_and_leaves_nothing_running(tmp_path, capsys, args, status, words):
    assert tune(tmp_path, *args) == status
    err = capsys.readouterr().err.strip()
    assert err.startswith("svmlab tune: error: ") and words in err and "\n" not in err
    assert not (tmp_path / "optuna.db").exists()  # no study, and no store opened: no run
    assert not (tmp_path / "mlflow.db").exists()


# -- warm start ---------------------------------------------------------------------------------


def test_a_warm_started_grid_runs_in_increasing_c_tags_its_fits_and_selects_the_cold_grids_c(
    tmp_path, store
):
    grid = (
        "--sampler",
        "grid",
        "--pruner",
        "none",
        "--validation",
        "0.3",
        "--no-refit",
        "solver=cvm",
        "kernel=rbf",
        "dataset=breast_cancer",
        "solver.C=choice(2^4, 2^0, 2^2)",
    )
    assert tune(tmp_path, *grid, study="cold") == 0
    assert tune(tmp_path, "--warm-start", *grid, study="warm") == 0
    cold, warm = study_of(tmp_path, "cold"), study_of(tmp_path, "warm")
    assert [t.params["solver.C"] for t in warm.trials] == [1.0, 4.0, 16.0]
    from svmlab.tuning.study import best_trial

    best = {s.study_name: best_trial(s, "accuracy").params for s in (cold, warm)}
    assert best["warm"] == best["cold"]
    trials = by_role(runs_of(tmp_path), "trial")
    tags = {
        (r.data.tags["svmlab.study"], float(r.data.params["solver.C"])): r.data.tags.get(
            "svmlab.warm_start"
        )
        for r in trials
    }
    assert tags == {
        ("cold", 1.0): None,
        ("cold", 4.0): None,
        ("cold", 16.0): None,
        ("warm", 1.0): None,
        ("warm", 4.0): "true",
        ("warm", 16.0): "true",
    }
    # the study keeps its order: continued cold, it is refused
    assert tune(tmp_path, *grid, study="warm") == 2


@pytest.mark.parametrize(
    "args, words",
    [
        (("--sampler", "tpe", LOG_C), "needs --sampler grid"),
        (("--sampler", "grid", "solver.C=choice(1, 2)", "--jobs", "2"), "--jobs 1"),
        (("--sampler", "grid", "solver.C=choice(1, 2)"), "solver liblinear cannot start from"),
    ],
)
def test_a_warm_start_that_cannot_follow_a_path_is_refused(tmp_path, capsys, args, words):
    assert tune(tmp_path, "--warm-start", "solver=liblinear", *args) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("svmlab tune: error: --warm-start") and words in err, err
    assert not (tmp_path / "optuna.db").exists()
