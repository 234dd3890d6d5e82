r"""Certified duality gap of the exact (unsmoothed) problem of the l1 Newton solver.

    P(w) = lam/2 ||w||_2^2 + mu ||w||_1 + 1/N sum_i max(0, 1 - y_i x_i.w)      (spec 001 (1.2))

With lam = 0 this is the LP-SVM, the exact l1 problem: mu times objective_hinge_l1 at
C = 1/(N mu); the bound below is then the estimator layer's hinge_l1 bound for the same dual
point (without its free-set least squares, too slow on a9a-sized data). Its Fenchel dual over theta in [0, 1]^N, with v = 1/N X^T (y o theta), is

    D(theta) = mean(theta) - (1/(2 lam)) ||S_mu(v)||^2        (lam > 0; S_mu: soft threshold)
    D(theta) = mean(theta)  if ||v||_inf <= mu, else -inf     (lam = 0)

so every theta gives the lower bound max_t D(t theta) over 0 <= t <= 1/max(theta). The dual
points tried are the smoothed problem's own, theta_i = j_alpha'(z_i) (exact at the smoothed
optimum, spec §1.4), and the hinge's subgradient 1[z_i > 0].
"""

import numpy as np

from svmlab.estimator.certificates import Certificate

FORMULATION = "hinge_elastic_net"


def exact_objective(margins: np.ndarray, w: np.ndarray, lam: float, mu: float) -> float:
    """P(w) from the margins y_i x_i.w."""
    return float(np.maximum(1.0 - margins, 0.0).mean() + 0.5 * lam * (w @ w)
                 + mu * np.abs(w).sum())


def scaled_dual(theta: np.ndarray, v: np.ndarray, lam: float, mu: float) -> float:
    """max over 0 <= t <= 1/max(theta) of D(t theta), v = 1/N X^T (y o theta)."""
    m = float(theta.mean())
    if m <= 0.0:
        return 0.0
    t_max = 1.0 / float(theta.max())
    size = np.abs(v)
    size = size[size > 0.0]
    if lam == 0.0:
        largest = size.max(initial=0.0)
        return min(t_max, mu / largest if largest > 0.0 else np.inf) * m
    # D(t theta) = t m - sum_k max(t |v_k| - mu, 0)^2 / (2 lam) is concave in t; its slope is
    # linear between the kinks t_k = mu/|v_k| (sorted): find the segment holding its zero.
    kinks = mu / size
    order = np.argsort(kinks)
    kinks, size = kinks[order], size[order]
    roots = (lam * m + mu * np.cumsum(size)) / np.cumsum(size * size)
    within = np.flatnonzero(roots <= np.append(kinks[1:], np.inf))
    t = min(t_max, roots[within[0]] if len(within) else np.inf)
    return t * m - float(np.square(np.maximum(t * size - mu, 0.0)).sum()) / (2.0 * lam)


def certificate(primal: float, candidates, lam: float, mu: float) -> Certificate:
    """The Certificate of P at a model with value ``primal``; ``candidates`` yields
    (theta, v, source) dual points."""
    best, source = -np.inf, "solver"
    for theta, v, origin in candidates:
        value = scaled_dual(theta, v, lam, mu)
        if value > best:
            best, source = value, origin
    return Certificate(FORMULATION, float(primal), float(best), source)
