"""OneVsOneClassifier: LIBSVM's one-vs-one scheme over svmlab binary solvers.

Pairs and their training subsets, the tie rule (first class with the most votes), agreement with
scikit-learn's SVC (which runs LIBSVM's own OVO training and voting), the training time as the sum
of the binary fits, scikit-learn conformance, and the errors.

check_estimator exclusions: none.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.datasets import make_blobs
from sklearn.svm import SVC
from sklearn.utils._param_validation import InvalidParameterError
from sklearn.utils.estimator_checks import parametrize_with_checks

from svmlab.errors import DataError
from svmlab.estimator.multiclass import OneVsOneClassifier
from svmlab.solvers.baselines import Libsvm
from svmlab.solvers.frank_wolfe import ModifiedFrankWolfe

SOLVERS = {
    "mfw": ModifiedFrankWolfe(C=10.0, eps=1e-4, sampling="full", random_state=0),
    "libsvm": Libsvm(C=1.0),
}


@parametrize_with_checks([OneVsOneClassifier(Libsvm())])
def test_scikit_learn_conformance(estimator, check):
    check(estimator)


def blobs(n_classes, n_samples=90, cluster_std=1.0, seed=0):
    return make_blobs(
        n_samples=n_samples, centers=n_classes, cluster_std=cluster_std, random_state=seed
    )


def grid(X, n=50):
    """An n x n grid over the bounding box of X: many points near the pairwise boundaries."""
    lo, hi = X.min(axis=0), X.max(axis=0)
    xs, ys = np.meshgrid(np.linspace(lo[0], hi[0], n), np.linspace(lo[1], hi[1], n))
    return np.column_stack([xs.ravel(), ys.ravel()])


@pytest.mark.parametrize("name", SOLVERS)
def test_three_classes_give_three_models_on_their_pair_subsets(name):
    X, y = blobs(3)
    ovo = OneVsOneClassifier(SOLVERS[name]).fit(X, y)

    assert list(ovo.classes_) == [0, 1, 2]
    assert ovo.pairs_ == [(0, 1), (0, 2), (1, 2)]
    assert len(ovo.estimators_) == 3
    assert ovo.n_features_in_ == 2
    assert ovo.gamma_ == pytest.approx(1.0 / (2 * X.var()))  # 'scale' on all of X, shared
    for (i, j), model, size in zip(ovo.pairs_, ovo.estimators_, ovo.pair_sizes_, strict=True):
        rows = np.isin(y, [i, j])
        assert size == rows.sum() == 60
        assert model is not SOLVERS[name]
        assert list(model.classes_) == [i, j]
        assert model.get_params()["gamma"] == ovo.gamma_
        # Support vectors are rows of the pair's two classes ...
        assert set(y[rows][model.support_]) <= {i, j}
        np.testing.assert_array_equal(model.support_vectors_, X[rows][model.support_])
        # ... and the model is the one a direct fit on that subset gives (both are deterministic).
        direct = clone(SOLVERS[name]).set_params(gamma=ovo.gamma_).fit(X[rows], y[rows])
        np.testing.assert_allclose(
            model.decision_function(X), direct.decision_function(X), rtol=1e-12, atol=1e-12
        )
    assert (ovo.predict(X) == y).mean() > 0.9


def voter(loser, winner):
    """A real linear SVM fitted on two 1-D points, x = -1 (loser) and x = +1 (winner): at x = 1
    it predicts winner."""
    return Libsvm(C=10.0, kernel="linear").fit([[-1.0], [1.0]], [loser, winner])


def fitted_by_hand(classes, winners):
    """An OneVsOneClassifier whose pair (i, j) model votes for classes[winners[(i, j)]] at x = 1."""
    ovo = OneVsOneClassifier(Libsvm(kernel="linear"))
    ovo.classes_ = np.asarray(classes)
    ovo.pairs_ = sorted(winners)
    ovo.estimators_ = [
        voter(classes[i if winners[i, j] == j else j], classes[winners[i, j]])
        for i, j in ovo.pairs_
    ]
    ovo.n_features_in_ = 1
    return ovo


@pytest.mark.parametrize(
    ("winners", "counts", "expected"),
    [
        # Three-way cycle: one vote each, class 0 wins.
        ({(0, 1): 0, (0, 2): 2, (1, 2): 1}, [1, 1, 1], 0),
        # Classes 1 and 2 tie with two votes: the first of them (1) wins, not the last and not 0.
        ({(0, 1): 1, (0, 2): 2, (0, 3): 0, (1, 2): 2, (1, 3): 1, (2, 3): 3}, [1, 2, 2, 1], 1),
        # A clear winner is unaffected by the tie rule.
        ({(0, 1): 1, (0, 2): 2, (0, 3): 3, (1, 2): 2, (1, 3): 3, (2, 3): 3}, [0, 1, 2, 3], 3),
    ],
)
def test_vote_ties_go_to_the_first_class_with_the_most_votes(winners, counts, expected):
    classes = ["a", "b", "c", "d"][: len(counts)]
    ovo = fitted_by_hand(classes, winners)
    np.testing.assert_array_equal(ovo.votes([[1.0]]), [counts])
    assert ovo.predict([[1.0]])[0] == classes[expected]


@pytest.mark.parametrize(("kernel", "gamma"), [("linear", "scale"), ("rbf", 0.5), ("rbf", "scale")])
def test_predictions_equal_scikit_learn_svc_ovo(kernel, gamma):
    """SVC trains LIBSVM's K(K-1)/2 pair models and votes inside LIBSVM, with the same tie rule;
    gamma='scale' also checks that the gamma is resolved once on all of X, as SVC does."""
    X, y = blobs(4, n_samples=200, cluster_std=2.0)
    ovo = OneVsOneClassifier(Libsvm(C=1.0, kernel=kernel, gamma=gamma)).fit(X, y)
    svc = SVC(C=1.0, kernel=kernel, gamma=gamma, decision_function_shape="ovo").fit(X, y)
    assert len(ovo.estimators_) == len(svc.intercept_) == 6  # one binary model per pair
    assert ovo.gamma_ == pytest.approx(svc._gamma, rel=1e-14)
    for Z in (X, grid(X)):
        np.testing.assert_array_equal(ovo.predict(Z), svc.predict(Z))


def test_ties_on_a_grid_are_broken_like_libsvm():
    """With gamma = 0.5 many grid points get tied votes (cycles of pairwise wins); SVC breaks
    them exactly as OneVsOneClassifier does, and the opposite rule (last class) would not."""
    X, y = blobs(4, n_samples=200, cluster_std=2.0)
    Z = grid(X)
    ovo = OneVsOneClassifier(Libsvm(C=1.0, gamma=0.5)).fit(X, y)
    svc = SVC(C=1.0, gamma=0.5, decision_function_shape="ovo").fit(X, y)
    counts = ovo.votes(Z)
    top_two = np.sort(counts, axis=1)[:, -2:]
    tied = top_two[:, 0] == top_two[:, 1]
    assert tied.sum() > 50
    np.testing.assert_array_equal(ovo.predict(Z)[tied], svc.predict(Z)[tied])
    last_max = ovo.classes_[counts.shape[1] - 1 - np.argmax(counts[:, ::-1], axis=1)]
    assert (last_max[tied] != svc.predict(Z)[tied]).any()


def test_fit_time_is_the_sum_of_the_binary_fits():
    X, y = blobs(3)
    ovo = OneVsOneClassifier(SOLVERS["libsvm"]).fit(X, y)
    assert len(ovo.fit_times_s_) == 3
    assert all(t >= 0 for t in ovo.fit_times_s_)
    assert ovo.fit_time_s_ > 0
    assert ovo.fit_time_s_ == pytest.approx(sum(ovo.fit_times_s_), rel=1e-12)
    for model, t in zip(ovo.estimators_, ovo.fit_times_s_, strict=True):
        # The wall time of a binary fit covers the time its own trace measured.
        assert t >= model.trace_.columns()["time_s"][-1]


def test_clone_and_params():
    ovo = OneVsOneClassifier(Libsvm(C=2.0, kernel="linear"))
    params = ovo.get_params()
    assert params["estimator__C"] == 2.0 and params["estimator__kernel"] == "linear"
    copy = clone(ovo.fit(*blobs(3)))
    assert not hasattr(copy, "estimators_")
    assert copy.get_params()["estimator__C"] == 2.0
    copy.set_params(estimator__C=5.0)
    assert copy.estimator.C == 5.0 and ovo.estimator.C == 2.0
    assert all(model.C == 5.0 for model in copy.fit(*blobs(3)).estimators_)


def test_string_labels():
    X, y = blobs(3)
    names = np.array(["virginica", "setosa", "versicolor"])[y]
    ovo = OneVsOneClassifier(SOLVERS["libsvm"]).fit(X, names)
    assert list(ovo.classes_) == ["setosa", "versicolor", "virginica"]
    assert [list(m.classes_) for m in ovo.estimators_] == [
        ["setosa", "versicolor"],
        ["setosa", "virginica"],
        ["versicolor", "virginica"],
    ]
    assert set(ovo.predict(X)) <= set(ovo.classes_)
    assert (ovo.predict(X) == names).mean() > 0.9


def test_two_classes_use_one_model():
    X, y = blobs(2)
    ovo = OneVsOneClassifier(SOLVERS["libsvm"]).fit(X, y)
    assert ovo.pairs_ == [(0, 1)] and len(ovo.estimators_) == 1
    Z = grid(X)
    np.testing.assert_array_equal(ovo.predict(Z), ovo.estimators_[0].predict(Z))


def test_sparse_input_gives_the_dense_result():
    X, y = blobs(3)
    X[np.abs(X) < 2.0] = 0.0
    dense = OneVsOneClassifier(SOLVERS["libsvm"]).fit(X, y)
    sparse = OneVsOneClassifier(SOLVERS["libsvm"]).fit(sp.csr_matrix(X), y)
    np.testing.assert_array_equal(sparse.predict(sp.csr_matrix(X)), dense.predict(X))


def test_one_class_is_refused_with_the_label_found():
    X, _ = blobs(3)
    with pytest.raises(DataError, match=r"1 class \(values found: \['cat'\]\).*at least two"):
        OneVsOneClassifier(SOLVERS["libsvm"]).fit(X, ["cat"] * len(X))


def test_other_errors():
    X, y = blobs(3)
    with pytest.raises(InvalidParameterError, match="estimator"):
        OneVsOneClassifier("libsvm").fit(X, y)
    with pytest.raises(ValueError, match="Unknown label type"):
        OneVsOneClassifier(SOLVERS["libsvm"]).fit(X, y + 0.5 * np.arange(len(y)) / len(y))
    X_nan = X.copy()
    X_nan[0, 0] = np.nan
    with pytest.raises(DataError, match="1 NaN"):
        OneVsOneClassifier(SOLVERS["libsvm"]).fit(X_nan, y)
    ovo = OneVsOneClassifier(SOLVERS["libsvm"]).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        ovo.predict(np.hstack([X, X]))
