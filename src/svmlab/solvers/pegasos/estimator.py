r"""Pegasos (Shalev-Shwartz, Singer, Srebro and Cotter): stochastic sub-gradient C-SVM baseline.

Pegasos minimises lambda/2 ||w||^2 + 1/n sum_i hinge(y_i X_i w), which is objective_hinge_l2
divided by nC when lambda = 1/(nC) (spec 000, A14), so it is run and compared at the same C.
It has no bias. It runs single-sample steps (rows drawn uniformly with replacement from a
seeded generator) with step 1/(lambda t) and, optionally, the projection onto the ball
||w|| <= 1/sqrt(lambda). Pegasos itself has no stopping rule; here, at the end of every epoch
(n steps, the last one possibly shorter), the certified relative duality gap of the hinge C-SVM
is computed off the clock, and the fit stops once it is at most ``tol``. The trace has one row
per epoch with objective_hinge_l2 and rel_gap_hinge_l2.
"""

from numbers import Integral, Real
from typing import ClassVar

import numpy as np
from sklearn.utils._param_validation import Interval

from svmlab.estimator.formulations import L2, Formulation, Hinge, NoBias
from svmlab.estimator.models import LinearSVMClassifier
from svmlab.numerics.box_ascent import free_set_ascent
from svmlab.numerics.rows import rows_of
from svmlab.solvers.pegasos.steps import pegasos_steps


class Pegasos(LinearSVMClassifier):
    """Pegasos with lambda = 1/(n C): up to `epochs` x n steps (or `max_iter` steps), stopped
    when the certified relative gap of objective_hinge_l2 is at most `tol` (0: never). A fit
    the gap did not stop has the cap as its stop_reason_ (max_iter=... or max_epochs=...)."""

    name = "pegasos"
    test_config = ({"random_state": 0}, {"projection": False, "random_state": 0})
    gap_tol = "tol"

    _parameter_constraints: ClassVar[dict] = {
        "C": [Interval(Real, 0.0, None, closed="neither")],
        "epochs": [Interval(Integral, 1, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left"), None],
        "tol": [Interval(Real, 0.0, None, closed="left")],
        "projection": ["boolean"],
        "random_state": ["random_state"],
    }
    _warm_up: ClassVar[dict] = {"max_iter": 2, "tol": 0.0}
    _free_set_ascent = staticmethod(free_set_ascent)

    def __init__(
        self, C=1.0, *, epochs=100, max_iter=None, tol=1e-2, projection=True, random_state=None
    ):
        self.C = C
        self.epochs = epochs
        self.max_iter = max_iter
        self.tol = tol
        self.projection = projection
        self.random_state = random_state

    def _formulation(self) -> Formulation:
        return Formulation(Hinge(), L2(), NoBias())

    def _certificate_tol(self) -> float:
        return self.tol

    def _stopping_rule(self) -> str:
        limit = f"max_iter={self.max_iter} steps" if self.max_iter else f"epochs={self.epochs}"
        return f"certified rel_gap_hinge_l2 <= tol={self.tol} at an epoch's end, within {limit}"

    def _fit(self, X, y, trace):
        n, p = X.shape
        rows = rows_of(X)
        lam = 1.0 / (n * self.C)
        total = self.max_iter if self.max_iter is not None else self.epochs * n
        rng = np.random.default_rng(self.random_state)
        v, state = np.zeros(p), np.array([1.0, 0.0])
        done, self.converged_ = 0, False
        with trace.buffered() as trace_rows:
            while done < total and not self.converged_:
                order = rng.integers(0, n, size=min(n, total - done))
                pegasos_steps(
                    rows.data,
                    rows.indices,
                    rows.indptr,
                    rows.dense,
                    y,
                    order,
                    lam,
                    done,
                    self.projection,
                    v,
                    state,
                )
                done += len(order)
                w = state[0] * v
                state[1] = float(w @ w)  # no drift in the running ||w||^2
                with trace.paused():
                    certificate = self._weights_certificate(X, y, w, refine=False)  # quick
                    trace_rows.append(
                        done,
                        objective_hinge_l2=certificate.primal,
                        rel_gap_hinge_l2=certificate.rel_gap,
                    )
                    self.converged_ = certificate.rel_gap <= self.tol
        self.stop_reason_ = (
            None
            if self.converged_
            else f"max_iter={self.max_iter} steps"
            if self.max_iter is not None
            else f"max_epochs={self.epochs} epochs"
        )
        self.coef_ = (state[0] * v)[None, :]
        self.intercept_ = np.zeros(1)
