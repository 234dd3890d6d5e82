"""Optimality certificates against exact optima from independent solvers (scipy's QP and LP
solvers, closed forms): D(a) <= P* <= P(w) always, and the gap closes at the optimum."""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import linprog, lsq_linear, minimize
from sklearn.datasets import make_classification

from svmlab.estimator.certificates import (
    Certificate,
    KernelImage,
    LinearImage,
    certify,
    dual_bound,
)
from svmlab.estimator.formulations import (
    BIASES,
    L1,
    L2,
    Formulation,
    FreeBias,
    FreeMargin,
    Hinge,
    Squared,
)
from svmlab.estimator.kernels import Kernel
from svmlab.numerics.box_ascent import box_ascent, free_set_ascent, gram_ascent
from svmlab.numerics.rows import rows_of
from svmlab.solvers.baselines import Liblinear, Libsvm
from svmlab.solvers.budget import BSCA
from svmlab.solvers.frank_wolfe import ModifiedFrankWolfe


@pytest.fixture(scope="module")
def problem():
    X, y01 = make_classification(
        60, 5, n_informative=4, n_redundant=0, flip_y=0.15, class_sep=0.8, random_state=3
    )
    return X, np.where(y01 == 1, 1.0, -1.0)


def exact_dual(Q: np.ndarray, C: float, y: np.ndarray | None = None) -> np.ndarray:
    """argmax sum a - 1/2 a'Qa over 0 <= a <= C (and y'a = 0 if y is given), by SLSQP."""
    n = len(Q)
    constraints = (
        [{"type": "eq", "fun": lambda a: a @ y, "jac": lambda a: y}] if y is not None else []
    )
    result = minimize(
        lambda a: (0.5 * a @ Q @ a - a.sum(), Q @ a - 1.0),
        np.full(n, C / 2),
        jac=True,
        bounds=[(0.0, C)] * n,
        constraints=constraints,
        method="SLSQP",
        options={"ftol": 1e-15, "maxiter": 2000},
    )
    return result.x


def hinge_primal(X, y, w, b, C):
    return 0.5 * w @ w + C * np.maximum(0.0, 1.0 - y * (X @ w + b)).sum()


def linear_certificate(form, X, y, w, b, C, duals=()):
    margins = y * (X @ w + b)
    reg = 0.5 * w @ w if isinstance(form.penalty, L2) else np.abs(w).sum()
    scale = form.bias.scale
    if scale is not None:
        reg += 0.5 * (b / scale) ** 2 if isinstance(form.penalty, L2) else abs(b / scale)
    return certify(form, C, margins, reg, LinearImage(X, y, w, b, scale), duals)


@pytest.mark.parametrize("bias", ["none", "free"])
def test_hinge_l2_gap_closes_at_the_exact_optimum_and_bounds_any_model(problem, bias):
    X, y = problem
    C = 0.7
    Z = X * y[:, None]
    a = exact_dual(Z @ Z.T, C, y if bias == "free" else None)
    w = Z.T @ a
    free = (a > 1e-6 * C) & (a < C * (1 - 1e-6))
    b = float(np.median(y[free] - X[free] @ w)) if bias == "free" else 0.0
    p_star = hinge_primal(X, y, w, b, C)
    form = Formulation(Hinge(), L2(), BIASES[bias]())
    at_optimum = linear_certificate(form, X, y, w, b, C)  # the model's own dual point only
    assert at_optimum.dual <= p_star * (1 + 1e-9)
    assert at_optimum.rel_gap < 1e-6
    rng = np.random.default_rng(0)
    for scale in (1e-3, 1e-1, 1.0):
        w2 = w + scale * rng.normal(size=w.shape)
        other = linear_certificate(form, X, y, w2, b, C)
        assert other.primal == pytest.approx(hinge_primal(X, y, w2, b, C), rel=1e-12)
        assert other.dual <= p_star * (1 + 1e-9)  # a lower bound
        assert other.gap >= other.primal - p_star - 1e-9 * p_star  # bounds the suboptimality


