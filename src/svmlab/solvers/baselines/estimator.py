"""LIBLINEAR and LIBSVM (through scikit-learn) as svmlab solvers, run and certified like the
others.

scikit-learn exposes no per-iteration record of either library, so their trace has one row:
iteration = n_iter_ reported by the library, time_s = the library's fit time, and the objective
values of the final model on the training data (computed off the clock). LIBLINEAR with a
``tol_path`` records one row per tolerance instead (a tolerance sweep inside one run).
"""

import time
from numbers import Integral, Real
from typing import ClassVar

import numpy as np
import scipy.sparse as sp
from sklearn.svm import SVC, LinearSVC
from sklearn.utils._param_validation import Interval, StrOptions

from svmlab.errors import ConfigError
from svmlab.estimator.formulations import (
    L2,
    LOSSES,
    PENALTIES,
    Formulation,
    FreeBias,
    Hinge,
    NoBias,
    PenalisedBias,
)
from svmlab.estimator.kernels import resolve_gamma
from svmlab.estimator.models import KernelSVMClassifier, LinearSVMClassifier
from svmlab.estimator.trace import Trace

# (penalty, loss) -> values of `dual` LIBLINEAR has a solver for; dual="auto" picks one of them.
LIBLINEAR_SOLVERS = {
    ("l2", "squared_hinge"): (True, False),
    ("l2", "hinge"): (True,),
    ("l1", "squared_hinge"): (False,),
}


def _record_final_row(estimator, trace: Trace, n_iter: int, X, y: np.ndarray) -> None:
    """The one trace row of a library fit: its iteration count, time and training objectives."""
    with trace.paused():
        estimator._final_decision(X)  # the model is final: its training metrics share these
        trace.append(n_iter, **estimator._objective_values(X, y))


