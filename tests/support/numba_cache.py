"""Fill numba's cache for every registered solver before the suite's first test, in parallel
processes: in a fresh clone nothing is compiled yet, and one process would compile every solver
family in turn, each on first use, while the other cores wait.

Each process takes the next family (the one with the most compiled functions first), fits each
of its conformance parameter sets on a small problem, dense and CSR, and predicts: what numba
compiles there it writes to its cache, from which the test process then loads it. Families share
only the small functions of `svmlab.numerics`.
"""

from __future__ import annotations

import multiprocessing
import os
import warnings
from multiprocessing.pool import AsyncResult, Pool
from pathlib import Path

from svmlab import solvers

SOLVERS = Path(solvers.__file__).parent


def family(cls: type) -> str:
    """The package of svmlab.solvers that holds ``cls`` ('' for a solver outside svmlab)."""
    parts = cls.__module__.split(".")
    return parts[2] if parts[:2] == ["svmlab", "solvers"] else ""


def start(processes: int = 2) -> tuple[Pool, AsyncResult]:
    """The pool and its result: per solver family, None or the error its fits raised."""
    families = sorted({family(cls) for cls in solvers.registered().values()} - {""},
                      key=compiled_functions, reverse=True)
    pool = multiprocessing.get_context("spawn").Pool(min(processes, os.cpu_count() or 1))
    return pool, pool.map_async(fit_family, families, chunksize=1)


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
