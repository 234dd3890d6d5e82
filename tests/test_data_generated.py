"""Synthetic generators (spec 001 section 4.4 and the Gaussian one) and the embedded dataset."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.svm import LinearSVC

from svmlab import data
from svmlab.data.prepare import check_finite_features, encode_labels
from svmlab.data.synthetic import gaussian_means, paper_centroids, sample_around, zero_features
from svmlab.errors import DataError

pytestmark = pytest.mark.usefixtures("isolated_data_env")


# -- the data of the l1-SVM paper ------------------------------------------------------------


@pytest.mark.parametrize(
    "name, shape", [("synthetic_tall", (10_000, 50)), ("synthetic_wide", (50, 2_500))]
)
def test_paper_datasets_have_the_spec_sizes_and_balanced_labels(name, shape):
    dataset = data.load(name, seed=0)
    assert dataset.X_train.shape == shape and dataset.X_test.shape == shape
    assert dataset.X_train.dtype == np.float64 and dataset.X_train.flags.c_contiguous
    assert dataset.classes == (-1, 1)
    for y in (dataset.y_train, dataset.y_test):
        assert y.dtype == np.float64 and set(np.unique(y)) == {-1.0, 1.0}
        assert abs(np.mean(y > 0) - 0.5) <= 0.05  # spec test 16: balance within 5%
        assert np.sum(y > 0) == shape[0] - shape[0] // 2  # in fact exact
    assert dataset.params == {
        "n": shape[0],
        "d": shape[1],
        "n_test": shape[0],
        "scale": 1.0,
        "zero_frac": 0.0,
        "same_zero_set": True,
    }


def test_same_seed_same_data_other_seed_other_data():
    first = data.load("synthetic_wide", seed=7)
    again = data.load("synthetic_wide", seed=7)
    other = data.load("synthetic_wide", seed=8)
    assert np.array_equal(first.X_train, again.X_train) and first.digest == again.digest
    assert np.array_equal(first.y_test, again.y_test)
    assert not np.array_equal(first.X_train, other.X_train) and first.digest != other.digest


def test_digest_covers_the_parameters():
    base = data.load("synthetic_tall", n=100, d=5)
    assert data.load("synthetic_tall", n=100, d=5).digest == base.digest
    assert data.load("synthetic_tall", n=100, d=5, n_test=50).digest != base.digest
    assert data.load("synthetic_tall", n=100, d=5, scale=0.5).digest != base.digest


@pytest.mark.parametrize(
    "zero_frac, d, n_zero", [(0.3, 50, 15), (0.29, 100, 29), (1.0, 8, 8), (0.0, 10, 0), (0.5, 5, 2)]
)
@pytest.mark.parametrize("same_zero_set", [True, False])
def test_zeroed_centroid_components_are_floor_of_zero_frac_times_d(
    zero_frac, d, n_zero, same_zero_set
):
    negative, positive = paper_centroids(d, 1.0, zero_frac, same_zero_set, np.random.default_rng(1))
    assert np.sum(negative == 0) == n_zero and np.sum(positive == 0) == n_zero
    if same_zero_set:
        assert np.array_equal(negative == 0, positive == 0)


def test_separate_zero_sets_differ():
    negative, positive = paper_centroids(1000, 1.0, 0.5, False, np.random.default_rng(0))
    assert not np.array_equal(negative == 0, positive == 0)


def test_centroid_components_have_the_given_scale():
    d = 20_000
    negative, positive = paper_centroids(d, 0.5, 0.0, True, np.random.default_rng(0))
    assert np.std(negative) == pytest.approx(0.5, rel=0.03)
    # spec 4.4: with scale 1 the centroids are about sqrt(2d) apart
    negative, positive = paper_centroids(d, 1.0, 0.0, True, np.random.default_rng(0))
    assert np.linalg.norm(positive - negative) == pytest.approx(math.sqrt(2 * d), rel=0.03)


def test_points_are_their_centroid_plus_standard_normal_noise():
    centroids = (np.array([1.0, -2.0, 0.0]), np.array([-1.0, 0.5, 3.0]))
    X, y = sample_around(centroids, 40_000, np.random.default_rng(3))
    for label, centroid in zip((-1.0, 1.0), centroids, strict=True):
        noise = X[y == label] - centroid
        assert np.allclose(noise.mean(axis=0), 0.0, atol=0.03)
        assert np.allclose(np.cov(noise.T), np.eye(3), atol=0.04)


def test_zeroed_features_carry_only_noise_and_the_test_set_is_a_fresh_draw():
    dataset = data.load("synthetic_tall", seed=2, zero_frac=0.5)
    X, y = dataset.X_train, dataset.y_train
    gap = np.abs(X[y > 0].mean(axis=0) - X[y < 0].mean(axis=0))
    assert np.sum(gap < 0.1) >= 25  # the 25 zeroed features do not separate the classes
    assert np.sum(gap > 0.1) >= 20  # most others do (|c+ - c-| ~ N(0, 2) per feature)
    assert not np.any(np.all(np.isclose(dataset.X_test[:500, None, :], X[None, :500, :]), axis=2))


def test_n_test_sets_the_test_size():
    dataset = data.load("synthetic_wide", n=30, n_test=11, d=7)
    assert dataset.X_train.shape == (30, 7) and dataset.X_test.shape == (11, 7)
    assert dataset.params["n_test"] == 11


def test_scale_one_gives_linearly_separable_tall_data():
    dataset = data.load("synthetic_tall", n=2000, seed=5)  # Table 3: LinearSVC 100% on Tall
    model = LinearSVC().fit(dataset.X_train, dataset.y_train)
    assert model.score(dataset.X_test, dataset.y_test) > 0.99


# -- the Gaussian generator ------------------------------------------------------------------


def test_gaussian_means_are_separation_apart():
    negative, positive = gaussian_means(30, 3.0, np.random.default_rng(0))
    assert np.linalg.norm(positive - negative) == pytest.approx(3.0)
    assert np.allclose(positive, -negative)


def test_gaussian_accuracy_is_near_the_bayes_rate():
    dataset = data.load("synthetic_gaussian", n=4000, n_test=20_000, d=5, separation=2.0, seed=1)
    model = LinearSVC().fit(dataset.X_train, dataset.y_train)
    bayes = 0.5 * (1 + math.erf(1.0 / math.sqrt(2)))  # Phi(separation / 2)
    assert model.score(dataset.X_test, dataset.y_test) == pytest.approx(bayes, abs=0.015)


@pytest.mark.parametrize(
    "sparsity, d, n_zero", [(0.5, 20, 10), (0.29, 100, 29), (0.99, 10, 9), (0.0, 5, 0)]
)
def test_sparsity_zeroes_that_many_features_in_every_sample(sparsity, d, n_zero):
    dataset = data.load("synthetic_gaussian", n=50, n_test=20, d=d, sparsity=sparsity)
    for X in (dataset.X_train, dataset.X_test):
        assert np.all(np.sum(X == 0, axis=1) == n_zero)


def test_zero_features_picks_different_features_in_different_rows():
    X = zero_features(np.ones((200, 10)), 0.3, np.random.default_rng(0))
    assert np.all(np.sum(X == 0, axis=0) > 30)  # every feature is zeroed somewhere


# -- breast_cancer ---------------------------------------------------------------------------


def test_breast_cancer_is_split_stratified_and_standardized_with_training_statistics():
    dataset = data.load("breast_cancer", seed=0)
    assert (dataset.n_train, dataset.n_test, dataset.n_features) == (426, 143, 30)
    assert dataset.classes == (0, 1)
    assert dataset.source == "sklearn.datasets.load_breast_cancer"
    assert np.allclose(dataset.X_train.mean(axis=0), 0.0)
    assert np.allclose(dataset.X_train.std(axis=0), 1.0)
    assert not np.allclose(dataset.X_test.mean(axis=0), 0.0)
    for y in (dataset.y_train, dataset.y_test):  # 357 of 569 are benign (label 1 -> +1)
        assert np.mean(y > 0) == pytest.approx(357 / 569, abs=0.01)
    info = next(i for i in data.list_datasets() if i.name == "breast_cancer")
    assert (info.n_train, info.n_test, info.n_features) == (426, 143, 30)
    assert (
        LinearSVC().fit(dataset.X_train, dataset.y_train).score(dataset.X_test, dataset.y_test)
        > 0.9
    )


def test_breast_cancer_without_standardizing_keeps_the_raw_values():
    dataset = data.load("breast_cancer", seed=0, standardize=False, test_fraction=0.5)
    X, y = load_breast_cancer(return_X_y=True)
    rows = np.vstack([dataset.X_train, dataset.X_test])
    assert sorted(map(tuple, rows)) == sorted(map(tuple, X))
    assert dataset.n_test == 285
    assert dataset.params == {"test_fraction": 0.5, "standardize": False}
    label_of = {tuple(row): label for row, label in zip(X, y, strict=True)}
    for X_part, y_part in ((dataset.X_train, dataset.y_train), (dataset.X_test, dataset.y_test)):
        expected = [1.0 if label_of[tuple(row)] == 1 else -1.0 for row in X_part]
        assert np.array_equal(y_part, expected)  # 0 (malignant) -> -1, 1 (benign) -> +1


def test_breast_cancer_split_is_seeded_and_the_digest_names_the_source_data():
    first = data.load("breast_cancer", seed=1)
    again = data.load("breast_cancer", seed=1)
    other = data.load("breast_cancer", seed=2)
    assert np.array_equal(first.X_train, again.X_train)
    assert not np.array_equal(first.y_train, other.y_train)
    assert first.digest == other.digest


def test_arrays_with_nan_or_inf_are_refused():
    with pytest.raises(DataError, match="contain NaN"):
        check_finite_features(np.array([[1.0, np.nan]]), "example")
    with pytest.raises(DataError, match="contain inf"):
        check_finite_features(np.array([[1.0, -np.inf]]), "example")
    with pytest.raises(DataError, match="labels of example contain NaN or inf"):
        encode_labels(np.array([1.0, np.nan]), "example")
