r"""The smoothed NESVM objectives F_mu, their gradients and Lipschitz constants (spec 000, §1).

    csvm   F = 1/2 ||w||^2 + C sum hinge(m_i)     F_mu  = 1/2 ||w||^2 + C sum h_{mu a_i}(m_i)
    lpsvm  F =     ||w||_1 + C sum hinge(m_i)     F_mu  = sum_j l_mu(w_j) + C sum h_{nu a_i}(m_i)
    lssvm  F = 1/2 ||w||^2 + C sum m_i^2          (smooth already: F_mu = F)

with m_i = 1 - y_i (X_i w + b). The variable is theta = w, or [w; b] with a bias (never
regularised). In the kernel form (X := K, theta = alpha or [alpha; b]) the regulariser is
1/2 alpha' K alpha, whose gradient K alpha is the pass's own X alpha.

a_i = ||X_i||_inf is taken on the augmented row [X_i, 1] when there is a bias (so a_i >= 1).
"""

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator, eigsh
from sklearn.utils import gen_batches

from svmlab.estimator.formulations import SmoothedHinge
from svmlab.numerics.losses import SquaredLoss, huber
from svmlab.numerics.rows import (
    Rows,
    loss_pass,
    matvec,
    rmatvec,
    row_norms,
    rows_of,
    weighted_gram,
)

MODELS = ("csvm", "lpsvm", "lssvm")
LIPSCHITZ_MODES = ("paper", "trace", "tight")
SAFETY = 1.01  # lambda_max estimates approach from below (spec §1.7)
DENSE_EIG_DIM = 500  # up to this dimension the Gram matrix is formed (one product)
FULL_EIG_DIM = 64  # up to this one its whole spectrum (eigvalsh); above, Lanczos on it


@dataclass
class Evaluation:
    """F_mu, the true objective F, the gradient of F_mu and the C-SVM duality gap at theta."""

    smoothed: float
    true: float
    grad: np.ndarray
    dual_gap: float | None


@dataclass
class SmoothedSVM:
    """One NESVM formulation on fixed data X (or kernel matrix K), labels y in {-1, +1}."""

    X: object
    y: np.ndarray
    C: float
    model: str = "csvm"
    mu: float = 5.0
    nu: float = 5.0
    bias: bool = False
    kernel: bool = False
    rows: Rows = field(init=False)

    def __post_init__(self):
        self.rows = rows_of(self.X)
        self.y = np.ascontiguousarray(self.y, dtype=np.float64)
        inf_norm, self.sq_norm = row_norms(self.rows)
        self.a = np.maximum(inf_norm, 1.0) if self.bias else inf_norm
        self._dots = np.empty(self.rows.n_rows)
        self._s = np.empty(self.rows.n_cols)
        self._width = (None, None)

    @property
    def dim(self) -> int:
        """Length of theta."""
        return self.rows.n_cols + self.bias

    def split(self, theta: np.ndarray) -> tuple[np.ndarray, float]:
        return (theta[:-1], float(theta[-1])) if self.bias else (theta, 0.0)

    def hinge_width(self) -> np.ndarray:
        """mu a_i (csvm) or nu a_i (lpsvm): the width of each sample's quadratic zone."""
        smoothing = self.nu if self.model == "lpsvm" else self.mu
        if self._width[0] != smoothing:  # computed once per smoothing value, not per iteration
            self._width = (smoothing, smoothing * self.a)
        return self._width[1]

    def evaluate(self, theta: np.ndarray) -> Evaluation:
        """F_mu, F and grad F_mu at theta with one pass over the data (spec §2.6 steps 1-2)."""
        w, b = self.split(theta)
        rows, squared = self.rows, self.model == "lssvm"
        loss = SquaredLoss() if squared else SmoothedHinge(self.hinge_width())
        smoothed_loss, exact_loss, sum_c, sum_yc = loss_pass(
            rows, self.y, w, b, loss, self._dots, self._s
        )
        if self.model == "lpsvm":
            reg_smoothed, reg_grad = huber(w, self.mu)
            reg_true = float(np.abs(w).sum())
        else:
            reg_grad = self._dots.copy() if self.kernel else w  # K alpha, or w
            reg_smoothed = reg_true = 0.5 * float(w @ reg_grad)
        factor = 2.0 * self.C if squared else self.C
        grad = np.empty(self.dim)
        grad[: len(w)] = reg_grad - factor * self._s
        if self.bias:
            grad[-1] = -factor * sum_yc
        dual_gap = None
        if self.model == "csvm" and not (self.bias or self.kernel):
            # F(w) - D(t C u), D(alpha) = e'alpha - 1/2 ||Z'alpha||^2 (spec §1.9), at the best
            # t in [0, 1] (t C u stays in the box): a bound on F - F* from this pass's sums
            linear, quadratic = self.C * sum_c, self.C**2 * float(self._s @ self._s)
            t = min(1.0, linear / quadratic) if quadratic > 0.0 else 1.0
            dual_gap = reg_true + self.C * exact_loss - (t * linear - 0.5 * t * t * quadratic)
        return Evaluation(
            reg_smoothed + self.C * smoothed_loss, reg_true + self.C * exact_loss, grad, dual_gap
        )

    def smoothed_dual(self, u: np.ndarray) -> float:
        """D_mu(u) = C e'u - (C mu/2) sum a_i u_i^2 - 1/2 ||C Z'u||^2 (csvm, linear, no bias)."""
        zu = self.X.T @ (self.y * u)
        return float(
            self.C * u.sum()
            - 0.5 * self.C * self.mu * (self.a * u * u).sum()
            - 0.5 * self.C**2 * zu @ zu
        )

    def lipschitz_parts(self, mode: str) -> tuple[float, float]:
        """(L_R, lambda_loss): L = L_R + C lambda_loss / mu (csvm; lpsvm: L_R = 1/mu, uses nu),
        L = L_R + 2 C lambda_loss (lssvm). Both are free of mu, so a homotopy computes them once.

        lambda_loss is n max_i r_i/a_i ('paper', Eq.21), sum_i r_i/a_i ('trace') or
        lambda_max(Z' diag(1/a) Z) ('tight') for the hinge, with r_i = ||X_i||^2 on augmented
        rows; for the squared loss it is max_i r_i ('paper', Eq.56: NOT an upper bound),
        sum_i r_i ('trace') or lambda_max(Z'Z) ('tight'). L_R is 1 for the linear models and, in
        the kernel form, max_i sum_j |K_ij| ('paper': Gershgorin), trace(K) or lambda_max(K).
        """
        if mode not in LIPSCHITZ_MODES:
            raise ValueError(f"unknown Lipschitz mode {mode!r}; allowed: {LIPSCHITZ_MODES}")
        r = self.sq_norm + self.bias
        weights = np.ones_like(r) if self.model == "lssvm" else _inverse(self.a)
        weighted = r * weights
        if mode == "paper":
            loss = weighted.max(initial=0.0) * (1 if self.model == "lssvm" else len(r))
        elif mode == "trace":
            loss = float(weighted.sum())
        else:
            loss = SAFETY * lambda_max_gram(self.X, weights, self.bias)
        return self._regularizer_lipschitz(mode), float(loss)

    def lipschitz(self, mode: str) -> float:
        """L of the whole F_mu at the current mu (and nu)."""
        reg, loss = self.lipschitz_parts(mode)
        return self.combine_lipschitz(reg, loss)

    def combine_lipschitz(self, reg: float, loss: float) -> float:
        if self.model == "lssvm":
            return reg + 2.0 * self.C * loss
        if self.model == "lpsvm":
            return 1.0 / self.mu + self.C * loss / self.nu
        return reg + self.C * loss / self.mu

    def _regularizer_lipschitz(self, mode: str) -> float:
        if not self.kernel:
            return 1.0
        K = self.X
        if mode == "paper":  # in row blocks: no second n x n array
            return max(
                float(np.abs(K[block]).sum(axis=1).max()) for block in gen_batches(K.shape[0], 1024)
            )
        if mode == "trace":
            return float(np.trace(K))
        return SAFETY * lambda_max_gram(K, None, False, symmetric=True)