def test_libsvm_certificate_uses_its_dual_point_and_is_tight(problem):
    X, y = problem
    model = Libsvm(C=0.7, kernel="linear", tol=1e-10).fit(X, y)
    cert = model.certificate_
    assert cert.formulation == "hinge_l2_bias" and cert.source == "solver"
    assert 0.0 <= cert.rel_gap < 1e-7
    Z = X * y[:, None]
    a = exact_dual(Z @ Z.T, 0.7, y)
    d_star = a.sum() - 0.5 * a @ Z @ Z.T @ a
    assert cert.dual <= d_star * (1 + 1e-9) and cert.primal >= d_star * (1 - 1e-9)


def test_a_kernel_model_is_certified_with_or_without_the_solvers_dual(problem):
    X, y = problem
    model = Libsvm(C=2.0, kernel="rbf", gamma=0.3, tol=1e-10).fit(X, y)
    assert model.certificate_.rel_gap < 1e-7
    # from the model alone (free-set refinement in the RKHS): still a valid and tight bound
    kernel = Kernel("rbf", 0.3, 3, 0.0)
    margins = y * model.decision_function(X)
    squared_l2, _ = model._regularizer_norms()
    image = KernelImage(
        X, y, kernel, model.support_vectors_, model.dual_coef_[0], float(model.intercept_[0])
    )
    alone = certify(Formulation(Hinge(), L2(), FreeBias()), 2.0, margins, 0.5 * squared_l2, image)
    assert alone.dual <= model.certificate_.primal * (1 + 1e-9)
    assert alone.rel_gap < 1e-4


@pytest.mark.parametrize("penalty", ["l2", "l1"])
def test_liblinear_squared_hinge_with_penalised_bias_is_certified(problem, penalty):
    X, y = problem
    # tol 1e-8: tighter stopping rules are out of LIBLINEAR's reach in double precision (it then
    # wanders away from the optimum until max_iter, and the certificate shows it)
    model = Liblinear(
        C=0.5,
        penalty=penalty,
        dual=penalty == "l2",
        tol=1e-8,
        max_iter=100_000,
        intercept_scaling=2.0,
        random_state=0,
    ).fit(X, y)
    assert model.converged_
    cert = model.certificate_
    assert cert.formulation == f"squared_hinge_{penalty}_penalised_bias"
    assert -1e-9 <= cert.rel_gap < 1e-6


def test_hinge_l1_certificate_against_the_lp_optimum(problem):
    """min ||w||_1 + C sum xi, xi >= 1 - y_i x_i.w, xi >= 0 as an LP (HiGHS)."""
    X, y = problem
    n, d = X.shape
    C = 0.3
    Z = X * y[:, None]
    # variables [w+ (d), w- (d), xi (n)] >= 0
    cost = np.concatenate([np.ones(2 * d), C * np.ones(n)])
    A_ub = np.hstack([-Z, Z, -np.eye(n)])
    lp = linprog(cost, A_ub=A_ub, b_ub=-np.ones(n), bounds=(0, None), method="highs")
    w = lp.x[:d] - lp.x[d : 2 * d]
    form = Formulation(Hinge(), L1())
    cert = linear_certificate(form, X, y, w, 0.0, C)
    assert cert.primal == pytest.approx(lp.fun, rel=1e-9)
    assert cert.dual <= lp.fun * (1 + 1e-9)
    assert cert.rel_gap < 1e-6
    worse = linear_certificate(form, X, y, 0.5 * w, 0.0, C)
    assert worse.dual <= lp.fun * (1 + 1e-9) and worse.gap >= worse.primal - lp.fun - 1e-9


def test_least_squares_certificate_against_the_closed_form(problem):
    X, y = problem
    C = 0.4
    Z = X * y[:, None]
    w = np.linalg.solve(np.eye(X.shape[1]) + 2 * C * Z.T @ Z, 2 * C * Z.T @ np.ones(len(y)))
    cert = linear_certificate(Formulation(Squared(), L2()), X, y, w, 0.0, C)
    assert abs(cert.rel_gap) < 1e-12