class Liblinear(LinearSVMClassifier):
    """LIBLINEAR via sklearn.svm.LinearSVC: linear SVM with l2 or l1 penalty, (squared) hinge loss.

    The parameters are LinearSVC's. Supported (penalty, loss, dual): ('l2', 'squared_hinge',
    True/False), ('l2', 'hinge', True), ('l1', 'squared_hinge', False). dual='auto' picks the
    dual problem when n_samples < n_features and the primal otherwise, where both exist.

    LIBLINEAR minimises objective_<loss>_<penalty> of `svmlab.estimator.objectives` exactly when
    fit_intercept=False. With fit_intercept=True it appends a constant feature of value
    intercept_scaling and regularises its weight like the others, i.e. it adds
    1/2 (intercept_ / intercept_scaling)^2 (penalty='l2') or |intercept_ / intercept_scaling|
    (penalty='l1') to the objective. The reported objectives (bias unregularised, as for every
    svmlab solver) are evaluated at its solution but are not what it minimised, so they can
    exceed the optimum of the unregularised-bias problem; a large intercept_scaling narrows the
    difference; its certificate is that of the problem it minimised (formulation
    ``<loss>_<penalty>_penalised_bias``). n_iter_ is LIBLINEAR's own count (iterations of the
    chosen solver's outer loop); converged_ means it stopped before max_iter. The trace has a
    single row (see module docstring).

    ``tol_path`` (tolerances, loosest first) fits LIBLINEAR from scratch at each tolerance, as a
    tolerance sweep does, and then at ``tol``: the trace has one row per fit, whose time_s is that
    fit's own time and whose objectives and certificate are its model's, so the time LIBLINEAR
    needs to reach an objective or a certified gap is read from the trace (the paper's "time to
    within 1 % of the optimum" of a library without a per-iteration record). The model is the last fit's; fit_time_s is the
    sum of all fits.
    """

    name = "liblinear"
    test_config = ({"tol": 1e-8, "max_iter": 100_000}, {"penalty": "l1"}, {"loss": "hinge"})

    _parameter_constraints: ClassVar[dict] = {
        "C": [Interval(Real, 0.0, None, closed="neither")],
        "loss": [StrOptions({"hinge", "squared_hinge"})],
        "penalty": [StrOptions({"l1", "l2"})],
        "dual": ["boolean", StrOptions({"auto"})],
        "fit_intercept": ["boolean"],
        "intercept_scaling": [Interval(Real, 0.0, None, closed="neither")],
        "tol": [Interval(Real, 0.0, None, closed="neither")],
        "max_iter": [Interval(Integral, 0, None, closed="left")],
        "random_state": ["random_state"],
        "tol_path": [list, tuple, None],
    }

    def __init__(
        self,
        C=1.0,
        *,
        loss="squared_hinge",
        penalty="l2",
        dual="auto",
        fit_intercept=True,
        intercept_scaling=1.0,
        tol=1e-4,
        max_iter=1000,
        random_state=None,
        tol_path=None,
    ):
        self.C = C
        self.loss = loss
        self.penalty = penalty
        self.dual = dual
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.tol = tol
        self.max_iter = max_iter
        self.random_state = random_state
        self.tol_path = tol_path

    def _validate_params(self) -> None:
        """scikit-learn's check of each parameter, then of the (penalty, loss, dual) triple."""
        super()._validate_params()
        path = list(self.tol_path or ())
        if any(isinstance(t, bool) or not isinstance(t, Real) or t <= 0 for t in path):
            raise ConfigError(
                f"tol_path must list positive tolerances, loosest first; got {self.tol_path!r}"
            )
        duals = LIBLINEAR_SOLVERS.get((self.penalty, self.loss), ())
        if not duals or (self.dual != "auto" and self.dual not in duals):
            supported = "; ".join(
                f"penalty={penalty!r}, loss={loss!r}, dual in {[*solver_duals, 'auto']}"
                for (penalty, loss), solver_duals in LIBLINEAR_SOLVERS.items()
            )
            raise ConfigError(
                f"LIBLINEAR has no solver for penalty={self.penalty!r}, loss={self.loss!r}, "
                f"dual={self.dual!r}. Supported combinations: {supported}"
            )

    def _fit(self, X, y, trace):
        if not self.tol_path:
            model = self._liblinear(X, y, self.tol)
            self._keep(model)
            _record_final_row(self, trace, model.n_iter_, X, y)
            return
        iteration = 0  # the trace's iterations never decrease
        for tol in [*self.tol_path, self.tol]:
            start = time.perf_counter()
            model = self._liblinear(X, y, tol)
            seconds = time.perf_counter() - start
            with trace.paused():
                self._keep(model)
                self._fit_decision = None
                iteration = max(iteration, int(model.n_iter_))
                certificate = self._weights_certificate(
                    X, y, self.coef_[0], float(self.intercept_[0])
                )
                row = {
                    k: [v]
                    for k, v in (self._objective_values(X, y) | certificate.metrics()).items()
                }
                trace.extend({"iteration": [iteration], "time_s": [seconds], **row})
        with trace.paused():
            self._final_decision(X)

    def _liblinear(self, X, y, tol: float) -> LinearSVC:
        return LinearSVC(
            C=self.C,
            loss=self.loss,
            penalty=self.penalty,
            dual=self.dual,
            fit_intercept=self.fit_intercept,
            intercept_scaling=self.intercept_scaling,
            tol=tol,
            max_iter=self.max_iter,
            random_state=self.random_state,
        ).fit(X, y)

    def _keep(self, model: LinearSVC) -> None:
        self.coef_ = model.coef_
        self.intercept_ = np.atleast_1d(np.asarray(model.intercept_, dtype=np.float64))
        self.converged_ = bool(model.n_iter_ < self.max_iter)
        # a cap that ended the fit is named: the run's time is then not a finish
        self.stop_reason_ = None if self.converged_ else f"max_iter={self.max_iter} iterations"

    def _stopping_rule(self) -> str:
        return f"LIBLINEAR's own stopping rule with tol={self.tol}, before max_iter={self.max_iter}"

    def _formulation(self) -> Formulation:
        """LinearSVC's loss and penalty, by the part names they share."""
        bias = PenalisedBias(self.intercept_scaling) if self.fit_intercept else NoBias()
        return Formulation(LOSSES[self.loss](), PENALTIES[self.penalty](), bias)


