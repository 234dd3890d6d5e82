"""SmSVM-l1-l2 (Hajewski, Oliveira, Stewart; spec 001): l1(+l2) SVM by Newton active-set steps."""

from svmlab.solvers.l1_newton.estimator import L1NewtonSVM

__all__ = ["L1NewtonSVM"]
