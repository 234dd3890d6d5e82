"""numba loops of the Frank-Wolfe (FW, MFW) and core vector machine (CVM) solvers of the L2-SVM.

All three minimise R(alpha) = alpha^T K~ alpha over the unit simplex (K~: `kernel`), i.e.
maximise g(alpha) = Delta^2 - R, the squared radius r^2 of the current ball in the minimum
enclosing ball (MEB) view. The iterate is a list of active points (`Slots`, one slot each):

    core[p]   data index of slot p          alpha[p]  its weight (> 0 for FW/MFW)
    G[p]      (K~ alpha)_core[p]            pos[i]    slot of data index i, or -1
    q         number of slots               R         alpha^T K~ alpha

and it is updated incrementally (exact line searches for any kernel; the paper's closed forms are
the special case D_i = Delta^2). Removing a slot moves the last slot into it (`remove_slot`), and
the cached rows are remapped the same way. FW and MFW with full scans keep instead Gf = K~ alpha
for every point, with cached rows over all points (`full_gradient`): a step then costs one
kernel row of m values (or a cache hit) and the scan is a read of Gf, as in LIBSVM's gradient
bookkeeping; a sampled run whose stop a full scan refutes (final_full_check) keeps Gf from then
on. Rows come from the row cache (`svmlab.solvers.frank_wolfe.row_cache`).

Stopping rules. Rule 'meb' (the paper's) stops when delta+ = (Delta^2 + R - 2t) / r^2 - 1 <=
(1 + eps)^2 - 1, t = the search's min G: a ball accuracy, whose meaning in terms of the SVM
depends on the kernel. Rule 'gap' (full scans only) stops when the certified relative duality
gap of the L2-SVM is at most eps: the model of alpha has margins m_i = G_i - alpha_i / C, its
primal value P at the best rho is `l2svm_primal` (as `svmlab.estimator.formulations.FreeMargin`)
and the dual value of alpha is -R/2, so the gap is P + R/2 and the relative gap that over |P|.
It is computed from G over every point at iterations spaced by a factor GAP_CHECK_GROWTH
(0, 1, ..., 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 22, 24, ...), at every full search of
CVM and at an iterate where the run may end (CVM under rule 'gap' with sampled searches: at
its full searches only, so that every traced gap is one its rule tested), and recorded in the
trace's gap columns (NaN in the other rows), so that a time to a gap is read from the trace
within that spacing. G over every point is the kept Gf (FW/MFW's full scans) or CVM's full
search; a run that keeps G for its core only (sampled searches) computes it for the trace from
the core's kernel rows (`traced_gap`). Only rule 'gap' stops on the gap: under rule 'meb' that
work is trace-only and taken off the solver clock, as is `traced_gap` always.

The loops run in slices (`svmlab.numerics.trace_buffer`): a call records one trace row per
iterate (TRACE_COLUMNS after the iteration and the solver time) and returns when the buffer is
full, the slice's deadline has passed or the run has ended; `Progress` holds what the next call
needs to resume exactly where the last one stopped.
"""

from typing import NamedTuple

import numpy as np
from numba import njit

from svmlab.estimator.formulations import L2SVM
from svmlab.numerics.trace_buffer import exclude_since, monotonic_ns, next_row, slice_over
from svmlab.solvers.frank_wolfe.kernel import modified_row
from svmlab.solvers.frank_wolfe.row_cache import (
    EVALS,
    SERVED,
    WIDTH,
    claim_row,
    clear,
    grow,
    move_column,
)

TRACE_COLUMNS = (
    L2SVM.metric("objective") + "_dual",
    "meb_radius2",
    "delta_plus",
    "fw_gap",
    L2SVM.metric("gap"),
    L2SVM.metric("rel_gap"),
    "core_size",
    "step_type",
    "kernel_evals",
    "cache_hit_rate",
    "iter_kernel_evals",
    "iter_cache_hit_rate",
)
INITIAL, TOWARD, AWAY, DROP, TIGHTEN = -1, 0, 1, 2, 3
RUNNING, CONVERGED, MAX_STEPS, LEVEL_FLOOR = 0, 1, 2, 3  # LEVEL_FLOOR: CVM at MIN_LEVEL
# Progress.counts entries, Progress.values entries
(Q, STEPS, ITERATION, LAST_STEP, I_MIN, STATUS, NEXT_CHECK, KEEPS_GF, EVALS_SEEN, SERVED_SEEN) = (
    range(10)
)
RADIUS, LEVEL, INNER = range(3)
GAP_CHECK_GROWTH = 1.1  # iterations between two exact gaps grow by this factor
MIN_RADIUS2 = 1e-16  # r^2 is floored at this fraction of Delta^2 (a zero ball is degenerate)
NO_AWAY_ABOVE = 1.0 - 1e-15  # never step away from a point holding (almost) all the mass
MIN_LEVEL = 1e-12  # CVM's finest ball level under rule 'gap' with sampled searches


