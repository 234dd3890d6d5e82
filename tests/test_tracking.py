"""The Tracker's signal handling: an interruption never lands in the middle of a store write."""

import os
import signal

import numpy as np
import pytest

from svmlab.lifecycle import DeferredSignals, Terminated


@pytest.mark.parametrize(
    "sig, raised", [(signal.SIGTERM, Terminated), (signal.SIGINT, KeyboardInterrupt)]
)
def test_a_signal_during_a_write_is_raised_when_the_write_completes(sig, raised):
    signals = DeferredSignals()
    signals.install()
    completed = []
    try:
        with pytest.raises(raised), signals.held():
            with signals.held():  # nested writes: only the outermost releases it
                os.kill(os.getpid(), sig)
                completed.append("inner")
            completed.append("outer")
    finally:
        signals.restore()
    assert completed == ["inner", "outer"]


def test_a_signal_outside_writes_is_raised_at_once():
    signals = DeferredSignals()
    signals.install()
    try:
        with pytest.raises(Terminated, match="SIGTERM"):
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(10**6):  # the handler runs at the next bytecode boundary
                pass
    finally:
        signals.restore()
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def test_the_convergence_figure_has_one_panel_per_quantity_on_log_axes():
    from svmlab.tracking.figures import convergence_figure

    n = 200
    columns = {
        "iteration": np.arange(n),
        "time_s": np.linspace(0.0, 1.0, n),
        "objective_hinge_l2": 16.0 + 400.0 / (1.0 + np.arange(n)),
        "dual_gap": 9000.0 * 0.9 ** np.arange(n),
        "rel_gap_hinge_l2": np.where(np.arange(n) % 10 == 0, 0.9 ** np.arange(n), np.nan),
        "objective_l2svm": -1.0 - 1.0 / (1.0 + np.arange(n)),
    }
    figure = convergence_figure(columns, "run")
    panels = {ax.get_title(): ax for ax in figure.axes if ax.get_visible()}
    assert list(panels) == [
        "rel_gap_hinge_l2",
        "objective_hinge_l2",
        "objective_l2svm",
        "dual_gap",
    ]  # gaps first, then objectives, then the rest
    assert {k: ax.get_yscale() for k, ax in panels.items()} == {
        "rel_gap_hinge_l2": "log",
        "objective_hinge_l2": "log",
        "dual_gap": "log",
        "objective_l2svm": "linear",
    }  # a negative quantity has no log axis
    (line,) = panels["rel_gap_hinge_l2"].get_lines()
    assert len(line.get_xdata()) == n // 10  # rows without a computed gap are left out


def test_gap_histories_come_with_their_order_of_magnitude(store):
    from mlflow import MlflowClient

    from svmlab.recording.results import trace_record
    from svmlab.tracking.tracker import Tracker

    columns = {
        "iteration": np.arange(4),
        "time_s": np.array([0.0, 0.1, 0.2, 0.3]),
        "dual_gap": np.array([9000.0, 10.0, 0.0, 0.01]),
        "rel_gap_hinge_l2": np.array([np.nan, 0.5, 0.05, 0.005]),
    }
    uri = f"sqlite:///{store}"
    with Tracker(uri, "histories") as tracker:
        tracker.write(trace_record(columns, None, 0))
    client = MlflowClient(uri)

    def history(key):
        return [
            (p.step, p.value)
            for p in sorted(client.get_metric_history(tracker.run_id, key), key=lambda p: p.step)
        ]

    assert [v for _, v in history("trace/dual_gap")] == [9000.0, 10.0, 0.0, 0.01]
    assert history("trace/log10_dual_gap") == [
        (0, pytest.approx(np.log10(9000.0))),
        (1, 1.0),
        (3, -2.0),
    ]  # log10 where positive
    assert history("trace/log10_rel_gap_hinge_l2") == [
        (1, pytest.approx(np.log10(0.5))),
        (2, pytest.approx(np.log10(0.05))),
        (3, pytest.approx(np.log10(0.005))),
    ]
    assert "trace/log10_time_s" not in client.get_run(tracker.run_id).data.metrics


@pytest.mark.parametrize("solver", ["mfw", "libsvm"])
def test_a_kernel_model_trained_on_sparse_input_is_logged_and_reloads(store, solver):
    """Its support vectors are a CSR matrix, a type skops does not trust by itself."""
    import mlflow
    import scipy.sparse as sp
    from sklearn.datasets import make_classification

    from svmlab.solvers.baselines import Libsvm
    from svmlab.solvers.frank_wolfe import ModifiedFrankWolfe
    from svmlab.tracking.tracker import Tracker

    X, y = make_classification(80, 6, random_state=0)
    X = sp.csr_matrix(np.where(np.abs(X) < 1.0, 0.0, X))
    estimator = (
        ModifiedFrankWolfe(C=2.0, gamma=0.3, eps=1e-4, random_state=0)
        if solver == "mfw"
        else Libsvm(kernel="rbf", gamma=0.3)
    ).fit(X, y)
    assert sp.issparse(estimator.support_vectors_)
    uri = f"sqlite:///{store}"
    with Tracker(uri, "sparse") as tracker:
        tracker.log_model(estimator, X[:5])
        run_id = tracker.run_id
    mlflow.set_tracking_uri(uri)
    reloaded = mlflow.sklearn.load_model(f"runs:/{run_id}/model")
    np.testing.assert_array_equal(reloaded.predict(X), estimator.predict(X))


def test_runs_plot_draws_the_figure_of_a_run_from_its_trace(tmp_path, capsys):
    from mlflow import MlflowClient

    from svmlab.app import cli
    from svmlab.recording.results import trace_record
    from svmlab.tracking.tracker import Tracker

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    with Tracker(uri, "plots") as tracker:
        tracker.write(
            trace_record(
                {
                    "iteration": np.arange(3),
                    "time_s": np.array([0.0, 0.1, 0.2]),
                    "objective_hinge_l2": np.array([3.0, 2.0, 1.5]),
                },
                None,
                0,
            )
        )
    client = MlflowClient(uri)
    assert not [
        a for a in client.list_artifacts(tracker.run_id, "trace") if a.path.endswith(".png")
    ]
    assert cli.main(["runs", "plot", tracker.run_id, "--tracking-uri", uri]) == 0
    assert "trace/convergence.png" in {
        a.path for a in client.list_artifacts(tracker.run_id, "trace")
    }
    assert f"run {tracker.run_id}: trace/convergence.png" in capsys.readouterr().out


def test_a_process_looks_an_experiment_up_once(tmp_path):
    """The start-up reap and the run it starts share one lookup: once the id is known, the
    store is not opened (nor created) again for it."""
    from svmlab.tracking.store import ensure_experiment

    uri = f"sqlite:///{tmp_path}/mlflow.db"
    first = ensure_experiment(uri, "once")
    for path in tmp_path.iterdir():
        path.unlink()
    assert ensure_experiment(uri, "once") == first
    assert list(tmp_path.iterdir()) == []
    assert ensure_experiment(uri, "another") != first  # another experiment is looked up


@pytest.mark.parametrize(
    ("uri", "imported"), [("sqlite:///mlflow.db", True), ("http://127.0.0.1:5000", False)]
)
def test_the_code_of_a_database_store_is_imported_ahead_for_a_database_only(uri, imported):
    """What a sweep's worker imports before its first job opens the store."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from svmlab.tracking.store import load_store_code\n"
        f"load_store_code({uri!r})\n"
        "print('mlflow.store.tracking.sqlalchemy_store' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.stdout.strip() == str(imported), out.stderr
