"""Gamma rules of the kernel solvers: 'avg_sq_dist' (the core vector machine's sigma^2 = mean
squared distance) from its O(nnz) closed form, against a brute-force mean over all pairs."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.metrics.pairwise import euclidean_distances

from svmlab.estimator.kernels import mean_squared_distance, resolve_gamma
from svmlab.solvers.frank_wolfe import ModifiedFrankWolfe


def points(sparse: bool):
    rng = np.random.default_rng(0)
    X = rng.normal(3.0, 2.0, size=(80, 7)) * (rng.random((80, 7)) < 0.4)  # off-centre, 60 % zeros
    return sp.csr_matrix(X) if sparse else X


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
def test_mean_squared_distance_is_the_mean_over_all_pairs(sparse):
    X = points(sparse)
    brute = np.mean(euclidean_distances(X, X, squared=True))  # all 80^2 ordered pairs
    assert mean_squared_distance(X) == pytest.approx(brute, rel=1e-12)


@pytest.mark.parametrize("kernel, factor", [("rbf", 0.5), ("poly", 1.0)])
def test_avg_sq_dist_gives_the_papers_width(kernel, factor):
    """rbf: exp(-||x - z||^2 / (2 sigma^2)) with sigma^2 = the mean, i.e. gamma = 1 / (2 mean);
    poly: gamma = 1 / mean (Frandi et al., sections 5.1 and 5.8)."""
    X = points(False)
    mean = np.mean(euclidean_distances(X, X, squared=True))
    assert resolve_gamma("avg_sq_dist", X, kernel) == pytest.approx(factor / mean, rel=1e-12)
    assert resolve_gamma("avg_sq_dist", np.ones((5, 3)), kernel) == 1.0  # all points equal


def test_a_solver_fitted_with_avg_sq_dist_reports_the_resolved_gamma():
    X = points(True)
    y = np.where(np.asarray(X.sum(axis=1)).ravel() > 6.0, 1, -1)
    est = ModifiedFrankWolfe(C=4.0, gamma="avg_sq_dist", sampling="full", random_state=0).fit(X, y)
    assert est.gamma_ == pytest.approx(0.5 / mean_squared_distance(X), rel=1e-12)
    linear = ModifiedFrankWolfe(
        kernel="linear", gamma="avg_sq_dist", sampling="full", random_state=0
    ).fit(X, y)
    assert linear.gamma_ is None
