r"""The budgeted kernel model f(x) = sum_j beta_j k(x, z_j) and its budget maintenance.

The model holds at most B terms (B + 1 for a moment). Rows of Z are training points or merged
points, kept as a dense `numerics.kernels.PointSet` and as columns (Z^T), from which
`kernel_row` takes a point's kernel values against every term; each row's squared norm and
column are updated with the row. Each term has a label (its training point's, inherited by a
merge from the first partner m) and an owner: the training index whose unmerged term the row
holds, or -1 for a merged point. In accumulate mode a step on a point that owns a row adds to that row
instead of appending a twin, which makes a model with no merges exactly w(alpha).

Maintenance (once per append that makes |M| = B + 1; spec 004, section 3):
    merge    m = argmin_{beta_j != 0} |beta_j| (lowest row on ties); its partner n among the
             candidates of the partner rule (same_label, same_sign, all, or a random same-label
             one) minimises the weight degradation of a merge at the search tolerance, or at
             the tabulated h (strict <: the first row on ties); the pair is merged at the
             final tolerance. If m has no
             candidate, the next-smallest |beta_j| is tried. A merged coefficient of exactly 0
             is dropped (|M| becomes B - 1). Gaussian kernel only.
    remove   m is dropped; WD = beta_m^2 k(z_m, z_m). Any kernel.
Rows are deleted by moving the last row into them.

Every maintenance writes one row of the merge log: the step, h, WD, beta_m, beta_n, kappa =
k(z_m, z_n) and the partner's owner (-1: a merged point); a removal has h = kappa = NaN,
beta_n = 0 and partner -1.
"""

import math
from typing import NamedTuple

import numpy as np
from numba import njit

from svmlab.numerics.kernels import PointSet, kernel_map, point_set, rbf_exponent
from svmlab.solvers.budget.kernel_row import column_dots, exp_of, kernel_row
from svmlab.solvers.budget.merge import best_merge
from svmlab.solvers.budget.partners import ROWS, best_partner

MERGE, REMOVE = 0, 1
MAINTENANCE = {"merge": MERGE, "remove": REMOVE}
SAME_LABEL, SAME_SIGN, ALL, RANDOM = 0, 1, 2, 3
PARTNER_RULES = {"same_label": SAME_LABEL, "same_sign": SAME_SIGN, "all": ALL, "random": RANDOM}
LOG_COLUMNS = ("iteration", "h", "wd", "beta_m", "beta_n", "kappa", "partner")


class Model(NamedTuple):
    """The terms beta_j phi(z_j), j < size[0], and their bookkeeping."""

    Z: np.ndarray  # (capacity, n_features) points
    points: PointSet  # Z as a PointSet (its rows view Z)
    beta: np.ndarray  # (capacity,) coefficients
    label: np.ndarray  # (capacity,) int8 class label of each term
    owner: np.ndarray  # (capacity,) training index whose unmerged term the row holds, or -1
    slot_of: np.ndarray  # (n_train,) row of training point i's unmerged term, or -1
    size: np.ndarray  # int64[1]: number of terms
    work: np.ndarray  # (capacity,) dot products, exponents or partner scores
    ZT: np.ndarray  # (n_features, capacity) Z's columns
    row: np.ndarray  # (capacity,) kernel values of the last decision's point, or kappa
    scores: np.ndarray  # (partners.ROWS, capacity) scratch of a partner search
    index: np.ndarray  # (2, capacity) int64 scratch of a partner search
    bits: np.ndarray  # (capacity,) int64 scratch of `kernel_row.exp_of`


class Options(NamedTuple):
    """How the budget is kept."""

    budget: int
    maintenance: int  # MERGE or REMOVE
    rule: int  # partner rule of a merge
    eps_search: float  # golden-section tolerance while scoring partners
    eps_final: float  # golden-section tolerance of the merge performed
    endpoint_check: bool  # also try h in {0, 1}
    accumulate: bool  # a step on a point owning a row adds to it
    table: np.ndarray = np.empty((0, 0))  # merge.h_table for the partner scores; empty:
    #                                         golden-section search