class Slots(NamedTuple):
    """The active points of the iterate (see the module docstring)."""

    core: np.ndarray  # int64
    alpha: np.ndarray
    G: np.ndarray
    pos: np.ndarray  # int64
    Gf: np.ndarray  # K~ alpha for every point: kept by FW/MFW's full scans, written by
    # CVM's full searches and by the trace's gaps (`traced_gap`)
    points: np.ndarray  # 0, ..., m - 1
    row: np.ndarray  # a kernel row over every point, the trace's gaps' scratch


class Options(NamedTuple):
    """A run's settings: the step rule, the stopping rule and the search."""

    away: bool  # MFW's away and drop steps
    gap_stop: bool  # rule 'gap' (else 'meb'); needs a scan of every point
    eps: float  # the rule's tolerance (CVM: the last level's)
    sample_size: int  # candidates per search; 0: every point
    rounds: int  # samples in a row without a violator before a sampled stop
    final_full_check: bool  # confirm a sampled stop with a full scan (which then keeps Gf)
    max_steps: int
    refresh_every: int  # steps between renormalisations (0: never)
    full: bool  # G over every point: FW/MFW keep Gf, CVM searches every point


class Progress(NamedTuple):
    """Where a sliced run stands: counts[Q, STEPS, ITERATION, LAST_STEP, I_MIN, STATUS,
    NEXT_CHECK (the next iteration with an exact gap), KEEPS_GF (1 while FW/MFW keep Gf),
    EVALS_SEEN, SERVED_SEEN (the cache's counts at the last recorded row)] and
    values[RADIUS (= R), LEVEL (CVM's current eps), INNER (CVM's factor on its inner
    tolerance)]."""

    counts: np.ndarray  # int64
    values: np.ndarray


def new_slots(n_points: int) -> Slots:
    """An empty core list over n_points data points."""
    return Slots(
        np.full(n_points, -1, np.int64),
        np.zeros(n_points),
        np.zeros(n_points),
        np.full(n_points, -1, np.int64),
        np.zeros(n_points),
        np.arange(n_points),
        np.zeros(n_points),
    )


def new_progress(q: int, R: float, level: float, i_min: int = -1) -> Progress:
    """A run about to record its first iterate (q slots, alpha^T K~ alpha = R; i_min = argmin Gf
    when Gf is kept, -1 when it is not)."""
    return Progress(
        np.array([q, 0, 0, INITIAL, i_min, RUNNING, 0, i_min >= 0, 0, 0], np.int64),
        np.array([R, level, 1.0]),
    )


@njit(cache=True)
def seed_rng(seed):
    """Seed numba's generator, which drives the sampling and the random initialisation."""
    np.random.seed(seed)


@njit(cache=True)
def _dot(a, b, n):
    total = 0.0
    for p in range(n):
        total += a[p] * b[p]
    return total


@njit(cache=True)
def row_of(cache, mk, i, cols, n):
    """K~(i, cols[:n]) from the cache (computing what it lacks)."""
    s, have = claim_row(cache, i, n)
    if have < n:
        cache.stats[EVALS] += modified_row(mk, i, cols, have, n, cache.buf[s])
    return cache.buf[s]


@njit(cache=True)
def g_value(cache, mk, sl, q, i):
    """G_i = (K~ alpha)_i: the maintained value for a core point, else a cached row times alpha."""
    if sl.pos[i] >= 0:
        return sl.G[sl.pos[i]]
    return _dot(sl.alpha, row_of(cache, mk, i, sl.core, q), q)


@njit(cache=True)
def search_toward(cache, mk, sl, q, sample_size):
    """(i*, G_i*) with i* = argmin G over sample_size i.i.d. uniform draws, or all points if 0."""
    m = sl.pos.shape[0]
    n = m if sample_size == 0 else sample_size
    best_i, best = -1, np.inf
    for t in range(n):
        i = t if sample_size == 0 else np.random.randint(0, m)
        g = g_value(cache, mk, sl, q, i)
        if g < best:
            best_i, best = i, g
    return best_i, best


