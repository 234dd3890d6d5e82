"""Kernel values between any two point sets (training rows, support vectors, merged points),
dense or CSR, in compiled code, with LIBSVM's definitions:

    linear  k(a, b) = a.b       rbf  exp(-gamma ||a - b||^2)       poly  (gamma a.b + coef0)^degree

A `PointSet` holds a matrix's rows (`rows.Rows`), their squared norms and the work arrays its
dot products need. ``kernel_values(spec, A, i, B, cols, start, stop, out)`` fills
out[t] = k(a_i, b_cols[t]) for t in [start, stop), in passes simple enough to vectorise: the
dot products, then the kernel map. Sparse dot products of a sparse a_i with many rows of a
sparse B are taken by B's columns (the columns of a_i's nonzero features, accumulated) when
that touches fewer stored values than row by row. An rbf row of at least VECTOR_EXP_FROM values
takes its exponentials from numpy, whose SIMD exp (within 1 ulp, like libm's) is about 4x
faster than the scalar one compiled code calls.
"""

import math
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from numba import njit, objmode

from svmlab.numerics.rows import Rows, row_norms, rows_of

KERNEL_KINDS = {"linear": 0, "rbf": 1, "poly": 2}
LINEAR, RBF, POLY = 0, 1, 2
VECTOR_EXP_FROM = 64  # rbf rows at least this long call numpy's exp (a call costs about 2 us)
DENSE_FROM = 0.25  # input at least this dense is best read as dense rows, sparser as CSR


class KernelSpec(NamedTuple):
    """A kernel function with numeric parameters (gamma resolved)."""

    kind: int
    gamma: float
    coef0: float
    degree: int


def kernel_spec(name: str, gamma: float, degree: int = 3, coef0: float = 0.0) -> KernelSpec:
    return KernelSpec(KERNEL_KINDS[name], float(gamma), float(coef0), int(degree))


class PointSet(NamedTuple):
    """Points as rows, with what their dot products need."""

    rows: Rows
    sq_norms: np.ndarray  # ||x_i||^2
    work: np.ndarray  # zeroed scatter buffer of n_features
    columns: Rows  # sparse: the rows of X^T (by-column products); dense: empty
    acc: np.ndarray  # sparse: zeroed accumulator of n_points; dense: empty


def point_set(X) -> PointSet:
    """The PointSet of a dense array or a CSR matrix with int32 indices."""
    rows = rows_of(X)
    sparse = sp.issparse(X)
    columns = rows_of(X.T.tocsr()) if sparse else rows_of(np.empty((0, 0)))
    return PointSet(
        rows,
        row_norms(rows)[1],
        np.zeros(X.shape[1]),
        columns,
        np.zeros(X.shape[0] if sparse else 0),
    )


def rows_layout(X):
    """X as the rows dot products read fastest, the same for a dense array and its CSR copy
    (sorted indices, no stored zeros), so that both give the same kernel values bit for bit:
    dense rows from a density of DENSE_FROM on (their dot products then vectorise; at most
    1 / (1.5 DENSE_FROM) times the memory of the CSR arrays), CSR rows below it."""
    n, p = X.shape
    nonzeros = np.count_nonzero(X.data) if sp.issparse(X) else np.count_nonzero(X)
    if nonzeros >= DENSE_FROM * n * p:
        return X.toarray() if sp.issparse(X) else X
    return X if sp.issparse(X) else sp.csr_matrix(X)


@njit(cache=True)
def rbf_exponent(gamma, dot, sq_a, sq_b):
    """-gamma ||a - b||^2 from a.b and the squared norms (rounding clipped at 0)."""
    return -gamma * max(sq_a + sq_b - 2.0 * dot, 0.0)


@njit(cache=True)
def kernel_map(spec, dot, sq_a, sq_b):
    """k(a, b) from a.b and the squared norms."""
    if spec.kind == RBF:
        return math.exp(rbf_exponent(spec.gamma, dot, sq_a, sq_b))
    if spec.kind == POLY:
        return (spec.gamma * dot + spec.coef0) ** spec.degree
    return dot


