"""The NESVM estimator: spec 000 §7 properties 10 (reference solvers), 14 (invariances) and 15
(degenerate inputs); refusals, trace columns and configs (scikit-learn conformance:
test_estimator_conformance.py)."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import linprog
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import SVC, LinearSVC

from support.configs import composed
from svmlab.app.config.schema import build_estimator
from svmlab.data import load as load_dataset
from svmlab.errors import ConfigError, DataError
from svmlab.solvers.nesvm import NESVM, nesterov
from svmlab.solvers.nesvm.problem import SmoothedSVM
from test_solvers_nesvm_math import make_problem, rbf_matrix


def hinge_primal(X, y, w, b, C):
    return 0.5 * w @ w + C * np.maximum(0, 1 - y * (X @ w + b)).sum()


@pytest.fixture(scope="module")
def data():
    return make_problem(n=150, p=8, seed=11)


def test_csvm_without_bias_agrees_with_linearsvc(data):
    X, y = data
    C, mu = 0.5, 1.0
    ref = (
        LinearSVC(C=C, loss="hinge", fit_intercept=False, dual=True, tol=1e-10, max_iter=10**6)
        .fit(X, y)
        .coef_[0]
    )
    F_star = hinge_primal(X, y, ref, 0.0, C)
    model = NESVM(C=C, mu=mu, stop="grad", eps=1e-12, lipschitz="tight").fit(X, y)
    w = model.coef_[0]
    problem = SmoothedSVM(X, y, C, "csvm", mu)
    assert problem.evaluate(w).smoothed <= problem.evaluate(ref).smoothed + 1e-9
    F = model.objectives(X, y)["objective_hinge_l2"]
    assert F_star - 1e-9 <= F <= F_star + C * mu / 2 * problem.a.sum() + 1e-9
    exact = NESVM(
        C=C, mu=5.0, homotopy="geometric", mu_target=1e-4, stop="grad", eps=1e-12, lipschitz="tight"
    ).fit(X, y)
    assert abs(exact.objectives(X, y)["objective_hinge_l2"] - F_star) / F_star < 1e-3
    assert np.linalg.norm(exact.coef_[0] - ref) < 1e-2 * np.linalg.norm(ref)
    assert exact.trace_.columns()["dual_gap"][-1] < 1e-3 * F_star


def test_csvm_with_bias_agrees_with_linear_svc(data):
    X, y = data
    C, mu = 0.5, 0.5
    ref = SVC(kernel="linear", C=C, tol=1e-10).fit(X, y)
    F_star = hinge_primal(X, y, ref.coef_[0], ref.intercept_[0], C)
    model = NESVM(C=C, mu=mu, fit_intercept=True, stop="rel", eps=1e-12, lipschitz="tight").fit(
        X, y
    )
    problem = SmoothedSVM(X, y, C, "csvm", mu, bias=True)
    theta_ref = np.append(ref.coef_[0], ref.intercept_[0])
    theta = np.append(model.coef_[0], model.intercept_[0])
    assert problem.evaluate(theta).smoothed <= problem.evaluate(theta_ref).smoothed + 1e-7
    F = model.objectives(X, y)["objective_hinge_l2"]
    assert F_star - 1e-7 <= F <= F_star + C * mu / 2 * problem.a.sum() + 1e-7


def test_kernel_csvm_with_bias_agrees_with_precomputed_svc(data):
    X, y = data
    K = rbf_matrix(X)
    C, mu = 2.0, 0.2
    ref = SVC(kernel="precomputed", C=C, tol=1e-10).fit(K, y)
    alpha = np.zeros(len(y))
    alpha[ref.support_] = ref.dual_coef_[0]
    F_star = (
        0.5 * alpha @ K @ alpha + C * np.maximum(0, 1 - y * (K @ alpha + ref.intercept_[0])).sum()
    )
    model = NESVM(
        C=C, mu=mu, kernel="rbf", gamma=1.0 / X.shape[1], fit_intercept=True, stop="rel", eps=1e-12
    ).fit(X, y)
    F = model.objectives(X, y)["objective_hinge_l2"]
    allowance = C * mu / 2 * len(y)  # a_i = 1 for the RBF kernel with a bias
    assert F_star - 1e-6 <= F <= F_star + allowance
    problem = SmoothedSVM(K, y, C, "csvm", mu, bias=True, kernel=True)
    theta = np.zeros(len(y) + 1)
    theta[model.support_], theta[-1] = model.dual_coef_[0], model.intercept_[0]
    theta_ref = np.append(alpha, ref.intercept_[0])
    assert problem.evaluate(theta).smoothed <= problem.evaluate(theta_ref).smoothed + 1e-7
    np.testing.assert_allclose(model.decision_function(X), K @ theta[:-1] + theta[-1], rtol=1e-10)


def lp_svm_optimum(X, y, C):
    """min 1'(w+ + w-) + C 1'xi  s.t.  y_i (X_i (w+ - w-) + b) >= 1 - xi_i,  w+-, xi >= 0."""
    n, p = X.shape
    cost = np.concatenate([np.ones(2 * p), [0.0], C * np.ones(n)])
    Z = y[:, None] * X
    A = -np.hstack([Z, -Z, y[:, None], np.eye(n)])
    bounds = [(0, None)] * (2 * p) + [(None, None)] + [(0, None)] * n
    return linprog(cost, A_ub=A, b_ub=-np.ones(n), bounds=bounds, method="highs").fun


def test_lpsvm_agrees_with_linprog(data):
    X, y = data
    C, mu, nu = 0.3, 0.1, 0.2
    F_star = lp_svm_optimum(X, y, C)
    model = NESVM(
        C=C,
        model="lpsvm",
        mu=mu,
        nu=nu,
        fit_intercept=True,
        stop="rel",
        eps=1e-12,
        lipschitz="tight",
    ).fit(X, y)
    problem = SmoothedSVM(X, y, C, "lpsvm", mu, nu, bias=True)
    allowance = X.shape[1] * mu / 2 + C * nu / 2 * problem.a.sum()
    F = model.objectives(X, y)["objective_hinge_l1"]
    assert F_star - 1e-7 <= F <= F_star + allowance
    exact = NESVM(
        C=C,
        model="lpsvm",
        fit_intercept=True,
        homotopy="geometric",
        mu_target=1e-4,
        nu_target=1e-4,
        stop="rel",
        eps=1e-12,
        lipschitz="tight",
    ).fit(X, y)
    assert abs(exact.objectives(X, y)["objective_hinge_l1"] - F_star) / F_star < 1e-3


@pytest.mark.parametrize("sparse", [False, True])
def test_lssvm_matches_the_closed_form(data, sparse):
    X, y = data
    C = 0.7
    w = np.linalg.solve(np.eye(X.shape[1]) + 2 * C * X.T @ X, 2 * C * X.T @ y)  # Z'Z = X'X
    model = NESVM(C=C, model="lssvm", stop="grad", eps=1e-16).fit(
        sp.csr_matrix(X) if sparse else X, y
    )
    np.testing.assert_allclose(model.coef_[0], w, rtol=1e-6)
    assert "objective_squared_l2" in model.objectives(X, y)
    assert set(model.trace_.columns()) == {
        "iteration",
        "time_s",
        "objective_squared_l2",
        "grad_norm",
    }


def fixed_iterations(X, y, iterations=60, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return NESVM(eps=1e-300, max_iter=iterations, **params).fit(X, y)


@pytest.mark.parametrize(
    "params",
    [{}, {"model": "lpsvm", "fit_intercept": True}, {"model": "lssvm", "fit_intercept": True}],
    ids=str,
)
def test_permutation_sign_flip_and_sparse_input_invariances(data, params):
    X, y = data
    base = fixed_iterations(X, y, **params)
    order = np.random.default_rng(12).permutation(len(y))
    permuted = fixed_iterations(X[order], y[order], **params)
    np.testing.assert_allclose(permuted.coef_, base.coef_, rtol=1e-8, atol=1e-10)
    flipped = fixed_iterations(-X, -y, **params)  # same Z = YX; the bias changes sign
    np.testing.assert_allclose(flipped.coef_, base.coef_, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(flipped.intercept_, -base.intercept_, atol=1e-12)
    # the data pass is bitwise the same; a 'tight' L (scipy vs NumPy products) may differ by ulps,
    # which the adaptive step's curvature estimates carry on (to ~1e-10 in 60 updates)
    sparse = fixed_iterations(sp.csr_matrix(X), y, **params)
    np.testing.assert_allclose(sparse.coef_, base.coef_, rtol=1e-9, atol=1e-12)
    for name, values in base.trace_.columns().items():
        if name != "time_s":
            np.testing.assert_allclose(sparse.trace_.columns()[name], values, rtol=1e-9, atol=1e-12)


def test_zero_rows_give_finite_values():
    X, y = make_problem(n=60, p=5)
    X[::4] = 0.0
    for bias in (False, True):
        problem = SmoothedSVM(X, y, 1.0, "csvm", 5.0, bias=bias)
        ev = problem.evaluate(np.zeros(problem.dim))
        assert np.isfinite(ev.smoothed) and np.all(np.isfinite(ev.grad))
        model = NESVM(fit_intercept=bias, lipschitz="tight").fit(X, y)
        assert np.all(np.isfinite(model.coef_)) and model.converged_
    assert not bias or problem.a.min() == 1.0
    # a zero row without bias has m_i = 1 always: exact hinge 1, so F_mu counts 1 for it
    problem = SmoothedSVM(np.zeros((1, 3)), np.ones(1), 2.0, "csvm", 5.0)
    assert problem.evaluate(np.zeros(3)).smoothed == 2.0


def test_one_class_n_one_and_zero_c():
    X, y = make_problem(n=40, p=4)
    ones = np.ones(40)
    problem = SmoothedSVM(X, ones, 1.0, "csvm", 1.0, bias=True)
    theta, _, converged = nesterov(
        problem.evaluate, np.zeros(5), problem.lipschitz("tight"), 1e-9, "rel"
    )
    assert converged and np.all(X @ theta[:-1] + theta[-1] > 0)
    single = SmoothedSVM(X[:1], ones[:1], 1.0, "csvm", 1.0)
    theta, _, converged = nesterov(
        single.evaluate, np.zeros(4), single.lipschitz("tight"), 1e-12, "rel"
    )
    x = X[0]
    u = 1.0 / (single.a[0] + x @ x)  # n = 1, C = mu = 1: w = C u x with m = 1 - C u r = mu a u
    assert converged and 0 < u < 1
    np.testing.assert_allclose(theta, u * x, rtol=1e-6)
    with pytest.raises(DataError, match="1 class"):
        NESVM().fit(X, ones)
    zero = NESVM(C=0.0).fit(X, y)
    assert zero.n_iter_ == 1 and not zero.coef_.any() and zero.converged_


def test_trace_columns_by_model_and_kernel(data):
    X, y = data
    expected = {
        ("csvm", False, "linear"): {
            "objective_hinge_l2",
            "objective_smoothed",
            "grad_norm",
            "mu",
            "dual_gap",
        },
        ("csvm", True, "linear"): {"objective_hinge_l2", "objective_smoothed", "grad_norm", "mu"},
        ("lpsvm", False, "linear"): {
            "objective_hinge_l1",
            "objective_smoothed",
            "grad_norm",
            "mu",
            "nu",
        },
        ("csvm", True, "poly"): {"objective_hinge_l2", "objective_smoothed", "grad_norm", "mu"},
    }
    for (model, bias, kernel), columns in expected.items():
        fitted = NESVM(model=model, fit_intercept=bias, kernel=kernel, max_iter=3000).fit(X, y)
        trace = fitted.trace_.columns()
        certified = f"rel_gap_{fitted._formulation().name}"  # stop='gap' (the default)
        assert set(trace) == columns | {"iteration", "time_s", certified}
        true_name = "objective_hinge_l1" if model == "lpsvm" else "objective_hinge_l2"
        assert trace[true_name][-1] == pytest.approx(fitted.objectives(X, y)[true_name], rel=1e-9)
        np.testing.assert_array_equal(trace["iteration"], np.arange(fitted.n_iter_ + 1))


@pytest.mark.parametrize(
    "params, message",
    [
        ({"kernel": "rbf", "max_kernel_gib": 1e-6}, "150 x 150 kernel matrix"),
        ({"model": "lpsvm", "kernel": "rbf"}, "supports kernel='linear' only"),
        ({"model": "lssvm", "lipschitz": "paper"}, "Eq.56"),
        ({"stop": "grad", "fit_intercept": True}, "stop='grad'"),
        ({"stop": "gap", "return_iterate": "y"}, "return_iterate='w'"),
    ],
)
def test_refusals_name_the_problem(data, params, message):
    X, y = data
    with pytest.raises(ConfigError, match=message):
        NESVM(**params).fit(X, y)


def test_lipschitz_auto_is_the_tight_constant_and_the_paper_preset_keeps_eq21():
    for model in ("csvm", "lpsvm", "lssvm"):
        assert NESVM(model=model).lipschitz_mode() == "tight"
    assert NESVM(kernel="rbf").lipschitz_mode() == "tight"
    assert NESVM(lipschitz="trace").lipschitz_mode() == "trace"
    assert build_estimator(composed("solver=nesvm_paper")).lipschitz_mode() == "paper"


def test_solver_configs_build_estimators():
    estimator = build_estimator(composed("solver=nesvm", "kernel=rbf", "kernel.gamma=0.5"))
    assert isinstance(estimator, NESVM) and (estimator.kernel, estimator.gamma) == ("rbf", 0.5)
    assert (estimator.mu, estimator.eps, estimator.stop, estimator.homotopy, estimator.step) == (
        5.0,
        1e-2,
        "gap",
        "geometric",
        "adaptive",
    )
    paper = build_estimator(composed("solver=nesvm_paper"))
    assert (paper.mu, paper.eps, paper.stop, paper.homotopy, paper.step) == (
        5.0,
        1e-3,
        "paper",
        "off",
        "fixed",
    )
    preset = build_estimator(composed("solver=nesvm_homotopy", "solver.C=10"))
    assert (preset.homotopy, preset.mu, preset.mu_target, preset.C) == (
        "geometric",
        5.0,
        1e-2,
        10.0,
    )
    with pytest.raises(ConfigError, match="model"):
        build_estimator(composed("solver=nesvm", "solver.model=svm"))


def test_experiment_preset_composes_the_paper_sweep():
    cfg = composed("+experiment=nesvm_adult", hydra=True)
    params = cfg.hydra.sweeper.params
    assert params.solver.split(",") == [
        "nesvm_paper",
        "liblinear_hinge_nesvm",
        "libsvm_capped",
        "pegasos_nesvm",
        "nesvm",
        "nesvm_plain",
    ]
    # the paper's tolerance for every baseline (section IV), NESVM without continuation
    for solver, tol in (
        ("liblinear_hinge_nesvm", 1e-3),
        ("pegasos_nesvm", 1e-3),
        ("libsvm_capped", 1e-3),
    ):
        assert build_estimator(composed("+experiment=nesvm_adult", f"solver={solver}")).tol == tol
    plain = build_estimator(composed("+experiment=nesvm_adult", "solver=nesvm_plain"))
    assert (plain.homotopy, plain.mu, plain.stop, plain.eps) == ("off", 0.01, "gap", 0.01)
    assert params.dataset.split(",") == ["a1a", "a2a", "a3a", "a9a"]
    assert [float(c) for c in params["solver.C"].split(",")] == [10.0**k for k in range(-3, 4)]
    assert params.seed == "range(10)"
    assert cfg.kernel.name == "linear" and cfg.tracking.experiment == "nesvm_adult"


@pytest.mark.parametrize("C", [0.01, 1.0])
def test_paper_settings_on_a1a_match_liblinear_accuracy(shared_libsvm, C):
    d = load_dataset("a1a", data_dir=shared_libsvm)
    with pytest.warns(ConvergenceWarning, match="stop='paper' rule on F_mu"):
        model = NESVM(
            C=C, stop="paper", eps=1e-3, homotopy="off", lipschitz="paper", step="fixed"
        ).fit(d.X_train, d.y_train)  # mu = 5, eps = 1e-3: the paper's
        # L, step and rule
    reference = LinearSVC(C=C, loss="hinge", fit_intercept=False, tol=1e-6, max_iter=10**5).fit(
        d.X_train, d.y_train
    )
    accuracy, ref_accuracy = model.score(d.X_test, d.y_test), reference.score(d.X_test, d.y_test)
    assert not model.converged_ and abs(accuracy - ref_accuracy) < 0.01
    F_ref = hinge_primal(d.X_train, np.where(d.y_train > 0, 1.0, -1.0), reference.coef_[0], 0.0, C)
    F = model.objectives(d.X_train, d.y_train)["objective_hinge_l2"]
    assert F_ref <= F <= F_ref + C * 5.0 / 2 * d.X_train.shape[0]  # a_i = 1: binary features


@pytest.mark.parametrize("max_iter, eps", [(30, 1e-3), (1000, 5e-4), (1000, 1e-3)])
def test_gap_rule_converges_exactly_when_the_final_certificate_meets_eps(data, max_iter, eps):
    """stop='gap': converged_ states the certified gap of the returned iterate, refined where
    the quick in-loop certificates fell short (at 1000 updates the refined gap is about 6.5e-4,
    the quick ones never below 2.8e-2)."""
    X, y = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est = NESVM(
            C=1.0,
            eps=eps,
            max_iter=max_iter,
            homotopy="off",
            mu=0.01,
            lipschitz="paper",
            step="fixed",
        ).fit(X, y)
    quick = est.trace_.columns()["rel_gap_hinge_l2"]
    assert est.converged_ == (est.certificate_.rel_gap <= eps)
    assert est.converged_ == ((max_iter, eps) == (1000, 1e-3)) and np.nanmin(quick) > eps
