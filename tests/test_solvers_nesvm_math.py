"""NESVM smoothing and oracle, spec 000 §7 properties 1-6, 11 and 14 (numba = NumPy reference).

The NumPy functions below are written from the spec's formulas, independently of the numba code;
the other NESVM test modules import them.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from svmlab.estimator.kernels import Kernel
from svmlab.numerics.losses import huber, smoothed_hinge
from svmlab.solvers.nesvm.problem import SmoothedSVM, lambda_max_gram

MODELS = ("csvm", "lpsvm", "lssvm")


def make_problem(n=120, p=8, seed=0, sparse=False, correlated=False):
    """Gaussian classes with some zeroed entries (so CSR differs from dense), labels in {-1, +1}."""
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    X = rng.normal(size=(n, p)) + 0.7 * y[:, None] * rng.normal(size=p)
    if correlated:
        X = 1.0 + 0.05 * rng.normal(size=(n, p))  # nearly parallel rows
    X[rng.random((n, p)) < 0.3] = 0.0
    return (sp.csr_matrix(X) if sparse else X), y


def rbf_matrix(X):
    return Kernel("rbf", 1.0 / X.shape[1], 3, 0.0).matrix(X, X)


def np_hinge(m, t):
    """Eq.10 (corrected thresholds) for vectors."""
    t = np.broadcast_to(t, np.shape(m))
    safe = np.where(t > 0, t, 1.0)
    return np.where(m <= 0, 0.0, np.where(m >= t, m - t / 2, m * m / (2 * safe)))


def np_huber(w, mu):
    """Eq.28."""
    return np.where(np.abs(w) >= mu, np.abs(w) - mu / 2, w * w / (2 * mu))


def np_objective(X, y, C, model, mu, nu, bias, theta, K=None):
    """(F_mu, F, grad F_mu) from the spec's formulas with dense NumPy (X may be a kernel K)."""
    X = X.toarray() if sp.issparse(X) else X
    w, b = (theta[:-1], theta[-1]) if bias else (theta, 0.0)
    Xh = np.column_stack([X, np.ones(len(y))]) if bias else X
    a = np.abs(Xh).max(axis=1)
    m = 1 - y * (X @ w + b)
    if model == "lssvm":
        reg = 0.5 * w @ (K @ w if K is not None else w)
        grad = np.append(K @ w if K is not None else w, 0.0)[: len(theta)] - 2 * C * Xh.T @ (y * m)
        value = reg + C * m @ m
        return value, value, grad
    t = (nu if model == "lpsvm" else mu) * a
    u = np.clip(m / np.where(t > 0, t, 1.0), 0, 1)
    u[t == 0] = m[t == 0] > 0
    loss_grad = -C * Xh.T @ (y * u)
    if model == "lpsvm":
        reg_s, reg, reg_grad = np_huber(w, mu).sum(), np.abs(w).sum(), np.clip(w / mu, -1, 1)
    else:
        reg_grad = K @ w if K is not None else w
        reg_s = reg = 0.5 * w @ reg_grad
    grad = loss_grad + np.append(reg_grad, 0.0)[: len(theta)]
    return reg_s + C * np_hinge(m, t).sum(), reg + C * np.maximum(0, m).sum(), grad


MARGIN_GRID = np.concatenate([np.linspace(-3, 6, 181), [0.0, 2.5, 2.5 - 1e-12, 1e-12]])


@pytest.mark.parametrize("t", [2.5, 0.3, 1.0])
def test_smoothed_hinge_closed_form_is_the_maximum_of_eq5(t):
    u_grid = np.linspace(0, 1, 20001)
    for m in MARGIN_GRID:
        value, u = smoothed_hinge(m, t)
        brute = np.max(u_grid * m - 0.5 * t * u_grid**2)
        assert value == pytest.approx(brute, abs=1e-8)
        assert u == pytest.approx(np.clip(m / t, 0, 1), abs=1e-15)
        assert value == pytest.approx(u * m - 0.5 * t * u * u, abs=1e-14)  # Eq.6 plugged in
        assert value == pytest.approx(np_hinge(np.array([m]), t)[0], abs=1e-14)


@pytest.mark.parametrize("t", [2.5, 0.3])
def test_smoothed_hinge_and_its_derivative_are_continuous_at_the_zone_boundaries(t):
    for boundary in (0.0, t):
        left, right = smoothed_hinge(boundary - 1e-9, t), smoothed_hinge(boundary + 1e-9, t)
        assert abs(left[0] - right[0]) < 1e-8 and abs(left[1] - right[1]) < 1e-8
    h = 1e-6
    for m in MARGIN_GRID:
        numeric = (smoothed_hinge(m + h, t)[0] - smoothed_hinge(m - h, t)[0]) / (2 * h)
        assert numeric == pytest.approx(smoothed_hinge(m, t)[1], abs=1e-6)