@njit(cache=True)
def append_point(cache, sl, q, i, g_i):
    """Give data index i a new slot with alpha = 0 and G = g_i; grows the cache rows if needed.
    Returns (cache, q + 1)."""
    if q + 1 > cache.meta[WIDTH]:
        cache = grow(cache, q + 1)
    sl.core[q], sl.alpha[q], sl.G[q], sl.pos[i] = i, 0.0, g_i, q
    return cache, q + 1


@njit(cache=True)
def remove_slot(cache, sl, q, p, remap):
    """Remove slot p (its alpha must be 0) by moving the last slot into it; returns q - 1.
    With remap, cached rows (indexed by core slot) are moved the same way."""
    core, alpha, G, pos = sl.core, sl.alpha, sl.G, sl.pos
    last = q - 1
    pos[core[p]] = -1
    if p != last:
        core[p], alpha[p], G[p] = core[last], alpha[last], G[last]
        pos[core[p]] = p
    core[last], alpha[last], G[last] = -1, 0.0, 0.0
    if remap:
        move_column(cache, p, q)
    return last


@njit(cache=True)
def remove_empty_slots(cache, sl, q, remap):
    """Remove every slot whose alpha is exactly 0; returns the new q."""
    for p in range(q - 1, -1, -1):
        if sl.alpha[p] == 0.0:
            q = remove_slot(cache, sl, q, p, remap)
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
def blend_argmin(G, row, lam, n):
    """G[:n] <- (1 - lam) G[:n] + lam row[:n]; returns argmin G[:n] (its first index). Four
    running minima over interleaved entries, merged at the end, so that each comparison does
    not wait on the previous one (twice the speed of one running minimum, same result)."""
    a = 1.0 - lam
    best = np.full(4, np.inf)
    at = np.full(4, -1)
    whole = n - n % 4
    for k in range(0, whole, 4):
        for lane in range(4):
            g = a * G[k + lane] + lam * row[k + lane]
            G[k + lane] = g
            if g < best[lane]:
                best[lane], at[lane] = g, k + lane
    best_k, low = at[0], best[0]
    for lane in range(1, 4):
        if best[lane] < low or (best[lane] == low and at[lane] < best_k):
            best_k, low = at[lane], best[lane]
    for k in range(whole, n):
        G[k] = a * G[k] + lam * row[k]
        if G[k] < low:
            best_k, low = k, G[k]
    return best_k


@njit(cache=True)
def move(cache, mk, sl, q, p, lam, full):
    """alpha <- (1 - lam) alpha + lam e_p and G <- (1 - lam) G + lam K~(core[p], .), where
    lam < 0 is an away step. G is the core slots' G (full False) or Gf over all points (full
    True; the slots' G are then copied from it). Returns argmin Gf (full) or -1."""
    core, alpha, Gs, Gf = sl.core, sl.alpha, sl.G, sl.Gf
    G, cols, n = (Gf, sl.points, Gf.shape[0]) if full else (Gs, core, q)
    row = row_of(cache, mk, core[p], cols, n)
    for s in range(q):
        alpha[s] *= 1.0 - lam
    alpha[p] += lam
    if not full:
        for k in range(n):
            G[k] = (1.0 - lam) * G[k] + lam * row[k]
        return -1
    best_k = blend_argmin(G, row, lam, n)
    for s in range(q):
        Gs[s] = Gf[core[s]]
    return best_k


@njit(cache=True)
def toward_step(cache, mk, D, sl, q, R, i, t, full):
    """FW step alpha <- (1 - lam) alpha + lam e_i with the exact line search; t = G_i.

    Returns (cache, q, R, argmin Gf). lam = 1 (possible for non-normalised kernels) leaves
    A = {i}.
    """
    lam = toward_lambda(R, t, D[i])
    if sl.pos[i] < 0:
        cache, q = append_point(cache, sl, q, i, t)
    i_min = move(cache, mk, sl, q, sl.pos[i], lam, full)
    R = mixed_radius(R, t, D[i], lam)
    if lam == 1.0:
        q = remove_empty_slots(cache, sl, q, not full)
    return cache, q, R, i_min


