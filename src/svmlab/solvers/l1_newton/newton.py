"""The repaired Newton active-set method of spec 001 §2.6 (Algorithms 1-4 with every fix).

Coordinates at exactly 0 are inactive; a Newton step on the active ones is followed by the exact
l1 line search and an Armijo test on F_alpha. When the Newton decrement is below eta*alpha, the
inactive coordinates with |g_k| > mu are released in bulk (A3: they take part at once); if the
same set violates again, or none does, alpha is divided by beta. Released coordinates carry the
soft-thresholded gradient g_k - mu sign(g_k) (A5) and are pruned, before the line search, when
the Newton direction moves them uphill (prune='resolve' re-solves; 'zero' zeroes them, OWL-QN
style; 'none' is the paper's literal step).

Passes over X are counted as spec §3.2 does: one per Newton iteration (g and H_AA together),
one per accepted step (X d), one per alpha level (X w recomputed against drift), and one per
certificate computed for the stopping test.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.linalg import cho_factor, cho_solve

from svmlab.numerics.rows import matvec
from svmlab.solvers.l1_newton.linesearch import initial_slope, linesearch_l1
from svmlab.solvers.l1_newton.passes import newton_pass, smoothed_objective, weighted_columns

PRUNES = ("resolve", "zero", "none")


@dataclass(frozen=True)
class Settings:
    """The method's parameters (spec §2.7)."""

    lam: float
    mu: float
    alpha0: float = 1.0
    alpha_min: float = 1e-4
    beta: float = 2.0
    eta: float = 0.1
    c1: float = 1e-4
    max_newton: int = 10_000
    max_backtrack: int = 50
    prune: str = "resolve"


@dataclass
class State:
    """The iterate, its cached X w, the smoothing level and the counters."""

    w: np.ndarray
    xw: np.ndarray
    alpha: float
    iterations: int = 0
    steps: int = 0
    backtracks: int = 0
    passes: int = 0
    levels: int = 0
    active: int = 0
    objective: float = np.nan  # F_alpha(w), NaN until evaluated at this alpha
    solved: float = np.nan  # the last alpha whose subproblem ended (at exit: or the current)
    stopped: bool = False  # the level callback stopped the run
    released: np.ndarray = field(default=None)
    last_release: np.ndarray = field(default=None)


class DenseCurvature:
    """H_AA as a matrix (k <= N)."""

    def __init__(self, H):
        self.H = H

    def solve(self, keep, rhs):
        return solve_spd(self.H[np.ix_(keep, keep)], rhs)

    def quad(self, keep, d):
        return float(d @ self.H[np.ix_(keep, keep)] @ d)


class LowRankCurvature:
    """H_AA = lam I + B^T B with B = diag(sqrt(j''(z)/N)) X_A (N x k), for k > N: solved by
    Woodbury through an N x N system, so a release of many coordinates on wide data costs
    O(N^2 k) instead of O(k^3). lam = 0 (H singular, k > N) takes the ridge of spec A12."""

    def __init__(self, lam, B):
        self.lam, self.B = lam, B

    def solve(self, keep, rhs):
        B = self.B[:, keep]
        c = self.lam
        if c == 0.0:
            c = 1e-10 * max(1.0, float(np.einsum("ij,ij->", B, B)) / len(keep))
        while True:
            try:
                M = cho_factor(c * np.eye(B.shape[0]) + B @ B.T)
                return (rhs - B.T @ cho_solve(M, B @ rhs)) / c
            except np.linalg.LinAlgError:
                c *= 10.0

    def quad(self, keep, d):
        Bd = self.B[:, keep] @ d
        return float(self.lam * (d @ d) + Bd @ Bd)


def newton_direction(curvature, gt, g, released, prune):
    """(keep, d): the positions of A kept after pruning and d_keep = -H^-1 gt on them."""
    keep = np.arange(len(gt))
    while True:
        d = -curvature.solve(keep, gt[keep])
        if prune == "none":
            return keep, d
        uphill = released[keep] & (d * g[keep] > 0.0)
        if not uphill.any():
            return keep, d
        if prune == "zero":
            d[uphill] = 0.0
            return keep, d
        keep = keep[~uphill]


def solve_spd(H, rhs):
    """H^-1 rhs by Cholesky; a singular H (lam = 0) gets the ridge tau I of spec A12."""
    tau = 0.0
    base = 1e-10 * max(1.0, float(np.trace(H)) / max(len(rhs), 1))
    while True:
        try:
            return cho_solve(cho_factor(H + tau * np.eye(len(rhs)) if tau else H), rhs)
        except np.linalg.LinAlgError:
            tau = base if tau == 0.0 else 10.0 * tau


