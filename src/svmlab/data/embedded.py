"""Datasets that ship with scikit-learn; ``breast_cancer`` is the project's default dataset."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from svmlab.data.dataset import Dataset, DatasetInfo
from svmlab.data.entry import TEST_FRACTION, Entry, flag
from svmlab.data.prepare import (
    array_digest,
    check_finite_features,
    encode_labels,
    split_sizes,
    standardize,
    stratified_split,
)


@dataclass(frozen=True, kw_only=True)
class EmbeddedEntry(Entry):
    """A dataset loaded from an installed package, split by ``test_fraction`` with the seed."""

    kind: ClassVar[str] = "embedded"
    loader: Callable[[], tuple[np.ndarray, np.ndarray]]  # () -> (X, y)
    source: str  # the loader's import path
    n_rows: int
    n_features: int

    def load(self, params: dict, *, seed: int, data_dir=None, cache_dir=None) -> Dataset:
        X, y_raw = self.loader()
        X = np.ascontiguousarray(X, dtype=np.float64)
        check_finite_features(X, self.name)
        y, classes = encode_labels(y_raw, self.name)
        train, test = stratified_split(y, params["test_fraction"], seed, self.name)
        X_train, X_test = X[train], X[test]
        if params["standardize"]:
            X_train, X_test = standardize(X_train, X_test)
        digest = array_digest({"source": self.source}, X, np.asarray(y_raw))
        return Dataset(
            self.name,
            X_train,
            y[train],
            X_test,
            y[test],
            classes,
            digest,
            self.source,
            dict(params),
        )

    def info(self, data_dir=None, cache_dir=None) -> DatasetInfo:
        n_train, n_test = split_sizes(self.n_rows, TEST_FRACTION.default)
        return DatasetInfo(self.name, self.kind, n_train, n_test, self.n_features, "embedded")


def _breast_cancer() -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_breast_cancer  # imported here: `svmlab datasets` starts fast

    return load_breast_cancer(return_X_y=True)


ENTRIES = (
    EmbeddedEntry(
        name="breast_cancer",
        description="Wisconsin diagnostic breast cancer (scikit-learn): 569 rows x 30 features; "
        "labels 0 = malignant -> -1, 1 = benign -> +1",
        params=(TEST_FRACTION, flag("standardize", True)),
        loader=_breast_cancer,
        source="sklearn.datasets.load_breast_cancer",
        n_rows=569,
        n_features=30,
    ),
)
