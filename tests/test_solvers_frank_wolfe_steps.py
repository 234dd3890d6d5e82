"""One FW/MFW step at a time against a dense K~ (properties 1-4 and 6-8 of the Frank-Wolfe spec):
simplex feasibility, incremental G and R, the radius updates (with the corrected away-step sign),
the invariant sum alpha gamma^2 = r^2, exact line searches, the closed forms, away and drop steps.
"""

import numpy as np
import pytest

from svmlab.numerics.trace_buffer import new_buffer
from svmlab.solvers.frank_wolfe import loops as meb
from test_solvers_frank_wolfe import POLY2, RBF, empty_state, ktilde, problem

NEVER_STOP = -1.0  # eps = -1: the 'meb' bound (1 + eps)^2 - 1 = -1 < 0 <= delta+, never met


MODES = pytest.mark.parametrize("full", [False, True], ids=["core-rows", "full-gradient"])


def one_step(cache, mk, D, sl, q, R, away, full, refresh_every=0):
    """One FW/MFW step by the loop itself (max_steps = 1); returns (cache, q, R, step type)."""
    progress = meb.new_progress(q, R, NEVER_STOP, np.argmin(sl.Gf) if full else -1)
    opt = meb.Options(away, False, NEVER_STOP, 0, 1, False, 1, refresh_every, full)
    trace = new_buffer(2 + len(meb.TRACE_COLUMNS), np.zeros(2, np.int64), capacity=4)
    cache = meb.run_frank_wolfe(cache, mk, D, D.max(), sl, opt, progress, trace)
    assert progress.counts[meb.STEPS] == 1
    return (
        cache,
        progress.counts[meb.Q],
        progress.values[meb.RADIUS],
        progress.counts[meb.LAST_STEP],
    )


class Run:
    """The numba state of a full-scan FW/MFW run, advanced one step at a time: G kept on the
    core slots with a scan through core rows (full False), or Gf kept for every point."""

    def __init__(self, X, y, C, params, seed=0, full=False):
        self.mk, self.D, self.cache, self.sl = empty_state(X, y, C, **params, full=full)
        self.delta2 = self.D.max()
        self.Q = ktilde(X, y, C, **params)
        self.full = full
        meb.seed_rng(seed)
        self.cache, self.q, self.R = meb.init_random_meb(
            self.cache, self.mk, self.D, self.sl, 20, 1e-13 * self.delta2
        )
        if full:
            self.R = meb.full_gradient(self.cache, self.mk, self.sl, self.q)

    def alpha(self):
        out = np.zeros(len(self.D))
        out[self.sl.core[: self.q]] = self.sl.alpha[: self.q]
        return out

    def step(self, away, refresh_every=0):
        """One step; returns its type (meb.TOWARD, AWAY or DROP)."""
        self.cache, self.q, self.R, kind = one_step(
            self.cache, self.mk, self.D, self.sl, self.q, self.R, away, self.full, refresh_every
        )
        return kind


def check_state(run):
    """Properties 1 and 2: simplex, A = {alpha > 0}, slots consistent, G (and Gf) and R exact."""
    core, alpha, G, pos = run.sl.core, run.sl.alpha, run.sl.G, run.sl.pos
    q = run.q
    assert np.all(alpha[:q] > 0) and np.all(alpha[q:] == 0)
    assert abs(alpha[:q].sum() - 1) <= 1e-12
    assert np.array_equal(pos[core[:q]], np.arange(q))
    assert np.sum(pos >= 0) == q
    full = run.alpha()
    np.testing.assert_allclose(G[:q], (run.Q @ full)[core[:q]], rtol=1e-10)
    if run.full:
        np.testing.assert_allclose(run.sl.Gf, run.Q @ full, rtol=1e-10)
    assert pytest.approx(full @ run.Q @ full, rel=1e-10) == run.R


@MODES
@pytest.mark.parametrize("params", [RBF, POLY2], ids=["rbf", "poly2"])
def test_every_step_is_feasible_exact_and_optimal_on_its_segment(params, full):
    X, y = problem()
    run = Run(X, y, 4.0, params, full=full)
    Q, delta2 = run.Q, run.delta2
    normalised = params is RBF
    seen = set()
    for _ in range(150):
        a = run.alpha()
        G, R = Q @ a, a @ Q @ a
        r2 = delta2 - R
        gamma2 = delta2 + R - 2 * G
        active = np.flatnonzero(a > 0)
        i, j = np.argmin(G), active[np.argmax(G[active])]
        d_plus, d_minus = gamma2[i] / r2 - 1, 1 - gamma2[j] / r2
        if normalised:  # property 4
            assert a @ gamma2 == pytest.approx(r2, rel=1e-12)
        assert d_plus >= 0 and d_minus >= -1e-12
        q_before = run.q
        kind = run.step(away=True)
        seen.add(kind)
        check_state(run)
        new = run.alpha()
        R_new = new @ Q @ new
        expect_away = d_minus > d_plus and len(active) >= 2
        assert (kind in (meb.AWAY, meb.DROP)) == expect_away  # property 8: the choice rule
        if kind == meb.TOWARD:
            d = np.eye(len(a))[i] - a
            lam_max = 1.0
            other = next(k for k in active if k != i) if len(active) > 1 else None
            lam = 1 - new[other] / a[other] if other is not None else new[i]
            assert run.q >= q_before  # property 9: FW never shrinks A
            if normalised:  # properties 3 and 7
                assert lam == pytest.approx(d_plus / (2 * (1 + d_plus)), rel=1e-8)
                assert lam < 0.5
                assert delta2 - R_new == pytest.approx(
                    r2 * (1 + d_plus**2 / (4 * (1 + d_plus))), rel=1e-12
                )
        else:
            d = a - np.eye(len(a))[j]
            lam_max = a[j] / (1 - a[j])
            other = next(k for k in active if k != j)
            lam = new[other] / a[other] - 1
            assert lam <= lam_max * (1 + 1e-12)
            assert (kind == meb.DROP) == (new[j] == 0)  # dropped weights are exactly 0
            assert run.q == q_before - (kind == meb.DROP)
            if normalised:
                assert lam == pytest.approx(min(d_minus / (2 * (1 - d_minus)), lam_max), rel=1e-8)
                corrected = (1 + lam) * r2 - lam * (1 + lam) * (1 - d_minus) * r2
                misprinted = (1 + lam) * r2 - lam * (1 + lam) * (d_minus - 1) * r2
                assert delta2 - R_new == pytest.approx(corrected, rel=1e-12)
                assert delta2 - R_new != pytest.approx(misprinted, rel=1e-6)
        # property 6: g(a + lam d) is the maximum of g on [0, lam_max]; 0 slope inside
        grid = np.linspace(0, lam_max, 501)
        g = delta2 - np.einsum("ki,ij,kj->k", a + grid[:, None] * d, Q, a + grid[:, None] * d)
        assert delta2 - R_new >= g.max() - 1e-13 * delta2
        if 0 < lam < lam_max * (1 - 1e-9):
            slope = -2 * d @ Q @ (a + lam * d)
            assert abs(slope) <= 1e-9 * delta2
    assert {meb.TOWARD, meb.AWAY, meb.DROP} <= seen


