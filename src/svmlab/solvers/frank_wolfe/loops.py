"""numba loops of the Frank-Wolfe (FW, MFW) and core vector machine (CVM) solvers of the L2-SVM.

All three minimise R(alpha) = alpha^T K~ alpha over the unit simplex (K~: `kernel_rows`), i.e.
maximise g(alpha) = Delta^2 - R, the squared radius r^2 of the current ball in the minimum
enclosing ball (MEB) view. The state is the core list (the active points, one slot each):

    core[p]   data index of slot p          alpha[p]  its weight (> 0 for FW/MFW)
    G[p]      (K~ alpha)_core[p]            pos[i]    slot of data index i, or -1
    q         number of slots               R         alpha^T K~ alpha

and it is updated incrementally (exact line searches for any kernel; the paper's closed forms are
the special case D_i = Delta^2). Removing a slot moves the last slot into it (`remove_slot`), and
the row cache is remapped the same way. FW and MFW with full scans keep instead Gf = K~ alpha for
every point, with cached rows over all points (`full_gradient`): a step then costs one kernel row
of m values (or a cache hit) and the scan is a read of Gf, as in LIBSVM's gradient bookkeeping.
A trace row is recorded per iteration into a float64 array with the columns TRACE_COLUMNS; time
is read from the monotonic clock in nanoseconds.
"""

import numpy as np
from numba import njit

from svmlab.numerics.kernel_rows import (
    EVALS,
    SERVED,
    WIDTH,
    cache_row,
    clear_rows,
    fill_row,
    grow_cache,
    remove_core_slot,
)
from svmlab.numerics.trace_buffer import monotonic_ns

TRACE_COLUMNS = ("iteration", "time_ns", "R", "delta_plus", "core_size", "step_type",
                 "kernel_evals", "kernel_served")
INITIAL, TOWARD, AWAY, DROP, TIGHTEN = -1, 0, 1, 2, 3
MIN_RADIUS2 = 1e-16  # r^2 is floored at this fraction of Delta^2 (a zero ball is degenerate)
NO_AWAY_ABOVE = 1.0 - 1e-15  # never step away from a point holding (almost) all the mass


@njit(cache=True)
def seed_rng(seed):
    """Seed numba's generator, which drives the sampling and the random initialisation."""
    np.random.seed(seed)


def new_state(n_points: int) -> tuple:
    """(core, alpha, G, pos) for an empty core list over n_points data points."""
    return (np.full(n_points, -1, np.int64), np.zeros(n_points), np.zeros(n_points),
            np.full(n_points, -1, np.int64))


@njit(cache=True)
def _dot(a, b, n):
    total = 0.0
    for p in range(n):
        total += a[p] * b[p]
    return total


@njit(cache=True)
def g_value(buf, lru, kx, st, q, i):
    """G_i = (K~ alpha)_i: the maintained value for a core point, else a cached row times alpha."""
    core, alpha, G, pos = st
    if pos[i] >= 0:
        return G[pos[i]]
    s = cache_row(buf, lru, kx, i, core, q)
    return _dot(alpha, buf[s], q)


@njit(cache=True)
def search_toward(buf, lru, kx, st, q, sample_size):
    """(i*, G_i*) with i* = argmin G over sample_size i.i.d. uniform draws, or all points if 0."""
    m = kx[4].shape[0]
    n = m if sample_size == 0 else sample_size
    best_i, best = -1, np.inf
    for t in range(n):
        i = t if sample_size == 0 else np.random.randint(0, m)
        g = g_value(buf, lru, kx, st, q, i)
        if g < best:
            best_i, best = i, g
    return best_i, best


@njit(cache=True)
def append_point(buf, lru, st, q, i, g_i):
    """Give data index i a new slot with alpha = 0 and G = g_i; grows the cache rows if needed."""
    core, alpha, G, pos = st
    if q + 1 > lru[5][WIDTH]:
        buf = grow_cache(buf, lru, q + 1)
    core[q], alpha[q], G[q], pos[i] = i, 0.0, g_i, q
    return buf, q + 1


