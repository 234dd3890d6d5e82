"""BSCA and BSGD (spec 004): the test properties T1-T13 and T15 of section 8, against a box-QP
reference of the no-bias dual, LIBSVM, closed forms of the merge, and pure-numpy references of
both solvers."""

import math

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.spatial.distance import cdist
from sklearn.datasets import load_svmlight_file, make_moons
from sklearn.svm import SVC

from support.configs import composed
from svmlab.errors import ConfigError
from svmlab.numerics.kernels import kernel_spec, point_set, self_kernel
from svmlab.solvers.budget import BSCA, BSGD, loops
from svmlab.solvers.budget import merge as mg
from svmlab.solvers.budget import model as bm
from svmlab.solvers.budget.estimator import best_offset


def moons(n, noise=0.25, seed=0):
    X, y = make_moons(n, noise=noise, random_state=seed)
    return X, np.where(y == 1, 1.0, -1.0)


def rbf(A, B, gamma):
    return np.exp(-gamma * cdist(A, B, "sqeuclidean"))


def dual(alpha, X, y, gamma):
    """D(alpha) = 1^T alpha - 1/2 alpha^T Q alpha (exact, dense)."""
    c = alpha * y
    return alpha.sum() - 0.5 * c @ rbf(X, X, gamma) @ c


def box_qp(X, y, C, gamma):
    """argmax D over [0, C]^n by L-BFGS-B: the no-bias optimum."""
    Q = rbf(X, X, gamma) * np.outer(y, y)
    res = minimize(
        lambda a: (0.5 * a @ Q @ a - a.sum(), Q @ a - 1.0),
        np.zeros(len(y)),
        jac=True,
        method="L-BFGS-B",
        bounds=[(0.0, C)] * len(y),
        options={"ftol": 1e-15, "gtol": 1e-10, "maxiter": 20000, "maxfun": 40000},
    )
    return res.x, -res.fun


def primal(coef, Z, X, y, C, gamma):
    """P_C of f = sum_j coef_j k(z_j, .)."""
    margins = y * (rbf(X, Z, gamma) @ coef)
    return 0.5 * coef @ rbf(Z, Z, gamma) @ coef + C * np.maximum(0.0, 1.0 - margins).sum()


@pytest.fixture(scope="module")
def optimum():
    """The no-bias optimum of moons(400, 0.25, 0) at C = 4, gamma = 1 (spec: D* = 281.1375)."""
    X, y = moons(400)
    alpha, value = box_qp(X, y, 4.0, 1.0)
    return X, y, alpha, value


class Stepper:
    """The compiled loops driven one step at a time, as the estimators drive them per epoch."""

    def __init__(
        self,
        X,
        y,
        C,
        gamma,
        budget,
        solver="bsca",
        accumulate=False,
        rule="same_label",
        maintenance="merge",
        endpoint=True,
    ):
        self.X, self.y, self.C = X, y, C
        self.spec = kernel_spec("rbf", gamma)
        self.points = point_set(X)
        self.qdiag = self_kernel(self.spec, self.points)
        n = len(y)
        cap = (n if budget is None else budget) + 1
        self.model = bm.new_model(n, X.shape[1], cap)
        self.opt = bm.Options(
            cap - 1,
            bm.MAINTENANCE[maintenance],
            bm.PARTNER_RULES[rule],
            0.01,
            0.001,
            endpoint,
            accumulate or budget is None,
        )
        self.state = np.zeros(n) if solver == "bsca" else np.zeros(n, np.int64)
        self.solver, self.t = solver, 0
        self.stats = np.zeros(len(loops.STAT_NAMES))
        self.log = bm.new_log(100_000)

    def step(self, i):
        order, u = np.array([i], np.int64), np.zeros(1)
        if self.solver == "bsca":
            loops.bsca_epoch(
                self.points,
                self.y,
                self.qdiag,
                self.state,
                self.C,
                self.model,
                self.spec,
                self.opt,
                order,
                u,
                self.t,
                0.0,
                self.stats,
                self.log,
            )
        else:
            loops.bsgd_epoch(
                self.points,
                self.y,
                self.state,
                len(self.y) * self.C,
                self.model,
                self.spec,
                self.opt,
                order,
                u,
                self.t,
                0.0,
                self.stats,
                self.log,
            )
        self.t += 1

    def terms(self):
        size = self.model.size[0]
        return self.model.Z[:size].copy(), self.model.beta[:size].copy()

    def stat(self, name):
        return int(self.stats[loops.STAT_NAMES.index(name)])


# ---- T1, T2: box and budget after every iteration ---------------------------------------------


def test_alpha_stays_in_the_box_and_the_budget_is_never_exceeded():
    X, y = moons(200, seed=3)
    C, B = 4.0, 15
    run = Stepper(X, y, C, 1.0, B)
    rng = np.random.default_rng(0)
    for i in rng.integers(0, len(y), 3000):
        before, size_before = run.state.copy(), run.model.size[0]
        merges_before, nonzero_before = run.stat("merges"), run.stat("nonzero_steps")
        run.step(i)
        assert run.state.min() >= 0.0 and run.state.max() <= C  # exactly, no epsilon
        changed = np.flatnonzero(run.state != before)
        assert set(changed) <= {i}
        size = run.model.size[0]
        assert size <= B
        assert size == (run.stat("nonzero_steps") - run.stat("merges") - run.stat("zero_drops"))
        appended = run.stat("nonzero_steps") > nonzero_before
        merged = run.stat("merges") > merges_before
        assert merged == (appended and size_before == B)  # merge iff the append made B + 1
    assert run.stat("merges") > 100


