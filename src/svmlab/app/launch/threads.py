"""Threads per worker process: BLAS, OpenMP and numba threads that fit the cores among workers.

numpy's BLAS, scikit-learn's OpenMP loops and numba each start one thread per core in every
process; N worker processes on C cores then run N x C threads that take turns, and a parallel
search runs slower than one worker. Each worker gets C // N threads (at least 1), as joblib's
loky backend gives the workers of a ``hydra/launcher=joblib`` sweep. A variable the user set
(``OMP_NUM_THREADS=4 svmlab tune ...``) wins, as with joblib.
"""

from __future__ import annotations

import os

THREAD_VARIABLES = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "BLIS_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMBA_NUM_THREADS",
    "NUMEXPR_NUM_THREADS",
)


def threads_per_worker(workers: int) -> int:
    """The cores of this machine shared among ``workers`` processes, at least 1 each."""
    return max(1, (os.cpu_count() or 1) // max(1, workers))


def worker_environment(workers: int) -> dict[str, str]:
    """This process's environment with the thread variables a worker process starts with."""
    threads = str(threads_per_worker(workers))
    return dict.fromkeys(THREAD_VARIABLES, threads) | dict(os.environ)


def limit_this_process(workers: int) -> None:
    """Limit the running process's BLAS and OpenMP pools (already loaded or not) to its share,
    unless the user set ``OMP_NUM_THREADS``."""
    if "OMP_NUM_THREADS" in os.environ:
        return
    from threadpoolctl import threadpool_limits

    threadpool_limits(threads_per_worker(workers))
