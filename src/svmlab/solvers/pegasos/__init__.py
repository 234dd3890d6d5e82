"""Pegasos (Shalev-Shwartz et al.): stochastic sub-gradient C-SVM, NESVM's baseline."""

from svmlab.solvers.pegasos.estimator import Pegasos

__all__ = ["Pegasos"]