@njit(cache=True)
def remove_slot(buf, lru, st, q, p, remap):
    """Remove slot p (its alpha must be 0) by moving the last slot into it; returns q - 1.
    With remap, cached rows (indexed by core slot) are moved the same way."""
    core, alpha, G, pos = st
    last = q - 1
    pos[core[p]] = -1
    if p != last:
        core[p], alpha[p], G[p] = core[last], alpha[last], G[last]
        pos[core[p]] = p
    core[last], alpha[last], G[last] = -1, 0.0, 0.0
    if remap:
        remove_core_slot(buf, lru, p, q)
    return last


@njit(cache=True)
def remove_empty_slots(buf, lru, st, q, remap):
    """Remove every slot whose alpha is exactly 0; returns the new q."""
    for p in range(q - 1, -1, -1):
        if st[1][p] == 0.0:
            q = remove_slot(buf, lru, st, q, p, remap)
    return q


@njit(cache=True)
def toward_lambda(R, t, d_i):
    """Exact line search of alpha <- (1 - lam) alpha + lam e_i on [0, 1]; t = G_i, d_i = D_i."""
    curv = d_i - 2.0 * t + R
    return min(max((R - t) / curv, 0.0), 1.0) if curv > 0.0 else 0.0


@njit(cache=True)
def away_lambda(R, t, d_j, lam_max):
    """Exact line search of alpha <- (1 + lam) alpha - lam e_j on [0, lam_max]; t = G_j."""
    curv = d_j - 2.0 * t + R
    return min(max((t - R) / curv, 0.0), lam_max) if curv > 0.0 else lam_max


@njit(cache=True)
def mixed_radius(R, t, d_i, lam):
    """alpha^T K~ alpha after alpha <- (1 - lam) alpha + lam e_i (lam < 0: an away step)."""
    return (1.0 - lam) ** 2 * R + 2.0 * lam * (1.0 - lam) * t + lam * lam * d_i


@njit(cache=True)
def move(buf, lru, kx, st, q, p, lam, Gf, points, full):
    """alpha <- (1 - lam) alpha + lam e_p and G <- (1 - lam) G + lam K~(core[p], .), where
    lam < 0 is an away step. G is the core slots' G (full False) or Gf over all points (full
    True; the slots' G are then copied from it). Returns argmin Gf (full) or -1."""
    core, alpha, Gs = st[0], st[1], st[2]
    G, cols, n = (Gf, points, points.shape[0]) if full else (Gs, core, q)
    row = buf[cache_row(buf, lru, kx, core[p], cols, n)]
    for s in range(q):
        alpha[s] *= 1.0 - lam
    alpha[p] += lam
    best_k, best = -1, np.inf
    for k in range(n):
        G[k] = (1.0 - lam) * G[k] + lam * row[k]
        if G[k] < best:
            best_k, best = k, G[k]
    if not full:
        return -1
    for s in range(q):
        Gs[s] = Gf[core[s]]
    return best_k


@njit(cache=True)
def toward_step(buf, lru, kx, D, st, q, R, i, t, Gf, points, full):
    """FW step alpha <- (1 - lam) alpha + lam e_i with the exact line search; t = G_i.

    Returns (buf, q, R, argmin Gf). lam = 1 (possible for non-normalised kernels) leaves A = {i}.
    """
    lam = toward_lambda(R, t, D[i])
    if st[3][i] < 0:
        buf, q = append_point(buf, lru, st, q, i, t)
    i_min = move(buf, lru, kx, st, q, st[3][i], lam, Gf, points, full)
    R = mixed_radius(R, t, D[i], lam)
    if lam == 1.0:
        q = remove_empty_slots(buf, lru, st, q, not full)
    return buf, q, R, i_min


@njit(cache=True)
def away_step(buf, lru, kx, D, st, q, R, p, Gf, points, full):
    """Away step alpha <- (1 + lam) alpha - lam e_j from slot p (j = core[p]), exact line search
    on [0, alpha_j / (1 - alpha_j)]; at the bound alpha_j becomes exactly 0 and the slot is
    removed (drop step). Returns (q, R, dropped, argmin Gf)."""
    j, t, a = st[0][p], st[2][p], st[1][p]
    lam_max = a / (1.0 - a)
    lam = away_lambda(R, t, D[j], lam_max)
    i_min = move(buf, lru, kx, st, q, p, -lam, Gf, points, full)
    R = mixed_radius(R, t, D[j], -lam)
    dropped = lam >= lam_max
    if dropped:
        st[1][p] = 0.0
        q = remove_slot(buf, lru, st, q, p, not full)
    return q, R, dropped, i_min


