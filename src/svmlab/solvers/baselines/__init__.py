"""LIBLINEAR and LIBSVM through scikit-learn, run and certified like every other solver."""

from svmlab.solvers.baselines.estimator import Liblinear, Libsvm

__all__ = ["Liblinear", "Libsvm"]
