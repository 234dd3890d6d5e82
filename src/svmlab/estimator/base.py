"""The estimator contract shared by every svmlab solver (binary classification).

`SVMClassifier.fit` does everything that is not numerics: parameter and input validation, the
label mapping to +1/-1, the timer and trace, and the check of the learned model. A solver
provides three hooks:

    _fit(X, y, trace)        train on validated X (float64, dense or CSR with int32 indices) and
                             y in {-1.0, +1.0}; record at least the final iteration in `trace`
    _decision_function(X)    f(x) = w.phi(x) + b of the fitted model, float64 of shape (n,)
    _regularizer_norms()     (||w||_2^2, ||w||_1 or None) of the fitted model

`models.LinearSVMClassifier` and `models.KernelSVMClassifier` provide the last two for linear
models and kernel expansions, so a solver built on them writes only `_fit`.
"""

from abc import ABCMeta, abstractmethod
from typing import ClassVar

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils import column_or_1d
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_consistent_length, check_is_fitted, validate_data

from svmlab.errors import DataError, TrainingError
from svmlab.estimator.objectives import primal_objectives
from svmlab.estimator.trace import Trace

__all__ = ["SVMClassifier", "Trace"]

MAX_LISTED_LABELS = 10


def _finite_csr_int32(X):
    """Reject NaN/inf in X; give CSR input int32 indices (LIBSVM and LIBLINEAR refuse int64)."""
    values = X.data if sp.issparse(X) else X
    if not np.isfinite(values).all():
        n_nan, n_inf = int(np.isnan(values).sum()), int(np.isinf(values).sum())
        raise DataError(
            f"X contains {n_nan} NaN and {n_inf} inf values; svmlab solvers need finite "
            "feature values: drop or impute those entries"
        )
    if sp.issparse(X) and (X.indices.dtype != np.int32 or X.indptr.dtype != np.int32):
        if X.nnz > np.iinfo(np.int32).max:
            raise DataError(f"X has {X.nnz} stored entries; CSR input is limited to 2**31 - 1")
        X = type(X)((X.data, X.indices.astype(np.int32), X.indptr.astype(np.int32)),
                    shape=X.shape)
    return X


def _listed(labels: np.ndarray) -> str:
    shown = ", ".join(repr(label) for label in labels[:MAX_LISTED_LABELS].tolist())
    return f"[{shown}{', ...' if len(labels) > MAX_LISTED_LABELS else ''}]"


def _two_classes(y: np.ndarray) -> np.ndarray:
    """The sorted labels of y, which must take exactly two values."""
    check_classification_targets(y)
    classes = np.unique(y)
    if len(classes) == 1:
        raise DataError(f"y has 1 class (values found: {_listed(classes)}); a binary SVM "
                        "needs samples of exactly two classes")
    if len(classes) > 2:
        raise DataError(f"Only binary classification is supported: y has {len(classes)} classes "
                        f"(values found: {_listed(classes)}); svmlab solvers need exactly two")
    return classes


class SVMClassifier(ClassifierMixin, BaseEstimator, metaclass=ABCMeta):
    """Base class of every svmlab solver (binary classification).

    Accepts any two labels: classes_[0] is mapped to -1 and classes_[1] to +1 inside the solver,
    and a positive decision function means classes_[1]. Input is dense or CSR; CSR stays sparse.
    """

    supported_kernels: ClassVar[tuple[str, ...]] = ("linear",)
    _parameter_constraints: ClassVar[dict] = {}

    def fit(self, X, y, callback=None):
        """Train on (X, y); `callback(row)` receives each trace row (a dict) as it is recorded.

        Sets classes_ (the two labels, sorted), n_features_in_, trace_ (the Trace; its time_s
        counts from the end of input validation) and n_iter_ (iteration of the last trace row).
        Raises DataError for NaN/inf in X or y without exactly two classes, and TrainingError
        if the learned model holds NaN/inf.
        """
        self._validate_params()
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=np.float64,
                             ensure_all_finite=False)
        X = _finite_csr_int32(X)
        self.classes_ = _two_classes(y)
        y_pm = np.where(y == self.classes_[1], 1.0, -1.0)
        trace = Trace(callback)
        self._fit(X, y_pm, trace)
        if not len(trace):
            raise TrainingError(f"{type(self).__name__} recorded no iteration in its trace")
        self._check_finite_model()
        self.trace_ = trace
        self.n_iter_ = int(trace.columns()["iteration"][-1])
        return self

    def decision_function(self, X) -> np.ndarray:
        """f(x) = w.phi(x) + b; positive means classes_[1]."""
        return self._decision_function(self._validated_X(X))

    def predict(self, X) -> np.ndarray:
        """The original label of each row: classes_[1] where f(x) > 0, else classes_[0]."""
        positive = self.decision_function(X) > 0
        return self.classes_[positive.astype(int)]

    def objectives(self, X, y) -> dict[str, float]:
        """Objective values (see `svmlab.estimator.objectives`) of the fitted model on (X, y)."""
        X = self._validated_X(X)
        y = column_or_1d(y)
        check_consistent_length(X, y)
        unseen = np.setdiff1d(y, self.classes_)
        if len(unseen):
            raise DataError(f"y contains labels {_listed(unseen)} the model was not trained on; "
                            f"its classes are {_listed(self.classes_)}")
        return self._objective_values(X, np.where(y == self.classes_[1], 1.0, -1.0))

    def _objective_values(self, X, y_pm: np.ndarray) -> dict[str, float]:
        """Objective values on validated X and y in {-1, +1}."""
        squared_l2, l1 = self._regularizer_norms()
        return primal_objectives(y_pm * self._decision_function(X), squared_l2, l1, self.C)

    def _validated_X(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False,
                          ensure_all_finite=False)
        return _finite_csr_int32(X)

    def _check_finite_model(self) -> None:
        """Raise TrainingError if a learned float attribute holds NaN or inf."""
        for name, value in vars(self).items():
            if name.startswith("_") or not name.endswith("_"):
                continue
            values = np.asarray(value.data if sp.issparse(value) else value)
            if values.dtype.kind in "fc" and not np.isfinite(values).all():
                raise TrainingError(
                    f"{type(self).__name__} learned non-finite values in {name}; the model must "
                    "be finite: check the scaling of X, C and the solver's step parameters"
                )

    @abstractmethod
    def _fit(self, X, y: np.ndarray, trace: Trace) -> None:
        """Train on validated X and y in {-1.0, +1.0}; record at least the final iteration."""

    @abstractmethod
    def _decision_function(self, X) -> np.ndarray:
        """f(x) = w.phi(x) + b on validated X, float64 of shape (n_samples,)."""

    @abstractmethod
    def _regularizer_norms(self) -> tuple[float, float | None]:
        """(||w||_2^2, ||w||_1) of the fitted model; ||w||_1 is None where undefined."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        tags.input_tags.sparse = True
        return tags