@njit(cache=True)
def refresh(buf, lru, kx, st, q, Gf, full):
    """Renormalise alpha to sum 1 and make G and R consistent with it: recomputed exactly from
    the core rows (core slots' G), or rescaled by the same factor (Gf over all points, whose
    exact recomputation would cost q full rows). Returns (R, argmin Gf or -1)."""
    core, alpha, G = st[0], st[1], st[2]
    total = alpha[:q].sum()
    alpha[:q] /= total
    if not full:
        for p in range(q):
            G[p] = _dot(alpha, buf[cache_row(buf, lru, kx, core[p], core, q)], q)
        return _dot(alpha, G, q), -1
    Gf /= total
    G[:q] /= total
    return _dot(alpha, G, q), np.argmin(Gf)


@njit(cache=True)
def full_gradient(buf, lru, kx, st, q, Gf):
    """Gf = K~ alpha over all points, from the full rows of the core points. The cached rows are
    forgotten first: from here on they are rows over all points, not over the core slots."""
    core, alpha, G = st[0], st[1], st[2]
    clear_rows(lru)
    points = np.arange(Gf.shape[0])
    Gf[:] = 0.0
    for p in range(q):
        row = buf[cache_row(buf, lru, kx, core[p], points, points.shape[0])]
        for k in range(Gf.shape[0]):
            Gf[k] += alpha[p] * row[k]
    for p in range(q):
        G[p] = Gf[core[p]]
    return _dot(alpha, G, q)


@njit(cache=True)
def smo(buf, lru, kx, D, st, q, tol_abs, max_steps):
    """Minimise alpha^T K~ alpha on the simplex over the core slots by SMO (second-order working
    set: i = argmin G, j = argmax (G_j - G_i)^2 / a_ij over alpha_j > 0), until
    max_{alpha_j > 0} G_j - min G <= tol_abs. Returns (R, steps)."""
    core, alpha, G = st[0], st[1], st[2]
    steps = 0
    while steps < max_steps:
        i = np.argmin(G[:q])
        g_max = -np.inf
        for p in range(q):
            if alpha[p] > 0.0 and G[p] > g_max:
                g_max = G[p]
        if g_max - G[i] <= tol_abs:
            break
        row_i = buf[cache_row(buf, lru, kx, core[i], core, q)]
        j, best_gain, a_j = -1, -1.0, 1.0
        for p in range(q):
            diff = G[p] - G[i]
            if alpha[p] > 0.0 and diff > tol_abs:
                a = D[core[i]] + D[core[p]] - 2.0 * row_i[p]
                a = a if a > 0.0 else 1e-12
                if diff * diff / a > best_gain:
                    j, best_gain, a_j = p, diff * diff / a, a
        row_j = buf[cache_row(buf, lru, kx, core[j], core, q)]
        s = min((G[j] - G[i]) / a_j, alpha[j])
        alpha[i] += s
        alpha[j] = 0.0 if s == alpha[j] else alpha[j] - s
        for p in range(q):
            G[p] += s * (row_i[p] - row_j[p])
        steps += 1
    return _dot(alpha, G, q), steps


@njit(cache=True)
def init_random_meb(buf, lru, kx, D, st, n_init, tol_abs):
    """Random-MEB start: n_init distinct points drawn alternately from the two classes, the MEB
    of these points by SMO from alpha = 1/n_init, then the points with alpha = 0 removed.
    Returns (buf, q, R)."""
    y = kx[5]
    positive = np.random.permutation(np.nonzero(y > 0)[0])
    negative = np.random.permutation(np.nonzero(y < 0)[0])
    q, a, b = 0, 0, 0
    while q < n_init and (a < positive.shape[0] or b < negative.shape[0]):
        take_positive = (q % 2 == 0 and a < positive.shape[0]) or b >= negative.shape[0]
        if take_positive:
            buf, q = append_point(buf, lru, st, q, positive[a], 0.0)
            a += 1
        else:
            buf, q = append_point(buf, lru, st, q, negative[b], 0.0)
            b += 1
    core, alpha, G = st[0], st[1], st[2]
    alpha[:q] = 1.0 / q
    for p in range(q):
        G[p] = _dot(alpha, buf[cache_row(buf, lru, kx, core[p], core, q)], q)
    R, _ = smo(buf, lru, kx, D, st, q, tol_abs, 1000 * q * q)
    return buf, remove_empty_slots(buf, lru, st, q, True), R


