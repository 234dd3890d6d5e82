"""Rows of the modified kernel K~ of the L2-SVM, served from an LRU row cache of bounded size.

    K~(i, j) = y_i y_j (k(x_i, x_j) + 1) + [i == j] / C,    k = linear | rbf | poly (LIBSVM's)

A cached row is keyed by a data index i and holds the prefix K~(i, core[0:length]) of the
current core list (the solver's active points, in slot order). A request for a longer prefix
computes only the missing tail. Rows live in one buffer of shape (n_slots, width) whose size is
bounded by the configured budget: when the core list outgrows `width`, the width doubles and only
the most recently used rows that still fit are kept. When the solver removes core slot p by
moving its last slot into p, `remove_core_slot` applies the same move to every cached row.
No n x n matrix is ever formed.

The data are read through `svmlab.numerics.rows.Rows` (CSR, or dense rows as a flat buffer).
`kernel_data` bundles them with the kernel parameters into the tuple `kx` the numba code takes:
(data, indices, indptr, dense, squared row norms, y, kernel code, gamma, coef0, degree, 1/C,
a zeroed work vector of n_features for the sparse scatter, the CSC arrays data, row indices and
column pointers of sparse X, and a zeroed accumulator of n_points). Sparse dot products x_i . x_j
over many j are taken column by column (the columns of x_i's nonzero features, accumulated),
which costs the nonzeros of those columns instead of those of all the rows.
"""

import math

import numpy as np
import scipy.sparse as sp
from numba import njit, objmode

from svmlab.numerics.rows import row_norms, rows_of

KERNEL_CODES = {"linear": 0, "rbf": 1, "poly": 2}
LINEAR, RBF, POLY = 0, 1, 2
FIRST_WIDTH = 256
DENSE_FROM = 0.25  # CSR input at least this dense is read as dense rows
VECTOR_EXP_FROM = 64  # rbf rows at least this long call numpy's exp (a call costs about 2 us)

# meta entries of the LRU state
HEAD, TAIL, N_USED, N_SLOTS, WIDTH, BUDGET = range(6)
# stats entries: kernel entries computed, kernel entries served from the cache
EVALS, SERVED = range(2)


def kernel_data(X, y: np.ndarray, kernel: str, gamma: float, degree: int, coef0: float,
                C: float) -> tuple:
    """The numba-side view of (X, y, kernel, C): rows, squared norms, labels and parameters.

    X is dense or CSR with int32 indices (CSR rows are read through a dense scatter of x_i, so
    their column order does not matter).
    """
    rows = rows_of(X)
    squared_norms = row_norms(rows)[1]
    work = np.zeros(X.shape[1])
    columns = rows_of(X.T.tocsr()) if sp.issparse(X) else rows_of(np.empty((0, 0)))
    return (rows.data, rows.indices, rows.indptr, rows.dense, squared_norms,
            np.ascontiguousarray(y, dtype=np.float64), KERNEL_CODES[kernel], float(gamma),
            float(coef0), int(degree), 1.0 / float(C), work, columns.data, columns.indices,
            columns.indptr, np.zeros(X.shape[0] if sp.issparse(X) else 0))


def rows_layout(X):
    """X as the rows kernel_data reads fastest: a CSR matrix of density at least DENSE_FROM
    becomes a dense array (its dot products then vectorise; at most 1 / (1.5 DENSE_FROM) times
    the memory of the CSR arrays)."""
    if sp.issparse(X) and X.nnz >= DENSE_FROM * X.shape[0] * X.shape[1]:
        return X.toarray()
    return X