@njit(cache=True)
def away_step(cache, mk, D, sl, q, R, p, full):
    """Away step alpha <- (1 + lam) alpha - lam e_j from slot p (j = core[p]), exact line search
    on [0, alpha_j / (1 - alpha_j)]; at the bound alpha_j becomes exactly 0 and the slot is
    removed (drop step). Returns (q, R, dropped, argmin Gf)."""
    j, t, a = sl.core[p], sl.G[p], sl.alpha[p]
    lam_max = a / (1.0 - a)
    lam = away_lambda(R, t, D[j], lam_max)
    i_min = move(cache, mk, sl, q, p, -lam, full)
    R = mixed_radius(R, t, D[j], -lam)
    dropped = lam >= lam_max
    if dropped:
        sl.alpha[p] = 0.0
        q = remove_slot(cache, sl, q, p, not full)
    return q, R, dropped, i_min


@njit(cache=True)
def refresh(cache, mk, sl, q, full):
    """Renormalise alpha to sum 1 and make G and R consistent with it: recomputed exactly from
    the core rows (core slots' G), or rescaled by the same factor (Gf over all points, whose
    exact recomputation would cost q full rows). Returns (R, argmin Gf or -1)."""
    core, alpha, G, Gf = sl.core, sl.alpha, sl.G, sl.Gf
    total = alpha[:q].sum()
    alpha[:q] /= total
    if not full:
        for p in range(q):
            G[p] = _dot(alpha, row_of(cache, mk, core[p], core, q), q)
        return _dot(alpha, G, q), -1
    Gf /= total
    G[:q] /= total
    return _dot(alpha, G, q), np.argmin(Gf)


@njit(cache=True)
def full_gradient(cache, mk, sl, q):
    """Gf = K~ alpha over all points, from the full rows of the core points; returns R. The
    cached rows are forgotten first: from here on they are rows over all points, not over the
    core slots."""
    core, alpha, G, Gf = sl.core, sl.alpha, sl.G, sl.Gf
    clear(cache)
    Gf[:] = 0.0
    for p in range(q):
        row = row_of(cache, mk, core[p], sl.points, Gf.shape[0])
        for k in range(Gf.shape[0]):
            Gf[k] += alpha[p] * row[k]
    for p in range(q):
        G[p] = Gf[core[p]]
    return _dot(alpha, G, q)


@njit(cache=True)
def keep_gradient(cache, mk, sl, q):
    """Switch a run from core rows to Gf over every point (`full_gradient`), with cached rows
    over all points from then on. Returns (cache, R, argmin Gf)."""
    clear(cache)
    if cache.meta[WIDTH] < sl.Gf.shape[0]:
        cache = grow(cache, sl.Gf.shape[0])
    R = full_gradient(cache, mk, sl, q)
    return cache, R, np.argmin(sl.Gf)


@njit(cache=True)
def smo(cache, mk, D, sl, q, tol_abs, max_steps):
    """Minimise alpha^T K~ alpha on the simplex over the core slots by SMO (second-order working
    set: i = argmin G, j = argmax (G_j - G_i)^2 / a_ij over alpha_j > 0), until
    max_{alpha_j > 0} G_j - min G <= tol_abs. Returns (R, steps)."""
    core, alpha, G = sl.core, sl.alpha, sl.G
    steps = 0
    while steps < max_steps:
        i = np.argmin(G[:q])
        g_max = -np.inf
        for p in range(q):
            if alpha[p] > 0.0 and G[p] > g_max:
                g_max = G[p]
        if g_max - G[i] <= tol_abs:
            break
        row_i = row_of(cache, mk, core[i], core, q)
        j, best_gain, a_j = -1, -1.0, 1.0
        for p in range(q):
            diff = G[p] - G[i]
            if alpha[p] > 0.0 and diff > tol_abs:
                a = D[core[i]] + D[core[p]] - 2.0 * row_i[p]
                a = a if a > 0.0 else 1e-12
                if diff * diff / a > best_gain:
                    j, best_gain, a_j = p, diff * diff / a, a
        row_j = row_of(cache, mk, core[j], core, q)
        s = min((G[j] - G[i]) / a_j, alpha[j])
        alpha[i] += s
        alpha[j] = 0.0 if s == alpha[j] else alpha[j] - s
        for p in range(q):
            G[p] += s * (row_i[p] - row_j[p])
        steps += 1
    return _dot(alpha, G, q), steps