@njit(cache=True)
def init_two_points(buf, lru, kx, D, st):
    """Two-point start: a random point a, b the point furthest from it in the MEB feature space
    (max D_a + D_b - 2 K~_ab), alpha_a = alpha_b = 1/2. Returns (buf, q, R)."""
    m = D.shape[0]
    a = np.random.randint(0, m)
    row = np.empty(m)
    lru[6][EVALS] += fill_row(kx, a, np.arange(m), 0, m, row)
    b, best = -1, -np.inf
    for i in range(m):
        dist = D[a] + D[i] - 2.0 * row[i]
        if i != a and dist > best:
            b, best = i, dist
    buf, q = append_point(buf, lru, st, 0, a, 0.5 * (D[a] + row[b]))
    buf, q = append_point(buf, lru, st, q, b, 0.5 * (row[b] + D[b]))
    st[1][0] = st[1][1] = 0.5
    return buf, q, 0.25 * (D[a] + 2.0 * row[b] + D[b])


@njit(cache=True)
def record(trace, n_rows, iteration, t0, R, delta_plus, q, step, lru):
    """Append one row (TRACE_COLUMNS) to the trace array, doubling it when full."""
    if n_rows == trace.shape[0]:
        bigger = np.empty((2 * trace.shape[0], trace.shape[1]))
        bigger[:n_rows] = trace
        trace = bigger
    stats = lru[6]
    trace[n_rows, 0] = iteration
    trace[n_rows, 1] = monotonic_ns() - t0
    trace[n_rows, 2] = R
    trace[n_rows, 3] = delta_plus
    trace[n_rows, 4] = q
    trace[n_rows, 5] = step
    trace[n_rows, 6] = stats[EVALS]
    trace[n_rows, 7] = stats[SERVED]
    return trace, n_rows + 1


@njit(cache=True)
def run_frank_wolfe(buf, lru, kx, D, delta2, st, q, R, away, tol, sample_size, rounds,
                    final_full_check, max_steps, refresh_every, t0, trace, n_rows,
                    first_iteration, last_step, Gf, full):
    """FW (away=False, Algorithm 2) or MFW (away=True, Algorithm 3) for up to max_steps steps.

    The toward vertex i* = argmin G is searched over sample_size random points (0: a scan of all
    points through the core rows), or, with full, read off Gf = K~ alpha, which is then kept for
    every point (from `full_gradient`): one full kernel row per step instead of the
    sample_size x q values of a search. Each iteration records the current iterate with its
    delta+ = gamma^2(i*) / r^2 - 1, and stops when delta+ <= tol; a sampled stop needs `rounds`
    samples in a row without a violator, and with final_full_check a full scan too. MFW takes the away step from j* = argmax_A G
    when delta- > delta+ and |A| >= 2. Returns (buf, q, R, steps, converged, trace, n_rows,
    last_step).
    """
    alpha, G = st[1], st[2]
    points = np.arange(Gf.shape[0] if full else 0)
    i_min = np.argmin(Gf) if full else -1
    sampled = sample_size > 0 and not full
    steps, converged = 0, False
    while True:
        if full:
            i, t = i_min, Gf[i_min]
        else:
            i, t = search_toward(buf, lru, kx, st, q, sample_size)
        r2 = max(delta2 - R, MIN_RADIUS2 * delta2)
        delta_plus = (delta2 + R - 2.0 * t) / r2 - 1.0
        for _ in range(rounds - 1 if sampled else 0):  # more samples before a sampled stop
            if delta_plus > tol:
                break
            i, t = search_toward(buf, lru, kx, st, q, sample_size)
            delta_plus = (delta2 + R - 2.0 * t) / r2 - 1.0
        if delta_plus <= tol and final_full_check and sampled:
            i, t = search_toward(buf, lru, kx, st, q, 0)
            delta_plus = (delta2 + R - 2.0 * t) / r2 - 1.0
        trace, n_rows = record(trace, n_rows, first_iteration + steps, t0, R,
                               delta_plus, q, last_step, lru)
        if delta_plus <= tol:
            converged = True
            break
        if steps == max_steps:
            break
        p = np.argmax(G[:q])
        delta_minus = 1.0 - (delta2 + R - 2.0 * G[p]) / r2
        if away and q >= 2 and delta_minus > delta_plus and alpha[p] < NO_AWAY_ABOVE:
            q, R, dropped, i_min = away_step(buf, lru, kx, D, st, q, R, p, Gf, points, full)
            last_step = DROP if dropped else AWAY
        else:
            buf, q, R, i_min = toward_step(buf, lru, kx, D, st, q, R, i, t, Gf, points, full)
            last_step = TOWARD
        steps += 1
        if refresh_every > 0 and steps % refresh_every == 0:
            R, i_min = refresh(buf, lru, kx, st, q, Gf, full)
    return buf, q, R, steps, converged, trace, n_rows, last_step


