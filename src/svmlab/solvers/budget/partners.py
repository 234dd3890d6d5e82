r"""A merge's partner: the candidate of least weight degradation, every candidate scored at once.

For the candidates j of the term m (``idx``), with c_j = gamma ||z_m - z_j||^2 and kappa_j =
exp(-c_j): h_j from `merge.position` (the table, or 1/2 when beta_m + beta_j = 0), else by the
golden-section search, run for all of them in lockstep: each iteration's new points and their
exponentials in vector passes (`kernel_row.exp_of`), each bracket updated by the comparisons of
`merge.golden_section` until it is narrower than eps. Then the merged point's two kernel values
for every candidate in two vector passes, and WD with the endpoint check (`merge.checked`); the
first candidate of least WD wins. The search one candidate at a time took some 24 exponentials
per candidate, a scalar call each.
"""

import math

from numba import njit

from svmlab.solvers.budget.kernel_row import exp_of
from svmlab.solvers.budget.merge import GOLDEN, checked, merge_of, position

ROWS = 15  # rows of the float scratch `best_partner` takes


@njit(cache=True)
def best_partner(beta, m, c, kappa, idx, count, table, eps, endpoint_check, work, found, bits):
    """The row j = idx[t], t < count, of least WD merged with m (-1 if count = 0). ``work``:
    ROWS x capacity floats, ``found``: capacity ints, ``bits``: capacity ints (scratch)."""
    h, cs, mr, near, far, x1, x2 = work[0], work[1], work[2], work[3], work[4], work[5], work[6]
    searched = 0
    for t in range(count):
        j = idx[t]
        h[t] = position(beta[m], beta[j], kappa[j], table)
        if math.isnan(h[t]):
            found[searched] = t
            cs[searched], mr[searched] = c[j], beta[m] / (beta[m] + beta[j])
            searched += 1
    if searched > 0:
        _golden(cs, mr, searched, eps, work[7:], work[5:7], work[3:5], bits)
        for k in range(searched):
            h[found[k]] = 0.5 * (work[7, k] + work[8, k])
    for t in range(count):
        x1[t] = c[idx[t]] * (1.0 - h[t]) ** 2
        x2[t] = c[idx[t]] * h[t] * h[t]
    exp_of(x1, -1.0, near, bits, count)
    exp_of(x2, -1.0, far, bits, count)
    best, best_wd = -1, math.inf
    for t in range(count):
        j = idx[t]
        merged = merge_of(beta[m], beta[j], kappa[j], h[t], near[t], far[t])
        wd = checked(beta[m], beta[j], kappa[j], merged, endpoint_check).wd
        if wd < best_wd:
            best, best_wd = j, wd
    return best


@njit(cache=True)
def _s_values(cs, mr, at, out, size, x, e, bits):
    """out[k] = s(at[k]) of `merge.s_value` for k < size, the exponentials in vector passes."""
    for k in range(size):
        x[0, k] = cs[k] * (1.0 - at[k]) ** 2
        x[1, k] = cs[k] * at[k] * at[k]
    exp_of(x[0], -1.0, e[0], bits, size)
    exp_of(x[1], -1.0, e[1], bits, size)
    for k in range(size):
        out[k] = mr[k] * e[0, k] + (1.0 - mr[k]) * e[1, k]


@njit(cache=True)
def _golden(cs, mr, size, eps, state, x, e, bits):
    """`merge.golden_section` of the first ``size`` (c, mr) pairs in lockstep, its branches as
    selects so that the loop vectorises; the brackets [a, b] are left in state[0], state[1]."""
    a, b, p, q, fp, fq, new, left = (
        state[0],
        state[1],
        state[2],
        state[3],
        state[4],
        state[5],
        state[6],
        state[7],
    )
    for k in range(size):
        a[k], b[k] = 0.0, 1.0
        p[k], q[k] = b[k] - GOLDEN * (b[k] - a[k]), a[k] + GOLDEN * (b[k] - a[k])
    _s_values(cs, mr, p, fp, size, x, e, bits)
    _s_values(cs, mr, q, fq, size, x, e, bits)
    while _step(a, b, p, q, fp, fq, new, left, size, eps):
        _s_values(cs, mr, new, new, size, x, e, bits)
        for k in range(size):
            fp[k] = new[k] if left[k] > 0.0 else fp[k]
            fq[k] = new[k] if left[k] < 0.0 else fq[k]


@njit(cache=True)
def _step(a, b, p, q, fp, fq, new, left, size, eps):
    """One golden-section step of every bracket still at least eps wide: new[k] the point to
    evaluate, left[k] 1 (it is the new p), -1 (the new q) or 0 (the bracket is done). Whether
    any bracket moved."""
    moving = 0
    for k in range(size):
        live = b[k] - a[k] >= eps
        keep_left = fp[k] >= fq[k]
        a_k = a[k] if keep_left else p[k]
        b_k = q[k] if keep_left else b[k]
        inner = p[k] if keep_left else q[k]
        f_inner = fp[k] if keep_left else fq[k]
        point = b_k - GOLDEN * (b_k - a_k) if keep_left else a_k + GOLDEN * (b_k - a_k)
        a[k] = a_k if live else a[k]
        b[k] = b_k if live else b[k]
        p[k] = (point if keep_left else inner) if live else p[k]
        q[k] = (inner if keep_left else point) if live else q[k]
        fp[k] = (fp[k] if keep_left else f_inner) if live else fp[k]
        fq[k] = (f_inner if keep_left else fq[k]) if live else fq[k]
        new[k] = point if live else 0.5
        left[k] = (1.0 if keep_left else -1.0) if live else 0.0
        moving += live
    return moving > 0