class MergeLog(NamedTuple):
    """Rows of LOG_COLUMNS, count[0] of them used; zero rows: nothing is logged."""

    rows: np.ndarray
    count: np.ndarray


class Maintained(NamedTuple):
    """What one maintenance did: its weight degradation and the terms it removed (1 or 2)."""

    wd: float
    removed: int


def new_model(n_train: int, n_features: int, capacity: int) -> Model:
    """An empty model of ``capacity`` rows for a training set of n_train points."""
    Z = np.zeros((capacity, n_features))
    return Model(
        Z,
        point_set(Z),
        np.zeros(capacity),
        np.zeros(capacity, np.int8),
        np.full(capacity, -1, np.int64),
        np.full(n_train, -1, np.int64),
        np.zeros(1, np.int64),
        np.zeros(capacity),
        np.zeros((n_features, capacity)),
        np.zeros(capacity),
        np.zeros((ROWS, capacity)),
        np.zeros((2, capacity), np.int64),
        np.zeros(capacity, np.int64),
    )


def new_log(rows: int) -> MergeLog:
    return MergeLog(np.empty((rows, len(LOG_COLUMNS))), np.zeros(1, np.int64))


@njit(cache=True)
def decision(spec, X, i, model):
    """f(x_i) = sum_j beta_j k(x_i, z_j) for row i of the PointSet X."""
    size = model.size[0]
    kernel_row(spec, X, i, model.ZT, model.points.sq_norms, size, model.work, model.row, model.bits)
    return _weighted_sum(model.beta, model.row, size)


@njit(cache=True, fastmath={"reassoc", "contract", "nsz"})
def _weighted_sum(beta, values, size):
    """sum_j beta_j values_j for j < size (reassociated, so that it vectorises)."""
    f = 0.0
    for j in range(size):
        f += beta[j] * values[j]
    return f


@njit(cache=True)
def decisions(spec, X, model):
    """f(x_i) of every row of X."""
    out = np.empty(X.sq_norms.shape[0])
    for i in range(out.shape[0]):
        out[i] = decision(spec, X, i, model)
    return out


@njit(cache=True)
def add_term(model, X, i, coef, label, accumulate):
    """Add coef phi(x_i); True if a row was appended (False: added to i's own row)."""
    row = model.slot_of[i]
    if accumulate and row >= 0:
        model.beta[row] += coef
        return False
    row = model.size[0]
    rows = X.rows
    model.Z[row, :] = 0.0
    model.ZT[:, row] = 0.0
    for k in range(rows.indptr[i], rows.indptr[i + 1]):
        feature = k - rows.indptr[i] if rows.dense else rows.indices[k]
        model.Z[row, feature] = model.ZT[feature, row] = rows.data[k]
    model.points.sq_norms[row] = X.sq_norms[i]
    model.beta[row], model.label[row], model.owner[row] = coef, label, i
    model.slot_of[i] = row
    model.size[0] = row + 1
    return True


@njit(cache=True)
def _release(model, row):
    """Row ``row`` no longer holds its owner's unmerged term."""
    if model.owner[row] >= 0:
        model.slot_of[model.owner[row]] = -1
        model.owner[row] = -1


@njit(cache=True)
def _delete(model, row):
    """Remove row ``row`` by moving the last row into it."""
    _release(model, row)
    last = model.size[0] - 1
    if row != last:
        model.Z[row, :] = model.Z[last, :]
        model.ZT[:, row] = model.ZT[:, last]
        model.points.sq_norms[row] = model.points.sq_norms[last]
        model.beta[row], model.label[row] = model.beta[last], model.label[last]
        model.owner[row] = model.owner[last]
        if model.owner[row] >= 0:
            model.slot_of[model.owner[row]] = row
        model.owner[last] = -1
    model.size[0] = last