# ---- T3: exact without merging -----------------------------------------------------------------


def test_without_a_budget_the_model_is_w_alpha_and_each_step_gains_lemma_1():
    X, y = moons(120, seed=1)
    C, gamma = 4.0, 1.0
    run = Stepper(X, y, C, gamma, None)
    K = rbf(X, X, gamma)
    rng = np.random.default_rng(1)
    value = 0.0
    for i in rng.integers(0, len(y), 1500):
        alpha = run.state.copy()
        grad_i = 1.0 - y[i] * (K[i] @ (alpha * y))
        run.step(i)
        delta = run.state[i] - alpha[i]
        new_value = dual(run.state, X, y, gamma)
        assert new_value >= value - 1e-10 * max(1.0, abs(value))
        lemma_1 = delta * grad_i - 0.5 * delta * delta  # J(alpha, i, delta), Q_ii = 1
        assert new_value - value == pytest.approx(lemma_1, abs=1e-10 * max(1.0, abs(value)))
        value = new_value
    Z, beta = run.terms()
    grid = np.random.default_rng(2).uniform(-1.5, 2.5, (300, 2))
    f = rbf(grid, Z, gamma) @ beta
    exact = rbf(grid, X, gamma) @ (run.state * y)
    np.testing.assert_allclose(f, exact, rtol=0, atol=1e-10 * max(1.0, np.abs(exact).max()))
    assert run.stat("merges") == 0 and len(Z) <= len(y)


def test_a_budget_above_the_nonzero_steps_is_exact_too():
    X, y = moons(80, seed=2)
    model = BSCA(C=2.0, gamma=1.0, budget=10_000, epochs=3, random_state=0).fit(X, y)
    exact = rbf(X, X, 1.0) @ (model.alpha_ * y)
    assert model.n_merges_ == 0
    np.testing.assert_allclose(model.decision_function(X), exact, atol=1e-10)


# ---- T4, T5: the no-bias optimum and LIBSVM ----------------------------------------------------


def test_the_box_qp_reference_reaches_the_specs_value(optimum):
    assert optimum[3] == pytest.approx(281.1375, abs=5e-4)


def test_exact_sca_converges_to_the_no_bias_optimum_with_weak_duality(optimum):
    X, y, _, d_star = optimum
    model = BSCA(
        C=4.0, gamma=1.0, budget=None, epochs=200, trace_certificate=True, random_state=0
    ).fit(X, y)
    d = dual(model.alpha_, X, y, 1.0)
    assert d >= d_star - 1e-3 * abs(d_star)
    assert d <= d_star + 1e-6 * abs(d_star)
    trace = model.trace_.columns()
    assert np.all(trace["objective_hinge_l2"] >= trace["dual_alpha"] - 1e-9)
    np.testing.assert_allclose(trace["dual_alpha"][-1], d, rtol=1e-10)
    np.testing.assert_allclose(trace["dual_hybrid"], trace["dual_alpha"], rtol=1e-9)  # no merge
    assert trace["gap_hinge_l2"][-1] < 1e-2 * trace["gap_hinge_l2"][0]
    assert model.certificate_.rel_gap < 2e-4
    assert model.certificate_.dual <= d_star + 1e-6 * abs(d_star)


def test_libsvms_bias_optimum_is_below_the_no_bias_one_and_predicts_alike(optimum):
    X, y, _, d_star = optimum
    svc = SVC(C=4.0, gamma=1.0, tol=1e-8).fit(X, y)
    alpha_svc = np.zeros(len(y))
    alpha_svc[svc.support_] = np.abs(svc.dual_coef_[0])
    assert dual(alpha_svc, X, y, 1.0) <= d_star + 1e-6 * abs(d_star)
    X_test, y_test = moons(2000, seed=7)
    sca = BSCA(C=4.0, gamma=1.0, budget=None, epochs=100, random_state=0).fit(X, y)
    assert abs(sca.score(X_test, y_test) - svc.score(X_test, y_test)) <= 0.02


# ---- T6, T7, T8: merge algebra, merge beats removal, golden-section search --------------------


