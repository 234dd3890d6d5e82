"""Pegasos: its update rule by hand, lambda = 1/(nC), projection, seeded sampling, dense = CSR,
convergence to LIBLINEAR's hinge optimum, trace, config.

"""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.svm import LinearSVC

from support.configs import composed
from svmlab.app.config.schema import build_estimator
from svmlab.errors import ConfigError
from svmlab.solvers.pegasos import Pegasos
from test_solvers_nesvm_math import make_problem


def hand_pegasos(X, y, C, steps, seed, project=True):
    """Pegasos written out plainly (dense w, no scaling trick), with the estimator's sampling."""
    n = len(y)
    lam = 1.0 / (n * C)
    rng = np.random.default_rng(seed)
    w, t = np.zeros(X.shape[1]), 0
    while t < steps:
        for i in rng.integers(0, n, size=min(n, steps - t)):
            t += 1
            eta = 1.0 / (lam * t)
            hit = y[i] * (X[i] @ w) < 1
            w = (1 - eta * lam) * w + (eta * y[i] * X[i] if hit else 0.0)
            if project:
                w *= min(1.0, 1.0 / (np.sqrt(lam) * np.linalg.norm(w) + 1e-300))
    return w


@pytest.mark.parametrize("project", [True, False])
def test_updates_equal_the_plain_algorithm_dense_and_sparse(project):
    X, y = make_problem(n=50, p=6)
    expected = hand_pegasos(X, y, 0.3, 173, seed=4, project=project)
    for data in (X, sp.csr_matrix(X)):
        model = Pegasos(C=0.3, max_iter=173, projection=project, random_state=4).fit(data, y)
        np.testing.assert_allclose(model.coef_[0], expected, rtol=1e-10, atol=1e-12)
    assert model.n_iter_ == 173
    np.testing.assert_array_equal(model.trace_.columns()["iteration"], [50, 100, 150, 173])


def test_projection_keeps_w_in_the_ball_of_radius_one_over_sqrt_lambda():
    X, y = make_problem(n=40, p=5)
    X *= 50.0
    C = 10.0
    radius = np.sqrt(len(y) * C)
    for steps in (1, 2, 7, 40):
        projected = Pegasos(C=C, max_iter=steps, random_state=1).fit(X, y).coef_[0]
        assert np.linalg.norm(projected) <= radius * (1 + 1e-12)
    free = Pegasos(C=C, max_iter=1, projection=False, random_state=1).fit(X, y).coef_[0]
    assert np.linalg.norm(free) > radius  # the first step alone leaves the ball


def test_seed_fixes_the_result_and_different_seeds_differ():
    X, y = make_problem()
    first, again, other = (Pegasos(epochs=2, random_state=s).fit(X, y).coef_ for s in (0, 0, 1))
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, other)


def test_converges_to_the_hinge_svm_optimum():
    X, y = make_problem(n=300, p=6)
    C = 0.5
    ref = (
        LinearSVC(C=C, loss="hinge", fit_intercept=False, dual=True, tol=1e-10, max_iter=10**6)
        .fit(X, y)
        .coef_[0]
    )
    F_star = 0.5 * ref @ ref + C * np.maximum(0, 1 - y * (X @ ref)).sum()
    model = Pegasos(C=C, epochs=200, random_state=0).fit(X, y)
    trace = model.trace_.columns()["objective_hinge_l2"]
    assert trace[-1] == pytest.approx(model.objectives(X, y)["objective_hinge_l2"], rel=1e-12)
    assert F_star <= trace[-1] < 1.02 * F_star
    assert trace[0] > trace[-1]


def test_config_builds_a_seeded_estimator():
    estimator = build_estimator(composed("solver=pegasos", "seed=7", "solver.epochs=3"))
    assert isinstance(estimator, Pegasos)
    assert (estimator.random_state, estimator.epochs, estimator.projection) == (7, 3, True)
    with pytest.raises(ConfigError, match="cannot use kernel 'rbf'"):
        build_estimator(composed("solver=pegasos", "kernel=rbf"))