def curvature_at(rows, y, state, s_: Settings, A, g):
    """One pass: the full gradient g and the curvature of the active block (dense H_AA when
    |A| <= N, the factor B otherwise)."""
    n, p = rows.n_rows, rows.n_cols
    slot = np.full(p, -1, np.int64)
    low_rank = len(A) > n
    if low_rank:
        B = np.zeros((n, len(A)))
        weighted_columns(rows, y, state.xw, state.alpha, A, B)
        newton_pass(rows, y, state.xw, state.w, state.alpha, s_.lam, slot, 0, g, np.empty((0, 0)))
        return LowRankCurvature(s_.lam, B)
    slot[A] = np.arange(len(A))
    H = np.empty((len(A), len(A)))
    newton_pass(rows, y, state.xw, state.w, state.alpha, s_.lam, slot, len(A), g, H)
    return DenseCurvature(H)


def minimise_over_schedule(rows, y, settings: Settings, w0: np.ndarray, on_iteration, on_level):
    """Minimise F_alpha over the smoothing schedule from w0. ``on_iteration(state)`` sees every
    Newton iteration; ``on_level(state)`` is called after each alpha reduction and returns True
    to stop (a gap test). Returns the final State."""
    s_ = settings
    n, p = rows.n_rows, rows.n_cols
    state = State(
        w0.copy(),
        np.empty(n),
        s_.alpha0,
        released=np.zeros(p, bool),
        last_release=np.empty(0, np.int64),
    )
    matvec(rows, state.w, state.xw)
    state.passes += 1
    g, xd = np.empty(p), np.empty(n)
    while (
        state.alpha > s_.alpha_min / s_.beta
        and state.iterations < s_.max_newton
        and not state.stopped
    ):
        state.iterations += 1
        w, released = state.w, state.released
        A = np.flatnonzero((w != 0.0) | released)
        curvature = curvature_at(rows, y, state, s_, A, g)
        state.passes += 1
        gA, rA = g[A], released[A]
        gt = gA + s_.mu * np.sign(w[A]) - s_.mu * np.where(rA, np.sign(gA), 0.0)
        keep, d_keep = newton_direction(curvature, gt, gA, rA, s_.prune) if len(A) else (A, gt)
        state.released[A[np.setdiff1d(np.arange(len(A)), keep)]] = False
        state.active = len(keep)
        decrement = -float(gt[keep] @ d_keep)
        accepted = False
        if decrement >= s_.eta * state.alpha:
            accepted = _step(
                rows,
                y,
                state,
                s_,
                A[keep],
                d_keep,
                0.5 * curvature.quad(keep, d_keep),
                gA[keep],
                xd,
            )
        if accepted:
            state.released[:] = False
        else:
            state.stopped = _release_or_reduce(rows, y, state, s_, g, on_level)
        on_iteration(state)
    if np.isnan(state.solved):
        state.solved = state.alpha
    return state


def _step(rows, y, state: State, s_: Settings, Ak, d, a, g, xd) -> bool:
    """Exact l1 line search (a = d^T H d / 2) and Armijo backtracking along d on the
    coordinates Ak; True if the step was accepted (w, X w and F_alpha updated)."""
    wA = state.w[Ak]
    b = float(g @ d)
    s, zeroed = linesearch_l1(wA, d, b, a, s_.mu)
    if s <= 0.0:
        return False
    slope = initial_slope(wA, d, b, s_.mu)
    direction = np.zeros_like(state.w)
    direction[Ak] = d
    matvec(rows, direction, xd)
    state.passes += 1
    if not np.isfinite(state.objective):
        state.objective = smoothed_objective(y, state.xw, state.w, state.alpha, s_.lam, s_.mu)
    first = s
    for tries in range(s_.max_backtrack + 1):
        w = state.w.copy()
        w[Ak] = wA + s * d
        if s == first and len(zeroed):
            w[Ak[zeroed]] = 0.0  # the line search stopped at their breakpoint (spec §2.2, l.14)
        xw = state.xw + s * xd
        value = smoothed_objective(y, xw, w, state.alpha, s_.lam, s_.mu)
        if value <= state.objective + s_.c1 * s * slope:
            state.w, state.xw, state.objective = w, xw, value
            state.steps += 1
            state.backtracks += tries
            return True
        s *= 0.5
    state.backtracks += s_.max_backtrack
    return False


def _release_or_reduce(rows, y, state: State, s_: Settings, g, on_level) -> bool:
    """Algorithm 3: release the inactive KKT violators, unless they are the set released last
    time or there are none; then alpha /= beta (X w recomputed, drift bounded). Returns the
    level callback's verdict (True: stop)."""
    violators = np.flatnonzero((state.w == 0.0) & ~state.released & (np.abs(g) > s_.mu))
    repeated = np.array_equal(violators, state.last_release)
    state.last_release = violators
    if len(violators) and not repeated:
        state.released[violators] = True
        return False
    state.solved = state.alpha
    state.alpha /= s_.beta
    state.levels += 1
    state.released[:] = False
    matvec(rows, state.w, state.xw)
    state.passes += 1
    state.objective = smoothed_objective(y, state.xw, state.w, state.alpha, s_.lam, s_.mu)
    return bool(on_level(state))
