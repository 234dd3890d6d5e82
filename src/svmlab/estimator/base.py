"""The estimator contract shared by every svmlab solver (binary classification).

`SVMClassifier.fit` does everything that is not numerics, the same way for every solver:
parameter and input validation, the label mapping to +1/-1, compiling the solver's numba code
(or loading it from numba's cache) on a tiny problem before the clock starts, the solver clock
and trace, the check of the learned model, the training accuracy, objectives and optimality
certificate after the clock stops (all from one computation of the training decision values),
and the ConvergenceWarning when the solver's stopping rule did not hold. The warm-up runs once
per process for each class, parameter set and input format (dense or CSR): a later fit of the
same runs the code already loaded, and its compile_time_s_ is 0; `warm_up` runs it ahead of the
fit, for a caller that times it apart or holds a lock around it. A solver provides:

    _fit(X, y, trace)        train on validated X (float64, dense or CSR with int32 indices) and
                             y in {-1.0, +1.0}; record at least the final iteration in `trace`;
                             set converged_ (True only if its stated stopping rule held) and,
                             where another rule can end the fit first (a paper's own rule),
                             stop_reason_ (the rule that ended it, in words; a cap as
                             `max_<param>=<value> ...`, which the claims read as capped)
    _stopping_rule()         that rule in words, with its tolerance (tags and warnings)
    _decision_function(X)    f(x) = w.phi(x) + b of the fitted model, float64 of shape (n,)
    _regularizer_norms()     (||w||_2^2, ||w||_1 or None) of the fitted model
    _certificate(X, y)       the Certificate of its formulation (`certificates`), or None
    _warm_up                 parameters of the warm-up fit, or None when nothing is compiled

A solver that can take a starting point declares ``warm_startable`` and reads in `_fit` the
fitted estimator that `fit` is given as ``start`` (``self._start``, None for a cold fit): a dual
solver starts from its solution's dual point (made feasible for its own C), a primal one from
its w. A solver may also declare the optional features that `svmlab train` uses when present
(the base class declares each, with the value that means "none"):

    traces_eval_set          True if its trace rows report test_accuracy on the ``eval_set``
                             that `fit` is given (read during `_fit` as ``self._eval_set``)
    records_                 per-event records of the fit beside its trace, by name ({} here)
    n_support_, n_passes_, gamma_, stop_reason_
                             fitted features that only some solvers have (None here)

`models.LinearSVMClassifier` and `models.KernelSVMClassifier` provide the decision function,
the norms and the certificate (from `_formulation()`) for linear models and kernel expansions.
"""

from __future__ import annotations

import time
import warnings
from abc import ABCMeta, abstractmethod
from typing import ClassVar

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import column_or_1d
from sklearn.utils.validation import check_consistent_length, check_is_fitted, validate_data

from svmlab.errors import DataError, TrainingError
from svmlab.estimator.certificates import Certificate
from svmlab.estimator.objectives import primal_objectives
from svmlab.estimator.trace import Trace
from svmlab.estimator.validation import finite_csr_int32, listed, tiny_subset, two_classes

__all__ = ["SVMClassifier", "Trace", "declared_solvers"]

#: the warm-ups this process has run, by (class, parameters, CSR input)
_WARMED_UP: set[tuple] = set()


