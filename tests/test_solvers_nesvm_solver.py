"""The NESVM iteration, spec 000 §7 properties 7 (first iterate), 8 (Theorem 3), 9 (rate bound),
12 (stopping rule) and 13 (homotopy)."""

import warnings

import numpy as np
import pytest
from scipy.optimize import minimize
from sklearn.exceptions import ConvergenceWarning

from svmlab.solvers.nesvm import NESVM, nesterov, schedule
from svmlab.solvers.nesvm import estimator as nesvm
from svmlab.solvers.nesvm.problem import SmoothedSVM
from test_solvers_nesvm_math import make_problem


def run(problem, L, theta0=None, iterations=300, **kwargs):
    """nesterov for a fixed number of updates (eps = 0 never stops); returns iterates and grads."""
    seen = []
    theta0 = np.zeros(problem.dim) if theta0 is None else theta0
    kwargs = {"eps": 0.0, "max_iter": iterations} | kwargs
    result = nesterov(
        problem.evaluate,
        theta0,
        L,
        on_iterate=lambda k, w, ev: seen.append((w.copy(), ev)),
        **kwargs,
    )
    return result, seen


@pytest.mark.parametrize("w0_scale", [0.0, 0.3])
def test_first_iterate_is_the_prox_centre_minus_two_thirds_of_a_gradient_step(w0_scale):
    X, y = make_problem()
    problem = SmoothedSVM(X, y, 0.5, "csvm", 2.0)
    wstar = w0_scale * np.random.default_rng(0).normal(size=problem.dim)
    L = problem.lipschitz("paper")
    _, seen = run(problem, L, wstar, iterations=1)
    g = problem.evaluate(wstar).grad
    np.testing.assert_allclose(seen[1][0], wstar - 2.0 / (3.0 * L) * g, rtol=1e-15, atol=1e-16)
    if w0_scale == 0.0:  # at w = 0: u_i = min(1, 1/(mu a_i)), so grad = -C Z'u
        u = np.minimum(1.0, 1.0 / (problem.mu * problem.a))
        np.testing.assert_allclose(g, -problem.C * X.T @ (y * u), rtol=1e-13)


def theorem_3_holds(problem, L, theta0, iterations=400):
    _, seen = run(problem, L, theta0, iterations)
    G, S = np.zeros(problem.dim), 0.0
    for k, (w, ev) in enumerate(seen):
        weight = 0.5 * (k + 1)
        G += weight * ev.grad
        S += weight * (ev.smoothed - ev.grad @ w)
        psi = S + G @ theta0 - G @ G / (2 * L)
        f_y = problem.evaluate(w - ev.grad / L).smoothed
        if (k + 1) * (k + 2) / 4 * f_y > psi + 1e-10 * max(1.0, abs(psi)):
            return False
    return True


@pytest.mark.parametrize("model", ["csvm", "lpsvm", "lssvm"])
@pytest.mark.parametrize("mode", ["paper", "tight"])
def test_theorem_3_invariant_holds_at_every_iteration(model, mode):
    if model == "lssvm" and mode == "paper":
        mode = "trace"  # Eq.56 is no Lipschitz constant
    X, y = make_problem(n=100, p=6)
    problem = SmoothedSVM(X, y, 0.8, model, 0.5, 0.3, bias=True)
    L = problem.lipschitz(mode)
    for theta0 in (np.zeros(problem.dim), np.random.default_rng(1).normal(size=problem.dim)):
        assert theorem_3_holds(problem, L, theta0)


@pytest.mark.parametrize("model", ["csvm", "lpsvm"])
def test_rate_bound_eq43_holds_for_every_k(model):
    X, y = make_problem(n=100, p=6)
    problem = SmoothedSVM(X, y, 1.0, model, 0.5, 0.5)

    def value_and_grad(theta):
        ev = problem.evaluate(theta)
        return ev.smoothed, ev.grad

    reference = minimize(
        value_and_grad,
        np.zeros(problem.dim),
        jac=True,
        method="L-BFGS-B",
        options={"gtol": 1e-12, "ftol": 1e-15, "maxiter": 10_000},
    )
    L = problem.lipschitz("tight")
    _, seen = run(problem, L, iterations=600)
    f_y = np.array([problem.evaluate(w - ev.grad / L).smoothed for w, ev in seen])
    k = np.arange(len(f_y))
    bound = 2 * L * reference.x @ reference.x / ((k + 1) * (k + 2))
    assert np.all(f_y - reference.fun <= bound + 1e-9 * abs(reference.fun))
    assert f_y[-1] - reference.fun < 1e-3 * bound[0]  # and the bound is not vacuous here


