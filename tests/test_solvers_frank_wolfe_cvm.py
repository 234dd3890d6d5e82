"""The core vector machine baseline: its SMO inner solver and its optimum against the reference
QP, the core set growing by one point per added point, the stopping certificate, sampling,
epsilon annealing and the rbf-only restriction."""

import numpy as np
import pytest

from svmlab.solvers.frank_wolfe import CoreVectorMachine, ModifiedFrankWolfe
from svmlab.solvers.frank_wolfe import loops as meb
from test_solvers_frank_wolfe import empty_state, full_alpha, ktilde, problem, simplex_qp


@pytest.fixture(scope="module")
def data():
    return problem()


def test_smo_solves_the_simplex_qp_on_a_core_set(data):
    X, y = data
    mk, D, cache, sl = empty_state(X, y, 4.0)
    chosen = np.arange(0, 60, 2)
    q = 0
    for i in chosen:
        cache, q = meb.append_point(cache, sl, q, i, 0.0)
    alpha, G = sl.alpha, sl.G
    alpha[:q] = 1.0 / q
    Q = ktilde(X[chosen], y[chosen], 4.0)
    G[:q] = Q @ alpha[:q]
    R, steps = meb.smo(cache, mk, D, sl, q, 1e-14, 100000)
    ref = simplex_qp(Q)
    assert steps > 0
    np.testing.assert_allclose(alpha[:q], ref, atol=1e-9)
    assert pytest.approx(ref @ Q @ ref, rel=1e-12) == R
    np.testing.assert_allclose(G[:q], Q @ alpha[:q], rtol=1e-10)


@pytest.mark.parametrize("C", [0.5, 4.0, 100.0])
def test_cvm_reaches_the_reference_qp_optimum(data, C):
    X, y = data
    eps = 1e-6
    est = CoreVectorMachine(C=C, gamma=0.5, eps=eps, sampling="full", random_state=0).fit(X, y)
    Q = ktilde(X, y, C)
    ref = simplex_qp(Q)
    g_ref = est.delta2_ - ref @ Q @ ref
    alpha = full_alpha(est, len(y))
    assert est.converged_
    assert (g_ref - est.radius2_) / g_ref <= (1 + eps) ** 2 - 1
    assert np.abs(alpha - ref).sum() <= 1e-3
    assert set(np.flatnonzero(ref > 1e-4)) <= set(est.support_)
    G, R = Q @ alpha, alpha @ Q @ alpha
    assert est.rho_ == pytest.approx(R, rel=1e-10)
    # certificate over every point, core points included
    assert np.all(est.delta2_ + R - 2 * G <= (1 + eps) ** 2 * (est.delta2_ - R) * (1 + 1e-12))


def test_core_set_grows_by_exactly_one_point_per_added_point(data):
    X, y = data
    est = CoreVectorMachine(C=4.0, gamma=0.5, sampling="full", random_state=0).fit(X, y)
    col = est.trace_.columns()
    steps, size = col["step_type"][1:], np.diff(col["core_size"])
    assert set(steps) == {0, 3}
    assert np.all(size[steps == 0] == 1) and np.all(size[steps == 3] == 0)
    g = col["meb_radius2"]
    assert np.all(np.diff(g) >= -1e-9 * g[1:])  # r^2 non-decreasing up to the SMO tolerance


def test_sampled_cvm_is_reproducible_and_close_to_mfw(data):
    X, y = data
    runs = [
        CoreVectorMachine(C=4.0, gamma=0.5, sample_size=10, random_state=3).fit(X, y)
        for _ in range(2)
    ]
    np.testing.assert_array_equal(runs[0].dual_coef_, runs[1].dual_coef_)
    mfw = ModifiedFrankWolfe(C=4.0, gamma=0.5, sampling="full", random_state=0).fit(X, y)
    assert np.mean(runs[0].predict(X) == mfw.predict(X)) >= 0.95


def test_without_annealing_every_row_uses_the_final_tolerance(data):
    X, y = data
    est = CoreVectorMachine(
        C=4.0, gamma=0.5, sampling="full", eps_annealing=False, random_state=0
    ).fit(X, y)
    col = est.trace_.columns()
    assert 3 not in set(col["step_type"])
    assert np.all(col["delta_plus"][:-1] > (1 + 1e-6) ** 2 - 1)
    assert col["delta_plus"][-1] <= (1 + 1e-6) ** 2 - 1


@pytest.mark.parametrize("eps", [1e-2, 1e-4])
def test_gap_rule_with_sampled_searches_stops_at_a_certified_gap(data, eps):
    """stop='gap' with LibCVM's sampled search: it stops at a certified relative gap <= eps,
    where LibCVM's ball rule at a loose eps stops far above it; the gap is computed only where
    the sampled rule ended a level (a full search), and the last such gap is the certificate."""
    X, y = data
    kwargs = {"C": 4.0, "gamma": 0.5, "sample_size": 10, "random_state": 0}
    ball = CoreVectorMachine(eps=1e-2, **kwargs).fit(X, y)
    assert ball.converged_ and ball.certificate_.rel_gap > 1e-2
    est = CoreVectorMachine(stop="gap", eps=eps, **kwargs).fit(X, y)
    rel = est.trace_.columns()["rel_gap_l2svm"]
    assert est.converged_ and est.certificate_.rel_gap <= eps
    assert rel[-1] == pytest.approx(est.certificate_.rel_gap, rel=1e-8)
    assert np.isnan(rel).any() and np.all(rel[np.isfinite(rel)][:-1] > eps)
    assert "full scan where 7 rounds of 10" in est.stopping_rule()


def test_cvm_refuses_kernels_that_are_not_normalised(data):
    with pytest.raises(ValueError, match="'kernel' parameter of CoreVectorMachine must be"):
        CoreVectorMachine(kernel="poly").fit(*data)
    assert CoreVectorMachine.supported_kernels == ("rbf",)
