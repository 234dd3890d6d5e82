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
derivative is undetermined, for growing free sets F, drawn while the gap exceeds the tolerance
asked for. With lam > 0, theta_F maximises D itself with theta fixed off F, by coordinate ascent
from j_alpha' on F (`numerics.box_ascent` with its soft threshold), each pass reading F's rows
only, so the cost grows with F, not with the data; it stops once D certifies the tolerance.
With lam = 0, with tol = 0 (no tolerance: the tightest bound is asked for), or `LINPROG`,
theta_F is HiGHS' exact solution of the short, wide LP max sum theta_F s.t.
|X^T (y o theta)| <= N (mu + lam |w|) on the features F touches (the dual's constraint at
lam = 0, where the ascent does not apply: D is then linear on a polytope, where coordinate
ascent stalls; with lam > 0 the ascent converges, but slowly where the 1/lam curvature is
stiff: on heart at lam = 1e-4, 100 passes certify 0.29 where the LP certifies 3.5e-6, so an
ascent that falls short of the tolerance is followed by the widest free set's LP where that
set is small, MAX_LP_FALLBACK points; on larger sets the LP would cost seconds in the stopping
test, which then waits for a later level instead). The LP took 0.79 of a 1.08 s default fit on a9a (11 calls);
the ascent certifies the same gap in milliseconds. At the optimum of the LP-SVM (lam = 0) F
holds about |S| points (S: the support of w), so the LP is small, and the certified gap follows
the true suboptimality (j_alpha' alone leaves it orders of magnitude looser unless the last
level was solved to eta = 1e-10). The estimator layer's own free-set refinement (a least
squares fit over every coordinate) is not used: it is too slow on a9a-sized data.
"""

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog

from svmlab.estimator.certificates import FREE_SET_GAIN_TOL, FREE_SET_PASSES, FREE_SET_WIDTHS
from svmlab.estimator.formulations import L1, ElasticNet, Formulation, Hinge
from svmlab.numerics.box_ascent import free_set_ascent

MAX_FREE = 100_000  # points of a free set (closest to the margin first)
MAX_LP_FALLBACK = 5_000  # points of a free set whose LP follows an ascent short of tol
LINPROG = False  # the LP on every free set, lam > 0 too: the reference the ascent is timed by


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
    return form.primal(
        margins, form.regulariser(float(w @ w), float(np.abs(w).sum()), 0.0), 1.0 / len(margins)
    )


def free_set_duals(
    X,
    y: np.ndarray,
    w: np.ndarray,
    z: np.ndarray,
    lam: float,
    mu: float,
    hinge_sum: np.ndarray,
    start: np.ndarray,
    enough: float = np.inf,
):
    """Dual points theta = 1[z > 0] off a free set F = {|z_i| <= delta} and, on F, the best
    theta_F found, for the widths delta of the estimator layer's hinge certificate, one set at
    a time (``hinge_sum`` = X^T (y o 1[z > 0])). With lam > 0 theta_F ascends D itself from
    ``start`` on F (`_ascended`, stopping once D >= ``enough``), each set from the last's
    theta_F, and only a set whose point reaches ``enough``, or the widest, is yielded (each
    point yielded costs the certificate a product with X^T), then, if the widest fell short
    and holds at most MAX_LP_FALLBACK points, the LP's point of that set. With lam = 0, with no tolerance asked for (``enough``
    infinite: the tightest bound), or `LINPROG`, theta_F is the LP's solution of the module
    docstring on every set."""
    n, base = len(y), (z > 0.0).astype(float)
    guess = np.clip(start, 0.0, 1.0)
    sets = list(_free_sets(z))
    ascent = lam > 0.0 and np.isfinite(enough) and not LINPROG
    for k, free in enumerate(sets):
        rows = X[free]
        rows = sp.csr_matrix(rows) if sp.issparse(rows) else sp.csr_matrix(rows * y[free, None])
        if sp.issparse(X):
            rows.data *= np.repeat(y[free], np.diff(rows.indptr))  # y_i x_i, i in F
        widest = k == len(sets) - 1
        if ascent:
            goal = n * enough - base.sum() + base[free].sum()  # N D >= N enough
            image = hinge_sum + rows.T @ (guess[free] - base[free])  # X^T (y o theta)
            guess[free], reached = _ascended(rows, image, guess[free], n, lam, mu, goal)
            if reached or widest:
                yield _completed(base, free, guess[free])
            if reached or not widest or len(free) > MAX_LP_FALLBACK:
                continue  # else the widest set's LP: the ascent fell short of tol
        fitted = _largest_sum(rows, hinge_sum - rows.T @ base[free], n * (mu + lam * np.abs(w)))
        if fitted is not None:
            yield _completed(base, free, fitted)


def _completed(base: np.ndarray, free: np.ndarray, fitted: np.ndarray) -> np.ndarray:
    theta = base.copy()
    theta[free] = fitted
    return theta


def _free_sets(z: np.ndarray):
    """The free sets {|z_i| <= delta scale} of the widths delta in FREE_SET_WIDTHS, each once,
    in the data's order (rows then read in sequence); at most MAX_FREE points, the closest."""
    scale = max(1.0, float(np.abs(z).max(initial=0.0)))
    size = np.abs(z)
    seen = set()
    for width in FREE_SET_WIDTHS:
        free = np.flatnonzero(size <= width * scale)
        if len(free) > MAX_FREE:
            free = np.sort(free[np.argpartition(size[free], MAX_FREE)[:MAX_FREE]])
        if len(free) and len(free) not in seen:
            seen.add(len(free))
            yield free


