"""NESVM (Zhou, Tao and Wu): Nesterov's method on smoothed SVM objectives (spec 000)."""

from svmlab.solvers.nesvm.estimator import NESVM, nesterov, schedule, should_stop

__all__ = ["NESVM", "nesterov", "schedule", "should_stop"]
