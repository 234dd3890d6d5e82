"""The Tracker's signal handling: an interruption never lands in the middle of a store write."""

import os
import signal

import numpy as np
import pytest

from svmlab.tracking.runs import DeferredSignals, Terminated


@pytest.mark.parametrize("sig, raised", [(signal.SIGTERM, Terminated),
                                         (signal.SIGINT, KeyboardInterrupt)])
def test_a_signal_during_a_write_is_raised_when_the_write_completes(sig, raised):
    signals = DeferredSignals()
    signals.install()
    completed = []
    try:
        with pytest.raises(raised):
            with signals.held():
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


def test_a_logged_figure_is_closed(store):
    import matplotlib.pyplot as plt

    from svmlab.tracking.figures import convergence_figure
    from svmlab.tracking.runs import Tracker

    before = len(plt.get_fignums())
    with Tracker(f"sqlite:///{store}", "figures") as tracker:
        for _ in range(3):
            columns = {"iteration": np.arange(2), "time_s": np.array([0.0, 0.1]),
                       "objective_hinge_l2": np.array([2.0, 1.0])}
            figure = convergence_figure(columns, "trace")
            tracker.log_figure(figure, "trace/convergence.png")
    assert len(plt.get_fignums()) == before


@pytest.mark.parametrize("solver", ["mfw", "libsvm"])
def test_a_kernel_model_trained_on_sparse_input_is_logged_and_reloads(store, solver):
    """Its support vectors are a CSR matrix, a type skops does not trust by itself."""
    import mlflow
    import scipy.sparse as sp
    from sklearn.datasets import make_classification

    from svmlab.solvers.baselines import Libsvm
    from svmlab.solvers.frank_wolfe import ModifiedFrankWolfe
    from svmlab.tracking.runs import Tracker

    X, y = make_classification(80, 6, random_state=0)
    X = sp.csr_matrix(np.where(np.abs(X) < 1.0, 0.0, X))
    estimator = (ModifiedFrankWolfe(C=2.0, gamma=0.3, eps=1e-4, random_state=0)
                 if solver == "mfw" else Libsvm(kernel="rbf", gamma=0.3)).fit(X, y)
    assert sp.issparse(estimator.support_vectors_)
    uri = f"sqlite:///{store}"
    with Tracker(uri, "sparse") as tracker:
        tracker.log_model(estimator, X[:5])
        run_id = tracker.run_id
    mlflow.set_tracking_uri(uri)
    reloaded = mlflow.sklearn.load_model(f"runs:/{run_id}/model")
    np.testing.assert_array_equal(reloaded.predict(X), estimator.predict(X))
