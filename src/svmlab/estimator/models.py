"""The two model families of svmlab: a linear model and a kernel expansion.

Each family turns its fitted attributes into the decision function, the regulariser norms and
the optimality certificate, so a solver built on one of them implements `_fit`,
`_stopping_rule` and `_formulation` (what it minimises), and sets those attributes.
"""

from __future__ import annotations

from abc import abstractmethod
from numbers import Integral, Real
from typing import ClassVar

import numpy as np
import scipy.sparse as sp
from sklearn.utils._param_validation import Interval, StrOptions

from svmlab.estimator.base import SVMClassifier
from svmlab.estimator.certificates import (
    CERTIFICATE_TOL,
    Certificate,
    KernelImage,
    LinearImage,
    certify,
)
from svmlab.estimator.formulations import Formulation
from svmlab.estimator.kernel_names import GAMMA_RULES, KERNELS
from svmlab.estimator.kernels import Kernel


class _CertifiedModel(SVMClassifier):
    """The certificate of `_formulation()` for a model with weights or an expansion."""

    def _formulation(self) -> Formulation:
        """The problem the solver minimises (its loss, penalty and bias); a solver that
        certifies its own formulation overrides `_certificate` instead."""
        raise NotImplementedError(f"{type(self).__name__} names no Formulation")

    def _solver_duals(self, y: np.ndarray) -> tuple[np.ndarray, ...]:
        """Dual points the solver produced itself (none by default)."""
        return ()

    def _certificate_tol(self) -> float:
        """The relative gap the final certificate must show before the free-set refinement
        is tried: a solver whose stopping rule is a certified gap overrides it with its own
        tolerance."""
        return CERTIFICATE_TOL

    def _certificate(self, X, y: np.ndarray) -> Certificate:
        squared_l2, l1 = self._regularizer_norms()
        return self._certify(
            X,
            y,
            y * self._decision_of(X),
            squared_l2,
            l1,
            float(self.intercept_[0]),
            self._dual_image(X, y),
            self._solver_duals(y),
            tol=self._certificate_tol(),
        )

    def _certify(
        self, X, y, margins, squared_l2, l1, b, image, duals=(), refine=True, tol=0.0
    ) -> Certificate:
        """The certificate of a model with these margins, norms and bias under
        `_formulation()` (``refine``, ``tol``: see `certificates.certify`)."""
        form = self._formulation()
        return certify(
            form, self.C, margins, form.regulariser(squared_l2, l1, b), image, duals, refine, tol
        )

    @abstractmethod
    def _dual_image(self, X, y: np.ndarray):
        """The DualImage of the fitted model's feature map (see `certificates`)."""


class LinearSVMClassifier(_CertifiedModel):
    """f(x) = coef_[0] . x + intercept_[0].

    `_fit` sets coef_ (shape (1, n_features)) and intercept_ (shape (1,), 0 without intercept).
    A solver family may set ``_free_set_ascent`` to the compiled solver of the hinge's l2
    free-set refinement (see `certificates.LinearImage`).
    """

    _free_set_ascent = None

    def _decision_function(self, X) -> np.ndarray:
        return X @ self.coef_[0] + self.intercept_[0]

    def _regularizer_norms(self) -> tuple[float, float]:
        w = self.coef_[0]
        return float(w @ w), float(np.abs(w).sum())

    def _dual_image(self, X, y):
        return self._linear_image(X, y, self.coef_[0], float(self.intercept_[0]))

    def _linear_image(self, X, y, w: np.ndarray, b: float) -> LinearImage:
        return LinearImage(X, y, w, b, self._formulation().bias.scale, self._free_set_ascent)

    def _weights_certificate(
        self, X, y: np.ndarray, w: np.ndarray, b: float = 0.0, refine: bool = True
    ) -> Certificate:
        """The certificate of the weights (w, b), e.g. an iterate, on (X, y) (``refine``: see
        `certificates.certify`)."""
        return self._certify(
            X,
            y,
            y * (X @ w + b),
            float(w @ w),
            float(np.abs(w).sum()),
            b,
            self._linear_image(X, y, w, b),
            refine=refine,
        )