def _inverse(a: np.ndarray) -> np.ndarray:
    """1/a_i, and 0 for zero rows (they carry no loss curvature)."""
    out = np.zeros_like(a)
    np.divide(1.0, a, out=out, where=a > 0)
    return out


def lambda_max_gram(X, weights: np.ndarray | None, bias: bool, symmetric: bool = False) -> float:
    """lambda_max(Xh' diag(weights) Xh), Xh = [X, e] with a bias; with symmetric=True, of X itself.

    Small problems form the Gram matrix; large ones use a matrix-free operator. Above
    FULL_EIG_DIM, lambda_max comes from Lanczos (eigsh), not a full eigvalsh: threaded LAPACK
    took 1.7 s for one 300 x 300 eigvalsh on a loaded 2-core machine, Lanczos 0.01 s. The
    products with Xh are the compiled row passes of `svmlab.numerics.rows`, which add the same
    terms in the same order for dense and CSR X: both formats get the same L, bit for bit.
    """
    n, p = X.shape
    dim = p if symmetric else p + bias
    if weights is None:
        weights = np.ones(n)
    rows = rows_of(X.sorted_indices() if sp.issparse(X) and not X.has_sorted_indices else X)
    t, out = np.empty(n), np.empty(p)

    def product(v):
        v = np.ravel(v)
        if symmetric:
            return X @ v
        matvec(rows, np.ascontiguousarray(v[:p]), t)
        if bias:
            t[:] += v[p]
        rmatvec(rows, weights * t, out)
        return np.append(out, weights @ t) if bias else out.copy()

    if dim <= DENSE_EIG_DIM:
        if symmetric:
            M = np.column_stack([product(e) for e in np.eye(dim)])
            M = 0.5 * (M + M.T)
        else:  # Xh' diag(weights) Xh in one pass, not dim passes
            M = weighted_gram(rows, np.ascontiguousarray(weights, dtype=np.float64), bias)
        if dim <= FULL_EIG_DIM:
            return float(np.linalg.eigvalsh(M)[-1])
        op = M
    else:
        op = LinearOperator((dim, dim), matvec=product, dtype=np.float64)
    v0 = np.ones(dim)  # deterministic start
    return float(eigsh(op, k=1, which="LA", v0=v0, tol=1e-8, return_eigenvectors=False)[0])
