"""A toy solver outside svmlab: this one module, imported by the test suite (`conftest.py`),
makes it a registered solver, ``solver=toy`` of `svmlab train`, and gives it the whole
conformance suite (test_project_toy_solver.py shows each step).

It minimises the squared-hinge C-SVM without bias, 1/2||w||^2 + C sum max(0, 1 - y x.w)^2, with
scipy's L-BFGS, and reports scipy's own convergence flag.
"""

from numbers import Integral, Real
from typing import ClassVar

import numpy as np
import scipy.sparse as sp
from scipy.optimize import minimize
from sklearn.utils._param_validation import Interval

from svmlab.estimator.formulations import L2, Formulation, SquaredHinge
from svmlab.estimator.models import LinearSVMClassifier


class ToySVM(LinearSVMClassifier):
    """The squared-hinge C-SVM without bias by L-BFGS (scipy)."""

    name = "toy"

    _parameter_constraints: ClassVar[dict] = {
        "C": [Interval(Real, 0.0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0.0, None, closed="neither")],
    }

    def __init__(self, C=1.0, max_iter=1000, tol=1e-10):
        self.C = C
        self.max_iter = max_iter
        self.tol = tol

    def _formulation(self):
        return Formulation(SquaredHinge(), L2())

    def _stopping_rule(self):
        return f"L-BFGS's projected gradient <= tol={self.tol}, within max_iter={self.max_iter}"

    def _fit(self, X, y, trace):
        # one layout for dense and CSR input, so that both give the same sums and iterates
        Z = sp.csr_matrix(X).multiply(y[:, None]).tocsr()

        def objective(w):
            r = np.maximum(0.0, 1.0 - Z @ w)
            return 0.5 * w @ w + self.C * r @ r, w - 2.0 * self.C * (Z.T @ r)

        result = minimize(
            objective,
            np.zeros(X.shape[1]),
            jac=True,
            method="L-BFGS-B",
            options={"maxiter": self.max_iter, "gtol": self.tol, "ftol": 0.0},
        )
        self.coef_ = result.x[None, :]
        self.intercept_ = np.zeros(1)
        self.converged_ = bool(result.success)
        self.stop_reason_ = (
            f"max_iter={self.max_iter} iterations"
            if result.status == 1
            else None
            if result.success
            else str(result.message)
        )
        trace.append(int(result.nit), objective_squared_hinge_l2=float(result.fun))
