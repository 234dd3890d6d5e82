"""The Tracker's signal handling: an interruption never lands in the middle of a store write."""

import os
import signal

import numpy as np
import pytest

from svmlab.tracking import DeferredSignals, Terminated


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


def test_a_logged_figure_is_closed(tmp_path):
    import matplotlib.pyplot as plt

    from svmlab.plotting import convergence_figure
    from svmlab.tracking import Tracker

    before = len(plt.get_fignums())
    with Tracker(f"sqlite:///{tmp_path / 'mlflow.db'}", "figures") as tracker:
        for _ in range(3):
            columns = {"iteration": np.arange(2), "time_s": np.array([0.0, 0.1]),
                       "objective_hinge_l2": np.array([2.0, 1.0])}
            figure = convergence_figure(columns, "trace")
            tracker.log_figure(figure, "trace/convergence.png")
    assert len(plt.get_fignums()) == before
