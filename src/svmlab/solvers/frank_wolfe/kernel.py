"""The modified kernel of the L2-SVM as rows for the shared row cache.

    K~(i, j) = y_i y_j (k(x_i, x_j) + 1) + [i == j] / C,    k = linear | rbf | poly (LIBSVM's)

`modified_row` computes (part of) a row: the kernel values of `svmlab.numerics.kernels`, then
this transform; the solvers keep the rows in the row cache (`svmlab.solvers.frank_wolfe.row_cache`).
No n x n matrix is ever formed.
"""

from typing import NamedTuple

import numpy as np
from numba import njit

from svmlab.numerics.kernels import (
    KernelSpec,
    PointSet,
    kernel_spec,
    kernel_values,
    point_set,
    rows_layout,
    self_kernel,
)


class ModifiedKernel(NamedTuple):
    """K~ of the training points: their kernel, the points, the labels (+-1) and 1/C."""

    spec: KernelSpec
    points: PointSet
    y: np.ndarray
    inv_c: float


def modified_kernel(
    X, y: np.ndarray, kernel: str, gamma: float, degree: int, coef0: float, C: float
) -> ModifiedKernel:
    """K~ of (X, y) for a dense array or a CSR matrix with int32 indices."""
    return ModifiedKernel(
        kernel_spec(kernel, gamma, degree, coef0),
        point_set(rows_layout(X)),
        np.ascontiguousarray(y, dtype=np.float64),
        1.0 / float(C),
    )


@njit(cache=True)
def modified_row(mk, i, cols, start, stop, out):
    """out[t] = K~(i, cols[t]) for t in [start, stop); returns the number of kernel values."""
    kernel_values(mk.spec, mk.points, i, mk.points, cols, start, stop, out)
    y = mk.y
    for t in range(start, stop):
        j = cols[t]
        out[t] = y[i] * y[j] * (out[t] + 1.0) + (mk.inv_c if i == j else 0.0)
    return stop - start


@njit(cache=True)
def diagonal(mk):
    """D_i = K~(i, i) = k(x_i, x_i) + 1 + 1/C for every point."""
    return self_kernel(mk.spec, mk.points) + 1.0 + mk.inv_c