@njit(cache=True)
def init_random_meb(cache, mk, D, sl, n_init, tol_abs):
    """Random-MEB start: n_init distinct points drawn alternately from the two classes, the MEB
    of these points by SMO from alpha = 1/n_init, then the points with alpha = 0 removed.
    Returns (cache, q, R)."""
    y = mk.y
    positive = np.random.permutation(np.nonzero(y > 0)[0])
    negative = np.random.permutation(np.nonzero(y < 0)[0])
    q, a, b = 0, 0, 0
    while q < n_init and (a < positive.shape[0] or b < negative.shape[0]):
        take_positive = (q % 2 == 0 and a < positive.shape[0]) or b >= negative.shape[0]
        if take_positive:
            cache, q = append_point(cache, sl, q, positive[a], 0.0)
            a += 1
        else:
            cache, q = append_point(cache, sl, q, negative[b], 0.0)
            b += 1
    sl.alpha[:q] = 1.0 / q
    core_gradient(cache, mk, sl, q)
    R, _ = smo(cache, mk, D, sl, q, tol_abs, 1000 * q * q)
    return cache, remove_empty_slots(cache, sl, q, True), R


@njit(cache=True)
def init_from(cache, mk, sl, points, weights):
    """Start from a given point of the simplex (another fit's alpha: feasible for every C),
    the data indices `points` with alpha = `weights`. Returns (cache, q, R)."""
    q = 0
    for p in range(points.shape[0]):
        cache, q = append_point(cache, sl, q, points[p], 0.0)
        sl.alpha[p] = weights[p]
    return cache, q, core_gradient(cache, mk, sl, q)


@njit(cache=True)
def core_gradient(cache, mk, sl, q):
    """G = K~ alpha on the core slots, from their rows over the core; returns R = alpha.G."""
    for p in range(q):
        sl.G[p] = _dot(sl.alpha, row_of(cache, mk, sl.core[p], sl.core, q), q)
    return _dot(sl.alpha, sl.G, q)


@njit(cache=True)
def init_two_points(cache, mk, D, sl):
    """Two-point start: a random point a, b the point furthest from it in the MEB feature space
    (max D_a + D_b - 2 K~_ab), alpha_a = alpha_b = 1/2. Returns (cache, q, R)."""
    m = D.shape[0]
    a = np.random.randint(0, m)
    row = np.empty(m)
    cache.stats[EVALS] += modified_row(mk, a, np.arange(m), 0, m, row)
    b, best = -1, -np.inf
    for i in range(m):
        dist = D[a] + D[i] - 2.0 * row[i]
        if i != a and dist > best:
            b, best = i, dist
    cache, q = append_point(cache, sl, 0, a, 0.5 * (D[a] + row[b]))
    cache, q = append_point(cache, sl, q, b, 0.5 * (row[b] + D[b]))
    sl.alpha[0] = sl.alpha[1] = 0.5
    return cache, q, 0.25 * (D[a] + 2.0 * row[b] + D[b])


@njit(cache=True)
def l2svm_primal(sl, q, R, inv_c, G_all):
    """The L2-SVM primal value of the model of alpha, at its best rho, from G over every point
    (1/2 (||w||^2 + b^2 + C sum_i max(0, rho - m_i)^2) - rho, m_i = G_i - alpha_i / C)."""
    margins = G_all.copy()
    sum_a2 = 0.0
    for p in range(q):
        margins[sl.core[p]] -= sl.alpha[p] * inv_c
        sum_a2 += sl.alpha[p] * sl.alpha[p]
    margins.sort()
    total, rho = 0.0, 0.0
    for k in range(margins.shape[0]):  # rho solves C sum_i max(0, rho - m_i) = 1
        total += margins[k]
        rho = (inv_c + total) / (k + 1)
        if k + 1 == margins.shape[0] or rho <= margins[k + 1]:
            break
    slack2 = 0.0
    for k in range(margins.shape[0]):
        if margins[k] >= rho:
            break
        slack2 += (rho - margins[k]) ** 2
    return 0.5 * (R - sum_a2 * inv_c + slack2 / inv_c) - rho


@njit(cache=True)
def l2svm_gap(sl, q, R, inv_c, G_all):
    """(gap, relative gap) of the model of alpha, from G over every point."""
    primal = l2svm_primal(sl, q, R, inv_c, G_all)
    gap = primal + 0.5 * R
    return gap, gap / max(abs(primal), 1e-300)


