"""Coordinate ascent on a box-constrained concave quadratic, numba.

    max  sum_j x_j - 1/2 ||s0 + sum_j x_j r_j||^2   over 0 <= x_j <= C

with r_j the rows of a `numerics.rows.Rows` matrix: the dual of an l2-penalised hinge loss
restricted to some of its coordinates (the others fixed in s0), as LIBLINEAR's dual coordinate
descent solves it over all of them. Each update is exact along its coordinate, so the objective
never decreases; a pass costs one read of the rows, whatever the size of the data the rows were
taken from. LIBLINEAR's solver runs on a whole data set, not on a subset with the rest of the
dual fixed, and scipy's bounded solvers were far slower here: on Pegasos' ijcnn1 free set
(17,847 points, 22 rows) HiGHS' LP took 0.5 s, and L-BFGS-B on this objective took seconds for
a looser bound than 100 passes of this ascent give in tens of milliseconds; hence this module.
"""

import numpy as np
from numba import njit

from svmlab.numerics.rows import rows_of


def free_set_ascent(points, s, x, C, passes, tol, goal):
    """`box_ascent` on the rows of ``points`` (CSR or dense); x returned."""
    box_ascent(rows_of(points), s, x, C, passes, tol, goal)
    return x


@njit(cache=True)
def box_ascent(rows, s, x, C, passes, tol, goal=np.inf):
    """Up to ``passes`` passes from x (in place; s = s0 + sum_j x_j r_j, kept in step), each in
    a new random order (seeded: the same result every time), stopping after a pass that raises
    the objective by at most tol (sum_j x_j + 1/2 ||s||^2), or that brings it to ``goal``.
    Returns the passes made."""
    data, indices, indptr, dense = rows.data, rows.indices, rows.indptr, rows.dense
    m = rows.n_rows
    squares = np.zeros(m)
    for j in range(m):
        for k in range(indptr[j], indptr[j + 1]):
            squares[j] += data[k] * data[k]
    np.random.seed(0)
    order = np.arange(m)
    for done in range(1, passes + 1):
        np.random.shuffle(order)
        gain = 0.0
        for j in order:
            start, end = indptr[j], indptr[j + 1]
            slope = 1.0
            for k in range(start, end):
                slope -= data[k] * s[k - start if dense else indices[k]]
            if squares[j] > 0.0:
                new = min(max(x[j] + slope / squares[j], 0.0), C)
            else:  # an empty row: x_j only adds to the sum
                new = C
            step = new - x[j]
            if step != 0.0:
                for k in range(start, end):
                    s[k - start if dense else indices[k]] += step * data[k]
                x[j] = new
                gain += step * (slope - 0.5 * step * squares[j])
        total, half_square = x.sum(), 0.5 * (s @ s)
        if gain <= tol * (total + half_square) or total - half_square >= goal:
            return done
    return passes
