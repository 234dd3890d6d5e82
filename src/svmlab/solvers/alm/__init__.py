"""SVM-ALM (Nie, Huang, Wang, Huang): the Lp-primal SVM by augmented Lagrange multipliers
(spec 002)."""

from svmlab.solvers.alm.estimator import SVMALM

__all__ = ["SVMALM"]