@njit(cache=True)
def gap_check(trace, opt, sl, q, R, inv_c, G_all):
    """(gap, relative gap) of the model of alpha (on the solver clock only under rule 'gap')."""
    start = monotonic_ns()
    gap, rel_gap = l2svm_gap(sl, q, R, inv_c, G_all)
    if not opt.gap_stop:
        exclude_since(trace, start)
    return gap, rel_gap


@njit(cache=True)
def traced_gap(trace, mk, sl, q):
    """(gap, relative gap) of the model of alpha for the trace of a run that keeps G for its
    core only: Gf = K~ alpha computed anew from the core's q kernel rows over every point
    (computed directly, so that the row cache's contents and counts stay the solver's), and R
    = alpha^T K~ alpha from it. Trace-only work: off the solver clock."""
    start = monotonic_ns()
    Gf, row, m = sl.Gf, sl.row, sl.Gf.shape[0]
    Gf[:] = 0.0
    for p in range(q):
        modified_row(mk, sl.core[p], sl.points, 0, m, row)
        a = sl.alpha[p]
        for k in range(m):
            Gf[k] += a * row[k]
    R = 0.0
    for p in range(q):
        R += sl.alpha[p] * Gf[sl.core[p]]
    gap, rel_gap = l2svm_gap(sl, q, R, mk.inv_c, Gf)
    exclude_since(trace, start)
    return gap, rel_gap


@njit(cache=True)
def meb_tolerance(level):
    """The bound on delta+ of rule 'meb' at tolerance level `level` (eps)."""
    return (1.0 + level) ** 2 - 1.0


@njit(cache=True)
def record(trace, iteration, delta2, R, delta_plus, gap, rel_gap, q, step, stats, counts):
    """One trace row (TRACE_COLUMNS) for the iterate; the iteration's kernel values are those
    counted since the last row (counts[EVALS_SEEN], counts[SERVED_SEEN], then updated)."""
    row = trace.rows[next_row(trace, iteration)]
    requested = stats[EVALS] + stats[SERVED]
    evals, served = stats[EVALS] - counts[EVALS_SEEN], stats[SERVED] - counts[SERVED_SEEN]
    counts[EVALS_SEEN], counts[SERVED_SEEN] = stats[EVALS], stats[SERVED]
    row[2] = -0.5 * R
    row[3] = delta2 - R
    row[4] = delta_plus
    row[5] = (delta2 - R) * delta_plus
    row[6] = gap
    row[7] = rel_gap
    row[8] = q
    row[9] = step
    row[10] = stats[EVALS]
    row[11] = stats[SERVED] / requested if requested > 0 else 0.0
    row[12] = evals
    row[13] = served / (evals + served) if evals + served > 0 else np.nan


