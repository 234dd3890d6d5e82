"""Row-wise numba kernels over CSR or dense (C-order) data, both read through one layout.

`Rows` (a NamedTuple numba reads by field) views a matrix as (data, indices, indptr): a CSR matrix as itself, a dense C-order array
as its flat buffer with rows of equal length (no copy; column index = position in the row). The
same loops therefore serve both, with the same summation order: dense and sparse inputs give
bitwise identical results. Indices are unsigned (uint32 view of CSR's int32, uint64 row
pointers): numba then skips the negative-index wraparound test on every access, which makes the
loops about twice as fast.

`loss_pass` is the NESVM oracle's only pass over the data: for every row, the dot product, the
loss and its derivative (a typed loss, see `svmlab.numerics.losses`), and the accumulation of the
gradient, so each row is read once.
`matvec` and `rmatvec` are the plain products X w and X^T r, one pass each; `weighted_gram` is
X' diag(weights) X (with a column of ones appended for a bias), one pass.
"""

from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from numba import njit

from svmlab.numerics.losses import loss_terms


class Rows(NamedTuple):
    """A matrix as rows: data[indptr[i]:indptr[i+1]] holds row i (CSR or dense C-order)."""

    data: np.ndarray  # float64
    indices: np.ndarray  # uint32 column indices (CSR), empty for dense rows
    indptr: np.ndarray  # uint64, n_rows + 1
    dense: bool
    n_rows: int
    n_cols: int


def rows_of(X) -> Rows:
    """Rows of a CSR matrix (int32 indices) or of a dense array (made C-contiguous)."""
    n, p = X.shape
    if sp.issparse(X):
        return Rows(X.data, X.indices.view(np.uint32), X.indptr.astype(np.uint64), False, n, p)
    X = np.ascontiguousarray(X, dtype=np.float64)
    return Rows(
        X.reshape(-1), np.empty(0, np.uint32), np.arange(n + 1, dtype=np.uint64) * p, True, n, p
    )


@njit(cache=True)
def row_norms(rows):
    """(max_j |X_ij|, sum_j X_ij^2) of every row."""
    inf_norm, sq_norm = np.zeros(rows.n_rows), np.zeros(rows.n_rows)
    for i in range(rows.n_rows):
        for k in range(rows.indptr[i], rows.indptr[i + 1]):
            inf_norm[i] = max(inf_norm[i], abs(rows.data[k]))
            sq_norm[i] += rows.data[k] * rows.data[k]
    return inf_norm, sq_norm


@njit(cache=True, error_model="numpy")
def loss_pass(rows, y, w, b, loss, dots, s):
    """One pass over the rows at (w, b): loss sums and s = sum_i c_i y_i X_i.

    For row i: dots[i] = X_i.w, m_i = 1 - y_i (X_i.w + b), and (smoothed loss, exact loss, c_i)
    = loss_terms(loss, i, m_i) for a loss of `svmlab.numerics.losses` (smoothed hinge: c_i = u_i;
    `SquaredLoss`: c_i = m_i). Rows with c_i = 0 are not read a second time.
    Returns (sum smoothed loss, sum exact loss, sum c_i, sum y_i c_i).
    """
    data, indices, indptr, dense = rows.data, rows.indices, rows.indptr, rows.dense
    s[:] = 0.0
    smoothed, exact, sum_c, sum_yc = 0.0, 0.0, 0.0, 0.0
    for i in range(y.shape[0]):
        start, end = indptr[i], indptr[i + 1]
        dot = 0.0
        for k in range(start, end):
            dot += data[k] * w[k - start if dense else indices[k]]
        dots[i] = dot
        m = 1.0 - y[i] * (dot + b)
        value, exact_value, c = loss_terms(loss, i, m)
        smoothed += value
        exact += exact_value
        sum_c += c
        if c != 0.0:
            yc = y[i] * c
            sum_yc += yc
            for k in range(start, end):
                s[k - start if dense else indices[k]] += yc * data[k]
    return smoothed, exact, sum_c, sum_yc


@njit(cache=True)
def matvec(rows, w, out):
    """out = X w, one pass over the rows."""
    data, indices, indptr, dense = rows.data, rows.indices, rows.indptr, rows.dense
    for i in range(out.shape[0]):
        start, end = indptr[i], indptr[i + 1]
        dot = 0.0
        for k in range(start, end):
            dot += data[k] * w[k - start if dense else indices[k]]
        out[i] = dot


@njit(cache=True)
def rmatvec(rows, r, out):
    """out = X^T r, one pass over the rows (a scatter in row order: deterministic)."""
    data, indices, indptr, dense = rows.data, rows.indices, rows.indptr, rows.dense
    out[:] = 0.0
    for i in range(r.shape[0]):
        ri = r[i]
        if ri != 0.0:
            start, end = indptr[i], indptr[i + 1]
            for k in range(start, end):
                out[k - start if dense else indices[k]] += ri * data[k]


@njit(cache=True)
def weighted_gram(rows, weights, bias):
    """Xh' diag(weights) Xh with Xh = [X, e] if bias else X: the upper triangle accumulated row by
    row over each row's nonzeros (in column order; a dense row's zeros are skipped, so dense and
    CSR rows add the same products in the same order), then mirrored."""
    p = rows.n_cols
    dim = p + 1 if bias else p
    M = np.zeros((dim, dim))
    data, indices, indptr, dense = rows.data, rows.indices, rows.indptr, rows.dense
    for i in range(rows.n_rows):
        start, end, wi = indptr[i], indptr[i + 1], weights[i]
        for k in range(start, end):
            if data[k] == 0.0:
                continue
            j = k - start if dense else indices[k]
            c = wi * data[k]
            for m in range(k, end):
                M[j, m - start if dense else indices[m]] += c * data[m]
            if bias:
                M[j, p] += c
        if bias:
            M[p, p] += wi
    for j in range(dim):
        for m in range(j):
            M[j, m] = M[m, j]
    return M