def test_merge_algebra_against_the_rkhs_norm():
    rng = np.random.default_rng(0)
    for _ in range(200):
        bm_, bn = rng.normal(size=2)
        zm, zn = rng.normal(size=(2, 3))
        gamma, h = rng.uniform(0.05, 2.0), rng.uniform()
        c = gamma * np.sum((zm - zn) ** 2)
        z = h * zm + (1 - h) * zn
        k_mz, k_nz, kappa = (
            rbf(a[None], b[None], gamma)[0, 0] for a, b in ((zm, z), (zn, z), (zm, zn))
        )
        assert k_mz == pytest.approx(math.exp(-c * (1 - h) ** 2), rel=1e-12)
        merged = mg.merge_at(bm_, bn, c, h)
        assert merged.beta_z == pytest.approx(bm_ * k_mz + bn * k_nz, rel=1e-12, abs=1e-15)
        bz = merged.beta_z
        norm = bm_**2 + bn**2 + bz**2 + 2 * bm_ * bn * kappa - 2 * bz * (bm_ * k_mz + bn * k_nz)
        assert merged.wd == pytest.approx(norm, abs=1e-12)
        # dWD/dbeta_z = 2 beta_z - 2 (beta_m k_mz + beta_n k_nz) = 0 at the closed form
        assert 2 * bz - 2 * (bm_ * k_mz + bn * k_nz) == pytest.approx(0.0, abs=1e-12)
        assert mg.merge_at(bm_, bn, c, 0.0).wd == pytest.approx(bm_**2 * (1 - kappa**2), abs=1e-12)
        same = mg.merge_at(bm_, bn, 0.0, h)
        assert same.beta_z == pytest.approx(bm_ + bn, abs=1e-14)
        assert same.wd == pytest.approx(0.0, abs=1e-12)


def test_the_endpoint_check_makes_a_merge_never_worse_than_removal():
    plain = mg.best_merge(0.01, 1.0, 50.0, 0.001, False)
    checked = mg.best_merge(0.01, 1.0, 50.0, 0.001, True)
    assert plain.wd == pytest.approx(1.134e-4, rel=1e-3) and plain.wd > 1e-4
    assert checked.wd <= 0.01**2 * (1 - math.exp(-50.0) ** 2)
    rng = np.random.default_rng(1)
    for _ in range(500):
        b_m = rng.uniform(0.01, 1.0) * rng.choice([-1, 1])
        b_n = rng.uniform(abs(b_m), 3.0) * rng.choice([-1, 1])
        c = rng.uniform(0.0, 60.0)
        bound = b_m**2 * (1 - math.exp(-c) ** 2)
        assert mg.best_merge(b_m, b_n, c, 0.01, True).wd <= bound + 1e-14 * b_n**2
        if c <= 2 and b_m * b_n > 0:
            assert mg.best_merge(b_m, b_n, c, 0.001, False).wd <= bound + 1e-12


@pytest.mark.parametrize("search", ["golden", "table"])
def test_every_merge_of_a_run_beats_removing_the_smallest_term(search):
    X, y = moons(300, noise=0.3, seed=4)
    model = BSCA(C=4.0, gamma=1.0, budget=20, epochs=5, random_state=0, partner_search=search).fit(
        X, y
    )
    log = model.merges_
    assert model.n_merges_ > 100 and len(log["wd"]) == model.n_merges_
    rounding = 1e-14 * (log["beta_m"] ** 2 + log["beta_n"] ** 2)  # cancellation in WD
    assert np.all(log["wd"] <= log["beta_m"] ** 2 * (1 - log["kappa"] ** 2) + rounding)
    assert log["wd"].sum() <= (log["beta_m"] ** 2).sum()
    assert np.all((log["h"] >= 0) & (log["h"] <= 1))


@pytest.mark.parametrize("eps,iterations", [(0.01, 10), (0.001, 15)])
def test_golden_section_search_finds_the_maximum_of_s(eps, iterations):
    grid = np.linspace(0.0, 1.0, 100_001)
    for c in (0.1, 0.5, 1.0, 2.0):
        for mr in (0.1, 0.3, 0.5, 0.7, 0.9):
            found = mg.golden_section(c, mr, eps)
            assert found.iterations == iterations
            s = mr * np.exp(-c * (1 - grid) ** 2) + (1 - mr) * np.exp(-c * grid**2)
            assert abs(found.h - grid[np.argmax(s)]) <= eps / 2 + 1e-9
            assert found.h == pytest.approx(1 - mg.golden_section(c, 1 - mr, eps).h, abs=eps)


def test_the_tabulated_h_scores_a_partner_as_well_as_the_search():
    """WD at the table's h (with the endpoint check) is within 1e-4 (beta_m^2 + beta_n^2) of
    the grid optimum over h, no worse than the search at eps = 0.01 gives, across distances
    where s is unimodal and bimodal; h is symmetric, h(mr) = 1 - h(1 - mr)."""
    table = mg.h_table(mg.TABLE_SIZE)
    grid = np.linspace(0.0, 1.0, 20_001)
    rng = np.random.default_rng(11)
    for _ in range(2000):
        b_m, b_n = rng.uniform(0.01, 2.0, 2) * rng.choice([-1, 1])
        c = rng.choice(
            [rng.uniform(0, 0.1), rng.uniform(0, 2), rng.uniform(2, 6), rng.uniform(6, 60)]
        )
        mr = b_m / (b_m + b_n)
        s = mr * np.exp(-c * (1 - grid) ** 2) + (1 - mr) * np.exp(-c * grid**2)
        best = b_m**2 + b_n**2 + 2 * b_m * b_n * math.exp(-c) - ((b_m + b_n) * s.max()) ** 2
        scale = b_m**2 + b_n**2
        tabulated = mg.best_merge(b_m, b_n, c, 0.01, True, table).wd
        searched = mg.best_merge(b_m, b_n, c, 0.01, True).wd
        assert best - 1e-8 * scale <= tabulated <= best + 1e-4 * scale  # grid: h to 5e-5
        assert tabulated <= searched + 1e-4 * scale
        kappa = math.exp(-c)
        assert mg.tabulated_h(table, 0.3, kappa) == pytest.approx(
            1 - mg.tabulated_h(table, 0.7, kappa), abs=1e-12
        )


