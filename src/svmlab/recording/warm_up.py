"""Compile a solver's numba code once, before its fit, one process at a time, and say so.

numba compiles a solver's loops on their first call and keeps them in its cache
(``@njit(cache=True)``), from which later processes load them in a fraction of the time. Two
workers of a sweep or a study that start together would both miss the cache and compile the
same code in parallel, each for minutes on a small machine; so they warm up one at a time (a
lock file they share): the first compiles and fills the cache, the others load it.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

from filelock import FileLock
from numba.core import config, event

from svmlab.lifecycle import run_interruptibly

COMPILING = "compiling solvers (first run only; later runs load them from numba's cache)"
ESTIMATED = "compiling solvers (first run only, about {:.0f} s on this machine)"
COMPILE_TIMES = "svmlab-compile-s.json"  # beside numba's cache: seconds by solver class
_ANNOUNCED: set[str] = set()  # the solvers whose compilation this process has announced


class SayCompiling(event.Listener):
    """Prints one line when numba starts its first compilation (a cache miss, not a load), once
    per process and solver, with the seconds the last compilation of that solver took on this
    machine when they are known (``estimate``)."""

    def __init__(self, solver: str = "", estimate: float | None = None) -> None:
        self.solver = solver
        self.estimate = estimate
        self.compiled = False

    def on_start(self, event) -> None:
        if not self.compiled:
            self.compiled = True
            if self.solver not in _ANNOUNCED:
                _ANNOUNCED.add(self.solver)
                print(
                    COMPILING if self.estimate is None else ESTIMATED.format(self.estimate),
                    flush=True,
                )

    def on_end(self, event) -> None:
        pass


def compile_times_file() -> Path:
    """Where the compile seconds are kept: in numba's cache folder (``NUMBA_CACHE_DIR``), else
    beside svmlab's own cached code, as numba keeps it."""
    folder = config.CACHE_DIR or Path(__file__).parents[1] / "__pycache__"
    return Path(folder) / COMPILE_TIMES


def compile_times() -> dict[str, float]:
    """The seconds the last compilation of each solver took on this machine ({} if none)."""
    with contextlib.suppress(OSError, ValueError):
        return dict(json.loads(compile_times_file().read_text()))
    return {}


def record_compile_time(solver: str, seconds: float) -> None:
    """Keep ``seconds`` as the compile time of ``solver``; a folder that cannot be written to
    (an installed copy) leaves the estimate unknown."""
    path = compile_times_file()
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.{os.getpid()}.part")
        partial.write_text(json.dumps(compile_times() | {solver: round(seconds, 1)}))
        partial.replace(path)


def warm_up(
    estimator, X, y, lock: str | os.PathLike | None = None, launcher: dict | None = None
) -> float:
    """The estimator's warm-up for a fit on (X, y) (``SVMClassifier.warm_up``: once per process
    and solver configuration), under the file lock ``lock`` when given, interruptible like a
    fit; the seconds it took, 0.0 when this process had run it. A warm-up that compiled keeps
    its seconds as the next estimate for its solver."""
    solver = type(estimator).__name__

    def compile_now() -> float:
        say = SayCompiling(solver, compile_times().get(solver))
        with event.install_listener("numba:compile", say):
            seconds = estimator.warm_up(X, y)
        if say.compiled:
            record_compile_time(solver, seconds)
        return seconds

    with FileLock(str(lock)) if lock else contextlib.nullcontext():
        return run_interruptibly(compile_now, launcher)
