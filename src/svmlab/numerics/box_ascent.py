"""Coordinate ascent on a box-constrained concave quadratic, numba.

    max  sum_j x_j - 1/2 ||S(s0 + sum_j x_j r_j)||^2   over 0 <= x_j <= C
    max  c.x - 1/2 x^T Q x                            over 0 <= x_j <= C  (`gram_ascent`)

with r_j the rows of a `numerics.rows.Rows` matrix and S the soft threshold at ``shrink``
(S(u) = sign(u) max(|u| - shrink, 0); shrink = 0: the identity): the dual of a hinge loss with
an l2 (shrink = 0) or elastic-net penalty, restricted to some of its coordinates (the others
fixed in s0), as LIBLINEAR's dual coordinate descent solves the l2 one over all of them. Each
update is exact along its coordinate (with shrink > 0 the objective is piecewise quadratic
along it: its slope is walked across the kinks), so the objective never decreases; a pass
costs one read of the rows, whatever the size of the data the rows were taken from.
LIBLINEAR's solver runs on a whole data set, not on a subset with the rest of the dual fixed,
and scipy's bounded solvers were far slower here: on Pegasos' ijcnn1 free set (17,847 points,
22 rows) HiGHS' LP took 0.5 s, and L-BFGS-B on this objective took seconds for a looser bound
than 100 passes of this ascent give in tens of milliseconds; hence this module. `gram_ascent`
is the same update for a kernel model, whose features are known only through the signed Gram
matrix Q of the free set (Q_ij = y_i y_j k(x_i, x_j)) and the fixed part's values c.
"""

import numpy as np
from numba import njit

from svmlab.numerics.rows import rows_of


def free_set_ascent(points, s, x, C, passes, tol, goal, shrink=0.0):
    """`box_ascent` on the rows of ``points`` (CSR or dense); x returned."""
    box_ascent(rows_of(points), s, x, C, passes, tol, goal, shrink)
    return x


@njit(cache=True)
def box_ascent(rows, s, x, C, passes, tol, goal=np.inf, shrink=0.0):
    """Up to ``passes`` passes from x (in place; s = s0 + sum_j x_j r_j, kept in step), each in
    a new random order (seeded: the same result every time), stopping after a pass that raises
    the objective by at most tol (sum_j x_j + 1/2 ||S(s)||^2), or that brings it to ``goal``.
    Returns the passes made."""
    data, indices, indptr, dense = rows.data, rows.indices, rows.indptr, rows.dense
    m = rows.n_rows
    squares = np.zeros(m)
    longest = 0
    for j in range(m):
        longest = max(longest, np.int64(indptr[j + 1]) - np.int64(indptr[j]))
        for k in range(indptr[j], indptr[j + 1]):
            squares[j] += data[k] * data[k]
    kinks, changes = np.empty(2 * longest), np.empty(2 * longest)
    np.random.seed(0)
    order = np.arange(m)
    for done in range(1, passes + 1):
        np.random.shuffle(order)
        gain = 0.0
        for j in order:
            start, end = indptr[j], indptr[j + 1]
            if shrink > 0.0:
                new, rise = _shrunk_update(
                    data, indices, start, end, dense, s, x[j], C, shrink, kinks, changes
                )
            else:
                slope = 1.0
                for k in range(start, end):
                    slope -= data[k] * s[k - start if dense else indices[k]]
                if squares[j] > 0.0:
                    new = min(max(x[j] + slope / squares[j], 0.0), C)
                else:  # an empty row: x_j only adds to the sum
                    new = C
                rise = (new - x[j]) * (slope - 0.5 * (new - x[j]) * squares[j])
            step = new - x[j]
            if step != 0.0:
                gain += rise
                for k in range(start, end):
                    s[k - start if dense else indices[k]] += step * data[k]
                x[j] = new
        excess = np.maximum(np.abs(s) - shrink, 0.0)
        total, half_square = x.sum(), 0.5 * (excess @ excess)
        if gain <= tol * (total + half_square) or total - half_square >= goal:
            return done
    return passes


@njit(cache=True)
def gram_ascent(Q, c, x, C, passes, atol):
    """Up to ``passes`` passes from x (in place) over [0, C]^m, each in a new random order
    (seeded), on c.x - 1/2 x^T Q x with Q symmetric positive semidefinite, stopping after a
    pass that raises the objective by at most ``atol``. Each update is exact along its
    coordinate and keeps the gradient c - Q x in step (a pass costs m^2). Returns the passes
    made."""
    m = len(x)
    g = c - Q @ x
    np.random.seed(0)
    order = np.arange(m)
    for done in range(1, passes + 1):
        np.random.shuffle(order)
        gain = 0.0
        for j in order:
            q = Q[j, j]
            if q > 0.0:
                new = min(max(x[j] + g[j] / q, 0.0), C)
            else:  # a zero row: x_j only adds c_j - (Q x)_j, constant along it
                new = C if g[j] > 0.0 else 0.0
            step = new - x[j]
            if step != 0.0:
                gain += step * (g[j] - 0.5 * step * q)
                row = Q[j]
                for k in range(m):
                    g[k] -= step * row[k]
                x[j] = new
        if gain <= atol:
            return done
    return passes