@njit(cache=True)
def cvm_search(buf, lru, kx, st, q, threshold, sample_size, rounds, positive, negative):
    """(i*, G_i*) over points outside the core: all of them (sample_size = 0), or LibCVM's
    search: up to `rounds` rounds of sample_size draws alternating between the classes, ending
    at the first round whose best point has G below `threshold` (a violator)."""
    pos = st[3]
    m = kx[4].shape[0]
    best_i, best = -1, np.inf
    if sample_size == 0:
        for i in range(m):
            if pos[i] < 0:
                g = g_value(buf, lru, kx, st, q, i)
                if g < best:
                    best_i, best = i, g
        return best_i, best
    for _ in range(rounds):
        for t in range(sample_size):
            pool = positive if (t % 2 == 0 and positive.shape[0]) or not negative.shape[0] \
                else negative
            for _try in range(100):  # rejection of core points
                i = pool[np.random.randint(0, pool.shape[0])]
                if pos[i] < 0:
                    g = g_value(buf, lru, kx, st, q, i)
                    if g < best:
                        best_i, best = i, g
                    break
        if best < threshold:
            break
    return best_i, best


@njit(cache=True)
def run_cvm(buf, lru, kx, D, delta2, st, q, R, eps, annealing, sample_size, rounds,
            max_steps, t0, trace, n_rows):
    """Core vector machine (Algorithm 1): solve the QP on the core set by SMO, add the furthest
    point if it lies outside B(c, (1 + eps) r), repeat. With annealing, eps starts at 0.1 and
    halves per level down to eps (LibCVM). Returns (buf, q, R, steps, converged, trace, n_rows).
    """
    y = kx[5]
    positive, negative = np.nonzero(y > 0)[0], np.nonzero(y < 0)[0]
    eps_level = 0.1 if annealing and eps < 0.1 else eps
    steps, iteration, step, converged = 0, 0, INITIAL, False
    G = st[2]
    while True:
        tol = (1.0 + eps_level) ** 2 - 1.0
        while True:
            R, _ = smo(buf, lru, kx, D, st, q, 0.5 * tol * (delta2 - R), 100000 * (q + 10))
            r2 = max(delta2 - R, MIN_RADIUS2 * delta2)
            i, t = cvm_search(buf, lru, kx, st, q, R - 0.5 * tol * r2, sample_size, rounds,
                              positive, negative)
            if i < 0:  # every point is in the core
                t = G[:q].min()
            delta_plus = (delta2 + R - 2.0 * t) / r2 - 1.0
            trace, n_rows = record(trace, n_rows, iteration, t0, R, delta_plus, q,
                                   step, lru)
            iteration += 1
            if delta_plus <= tol:
                break
            if steps == max_steps:
                return buf, q, R, steps, converged, trace, n_rows
            buf, q = append_point(buf, lru, st, q, i, t)
            steps += 1
            step = TOWARD
        if eps_level <= eps:
            converged = True
            break
        eps_level = max(0.5 * eps_level, eps)
        step = TIGHTEN
    return buf, q, R, steps, converged, trace, n_rows