@MODES
def test_refresh_recomputes_the_incremental_state_exactly(full):
    X, y = problem(seed=1)
    run = Run(X, y, 100.0, RBF, full=full)
    for _ in range(40):
        run.step(away=True, refresh_every=1)
        check_state(run)
        assert abs(run.sl.alpha[: run.q].sum() - 1) <= 1e-15 * run.q


def hand_made_step(mk, D, cache, sl, q, R, full):
    """One MFW step from a hand-made state (Gf built from it when full); returns (q, R, kind)."""
    if full:
        assert meb.full_gradient(cache, mk, sl, q) == pytest.approx(R, rel=1e-14)
    _, q, R, kind = one_step(cache, mk, D, sl, q, R, True, full)
    if full:
        np.testing.assert_allclose(sl.Gf[sl.core[:q]], sl.G[:q], rtol=1e-14)
    return q, R, kind


@MODES
def test_a_two_point_core_with_an_inner_point_forces_a_drop_step(full):
    """Linear kernel, one dimension: z_b = 3 z_a (plus the constant and 1/C terms), so the
    segment's point nearest the origin is z_a; from alpha = (0.6, 0.4) MFW steps away from b
    (delta- > delta+) and the line search reaches the bound: b leaves the core with alpha 0."""
    X, y = np.array([[1.0], [3.0]]), np.ones(2)
    mk, D, cache, sl = empty_state(X, y, 1e6, kernel="linear", full=full)
    Q = ktilde(X, y, 1e6, kernel="linear")
    core, alpha, G, pos = sl.core, sl.alpha, sl.G, sl.pos
    core[:2], alpha[:2], pos[:] = [0, 1], [0.6, 0.4], [0, 1]
    G[:2] = Q @ alpha[:2]
    R = alpha[:2] @ G[:2]
    q, R, kind = hand_made_step(mk, D, cache, sl, 2, R, full)
    assert kind == meb.DROP and q == 1
    assert core[0] == 0 and alpha[0] == pytest.approx(1, abs=1e-15) and pos[1] == -1
    assert alpha[1] == 0.0
    assert pytest.approx(Q[0, 0], rel=1e-12) == R


@MODES
def test_plain_fw_takes_only_toward_steps_and_keeps_every_point(full):
    X, y = problem()
    run = Run(X, y, 4.0, RBF, full=full)
    members = set(run.sl.core[: run.q])
    for _ in range(60):
        assert run.step(away=False) == meb.TOWARD
        check_state(run)
        now = set(run.sl.core[: run.q])
        assert members <= now
        members = now


@MODES
def test_a_full_toward_step_collapses_the_core_to_the_new_point(full):
    """Non-normalised kernel: from alpha = e_b with z_b = 3 z_a, the exact FW step towards a
    is lam = 1 (K~_ab >= D_a), which leaves A = {a} with R = D_a (a third, larger point sets
    Delta^2)."""
    X, y = np.array([[1.0], [3.0], [4.0]]), np.ones(3)
    mk, D, cache, sl = empty_state(X, y, 1e6, kernel="linear", full=full)
    core, alpha, G, pos = sl.core, sl.alpha, sl.G, sl.pos
    core[0], alpha[0], pos[1] = 1, 1.0, 0
    G[0] = D[1]
    q, R, kind = hand_made_step(mk, D, cache, sl, 1, D[1], full)
    assert kind == meb.TOWARD and q == 1
    assert (core[0], alpha[0], G[0], R) == (0, 1.0, D[0], D[0])
    assert (pos[0], pos[1], pos[2]) == (0, -1, -1)


@pytest.mark.parametrize("n", [1, 3, 4, 5, 8, 13, 200])
def test_blend_argmin_is_the_plain_update_and_first_argmin(n):
    """The step's update of G over every point, with its four running minima, against the
    plain loop: the same G bit for bit and the same (first) argmin, ties included."""
    rng = np.random.default_rng(n)
    for _ in range(20):
        G, row = rng.integers(0, 4, n).astype(float), rng.integers(0, 4, n).astype(float)
        lam = rng.choice([0.5, 0.25, rng.random()])
        expected = (1.0 - lam) * G + lam * row
        got = G.copy()
        assert meb.blend_argmin(got, row, lam, n) == np.argmin(expected)
        np.testing.assert_array_equal(got, expected)
