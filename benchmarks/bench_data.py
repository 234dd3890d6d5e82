"""Data for the benchmarks: a LIBSVM dataset's official split, or a seeded split when the test
file is not at hand (the shared LIBSVM folder has no w8a.t), or svmlab's dataset w8a_split."""

from __future__ import annotations

import os

import numpy as np

SPLITS = {"w8a_split": ("w8a", {"test_fraction": 0.25})}  # as conf/dataset/w8a_split.yaml


def load_split(dataset: str, data_dir: str, **params):
    """(X_train, y_train, X_test, y_test) with labels +-1: the official split (``params``: the
    dataset's loading parameters), or, when the test file is not available, a stratified 80/20
    split of the training file with seed 0; ``w8a_split``: w8a's training file split 75/25
    by seed 0, as svmlab's dataset of that name."""
    from sklearn.datasets import load_svmlight_file
    from sklearn.model_selection import train_test_split

    from svmlab import data
    from svmlab.errors import DownloadError

    if dataset in SPLITS:
        dataset, split = SPLITS[dataset]
        params = {**split, **params}
    try:
        ds = data.load(dataset, data_dir=data_dir, **params)
        return ds.X_train, ds.y_train, ds.X_test, ds.y_test
    except DownloadError:
        X, y = load_svmlight_file(os.path.join(data_dir, dataset, dataset))
        X_train, X_test, y_train, y_test = train_test_split(
            X, np.where(y > 0, 1.0, -1.0), test_size=0.2, stratify=y, random_state=0
        )
        return X_train.tocsr(), y_train, X_test.tocsr(), y_test
