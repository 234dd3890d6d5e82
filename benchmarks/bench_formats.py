"""What dense input pays for computing the same sums as its CSR copy (docs/benchmarks.md,
"Dense and CSR input: the same iterates").

Two dense-input costs changed, each timed against the code it replaced, in the same run
(medians of --repeats):
* NESVM's tight Lipschitz constant (lambda_max of X' diag(1/a) X, computed once per fit): the
  compiled one-pass Gram matrix of `svmlab.numerics.rows.weighted_gram` against the BLAS
  product X' (X * weights) it replaced, on a9a's and ijcnn1's training files as dense arrays.
* Kernel rows of dense input with fewer than a quarter nonzeros, now read as CSR rows
  (`svmlab.numerics.kernels.rows_layout`) like its CSR copy, against the dense rows they were
  read as before: 100 full rows of K(X, X) by the same kernel code on either layout, and FW's
  fit (rbf, C = 1, gamma = 1 / d, certified 1e-2), on the first --rows rows of a9a.

    python benchmarks/bench_formats.py [--data-dir ../shared/data/libsvm] [--repeats 5]
                                       [--rows 5000]
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy is imported

import argparse
import statistics
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from bench_alm import DEFAULT_DATA, load, median_time
from sklearn.exceptions import ConvergenceWarning

from svmlab.numerics.kernels import _kernel_rows, kernel_spec, point_set, rows_layout
from svmlab.numerics.rows import rows_of, weighted_gram
from svmlab.solvers.frank_wolfe import FrankWolfe
from svmlab.solvers.frank_wolfe import kernel as fw_kernel


def blas_gram(X: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """X' diag(weights) X as the dense path formed it before (one BLAS product)."""
    return X.T @ (X * weights[:, None])


def report(name: str, new: float, old: float) -> None:
    print(f"{name:52s} {new * 1e3:10.2f} ms {old * 1e3:10.2f} ms {new / old:8.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--rows", type=int, default=5000)
    args = parser.parse_args()
    warnings.simplefilter("ignore", ConvergenceWarning)
    for name in ("a9a", "ijcnn1"):
        X, y = load(args.data_dir, name)
        dense = X.toarray()
        print(
            f"# {name}: {X.shape[0]} x {X.shape[1]}, {X.nnz / np.prod(X.shape):.3f} nonzeros; "
            f"median of {args.repeats}; columns: now, before, ratio"
        )
        weights = 1.0 / np.abs(dense).max(axis=1)
        rows = rows_of(dense)
        weighted_gram(rows_of(dense[:10]), weights[:10], False)  # compiled before timing
        report(
            f"Gram matrix for NESVM's L (dense {name})",
            median_time(lambda: weighted_gram(rows, weights, False), args.repeats)[0],
            median_time(lambda: blas_gram(dense, weights), args.repeats)[0],
        )
    X, y = load(args.data_dir, "a9a")
    part, labels = X.toarray()[: args.rows], y[: args.rows]
    spec = kernel_spec("rbf", 1.0 / X.shape[1])
    out = np.empty((100, args.rows))
    now, before = point_set(rows_layout(part)), point_set(part)
    _kernel_rows(spec, now, now, out[:1])
    _kernel_rows(spec, before, before, out[:1])
    report(
        f"100 rows of K(X, X), rbf, X = first {args.rows} rows",
        median_time(lambda: _kernel_rows(spec, now, now, out), args.repeats)[0],
        median_time(lambda: _kernel_rows(spec, before, before, out), args.repeats)[0],
    )
    report(
        "  FW fit on X (solver clock)",
        fw_time(part, labels, args.repeats),
        fw_time(part, labels, args.repeats, old=True),
    )


def fw_time(X, y, repeats: int, old: bool = False) -> float:
    """Median solver seconds of FW (rbf, C = 1, certified 1e-2) on dense X; ``old``: with the
    layout rule it replaced (dense input read as dense rows whatever its density)."""
    layout = fw_kernel.rows_layout
    if old:
        fw_kernel.rows_layout = lambda X: layout(X) if sp.issparse(X) else X
    try:
        FrankWolfe(gamma=1.0 / X.shape[1], random_state=0).fit(X[:50], y[:50])
        times = [
            FrankWolfe(gamma=1.0 / X.shape[1], random_state=0).fit(X, y).fit_time_s_
            for _ in range(repeats)
        ]
    finally:
        fw_kernel.rows_layout = layout
    return statistics.median(times)


if __name__ == "__main__":
    main()