def _ascended(
    rows, image: np.ndarray, theta: np.ndarray, n: int, lam: float, mu: float, goal: float
) -> np.ndarray:
    """theta_F maximising N D over [0, 1]^F with theta fixed off F, by `box_ascent` from
    ``theta`` (rows: y_i x_i, i in F; image: X^T (y o theta) there): N D = sum theta -
    1/2 ||S(s)||^2 with s = X^T (y o theta) / sqrt(N lam) and S the soft threshold at
    mu sqrt(N / lam); ``goal``: the value of sum theta_F - 1/2 ||S(s)||^2 that certifies the
    tolerance asked for. Returns theta_F and whether it reached the goal."""
    scale, shrink = 1.0 / np.sqrt(n * lam), mu * np.sqrt(n / lam)
    s = image * scale
    theta = free_set_ascent(
        rows * scale, s, theta.copy(), 1.0, FREE_SET_PASSES, FREE_SET_GAIN_TOL, goal, shrink
    )
    excess = np.maximum(np.abs(s) - shrink, 0.0)
    return theta, theta.sum() - 0.5 * (excess @ excess) >= goal


def _largest_sum(rows, fixed: np.ndarray, bound: np.ndarray) -> np.ndarray | None:
    """theta_F in [0, 1]^F of largest sum with |fixed + rows^T theta_F| <= bound on the
    features F touches (HiGHS), None if there is none."""
    rows.sort_indices()
    group, size, unique = _duplicates(rows)
    touched = np.flatnonzero(unique.getnnz(axis=0))
    A = unique[:, touched].T.tocsr()
    result = linprog(
        -np.ones(len(size)),
        A_ub=sp.vstack([A, -A]),
        b_ub=np.r_[bound[touched] - fixed[touched], bound[touched] + fixed[touched]],
        bounds=np.c_[np.zeros(len(size)), size],
        method="highs",
    )
    if result.status != 0:
        return None
    return np.clip(result.x[group] / size[group], 0.0, 1.0)


def _duplicates(rows):
    """(group of each row, size of each group, one row per group) of equal CSR rows: a
    group's rows share one LP variable, their sum (data sets such as a9a repeat rows)."""
    keys = [
        rows.indices[a:b].tobytes() + rows.data[a:b].tobytes()
        for a, b in zip(rows.indptr[:-1], rows.indptr[1:])
    ]
    _, first, group = np.unique(
        np.array(keys, dtype=object), return_index=True, return_inverse=True
    )
    return group, np.bincount(group).astype(float), rows[first]