class KernelSVMClassifier(_CertifiedModel):
    """f(x) = sum_j dual_coef_[0, j] K(support_vectors_[j], x) + intercept_[0].

    A subclass has the parameters kernel, gamma, degree and coef0 (and merges the constraints
    below into its own). Its `_fit` sets support_vectors_ (dense or CSR, shape (n_SV, n_features)),
    dual_coef_ (dense, shape (1, n_SV), entry j = y_j alpha_j), intercept_ (shape (1,)) and
    _gamma (from `kernels.resolve_gamma`; public as gamma_). The squared RKHS norm is
    ||w||^2 = dual_coef_ K(SV, SV) dual_coef_^T. With the linear kernel the model is also linear:
    coef_ exists and ||w||_1 is reported. A solver family may set ``_free_set_ascent`` to the
    compiled solver of the hinge's l2 free-set refinement (see `certificates.KernelImage`).
    """

    supported_kernels = KERNELS
    _free_set_ascent = None
    _parameter_constraints: ClassVar[dict] = {
        "kernel": [StrOptions(set(KERNELS))],
        "gamma": [StrOptions(set(GAMMA_RULES)), Interval(Real, 0.0, None, closed="neither")],
        "degree": [Interval(Integral, 1, None, closed="left")],
        "coef0": [Interval(Real, None, None, closed="neither")],
    }

    @property
    def gamma_(self) -> float | None:
        """The numeric gamma of the fitted model (a rule such as 'avg_sq_dist' resolved on the
        training set); None with the linear kernel, which has none."""
        return None if self.kernel == "linear" else self._gamma

    def _kernel(self) -> Kernel:
        return Kernel(self.kernel, self._gamma, self.degree, self.coef0)

    def _decision_function(self, X) -> np.ndarray:
        """With the linear kernel X w + b (w = coef_, one product per row instead of one per
        support vector), else the kernel expansion."""
        if self.kernel == "linear":
            return X @ self.coef_[0] + self.intercept_[0]
        return self._kernel().dot(X, self.support_vectors_, self.dual_coef_[0]) + self.intercept_[0]

    def _regularizer_norms(self) -> tuple[float, float | None]:
        """With the training rows' decision values at hand (`_final_decision`) and support
        vectors that are rows of them (``support_``), ||w||^2 = sum_j c_j (f(sv_j) - b): no
        second kernel product over the support vectors."""
        if self.kernel == "linear":
            w = self.coef_[0]
            return float(w @ w), float(np.abs(w).sum())
        a = self.dual_coef_[0]
        shared = self._fit_decision
        if shared is not None and self._support_rows(shared[0]) is not None:
            return float(a @ (shared[1][self.support_] - self.intercept_[0])), None
        return float(a @ self._kernel().dot(self.support_vectors_, self.support_vectors_, a)), None

    def _support_rows(self, X) -> np.ndarray | None:
        """``support_`` (indices of training rows) if the support vectors are those rows of X,
        else None (a solver whose support vectors are not training points sets no support_)."""
        support, vectors = getattr(self, "support_", None), self.support_vectors_
        if (
            support is None
            or sp.issparse(X) != sp.issparse(vectors)
            or X.shape[1] != vectors.shape[1]
            or np.any(support >= X.shape[0])
        ):
            return None
        rows = X[support]
        same = (rows != vectors).nnz == 0 if sp.issparse(rows) else np.array_equal(rows, vectors)
        return support if same else None

    def _dual_image(self, X, y):
        b, scale = float(self.intercept_[0]), self._formulation().bias.scale
        if self.kernel == "linear":
            return LinearImage(X, y, self.coef_[0], b, scale)
        support = self._support_rows(X)
        # ||w||^2 only where it costs no kernel product and the image can use it
        known = (
            support is not None and self._fit_decision is not None and self._fit_decision[0] is X
        )
        return KernelImage(
            X,
            y,
            self._kernel(),
            self.support_vectors_,
            self.dual_coef_[0],
            b,
            scale,
            support,
            self._regularizer_norms()[0] if known else None,
            self._free_set_ascent,
        )

    @property
    def coef_(self) -> np.ndarray:
        """w = dual_coef_ @ support_vectors_, shape (1, n_features); linear kernel only."""
        if self.kernel != "linear":
            raise AttributeError("coef_ is only available with kernel='linear'")
        return np.asarray(self.dual_coef_ @ self.support_vectors_, dtype=np.float64)