@pytest.mark.parametrize("bias", ["none", "free"])
def test_sparse_and_dense_features_give_the_same_certificate(problem, bias):
    X, y = problem
    model = Liblinear(C=0.5, loss="hinge", fit_intercept=False, tol=1e-4).fit(X, y)
    w, b = model.coef_[0], 0.1 if bias == "free" else 0.0
    form = Formulation(Hinge(), L2(), BIASES[bias]())
    dense = linear_certificate(form, X, y, w, b, 0.5)
    sparse = linear_certificate(form, sp.csr_matrix(X), y, w, b, 0.5)
    assert sparse.primal == pytest.approx(dense.primal, rel=1e-12)
    assert sparse.dual == pytest.approx(dense.dual, rel=1e-6)


def test_zero_c_and_relative_gap_conventions():
    X = np.eye(3)
    y = np.array([1.0, -1.0, 1.0])
    cert = certify(
        Formulation(Hinge(), L2()), 0.0, y * (X @ np.zeros(3)), 0.0, LinearImage(X, y, np.zeros(3))
    )
    assert (cert.primal, cert.dual, cert.gap, cert.rel_gap) == (0.0, 0.0, 0.0, 0.0)
    assert Certificate("hinge_l2", 2.0, 1.5, "model").metrics() == {
        "primal_hinge_l2": 2.0,
        "dual_hinge_l2": 1.5,
        "gap_hinge_l2": 0.5,
        "rel_gap_hinge_l2": 0.25,
    }
    with pytest.raises(ValueError, match="a free margin needs the squared hinge; got hinge"):
        Formulation(Hinge(), L2(), margin=FreeMargin())


def test_the_l2_refinement_ascends_the_dual_on_the_free_set(problem):
    """Without a free bias, the l2 refinement (given the compiled ascent, as Pegasos gives it)
    maximises the dual over the free points (the others fixed): with every point free it
    reaches the exact dual optimum (SLSQP), a bound at least as tight as the exact fit of
    largest sum (linprog) or of least squares (bvls), and still below P*; on part of the
    points it never loses to the model's own point."""
    X, y = problem
    C = 0.7
    Z = X * y[:, None]
    a_star = exact_dual(Z @ Z.T, C)
    d_star = a_star.sum() - 0.5 * np.sum((Z.T @ a_star) ** 2)
    p_star = hinge_primal(X, y, Z.T @ a_star, 0.0, C)
    form = Formulation(Hinge(), L2())
    for offset in (0.05, 100.0):  # the optimality condition within reach, and beyond it
        w = Z.T @ a_star + offset * np.random.default_rng(1).normal(size=X.shape[1])
        image = LinearImage(X, y, w, ascent=free_set_ascent)
        base = form.loss.dual_candidate(y * (X @ w), C)
        refined = image.fit_free(base, np.arange(len(y)), C, L2(), balanced=False)
        assert np.all((refined >= 0.0) & (refined <= C))
        bound = dual_bound(form, C, refined, image)
        assert d_star * (1 - 1e-5) <= bound <= p_star * (1 + 1e-12)
        others = [lsq_linear(Z.T, w, bounds=(0.0, C), method="bvls", tol=1e-14).x]
        lp = linprog(-np.ones(len(y)), A_eq=Z.T, b_eq=w, bounds=(0.0, C), method="highs")
        others += [lp.x] if lp.status == 0 else []
        assert all(dual_bound(form, C, a, image) <= bound for a in others)
        part = np.flatnonzero(np.abs(1.0 - y * (X @ w)) <= 0.5)
        partial = image.fit_free(base, part, C, L2(), balanced=False)
        np.testing.assert_array_equal(np.delete(partial, part), np.delete(base, part))
        assert dual_bound(form, C, base, image) <= dual_bound(form, C, partial, image) <= p_star


