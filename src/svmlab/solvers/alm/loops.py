r"""The numba kernels of SVM-ALM (spec 002): the e-step prox, and the passes over the data.

The data A (n x d, rows = samples) is read through `svmlab.numerics.rows.Rows`, so dense and CSR
input run the same loops in the same summation order. Every kernel that touches A reads each
row once from memory: `e_step_pass` fuses the n scalar proxes with A^T r, and `normal_pass`
computes q = A d_w + d_b and, in the same row loop, A^T q (the normal-equation operator).
"""

import numpy as np
from numba import njit


@njit(cache=True)
def prox(v, gam, p, tol, maxit):
    """argmin_u gam (u)_+^p + (u - v)^2 / 2 (spec §1.4.1; u = y e, v = y t).

    p = 1: soft threshold on the positive side (Eq.12); p = 2: v / (1 + 2 gam) (Eq.13); other
    p: the root of u + p gam u^(p-1) = v in (0, v) by Newton steps kept inside the bracket,
    bisection otherwise, until the Newton step or the bracket is below tol max(v, 1), or maxit
    steps.
    """
    if v <= 0.0:
        return v
    if p == 1.0:
        return v - gam if v > gam else 0.0
    if p == 2.0:
        return v / (1.0 + 2.0 * gam)
    pg = p * gam
    lo, hi = 0.0, v
    x = 0.5 * v
    scale = tol * max(v, 1.0)
    for _ in range(maxit):
        f = x + pg * x ** (p - 1.0) - v
        if f == 0.0:
            return x
        if f > 0.0:
            hi = x
        else:
            lo = x
        step = f / (1.0 + pg * (p - 1.0) * x ** (p - 2.0))
        if abs(step) <= scale:
            return min(max(x - step, lo), hi)
        x = x - step if lo < x - step < hi else 0.5 * (lo + hi)
        if hi - lo <= scale:
            break
    return x


@njit(cache=True)
def e_step_pass(rows, y, u, b, lam, mu, C, p, tol, maxit, e, g, h):
    """The e-update and the first residual of the (w, b)-step, in one pass over the rows.

    For sample i: t_i = y_i - u_i - b - lam_i / mu, e_i = y_i prox(y_i t_i, C / mu),
    z_i = y_i - e_i - lam_i / mu and r_i = u_i + b - z_i; g = A^T r (and h = A^T z when h has
    length d: the exact variant's right-hand side). u = A w is kept by the caller.
    Returns (sum_i r_i, sum_i z_i).
    """
    data, indices, indptr, dense = rows.data, rows.indices, rows.indptr, rows.dense
    gam = C / mu
    want_h = h.shape[0] > 0
    g[:] = 0.0
    h[:] = 0.0
    sum_r, sum_z = 0.0, 0.0
    for i in range(y.shape[0]):
        scaled = lam[i] / mu
        t = y[i] - u[i] - b - scaled
        e[i] = y[i] * prox(y[i] * t, gam, p, tol, maxit)
        z = y[i] - e[i] - scaled
        r = u[i] + b - z
        sum_r += r
        sum_z += z
        start, end = indptr[i], indptr[i + 1]
        for k in range(start, end):
            j = k - start if dense else indices[k]
            g[j] += r * data[k]
            if want_h:
                h[j] += z * data[k]
    return sum_r, sum_z


@njit(cache=True)
def normal_pass(rows, d_w, d_b, q, out, accumulate):
    """q = A d_w + d_b and, if ``accumulate``, out = A^T q, in one pass over the rows.

    Returns (||q||^2, sum_i q_i).
    """
    data, indices, indptr, dense = rows.data, rows.indices, rows.indptr, rows.dense
    if accumulate:
        out[:] = 0.0
    qq, sq = 0.0, 0.0
    for i in range(q.shape[0]):
        start, end = indptr[i], indptr[i + 1]
        dot = 0.0
        for k in range(start, end):
            dot += data[k] * d_w[k - start if dense else indices[k]]
        qi = dot + d_b
        q[i] = qi
        qq += qi * qi
        sq += qi
        if accumulate:
            for k in range(start, end):
                out[k - start if dense else indices[k]] += qi * data[k]
    return qq, sq


