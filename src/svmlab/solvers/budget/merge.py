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

The maximiser of s depends only on (mr, kappa) (spec 3.6), so scoring a partner may instead
read h from a table over a TABLE_SIZE x TABLE_SIZE grid of (mr, kappa) in [0, 1]^2, bilinearly
interpolated (`tabulated_h`, the budgeted SGD of Wang, Crammer and Vucetic, 2012): one
exponential for kappa and two for WD at that h, against some 24 for a search at eps = 0.01.
The grid holds the global maximiser (s may be bimodal, where the search may stop at a local
one); between grid nodes across the jump of a bimodal s the interpolated h is off, and the
endpoint check bounds the damage as before. Pairs of opposite signs (mr outside [0, 1]) are
searched.
"""

import math
from typing import NamedTuple

import numpy as np
from numba import njit

GOLDEN = (math.sqrt(5.0) - 1.0) / 2.0
TABLE_SIZE = 101  # grid nodes per axis of the (mr, kappa) table of maximisers
TABLE_SCAN = 64  # intervals of the scan for the global maximiser at a node


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
def h_table(size):
    """The global maximiser of s at the grid nodes mr = i / (2 (size - 1)) <= 1/2 and kappa =
    j / (size - 1): the best of a scan of TABLE_SCAN + 1 points, refined by golden-section
    search around it. For mr < 1/2 it lies in [0, 1/2] (s(h) > s(1 - h) there) and moves
    continuously with (mr, kappa); at mr = 1/2, where a bimodal s has two, the node holds the
    left one, the limit from below; at kappa = 1 (c = 0, s constant) the limit h = mr."""
    table = np.empty((size, size))
    for i in range(size):
        mr = min(0.5 * i / (size - 1), 0.5 - 1e-9)
        for j in range(size):
            if j == size - 1:
                table[i, j] = mr
                continue
            c = -math.log(j / (size - 1)) if j > 0 else 745.0  # exp(-745) underflows
            best, h = -1.0, 0.0
            for k in range(TABLE_SCAN + 1):
                value = s_value(c, mr, k / TABLE_SCAN)
                if value > best:
                    best, h = value, k / TABLE_SCAN
            a, b = max(h - 1.0 / TABLE_SCAN, 0.0), min(h + 1.0 / TABLE_SCAN, 1.0)
            p, q = b - GOLDEN * (b - a), a + GOLDEN * (b - a)
            while b - a >= 1e-10:
                if s_value(c, mr, p) >= s_value(c, mr, q):
                    b, q = q, p
                    p = b - GOLDEN * (b - a)
                else:
                    a, p = p, q
                    q = a + GOLDEN * (b - a)
            middle = 0.5 * (a + b)
            table[i, j] = middle if s_value(c, mr, middle) >= best else h
    return table


@njit(cache=True)
def tabulated_h(table, mr, kappa):
    """h at (mr, kappa) in [0, 1]^2, bilinear between the table's nodes; for mr > 1/2 by the
    symmetry h(mr) = 1 - h(1 - mr)."""
    upper = mr > 0.5
    last = table.shape[0] - 1
    x, y = 2.0 * (1.0 - mr if upper else mr) * last, kappa * last
    i, j = min(int(x), last - 1), min(int(y), last - 1)
    fx, fy = x - i, y - j
    h = (1.0 - fx) * ((1.0 - fy) * table[i, j] + fy * table[i, j + 1]) + fx * (
        (1.0 - fy) * table[i + 1, j] + fy * table[i + 1, j + 1]
    )
    return 1.0 - h if upper else h


@njit(cache=True)
def merge_at(beta_m, beta_n, c, h):
    """The merge at position h."""
    return _merge(beta_m, beta_n, c, math.exp(-c), h)


@njit(cache=True)
def _merge(beta_m, beta_n, c, kappa, h):
    """The merge at position h, given kappa = exp(-c): the endpoints take no exponential
    (k(z_m, z) and k(z_n, z) are then kappa and 1, bit for bit what exp gives)."""
    if h == 0.0:
        return merge_of(beta_m, beta_n, kappa, h, kappa, 1.0)
    if h == 1.0:
        return merge_of(beta_m, beta_n, kappa, h, 1.0, kappa)
    return merge_of(beta_m, beta_n, kappa, h, math.exp(-c * (1.0 - h) ** 2), math.exp(-c * h * h))


@njit(cache=True)
def merge_of(beta_m, beta_n, kappa, h, near, far):
    """The merge at position h given near = k(z_m, z) and far = k(z_n, z)."""
    beta_z = beta_m * near + beta_n * far
    wd = beta_m * beta_m + beta_n * beta_n + 2.0 * beta_m * beta_n * kappa - beta_z * beta_z
    return Merge(h, beta_z, wd)


@njit(cache=True)
def best_merge(beta_m, beta_n, c, eps, endpoint_check, table=None):
    """The merge of the golden-section position (h = 1/2 when beta_m + beta_n = 0; with a
    ``table`` of `h_table` (not empty), its h where 0 <= mr <= 1), or of an endpoint h in
    {0, 1} if that degrades less and ``endpoint_check`` is on."""
    kappa = math.exp(-c)
    h = position(beta_m, beta_n, kappa, table)
    if math.isnan(h):
        h = golden_section(c, beta_m / (beta_m + beta_n), eps).h
    return checked(beta_m, beta_n, kappa, _merge(beta_m, beta_n, c, kappa, h), endpoint_check)


@njit(cache=True)
def position(beta_m, beta_n, kappa, table=None):
    """The merge's h where no search is needed: 1/2 when beta_m + beta_n = 0, the table's h
    (a ``table`` not empty) where 0 <= mr <= 1; NaN elsewhere (a golden-section search)."""
    total = beta_m + beta_n
    if total == 0.0:
        return 0.5
    if table is not None and table.shape[0] > 1 and 0.0 <= beta_m / total <= 1.0:
        return tabulated_h(table, beta_m / total, kappa)
    return math.nan


@njit(cache=True)
def checked(beta_m, beta_n, kappa, best, endpoint_check):
    """``best``, or the merge at an endpoint h in {0, 1} if that degrades less and
    ``endpoint_check`` is on."""
    if not endpoint_check:
        return best
    low = merge_of(beta_m, beta_n, kappa, 0.0, kappa, 1.0)
    best = low if low.wd < best.wd else best
    high = merge_of(beta_m, beta_n, kappa, 1.0, 1.0, kappa)
    return high if high.wd < best.wd else best
