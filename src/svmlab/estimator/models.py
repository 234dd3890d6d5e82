"""The two model families of svmlab: a linear model and a kernel expansion.

Each family turns its fitted attributes into the decision function and the regulariser norms,
so a solver built on one of them only has to implement `_fit` and set those attributes.
"""

from numbers import Integral, Real
from typing import ClassVar

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from svmlab.estimator.base import SVMClassifier
from svmlab.estimator.kernels import KERNELS, Kernel


class LinearSVMClassifier(SVMClassifier):
    """f(x) = coef_[0] . x + intercept_[0].

    `_fit` sets coef_ (shape (1, n_features)) and intercept_ (shape (1,), 0 without intercept).
    """

    def _decision_function(self, X) -> np.ndarray:
        return X @ self.coef_[0] + self.intercept_[0]

    def _regularizer_norms(self) -> tuple[float, float]:
        w = self.coef_[0]
        return float(w @ w), float(np.abs(w).sum())


class KernelSVMClassifier(SVMClassifier):
    """f(x) = sum_j dual_coef_[0, j] K(support_vectors_[j], x) + intercept_[0].

    A subclass has the parameters kernel, gamma, degree and coef0 (and merges the constraints
    below into its own). Its `_fit` sets support_vectors_ (dense or CSR, shape (n_SV, n_features)),
    dual_coef_ (dense, shape (1, n_SV), entry j = y_j alpha_j), intercept_ (shape (1,)) and
    _gamma (from `kernels.resolve_gamma`). The squared RKHS norm is
    ||w||^2 = dual_coef_ K(SV, SV) dual_coef_^T. With the linear kernel the model is also linear:
    coef_ exists and ||w||_1 is reported.
    """

    supported_kernels = KERNELS
    _parameter_constraints: ClassVar[dict] = {
        "kernel": [StrOptions(set(KERNELS))],
        "gamma": [StrOptions({"scale", "auto"}), Interval(Real, 0.0, None, closed="neither")],
        "degree": [Interval(Integral, 1, None, closed="left")],
        "coef0": [Interval(Real, None, None, closed="neither")],
    }

    def _kernel(self) -> Kernel:
        return Kernel(self.kernel, self._gamma, self.degree, self.coef0)

    def _decision_function(self, X) -> np.ndarray:
        return self._kernel().dot(X, self.support_vectors_, self.dual_coef_[0]) + self.intercept_[0]

    def _regularizer_norms(self) -> tuple[float, float | None]:
        a = self.dual_coef_[0]
        squared_l2 = float(a @ self._kernel().dot(self.support_vectors_, self.support_vectors_, a))
        l1 = float(np.abs(self.coef_).sum()) if self.kernel == "linear" else None
        return squared_l2, l1

    @property
    def coef_(self) -> np.ndarray:
        """w = dual_coef_ @ support_vectors_, shape (1, n_features); linear kernel only."""
        if self.kernel != "linear":
            raise AttributeError("coef_ is only available with kernel='linear'")
        return np.asarray(self.dual_coef_ @ self.support_vectors_, dtype=np.float64)