@njit(cache=True)
def conjugate_gradient(
    rows, w, b, u, res_w, res_b, mu, bias, maxit, tol_abs, d_w, q, m_w, pre_w, pre_b, z_w
):
    """Warm-started CG on the normal equations of the (w, b)-step (spec §1.4.2):

        [A^T A + I / mu   A^T 1] [w]   [A^T z]
        [1^T A            n    ] [b] = [1^T z]

    from (w, b) with residual (res_w, res_b) = rhs - M (w, b), updated in place with u = A w
    (u += alpha (q - d_b): no extra pass), preconditioned by the diagonal (pre_w, pre_b)
    (an empty pre_w: none, plain CG). Each iteration is one `normal_pass`; the last of
    ``maxit`` skips its A^T q, which only the next residual would need. Without ``bias``, b and
    its residual stay 0. Stops when ||residual|| <= tol_abs. Returns (b, iterations, ||res||).
    """
    if not bias:
        res_b = 0.0
    plain = pre_w.shape[0] == 0
    if plain:
        z_w[:] = res_w
        z_b = res_b
    else:
        z_w[:] = pre_w * res_w
        z_b = pre_b * res_b
    d_w[:] = z_w
    d_b = z_b
    rr = res_w @ res_w + res_b * res_b
    rz = rr if plain else res_w @ z_w + res_b * z_b
    it = 0
    while it < maxit and np.sqrt(rr) > tol_abs:
        last = it == maxit - 1
        qq, sq = normal_pass(rows, d_w, d_b, q, m_w, not last)
        dwdw = d_w @ d_w
        curvature = qq + dwdw / mu
        if curvature <= 0.0:
            break
        alpha = rz / curvature  # Eq.18 when it == 0: (||w_g||^2 + b_g^2) / (q'q + ||w_g||^2/mu)
        w += alpha * d_w
        b += alpha * d_b
        for i in range(u.shape[0]):
            u[i] += alpha * (q[i] - d_b)
        it += 1
        if last:
            rr = np.nan  # not computed: the last step's A^T q was skipped
            break
        res_w -= alpha * (m_w + d_w / mu)
        res_b = res_b - alpha * sq if bias else 0.0
        rr = res_w @ res_w + res_b * res_b
        if plain:
            z_w[:] = res_w
            z_b = res_b
            rz_next = rr
        else:
            z_w[:] = pre_w * res_w
            z_b = pre_b * res_b
            rz_next = res_w @ z_w + res_b * z_b
        d_w *= rz_next / rz
        d_w += z_w
        d_b = z_b + (rz_next / rz) * d_b
        rz = rz_next
    return b, it, np.sqrt(rr)


@njit(cache=True)
def multiplier_step(y, u, b, e, lam, mu, p, u_old, b_old):
    """lam += mu res with res = u + b - y + e (Eq.9), and the sums the trace and the stopping
    rules need: (||res||^2, ||u - u_old + b - b_old||^2, sum_i xi_i^p) with
    xi_i = max(0, 1 - y_i (u_i + b))."""
    res2, change2, loss = 0.0, 0.0, 0.0
    for i in range(y.shape[0]):
        res = u[i] + b - y[i] + e[i]
        lam[i] += mu * res
        res2 += res * res
        change = u[i] - u_old[i] + b - b_old
        change2 += change * change
        xi = 1.0 - y[i] * (u[i] + b)
        if xi > 0.0:
            loss += xi if p == 1.0 else (xi * xi if p == 2.0 else xi**p)
    return res2, change2, loss


@njit(cache=True)
def column_squares(rows, out):
    """out_j = sum_i A_ij^2, the diagonal of A^T A, in one pass over the rows."""
    data, indices, indptr, dense = rows.data, rows.indices, rows.indptr, rows.dense
    out[:] = 0.0
    for i in range(rows.n_rows):
        start, end = indptr[i], indptr[i + 1]
        for k in range(start, end):
            out[k - start if dense else indices[k]] += data[k] * data[k]