def test_theorem_1_hinge_sandwich_with_equality_beyond_the_zone():
    rng = np.random.default_rng(1)
    X, y = make_problem()
    a = np.abs(X).max(axis=1)
    mu = 0.8
    for _ in range(20):
        m = 1 - y * (X @ rng.normal(scale=2.0, size=X.shape[1]))
        smooth = np.array([smoothed_hinge(mi, mu * ai)[0] for mi, ai in zip(m, a)])
        hinge = np.maximum(0, m)
        assert np.all(smooth <= hinge + 1e-14)
        assert np.all(hinge <= smooth + mu * a / 2 + 1e-14)
        far = m >= mu * a
        np.testing.assert_allclose((hinge - smooth)[far], (mu * a / 2)[far], rtol=1e-12)
        assert np.all(smooth[m <= 0] == 0) and np.all(hinge[m <= 0] == 0)


def test_theorem_2_huber_sandwich_and_eq28_equals_eq23_at_eq24():
    mu = 0.7
    w = np.linspace(-3, 3, 601)
    value_sum, u = huber(w, mu)
    per = np_huber(w, mu)
    assert value_sum == pytest.approx(per.sum(), rel=1e-13)
    np.testing.assert_allclose(u, np.clip(w / mu, -1, 1), atol=1e-15)
    np.testing.assert_allclose(per, w * u - 0.5 * mu * u * u, atol=1e-14)
    assert np.all(per <= np.abs(w) + 1e-15) and np.all(np.abs(w) <= per + mu / 2 + 1e-15)
    far = np.abs(w) >= mu
    np.testing.assert_allclose((np.abs(w) - per)[far], mu / 2, rtol=1e-12)


@pytest.mark.parametrize("bias", [False, True])
def test_whole_objective_sandwich(bias):
    X, y = make_problem()
    rng = np.random.default_rng(2)
    C, mu, nu = 0.7, 1.3, 0.4
    for model in ("csvm", "lpsvm"):
        problem = SmoothedSVM(X, y, C, model, mu, nu, bias)
        p = X.shape[1]
        allowance = (
            C * nu / 2 * problem.a.sum() + p * mu / 2
            if model == "lpsvm"
            else C * mu / 2 * problem.a.sum()
        )
        for _ in range(10):
            ev = problem.evaluate(rng.normal(size=problem.dim))
            assert ev.smoothed <= ev.true + 1e-10
            assert ev.true <= ev.smoothed + allowance + 1e-10


def finite_difference(f, theta, h=1e-6):
    return np.array([(f(theta + h * e) - f(theta - h * e)) / (2 * h) for e in np.eye(len(theta))])


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("model", MODELS)
def test_gradient_matches_central_differences(model, bias):
    X, y = make_problem(n=60, p=6)
    problem = SmoothedSVM(X, y, 0.9, model, 1.5, 0.6, bias)
    rng = np.random.default_rng(3)
    for _ in range(3):
        theta = rng.normal(scale=0.5, size=problem.dim)
        numeric = finite_difference(lambda t: problem.evaluate(t).smoothed, theta)
        grad = problem.evaluate(theta).grad
        np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-6 * np.abs(grad).max())


@pytest.mark.parametrize("bias", [False, True])
def test_kernel_gradient_in_alpha_and_b_matches_central_differences(bias):
    X, y = make_problem(n=50, p=5)
    K = rbf_matrix(X)
    problem = SmoothedSVM(K, y, 2.0, "csvm", 0.5, bias=bias, kernel=True)
    theta = np.random.default_rng(4).normal(scale=0.3, size=problem.dim)
    numeric = finite_difference(lambda t: problem.evaluate(t).smoothed, theta)
    np.testing.assert_allclose(problem.evaluate(theta).grad, numeric, rtol=1e-6, atol=1e-7)


def lipschitz_ratio(problem, rng, pairs=200):
    """max ||grad(w1) - grad(w2)|| / ||w1 - w2|| over random pairs, many straddling zone edges."""
    worst = 0.0
    for i in range(pairs):
        w1 = rng.normal(scale=1.0 if i % 2 else 0.05, size=problem.dim)
        w2 = w1 + rng.normal(scale=10.0 ** rng.uniform(-4, 0), size=problem.dim)
        diff = problem.evaluate(w1).grad - problem.evaluate(w2).grad
        worst = max(worst, np.linalg.norm(diff) / np.linalg.norm(w1 - w2))
    return worst


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("model", MODELS)
def test_every_lipschitz_mode_bounds_the_gradient_change(model, bias):
    X, y = make_problem(n=80, p=6)
    problem = SmoothedSVM(X, y, 1.7, model, 0.3, 0.2, bias)
    modes = ("trace", "tight") if model == "lssvm" else ("paper", "trace", "tight")
    L = {mode: problem.lipschitz(mode) for mode in modes}
    observed = lipschitz_ratio(problem, np.random.default_rng(5))
    assert all(observed <= value for value in L.values())
    assert L["tight"] <= L["trace"] <= L.get("paper", np.inf)
    if model == "lssvm":  # a quadratic: 1 + 2C lambda_max(Xh'Xh) (lambda with its 1% safety)
        Xh = np.column_stack([X, np.ones(len(X))]) if bias else X
        gram_max = np.linalg.eigvalsh(Xh.T @ Xh)[-1]
        assert L["tight"] == pytest.approx(1 + 2 * 1.7 * 1.01 * gram_max, rel=1e-9)
        hessian = 2 * 1.7 * Xh.T @ Xh + np.diag([1.0] * X.shape[1] + [0.0] * bias)
        assert L["tight"] >= np.linalg.eigvalsh(hessian)[-1]