class SVMClassifier(ClassifierMixin, BaseEstimator, metaclass=ABCMeta):
    """Base class of every svmlab solver (binary classification).

    Accepts any two labels: classes_[0] is mapped to -1 and classes_[1] to +1 inside the solver,
    and a positive decision function means classes_[1]. Input is dense or CSR; CSR stays sparse.
    """

    supported_kernels: ClassVar[tuple[str, ...]] = ("linear",)
    _parameter_constraints: ClassVar[dict] = {}
    #: parameter overrides of the warm-up fit that compiles the solver's numba code (or loads it
    #: from numba's cache) before the clock starts; None: the solver compiles nothing
    _warm_up: ClassVar[dict | None] = None
    #: (X, f(X)) for the training rows of a fit whose model is final (see `_final_decision`)
    _fit_decision: ClassVar[tuple | None] = None
    #: whether the trace reports test_accuracy on the eval_set given to `fit` (off the clock)
    traces_eval_set: ClassVar[bool] = False
    #: whether `fit` can start from another fit's solution (``start``): e.g. the previous point
    #: of a path in C, whose fits then time the path, not a fit from scratch
    warm_startable: ClassVar[bool] = False
    #: the fitted estimator the fit under way starts from (set by `fit`), None: from scratch
    _start: SVMClassifier | None = None

    # A solver declares itself on its class: `declared_solvers` finds every class that sets
    # `name` in its own body (a base class sets none; a subclass that sets none is no solver of
    # its own), `svmlab.solvers.registered` after importing every solver of svmlab.
    #: ``solver=<name>`` selects it; its Hydra node is its ``__init__``'s defaults
    name: ClassVar[str | None] = None
    #: the parameter sets the conformance suite checks it with; the first one must fit small
    #: problems quickly and tightly
    test_config: ClassVar[tuple[dict, ...]] = ({},)
    #: parameters that stop it long before its stopping rule can hold (a ConvergenceWarning)
    test_truncated: ClassVar[dict] = {"max_iter": 1}
    #: the parameter holding the certified relative gap its converged_ stands for (its default
    #: at most 1e-2); None where converged_ follows another rule (the reference libraries' own
    #: tolerances, budgeted solvers that run their epochs)
    gap_tol: ClassVar[str | None] = None

    # Optional fitted features: a solver that has one sets it when it fits; None means it has none.
    #: the number of support vectors of the fitted model
    n_support_: int | None = None
    #: passes over the training data, a solver's cost in its paper
    n_passes_: int | None = None
    #: the numeric kernel width of the fit (a gamma rule's value on its training set)
    gamma_: float | None = None
    #: the rule that ended the fit, in words, where another rule than `stopping_rule` can
    stop_reason_: str | None = None

    @property
    def records_(self) -> dict[str, dict[str, np.ndarray]]:
        """Per-event records of the fit beside its trace (e.g. a budget's merges), by name, as
        columns: none unless the solver keeps some."""
        return {}

    def fit(self, X, y, callback=None, eval_set=None, start=None):
        """Train on (X, y); `callback(row)` receives each trace row (a dict), off the clock;
        ``eval_set`` = (X_test, y_test) adds test_accuracy to every trace row of a solver that
        `traces_eval_set`; ``start``, an estimator of the same class fitted on the same rows
        (e.g. at a smaller C), is the starting point of a solver that is `warm_startable`.

        Sets classes_ (the two labels, sorted), n_features_in_, trace_, n_iter_ (iteration of
        the last trace row), fit_time_s_ (the solver's time alone), compile_time_s_ (the
        warm-up that compiled or loaded the solver's numba code), converged_, train_accuracy_
        and train_objectives_ (what `score` and `objectives` give on the training data),
        certificate_ (None where no certificate is computable), certificate_time_s_ (its
        cost beyond the shared training decision values) and warm_started_ (whether it started
        from ``start``: its times are then not those of a fit from scratch). Raises DataError
        for NaN/inf in X or y without exactly two classes, TrainingError if the learned model
        holds NaN/inf, and warns (ConvergenceWarning) when the stopping rule did not hold.
        """
        if eval_set is not None and not self.traces_eval_set:
            raise TypeError(
                f"{type(self).__name__} traces no eval_set (traces_eval_set is "
                "False); fit it without one"
            )
        self._check_start(start)
        self._eval_set, self._start = eval_set, start
        try:
            self._fit_checked(X, y, callback)
        finally:
            del self._eval_set, self._start
        self.warm_started_ = start is not None
        return self

    def _check_start(self, start) -> None:
        """TypeError unless ``start`` is None or a fitted estimator of this class, which must be
        `warm_startable`."""
        if start is None:
            return
        if not self.warm_startable:
            raise TypeError(
                f"{type(self).__name__} cannot start from another fit "
                "(warm_startable is False); fit it without start"
            )
        if type(start) is not type(self) or not hasattr(start, "trace_"):
            raise TypeError(
                f"start must be a fitted {type(self).__name__}; got {type(start).__name__}"
            )

    def _fit_checked(self, X, y, callback):
        """`fit` without its eval_set."""
        X, y_pm = self._fit_input(X, y)
        if self._start is not None and self._start.n_features_in_ != X.shape[1]:
            raise ValueError(
                f"start was fitted on {self._start.n_features_in_} features, X has "
                f"{X.shape[1]}: a fit starts from a fit on the same rows"
            )
        self.compile_time_s_ = self._compile(X, y_pm)
        self._fit_decision = None
        trace = Trace(callback)
        trace.clock.start()
        self._fit(X, y_pm, trace)
        self.fit_time_s_ = trace.clock.stop()
        if not len(trace):
            raise TrainingError(f"{type(self).__name__} recorded no iteration in its trace")
        if not hasattr(self, "converged_"):
            raise TypeError(f"{type(self).__name__}._fit must set converged_")
        self._check_finite_model()
        self.trace_ = trace
        self.n_iter_ = int(trace.columns()["iteration"][-1])
        self.train_accuracy_ = float(np.mean((self._final_decision(X) > 0) == (y_pm > 0)))
        self.train_objectives_ = self._objective_values(X, y_pm)
        start = time.perf_counter()
        self.certificate_ = self._certificate(X, y_pm)
        self.certificate_time_s_ = time.perf_counter() - start
        del self._fit_decision  # a fitted model holds no copy of its training data
        if not self.converged_:
            reason = f" (it stopped on: {self.stop_reason_})" if self.stop_reason_ else ""
            warnings.warn(
                f"{type(self).__name__} stopped before its stopping rule held{reason} "
                f"({self._stopping_rule()}); raise max_iter or loosen the tolerance",
                ConvergenceWarning,
                stacklevel=3,
            )
        return self

    def _fit_input(self, X, y) -> tuple:
        """Validated X (float64, dense or CSR with int32 indices) and y in {-1.0, +1.0}; sets
        classes_ and n_features_in_."""
        self._validate_params()
        X, y = validate_data(
            self, X, y, accept_sparse="csr", dtype=np.float64, ensure_all_finite=False
        )
        X = finite_csr_int32(X)
        self.classes_ = two_classes(y)
        return X, np.where(y == self.classes_[1], 1.0, -1.0)

    def warm_up(self, X, y) -> float:
        """Run now the warm-up that a fit on (X, y) starts with (`_compile`, on a few rows of
        each class), so that the fit finds it done (its compile_time_s_ is then 0): a caller can
        time it apart and hold a lock around it. Returns its seconds, 0.0 if it was done."""
        y = column_or_1d(y)
        rows = np.sort(np.concatenate([np.flatnonzero(y == label)[:4] for label in np.unique(y)]))
        return self._compile(*clone(self)._fit_input(X[rows], y[rows]))

    def _compile(self, X, y: np.ndarray) -> float:
        """Seconds spent on a warm-up fit on a few rows of X (same types, same code paths); 0.0
        when this process already ran the warm-up for this class, parameters and input format."""
        key = (type(self), repr(sorted(self.get_params(deep=False).items())), sp.issparse(X))
        if self._warm_up is None or key in _WARMED_UP:
            return 0.0
        start = time.perf_counter()
        rows = tiny_subset(y)
        twin = clone(self).set_params(**self._warm_up)
        trace = Trace(progress=False)
        trace.clock.start()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            twin._fit(finite_csr_int32(X[rows]), y[rows], trace)
        _WARMED_UP.add(key)
        return time.perf_counter() - start

    def stopping_rule(self) -> str:
        """The solver's stopping rule, in words, with its tolerance."""
        return self._stopping_rule()

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
            raise DataError(
                f"y contains labels {listed(unseen)} the model was not trained on; "
                f"its classes are {listed(self.classes_)}"
            )
        return self._objective_values(X, np.where(y == self.classes_[1], 1.0, -1.0))

    def _objective_values(self, X, y_pm: np.ndarray) -> dict[str, float]:
        """Objective values on validated X and y in {-1, +1}."""
        squared_l2, l1 = self._regularizer_norms()
        return primal_objectives(y_pm * self._decision_of(X), squared_l2, l1, self.C)

    def _final_decision(self, X) -> np.ndarray:
        """f on the training rows X of the fit under way, once its model is final: computed
        once and shared by a library's trace row, the training metrics and the certificate."""
        if self._fit_decision is None:
            self._fit_decision = (X, self._decision_function(X))
        return self._fit_decision[1]

    def _decision_of(self, X) -> np.ndarray:
        """f on validated X: the shared values of `_final_decision` when X is those rows."""
        shared = self._fit_decision
        return shared[1] if shared is not None and shared[0] is X else self._decision_function(X)

    def _validated_X(self, X):
        check_is_fitted(self)
        X = validate_data(
            self, X, accept_sparse="csr", dtype=np.float64, reset=False, ensure_all_finite=False
        )
        return finite_csr_int32(X)

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
    def _stopping_rule(self) -> str:
        """The stopping rule in words, with its tolerance."""

    @abstractmethod
    def _decision_function(self, X) -> np.ndarray:
        """f(x) = w.phi(x) + b on validated X, float64 of shape (n_samples,)."""

    @abstractmethod
    def _regularizer_norms(self) -> tuple[float, float | None]:
        """(||w||_2^2, ||w||_1) of the fitted model; ||w||_1 is None where undefined."""

    @abstractmethod
    def _certificate(self, X, y: np.ndarray) -> Certificate | None:
        """The optimality certificate of the fitted model on its training data, or None."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        tags.input_tags.sparse = True
        return tags


def declared_solvers() -> dict[str, type[SVMClassifier]]:
    """The solver classes imported so far, by ``name``, sorted: each SVMClassifier subclass that
    sets ``name`` in its own body. ValueError for a name two classes declare."""
    found: dict[str, type[SVMClassifier]] = {}
    classes = [SVMClassifier]
    while classes:
        cls = classes.pop()
        classes.extend(cls.__subclasses__())
        name = cls.__dict__.get("name")
        if name is not None and found.setdefault(name, cls) is not cls:
            raise ValueError(
                f"solver {name!r} is declared twice: by {found[name].__module__}."
                f"{found[name].__qualname__} and {cls.__module__}.{cls.__qualname__}"
            )
    return dict(sorted(found.items()))
