"""Pegasos steps (Shalev-Shwartz et al. 2007/2011) over CSR or dense rows (see `linear_ops.Rows`).

The weight vector is kept as w = scale * v, so the shrinking step w <- (1 - 1/t) w costs O(1)
and each step reads only the sampled row: O(nnz(X_i)) per step. The row AHEAD steps later is
prefetched, so that its random place in memory does not stall the step that reads it.
"""

import numpy as np
from numba import njit

from svmlab.numerics.prefetch import prefetch

RESCALE_BELOW = 1e-9  # fold scale into v before it underflows
AHEAD = 8  # steps between asking for a row's values and reading them


@njit(cache=True, error_model="numpy")
def pegasos_steps(data, indices, indptr, dense, y, order, lam, t0, project, v, state):
    """Run one Pegasos step per sampled row `order[s]`, at step numbers t = t0 + 1, t0 + 2, ...

    Step t: eta = 1/(lam t); w <- (1 - eta lam) w + eta y_i X_i if y_i X_i.w < 1 else
    (1 - eta lam) w; then, if `project`, w <- min(1, 1/(sqrt(lam) ||w||)) w.
    `state` = [scale, ||w||^2] is updated in place with v, so w = state[0] * v.
    """
    scale, sq = state[0], state[1]
    for s in range(order.shape[0]):
        i = order[s]
        t = t0 + s + 1
        start, end = indptr[i], indptr[i + 1]
        if s + AHEAD < order.shape[0]:  # the rows are drawn at random: ask for one early
            ahead = indptr[order[s + AHEAD]]
            prefetch(data, ahead)
            if not dense:
                prefetch(indices, ahead)
        dot = 0.0
        for k in range(start, end):
            dot += data[k] * v[k - start if dense else indices[k]]
        dot *= scale
        hit = y[i] * dot < 1.0  # the margin test uses w before the step
        shrink = 1.0 - 1.0 / t
        if shrink == 0.0:  # t = 1: w becomes 0
            v[:] = 0.0
            scale, sq, dot = 1.0, 0.0, 0.0
        else:
            scale *= shrink
            sq *= shrink * shrink
            dot *= shrink
        if hit:
            step = y[i] / (lam * t)
            to_v = step / scale  # one division per step, not one per nonzero
            row_sq = 0.0
            for k in range(start, end):
                v[k - start if dense else indices[k]] += to_v * data[k]
                row_sq += data[k] * data[k]
            sq += 2.0 * step * dot + step * step * row_sq
        if project and sq * lam > 1.0:
            factor = 1.0 / np.sqrt(lam * sq)
            scale *= factor
            sq *= factor * factor
        if scale < RESCALE_BELOW:
            v *= scale
            scale = 1.0
    state[0], state[1] = scale, sq