@njit(cache=True)
def _shrunk_update(data, indices, start, end, dense, s, x, C, shrink, kinks, changes):
    """(x's new value in [0, C], the objective's rise) for the row r = data[start:end], with
    S the soft threshold at shrink > 0: the step of the quadratic piece at t = 0 when no
    coordinate s_k + t r_k crosses a kink on the way (the common case), else `_shrunk_step`."""
    slope, curvature = 1.0, 0.0
    for k in range(start, end):
        u = s[k - start if dense else indices[k]]
        if u > shrink or u < -shrink:
            slope -= data[k] * (u - shrink if u > 0.0 else u + shrink)
            curvature += data[k] * data[k]
    if curvature > 0.0:
        t = min(max(slope / curvature, -x), C - x)
    else:
        t = C - x if slope > 0.0 else -x if slope < 0.0 else 0.0
    if _crosses(data, indices, start, end, dense, s, t, shrink):
        t = _shrunk_step(
            data, indices, start, end, dense, s, slope, -x, C - x, shrink, kinks, changes
        )
        new = min(max(x + t, 0.0), C)
        return new, new - x - _half_square_change(
            data, indices, start, end, dense, s, new - x, shrink
        )
    new = min(max(x + t, 0.0), C)
    return new, (new - x) * (slope - 0.5 * (new - x) * curvature)


@njit(cache=True)
def _crosses(data, indices, start, end, dense, s, t, shrink):
    """Whether some s_k + t r_k lies on another side of +-shrink than s_k (or on one)."""
    for k in range(start, end):
        u = s[k - start if dense else indices[k]]
        v = u + t * data[k]
        if (
            (u > shrink) != (v > shrink)
            or (u < -shrink) != (v < -shrink)
            or u == shrink
            or u == -shrink
        ):
            return True
    return False


@njit(cache=True)
def _shrunk_step(data, indices, start, end, dense, s, slope, lower, upper, shrink, kinks, changes):
    """The maximiser t in [lower, upper] of t - 1/2 ||S(s + t r)||^2 (``slope``: its slope at
    0). The slope is non-increasing and linear between the kinks where s_k + t r_k = +-shrink,
    with curvature the sum of r_k^2 over the coordinates beyond the threshold; the kinks ahead
    are passed in order, each changing the curvature by +-r_k^2, until the slope's zero."""
    if slope == 0.0:
        return 0.0
    ahead = 1.0 if slope > 0.0 else -1.0
    reach = (upper if ahead > 0.0 else lower) * ahead
    count, curvature = 0, 0.0
    for k in range(start, end):
        r = data[k]
        if r == 0.0:
            continue
        u, outward = s[k - start if dense else indices[k]], ahead * r
        if (
            u > shrink
            or u < -shrink
            or (u == shrink and outward > 0)
            or (u == -shrink and outward < 0)
        ):
            curvature += r * r
        for edge in (shrink, -shrink):
            distance = (edge - u) / outward
            if 0.0 < distance < reach:
                kinks[count] = distance
                changes[count] = r * r if outward * edge > 0.0 else -r * r
                count += 1
    last, last_slope = 0.0, slope * ahead  # distance along ahead; the slope along it, > 0
    for _ in range(count):  # the nearest kink not passed yet, each time (few are passed)
        i = np.argmin(kinks[:count])
        if curvature > 0.0 and last + last_slope / curvature <= kinks[i]:
            break
        last_slope -= curvature * (kinks[i] - last)
        last, curvature = kinks[i], curvature + changes[i]
        kinks[i] = np.inf
    if curvature > 0.0:
        return ahead * min(last + last_slope / curvature, reach)
    return ahead * reach


@njit(cache=True)
def _half_square_change(data, indices, start, end, dense, s, t, shrink):
    """1/2 ||S(s + t r)||^2 - 1/2 ||S(s)||^2 over the row's coordinates."""
    change = 0.0
    for k in range(start, end):
        u = s[k - start if dense else indices[k]]
        before, after = max(abs(u) - shrink, 0.0), max(abs(u + t * data[k]) - shrink, 0.0)
        change += 0.5 * (after * after - before * before)
    return change
