"""Objective values against hand computation and against optima solved independently with scipy.

The references never use svmlab or scikit-learn's SVMs: the hinge-loss optimum is bracketed by a
primal QP (upper bound, evaluated at its (w, b)) and a dual QP made exactly feasible (lower bound),
both solved by SLSQP; the smooth squared-hinge problems are solved by L-BFGS-B.
"""

import numpy as np
import pytest
from scipy.optimize import minimize
from sklearn.datasets import make_classification
from sklearn.preprocessing import StandardScaler

from svmlab.estimator.objectives import primal_objectives
from svmlab.solvers.baselines import Liblinear, Libsvm

C = 0.7


def test_formulas_on_hand_computed_values():
    margins = np.array([2.0, 0.5, -1.0, 1.0])  # hinge losses 0, 0.5, 2, 0
    values = primal_objectives(margins, squared_l2_norm=3.0, l1_norm=2.0, C=2.0)
    assert values == {
        "objective_hinge_l2": 0.5 * 3.0 + 2.0 * 2.5,
        "objective_hinge_l1": 2.0 + 2.0 * 2.5,
        "objective_squared_hinge_l2": 0.5 * 3.0 + 2.0 * 4.25,
        "objective_squared_hinge_l1": 2.0 + 2.0 * 4.25,
    }
    assert set(primal_objectives(margins, 3.0, None, 2.0)) == {
        "objective_hinge_l2",
        "objective_squared_hinge_l2",
    }


@pytest.fixture(scope="module")
def data():
    """Small, noisy, not centred (so that the bias matters), labels in {-1, +1}."""
    X, y = make_classification(
        n_samples=60, n_features=5, n_informative=3, flip_y=0.1, random_state=0
    )
    return StandardScaler().fit_transform(X) + 0.7, np.where(y == 1, 1.0, -1.0)


def gram(X, kernel, gamma=0.3, degree=3, coef0=1.0):
    """Kernel matrix written out from the definitions (no sklearn.metrics)."""
    if kernel == "linear":
        return X @ X.T
    if kernel == "rbf":
        return np.exp(-gamma * ((X[:, None, :] - X[None, :, :]) ** 2).sum(axis=2))
    return (gamma * X @ X.T + coef0) ** degree


def hinge_primal_upper_bound(X, y):
    """min 1/2||w||^2 + C sum xi, y(Xw + b) >= 1 - xi, xi >= 0; the value at its (w, b)."""
    n, d = X.shape
    A = np.hstack([y[:, None] * X, y[:, None], np.eye(n)])
    result = minimize(
        lambda z: 0.5 * z[:d] @ z[:d] + C * z[d + 1 :].sum(),
        np.r_[np.zeros(d + 1), np.full(n, 2.0)],
        jac=lambda z: np.r_[z[:d], 0.0, np.full(n, C)],
        method="SLSQP",
        constraints=[{"type": "ineq", "fun": lambda z: A @ z - 1.0, "jac": lambda z: A}],
        bounds=[(None, None)] * (d + 1) + [(0, None)] * n,
        options={"ftol": 1e-15, "maxiter": 1000},
    )
    w, b = result.x[:d], result.x[d]
    return 0.5 * w @ w + C * np.maximum(0.0, 1.0 - y * (X @ w + b)).sum()


def hinge_dual_lower_bound(K, y):
    """max sum a - 1/2 a^T Q a, 0 <= a <= C, y.a = 0; the value at a made exactly feasible."""
    Q = y[:, None] * K * y[None, :]
    result = minimize(
        lambda a: 0.5 * a @ Q @ a - a.sum(),
        np.zeros(len(y)),
        jac=lambda a: Q @ a - 1.0,
        method="SLSQP",
        bounds=[(0, C)] * len(y),
        constraints=[{"type": "eq", "fun": lambda a: y @ a, "jac": lambda a: y}],
        options={"ftol": 1e-15, "maxiter": 1000},
    )
    a = np.clip(result.x, 0.0, C)
    positive, negative = a[y > 0].sum(), a[y < 0].sum()
    a[(y > 0) if positive > negative else (y < 0)] *= min(positive, negative) / max(
        positive, negative
    )
    return a.sum() - 0.5 * a @ Q @ a


def libsvm_dual_value(model):
    """sum alpha - 1/2 ||w||^2 with the model's RKHS norm (dual_coef_ = y alpha)."""
    return np.abs(model.dual_coef_).sum() - 0.5 * model._regularizer_norms()[0]


def test_libsvm_linear_reaches_the_hinge_l2_optimum(data):
    X, y = data
    upper, lower = hinge_primal_upper_bound(X, y), hinge_dual_lower_bound(gram(X, "linear"), y)
    assert lower <= upper and upper - lower <= 1e-12 * upper
    model = Libsvm(C=C, kernel="linear", tol=1e-10).fit(X, y)
    # The primal hinge value is first-order sensitive to an error in alpha (through w), the dual
    # value only second-order: so the primal is checked at 1e-6, the dual at 1e-12.
    primal = model.objectives(X, y)["objective_hinge_l2"]
    assert lower * (1 - 1e-12) <= primal == pytest.approx(upper, rel=1e-6)
    assert libsvm_dual_value(model) == pytest.approx(lower, rel=1e-12)