def test_a_free_bias_gets_the_balanced_exact_fit_of_largest_sum(problem):
    """With a free bias, where v(a) = w and sum_i a_i y_i = 0 can be met on the free set, the
    refinement meets both with the a of largest sum, at least that of scipy's bounded least
    squares (another exact fit)."""
    X, y = problem
    C = 0.7
    Z = X * y[:, None]
    a_star = exact_dual(Z @ Z.T, C, y)
    w = Z.T @ a_star + 0.05 * np.random.default_rng(1).normal(size=X.shape[1])
    image = LinearImage(X, y, w)
    base = Hinge().dual_candidate(y * (X @ w), C)
    refined = image.fit_free(base, np.arange(len(y)), C, L2(), balanced=True)
    assert np.all((refined >= 0.0) & (refined <= C))
    np.testing.assert_allclose(image.vector(refined), w, atol=1e-8)
    assert abs(refined @ y) < 1e-8
    system = np.vstack([Z.T, y])
    other = lsq_linear(system, np.append(w, 0.0), bounds=(0.0, C), method="bvls", tol=1e-14).x
    np.testing.assert_allclose(system @ other, np.append(w, 0.0), atol=1e-8)
    assert refined.sum() >= other.sum() - 1e-9


@pytest.mark.parametrize("sparse,shrink", [(False, 0.0), (True, 0.0), (False, 0.7), (True, 0.7)])
def test_box_ascent_reaches_the_box_qp_optimum(sparse, shrink):
    """max sum x - 1/2 ||S(s0 + R^T x)||^2 over [0, C]^m (S: the soft threshold at shrink;
    C^1 and concave) against L-BFGS-B, with s kept in step."""
    rng = np.random.default_rng(4)
    R = rng.normal(size=(200, 6)) * (rng.random((200, 6)) < 0.6)
    s0, C = rng.normal(size=6), 0.4
    x, s = np.full(200, C / 2), s0 + R.T @ np.full(200, C / 2)
    box_ascent(rows_of(sp.csr_matrix(R) if sparse else R), s, x, C, 10_000, 0.0, np.inf, shrink)
    np.testing.assert_allclose(s, s0 + R.T @ x, atol=1e-12)
    assert np.all((x >= 0.0) & (x <= C))
    S = lambda u: np.sign(u) * np.maximum(np.abs(u) - shrink, 0.0)
    value = lambda z: z.sum() - 0.5 * np.sum(S(s0 + R.T @ z) ** 2)
    ref = minimize(
        lambda z: (-value(z), R @ S(s0 + R.T @ z) - 1.0),
        np.zeros(200),
        jac=True,
        method="L-BFGS-B",
        bounds=[(0.0, C)] * 200,
        options={"maxiter": 10_000, "ftol": 1e-15, "gtol": 1e-12},
    )
    assert value(x) == pytest.approx(-ref.fun, rel=1e-9)
    assert value(x) >= -ref.fun - 1e-9


def test_box_ascent_stops_at_its_goal():
    """A goal below the optimum ends the ascent early, at a point that reaches it."""
    rng = np.random.default_rng(5)
    R, s0, C = rng.normal(size=(300, 4)), rng.normal(size=4), 0.5
    value = lambda z, s: z.sum() - 0.5 * s @ s
    x, s = np.zeros(300), s0.copy()
    full = box_ascent(rows_of(R), s, x, C, 10_000, 0.0)
    goal = 0.5 * (value(np.zeros(300), s0) + value(x, s))
    x, s = np.zeros(300), s0.copy()
    early = box_ascent(rows_of(R), s, x, C, 10_000, 0.0, goal)
    assert early < full and value(x, s) >= goal


def test_gram_ascent_reaches_the_box_qp_optimum():
    """max c.x - 1/2 x'Qx over [0, C]^m with Q a signed rbf Gram matrix (positive
    semidefinite, with duplicated points: singular) against SLSQP's optimum."""
    rng = np.random.default_rng(6)
    X = rng.normal(size=(80, 3))
    X[40:50] = X[:10]  # duplicates: Q is singular
    y = np.where(rng.random(80) < 0.5, 1.0, -1.0)
    Q = Kernel("rbf", 0.5, 3, 0.0).matrix(X, X) * np.outer(y, y)
    c, C = 1.0 - 0.3 * rng.normal(size=80), 0.8
    x = np.zeros(80)
    passes = gram_ascent(Q, c, x, C, 10_000, 0.0)
    assert 1 < passes < 10_000 and np.all((x >= 0.0) & (x <= C))
    value = lambda z: c @ z - 0.5 * z @ Q @ z
    ref = minimize(
        lambda z: (-value(z), Q @ z - c),
        np.full(80, C / 2),
        jac=True,
        bounds=[(0.0, C)] * 80,
        method="SLSQP",
        options={"ftol": 1e-15, "maxiter": 2000},
    )
    assert value(x) == pytest.approx(-ref.fun, rel=1e-8)