class Libsvm(KernelSVMClassifier):
    """LIBSVM via sklearn.svm.SVC: C-SVM with hinge loss, l2 (RKHS) penalty, unregularised bias.

    LIBSVM minimises exactly objective_hinge_l2, through its dual by SMO; tol bounds the dual
    KKT violation, and the primal value at the result is less accurate than the dual value.
    The parameters are SVC's; a gamma rule ('scale', ...) is resolved by `kernels.resolve_gamma`
    and stored in _gamma. LIBSVM's SMO is deterministic, so there is no random_state.
    Fitted: support_ (indices into the training rows), support_vectors_ (CSR if X was CSR),
    dual_coef_ (y_j alpha_j, dense), intercept_, n_support_ (total number of support vectors),
    and coef_ with the linear kernel; converged_ means SMO met its tolerance before max_iter
    (10**7 SMO iterations by default, not SVC's unlimited -1: an ill-scaled problem warns
    instead of running for many minutes).
    Its certificate uses LIBSVM's own dual point. The trace has a single row (see module
    docstring).
    """

    name = "libsvm"
    test_config = ({"tol": 1e-8}, {"kernel": "linear"}, {"kernel": "poly"})

    _parameter_constraints: ClassVar[dict] = {
        **KernelSVMClassifier._parameter_constraints,
        "C": [Interval(Real, 0.0, None, closed="neither")],
        "tol": [Interval(Real, 0.0, None, closed="neither")],
        "cache_size": [Interval(Real, 0.0, None, closed="neither")],
        "max_iter": [Interval(Integral, -1, None, closed="left")],
        "shrinking": ["boolean"],
    }

    def __init__(
        self,
        C=1.0,
        *,
        kernel="rbf",
        gamma="scale",
        degree=3,
        coef0=0.0,
        tol=1e-3,
        cache_size=200.0,
        max_iter=10_000_000,
        shrinking=True,
    ):
        self.C = C
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.tol = tol
        self.cache_size = cache_size
        self.max_iter = max_iter
        self.shrinking = shrinking

    def _fit(self, X, y, trace):
        self._gamma = resolve_gamma(self.gamma, X, self.kernel)
        model = SVC(
            C=self.C,
            kernel=self.kernel,
            gamma=self._gamma,
            degree=self.degree,
            coef0=self.coef0,
            tol=self.tol,
            cache_size=self.cache_size,
            max_iter=self.max_iter,
            shrinking=self.shrinking,
            random_state=0,  # seeds only probability estimates; keeps numpy's global RNG untouched
        ).fit(X, y)
        dual_coef = model.dual_coef_
        self.support_ = model.support_
        self.support_vectors_ = model.support_vectors_
        self.dual_coef_ = dual_coef.toarray() if sp.issparse(dual_coef) else dual_coef
        self.intercept_ = model.intercept_
        self.n_support_ = int(model.n_support_.sum())
        self.converged_ = bool(self.max_iter < 0 or model.n_iter_.max() < self.max_iter)
        # a cap that ended the fit is named: the run's time is then not a finish
        self.stop_reason_ = None if self.converged_ else f"max_iter={self.max_iter} iterations"
        _record_final_row(self, trace, model.n_iter_.max(), X, y)

    def _stopping_rule(self) -> str:
        limit = "" if self.max_iter < 0 else f", before max_iter={self.max_iter}"
        return f"LIBSVM's maximal KKT violation <= tol={self.tol}{limit}"

    def _formulation(self) -> Formulation:
        return Formulation(Hinge(), L2(), FreeBias())

    def _solver_duals(self, y: np.ndarray) -> tuple[np.ndarray, ...]:
        alpha = np.zeros(len(y))
        alpha[self.support_] = np.abs(self.dual_coef_[0])
        return (alpha,)
