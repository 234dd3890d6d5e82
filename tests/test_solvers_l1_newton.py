"""The l1 Newton solver (spec 001): every unit-test property of §6, against independent references
(scipy's linprog/HiGHS on the exact LP-SVM, L-BFGS-B on the smoothed problem, LIBLINEAR for
mu = 0, plain NumPy for the kernels and brute force for the line search)."""

import itertools
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.integrate import quad
from scipy.optimize import linprog, minimize
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import LinearSVC

from support.configs import composed
from svmlab.errors import ConfigError
from svmlab.estimator.certificates import LinearImage, certify
from svmlab.estimator.formulations import L1, ElasticNet, Formulation, Hinge
from svmlab.numerics.losses import sqrt_hinge
from svmlab.numerics.rows import rows_of
from svmlab.solvers.l1_newton import L1NewtonSVM, certificate
from svmlab.solvers.l1_newton.certificate import exact_objective
from svmlab.solvers.l1_newton.linesearch import initial_slope, linesearch_l1
from svmlab.solvers.l1_newton.newton import (
    DenseCurvature,
    LowRankCurvature,
    newton_direction,
)
from svmlab.solvers.l1_newton.passes import newton_pass, smoothed_objective

TIGHT = {"eta": 1e-10, "alpha_min": 1e-8, "tol": 1e-9}  # w within 1e-5 of the LP's solution


def problem(n, d, seed=0, informative=5):
    """Two noisy classes separated along a few features."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    w = np.zeros(d)
    w[:informative] = rng.standard_normal(informative)
    return X, np.sign(X @ w + 0.3 * rng.standard_normal(n))


def mu_max(X, y):
    return np.abs(X.T @ y).max() / len(y)


def lp_svm(X, y, mu):
    """The exact l1-SVM (lam = 0) as an LP: w = u - v, min mean(xi) + mu 1'(u + v)."""
    n, d = X.shape
    A = sp.csr_matrix(-(y[:, None] * X))
    result = linprog(
        np.r_[mu * np.ones(2 * d), np.ones(n) / n],
        A_ub=sp.hstack([A, -A, -sp.eye(n)]),
        b_ub=-np.ones(n),
        bounds=(0, None),
        method="highs",
    )
    assert result.status == 0
    return result.x[:d] - result.x[d : 2 * d], result.fun


def smoothed_reference(X, y, lam, mu, alpha):
    """argmin F_alpha by L-BFGS-B on w = u - v, u, v >= 0 (a smooth bound-constrained problem)."""
    n, d = X.shape
    h = np.vectorize(sqrt_hinge)

    def fun(uv):
        w = uv[:d] - uv[d:]
        j, j1, _ = h(1.0 - y * (X @ w), alpha)
        g = -X.T @ (y * j1) / n + lam * w
        return j.mean() + 0.5 * lam * w @ w + mu * uv.sum(), np.r_[g + mu, -g + mu]

    result = minimize(
        fun,
        np.zeros(2 * d),
        jac=True,
        method="L-BFGS-B",
        bounds=[(0, None)] * (2 * d),
        options={"maxiter": 20000, "ftol": 1e-16, "gtol": 1e-13, "maxcor": 50},
    )
    return result.x[:d] - result.x[d:]


def gradient(X, y, w, lam, alpha):
    """g and H of f_alpha in plain NumPy."""
    h = np.vectorize(sqrt_hinge)
    _, j1, j2 = h(1.0 - y * (X @ w), alpha)
    n = len(y)
    return -X.T @ (y * j1) / n + lam * w, lam * np.eye(X.shape[1]) + (X.T * j2) @ X / n


# ---- smoothed hinge kernels (§6.1) -------------------------------------------------------

ALPHAS = (1e-8, 1e-3, 1.0, 10.0)
GRID = np.concatenate([-np.logspace(-10, 6, 200), [0.0], np.logspace(-10, 6, 200)])


def terms(u, alpha):
    return np.array([sqrt_hinge(float(v), alpha) for v in np.atleast_1d(u)]).T


