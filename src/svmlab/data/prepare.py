"""From raw arrays to a solver-ready split: labels to +1/-1, finiteness checks, the seeded
stratified split, feature scaling fitted on the training part only, and the CSR layout."""

from __future__ import annotations

import hashlib
import json
import math

import numpy as np
import scipy.sparse as sp

from svmlab.errors import DataError

_INT32_MAX = np.iinfo(np.int32).max


def _plain(value: float) -> int | float:
    """A label value as it appears in a file: 2.0 -> 2, 0.5 -> 0.5."""
    return int(value) if float(value).is_integer() else float(value)


def encode_labels(y: np.ndarray, where: str) -> tuple[np.ndarray, tuple]:
    """Map the two label values of ``y`` to -1.0 (the smaller) and +1.0 (the larger).

    Returns the mapped labels and ``classes`` = (original negative, original positive).
    """
    y = np.asarray(y, dtype=np.float64)
    if not np.all(np.isfinite(y)):
        raise DataError(f"the labels of {where} contain NaN or inf")
    values = np.unique(y)
    if len(values) != 2:
        shown = ", ".join(str(_plain(v)) for v in values[:10])
        shown += ", ..." if len(values) > 10 else ""
        what = "only one label value" if len(values) == 1 else f"{len(values)} label values"
        raise DataError(f"{where} has {what} ({shown}); a binary dataset needs exactly two")
    classes = (_plain(values[0]), _plain(values[1]))
    return np.where(y == values[1], 1.0, -1.0), classes


def encode_test_labels(y: np.ndarray, classes: tuple, where: str) -> np.ndarray:
    """Map test labels with the ``classes`` found in the training labels."""
    y = np.asarray(y, dtype=np.float64)
    if not np.all(np.isfinite(y)):
        raise DataError(f"the labels of {where} contain NaN or inf")
    unknown = sorted({_plain(v) for v in np.unique(y)} - set(classes))
    if unknown:
        raise DataError(
            f"{where} has label values {unknown} that the training labels {classes} do not have"
        )
    return np.where(y == classes[1], 1.0, -1.0)


def check_finite_features(X: np.ndarray, where: str) -> None:
    """Refuse NaN or inf in a feature matrix, saying which."""
    values = X.data if sp.issparse(X) else X
    for bad, test in (("NaN", np.isnan), ("inf", np.isinf)):
        if np.any(test(values)):
            raise DataError(f"the features of {where} contain {bad}")


def split_sizes(n: int, test_fraction: float) -> tuple[int, int]:
    """(n_train, n_test) of ``stratified_split`` on n samples (scikit-learn rounds n_test up)."""
    n_test = math.ceil(test_fraction * n)
    return n - n_test, n_test


def stratified_split(
    y: np.ndarray, test_fraction: float, seed: int, where: str
) -> tuple[np.ndarray, np.ndarray]:
    """Row indices (train, test) of a seeded split that keeps the class proportions."""
    try:
        from sklearn.model_selection import train_test_split  # imported here: a light CLI

        train, test = train_test_split(
            np.arange(len(y)), test_size=test_fraction, stratify=y, random_state=seed
        )
    except ValueError as exc:  # too few samples of a class for the requested split
        raise DataError(f"cannot split {where} with test_fraction={test_fraction}: {exc}") from exc
    for part, rows in (("training", train), ("test", test)):
        if len(np.unique(y[rows])) < 2:
            raise DataError(
                f"the {part} part of {where} has only one class after the split with "
                f"test_fraction={test_fraction}; the smaller class is too small"
            )
    return train, test


def standardize(X_train: np.ndarray, X_test: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Centre and scale each feature with the training mean and standard deviation.

    Constant features are centred but not scaled.
    """
    mean = X_train.mean(axis=0)
    std = X_train.std(axis=0)
    scale = np.where(std > 0, std, 1.0)
    return (X_train - mean) / scale, (X_test - mean) / scale


def max_abs_scale(
    X_train: sp.csr_matrix, X_test: sp.csr_matrix
) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    """Divide each feature by its largest absolute training value; zeros stay zeros.

    Features that are zero throughout the training set are left as they are.
    """
    max_abs = abs(X_train).max(axis=0).toarray().ravel()
    scale = np.where(max_abs > 0, max_abs, 1.0)
    scaled = []
    for X in (X_train, X_test):
        X = X.copy()
        X.data /= scale[X.indices]
        scaled.append(X)
    return scaled[0], scaled[1]


def as_csr32(X: sp.spmatrix, where: str) -> sp.csr_matrix:
    """CSR float64 with sorted int32 indices and indptr, in new, writable arrays.

    scikit-learn's LIBLINEAR and LIBSVM wrappers refuse int64 index arrays, which is what
    ``load_svmlight_file`` returns. ``X``'s arrays may be read-only memory maps of the parsed
    files' cache, which compiled solvers would see as another type (and sorting would write).
    """
    X = sp.csr_matrix(X, dtype=np.float64)
    if X.nnz > _INT32_MAX or X.shape[1] > _INT32_MAX:
        raise DataError(
            f"{where} has {X.nnz} nonzeros and {X.shape[1]} features; "
            f"int32 sparse indices allow at most {_INT32_MAX} of each"
        )
    X = sp.csr_matrix(
        (X.data.copy(), X.indices.astype(np.int32), X.indptr.astype(np.int32)), shape=X.shape
    )
    X.sort_indices()
    return X


def array_digest(meta: dict, *arrays: np.ndarray) -> str:
    """sha256 over ``meta`` (as sorted JSON), then each array's dtype, shape and C-order bytes."""
    digest = hashlib.sha256(json.dumps(meta, sort_keys=True).encode())
    for array in arrays:
        array = np.ascontiguousarray(array)
        digest.update(f"{array.dtype.str}{array.shape}".encode())
        digest.update(array.data)
    return digest.hexdigest()
