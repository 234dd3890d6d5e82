"""Compile a solver's numba code once, before its fit, and say so.

numba compiles a solver's loops on their first call and keeps them in its cache
(``@njit(cache=True)``), from which later processes load them in a fraction of the time. Two
workers of a sweep that start together would both miss the cache and compile the same code in
parallel, each for minutes on a small machine; so the jobs of a sweep warm up one at a time (a
lock in the sweep folder): the first compiles and fills the cache, the others load it.
"""

from __future__ import annotations

import contextlib
import time
import warnings

import numpy as np
from filelock import FileLock
from numba.core import event
from sklearn.base import clone

from svmlab.lifecycle import run_interruptibly
from svmlab.app.sweep import state_dir

COMPILING = "compiling solvers (first run only; later runs load them from numba's cache)"


class SayCompiling(event.Listener):
    """Prints one line when numba starts its first compilation (a cache miss, not a load)."""

    def __init__(self) -> None:
        self.said = False

    def on_start(self, event) -> None:
        if not self.said:
            self.said = True
            print(COMPILING, flush=True)

    def on_end(self, event) -> None:
        pass


def compile_solver(estimator, dataset, sweep_dir: str | None = None,
                   launcher: dict | None = None) -> float:
    """Compile the solver's numba code, or load it from numba's cache, with a warm-up fit on a
    few rows of the training data (the solver's ``_warm_up`` settings); the seconds it took."""
    if getattr(estimator, "_warm_up", None) is None:
        return 0.0
    y = np.asarray(dataset.y_train)
    rows = np.sort(np.concatenate([np.flatnonzero(y == label)[:4] for label in np.unique(y)]))
    twin = clone(estimator).set_params(**estimator._warm_up)

    def warm_up() -> None:
        with warnings.catch_warnings(), event.install_listener("numba:compile", SayCompiling()):
            warnings.simplefilter("ignore")
            try:
                twin.fit(dataset.X_train[rows], y[rows])
            except Exception:  # a few rows can be too few for a whole fit: the fit compiles then
                pass

    lock = (FileLock(str(state_dir(sweep_dir) / "compile.lock")) if sweep_dir
            else contextlib.nullcontext())
    with lock:
        start = time.perf_counter()
        run_interruptibly(warm_up, launcher)
        return time.perf_counter() - start
