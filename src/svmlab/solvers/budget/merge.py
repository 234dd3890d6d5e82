r"""The merge of two Gaussian-kernel terms into one (spec 004, sections 3.4-3.7).

Replacing beta_m phi(z_m) + beta_n phi(z_n) by beta_z phi(z), z = h z_m + (1 - h) z_n, with
c = gamma ||z_m - z_n||^2 and kappa = exp(-c):

    beta_z(h) = beta_m exp(-c (1 - h)^2) + beta_n exp(-c h^2)        (the best beta_z for this z)
    WD(h)     = beta_m^2 + beta_n^2 + 2 beta_m beta_n kappa - beta_z(h)^2

h maximises s(h) = mr exp(-c (1 - h)^2) + (1 - mr) exp(-c h^2), mr = beta_m / (beta_m + beta_n),
found by golden-section search on [0, 1] (the bracket's midpoint once it is narrower than eps).
s can be bimodal for c > 2, so the search may return a local maximum; the endpoint check also
tries h in {0, 1} and keeps the smallest WD, which bounds WD by beta_m^2 (1 - kappa^2), never
worse than removing m. Exponentials are taken of -c (...), never as powers of kappa, which may
underflow.
"""

import math
from typing import NamedTuple

from numba import njit

GOLDEN = (math.sqrt(5.0) - 1.0) / 2.0


class Search(NamedTuple):
    """The golden-section search's answer and its number of loop iterations."""

    h: float
    iterations: int


class Merge(NamedTuple):
    """A merge at position h: the merged coefficient and the weight degradation."""

    h: float
    beta_z: float
    wd: float


@njit(cache=True)
def s_value(c, mr, h):
    """s(h) = mr exp(-c (1 - h)^2) + (1 - mr) exp(-c h^2)."""
    return mr * math.exp(-c * (1.0 - h) ** 2) + (1.0 - mr) * math.exp(-c * h * h)


@njit(cache=True)
def golden_section(c, mr, eps):
    """The maximiser of s on [0, 1] by golden-section search, to a bracket narrower than eps."""
    a, b = 0.0, 1.0
    p, q = b - GOLDEN * (b - a), a + GOLDEN * (b - a)
    fp, fq = s_value(c, mr, p), s_value(c, mr, q)
    iterations = 0
    while b - a >= eps:
        iterations += 1
        if fp >= fq:
            b, q, fq = q, p, fp
            p = b - GOLDEN * (b - a)
            fp = s_value(c, mr, p)
        else:
            a, p, fp = p, q, fq
            q = a + GOLDEN * (b - a)
            fq = s_value(c, mr, q)
    return Search(0.5 * (a + b), iterations)


@njit(cache=True)
def merge_at(beta_m, beta_n, c, h):
    """The merge at position h."""
    beta_z = beta_m * math.exp(-c * (1.0 - h) ** 2) + beta_n * math.exp(-c * h * h)
    wd = beta_m * beta_m + beta_n * beta_n + 2.0 * beta_m * beta_n * math.exp(-c) - beta_z * beta_z
    return Merge(h, beta_z, wd)


@njit(cache=True)
def best_merge(beta_m, beta_n, c, eps, endpoint_check):
    """The merge of the golden-section position (h = 1/2 when beta_m + beta_n = 0), or of an
    endpoint h in {0, 1} if that degrades less and ``endpoint_check`` is on."""
    total = beta_m + beta_n
    h = 0.5 if total == 0.0 else golden_section(c, beta_m / total, eps).h
    best = merge_at(beta_m, beta_n, c, h)
    if endpoint_check:
        for end in (0.0, 1.0):
            other = merge_at(beta_m, beta_n, c, end)
            if other.wd < best.wd:
                best = other
    return best
