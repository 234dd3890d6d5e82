"""Nesterov smoothings of the hinge loss and of |t| (NESVM, Zhou, Tao and Wu, Eqs.5-10, 23-28).

Smoothed hinge of a margin violation m with quadratic-zone width t = mu * a_i (a_i = ||X_i||_inf):

    h_t(m) = max_{0 <= u <= 1} u m - (t/2) u^2  =  0             if m <= 0
                                                   m - t/2       if m >= t
                                                   m^2 / (2t)    otherwise
    its maximiser u = clip(m / t, 0, 1) is the derivative dh_t/dm.

A zero row (t = 0) has no smoothing: h_0(m) = max(0, m) with u = 1 where m > 0.

The losses of `svmlab.numerics.rows.loss_pass` are typed pieces: a NamedTuple holds the loss's
data, and ``loss_terms(loss, i, m)`` gives row i's (smoothed loss, exact loss, c) for a margin
violation m = 1 - y f(x), c being the row's coefficient in the gradient. A tuple with a per-row
``width`` is the smoothed hinge, the formulation part `svmlab.estimator.formulations.
SmoothedHinge` (one class for the certificates and the compiled pass; this layer may not
import it, so it knows the tuple by that field); `SquaredLoss()` is the LS-SVM's loss. Compiled
code chooses the implementation by the loss's type (numba's `overload`), so a pass is compiled
once per loss and stays in numba's on-disk cache (a function passed as a value would defeat the
cache: its type changes in every process).

Smoothed |t| (Huber): l_mu(t) = max_{-1 <= u <= 1} u t - (mu/2) u^2, u = clip(t / mu, -1, 1).

Square-root smoothed hinge of u = 1 - y w.x (Hajewski, Oliveira, Stewart; spec 001 §1.2):
j_alpha(u) = (u + sqrt(alpha^2 + u^2)) / 2, C-infinity, with max(0, u) < j_alpha(u) <= max(0, u) +
alpha/2. `sqrt_hinge` evaluates it and its two derivatives without cancellation or overflow.
"""

from typing import NamedTuple

import numpy as np
from numba import njit
from numba.extending import overload


@njit(cache=True, error_model="numpy")
def smoothed_hinge(m: float, t: float) -> tuple[float, float]:
    """(h_t(m), u): the smoothed hinge of a margin violation m and its dual maximiser.

    Branch-free (u by min/max, h_t = u m - t u^2 / 2, Eq.5 at Eq.6), so that samples falling in
    different zones cost no mispredicted branches.
    """
    if t == 0.0:
        return max(m, 0.0), 1.0 if m > 0.0 else 0.0
    u = min(max(m / t, 0.0), 1.0)
    return u * (m - 0.5 * t * u), u


class SquaredLoss(NamedTuple):
    """m^2 (the LS-SVM), unsmoothed; c = m (the factor 2 is the caller's)."""


def loss_terms(loss, i, m):
    """(smoothed loss, exact loss, c) of row i's margin violation m: compiled code only."""
    raise TypeError("loss_terms is compiled by numba; call it from @njit code")


@overload(loss_terms)
def _loss_terms(loss, i, m):
    if getattr(loss, "fields", None) == ("width",):  # h_t with t = width[i]: c = u

        def smoothed_hinge_terms(loss, i, m):
            value, u = smoothed_hinge(m, loss.width[i])
            return value, max(0.0, m), u

        return smoothed_hinge_terms
    if getattr(loss, "instance_class", None) is SquaredLoss:

        def squared_terms(loss, i, m):
            return m * m, m * m, m

        return squared_terms
    return None


@njit(cache=True, error_model="numpy")
def huber(w: np.ndarray, mu: float) -> tuple[float, np.ndarray]:
    """(sum_j l_mu(w_j), u): the smoothed l1 norm of w and its gradient u = clip(w / mu, -1, 1)."""
    u = np.empty_like(w)
    total = 0.0
    for j in range(w.shape[0]):
        a = abs(w[j])
        if a >= mu:
            total += a - 0.5 * mu
            u[j] = 1.0 if w[j] > 0 else -1.0
        else:
            total += 0.5 * w[j] * w[j] / mu
            u[j] = w[j] / mu
    return total, u


@njit(cache=True)
def sqrt_hinge(u: float, alpha: float) -> tuple[float, float, float]:
    """(j_alpha(u), j_alpha'(u), j_alpha''(u)) of the square-root smoothed hinge (alpha > 0).

    With r = hypot(alpha, u): u >= 0 uses j = (u + r)/2, j' = (1 + u/r)/2; u < 0 uses the
    cancellation-free j = alpha^2 / (2 (r - u)), j' = (alpha/r)(alpha/(r - u))/2; and
    j'' = (alpha/r)^2 / (2r), so no alpha^2 + u^2 or r^3 overflows (spec 001 §1.2).
    """
    r = np.hypot(alpha, u)
    if u >= 0.0:
        j, j1 = 0.5 * u + 0.5 * r, 0.5 + 0.5 * (u / r)
    else:
        j, j1 = alpha * alpha / (2.0 * (r - u)), 0.5 * (alpha / r) * (alpha / (r - u))
    q = alpha / r
    return j, j1, 0.5 * q * q / r