@njit(cache=True)
def _candidate(beta, label, rule, m, j):
    """Whether row j may merge with row m (arrays, not the model: this runs B times a merge)."""
    if j == m:
        return False
    if rule == SAME_SIGN:
        return (beta[j] > 0.0) == (beta[m] > 0.0)
    return rule == ALL or label[j] == label[m]


@njit(cache=True)
def _partner(model, opt, gamma, m, u):
    """The partner row of m (-1 if m has no candidate); model.work holds c_j = gamma ||z_m -
    z_j||^2 afterwards."""
    size, c, beta, label, idx = model.size[0], model.work, model.beta, model.label, model.index[0]
    column_dots(model.points, m, model.ZT, size, c)
    sq = model.points.sq_norms
    count = 0
    for j in range(size):
        c[j] = -rbf_exponent(gamma, c[j], sq[m], sq[j])
        if _candidate(beta, label, opt.rule, m, j):
            idx[count] = j
            count += 1
    if count == 0:
        return -1
    if opt.rule == RANDOM:
        return idx[min(int(u * count), count - 1)]
    exp_of(c, -1.0, model.row, model.bits, size)
    return best_partner(
        beta,
        m,
        c,
        model.row,
        idx,
        count,
        opt.table,
        opt.eps_search,
        opt.endpoint_check,
        model.scores,
        model.index[1],
        model.bits,
    )


@njit(cache=True)
def _smallest(beta, size):
    """argmin_{beta_j != 0} |beta_j| (lowest row on ties), -1 if every beta_j is 0."""
    m, smallest = -1, np.inf
    for j in range(size):
        if beta[j] != 0.0 and abs(beta[j]) < smallest:
            m, smallest = j, abs(beta[j])
    return m


@njit(cache=True)
def _log(log, iteration, h, wd, beta_m, beta_n, kappa, partner):
    k = log.count[0]
    if k < log.rows.shape[0]:
        row = log.rows[k]
        row[0], row[1], row[2], row[3] = iteration, h, wd, beta_m
        row[4], row[5], row[6] = beta_n, kappa, partner
        log.count[0] = k + 1


@njit(cache=True)
def maintain(model, spec, opt, u, iteration, scale, log):
    """Bring the model back within the budget (one merge or removal). ``scale`` multiplies the
    coefficients in the log and WD (BSGD keeps its coefficients up to a common factor)."""
    size, beta = model.size[0], model.beta
    m = max(_smallest(beta, size), 0)
    n = -1
    if opt.maintenance == MERGE:
        n = _partner(model, opt, spec.gamma, m, u)
        if n < 0:  # m's label or sign is unique: try the others by increasing |beta|
            for j in np.argsort(np.abs(beta[:size]), kind="mergesort"):
                if beta[j] != 0.0 and j != m:
                    n = _partner(model, opt, spec.gamma, j, u)
                    if n >= 0:
                        m = j
                        break
    if n < 0:  # removal (or no pair to merge)
        sq = model.points.sq_norms[m]
        wd = beta[m] * beta[m] * kernel_map(spec, sq, sq, sq) * scale * scale
        _log(log, iteration, np.nan, wd, beta[m] * scale, 0.0, np.nan, -1)
        _delete(model, m)
        return Maintained(wd, 1)
    c = model.work[n]
    merged = best_merge(beta[m], beta[n], c, opt.eps_final, opt.endpoint_check)
    wd = merged.wd * scale * scale
    _log(
        log, iteration, merged.h, wd, beta[m] * scale, beta[n] * scale, math.exp(-c), model.owner[n]
    )
    h = merged.h
    model.Z[m, :] = h * model.Z[m, :] + (1.0 - h) * model.Z[n, :]
    model.ZT[:, m] = model.Z[m, :]
    sq = 0.0
    for k in range(model.Z.shape[1]):
        sq += model.Z[m, k] * model.Z[m, k]
    model.points.sq_norms[m] = sq
    beta[m] = merged.beta_z
    _release(model, m)
    if merged.beta_z != 0.0:
        _delete(model, n)
        return Maintained(wd, 1)
    _delete(model, max(m, n))
    _delete(model, min(m, n))
    return Maintained(wd, 2)
