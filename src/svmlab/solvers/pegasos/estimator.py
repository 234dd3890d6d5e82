r"""Pegasos (Shalev-Shwartz, Singer, Srebro and Cotter): stochastic sub-gradient C-SVM baseline.

Pegasos minimises lambda/2 ||w||^2 + 1/n sum_i hinge(y_i X_i w), which is objective_hinge_l2
divided by nC when lambda = 1/(nC) (spec 000, A14), so it is run and compared at the same C.
It has no bias and no stopping rule: it runs a fixed number of single-sample steps (rows drawn
uniformly with replacement from a seeded generator) with step 1/(lambda t) and, optionally, the
projection onto the ball ||w|| <= 1/sqrt(lambda). The trace has one row per epoch (n steps, the
last one possibly shorter) with objective_hinge_l2 at the current w, computed outside the timer.
"""

from numbers import Integral, Real
from typing import ClassVar

import numpy as np
from sklearn.utils._param_validation import Interval

from svmlab.numerics.rows import Rows
from svmlab.solvers.pegasos.steps import pegasos_steps
from svmlab.estimator.models import LinearSVMClassifier
from svmlab.estimator.objectives import hinge_loss


class Pegasos(LinearSVMClassifier):
    """Pegasos with lambda = 1/(n C): `epochs` x n steps, or `max_iter` steps when given."""

    _parameter_constraints: ClassVar[dict] = {
        "C": [Interval(Real, 0.0, None, closed="neither")],
        "epochs": [Interval(Integral, 1, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left"), None],
        "projection": ["boolean"],
        "random_state": ["random_state"],
    }

    def __init__(self, C=1.0, *, epochs=10, max_iter=None, projection=True, random_state=None):
        self.C = C
        self.epochs = epochs
        self.max_iter = max_iter
        self.projection = projection
        self.random_state = random_state

    def _fit(self, X, y, trace):
        n, p = X.shape
        rows = Rows.of(X)
        lam = 1.0 / (n * self.C)
        total = self.max_iter if self.max_iter is not None else self.epochs * n
        rng = np.random.default_rng(self.random_state)
        v, state = np.zeros(p), np.array([1.0, 0.0])
        solver_time, done = 0.0, 0
        while done < total:
            order = rng.integers(0, n, size=min(n, total - done))
            start = trace.elapsed()
            pegasos_steps(rows.data, rows.indices, rows.indptr, rows.dense, y, order, lam, done,
                          self.projection, v, state)
            solver_time += trace.elapsed() - start
            done += len(order)
            w = state[0] * v
            state[1] = float(w @ w)  # no drift in the running ||w||^2
            trace.append(done, solver_time,
                         objective_hinge_l2=0.5 * state[1] + self.C * hinge_loss(y * (X @ w)))
        self.coef_ = (state[0] * v)[None, :]
        self.intercept_ = np.zeros(1)
