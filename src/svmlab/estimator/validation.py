"""Input checks at the estimator boundary: finite values, int32 CSR indices, two classes."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.utils.multiclass import check_classification_targets

from svmlab.errors import DataError

MAX_LISTED_LABELS = 10


def finite_csr_int32(X):
    """Reject NaN/inf in X; give CSR input int32 indices (LIBSVM and LIBLINEAR refuse int64).

    Arrays come back C-contiguous and writeable, copied only when they are not (Fortran-ordered
    or read-only input): numba compiles a solver once per array layout and read-only flag, so
    any other kind of array would compile it again, inside the solver's time.
    """
    values = X.data if sp.issparse(X) else X
    if not np.isfinite(values).all():
        n_nan, n_inf = int(np.isnan(values).sum()), int(np.isinf(values).sum())
        raise DataError(
            f"X contains {n_nan} NaN and {n_inf} inf values; svmlab solvers need finite "
            "feature values: drop or impute those entries"
        )
    if not sp.issparse(X):
        return _compiled_layout(X)
    if (X.indices.dtype != np.int32 or X.indptr.dtype != np.int32) and (
        X.nnz > np.iinfo(np.int32).max
    ):
        raise DataError(f"X has {X.nnz} stored entries; CSR input is limited to 2**31 - 1")
    parts = (X.data, X.indices, X.indptr)
    kept = tuple(_compiled_layout(a, dtype) for a, dtype in zip(parts, (None, np.int32, np.int32)))
    if all(a is b for a, b in zip(parts, kept)):
        return X
    return type(X)(kept, shape=X.shape)


def _compiled_layout(a: np.ndarray, dtype=None) -> np.ndarray:
    """``a`` (of ``dtype``) C-contiguous and writeable; ``a`` itself when it already is."""
    return np.require(a, dtype, ["C", "W"])


def listed(labels: np.ndarray) -> str:
    """At most MAX_LISTED_LABELS labels, for an error message."""
    shown = ", ".join(repr(label) for label in labels[:MAX_LISTED_LABELS].tolist())
    return f"[{shown}{', ...' if len(labels) > MAX_LISTED_LABELS else ''}]"


def two_classes(y: np.ndarray) -> np.ndarray:
    """The sorted labels of y, which must take exactly two values."""
    check_classification_targets(y)
    classes = np.unique(y)
    if len(classes) == 1:
        raise DataError(
            f"y has 1 class (values found: {listed(classes)}); a binary SVM "
            "needs samples of exactly two classes"
        )
    if len(classes) > 2:
        raise DataError(
            f"Only binary classification is supported: y has {len(classes)} classes "
            f"(values found: {listed(classes)}); svmlab solvers need exactly two"
        )
    return classes


def tiny_subset(y: np.ndarray, per_class: int = 4) -> np.ndarray:
    """Indices of the first ``per_class`` samples of each class of y in {-1, +1}, in order."""
    return np.sort(
        np.concatenate([np.flatnonzero(y == label)[:per_class] for label in (-1.0, 1.0)])
    )