def test_paper_rule_stops_at_the_first_small_change_after_at_least_one_update():
    X, y = make_problem()
    problem = SmoothedSVM(X, y, 1.0, "csvm", 1.0)
    L = problem.lipschitz("paper")
    eps = 1e-2
    (_, k, converged), seen = run(problem, L, iterations=10_000, eps=eps)
    values = np.array([ev.smoothed for _, ev in seen])
    changes = np.abs(np.diff(values))
    assert converged and len(seen) == k + 1
    assert k == 1 + np.flatnonzero(changes < eps)[0]
    (_, k, converged), _ = run(problem, L, iterations=10, eps=1e12)
    assert (k, converged) == (1, True)  # a huge eps still makes one update


@pytest.mark.parametrize("rule", ["rel", "grad"])
def test_relative_and_gradient_rules_hold_where_the_solver_stops(rule):
    X, y = make_problem()
    problem = SmoothedSVM(X, y, 1.0, "csvm", 1.0)
    eps = 1e-6
    (_, k, converged), seen = run(
        problem, problem.lipschitz("tight"), iterations=20_000, eps=eps, stop=rule
    )
    values = [ev.smoothed for _, ev in seen]
    last = seen[-1][1]
    holds = (
        0.5 * last.grad @ last.grad <= eps
        if rule == "grad"
        else abs(values[-1] - values[-2]) <= eps * max(1, abs(values[-1]))
    )
    assert converged and holds and k > 1


def test_max_iter_is_respected_and_non_convergence_is_reported():
    X, y = make_problem()
    with pytest.warns(ConvergenceWarning, match="max_iter=5"):
        model = NESVM(C=1.0, eps=1e-12, max_iter=5, homotopy="off").fit(X, y)
    assert model.n_iter_ == 5 and model.converged_ is False
    assert NESVM(C=1.0, max_iter=5000).fit(X, y).converged_ is True


@pytest.mark.parametrize("iterate", ["w", "y", "best"])
def test_returned_iterate(iterate):
    X, y = make_problem()
    problem = SmoothedSVM(X, y, 1.0, "csvm", 1.0)
    L = problem.lipschitz("paper")
    (theta, _, _), seen = run(problem, L, iterations=50, return_iterate=iterate)
    w_k, ev_k = seen[-1]
    expected = {
        "w": w_k,
        "y": w_k - ev_k.grad / L,
        "best": seen[int(np.argmin([ev.smoothed for _, ev in seen]))][0],
    }[iterate]
    np.testing.assert_array_equal(theta, expected)


def test_homotopy_schedules_end_exactly_at_the_target():
    harmonic = schedule(5.0, 0.05, "harmonic", 0.5)
    assert len(harmonic) == 100
    np.testing.assert_allclose(harmonic, [max(5.0 / (t + 1), 0.05) for t in range(100)])
    assert harmonic[-1] == 0.05 and harmonic[0] == 5.0
    assert schedule(5.0, 0.05, "geometric", 0.5) == [5.0 * 0.5**t for t in range(7)] + [0.05]
    assert schedule(5.0, 0.05, "off", 0.5) == [5.0]