def test_kernel_lipschitz_modes_bound_the_gradient_change_and_need_lambda_max_of_k():
    X, y = make_problem(n=70, p=5)
    K = rbf_matrix(X)
    problem = SmoothedSVM(K, y, 0.05, "csvm", 5.0, bias=True, kernel=True)
    observed = lipschitz_ratio(problem, np.random.default_rng(6))
    L = {mode: problem.lipschitz(mode) for mode in ("paper", "trace", "tight")}
    assert all(observed <= value for value in L.values())
    reg, loss = problem.lipschitz_parts("tight")
    assert reg == pytest.approx(1.01 * np.linalg.eigvalsh(K)[-1], rel=1e-9)
    # The paper's "1 +" for the regulariser is no bound here: the quadratic part alone exceeds it.
    assert observed > 1.0 + problem.C * loss / problem.mu / 1.01


def test_paper_ls_svm_constant_eq56_is_exceeded_on_correlated_rows():
    """Documents the LS-SVM fix: 1 + 2C max_i ||X_i||^2 is not a Lipschitz constant."""
    X, y = make_problem(n=200, p=10, correlated=True)
    problem = SmoothedSVM(X, y, 1.0, "lssvm")
    reg, paper_loss = problem.lipschitz_parts("paper")
    paper_L = reg + 2 * problem.C * paper_loss
    assert paper_L == pytest.approx(1 + 2 * (np.square(X).sum(axis=1)).max())
    assert lipschitz_ratio(problem, np.random.default_rng(7), pairs=20) > 10 * paper_L


def test_duality_identity_and_weak_duality_for_csvm_without_bias():
    X, y = make_problem()
    problem = SmoothedSVM(X, y, 0.8, "csvm", 0.9)
    rng = np.random.default_rng(8)
    for _ in range(20):
        w = rng.normal(scale=0.5, size=problem.dim)
        ev = problem.evaluate(w)
        t = problem.hinge_width()
        u = np.clip((1 - y * (X @ w)) / t, 0, 1)
        assert ev.smoothed - problem.smoothed_dual(u) == pytest.approx(
            0.5 * ev.grad @ ev.grad, rel=1e-9
        )
        assert ev.dual_gap >= -1e-10  # D(C u(w)) <= F(w)


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("model", MODELS)
def test_numba_oracle_equals_the_numpy_reference_dense_and_sparse(model, bias):
    X, y = make_problem(n=90, p=7)
    theta = np.random.default_rng(9).normal(size=X.shape[1] + bias)
    expected = np_objective(X, y, 1.3, model, 0.7, 0.5, bias, theta)
    for data in (X, sp.csr_matrix(X)):
        ev = SmoothedSVM(data, y, 1.3, model, 0.7, 0.5, bias).evaluate(theta)
        np.testing.assert_allclose([ev.smoothed, ev.true], expected[:2], rtol=1e-12)
        np.testing.assert_allclose(ev.grad, expected[2], rtol=1e-11, atol=1e-12)


def test_numba_kernel_oracle_equals_the_numpy_reference():
    X, y = make_problem(n=60, p=5)
    K = rbf_matrix(X)
    theta = np.random.default_rng(10).normal(size=61)
    expected = np_objective(K, y, 0.6, "csvm", 0.9, 0.5, True, theta, K=K)
    ev = SmoothedSVM(K, y, 0.6, "csvm", 0.9, bias=True, kernel=True).evaluate(theta)
    np.testing.assert_allclose([ev.smoothed, ev.true], expected[:2], rtol=1e-12)
    np.testing.assert_allclose(ev.grad, expected[2], rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize(
    "p", [6, 120, 600]
)  # full eigvalsh, Lanczos on the Gram matrix, matrix-free
@pytest.mark.parametrize("bias", [False, True])
def test_lambda_max_of_the_weighted_gram_matrix_is_the_dense_eigenvalue(p, bias):
    """... and the same bits for dense and CSR X: NESVM's step 1/L then does not depend on the
    input format."""
    rng = np.random.default_rng(p)
    X = sp.random(400, p, density=0.05, random_state=p, format="csr")
    weights = rng.uniform(0.5, 2.0, 400)
    Xh = np.hstack([X.toarray(), np.ones((400, 1))]) if bias else X.toarray()
    expected = np.linalg.eigvalsh(Xh.T @ (Xh * weights[:, None]))[-1]
    sparse, dense = (lambda_max_gram(data, weights, bias) for data in (X, X.toarray()))
    assert sparse == dense
    assert sparse == pytest.approx(expected, rel=1e-8)