def new_cache(n_points: int, cache_mb: float, width: int = FIRST_WIDTH) -> tuple[np.ndarray, tuple]:
    """(buf, lru): an empty row cache for n_points data points within cache_mb megabytes (at
    least two rows), with rows of `width` columns to start with."""
    budget = max(int(cache_mb * 2**20) // 8, 2 * width)
    n_slots = min(max(budget // width, 2), n_points)
    lru = (np.zeros(n_points, np.int64),          # length of the cached prefix, per slot
           np.full(n_points, -1, np.int64),       # data index held by each slot
           np.full(n_points, -1, np.int64),       # slot of each data index
           np.full(n_points, -1, np.int64),       # previous slot (towards most recent)
           np.full(n_points, -1, np.int64),       # next slot (towards least recent)
           np.array([-1, -1, 0, n_slots, width, budget], np.int64),
           np.zeros(2, np.int64))
    return np.empty((n_slots, width)), lru


@njit(cache=True)
def rbf_exponent(gamma, dot, sq_i, sq_j):
    """-gamma ||x_i - x_j||^2 from x_i.x_j and the squared norms (rounding clipped at 0)."""
    return -gamma * max(sq_i + sq_j - 2.0 * dot, 0.0)


@njit(cache=True)
def base_kernel(kind, gamma, coef0, degree, dot, sq_i, sq_j):
    """k(x_i, x_j) from x_i.x_j and the squared norms."""
    if kind == RBF:
        return math.exp(rbf_exponent(gamma, dot, sq_i, sq_j))
    if kind == POLY:
        return (gamma * dot + coef0) ** degree
    return dot


@njit(cache=True)
def diagonal(kx):
    """D_i = K~(i, i) = k(x_i, x_i) + 1 + 1/C for every point."""
    sq, kind, gamma, coef0, degree, inv_c = kx[4], kx[6], kx[7], kx[8], kx[9], kx[10]
    out = np.empty(sq.shape[0])
    for i in range(sq.shape[0]):
        out[i] = base_kernel(kind, gamma, coef0, degree, sq[i], sq[i], sq[i]) + 1.0 + inv_c
    return out


@njit(cache=True, fastmath={"reassoc", "contract", "nsz"})
def _dots(kx, i, cols, start, stop, out):
    """out[t] = x_i . x_cols[t] for t in [start, stop) (reassociated sums, so they vectorise).
    Sparse rows: a dot product per row through a scatter of x_i, or X x_i by columns when that
    touches fewer nonzeros (long requests, few and short columns)."""
    data, indices, indptr, dense, work = kx[0], kx[1], kx[2], kx[3], kx[11]
    a, b = indptr[i], indptr[i + 1]
    if dense:
        for t in range(start, stop):
            off = indptr[cols[t]]
            dot = 0.0
            for k in range(b - a):
                dot += data[a + k] * data[off + k]
            out[t] = dot
        return
    col_data, col_rows, col_ptr, acc = kx[12], kx[13], kx[14], kx[15]
    by_rows = (stop - start) * (data.shape[0] / acc.shape[0])
    by_columns = acc.shape[0]  # zeroing the accumulator
    if by_rows > by_columns:  # the columns could cost less (never for short requests): count
        for k in range(a, b):
            by_columns += col_ptr[indices[k] + 1] - col_ptr[indices[k]]
    if by_columns < by_rows:
        for k in range(a, b):  # acc = X x_i, one column of X per nonzero of x_i
            for c in range(col_ptr[indices[k]], col_ptr[indices[k] + 1]):
                acc[col_rows[c]] += data[k] * col_data[c]
        for t in range(start, stop):
            out[t] = acc[cols[t]]
        acc[:] = 0.0
        return
    for k in range(a, b):
        work[indices[k]] = data[k]
    for t in range(start, stop):
        j = cols[t]
        dot = 0.0
        for k in range(indptr[j], indptr[j + 1]):
            dot += data[k] * work[indices[k]]
        out[t] = dot
    for k in range(a, b):
        work[indices[k]] = 0.0


@njit(cache=True)
def fill_row(kx, i, cols, start, stop, out):
    """out[t] = K~(i, cols[t]) for t in [start, stop); returns the number of evaluations.

    Passes simple enough to vectorise: the dot products, the kernel, the label signs. An rbf
    row of at least VECTOR_EXP_FROM values takes its exponentials from numpy, whose SIMD exp
    (within 1 ulp, like libm's) is about 4x faster than the scalar one compiled code calls.
    """
    sq, y, kind, gamma, coef0, degree, inv_c = kx[4], kx[5], kx[6], kx[7], kx[8], kx[9], kx[10]
    _dots(kx, i, cols, start, stop, out)
    vector_exp = kind == RBF and stop - start >= VECTOR_EXP_FROM
    if vector_exp:
        for t in range(start, stop):
            out[t] = rbf_exponent(gamma, out[t], sq[i], sq[cols[t]])
        segment = out[start:stop]
        with objmode():
            np.exp(segment, out=segment)
    for t in range(start, stop):
        j = cols[t]
        k = out[t] if vector_exp else base_kernel(kind, gamma, coef0, degree, out[t], sq[i], sq[j])
        out[t] = y[i] * y[j] * (k + 1.0) + (inv_c if i == j else 0.0)
    return stop - start


@njit(cache=True)
def _unlink(lru, s):
    prev, nxt, meta = lru[3], lru[4], lru[5]
    if prev[s] >= 0:
        nxt[prev[s]] = nxt[s]
    else:
        meta[HEAD] = nxt[s]
    if nxt[s] >= 0:
        prev[nxt[s]] = prev[s]
    else:
        meta[TAIL] = prev[s]
    prev[s] = -1
    nxt[s] = -1


@njit(cache=True)
def _push_front(lru, s):
    prev, nxt, meta = lru[3], lru[4], lru[5]
    prev[s] = -1
    nxt[s] = meta[HEAD]
    if meta[HEAD] >= 0:
        prev[meta[HEAD]] = s
    meta[HEAD] = s
    if meta[TAIL] < 0:
        meta[TAIL] = s


@njit(cache=True)
def cache_row(buf, lru, kx, i, core, q):
    """The slot s with buf[s, :q] = K~(i, core[:q]), computing only what the cache lacks.

    The row becomes the most recently used; a miss evicts the least recently used row.
    """
    length, key, slot_of, meta, stats = lru[0], lru[1], lru[2], lru[5], lru[6]
    s = slot_of[i]
    if s >= 0:
        _unlink(lru, s)
    elif meta[N_USED] < meta[N_SLOTS]:
        s = meta[N_USED]
        meta[N_USED] += 1
    else:
        s = meta[TAIL]
        _unlink(lru, s)
        slot_of[key[s]] = -1
        length[s] = 0
    if key[s] != i:
        key[s] = i
        slot_of[i] = s
        length[s] = 0
    _push_front(lru, s)
    have = min(length[s], q)
    stats[SERVED] += have
    if have < q:
        stats[EVALS] += fill_row(kx, i, core, have, q, buf[s])
        length[s] = q
    return s


@njit(cache=True)
def remove_core_slot(buf, lru, p, q_old):
    """Core slot p was removed by moving slot q_old - 1 into it: do the same in every row."""
    length, meta = lru[0], lru[5]
    last = q_old - 1
    for s in range(meta[N_USED]):
        if length[s] > p:
            if length[s] == q_old:
                buf[s, p] = buf[s, last]
                length[s] = last
            else:
                length[s] = p


@njit(cache=True)
def clear_rows(lru):
    """Forget every cached value (used when the core list is rebuilt from scratch)."""
    length = lru[0]
    for s in range(lru[5][N_USED]):
        length[s] = 0


@njit(cache=True)
def grow_cache(buf, lru, width):
    """A buffer of at least `width` columns within the budget, keeping the most recent rows."""
    length, key, slot_of, prev, nxt, meta = lru[0], lru[1], lru[2], lru[3], lru[4], lru[5]
    new_width = meta[WIDTH]
    while new_width < width:
        new_width *= 2
    n_slots = min(max(meta[BUDGET] // new_width, 2), slot_of.shape[0])
    new_buf = np.empty((n_slots, new_width))
    new_length = np.zeros(n_slots, np.int64)
    new_key = np.full(n_slots, -1, np.int64)
    s, kept = meta[HEAD], 0
    while s >= 0:
        nxt_s = nxt[s]
        if kept < n_slots:
            new_buf[kept, :length[s]] = buf[s, :length[s]]
            new_length[kept] = length[s]
            new_key[kept] = key[s]
            slot_of[key[s]] = kept
            kept += 1
        else:
            slot_of[key[s]] = -1
        s = nxt_s
    length[:] = 0
    key[:] = -1
    prev[:] = -1
    nxt[:] = -1
    length[:n_slots] = new_length
    key[:n_slots] = new_key
    for t in range(kept):
        prev[t] = t - 1
        nxt[t] = t + 1 if t + 1 < kept else -1
    meta[HEAD] = 0 if kept else -1
    meta[TAIL] = kept - 1
    meta[N_USED] = kept
    meta[N_SLOTS] = n_slots
    meta[WIDTH] = new_width
    return new_buf
