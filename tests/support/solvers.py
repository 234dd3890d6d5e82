"""Solvers that exist to exercise the training path: long traces, slow fits, fits stuck in
compiled code, NaN traces."""

import hashlib
import time
from numbers import Integral, Real
from pathlib import Path
from typing import ClassVar

import numpy as np
from sklearn.utils._param_validation import Interval

from svmlab.estimator.formulations import L2, Formulation, Hinge
from svmlab.estimator.models import LinearSVMClassifier


class _ZeroModel(LinearSVMClassifier):
    """A linear model that stays at w = 0, b = 0; subclasses only differ in what they trace."""

    _parameter_constraints: ClassVar[dict] = {"C": [Interval(Real, 0.0, None, closed="neither")]}

    def _zero_model(self, n_features: int) -> None:
        self.coef_ = np.zeros((1, n_features))
        self.intercept_ = np.zeros(1)

    def _formulation(self):
        return Formulation(Hinge(), L2())

    def _stopping_rule(self):
        return "a fixed number of trace rows"


class LongTrace(_ZeroModel):
    """Records `n_rows` trace rows as fast as it can (objective 1/(k+1), a known sequence)."""

    _parameter_constraints = _ZeroModel._parameter_constraints | {
        "n_rows": [Interval(Integral, 1, None, closed="left")]
    }

    def __init__(self, C=1.0, n_rows=10_000):
        self.C = C
        self.n_rows = n_rows

    def _fit(self, X, y, trace):
        k = np.arange(self.n_rows)
        trace.extend(
            {
                "iteration": k,
                "time_s": 1e-6 * k,
                "objective_hinge_l2": 1.0 / (k + 1),
                "gap": 0.5 / (k + 1),
            }
        )
        self._zero_model(X.shape[1])
        self.converged_ = False  # as an iterative solver that hit max_iter reports it


class Slow(_ZeroModel):
    """Records a row every 0.05 s for `duration` seconds, or until `stop_file` exists: a run to
    interrupt. With `started_file`, that file is created when the fit starts."""

    _parameter_constraints = _ZeroModel._parameter_constraints | {
        "duration": [Interval(Real, 0.0, None, closed="left")],
        "started_file": [str, None],
        "stop_file": [str, None],
    }

    def __init__(self, C=1.0, duration=120.0, started_file=None, stop_file=None):
        self.C = C
        self.duration = duration
        self.started_file = started_file
        self.stop_file = stop_file

    def _fit(self, X, y, trace):
        if self.started_file:
            Path(self.started_file).touch()
        k = 0
        trace.append(k, objective_hinge_l2=1.0)
        while trace.elapsed() < self.duration and not (
            self.stop_file and Path(self.stop_file).exists()
        ):
            time.sleep(0.05)
            k += 1
            trace.append(k, objective_hinge_l2=1.0 / (k + 1))
        self._zero_model(X.shape[1])
        self.converged_ = True


class Stuck(_ZeroModel):
    """Sits in one call of compiled code for minutes (PBKDF2 with 2^31 - 1 rounds, which
    releases the interpreter lock and never looks at signals), as LIBSVM on a hard problem.
    With `started_file`, that file is created when the fit starts."""

    _parameter_constraints = _ZeroModel._parameter_constraints | {"started_file": [str, None]}

    def __init__(self, C=1.0, started_file=None):
        self.C = C
        self.started_file = started_file

    def _fit(self, X, y, trace):
        if self.started_file:
            Path(self.started_file).touch()
        hashlib.pbkdf2_hmac("sha256", b"svmlab", b"stuck", 2**31 - 1)
        trace.append(0, objective_hinge_l2=1.0)
        self._zero_model(X.shape[1])
        self.converged_ = True


class NanTrace(_ZeroModel):
    """A finite model whose trace turns NaN: the run must end FAILED."""

    def __init__(self, C=1.0):
        self.C = C

    def _fit(self, X, y, trace):
        trace.append(0, objective_hinge_l2=1.0)
        trace.append(1, objective_hinge_l2=float("nan"))
        self._zero_model(X.shape[1])
        self.converged_ = True