@njit(cache=True)
def run_frank_wolfe(cache, mk, D, delta2, sl, opt, progress, trace):
    """FW (away False, Algorithm 2) or MFW (away True, Algorithm 3) for one slice; returns the
    cache (whose rows may have grown).

    The toward vertex i* = argmin G is searched over sample_size random points through the core
    rows (0: all points), or, while Gf = K~ alpha is kept for every point (counts[KEEPS_GF]:
    full, from `full_gradient`), read off Gf: one full kernel row per step instead of the
    sample_size x q values of a search. Each iterate is recorded, then the rule is tested; a
    sampled 'meb' stop needs `rounds` samples in a row without a violator and, with
    final_full_check, a full scan: Gf from the core's full rows (`keep_gradient`). When that scan finds a violator, the run
    keeps Gf from then on (a step then costs one kernel row and every later stop is exact)
    instead of scanning again at each later sampled stop. MFW takes the away step from
    j* = argmax_A G when delta- > delta+ and |A| >= 2.
    """
    counts, values = progress.counts, progress.values
    q, R, steps = counts[Q], values[RADIUS], counts[STEPS]
    last_step, i_min = counts[LAST_STEP], counts[I_MIN]
    full, alpha, G, Gf = counts[KEEPS_GF] != 0, sl.alpha, sl.G, sl.Gf
    tol = meb_tolerance(opt.eps)
    status = RUNNING
    while status == RUNNING:
        if full:
            i, t = i_min, Gf[i_min]
        else:
            i, t = search_toward(cache, mk, sl, q, opt.sample_size)
        r2 = max(delta2 - R, MIN_RADIUS2 * delta2)
        delta_plus = (delta2 + R - 2.0 * t) / r2 - 1.0
        for _ in range(0 if full else opt.rounds - 1):  # more samples before a sampled stop
            if delta_plus > tol:
                break
            i, t = search_toward(cache, mk, sl, q, opt.sample_size)
            delta_plus = (delta2 + R - 2.0 * t) / r2 - 1.0
        if delta_plus <= tol and not full and opt.final_full_check and opt.sample_size > 0:
            cache, R, i_min = keep_gradient(cache, mk, sl, q)
            full, i, t = True, i_min, Gf[i_min]
            r2 = max(delta2 - R, MIN_RADIUS2 * delta2)
            delta_plus = (delta2 + R - 2.0 * t) / r2 - 1.0
        gap, rel_gap = np.nan, np.nan
        meb_stop = not opt.gap_stop and delta_plus <= tol
        if steps >= counts[NEXT_CHECK] or meb_stop or steps == opt.max_steps:
            gap, rel_gap = (
                gap_check(trace, opt, sl, q, R, mk.inv_c, Gf)
                if full
                else traced_gap(trace, mk, sl, q)
            )
            counts[NEXT_CHECK] = max(steps + 1, int(steps * GAP_CHECK_GROWTH))
        record(trace, steps, delta2, R, delta_plus, gap, rel_gap, q, last_step, cache.stats, counts)
        if meb_stop or (opt.gap_stop and rel_gap <= opt.eps):
            status = CONVERGED
            break
        if steps == opt.max_steps:
            status = MAX_STEPS
            break
        p, away = -1, False
        if opt.away and q >= 2:  # MFW: the away vertex (FW skips this scan of the core)
            p = np.argmax(G[:q])
            delta_minus = 1.0 - (delta2 + R - 2.0 * G[p]) / r2
            away = delta_minus > delta_plus and alpha[p] < NO_AWAY_ABOVE
        if away:
            q, R, dropped, i_min = away_step(cache, mk, D, sl, q, R, p, full)
            last_step = DROP if dropped else AWAY
        else:
            cache, q, R, i_min = toward_step(cache, mk, D, sl, q, R, i, t, full)
            last_step = TOWARD
        steps += 1
        if opt.refresh_every > 0 and steps % opt.refresh_every == 0:
            R, i_min = refresh(cache, mk, sl, q, full)
        if slice_over(trace):
            break
    counts[Q], counts[STEPS], counts[LAST_STEP], counts[I_MIN] = q, steps, last_step, i_min
    counts[STATUS], counts[KEEPS_GF], values[RADIUS] = status, full, R
    return cache


@njit(cache=True)
def cvm_search(cache, mk, sl, q, threshold, sample_size, rounds, positive, negative):
    """(i*, G_i*) over points outside the core: all of them (sample_size = 0; their G is written
    to Gf, with the core slots' G), or LibCVM's search: up to `rounds` rounds of sample_size
    draws alternating between the classes, ending at the first round whose best point has G
    below `threshold` (a violator)."""
    pos = sl.pos
    best_i, best = -1, np.inf
    if sample_size == 0:
        for i in range(pos.shape[0]):
            if pos[i] < 0:
                g = g_value(cache, mk, sl, q, i)
                sl.Gf[i] = g
                if g < best:
                    best_i, best = i, g
        for p in range(q):
            sl.Gf[sl.core[p]] = sl.G[p]
        return best_i, best
    for _ in range(rounds):
        for t in range(sample_size):
            pool = (
                positive
                if (t % 2 == 0 and positive.shape[0]) or not negative.shape[0]
                else negative
            )
            for _try in range(100):  # rejection of core points
                i = pool[np.random.randint(0, pool.shape[0])]
                if pos[i] < 0:
                    g = g_value(cache, mk, sl, q, i)
                    if g < best:
                        best_i, best = i, g
                    break
        if best < threshold:
            break
    return best_i, best