# ---- T9, T10: the residual ledger, partner rules -----------------------------------------------


def expansion_norm2(Z, coef, gamma):
    return float(coef @ rbf(Z, Z, gamma) @ coef) if len(coef) else 0.0


def test_the_ledger_of_appends_and_merge_residuals():
    """w~ = w(alpha) - sum_s r_s with ||r_s||^2 = WD_s, so ||w~ - w(alpha)|| <= sum sqrt(WD)."""
    X, y = moons(100, noise=0.3, seed=5)
    gamma = 1.0
    run = Stepper(X, y, 4.0, gamma, 8)
    residuals_Z, residuals_c = [], []
    for i in np.random.default_rng(3).integers(0, len(y), 500):
        Z0, b0 = run.terms()
        alpha_i, merges = run.state[i], run.stat("merges")
        run.step(i)
        if run.stat("merges") > merges:
            Z1, b1 = run.terms()
            before_Z = np.vstack([Z0, X[i]])
            before_c = np.append(b0, y[i] * (run.state[i] - alpha_i))
            rZ, rc = np.vstack([before_Z, Z1]), np.concatenate([before_c, -b1])
            wd = run.log.rows[run.log.count[0] - 1, bm.LOG_COLUMNS.index("wd")]
            assert expansion_norm2(rZ, rc, gamma) == pytest.approx(wd, abs=1e-9)
            residuals_Z.append(rZ)
            residuals_c.append(rc)
    Z, beta = run.terms()
    w_alpha_Z, w_alpha_c = X, run.state * y
    scale = expansion_norm2(w_alpha_Z, w_alpha_c, gamma)
    ledger_Z = np.vstack([Z, w_alpha_Z, *residuals_Z])
    ledger_c = np.concatenate([beta, -w_alpha_c, *residuals_c])
    assert expansion_norm2(ledger_Z, ledger_c, gamma) <= 1e-9 * scale
    distance = math.sqrt(
        max(expansion_norm2(np.vstack([Z, X]), np.concatenate([beta, -w_alpha_c]), gamma), 0.0)
    )
    sum_sqrt_wd = run.stats[loops.STAT_NAMES.index("sum_sqrt_wd")]
    assert len(residuals_c) > 30 and distance <= sum_sqrt_wd + 1e-9


def crafted_model(labels, betas, points):
    """A model holding the given terms (row j: label, beta, point), for one maintenance."""
    model = bm.new_model(len(labels), 2, len(labels))
    for j, (label, beta, point) in enumerate(zip(labels, betas, points)):
        model.Z[j] = model.ZT[:, j] = point
        model.points.sq_norms[j] = point @ point
        model.beta[j], model.label[j] = beta, label
    model.size[0] = len(labels)
    return model


@pytest.mark.parametrize("rule,partner", [("same_label", 3), ("same_sign", 1), ("all", 1)])
def test_partner_rules_choose_among_their_candidates(rule, partner):
    """Row 0 (smallest |beta|, label +1, beta > 0); row 1 is closest, with label -1 and beta > 0;
    row 2 is far, with label +1 and beta > 0; row 3 is near, with label +1 but beta < 0."""
    points = np.array([[0.0, 0.0], [0.1, 0.0], [1.5, 0.0], [0.0, 0.3]])
    model = crafted_model([1, -1, 1, 1], [0.1, 0.5, 0.5, -0.6], points)
    opt = bm.Options(3, bm.MERGE, bm.PARTNER_RULES[rule], 0.01, 0.001, True, False)
    log = bm.new_log(1)
    bm.maintain(model, kernel_spec("rbf", 1.0), opt, 0.0, 1, 1.0, log)
    kappa = log.rows[0, bm.LOG_COLUMNS.index("kappa")]
    assert kappa == pytest.approx(math.exp(-np.sum((points[0] - points[partner]) ** 2)))
    z = model.Z[0]  # the merged point replaced row 0 and lies on the segment
    low, high = np.minimum(points[0], points[partner]), np.maximum(points[0], points[partner])
    assert np.all(z >= low - 1e-15) and np.all(z <= high + 1e-15)
    assert model.size[0] == 3 and np.isfinite(model.beta[:3]).all()


def test_opposite_coefficients_of_one_point_merge_losslessly_and_drop():
    point = np.array([0.3, -0.2])
    model = crafted_model([1, 1, -1], [0.2, -0.2, 1.0], np.array([point, point, [2.0, 2.0]]))
    opt = bm.Options(2, bm.MERGE, bm.SAME_LABEL, 0.01, 0.001, True, False)
    log = bm.new_log(1)
    done = bm.maintain(model, kernel_spec("rbf", 1.0), opt, 0.0, 1, 1.0, log)
    assert done.removed == 2 and done.wd == pytest.approx(0.0, abs=1e-15)
    assert model.size[0] == 1 and model.beta[0] == 1.0
    np.testing.assert_array_equal(model.Z[0], [2.0, 2.0])