def test_a_budget_model_s_refinement_ascends_the_kernel_dual_and_stays_a_bound(problem):
    """BSCA's model (no bias, 12 of 60 points as budget) is certified by the free-set ascent
    on the signed Gram matrix: below the exact optimum of its problem (SLSQP), at least as
    tight as without refinement and as the box least-squares fit that L-BFGS-B gives without
    the ascent."""
    X, y = problem
    C, gamma = 2.0, 0.3
    model = BSCA(C=C, gamma=gamma, budget=12, epochs=3, random_state=0).fit(X, y)
    Q = Kernel("rbf", gamma, 3, 0.0).matrix(X, X) * np.outer(y, y)
    a_star = exact_dual(Q, C)
    d_star = a_star.sum() - 0.5 * a_star @ Q @ a_star
    cert = model.certificate_
    assert cert.refined and cert.dual <= d_star * (1 + 1e-9) <= cert.primal * (1 + 1e-9)
    margins = y * model.decision_function(X)
    squared_l2, _ = model._regularizer_norms()
    form = model._formulation()
    plain = KernelImage(X, y, model._kernel(), model.support_vectors_, model.dual_coef_[0])
    looser = [
        certify(
            form,
            C,
            margins,
            0.5 * squared_l2,
            plain,
            model._solver_duals(y),
            refine=refine,
            tol=1e-3,
        ).dual
        for refine in (False, True)
    ]
    assert cert.dual >= max(looser) - 1e-12 * abs(cert.primal)
    # ||v(a)||^2 carried through the refinement from the base point's, against the product
    image = model._dual_image(X, y)
    base = form.loss.dual_candidate(margins, C)
    image.squared_norm(base)
    free = np.flatnonzero(np.abs(1.0 - margins) <= 0.3)
    refined = image.fit_free(base, free, C, L2(), balanced=False)
    assert np.array_equal(image._last[0], refined)  # known without a product
    c = refined * y
    K = Kernel("rbf", gamma, 3, 0.0).matrix(X, X)
    assert image.squared_norm(refined) == pytest.approx(c @ K @ c, rel=1e-10)


@pytest.mark.parametrize(
    "make",
    [
        lambda: Libsvm(C=2.0, kernel="rbf", gamma=0.3, tol=1e-6),
        lambda: ModifiedFrankWolfe(C=2.0, gamma=0.3, random_state=0),
    ],
    ids=["libsvm", "mfw"],
)
def test_a_models_own_dual_point_costs_no_kernel_product_and_the_same_bound(problem, make):
    """||w||^2 from the training rows' decision values, and ||v(a)||^2 of the solver's point
    that is the model's own, equal the kernel products over the support vectors."""
    X, y = problem
    model = make().fit(X, y)
    kernel = model._kernel()
    K = kernel.matrix(model.support_vectors_, model.support_vectors_)
    direct = model.dual_coef_[0] @ K @ model.dual_coef_[0]
    model._fit_decision = (X, model.decision_function(X))
    squared_l2, _ = model._regularizer_norms()
    assert squared_l2 == pytest.approx(direct, rel=1e-12)
    image = model._dual_image(X, y)
    assert image._model is not None
    a = np.zeros(len(y))
    a[model.support_] = np.abs(model.dual_coef_[0])
    constant = 0.0 if image.bias_scale is None else (image.bias_scale * (a * y).sum()) ** 2
    assert image.squared_norm(a) == pytest.approx(direct + constant, rel=1e-12)
    shifted = a.copy()
    shifted[model.support_[0]] *= 0.5  # not the model's point: the kernel product
    c = (shifted * y)[shifted > 0]
    Kn = kernel.matrix(X[shifted > 0], X[shifted > 0])
    constant = 0.0 if image.bias_scale is None else (image.bias_scale * c.sum()) ** 2
    assert image.squared_norm(shifted) == pytest.approx(c @ Kn @ c + constant, rel=1e-12)
    assert model._support_rows(X + 1.0) is None  # other rows: the kernel products