@njit(cache=True, fastmath={"reassoc", "contract", "nsz"})
def dot_products(A, i, B, cols, start, stop, out):
    """out[t] = a_i . b_cols[t] for t in [start, stop) (reassociated sums, so they vectorise)."""
    a, b = A.rows, B.rows
    a0, a1 = a.indptr[i], a.indptr[i + 1]
    if a.dense and b.dense:
        for t in range(start, stop):
            off = b.indptr[cols[t]]
            dot = 0.0
            for k in range(a1 - a0):
                dot += a.data[a0 + k] * b.data[off + k]
            out[t] = dot
        return
    if a.dense:  # dense a_i, sparse rows of B: read a_i at each row's indices
        for t in range(start, stop):
            j = cols[t]
            dot = 0.0
            for k in range(b.indptr[j], b.indptr[j + 1]):
                dot += b.data[k] * a.data[a0 + b.indices[k]]
            out[t] = dot
        return
    if not b.dense and _by_columns_cheaper(A, i, B, start, stop):
        acc = B.acc
        for k in range(a0, a1):  # acc = B a_i, one column of B per nonzero of a_i
            col = B.columns
            for c in range(col.indptr[a.indices[k]], col.indptr[a.indices[k] + 1]):
                acc[col.indices[c]] += a.data[k] * col.data[c]
        for t in range(start, stop):
            out[t] = acc[cols[t]]
        acc[:] = 0.0
        return
    if b.dense:  # sparse a_i, dense rows of B (e.g. merged points): read them at a_i's indices
        for t in range(start, stop):
            off = b.indptr[cols[t]]
            dot = 0.0
            for k in range(a0, a1):
                dot += a.data[k] * b.data[off + a.indices[k]]
            out[t] = dot
        return
    work = A.work  # scatter a_i, then one sparse row of B at a time
    for k in range(a0, a1):
        work[a.indices[k]] = a.data[k]
    for t in range(start, stop):
        j = cols[t]
        dot = 0.0
        for k in range(b.indptr[j], b.indptr[j + 1]):
            dot += b.data[k] * work[b.indices[k]]
        out[t] = dot
    for k in range(a0, a1):
        work[a.indices[k]] = 0.0


@njit(cache=True)
def _by_columns_cheaper(A, i, B, start, stop):
    """Whether B a_i by B's columns touches fewer stored values than stop - start rows of B."""
    n_b = B.acc.shape[0]
    if n_b == 0:
        return False
    by_rows = (stop - start) * (B.rows.data.shape[0] / n_b)
    by_columns = n_b  # zeroing the accumulator
    if by_rows <= by_columns:  # short requests never pay: skip the count
        return False
    a = A.rows
    for k in range(a.indptr[i], a.indptr[i + 1]):
        f = a.indices[k]
        by_columns += B.columns.indptr[f + 1] - B.columns.indptr[f]
    return by_columns < by_rows


@njit(cache=True)
def kernel_values(spec, A, i, B, cols, start, stop, out):
    """out[t] = k(a_i, b_cols[t]) for t in [start, stop); returns the number of values."""
    dot_products(A, i, B, cols, start, stop, out)
    if spec.kind == RBF and stop - start >= VECTOR_EXP_FROM:
        for t in range(start, stop):
            out[t] = rbf_exponent(spec.gamma, out[t], A.sq_norms[i], B.sq_norms[cols[t]])
        segment = out[start:stop]
        with objmode():
            np.exp(segment, out=segment)
        return stop - start
    for t in range(start, stop):
        out[t] = kernel_map(spec, out[t], A.sq_norms[i], B.sq_norms[cols[t]])
    return stop - start


@njit(cache=True)
def self_kernel(spec, A):
    """k(a_i, a_i) of every point."""
    out = np.empty(A.sq_norms.shape[0])
    for i in range(out.shape[0]):
        out[i] = kernel_map(spec, A.sq_norms[i], A.sq_norms[i], A.sq_norms[i])
    return out


def _points(X) -> PointSet:
    """The PointSet of dense or CSR X in the layout dot products read fastest."""
    X = rows_layout(X)
    if sp.issparse(X) and X.indices.dtype != np.int32:
        X = sp.csr_matrix((X.data, X.indices.astype(np.int32), X.indptr), shape=X.shape)
    return point_set(X)


def kernel_matrix(spec: KernelSpec, A, B) -> np.ndarray:
    """Dense K(A, B) of shape (n_A, n_B) for dense or CSR A and B."""
    left, right = _points(A), _points(B)
    out = np.empty((A.shape[0], B.shape[0]))
    _kernel_rows(spec, left, right, out)
    return out


def kernel_products(spec: KernelSpec, A, B, coef: np.ndarray) -> np.ndarray:
    """K(A, B) @ coef, one row of K at a time (memory: one row of n_B values)."""
    left, right = _points(A), _points(B)
    out = np.empty(A.shape[0])
    _kernel_row_products(spec, left, right, np.ascontiguousarray(coef, dtype=np.float64), out)
    return out


@njit(cache=True)
def _kernel_rows(spec, A, B, out):
    cols = np.arange(out.shape[1])
    for i in range(out.shape[0]):
        kernel_values(spec, A, i, B, cols, 0, cols.shape[0], out[i])


@njit(cache=True, fastmath={"reassoc", "contract", "nsz"})
def _kernel_row_products(spec, A, B, coef, out):
    cols = np.arange(coef.shape[0])
    row = np.empty(coef.shape[0])
    for i in range(out.shape[0]):
        kernel_values(spec, A, i, B, cols, 0, cols.shape[0], row)
        total = 0.0
        for t in range(row.shape[0]):
            total += row[t] * coef[t]
        out[i] = total
