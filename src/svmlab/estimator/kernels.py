"""Kernel functions of the kernel solvers, with LIBSVM's definitions and gamma rules.

    linear  K(x, z) = x.z
    rbf     K(x, z) = exp(-gamma ||x - z||^2)
    poly    K(x, z) = (gamma x.z + coef0)^degree

Kernel blocks come from svmlab's compiled kernels (``svmlab.numerics.kernels``, installed by
``svmlab.solvers`` through `use_compiled`: this layer imports no numba), else from
sklearn.metrics.pairwise; products K(A, B) @ c are computed in row blocks so that memory stays
bounded when A or B has many rows.
"""

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from sklearn.metrics.pairwise import pairwise_kernels
from sklearn.utils import gen_batches

BLOCK_BYTES = 64 * 2**20
_compiled = None  # (matrix, products) functions of (name, gamma, degree, coef0, ...), or None


def use_compiled(matrix, products) -> None:
    """Compute kernel blocks with ``matrix(kernel, A, B)`` and ``products(kernel, A, B, coef)``
    (a `Kernel` first) instead of scikit-learn's generic path."""
    global _compiled
    _compiled = (matrix, products)


def resolve_gamma(gamma: float | str, X, kernel: str) -> float:
    """The numeric gamma of ``kernel``: 'scale' = 1 / (n_features Var(X)), 'auto' =
    1 / n_features, 'avg_sq_dist' = 1 / (2 s2) for rbf and 1 / s2 for the other kernels, with s2
    the mean squared distance between training points (`mean_squared_distance`), or gamma.

    Var(X) is the variance over all entries of X, zeros of a sparse X included; 'scale' gives 1
    when Var(X) = 0. 'scale' and 'auto' are scikit-learn's SVC rules, so a kernel solver and
    Libsvm given the same gamma use the same kernel. 'avg_sq_dist' is the core vector machine's
    rule (sigma^2 = s2 in exp(-||x - z||^2 / (2 sigma^2))), which Frandi et al. use for rbf and, as
    1 / s2, for their polynomial kernel; it gives 1 when s2 = 0. Both statistics are taken from
    the nonzeros of X in row order (`canonical_csr`), so a dense X and its CSR copy get the same
    gamma, bit for bit (Var(X) as E[x^2] - E[x]^2, scikit-learn's formula for sparse X).
    """
    if gamma == "auto":
        return 1.0 / X.shape[1]
    if gamma == "scale":
        X = canonical_csr(X)
        variance = X.multiply(X).mean() - X.mean() ** 2
        return 1.0 / (X.shape[1] * variance) if variance != 0 else 1.0
    if gamma == "avg_sq_dist":
        s2 = mean_squared_distance(canonical_csr(X))
        return (0.5 if kernel == "rbf" else 1.0) / s2 if s2 > 0 else 1.0
    return float(gamma)


def canonical_csr(X) -> sp.csr_matrix:
    """X as CSR with sorted indices and no stored zeros: a dense array and its CSR copy then
    hold the same values in the same order, and every sum over them adds the same terms."""
    if (
        sp.issparse(X)
        and X.format == "csr"
        and X.has_canonical_format
        and (np.count_nonzero(X.data) == X.nnz)
    ):
        return X
    X = sp.csr_matrix(X, dtype=np.float64, copy=True)
    X.eliminate_zeros()
    X.sort_indices()
    return X


def mean_squared_distance(X) -> float:
    """mean_{i,j} ||x_i - x_j||^2 over all n^2 ordered pairs (i = j included), exactly, in
    O(nnz) time: 2 (mean_i ||x_i||^2 - ||mean_i x_i||^2). Dense or sparse X."""
    squared_norms = X.multiply(X).sum(axis=1) if sp.issparse(X) else np.einsum("ij,ij->i", X, X)
    centre = np.asarray(X.mean(axis=0)).ravel()
    return max(2.0 * (float(np.mean(squared_norms)) - float(centre @ centre)), 0.0)


@dataclass(frozen=True)
class Kernel:
    """A kernel function with numeric parameters (gamma already resolved)."""

    name: str
    gamma: float
    degree: int
    coef0: float

    def matrix(self, A, B) -> np.ndarray:
        """Dense K(A, B) of shape (n_A, n_B); A and B may be dense or CSR."""
        if _compiled is not None:
            return _compiled[0](self, A, B)
        return pairwise_kernels(
            A,
            B,
            metric=self.name,
            filter_params=True,
            gamma=self.gamma,
            degree=self.degree,
            coef0=self.coef0,
        )

    def dot(self, A, B, coef: np.ndarray) -> np.ndarray:
        """K(A, B) @ coef, computed in row blocks of A of at most BLOCK_BYTES each."""
        if _compiled is not None:
            return _compiled[1](self, A, B, coef)
        rows = max(1, BLOCK_BYTES // (8 * max(1, B.shape[0])))
        out = np.empty(A.shape[0])
        for block in gen_batches(A.shape[0], rows):
            out[block] = self.matrix(A[block], B) @ coef
        return out
