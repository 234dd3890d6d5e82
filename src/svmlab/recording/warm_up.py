"""Compile a solver's numba code once, before its fit, one process at a time, and say so.

numba compiles a solver's loops on their first call and keeps them in its cache
(``@njit(cache=True)``), from which later processes load them in a fraction of the time. Two
workers of a sweep or a study that start together would both miss the cache and compile the
same code in parallel, each for minutes on a small machine; so they warm up one at a time (a
lock file they share): the first compiles and fills the cache, the others load it.
"""

from __future__ import annotations

import contextlib
import os

from filelock import FileLock
from numba.core import event

from svmlab.lifecycle import run_interruptibly

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


def warm_up(estimator, X, y, lock: str | os.PathLike | None = None,
            launcher: dict | None = None) -> float:
    """The estimator's warm-up for a fit on (X, y) (``SVMClassifier.warm_up``: once per process
    and solver configuration), under the file lock ``lock`` when given, interruptible like a
    fit; the seconds it took, 0.0 when this process had run it."""

    def compile_now() -> float:
        with event.install_listener("numba:compile", SayCompiling()):
            return estimator.warm_up(X, y)

    with FileLock(str(lock)) if lock else contextlib.nullcontext():
        return run_interruptibly(compile_now, launcher)
