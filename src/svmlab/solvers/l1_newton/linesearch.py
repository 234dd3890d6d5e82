"""Exact line search for a quadratic model plus the unsmoothed l1 term (spec 001 §2.4-§2.5).

    phi(s) = a s^2 + b s + mu ||w + s d||_1,   s >= 0,   a >= 0, mu >= 0

phi is convex and piecewise quadratic with kinks at the positive breakpoints -w_k/d_k. The
repaired Algorithm 4 as a prefix scan over the sorted breakpoints, equal breakpoints grouped
(the paper's binary search mishandles ties): the slope phi' rises by 2a per unit of s and by
2 mu sum_tied |d_k| at each kink. Released coordinates (w_k = 0, d_k != 0) add mu |d_k| to
phi'(0+). No fastmath: signs, ties and exact zeros must stay exact.
"""

import numpy as np
from numba import njit

S_CAP = 1e6  # the step when a = 0 and phi decreases without bound (spec A11)


@njit(cache=True)
def initial_slope(w, d, b, mu):
    """phi'(0+) = b + mu sum_k sigma_k d_k, sigma_k = sign(w_k), or sign(d_k) where w_k = 0:
    the exact directional derivative of F_alpha along d."""
    total = 0.0
    for k in range(w.shape[0]):
        if w[k] != 0.0:
            total += d[k] if w[k] > 0.0 else -d[k]
        else:
            total += abs(d[k])
    return b + mu * total


@njit(cache=True)
def linesearch_l1(w, d, b, a, mu):
    """(s, zeroed): the minimiser of phi on s >= 0 and the indices k whose w_k + s d_k is exactly
    zero at s (a kink, ties included; empty otherwise)."""
    none = np.empty(0, np.int64)
    slope = initial_slope(w, d, b, mu)
    if slope >= 0.0:
        return 0.0, none
    candidates = np.flatnonzero((w != 0.0) & (d != 0.0))
    sigma = -w[candidates] / d[candidates]
    keep = sigma > 0.0
    candidates, sigma = candidates[keep], sigma[keep]
    order = np.argsort(sigma, kind="mergesort")
    previous = 0.0
    i = 0
    while i < order.shape[0]:
        at = sigma[order[i]]
        left = slope + 2.0 * a * (at - previous)  # phi'(at-)
        if left > 0.0:
            return previous - slope / (2.0 * a), none
        end = i
        jump = 0.0
        while end < order.shape[0] and sigma[order[end]] == at:
            jump += 2.0 * mu * abs(d[candidates[order[end]]])
            end += 1
        right = left + jump  # phi'(at+)
        if right >= 0.0:
            return at, candidates[order[i:end]]
        slope, previous, i = right, at, end
    if a > 0.0:
        return previous - slope / (2.0 * a), none
    return S_CAP, none