@pytest.mark.parametrize("kernel", ["rbf", "poly"])
def test_libsvm_kernel_reaches_the_hinge_l2_optimum_in_the_rkhs_norm(data, kernel):
    X, y = data
    lower = hinge_dual_lower_bound(gram(X, kernel), y)
    model = Libsvm(C=C, kernel=kernel, gamma=0.3, degree=3, coef0=1.0, tol=1e-10).fit(X, y)
    assert libsvm_dual_value(model) == pytest.approx(lower, rel=1e-12)
    objectives = model.objectives(X, y)
    assert set(objectives) == {"objective_hinge_l2", "objective_squared_hinge_l2"}
    assert lower * (1 - 1e-12) <= objectives["objective_hinge_l2"] == pytest.approx(lower, rel=1e-6)


def test_rkhs_norm_of_the_linear_kernel_is_the_euclidean_norm_of_coef(data):
    X, y = data
    model = Libsvm(C=C, kernel="linear").fit(X, y)
    w = model.coef_[0]
    squared_l2, l1 = model._regularizer_norms()
    assert squared_l2 == pytest.approx(w @ w, rel=1e-12)
    assert l1 == pytest.approx(np.abs(w).sum(), rel=1e-15)


def squared_hinge_l2_optimum(X, y, intercept):
    """min 1/2||w||^2 + C sum max(0, 1 - y(Xw + b))^2 (b = 0 without intercept) by L-BFGS-B."""
    d = X.shape[1]

    def value_and_gradient(z):
        w, b = z[:d], (z[d] if intercept else 0.0)
        r = np.maximum(0.0, 1.0 - y * (X @ w + b))
        grad_b = [-2.0 * C * (y * r).sum()] if intercept else []
        return 0.5 * w @ w + C * r @ r, np.r_[w - 2.0 * C * X.T @ (y * r), grad_b]

    return minimize(
        value_and_gradient,
        np.zeros(d + intercept),
        jac=True,
        method="L-BFGS-B",
        options={"gtol": 1e-12, "ftol": 0.0, "maxiter": 10_000},
    )


def squared_hinge_l1_optimum(X, y):
    """min ||w||_1 + C sum max(0, 1 - y Xw)^2, as a smooth problem in w = u - v, u, v >= 0."""
    d = X.shape[1]

    def value_and_gradient(z):
        r = np.maximum(0.0, 1.0 - y * (X @ (z[:d] - z[d:])))
        grad_w = -2.0 * C * X.T @ (y * r)
        return z.sum() + C * r @ r, np.r_[1.0 + grad_w, 1.0 - grad_w]

    return minimize(
        value_and_gradient,
        np.zeros(2 * d),
        jac=True,
        method="L-BFGS-B",
        bounds=[(0.0, None)] * (2 * d),
        options={"gtol": 1e-13, "ftol": 0.0},
    )


@pytest.mark.parametrize("dual", [True, False])
def test_liblinear_squared_hinge_l2_without_intercept_reaches_the_optimum(data, dual):
    X, y = data
    reference = squared_hinge_l2_optimum(X, y, intercept=False)
    model = Liblinear(
        C=C, fit_intercept=False, dual=dual, tol=1e-10, max_iter=10**6, random_state=0
    ).fit(X, y)
    assert model.objectives(X, y)["objective_squared_hinge_l2"] == pytest.approx(
        reference.fun, rel=1e-10
    )
    np.testing.assert_allclose(model.coef_[0], reference.x, atol=1e-6)


def test_liblinear_squared_hinge_l1_without_intercept_reaches_the_optimum(data):
    X, y = data
    reference = squared_hinge_l1_optimum(X, y)
    model = Liblinear(
        C=C, penalty="l1", fit_intercept=False, tol=1e-10, max_iter=10**6, random_state=0
    ).fit(X, y)
    assert model.objectives(X, y)["objective_squared_hinge_l1"] == pytest.approx(
        reference.fun, rel=1e-10
    )


def test_liblinear_regularised_bias_is_evaluated_not_minimised(data):
    """LIBLINEAR penalises (b / intercept_scaling)^2: above the optimum with an unregularised b,
    and converging to it as intercept_scaling grows."""
    X, y = data
    optimum = squared_hinge_l2_optimum(X, y, intercept=True).fun

    def objective(intercept_scaling):
        model = Liblinear(
            C=C, dual=False, intercept_scaling=intercept_scaling, tol=1e-12, random_state=0
        ).fit(X, y)
        return model.objectives(X, y)["objective_squared_hinge_l2"]

    assert objective(1.0) > optimum * (1 + 1e-5)
    assert objective(1000.0) == pytest.approx(optimum, rel=1e-10)