def test_same_sign_merges_only_terms_of_one_sign_and_stays_finite():
    X, y = moons(200, noise=0.3, seed=6)
    model = BSCA(
        C=4.0, gamma=1.0, budget=10, epochs=5, partner_rule="same_sign", random_state=0
    ).fit(X, y)
    log = model.merges_
    assert model.n_merges_ > 50 and np.all(log["beta_m"] * log["beta_n"] > 0)
    assert np.isfinite(model.support_vectors_).all() and np.isfinite(model.dual_coef_).all()


# ---- T11: budgeted quality ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def quality_problem():
    X, y = moons(600, noise=0.3, seed=1)
    X_test, y_test = moons(2000, noise=0.3, seed=2)
    alpha, d_star = box_qp(X, y, 4.0, 1.0)
    exact_accuracy = np.mean(np.where(rbf(X_test, X, 1.0) @ (alpha * y) > 0, 1, -1) == y_test)
    return X, y, X_test, y_test, d_star, exact_accuracy


@pytest.mark.parametrize("search", ["golden", "table"])
def test_a_budget_of_50_comes_close_to_the_exact_svm(quality_problem, search):
    X, y, X_test, y_test, p_star, exact_accuracy = quality_problem
    assert p_star == pytest.approx(517.91, abs=0.01)
    model = BSCA(C=4.0, gamma=1.0, budget=50, epochs=15, random_state=0, partner_search=search).fit(
        X, y
    )
    p = primal(model.dual_coef_[0], model.support_vectors_, X, y, 4.0, 1.0)
    assert p == pytest.approx(model.certificate_.primal, rel=1e-9)
    assert p <= 1.05 * p_star
    assert abs(model.score(X_test, y_test) - exact_accuracy) <= 0.015


def test_the_primal_improves_with_the_budget(quality_problem):
    X, y = quality_problem[:2]
    means = [
        np.mean(
            [
                BSCA(C=4.0, gamma=1.0, budget=B, epochs=15, random_state=seed)
                .fit(X, y)
                .certificate_.primal
                for seed in range(3)
            ]
        )
        for B in (10, 20, 50)
    ]
    assert means[0] > means[1] > means[2]


# ---- T12: BSGD ---------------------------------------------------------------------------------


def test_bsgd_alpha_follows_eq_4_and_merges_only_on_violations():
    X, y = moons(120, noise=0.3, seed=8)
    n, C, B = len(y), 2.0, 10
    run = Stepper(X, y, C, 1.0, B, solver="bsgd")
    alpha = np.zeros(n)
    for t, i in enumerate(np.random.default_rng(4).integers(0, n, 2000), start=1):
        v_before, merges = run.state.copy(), run.stat("merges")
        run.step(i)
        violated = run.state[i] > v_before[i]
        alpha -= alpha / t  # eq. 4, literally
        alpha[i] += violated * n * C / t
        np.testing.assert_allclose(n * C * run.state / t, alpha, rtol=1e-12, atol=1e-12 * n * C)
        assert run.model.size[0] <= B
        assert run.stat("merges") == merges + (violated and run.stat("nonzero_steps") > B)


def test_bsgd_without_a_budget_is_kernel_pegasos():
    X, y = moons(150, noise=0.3, seed=9)
    model = BSGD(C=2.0, gamma=1.0, budget=None, epochs=3, random_state=0).fit(X, y)
    t = 3 * len(y)
    v = model.alpha_ * t / (len(y) * 2.0)
    np.testing.assert_allclose(v, np.round(v), atol=1e-9)
    expected = len(y) * 2.0 / t * (rbf(X, X, 1.0) @ (np.round(v) * y))
    np.testing.assert_allclose(model.decision_function(X), expected, rtol=1e-10, atol=1e-10)
    assert model.n_merges_ == 0


# ---- T13: determinism and a pure-numpy reference ------------------------------------------------