@pytest.mark.parametrize("alpha", ALPHAS)
def test_smoothed_hinge_bounds_symmetry_and_values_at_zero(alpha):
    j, j1, j2 = terms(GRID, alpha)
    hinge = np.maximum(GRID, 0.0)
    assert np.all(hinge <= j) and np.all(j <= hinge + alpha / 2)
    assert np.all((j1 >= 0.0) & (j1 <= 1.0)) and np.all(j2 >= 0.0)
    assert tuple(terms(0.0, alpha)[:, 0]) == (alpha / 2, 0.5, 1.0 / (2 * alpha))
    jm, j1m, _ = terms(-GRID, alpha)
    np.testing.assert_array_less(
        np.abs(j - jm - GRID),
        1e-15 * np.maximum.reduce([np.ones_like(GRID), np.abs(GRID), np.full_like(GRID, alpha)])
        + 1e-300,
    )
    assert np.all(np.abs(j1 + j1m - 1.0) <= 1e-15)


@pytest.mark.parametrize("alpha", ALPHAS)
def test_smoothed_hinge_derivatives_match_central_differences(alpha):
    u = GRID[np.abs(GRID) <= 1e5]
    step = np.where(np.abs(u) <= 10 * alpha, 1e-4 * alpha, 1e-6 * np.abs(u))
    _j, j1, j2 = terms(u, alpha)
    (jp, j1p, _), (jm, j1m, _) = terms(u + step, alpha), terms(u - step, alpha)
    assert np.all(np.abs((jp - jm) / (2 * step) - j1) <= 1e-5 * np.abs(j1) + 1e-7)
    assert np.all(np.abs((j1p - j1m) / (2 * step) - j2) <= 1e-5 * np.abs(j2) + 1e-6 / (2 * alpha))


def test_smoothed_hinge_is_finite_far_out_integrates_to_a_dirac_and_grows_with_alpha():
    for alpha in ALPHAS:
        assert np.isfinite(terms(np.array([-1e300, -1e200, 1e200, 1e300]), alpha)).all()
        edges = alpha * np.array([-1e4, -10, -1, 0, 1, 10, 1e4])  # tails beyond: 5e-9 in all
        total = sum(
            quad(lambda u: sqrt_hinge(u, alpha)[2], a, b, limit=200)[0]
            for a, b in itertools.pairwise(edges)
        )
        assert total == pytest.approx(1.0, abs=1e-7)
    values = np.array([terms(GRID, a)[0] for a in ALPHAS])
    assert np.all(np.diff(values, axis=0) >= 0.0)


# ---- gradient and Hessian (§6.2) ---------------------------------------------------------


def active_pass(X, y, w, alpha, lam, active):
    rows = rows_of(X)
    slot = np.full(X.shape[1], -1, np.int64)
    slot[active] = np.arange(len(active))
    g, H = np.empty(X.shape[1]), np.empty((len(active), len(active)))
    newton_pass(rows, y, X @ w, w, alpha, lam, slot, len(active), g, H)
    return g, H


