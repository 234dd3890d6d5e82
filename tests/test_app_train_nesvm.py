"""NESVM and Pegasos through `svmlab train`: convergence tag, per-iteration metric history, and a
tiny version of the experiment-A sweep preset."""

import pytest
from mlflow import MlflowClient
from sklearn.exceptions import ConvergenceWarning

from support.runs import runs, train


def test_nesvm_run_logs_its_trace_and_convergence(store):
    assert train(store, "solver=nesvm_paper", "solver.C=0.1", "tracking.log_model=false") == 0
    with pytest.warns(ConvergenceWarning, match="max_iter=3"):
        assert (
            train(
                store,
                "solver=nesvm",
                "solver.max_iter=3",
                "solver.eps=1e-12",
                "solver.homotopy=off",
                "tracking.log_model=false",
            )
            == 0
        )
    converged, stopped = runs(store)  # the paper's rule held: recorded, but no gap certified
    assert converged.data.tags["svmlab.converged"] == "false"
    assert converged.data.tags["svmlab.stop_reason"] == "the stop='paper' rule on F_mu"
    assert stopped.data.tags["svmlab.converged"] == "false"
    assert stopped.data.tags["svmlab.stop_reason"] == "max_iter=3 updates"
    assert stopped.data.metrics["n_iter"] == 3
    client = MlflowClient(tracking_uri=f"sqlite:///{store}")
    metrics = converged.data.metrics
    history = client.get_metric_history(converged.info.run_id, "trace/objective_smoothed")
    assert [m.step for m in history] == list(range(int(metrics["n_iter"]) + 1))
    for column in ("objective_hinge_l2", "grad_norm", "dual_gap", "mu"):
        assert f"trace/{column}" in metrics
    assert metrics["trace/objective_hinge_l2"] == pytest.approx(metrics["objective_hinge_l2"])
    assert metrics["trace/dual_gap"] >= 0


@pytest.mark.slow
def test_tiny_experiment_preset_sweep_runs(store):
    assert (
        train(
            store,
            "-m",
            "+experiment=nesvm_adult",
            "dataset=breast_cancer",
            "seed=0",
            "solver.C=0.5",
            "solver=nesvm,pegasos",
            "tracking.log_model=false",
        )
        == 0
    )
    finished = [r for r in runs(store, "nesvm_adult") if "solver" in r.data.tags]
    assert sorted(r.data.tags["solver"] for r in finished) == ["nesvm", "pegasos"]
    assert all(r.info.status == "FINISHED" and r.data.params["solver.C"] == "0.5" for r in finished)
    assert all(r.data.metrics["test_accuracy"] > 0.85 for r in finished)