@pytest.mark.parametrize("model", ["csvm", "lpsvm"])
def test_homotopy_warm_starts_each_stage_and_recomputes_l(model, monkeypatch):
    X, y = make_problem()
    calls = []

    def recording(evaluate, theta0, L, eps, *args):
        result = nesterov(evaluate, theta0, L, eps, *args)
        problem = evaluate.__self__
        calls.append((theta0.copy(), L, problem.mu, problem.nu, result[0].copy()))
        return result

    monkeypatch.setattr(nesvm, "nesterov", recording)
    monkeypatch.setattr(NESVM, "_warm_up", None)  # only the fit's own calls
    estimator = NESVM(
        C=0.5,
        model=model,
        mu=2.0,
        nu=1.0,
        mu_target=0.25,
        nu_target=0.5,
        homotopy="harmonic",
        lipschitz="tight",
    ).fit(X, y)
    mus = [c[2] for c in calls]
    assert mus == [2.0, 1.0, 2.0 / 3, 0.5, 0.4, 2.0 / 6, 2.0 / 7, 0.25]
    if model == "lpsvm":
        assert [c[3] for c in calls] == [1.0, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5]
    problem = SmoothedSVM(X, np.where(y > 0, 1.0, -1.0), 0.5, model)
    reg, loss = problem.lipschitz_parts("tight")
    for (theta0, L, mu, nu, _), previous in zip(calls, [None, *calls[:-1]]):
        expected_L = 1 / mu + 0.5 * loss / nu if model == "lpsvm" else reg + 0.5 * loss / mu
        assert pytest.approx(expected_L, rel=1e-12) == L
        if previous is None:
            assert not theta0.any()
        else:
            np.testing.assert_array_equal(theta0, previous[4])
    assert estimator.lipschitz_ == calls[-1][1]
    np.testing.assert_array_equal(np.unique(estimator.trace_.columns()["mu"]), sorted(set(mus)))


def test_homotopy_reaches_the_direct_solution_at_the_target_mu():
    X, y = make_problem(n=200, p=8)
    # stop='grad' certifies F_mu - F_mu* <= eps, so both runs end within eps of the same optimum
    common = {"C": 1.0, "mu_target": 0.05, "stop": "grad", "eps": 1e-9, "lipschitz": "tight"}
    direct = NESVM(mu=0.05, **common).fit(X, y)
    for kind in ("harmonic", "geometric"):
        continued = NESVM(mu=5.0, homotopy=kind, inner_eps="scaled", **common).fit(X, y)
        assert continued.stop_reason_ == "the stop='grad' rule on F_mu"
        assert not continued.converged_  # a rule on F_mu certifies no gap of the problem
        final = continued.trace_.columns()["objective_smoothed"][-1]
        assert abs(final - direct.trace_.columns()["objective_smoothed"][-1]) <= 1e-9


@pytest.mark.parametrize("model", ["csvm", "lssvm"])
def test_adaptive_step_grows_from_too_small_an_l_and_reaches_the_same_optimum(model):
    X, y = make_problem(n=200, p=8)
    problem = SmoothedSVM(X, y, 1.0, model, 0.05)
    L = problem.lipschitz("tight")
    fixed, _, converged = nesterov(problem.evaluate, np.zeros(problem.dim), L, 1e-12, "grad")
    assert converged
    local = nesvm.LocalStep(L / 1e4)  # far too small: the first steps overshoot
    adaptive, _, converged = nesterov(
        problem.evaluate, np.zeros(problem.dim), L, 1e-12, "grad", local=local
    )
    assert converged
    assert L / 1e4 < local.L <= L  # raised from the curvature it met, never above the bound
    # stop='grad' certifies F_mu - F_mu* <= 1e-12 for a 1-strongly convex F_mu: both are within
    # sqrt(2e-12) of the unique minimiser
    np.testing.assert_allclose(adaptive, fixed, atol=3e-6)


def test_default_adaptive_step_certifies_and_the_paper_preset_keeps_the_fixed_step():
    X, y = make_problem(n=300, p=10)
    adaptive = NESVM(C=1.0).fit(X, y)
    fixed = NESVM(C=1.0, step="fixed").fit(X, y)
    for model in (adaptive, fixed):
        assert model.converged_ and model.certificate_.rel_gap <= 1e-2
    assert adaptive.n_iter_ < fixed.n_iter_
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # the paper's rule certifies nothing
        paper = NESVM(
            mu=5.0, eps=1e-3, stop="paper", homotopy="off", lipschitz="paper", step="fixed"
        ).fit(X, y)
    # step='fixed' is the paper's iteration with its constant step 1/L
    problem = SmoothedSVM(X, np.where(y > 0, 1.0, -1.0), 1.0, "csvm", 5.0)
    expected, _, _ = nesterov(
        problem.evaluate, np.zeros(problem.dim), problem.lipschitz("paper"), 1e-3, "paper"
    )
    np.testing.assert_array_equal(paper.coef_[0], expected)
