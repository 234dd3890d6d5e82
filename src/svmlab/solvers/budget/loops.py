r"""One epoch of BSCA and of BSGD over a given order of training indices (spec 004, 2.2 and 4.3).

BSCA, step on i: g = 1 - y_i (f(x_i) + b) with the budgeted model f and the offset b (0
without a bias); alpha_i <- [alpha_i + g / Q_ii]_0^C; a nonzero step delta appends
y_i delta phi(x_i) and, past the budget, one maintenance runs. alpha changes only through these
steps; merges never touch it.

BSGD (Pegasos with a budget), step t on i: the model is w = (nC / t) sum_j c_j phi(z_j), so the
decay w <- (1 - 1/t) w leaves c unchanged; a margin violation y_i (f(x_i) + b) < 1 (f of
w^(t-1)) appends c = y_i and counts v_i += 1, so that alpha_i = nC v_i / t (eq. 4). Merges act
on c (they are scale-invariant).

``stats`` accumulates STAT_NAMES; the time spent in maintenance is read from the monotonic clock.
"""

import math

from numba import njit

from svmlab.numerics.trace_buffer import monotonic_ns
from svmlab.solvers.budget.model import add_term, decision, maintain

STAT_NAMES = (
    "steps",
    "nonzero_steps",
    "negative_steps",
    "merges",
    "zero_drops",
    "merge_ns",
    "sum_wd",
    "sum_sqrt_wd",
)
STEPS, NONZERO, NEGATIVE, MERGES, ZERO_DROPS, MERGE_NS, SUM_WD, SUM_SQRT_WD = range(8)


@njit(cache=True)
def _append(model, X, i, coef, label, spec, opt, u, iteration, scale, stats, log):
    """Add coef phi(x_i) and keep the budget, with the maintenance's statistics."""
    if add_term(model, X, i, coef, label, opt.accumulate) and model.size[0] > opt.budget:
        start = monotonic_ns()
        done = maintain(model, spec, opt, u, iteration, scale, log)
        stats[MERGE_NS] += monotonic_ns() - start
        stats[MERGES] += 1
        stats[ZERO_DROPS] += done.removed == 2
        stats[SUM_WD] += done.wd
        stats[SUM_SQRT_WD] += math.sqrt(max(done.wd, 0.0))


@njit(cache=True)
def bsca_epoch(X, y, qdiag, alpha, C, model, spec, opt, order, u, t0, b, stats, log):
    """BSCA steps on order[0], order[1], ...; the first is step t0 + 1."""
    for s in range(order.shape[0]):
        i = order[s]
        stats[STEPS] += 1
        if qdiag[i] <= 0.0:
            continue
        g = 1.0 - y[i] * (decision(spec, X, i, model) + b)
        new = min(max(alpha[i] + g / qdiag[i], 0.0), C)
        delta = new - alpha[i]
        if delta == 0.0:
            continue
        alpha[i] = new
        stats[NONZERO] += 1
        stats[NEGATIVE] += delta < 0.0
        _append(model, X, i, y[i] * delta, y[i], spec, opt, u[s], t0 + s + 1, 1.0, stats, log)


@njit(cache=True)
def bsgd_epoch(X, y, v, nC, model, spec, opt, order, u, t0, b, stats, log):
    """BSGD steps on order[0], order[1], ...; the first is step t0 + 1."""
    for s in range(order.shape[0]):
        i = order[s]
        t = t0 + s + 1
        stats[STEPS] += 1
        f = (nC / (t - 1) * decision(spec, X, i, model) if t > 1 else 0.0) + b
        if y[i] * f < 1.0:
            v[i] += 1
            stats[NONZERO] += 1
            _append(model, X, i, y[i], y[i], spec, opt, u[s], t, nC / t, stats, log)