def reference_bsca(X, y, C, gamma, B, orders, eps_search=0.01, eps_final=0.001):
    """BSCA with same-label merging and the endpoint check, written out in numpy."""
    gold = (math.sqrt(5) - 1) / 2

    def search(c, mr, eps):
        s = lambda h: mr * math.exp(-c * (1 - h) ** 2) + (1 - mr) * math.exp(-c * h * h)
        a, b = 0.0, 1.0
        p, q = b - gold * (b - a), a + gold * (b - a)
        fp, fq = s(p), s(q)
        while b - a >= eps:
            if fp >= fq:
                b, q, fq = q, p, fp
                p = b - gold * (b - a)
                fp = s(p)
            else:
                a, p, fp = p, q, fq
                q = a + gold * (b - a)
                fq = s(q)
        return (a + b) / 2

    def merge(b_m, b_n, c, eps):
        h = 0.5 if b_m + b_n == 0 else search(c, b_m / (b_m + b_n), eps)
        options = []
        for x in (h, 0.0, 1.0):
            bz = b_m * math.exp(-c * (1 - x) ** 2) + b_n * math.exp(-c * x * x)
            options.append((b_m**2 + b_n**2 + 2 * b_m * b_n * math.exp(-c) - bz**2, x, bz))
        return min(options, key=lambda o: o[0])  # first of equal values: h before endpoints

    alpha, Z, beta, lab = np.zeros(len(y)), [], [], []
    for order in orders:
        for i in order:
            f = sum(b * math.exp(-gamma * np.sum((X[i] - z) ** 2)) for z, b in zip(Z, beta))
            new = min(max(alpha[i] + 1 - y[i] * f, 0.0), C)
            if new == alpha[i]:
                continue
            Z.append(X[i].copy())
            beta.append(y[i] * (new - alpha[i]))
            lab.append(y[i])
            alpha[i] = new
            if len(Z) <= B:
                continue
            m = min((j for j in range(len(Z)) if beta[j] != 0), key=lambda j: abs(beta[j]))
            cands = [j for j in range(len(Z)) if j != m and lab[j] == lab[m]]
            cs = {j: gamma * np.sum((Z[m] - Z[j]) ** 2) for j in cands}
            n = min(cands, key=lambda j: merge(beta[m], beta[j], cs[j], eps_search)[0])
            _, h, bz = merge(beta[m], beta[n], cs[n], eps_final)
            Z[m], beta[m] = h * Z[m] + (1 - h) * Z[n], bz
            Z[n], beta[n], lab[n] = Z[-1], beta[-1], lab[-1]
            del Z[-1], beta[-1], lab[-1]
    return alpha, np.array(Z), np.array(beta)


def test_the_compiled_bsca_agrees_with_the_numpy_reference():
    X, y = moons(50, noise=0.3, seed=10)
    orders = [np.random.default_rng(s).permutation(50) for s in range(3)]
    run = Stepper(X, y, 4.0, 1.0, 8)
    for i in np.concatenate(orders):
        run.step(i)
    alpha, Z, beta = reference_bsca(X, y, 4.0, 1.0, 8, orders)
    assert run.stat("merges") > 20
    np.testing.assert_allclose(run.state, alpha, rtol=0, atol=1e-12)
    Z_run, beta_run = run.terms()
    np.testing.assert_allclose(Z_run, Z, rtol=0, atol=1e-12)
    np.testing.assert_allclose(beta_run, beta, rtol=0, atol=1e-12)


@pytest.mark.parametrize(
    "cls,params",
    [(BSCA, {}), (BSGD, {}), (BSCA, {"partner_rule": "random", "selection": "uniform"})],
)
def test_the_same_seed_gives_bit_identical_models(cls, params):
    X, y = moons(200, noise=0.3, seed=11)
    a, b, other = (
        cls(C=4.0, gamma=1.0, budget=15, epochs=3, random_state=seed, **params).fit(X, y)
        for seed in (5, 5, 6)
    )
    for name in ("alpha_", "support_vectors_", "dual_coef_"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert not np.array_equal(a.alpha_, other.alpha_)


# ---- T15, kernels, trace -----------------------------------------------------------------------


def test_predictions_use_the_model_only():
    X, y = moons(200, noise=0.3, seed=12)
    model = BSCA(C=4.0, gamma=1.0, budget=20, epochs=3, random_state=0).fit(X, y)
    f = model.decision_function(X)
    np.testing.assert_array_equal(model.predict(X), np.where(f > 0, 1.0, -1.0))
    model.alpha_[:] = 0.0
    np.testing.assert_array_equal(model.decision_function(X), f)


def test_merging_needs_the_rbf_kernel_and_removal_takes_any():
    X, y = moons(100, noise=0.3, seed=13)
    with pytest.raises(ConfigError, match="maintenance='merge' needs kernel='rbf'"):
        BSCA(kernel="poly", budget=10, epochs=1).fit(X, y)
    model = BSCA(
        C=1.0,
        kernel="poly",
        gamma=0.5,
        degree=2,
        coef0=1.0,
        budget=10,
        epochs=3,
        maintenance="remove",
        random_state=0,
    ).fit(X, y)
    assert model.n_support_ <= 10 and model.n_merges_ > 0
    assert np.isnan(model.merges_["h"]).all()
    wd = model.merges_["wd"]
    assert np.all(wd >= 0) and model.certificate_.gap >= 0


def test_the_trace_has_one_certified_row_per_epoch_with_test_accuracy():
    X, y = moons(300, noise=0.3, seed=14)
    X_test, y_test = moons(500, noise=0.3, seed=15)
    labels = np.array(["a", "b"])
    model = BSGD(C=4.0, gamma=1.0, budget=20, epochs=4, trace_certificate=True, random_state=0).fit(
        X, labels[(y > 0) * 1], eval_set=(X_test, labels[(y_test > 0) * 1])
    )
    trace = model.trace_.columns()
    np.testing.assert_array_equal(trace["iteration"], [300, 600, 900, 1200])
    assert trace["test_accuracy"][-1] == model.score(X_test, labels[(y_test > 0) * 1])
    assert np.all(trace["gap_hinge_l2"] >= 0)
    assert np.all(trace["merge_fraction"] <= trace["nonzero_step_fraction"])
    assert np.all(trace["merge_time_s"] <= np.diff(np.append(0.0, trace["time_s"])))
    assert trace["model_size"][-1] == model.n_support_ == 20
    assert sum(trace["merge_fraction"] * 300) == model.n_merges_
    assert not hasattr(model, "_eval_set")


# ---- the free offset (bias=True), the cost of the trace rows, dense and CSR input ----------------


def hinge_sum(y, f):
    return float(np.maximum(0.0, 1.0 - y * f).sum())


@pytest.mark.parametrize("seed", range(4))
def test_best_offset_minimises_the_hinge_loss(seed):
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(80) < 0.3, 1.0, -1.0)
    f = np.round(rng.normal(size=80), 1)  # tied kinks
    b = best_offset(y, f)
    best = min(hinge_sum(y, f + k) for k in y - f)  # a convex piecewise-linear minimum: a kink
    assert hinge_sum(y, f + b) <= best + 1e-12