def test_gradient_and_active_hessian_match_numpy_finite_differences_and_csr():
    X, y = problem(60, 8, seed=1)
    X[np.abs(X) < 0.6] = 0.0
    w = np.random.default_rng(2).standard_normal(8) * 0.3
    active = np.array([6, 1, 3])
    g, H = active_pass(X, y, w, 0.1, 1e-2, active)
    g_ref, H_ref = gradient(X, y, w, 1e-2, 0.1)
    np.testing.assert_allclose(g, g_ref, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(H, H_ref[np.ix_(active, active)], rtol=1e-12)
    np.testing.assert_array_equal(H, H.T)
    assert np.linalg.eigvalsh(H).min() >= 1e-2 * (1 - 1e-12)
    f = lambda v: smoothed_objective(y, X @ v, v, 0.1, 1e-2, 0.0)
    eye = np.eye(8) * 1e-6
    np.testing.assert_allclose([(f(w + e) - f(w - e)) / 2e-6 for e in eye], g, atol=1e-8)
    fd_H = np.array(
        [
            (gradient(X, y, w + e, 1e-2, 0.1)[0] - gradient(X, y, w - e, 1e-2, 0.1)[0]) / 2e-6
            for e in eye
        ]
    )
    np.testing.assert_allclose(fd_H[np.ix_(active, active)], H, rtol=1e-5, atol=1e-7)
    g_csr, H_csr = active_pass(sp.csr_matrix(X), y, w, 0.1, 1e-2, active)
    np.testing.assert_allclose(g_csr, g, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(H_csr, H, rtol=1e-12)


# ---- line search (§6.3-6.5) --------------------------------------------------------------


def phi(s, w, d, b, a, mu):
    s = np.atleast_1d(s)
    return a * s**2 + b * s + mu * np.abs(w[None, :] + s[:, None] * d[None, :]).sum(axis=1)


def one_sided_slopes(s, w, d, b, a, mu, zeroed=()):
    """(phi'(s-), phi'(s+)), with w_k + s d_k = 0 exactly for k in ``zeroed`` (as the solver
    sets them)."""
    x = w + s * d
    x[np.asarray(zeroed, dtype=np.int64)] = 0.0
    plus = np.where(x != 0, np.sign(x), np.sign(d))
    minus = np.where(x != 0, np.sign(x), -np.sign(d))
    base = 2 * a * s + b
    return base + mu * (minus @ d), base + mu * (plus @ d)


def random_instance(rng):
    k = int(rng.integers(1, 13))
    w, d = rng.standard_normal(k), rng.standard_normal(k)
    if rng.random() < 0.5:  # rounded values: tied breakpoints
        w, d = np.round(w, 1), np.round(d, 1)
        d[rng.random(k) < 0.3] = -w[rng.random(k) < 0.3].sum() if rng.random() < 0.1 else d[0]
    w[rng.random(k) < 0.3] = 0.0
    d[rng.random(k) < 0.1] = 0.0
    a = rng.choice([1e-12, 0.0 + abs(rng.standard_normal()), 10.0])
    mu = 0.0 if rng.random() < 0.1 else abs(rng.standard_normal())
    b = rng.standard_normal() * 3 - mu * np.abs(d).sum() * rng.random()
    return w, d, float(b), float(a), float(mu)


def test_line_search_is_the_exact_minimiser_on_ten_thousand_random_instances():
    rng = np.random.default_rng(0)
    for _ in range(10_000):
        w, d, b, a, mu = random_instance(rng)
        s, zeroed = linesearch_l1(w, d, b, a, mu)
        nz = d != 0
        kinks = -w[nz] / d[nz]
        kinks = kinks[kinks > 0]
        edges = np.r_[0.0, np.sort(kinks)]
        lows = np.r_[edges]
        # stationary point of each segment [edge_i, edge_i+1] and beyond the last
        slopes = np.array([one_sided_slopes(e, w, d, b, a, mu)[1] for e in lows])
        inner = lows - slopes / (2 * a) if a > 0 else lows
        candidates = np.r_[edges, inner[inner >= 0]]
        value = phi(s, w, d, b, a, mu)[0]
        best = phi(candidates, w, d, b, a, mu).min()
        assert value <= best + 1e-9 * (1 + abs(best))
        assert value <= phi(0.0, w, d, b, a, mu)[0]
        left, right = one_sided_slopes(s, w, d, b, a, mu, zeroed)
        tol = 1e-9 * (1 + abs(b) + mu * np.abs(d).sum() + 2 * a * s)
        assert (s == 0) == (initial_slope(w, d, b, mu) >= 0)
        if s > 0:
            assert left <= tol and right >= -tol
        for k in zeroed:
            assert w[k] + s * d[k] == pytest.approx(0.0, abs=1e-12 * (1 + abs(w[k])))


def test_line_search_special_cases():
    rng = np.random.default_rng(3)
    w, d = rng.standard_normal(6), rng.standard_normal(6)
    s, zeroed = linesearch_l1(w, d, -2.0, 3.0, 0.0)
    assert s == pytest.approx(2.0 / 6.0, rel=1e-15) and len(zeroed) == 0
    # a true Newton direction on nonzero w with no sign change in (0, 1]: s = 1
    worst = 0.0
    for _ in range(100):
        k = 5
        M = rng.standard_normal((k, k))
        H = M @ M.T + np.eye(k)
        w = rng.standard_normal(k) + np.sign(rng.standard_normal(k)) * 3
        g, mu = rng.standard_normal(k) * 0.1, 0.05
        gt = g + mu * np.sign(w)
        d = -np.linalg.solve(H, gt)
        if np.any(np.sign(w + d) != np.sign(w)):
            continue
        s, _ = linesearch_l1(w, d, g @ d, 0.5 * d @ H @ d, mu)
        worst = max(worst, abs(s - 1.0))
    assert worst <= 1e-12
    # a kink: the coordinate is zeroed, the tie group together
    s, zeroed = linesearch_l1(
        np.array([1.0, 2.0, -1.0]), np.array([-1.0, -2.0, 0.5]), -0.1, 0.01, 1.0
    )
    assert s == 1.0 and sorted(zeroed) == [0, 1]


# ---- Newton step and pruning (§6.6) ------------------------------------------------------


def test_pruned_newton_direction_solves_its_system_and_descends():
    rng = np.random.default_rng(4)
    for prune in ("resolve", "zero"):
        for _ in range(50):
            k = 8
            M = rng.standard_normal((k, k))
            H = M @ M.T / k + 0.1 * np.eye(k)
            g = rng.standard_normal(k)
            released = rng.random(k) < 0.5
            w = np.where(released, 0.0, rng.standard_normal(k))
            gt = g + 0.3 * np.sign(w) - 0.3 * np.where(released, np.sign(g), 0.0)
            keep, d = newton_direction(DenseCurvature(H), gt, g, released, prune)
            if prune == "resolve":
                sub = H[np.ix_(keep, keep)]
                assert np.linalg.norm(sub @ d + gt[keep]) <= 1e-10 * np.linalg.norm(gt)
            assert np.all(d[released[keep]] * g[keep][released[keep]] <= 0.0)
            assert gt[keep] @ d < 0
            full = np.zeros(k)
            full[keep] = d
            assert initial_slope(w, full, g @ full, 0.3) == pytest.approx(gt[keep] @ d, rel=1e-12)


def test_low_rank_curvature_solves_the_same_system_as_the_dense_block():
    """Wide active sets (k > N) are solved by Woodbury: the same d and d^T H d."""
    rng = np.random.default_rng(6)
    B = rng.standard_normal((7, 30)) * rng.random(7)[:, None]
    keep = np.sort(rng.choice(30, 20, replace=False))
    rhs = rng.standard_normal(20)
    d = rng.standard_normal(20)
    for lam in (1e-3, 1.0):
        dense = DenseCurvature(lam * np.eye(30) + B.T @ B)
        low = LowRankCurvature(lam, B)
        np.testing.assert_allclose(low.solve(keep, rhs), dense.solve(keep, rhs), rtol=1e-9)
        assert low.quad(keep, d) == pytest.approx(dense.quad(keep, d), rel=1e-12)


# ---- the solver against references (§6.7-6.10) -------------------------------------------


def test_objective_trace_never_increases_and_has_every_traced_field():
    X, y = problem(300, 20)
    model = L1NewtonSVM(lam=1e-3, mu=1e-2, tol=0.0).fit(X, y)  # every level's gap, off the clock
    cols = model.trace_.columns()
    F = cols["objective_smoothed"]
    assert np.all(np.diff(F) <= 1e-12 * np.abs(F[1:]))
    assert {
        "alpha",
        "active",
        "nnz",
        "passes",
        "time_s",
        "objective_hinge_elastic_net",
        "rel_gap_hinge_elastic_net",
        "mu",
    } <= set(cols)
    gaps = cols["rel_gap_hinge_elastic_net"]
    assert np.isfinite(gaps).sum() == model.n_levels_ and np.all(gaps[np.isfinite(gaps)] >= 0)
    assert np.all(np.diff(cols["passes"]) > 0)


@pytest.mark.parametrize(
    "shape,mu", [((200, 10), 0.05), ((300, 20), 1e-2), ((100, 40), 0.02), ((40, 100), 0.05)]
)
def test_lam_zero_matches_linprog_highs_on_the_exact_l1_svm(shape, mu):
    X, y = problem(*shape)
    w_ref, f_ref = lp_svm(X, y, mu)
    model = L1NewtonSVM(lam=0.0, mu=mu, **TIGHT).fit(X, y)
    w = model.coef_[0]
    assert np.abs(w - w_ref).max() <= 1e-5
    np.testing.assert_array_equal(w != 0, np.abs(w_ref) > 1e-7)
    a = model.alpha_final_
    assert exact_objective(y * (X @ w), w, 0.0, mu) - f_ref <= a / 2
    cert = model.certificate_
    assert cert.formulation == "hinge_l1"
    assert cert.dual * mu <= f_ref * (1 + 1e-9) <= cert.primal * mu * (1 + 1e-9)
    assert cert.rel_gap <= 1e-4


def test_default_certifies_its_gap_and_the_paper_rule_is_reported_as_such():
    """The default stops at a certified 1e-2 (a true bound: the LP's optimum lies inside it);
    the paper's rule alone (tol = 0) ends within its smoothing error of the LP, warns and says
    which rule stopped it."""
    X, y = problem(200, 10)
    _, f_ref = lp_svm(X, y, 0.05)
    model = L1NewtonSVM(lam=0.0, mu=0.05).fit(X, y)
    cert = model.certificate_
    assert model.converged_ and model.stop_reason_ == "certified gap <= tol"
    assert cert.rel_gap <= 1e-2 and cert.dual * 0.05 <= f_ref * (1 + 1e-12)
    with pytest.warns(ConvergenceWarning, match="paper's rule"):
        paper = L1NewtonSVM(lam=0.0, mu=0.05, tol=0.0).fit(X, y)
    w, a = paper.coef_[0], paper.alpha_final_
    assert not paper.converged_ and 1e-4 / 2 < a <= 1e-4
    assert exact_objective(y * (X @ w), w, 0.0, 0.05) - f_ref <= a / 2 + a


@pytest.mark.parametrize(
    "seed,shape,lam",
    [(0, (200, 10), 0.0), (1, (300, 20), 0.0), (2, (40, 100), 0.0), (3, (300, 20), 1e-3)],
)
def test_the_certificate_is_within_10x_the_true_gap_near_the_optimum(seed, shape, lam):
    """At the paper's loose eta = 0.1 the model is within ~1e-4 of the optimum; the certified
    gap must then be within 10x its true suboptimality (LP optimum by HiGHS for lam = 0, a
    certified 1e-10 fit for lam > 0) and never below it."""
    X, y = problem(*shape, seed=seed)
    mu = 0.02 if shape[1] < 50 else 0.3 * mu_max(X, y)
    with pytest.warns(ConvergenceWarning):
        model = L1NewtonSVM(lam=lam, mu=mu, tol=0.0, alpha_min=1e-3).fit(X, y)
    w = model.coef_[0]
    P = exact_objective(y * (X @ w), w, lam, mu)
    if lam == 0:
        best = lp_svm(X, y, mu)[1]
    else:
        ref = L1NewtonSVM(lam=lam, mu=mu, eta=1e-12, alpha_min=1e-9, tol=1e-10).fit(X, y)
        best = ref.certificate_.dual
    true = (P - best) / P
    assert true <= 1e-3
    gap = model.certificate_.gap * (mu if lam == 0 else 1.0) / P
    assert true - 1e-12 <= gap <= 10 * true + 1e-10


@pytest.mark.parametrize(
    "seed,shape,sparse", [(4, (300, 20), False), (5, (200, 40), True), (6, (60, 120), False)]
)
def test_the_free_set_ascent_bound_never_claims_less_than_the_true_gap(
    seed, shape, sparse, monkeypatch
):
    """lam > 0: at loose and default fits the ascent's dual point bounds P* from below, so the
    certified gap is at least the true one; P* from a fit certified to 1e-9 by HiGHS' LP on
    the free set (`LINPROG`, the exact route the ascent replaced). The default fit stops with
    its gap certified below tol."""
    X, y = problem(*shape, seed=seed)
    X = sp.csr_matrix(X) if sparse else X
    lam, mu = 1e-3, 0.3 * mu_max(X.toarray() if sparse else X, y)
    with monkeypatch.context() as patch:
        patch.setattr(certificate, "LINPROG", True)
        ref = L1NewtonSVM(lam=lam, mu=mu, eta=1e-12, alpha_min=1e-9, tol=1e-10).fit(X, y)
    assert ref.certificate_.rel_gap <= 1e-9
    best = ref.certificate_.primal
    for settings in ({"alpha_min": 0.5, "tol": 0.0}, {"alpha_min": 0.05, "tol": 0.0}, {}):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model = L1NewtonSVM(lam=lam, mu=mu, **settings).fit(X, y)
        w, cert = model.coef_[0], model.certificate_
        assert cert.primal == pytest.approx(exact_objective(y * (X @ w), w, lam, mu), rel=1e-14)
        assert cert.dual <= best * (1 + 1e-12) and cert.gap >= cert.primal - best - 1e-12
    assert model.converged_ and cert.rel_gap <= 1e-2


def test_kkt_and_agreement_with_the_smoothed_reference_at_tight_tolerance():
    X, y = problem(200, 10, seed=5)
    lam, mu = 1e-2, 0.02
    model = L1NewtonSVM(lam=lam, mu=mu, eta=1e-10, alpha_min=1e-3).fit(X, y)
    w, alpha = model.coef_[0], model.alpha_final_
    g, _ = gradient(X, y, w, lam, alpha)
    on = w != 0
    assert np.abs(g[on] + mu * np.sign(w[on])).max() <= 1e-6
    assert np.abs(g[~on]).max() <= mu + 1e-8
    w_ref = smoothed_reference(X, y, lam, mu, alpha)
    assert np.abs(w - w_ref).max() <= 1e-5
    np.testing.assert_array_equal(on, np.abs(w_ref) > 1e-7)
    assert 0 < on.sum() < 10


def test_elastic_net_certificate_is_valid_and_tight_at_tight_tolerance():
    X, y = problem(200, 10, seed=5)
    lam, mu = 1e-2, 0.02
    tight = L1NewtonSVM(lam=lam, mu=mu, eta=1e-12, alpha_min=1e-7, tol=1e-9).fit(X, y)
    cert = tight.certificate_
    assert cert.formulation == "hinge_elastic_net" and 0 <= cert.rel_gap <= 1e-5
    loose = L1NewtonSVM(lam=lam, mu=mu, alpha_min=0.1).fit(X, y).certificate_
    assert loose.dual <= cert.primal + 1e-12 and cert.dual <= loose.primal
    w = tight.coef_[0]
    assert cert.primal == pytest.approx(exact_objective(y * (X @ w), w, lam, mu), rel=1e-14)


def test_the_elastic_net_with_lam_zero_is_mu_times_the_hinge_l1_bound():
    X, y = problem(80, 6, seed=7)
    mu, n = 0.03, 80
    theta = np.random.default_rng(0).random(n)
    image = LinearImage(X, y, np.zeros(6))
    # margins 2: the layer's own candidates are a = 0 and no free set, so theta decides
    net = certify(
        Formulation(Hinge(), ElasticNet(0.0, mu)),
        1.0 / n,
        np.full(n, 2.0),
        0.0,
        image,
        (theta / n,),
    )
    l1 = certify(
        Formulation(Hinge(), L1()), 1.0 / (n * mu), np.full(n, 2.0), 0.0, image, (theta / (n * mu),)
    )
    assert net.dual == pytest.approx(l1.dual * mu, rel=1e-12) and net.dual > 0


def test_mu_zero_matches_liblinear_on_the_hinge_l2_svm():
    """P is lam-strongly convex, so ||w - w*||^2 <= 2 (P(w) - D) / lam for a certified lower
    bound D: both models must lie in that ball around the optimum, and ours be no worse."""
    X, y = problem(150, 8, seed=8)
    lam = 1e-2
    model = L1NewtonSVM(lam=lam, mu=0.0, **TIGHT).fit(X, y)
    ref = LinearSVC(
        C=1.0 / (len(y) * lam),
        loss="hinge",
        fit_intercept=False,
        tol=1e-10,
        max_iter=1_000_000,
        dual=True,
        random_state=0,
    ).fit(X, y)
    w, w_ref = model.coef_[0], ref.coef_[0]
    P = exact_objective(y * (X @ w), w, lam, 0.0)
    P_ref = exact_objective(y * (X @ w_ref), w_ref, lam, 0.0)
    cert = model.certificate_
    assert cert.formulation == "hinge_elastic_net" and cert.rel_gap <= 1e-6
    assert P_ref + 1e-9 >= P and P_ref - P <= 1e-4 * P
    radius = np.sqrt(2 * (P_ref - cert.dual) / lam) + np.sqrt(2 * cert.gap / lam)
    assert np.linalg.norm(w - w_ref) <= radius


# ---- sparsity, edge cases, invariances (§6.11-6.15) --------------------------------------


def test_w_is_zero_exactly_from_mu_max_on_and_nonzero_below_it():
    X, y = problem(100, 12, seed=9)
    top = mu_max(X, y)
    at = L1NewtonSVM(lam=1e-3, mu=top).fit(X, y)
    assert not at.coef_.any() and at.n_steps_ == 0
    assert at.certificate_.rel_gap <= 1e-12
    for mu in (0.99 * top, 0.5 * top, 0.01 * top):  # regression test of A3 (literal Alg. 1: w = 0)
        below = L1NewtonSVM(lam=1e-3, mu=mu, tol=1e-9).fit(X, y)
        assert np.count_nonzero(below.coef_) >= 1


def test_invariances_and_csr_input():
    X, y = problem(120, 9, seed=10)
    params = {"lam": 1e-3, "mu": 0.02, "eta": 1e-10}  # the minimiser, not a rounding-led path
    w = L1NewtonSVM(**params).fit(X, y).coef_[0]
    rng = np.random.default_rng(0)
    rows, cols = rng.permutation(120), rng.permutation(9)
    np.testing.assert_allclose(
        L1NewtonSVM(**params).fit(X[rows], y[rows]).coef_[0], w, rtol=1e-10, atol=1e-10
    )
    np.testing.assert_allclose(
        L1NewtonSVM(**params).fit(X[:, cols], y).coef_[0], w[cols], rtol=1e-10, atol=1e-10
    )
    np.testing.assert_allclose(
        L1NewtonSVM(**params).fit(-X, y).coef_[0], -w, rtol=1e-10, atol=1e-10
    )
    np.testing.assert_allclose(
        L1NewtonSVM(**params).fit(X, -y).coef_[0], -w, rtol=1e-10, atol=1e-10
    )
    np.testing.assert_allclose(
        L1NewtonSVM(**params).fit(np.vstack([X, X]), np.r_[y, y]).coef_[0],
        w,
        rtol=1e-10,
        atol=1e-10,
    )
    Xs = X.copy()
    Xs[np.abs(Xs) < 0.7] = 0.0
    dense = L1NewtonSVM(**params).fit(Xs, y)
    sparse = L1NewtonSVM(**params).fit(sp.csr_matrix(Xs), y)
    np.testing.assert_allclose(sparse.coef_, dense.coef_, rtol=1e-12, atol=1e-14)
    assert sparse.n_passes_ == dense.n_passes_


def test_wide_data_caps_determinism_and_pass_count():
    X, y = problem(40, 400, seed=11)
    params = {"lam": 1e-3, "mu": 0.3 * mu_max(X, y), "tol": 0.0}  # the paper's rule alone
    with pytest.warns(ConvergenceWarning, match="it stopped on: paper's rule alpha <= alpha_min"):
        model = L1NewtonSVM(**params).fit(X, y)
    w = model.coef_[0]
    assert not model.converged_ and np.isfinite(w).all() and 0 < np.count_nonzero(w) < 40
    np.testing.assert_array_equal(L1NewtonSVM(**params).fit(X, y).coef_[0], w)
    # passes: one per Newton iteration, per accepted step, per level, and the first X w
    assert model.n_passes_ == model.n_iter_ + model.n_steps_ + model.n_levels_ + 1
    assert model.n_passes_ >= model.n_levels_ == 15
    with pytest.warns(Warning, match="stopped before"):
        capped = L1NewtonSVM(**params, max_newton=7).fit(X, y)
    assert capped.n_iter_ == 7 and not capped.converged_
    no_backtrack = L1NewtonSVM(**params, max_backtrack=0).fit(X, y)
    assert no_backtrack.n_backtracks_ == 0


def test_gap_tolerance_stops_early_with_a_certified_gap():
    X, y = problem(300, 20)
    model = L1NewtonSVM(lam=0.0, mu=1e-2, eta=1e-10, alpha_min=1e-10, tol=1e-5).fit(X, y)
    gaps = model.trace_.columns()["rel_gap_hinge_l1"]
    assert model.converged_ and gaps[np.isfinite(gaps)][-1] <= 1e-5
    assert model.alpha_final_ > 1e-9 and model.certificate_.rel_gap <= 1e-5
    assert "tol=1e-05" in model.stopping_rule()


def test_regularisation_path_warm_starts_and_logs_every_mu():
    X, y = problem(200, 30, seed=12)
    top = mu_max(X, y)
    path = L1NewtonSVM(lam=1e-3, mu=0.01 * top, path=6).fit(X, y)
    np.testing.assert_allclose(path.path_mu_, np.geomspace(top, 0.01 * top, 6))
    nnz = np.count_nonzero(path.path_coef_, axis=1)
    assert nnz[0] == 0 and nnz[-1] > nnz[1] and np.all(np.diff(nnz) >= -2)
    single = L1NewtonSVM(lam=1e-3, mu=0.01 * top, eta=1e-10, alpha_min=1e-6).fit(X, y)
    tight = L1NewtonSVM(lam=1e-3, mu=0.01 * top, eta=1e-10, alpha_min=1e-6, path=6).fit(X, y)
    np.testing.assert_allclose(tight.coef_, single.coef_, atol=1e-6)
    assert set(path.trace_.columns()["mu"]) == set(path.path_mu_)
    with pytest.raises(ConfigError, match="mu_max"):
        L1NewtonSVM(mu=2 * top, path=3).fit(X, y)


# ---- configuration ------------------------------------------------------------------------


def test_the_preset_builds_every_job_at_every_point_of_the_grid_of_unreported_settings():
    from svmlab.app.config.schema import build_estimator

    sweep = composed("+experiment=l1_newton_paper", hydra=True).hydra.sweeper.params
    assert sweep.seed == "range(50)"
    assert sweep.dataset.split(",") == [
        "australian",
        "colon-cancer",
        "synthetic_tall",
        "synthetic_tall_overlap",
        "synthetic_wide",
        "synthetic_wide_overlap",
    ]
    points = {
        "spec": (1e-4, 1e-2, 1e-4),
        "lam_1e-2": (1e-2, 1e-2, 1e-4),
        "mu_1e-1": (1e-4, 1e-1, 1e-4),
        "alpha_min_1e-6": (1e-4, 1e-2, 1e-6),
    }
    assert sweep.unreported.split(",") == list(points)
    for point, (lam, mu, alpha_min) in points.items():
        for solver in sweep.solver.split(","):
            job = composed(
                "+experiment=l1_newton_paper",
                f"solver={solver}",
                "dataset=synthetic_tall_overlap",
                f"unreported={point}",
            )
            assert (job.dataset.name, job.dataset.scale) == ("synthetic_tall", 0.2)
            assert dict(job.unreported) == {"lam": lam, "mu": mu, "alpha_min": alpha_min}
            estimator = build_estimator(job)
            if solver.startswith("l1_newton"):
                l2 = solver == "l1_newton_l2_paper"
                assert (estimator.lam, estimator.mu, estimator.alpha_min) == (
                    lam,
                    0.0 if l2 else mu,
                    alpha_min,
                )
                assert estimator.tol == 0.0  # the paper's stopping rule alone
