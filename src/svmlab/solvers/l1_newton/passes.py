"""The passes over the data of the Newton active-set method (spec 001 §2.6, §3.2), numba.

Every loop reads X through `numerics.rows.Rows`, so dense and CSR input share the code and the
summation order (X v and X^T c are `numerics.rows.matvec` and `rmatvec`). Smoothed objective, with z_i = 1 - y_i x_i.w:

    f_alpha(w) = 1/N sum_i j_alpha(z_i) + lam/2 ||w||^2,    F_alpha = f_alpha + mu ||w||_1
    g = -1/N X^T (y o j'(z)) + lam w,   H_AA = lam I + 1/N X_A^T diag(j''(z)) X_A
"""

import numpy as np
from numba import njit

from svmlab.numerics.losses import sqrt_hinge


@njit(cache=True)
def newton_pass(rows, y, xw, w, alpha, lam, slot, n_active, g, H):
    """One pass: the full gradient g and the active block H (slot[k] = position of feature k
    in the active set, -1 if inactive; H is n_active x n_active)."""
    data, indices, indptr, dense = rows.data, rows.indices, rows.indptr, rows.dense
    n = rows.n_rows
    g[:] = 0.0
    H[:, :] = 0.0
    pos = np.empty(n_active, np.int64)
    val = np.empty(n_active)
    for i in range(n):
        _, j1, j2 = sqrt_hinge(1.0 - y[i] * xw[i], alpha)
        c = -y[i] * j1
        m = 0
        start, end = indptr[i], indptr[i + 1]
        for k in range(start, end):
            col = k - start if dense else indices[k]
            g[col] += c * data[k]
            s = slot[col]
            if s >= 0:
                pos[m] = s
                val[m] = data[k]
                m += 1
        for a in range(m):  # each pair once: H = U + U^T - diag(U) below
            va = j2 * val[a]
            for b in range(a, m):
                H[pos[a], pos[b]] += va * val[b]
    inv_n = 1.0 / n
    for col in range(g.shape[0]):
        g[col] = g[col] * inv_n + lam * w[col]
    for a in range(n_active):
        for b in range(a + 1, n_active):
            H[a, b] = (H[a, b] + H[b, a]) * inv_n
            H[b, a] = H[a, b]
        H[a, a] = H[a, a] * inv_n + lam


@njit(cache=True)
def weighted_columns(rows, y, xw, alpha, columns, B):
    """B[:, m] = sqrt(j''(z) / N) o X[:, columns[m]] (one pass; B zeroed by the caller), the
    factor of H_AA - lam I for wide active sets."""
    data, indices, indptr, dense = rows.data, rows.indices, rows.indptr, rows.dense
    n = rows.n_rows
    slot = np.full(rows.n_cols, -1, np.int64)
    for m in range(columns.shape[0]):
        slot[columns[m]] = m
    for i in range(n):
        scale = np.sqrt(sqrt_hinge(1.0 - y[i] * xw[i], alpha)[2] / n)
        start, end = indptr[i], indptr[i + 1]
        for k in range(start, end):
            s = slot[k - start if dense else indices[k]]
            if s >= 0:
                B[i, s] = scale * data[k]


@njit(cache=True)
def smoothed_objective(y, xw, w, alpha, lam, mu):
    """F_alpha(w) from the cached X w (no pass over X)."""
    total = 0.0
    for i in range(y.shape[0]):
        total += sqrt_hinge(1.0 - y[i] * xw[i], alpha)[0]
    return total / y.shape[0] + 0.5 * lam * (w @ w) + mu * np.abs(w).sum()


@njit(cache=True)
def hinge_derivatives(y, xw, alpha):
    """theta_i = j_alpha'(z_i): the smoothed problem's dual point (spec 001 §1.4)."""
    theta = np.empty(y.shape[0])
    for i in range(y.shape[0]):
        theta[i] = sqrt_hinge(1.0 - y[i] * xw[i], alpha)[1]
    return theta