def test_best_offset_takes_the_middle_of_a_flat_minimum():
    assert best_offset(np.array([1.0, -1.0]), np.array([0.5, 0.5])) == -0.5  # flat on [-1.5, 0.5]


@pytest.mark.parametrize("cls", [BSCA, BSGD])
def test_the_bias_is_the_best_offset_of_the_final_model_and_is_certified(cls):
    X, y = moons(300, noise=0.3, seed=3)
    y = np.where(np.arange(300) % 4 == 0, y, -1.0)  # imbalanced: the offset matters
    model = cls(
        C=4.0, gamma=0.05, budget=15, epochs=3, bias=True, trace_certificate=True, random_state=0
    ).fit(X, y)
    trace = model.trace_.columns()
    f = model.decision_function(X) - model.intercept_[0]
    assert model.intercept_[0] == trace["offset"][-1] != 0.0
    assert model.intercept_[0] == pytest.approx(best_offset(y, f), abs=1e-9)
    assert trace["objective_hinge_l2"][-1] == pytest.approx(
        model.objectives(X, y)["objective_hinge_l2"], rel=1e-10
    )
    cert = model.certificate_
    assert cert.formulation == "hinge_l2_bias" and cert.gap >= 0
    assert np.all(trace["gap_hinge_l2_bias"] >= 0)


def test_exact_bsca_with_a_bias_approaches_libsvms_optimum(optimum):
    X, y = optimum[:2]
    svc = SVC(C=4.0, gamma=1.0, tol=1e-8).fit(X, y)
    coef, Z = svc.dual_coef_[0], svc.support_vectors_
    f = rbf(X, Z, 1.0) @ coef + svc.intercept_[0]
    svc_primal = 0.5 * coef @ rbf(Z, Z, 1.0) @ coef + 4.0 * hinge_sum(y, f)
    model = BSCA(C=4.0, gamma=1.0, budget=None, epochs=100, bias=True, random_state=0).fit(X, y)
    ours = model.trace_.columns()["objective_hinge_l2"][-1]
    assert svc_primal <= ours <= svc_primal * (1 + 1e-2)


def test_the_trace_rows_skip_the_certificate_unless_asked():
    X, y = moons(200, seed=5)
    plain = BSCA(C=2.0, gamma=1.0, budget=10, epochs=2, random_state=0).fit(X, y)
    certified = BSCA(
        C=2.0, gamma=1.0, budget=10, epochs=2, trace_certificate=True, random_state=0
    ).fit(X, y)
    columns = set(plain.trace_.columns())
    assert not columns & {"dual_alpha", "dual_hinge_l2", "gap_hinge_l2", "rel_gap_hinge_l2"}
    assert {"dual_alpha", "rel_gap_hinge_l2"} <= set(certified.trace_.columns())
    for name in ("objective_hinge_l2", "dual_hybrid", "offset"):
        np.testing.assert_array_equal(
            plain.trace_.columns()[name], certified.trace_.columns()[name]
        )
    assert plain.certificate_ == certified.certificate_


@pytest.mark.parametrize("cls, epochs", [(BSGD, 20), (BSCA, 5)])
def test_dense_and_csr_input_give_the_same_model_bit_for_bit(shared_libsvm, cls, epochs):
    """ionosphere_scale at C = 10, B = 20, seed 0: BSGD's margin test y f < 1 once flipped on
    the rounding of a dense against a sparse kernel sum, and the paths parted."""
    X, y = load_svmlight_file(str(shared_libsvm / "ionosphere_scale" / "ionosphere_scale"))
    dense, csr = (
        cls(C=10.0, budget=20, epochs=epochs, random_state=0).fit(data, y)
        for data in (X.toarray(), X.tocsr())
    )
    np.testing.assert_array_equal(dense.alpha_, csr.alpha_)
    np.testing.assert_array_equal(dense.dual_coef_, csr.dual_coef_)
    np.testing.assert_array_equal(dense.support_vectors_, csr.support_vectors_)
    np.testing.assert_array_equal(
        dense.trace_.columns()["objective_hinge_l2"], csr.trace_.columns()["objective_hinge_l2"]
    )


