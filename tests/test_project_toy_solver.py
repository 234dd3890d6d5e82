"""Adding a solver is one module: the toy solver of `support/toy.py`, which no file of svmlab
names, is registered, is an option of ``svmlab train``, trains and logs a run with its model,
and the conformance suite runs over it."""

import mlflow
import numpy as np
import pytest

import test_estimator_conformance as test_conformance
from support.runs import runs, train
from support.toy import ToySVM
from svmlab import data, solvers


def test_the_toy_solver_is_registered_by_its_class_alone():
    assert solvers.registered()["toy"] is ToySVM
    assert solvers.target(ToySVM) == "support.toy.ToySVM"


def test_the_conformance_suite_runs_over_it():
    assert ToySVM in test_conformance.SOLVERS


def test_svmlab_train_configures_trains_and_logs_it(store):
    """``solver=toy`` with a parameter override; the run's config, certificate and model are
    in the store, and the logged model predicts like the toy fitted by hand."""
    assert train(store, "solver=toy", "solver.C=0.5", "seed=2") == 0
    (run,) = runs(store)
    params, metrics = run.data.params, run.data.metrics
    assert run.info.status == "FINISHED" and run.data.tags["solver"] == "toy"
    assert params["solver._target_"] == "support.toy.ToySVM"
    assert (float(params["solver.C"]), int(params["solver.max_iter"])) == (0.5, 1000)
    assert 0.0 <= metrics["rel_gap_squared_hinge_l2"] <= 1e-6
    assert 0.9 < metrics["test_accuracy"] <= 1.0
    mlflow.set_tracking_uri(f"sqlite:///{store}")
    logged = mlflow.sklearn.load_model(f"runs:/{run.info.run_id}/model")
    split = data.load("breast_cancer", seed=2)
    by_hand = ToySVM(C=0.5).fit(split.X_train, split.y_train)
    assert isinstance(logged, ToySVM) and logged.C == 0.5
    np.testing.assert_allclose(
        logged.decision_function(split.X_test),
        by_hand.decision_function(split.X_test),
        rtol=1e-8,
        atol=1e-10,
    )


def test_a_misspelt_name_is_refused_with_the_toy_among_the_close_matches(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        train(tmp_path / "mlflow.db", "solver=toi")
    assert exit_info.value.code == 2
    assert "Did you mean 'toy'" in capsys.readouterr().err
