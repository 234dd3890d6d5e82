"""Fill numba's cache for every registered solver before the suite's first test, in parallel
processes: in a fresh clone nothing is compiled yet, and one process would compile every solver
family in turn, each on first use, while the other cores wait.

`Filling` runs the pool from the process that starts the suite (pytest's, or pytest-xdist's
controller) and writes a ready file when it is done; every test process waits for that file
before its first test, so that no two processes compile the same family.

Each process takes the next family (the one with the most compiled functions first), fits each
of its conformance parameter sets on a small problem, dense and CSR, and predicts: what numba
compiles there it writes to its cache, from which the test process then loads it. Families share
only the small functions of `svmlab.numerics`.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
import warnings
from pathlib import Path

from svmlab import solvers

SOLVERS = Path(solvers.__file__).parent


def family(cls: type) -> str:
    """The package of svmlab.solvers that holds ``cls`` ('' for a solver outside svmlab)."""
    parts = cls.__module__.split(".")
    return parts[2] if parts[:2] == ["svmlab", "solvers"] else ""


class Filling:
    """The pool filling the cache, family by family, and the thread that writes ``ready`` (its
    errors, one per line) once it is done; ``seconds`` and ``errors`` are then set."""

    def __init__(self, ready: Path, processes: int = 2):
        families = sorted(
            {family(cls) for cls in solvers.registered().values()} - {""},
            key=compiled_functions,
            reverse=True,
        )
        self.ready, self.seconds, self.errors = ready, None, None
        self._begun = time.perf_counter()
        self._pool = multiprocessing.get_context("spawn").Pool(min(processes, os.cpu_count() or 1))
        self._result = self._pool.map_async(fit_family, families, chunksize=1)
        threading.Thread(target=self._finish, daemon=True).start()

    def _finish(self) -> None:
        try:
            errors = [error for error in self._result.get() if error]
        except Exception as exc:  # the pool was terminated, or a process died
            errors = [f"{type(exc).__name__}: {exc}"]
        self.seconds, self.errors = time.perf_counter() - self._begun, errors
        self._pool.close()
        self._pool.join()
        self.ready.write_text("\n".join(errors))

    def stop(self) -> None:
        """End the pool (a suite that ran no test does not wait for it)."""
        self._pool.terminate()


def wait(ready: Path, timeout_s: float = 3600) -> None:
    """Until ``ready`` exists (the safety timeout only guards against a lost controller)."""
    deadline = time.monotonic() + timeout_s
    while not ready.exists() and time.monotonic() < deadline:
        time.sleep(0.2)


def compiled_functions(name: str) -> int:
    """How many numba functions the family's package defines (its compile cost, roughly)."""
    return sum(path.read_text().count("@njit") for path in (SOLVERS / name).rglob("*.py"))


def fit_family(name: str) -> str | None:
    """Fit and predict with every conformance parameter set of the family's solvers, on dense
    and CSR input; the error if one of them raised."""
    import scipy.sparse as sp
    from sklearn.datasets import load_breast_cancer
    from sklearn.preprocessing import StandardScaler

    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)[::9]
    X[abs(X) < 0.5] = 0.0
    y = y[::9]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for cls in solvers.registered().values():
                if family(cls) == name:
                    for params in cls.test_config:
                        for data in (X, sp.csr_matrix(X)):
                            cls(**params).fit(data, y).decision_function(data)
    except Exception as exc:  # the tests of that solver show it
        return f"{name}: {type(exc).__name__}: {exc}"
    return None