# ---- configs: the solver files and the bsca_budget preset ---------------------------------------

PAPER_PROBLEMS = {"ijcnn1": 2.0, "a9a": 2.0**-7, "cod-rna": 2.0**-3}


def test_the_preset_sweeps_the_papers_problems_budgets_and_solvers():
    from svmlab.app.config.schema import build_estimator, check_typed_parts

    cfg = composed("+experiment=bsca_budget", hydra=True)
    check_typed_parts(cfg)
    params = cfg.hydra.sweeper.params
    assert params["+bsca_problem"] == ",".join(PAPER_PROBLEMS)
    assert params.seed == "range(5)"
    jobs = [(problem, "bsca_b200") for problem in PAPER_PROBLEMS]
    jobs += [("ijcnn1", solver) for solver in params.solver.split(",") if solver != "bsca_b200"]
    for problem, solver in jobs:
        job = composed(
            "+experiment=bsca_budget", f"+bsca_problem={problem}", f"solver={solver}", "seed=3"
        )
        estimator = build_estimator(job)
        assert job.dataset.name == problem and estimator.C == 32.0
        assert (estimator.kernel, estimator.gamma) == ("rbf", PAPER_PROBLEMS[problem])
        if solver != "libsvm":
            assert estimator.budget == (200 if solver.endswith("_b200") else 500)
            assert estimator.random_state == 3


@pytest.mark.slow  # end to end: svmlab train into an MLflow store
def test_a_training_run_logs_test_accuracy_per_epoch_and_the_merge_record(store, tmp_path):
    import pandas as pd
    from mlflow import MlflowClient

    from support.runs import runs, train

    assert (
        train(
            store,
            "solver=bsca",
            "kernel=rbf",
            "dataset=breast_cancer",
            "solver.budget=10",
            "solver.epochs=3",
            "tracking.log_model=false",
        )
        == 0
    )
    (run,) = runs(store)
    assert run.info.status == "FINISHED"
    assert run.data.metrics["trace/test_accuracy"] == run.data.metrics["test_accuracy"]
    client = MlflowClient(f"sqlite:///{store}")
    merges = pd.read_parquet(
        client.download_artifacts(run.info.run_id, "records/merges.parquet", str(tmp_path))
    )
    assert list(merges.columns) == list(bm.LOG_COLUMNS) and len(merges) > 0
    trace = pd.read_parquet(
        client.download_artifacts(run.info.run_id, "trace/trace.parquet", str(tmp_path))
    )
    assert (
        trace["merge_fraction"] * trace["iteration"].diff().fillna(trace["iteration"])
    ).sum() == pytest.approx(len(merges))


# ---- the vectorised exponential and the lockstep search ------------------------------------------


def test_exp_of_is_within_one_ulp_of_numpy_and_exact_at_the_edges():
    from svmlab.solvers.budget.kernel_row import exp_of

    rng = np.random.default_rng(7)
    special = [0.0, -0.0, -708.0, 709.0, -708.5, 709.5, -745.2, -800.0, 710.0, -np.inf, np.inf]
    x = np.concatenate(
        [
            rng.uniform(-745.0, 0.0, 20_000),
            rng.uniform(-708.0, 709.0, 20_000),
            rng.uniform(-1.0, 0.0, 20_000),
            special,
            [np.nan],
        ]
    )
    out, bits = np.empty_like(x), np.empty(len(x), np.int64)
    exp_of(x, 1.0, out, bits, len(x))
    with np.errstate(over="ignore"):
        expected = np.exp(x)
    finite = np.isfinite(expected) & (expected > 0.0)
    assert np.all(np.abs(out[finite] - expected[finite]) <= np.spacing(expected[finite]))
    np.testing.assert_array_equal(out[~finite], expected[~finite])  # 0, inf and NaN
    assert out[len(x) - len(special) - 1] == 1.0  # exp(0)
    quarter = np.empty_like(x)
    exp_of(x, -0.25, quarter, bits, len(x))
    exp_of(-0.25 * x, 1.0, out, bits, len(x))
    np.testing.assert_array_equal(quarter, out)


@pytest.mark.parametrize("eps", [0.01, 0.001])
def test_the_lockstep_search_takes_the_steps_of_the_scalar_search(eps):
    from svmlab.solvers.budget.partners import ROWS, _golden

    rng = np.random.default_rng(8)
    size = 500
    c = np.concatenate([rng.exponential(2.0, size - 3), [0.0, 5.0, 40.0]])
    mr = np.concatenate([rng.uniform(-0.5, 1.5, size - 3), [0.3, 0.5, 0.9]])
    work, bits = np.zeros((ROWS, size)), np.zeros(size, np.int64)
    _golden(c, mr, size, eps, work[7:], work[5:7], work[3:5], bits)
    h = 0.5 * (work[7] + work[8])
    expected = np.array([mg.golden_section(c[k], mr[k], eps).h for k in range(size)])
    np.testing.assert_array_equal(h, expected)
