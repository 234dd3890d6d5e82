r"""Certified duality gap of the exact (unsmoothed) problem of the l1 Newton solver.

    P(w) = lam/2 ||w||_2^2 + mu ||w||_1 + 1/N sum_i max(0, 1 - y_i x_i.w)      (spec 001 (1.2))

is the hinge loss with the elastic-net penalty at C = 1/N (`formulation`), certified by the
estimator layer's `certify`. With lam = 0 it is the LP-SVM, mu times the hinge_l1 formulation at
C = 1/(N mu), which is what is certified then (values P / mu). The Fenchel dual over theta in
[0, 1]^N (a = C theta), with v = 1/N X^T (y o theta), is

    D(theta) = mean(theta) - (1/(2 lam)) ||S_mu(v)||^2        (lam > 0; S_mu: soft threshold)
    D(theta) = mean(theta)  if ||v||_inf <= mu, else -inf     (lam = 0)

so every theta gives the lower bound max_t D(t theta) over 0 <= t <= 1/max(theta). The dual
points tried are the smoothed problem's own, theta_i = j_alpha'(z_i) (exact at the smoothed
optimum, spec §1.4), the hinge's subgradient 1[z_i > 0] (the model's own point in `certify`), and
that subgradient completed on the points with z_i near 0 (`free_set_duals`), where the hinge's
derivative is undetermined: there theta_F in [0, 1] is fitted to P's optimality condition on the
support S of w, 1/N X_S^T (y o theta) = lam w_S + mu sign(w_S), by an LP. At the optimum of the
LP-SVM (lam = 0) F holds about |S| points, so the fit is a small problem, and the certified gap
follows the true suboptimality (j_alpha' alone leaves it orders of magnitude looser unless the
last level was solved to eta = 1e-10). The estimator layer's own free-set refinement (a least
squares fit over every coordinate) is not used: it is too slow on a9a-sized data.
"""

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog

from svmlab.estimator.certificates import FREE_SET_WIDTHS
from svmlab.estimator.formulations import L1, ElasticNet, Formulation, Hinge

MAX_FREE = 100_000  # points of a free set (closest to the margin first)


def problem(lam: float, mu: float) -> Formulation:
    """P's own formulation, at C = 1/N."""
    return Formulation(Hinge(), ElasticNet(lam, mu))


def certified(lam: float, mu: float) -> tuple[Formulation, float]:
    """(formulation, N C) of what is certified: P itself, or for lam = 0 < mu hinge_l1 at
    C = 1/(N mu) (P / mu)."""
    if lam == 0 and mu > 0:
        return Formulation(Hinge(), L1()), 1.0 / mu
    return problem(lam, mu), 1.0


def exact_objective(margins: np.ndarray, w: np.ndarray, lam: float, mu: float) -> float:
    """P(w) from the margins y_i x_i.w."""
    form = problem(lam, mu)
    return form.primal(margins, form.regulariser(float(w @ w), float(np.abs(w).sum()), 0.0),
                       1.0 / len(margins))


def free_set_duals(X, y: np.ndarray, w: np.ndarray, z: np.ndarray, lam: float, mu: float,
                   hinge_sum: np.ndarray):
    """Dual points theta = 1[z > 0] off a free set F = {|z_i| <= delta} and, on F, the LP
    solution of the module docstring, for the widths delta of the estimator layer's hinge
    certificate; ``hinge_sum`` = X^T (y o 1[z > 0])."""
    n = len(y)
    base = (z > 0.0).astype(float)
    scale = max(1.0, float(np.abs(z).max(initial=0.0)))
    order = np.argsort(np.abs(z), kind="stable")
    sizes = np.searchsorted(np.abs(z[order]), np.multiply(FREE_SET_WIDTHS, scale), "right")
    bound = n * (mu + lam * np.abs(w))
    for count in sorted(set(np.minimum(sizes, MAX_FREE)) - {0}):
        free = np.sort(order[:count])
        rows = sp.csr_matrix(X[free]).multiply(y[free, None]).tocsr()  # y_i x_i, i in F
        rows.sort_indices()
        fixed = hinge_sum - rows.T @ base[free]  # X^T (y o theta) without F's part
        group, size, unique = _duplicates(rows)
        touched = np.flatnonzero(unique.getnnz(axis=0))
        A = unique[:, touched].T.tocsr()
        result = linprog(-np.ones(len(size)), A_ub=sp.vstack([A, -A]),
                         b_ub=np.r_[bound[touched] - fixed[touched],
                                    bound[touched] + fixed[touched]],
                         bounds=np.c_[np.zeros(len(size)), size], method="highs")
        if result.status == 0:
            theta = base.copy()
            theta[free] = np.clip(result.x[group] / size[group], 0.0, 1.0)
            yield theta


def _duplicates(rows):
    """(group of each row, size of each group, one row per group) of equal CSR rows: a
    group's rows share one LP variable, their sum (data sets such as a9a repeat rows)."""
    keys = [rows.indices[a:b].tobytes() + rows.data[a:b].tobytes()
            for a, b in zip(rows.indptr[:-1], rows.indptr[1:])]
    _, first, group = np.unique(np.array(keys, dtype=object), return_index=True,
                                return_inverse=True)
    return group, np.bincount(group).astype(float), rows[first]