@njit(cache=True)
def run_cvm(cache, mk, D, delta2, sl, opt, progress, trace):
    """Core vector machine (Algorithm 1) for one slice: solve the QP on the core set by SMO, add
    the furthest point if the rule fails at the current level, repeat; returns the cache. The
    level (values[LEVEL]) starts at eps or, with LibCVM's annealing, at 0.1, and halves down to
    eps each time the rule holds. The inner SMO stops when max_{alpha > 0} G - min G is at most
    tol r^2 / 2 (rule 'meb': then every core point passes the ball test) or tol R / 2 (rule
    'gap' with full searches), times values[INNER]; under that rule the factor shrinks tenfold
    when no point outside the core violates it but the gap is still too large.

    Rule 'gap' with sampled searches: LibCVM's sampled search and ball levels drive the run,
    and where they would end a level a full search certifies the iterate. The run stops when
    the certified relative gap is at most eps; otherwise the level ends all the same (halved,
    down to MIN_LEVEL, where a run that still does not certify ends: LEVEL_FLOOR)
    and the full search's furthest point is added if it violated the level. Ending the level
    at a refuted certificate keeps the full searches to about one per level: the few
    violators that the sampled search misses near a level's end keep moving as the core's QP
    is re-solved, and chasing them one full search at a time cost more than the finer level."""
    counts, values = progress.counts, progress.values
    q, R, steps = counts[Q], values[RADIUS], counts[STEPS]
    iteration, step, level, scale = (
        counts[ITERATION],
        counts[LAST_STEP],
        values[LEVEL],
        values[INNER],
    )
    positive, negative = np.nonzero(mk.y > 0)[0], np.nonzero(mk.y < 0)[0]
    G = sl.G
    gap_levels = opt.gap_stop and opt.full  # the levels are relative gaps, else ball accuracies
    certify = opt.gap_stop and not opt.full
    status = RUNNING
    while status == RUNNING:
        tol = level if gap_levels else meb_tolerance(level)
        inner = 0.5 * tol * (R if gap_levels else delta2 - R) * scale
        R, _ = smo(cache, mk, D, sl, q, inner, 100000 * (q + 10))
        r2 = max(delta2 - R, MIN_RADIUS2 * delta2)
        threshold = R - 0.5 * meb_tolerance(level) * r2
        i, t = cvm_search(
            cache, mk, sl, q, threshold, opt.sample_size, opt.rounds, positive, negative
        )
        searched_all = opt.full
        if certify and (i < 0 or t >= threshold):
            i, t = cvm_search(cache, mk, sl, q, 0.0, 0, 0, positive, negative)
            searched_all = True
        if i < 0:  # every point is in the core
            t = G[:q].min()
        delta_plus = (delta2 + R - 2.0 * t) / r2 - 1.0
        gap, rel_gap = np.nan, np.nan
        if searched_all:
            gap, rel_gap = gap_check(trace, opt, sl, q, R, mk.inv_c, sl.Gf)
        elif not certify and (
            iteration >= counts[NEXT_CHECK] or steps == opt.max_steps or delta_plus <= tol
        ):  # (a possible end: its gap traced too)
            gap, rel_gap = traced_gap(trace, mk, sl, q)
            counts[NEXT_CHECK] = max(iteration + 1, int(iteration * GAP_CHECK_GROWTH))
        record(trace, iteration, delta2, R, delta_plus, gap, rel_gap, q, step, cache.stats, counts)
        iteration += 1
        if certify and rel_gap <= opt.eps:
            status = CONVERGED
            break
        if certify and searched_all:  # the level ends, refuted or not
            violator = delta_plus > tol
            if violator and steps == opt.max_steps:
                status = MAX_STEPS
                break
            if not violator and level <= MIN_LEVEL:
                status = LEVEL_FLOOR
                break
            level, step = max(0.5 * level, MIN_LEVEL), TIGHTEN
            if violator:
                cache, q = append_point(cache, sl, q, i, t)
                steps, step = steps + 1, TOWARD
        elif not certify and (rel_gap <= tol if gap_levels else delta_plus <= tol):
            if level <= opt.eps:
                status = CONVERGED
                break
            level, scale = max(0.5 * level, opt.eps), 1.0
            step = TIGHTEN
        elif steps == opt.max_steps:
            status = MAX_STEPS
            break
        elif gap_levels and (i < 0 or t >= R - inner):  # the core's QP is not solved finely
            scale *= 0.1  # enough for the gap: solve it finer
        else:
            cache, q = append_point(cache, sl, q, i, t)
            steps += 1
            step = TOWARD
        if slice_over(trace):
            break
    counts[Q], counts[STEPS], counts[ITERATION], counts[LAST_STEP] = q, steps, iteration, step
    counts[STATUS], values[RADIUS], values[LEVEL], values[INNER] = status, R, level, scale
    return cache
