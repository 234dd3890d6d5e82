r"""Optimality certificates: the primal value of a fitted model, a dual lower bound, and the gap.

For the formulation a solver minimises, with margins m_i = y_i f(x_i), f(x) = w.phi(x) + b,
losses summed with weight C, and the Fenchel dual over a in R^n:

    loss           primal term          dual term                       a's domain
    Hinge          C max(0, 1 - m)      + a_i                           0 <= a_i <= C
    SquaredHinge   C max(0, 1 - m)^2    + a_i - a_i^2 / (4C)            a_i >= 0
    Squared        C (1 - m)^2          + a_i - a_i^2 / (4C)            a_i free (LS-SVM)
    PowerHinge(p)  C max(0, 1 - m)^p    + a_i - h_p(a_i)                a_i >= 0      (p > 1)
    SmoothedHinge  C h_t(1 - m)         + a_i - t a_i^2 / (2C)          0 <= a_i <= C

with h_p(a) = ((p - 1) / p) a (a / (C p))^(1 / (p - 1)), the conjugate of C xi^p (xi >= 0);
h_2(a) = a^2 / (4C), so PowerHinge(2) is SquaredHinge.

    penalty           primal                        dual term, v(a) = sum_i a_i y_i phi(x_i)
    L2                1/2 ||w||^2                   - 1/2 ||v(a)||^2
    L1                ||w||_1                       constraint ||v(a)||_inf <= 1 (linear models)
    ElasticNet(l, m)  l/2 ||w||^2 + m ||w||_1       - ||S_m(v(a))||^2 / (2 l) (linear models)

The bias b is absent (NoBias), free (FreeBias: the dual adds sum_i a_i y_i = 0) or penalised
like a weight on a constant feature of value s (PenalisedBias(s), LIBLINEAR's intercept: phi(x)
gains the coordinate s and w the coordinate b / s); a free margin (FreeMargin, the L2-SVM)
turns the dual's sum_i a_i into the constraint sum_i a_i = 1. Every feasible a gives
D(a) <= P* <= P(w, b): the gap P - D bounds the model's suboptimality P - P*, and the relative
gap (P - D) / |P| bounds (P - P*) / |P|.

Dual points come from the solver when it has them (LIBSVM's dual coefficients, the budgeted
solvers' alpha) and from the model itself: a_i = -C loss'(m_i), which is exact for the smooth
losses at the optimum, tried only while the solver's points leave the gap above the tolerance
asked for. For the hinge the points with m_i = 1 (free support vectors) get their
a_i from the optimality condition w = v(a) over the points whose margin lies within delta of 1,
for a few delta, tried only while the gap stays above the tolerance asked for, each set
warm-started from the previous one's a. With the l2 penalty and no free bias the a_i of the
free set maximise the dual itself, sum a - 1/2 ||v(a)||^2 over the box with the other a_i
fixed (coordinate ascent, `numerics.box_ascent`, where the solver passes it: a few passes over
the free set, so the cost grows with the free set, not with the data; a kernel model's over the
free set's signed Gram matrix, of at most MAX_KERNEL_FREE points). Otherwise, where the
condition can be met, they are the a of largest sum among those that meet it (an LP), else the
bounded least-squares fit (`_free_set_fit`). Every candidate is then made feasible (the
equality of a free bias by shrinking the heavier class, the l1 constraint by scaling) and
scaled by the best factor t (D(t a) is concave in t). The best candidate is kept. Each of
these steps is a method of the formulation's parts (`formulations`): a loss or penalty class
brings its own, and nothing here depends on which one it is. No library computes these
certificates for arbitrary SVM models, hence this module.
"""

from __future__ import annotations

import copy
from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import chain

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog, lsq_linear, minimize

from svmlab.estimator.formulations import (
    METRIC_KINDS,
    Formulation,
    Penalty,
    metric_name,
)

FREE_SET_WIDTHS = (1e-8, 1e-6, 1e-4, 1e-3, 1e-2, 1e-1)  # delta of the hinge's free set
MAX_KERNEL_FREE = 2000  # points in a kernel model's free set (a dense QP of this size)
BALANCE_WEIGHT = 1e3  # weight of a free bias's equality in the free-set least squares
FREE_SET_PASSES = 100  # passes of the l2 free-set ascent over its points, at most
FREE_SET_GAIN_TOL = 1e-5  # ... fewer once a pass raises the dual by this relative amount or less
CERTIFICATE_TOL = 1e-3  # relative gap a fit's certificate refines toward, unless its solver asks


@dataclass(frozen=True)
class Certificate:
    """P, a dual lower bound D, gap = P - D and rel_gap = gap / |P| for one formulation."""

    formulation: str  # its name (`formulations.Formulation.name`)
    primal: float
    dual: float
    source: str  # where the dual point came from: 'solver' or 'model'
    refined: bool = False  # whether the hinge's free-set refinement was tried

    @property
    def gap(self) -> float:
        return self.primal - self.dual

    @property
    def rel_gap(self) -> float:
        return relative_gap(self.primal, self.dual)

    def metrics(self) -> dict[str, float]:
        """``primal_<f>``, ``dual_<f>``, ``gap_<f>`` and ``rel_gap_<f>``."""
        return {
            metric_name(kind, self.formulation): getattr(self, kind)
            for kind in METRIC_KINDS
            if kind != "objective"
        }


class DualImage(ABC):
    """v(a) = sum_i a_i y_i phi(x_i) of a formulation's feature map, and the model's own w."""

    def __init__(self, y: np.ndarray):
        self.y = y

    @abstractmethod
    def squared_norm(self, a: np.ndarray) -> float:
        """||v(a)||^2."""

    def vector(self, a: np.ndarray) -> np.ndarray:
        """v(a) itself (l1 and elastic-net penalties: linear models only)."""
        raise NotImplementedError("the l1 dual needs explicit features (a linear model)")

    def sup_norm(self, a: np.ndarray) -> float:
        """||v(a)||_inf."""
        return float(np.abs(self.vector(a)).max(initial=0.0))

    @abstractmethod
    def fit_free(
        self,
        a: np.ndarray,
        free: np.ndarray,
        C: float,
        penalty: Penalty,
        balanced: bool,
        enough: float = np.inf,
    ) -> np.ndarray:
        """a with its entries on ``free`` chosen in [0, C] so that v(a) meets the model's
        optimality condition (l2: v(a) = w; l1: v(a)_j = sign(w_j) where w_j != 0) and, if
        ``balanced`` (a free bias), sum_i a_i y_i = 0, with the largest sum of a; or, where
        no such a exists, best matches it. A method that improves the dual bound step by step
        may stop once it reaches ``enough``."""


class LinearImage(DualImage):
    """Linear features x (with a penalised bias: [x, s]); the model's weights w (and b / s).

    ``ascent``, if given, is the l2 refinement's solver (`numerics.box_ascent.free_set_ascent`,
    compiled, which this layer does not import: a solver family passes it), called as
    ascent(points, s, x, C, passes, tol, goal) with the free set's points y_i x_i as rows."""

    def __init__(
        self,
        X,
        y: np.ndarray,
        w: np.ndarray,
        b: float = 0.0,
        bias_scale: float | None = None,
        ascent=None,
    ):
        super().__init__(y)
        self.ascent = ascent
        self.w = w
        self._X = X if sp.issparse(X) and bias_scale is None else None
        self._cache = {}  # A, shared with the copies of `with_weights`
        if self._X is None:
            A = _signed_transpose(X, y) if sp.issparse(X) else (X * y[:, None]).T
            if bias_scale is not None:  # the constant feature of a penalised bias
                row = bias_scale * y[None, :]
                A = sp.vstack([A, row]).tocsr() if sp.issparse(A) else np.vstack([A, row])
                self.w = np.append(w, b / bias_scale)
            self._cache["A"] = A

    @property
    def A(self):
        """The points y_i x_i (with a penalised bias: [y_i x_i, s y_i]) as columns. For CSR X
        without a bias the transposed copy is built on first use only (by a free-set
        refinement): `vector` reads X itself, the same sums in the same order."""
        if "A" not in self._cache:
            self._cache["A"] = _signed_transpose(self._X, self.y)
        return self._cache["A"]

    def with_weights(self, w: np.ndarray) -> LinearImage:
        """The same features for the weights w of another model without a penalised bias (an
        iterate): the transposed copy of X is built once per fit, not once per certificate."""
        image = copy.copy(self)
        image.w = w
        return image

    def vector(self, a: np.ndarray) -> np.ndarray:
        if self._X is not None:
            return np.asarray(self._X.T @ (self.y * a)).ravel()
        return np.asarray(self.A @ a).ravel()

    def squared_norm(self, a):
        v = self.vector(a)
        return float(v @ v)

    def fit_free(self, a, free, C, penalty, balanced, enough=np.inf):
        """a_free by `_free_set_ascent` for a penalty that allows it (l2) without a free bias,
        given an ``ascent``, else by `_free_set_fit` on the d rows of the optimality condition
        (plus the weighted balance row of a free bias)."""
        fixed = a.copy()
        fixed[free] = 0.0
        if self.ascent is not None and penalty.ascent and not balanced:
            fixed[free] = self._free_set_ascent(np.clip(a[free], 0.0, C), fixed, free, C, enough)
            return fixed
        rows, target = penalty.optimality_target(self.w)
        residual = (target - self.vector(fixed))[rows]
        A_free = self.A[:, free][rows] if sp.issparse(self.A) else self.A[rows][:, free]
        if balanced:  # the equality sum a_i y_i = 0 as a heavily weighted extra row
            largest = float(abs(A_free).max()) if A_free.size else 0.0  # size: nnz if sparse
            weight = BALANCE_WEIGHT * max(1.0, largest)
            row = weight * self.y[free][None, :]
            A_free = (
                sp.vstack([A_free, row]).tocsr()
                if sp.issparse(A_free)
                else np.vstack([A_free, row])
            )
            residual = np.append(residual, -weight * (fixed @ self.y))
        if A_free.shape[0] == 0:
            return fixed
        fixed[free] = np.clip(_free_set_fit(A_free, residual, C), 0.0, C)
        return fixed

    def _free_set_ascent(self, x, fixed, free, C, enough):
        """x = a_free maximising the l2 dual sum a - 1/2 ||v(a)||^2 over [0, C]^m with a off
        the free set fixed, by ``ascent`` from x (at most FREE_SET_PASSES passes, fewer once
        the dual reaches ``enough``)."""
        points = self.A[:, free].T
        points = points.tocsr() if sp.issparse(points) else points
        s = self.vector(fixed) + np.asarray(points.T @ x).ravel()
        return self.ascent(
            points, s, x, C, FREE_SET_PASSES, FREE_SET_GAIN_TOL, enough - fixed.sum()
        )


def _signed_transpose(X, y: np.ndarray) -> sp.csr_matrix:
    """(y_i x_i)_i as the columns of a CSR matrix: each row scaled in place of the data, then
    transposed (scipy's broadcast multiply of X^T by y goes through COO, several times
    slower)."""
    X = sp.csr_matrix(X)
    signed = sp.csr_matrix(
        (X.data * np.repeat(y, np.diff(X.indptr)), X.indices, X.indptr), shape=X.shape
    )
    return signed.T.tocsr()


def _free_set_fit(A: np.ndarray | sp.csr_matrix, r: np.ndarray, C: float) -> np.ndarray:
    """x in [0, C]^m for the system A x = r of a free set (d rows, m columns, often m >> d).

    Where the system can be met, it is met by a polytope of x, over which the dual bound grows
    with sum x (with v(a) fixed, the dual is sum a minus a constant): the x taken is then the
    vertex of largest sum, max 1.x s.t. A x = r, 0 <= x <= C, an LP that HiGHS solves in a
    basis of d columns (without presolve, which finds nothing to remove here and would triple
    the time on ijcnn1). Otherwise x is the bounded least-squares fit, min ||A x - r||^2 over
    the box (lsq_linear)."""
    lp = linprog(
        -np.ones(A.shape[1]),
        A_eq=A,
        b_eq=r,
        bounds=(0.0, C),
        method="highs",
        options={"presolve": False},
    )
    if lp.status == 0:
        return lp.x
    return lsq_linear(A, r, bounds=(0.0, C), method="trf", lsmr_tol="auto", max_iter=200).x


class KernelImage(DualImage):
    """Kernel features phi, through a kernel function K(A, B) (with a penalised bias: [phi, s]);
    the model f = sum_j c_j k(z_j, .) + b with expansion points Z (support vectors, possibly
    not training points).

    ``support``: the rows of X that Z is (None if Z is not rows of X), and ``model_norm``: the
    model's c^T K(Z, Z) c if known: a dual point whose v(a) is the model's own (a_i y_i = c_j
    at row support_j, nothing elsewhere; LIBSVM's and the Frank-Wolfe solvers' own points) then
    costs no kernel value. ``ascent``, if given, is the l2 refinement's solver
    (`numerics.box_ascent.gram_ascent`, compiled, which this layer does not import: a solver
    family passes it), called as ascent(Q, c, x, C, passes, atol)."""

    def __init__(
        self,
        X,
        y: np.ndarray,
        kernel,
        Z,
        coef: np.ndarray,
        b: float = 0.0,
        bias_scale: float | None = None,
        support: np.ndarray | None = None,
        model_norm: float | None = None,
        ascent=None,
    ):
        super().__init__(y)
        self.X, self.kernel, self.Z, self.coef, self.b = X, kernel, Z, coef, b
        self.bias_scale, self.ascent = bias_scale, ascent
        self._model = None
        if support is not None and model_norm is not None:
            order = np.argsort(support, kind="stable")
            self._model = (support[order], coef[order], model_norm)
        self._last = (None, 0.0)  # the last point whose ||v(a)||^2 is known, and that value

    def squared_norm(self, a):
        if np.array_equal(a, self._last[0]):
            return self._last[1]
        nz = np.flatnonzero(a)
        if not len(nz):
            return 0.0
        c = (a * self.y)[nz]
        constant = 0.0 if self.bias_scale is None else (self.bias_scale * c.sum()) ** 2
        if (
            self._model is not None
            and np.array_equal(nz, self._model[0])
            and np.array_equal(c, self._model[1])
        ):
            return self._model[2] + constant
        value = float(c @ self.kernel.dot(self.X[nz], self.X[nz], c)) + constant
        self._last = (a.copy(), value)
        return value

    def fit_free(self, a, free, C, penalty, balanced, enough=np.inf):
        """On at most MAX_KERNEL_FREE points of ``free``: with the l2 penalty, no free bias and
        an ``ascent``, the a_free that maximise the dual itself (the others fixed), by
        coordinate ascent on the free set's signed Gram matrix (at most FREE_SET_PASSES passes,
        fewer once a pass gains FREE_SET_GAIN_TOL of ``enough``); else the box QP
        min ||w - v(a)||^2 (+ a weighted (sum_i a_i y_i)^2 if ``balanced``) by L-BFGS-B."""
        fixed = a.copy()
        fixed[free] = 0.0
        whole, free = len(free) <= MAX_KERNEL_FREE, free[:MAX_KERNEL_FREE]
        Xf, yf = self.X[free], self.y[free]
        K, signs = self.kernel.matrix(Xf, Xf), np.outer(yf, yf)
        bound = np.flatnonzero(fixed)
        signed = (fixed * self.y)[bound]
        # v(fixed)(x_i) for i in free, through the kernel alone
        v_at = self.kernel.dot(Xf, self.X[bound], signed) if len(bound) else np.zeros(len(free))
        if self.ascent is not None and penalty.ascent and not balanced:
            s2 = 0.0 if self.bias_scale is None else self.bias_scale**2
            Q = (K + s2) * signs
            atol = FREE_SET_GAIN_TOL * abs(enough) if np.isfinite(enough) else 0.0
            start = np.clip(a[free], 0.0, C)
            x = start.copy()
            p = yf * (v_at + s2 * signed.sum())
            self.ascent(Q, 1.0 - p, x, C, FREE_SET_PASSES, atol)
            known, fixed[free] = np.array_equal(a, self._last[0]), x
            if known and whole and np.array_equal(start, a[free]):
                # ||v||^2 of the result from a's, as v(a) and v(result) differ on the free set
                # only: no kernel product over the points held fixed
                self._last = (
                    fixed.copy(),
                    self._last[1] + 2.0 * (x - start) @ p + x @ Q @ x - start @ Q @ start,
                )
            return fixed
        Q = K * signs
        # c_i = y_i (w(x_i) - v(fixed)(x_i)) for i in free
        c = yf * (self.kernel.dot(Xf, self.Z, self.coef) - v_at)
        if balanced:
            weight = BALANCE_WEIGHT**2 * max(1.0, float(np.abs(Q).max(initial=0.0)))
            Q = Q + weight * signs
            c = c - weight * yf * (fixed @ self.y)

        def value_and_gradient(t):
            Qt = Q @ t
            return 0.5 * t @ Qt - c @ t, Qt - c

        result = minimize(
            value_and_gradient,
            np.zeros(len(free)),
            jac=True,
            method="L-BFGS-B",
            bounds=[(0.0, C)] * len(free),
            options={"maxiter": 500},
        )
        fixed[free] = np.clip(result.x, 0.0, C)
        return fixed


def relative_gap(primal: float, dual: float) -> float:
    """(P - D) / |P| (0 or inf when P = 0)."""
    gap, scale = primal - dual, abs(primal)
    return gap / scale if scale > 0 else (0.0 if gap <= 0 else np.inf)


def certify(
    form: Formulation,
    C: float,
    margins: np.ndarray,
    regulariser: float,
    image: DualImage,
    solver_duals: tuple[np.ndarray, ...] = (),
    refine: bool = True,
    tol: float = 0.0,
    model_duals: Iterable[np.ndarray] = (),
    own_point: bool = True,
) -> Certificate:
    """The certificate of a model with ``margins`` and regulariser value ``regulariser``
    (`Formulation.regulariser`: R(w) with a penalised bias's part) for formulation ``form``.

    ``solver_duals`` are dual points the solver produced itself; the model's own point
    a_i = -C loss'(m_i) (unless ``own_point`` is False: a solver whose stopping test certified
    its own point keeps that certificate) and then ``model_duals``, points the caller derived
    from the model (an iterable), are drawn one at a time only while the relative gap exceeds
    ``tol``; the best lower bound is kept. The free-set
    refinements of a loss with a kink at the margin (the hinge; a bounded least-squares fit or
    box QP each) are tried in turn only while the relative gap of the best point so far
    exceeds ``tol``: a solver whose own dual point already certifies the tolerance asked for
    pays nothing more. ``refine=False`` never tries them: a cheaper, looser bound for a
    solver's stopping test.
    """
    primal = form.primal(margins, regulariser, C)
    if C <= 0.0:  # a = 0 is the only dual point, and w = 0 the optimum
        return Certificate(form.name, primal, 0.0, "model")
    best, source, refined = -np.inf, "model", False
    for a in solver_duals:
        value = dual_bound(form, C, a, image)
        if value > best:
            best, source = value, "solver"
    own = (form.margin.dual_candidate(form.loss, margins, C) for _ in range(own_point))
    derived = chain(own, model_duals)  # drawn one at a time, only while the gap exceeds tol
    while relative_gap(primal, best) > tol and (a := next(derived, None)) is not None:
        value = dual_bound(form, C, a, image)
        if value > best:
            best, source = value, "model"
    if refine and form.loss.refinable:
        enough = primal - tol * abs(primal)  # the dual value that certifies tol
        for a in _free_set_points(C, margins, image, form, enough):
            if relative_gap(primal, best) <= tol:
                break
            refined = True
            value = dual_bound(form, C, a, image)
            if value > best:
                best, source = value, "model"
    return Certificate(form.name, primal, float(best), source, refined)


def _free_set_points(
    C: float, margins: np.ndarray, image: DualImage, form: Formulation, enough: float
):
    """The hinge's refinements: a_i from the optimality condition on the points whose margin
    lies within delta of 1, for growing delta (computed one at a time, when asked for, each
    from the last; ``enough``: see `DualImage.fit_free`)."""
    r = 1.0 - margins
    base = form.margin.dual_candidate(form.loss, margins, C)
    scale = max(1.0, float(np.abs(margins).max(initial=0.0)))
    seen = set()
    for width in FREE_SET_WIDTHS:
        free = np.flatnonzero(np.abs(r) <= width * scale)
        free = free[np.argsort(np.abs(r[free]), kind="stable")]
        key = len(free)
        if not key or key in seen:
            continue
        seen.add(key)
        base = image.fit_free(base, free, C, form.penalty, form.bias.balanced, enough)
        yield base


def dual_bound(form: Formulation, C: float, a: np.ndarray, image: DualImage) -> float:
    """The dual lower bound that ``a`` gives once made feasible (inside the loss's domain,
    balanced for a free bias) and best scaled: a solver's own dual point, without the model's
    candidates, is cheap enough to bound every iteration."""
    loss = form.loss
    a = form.bias.balance(loss.feasible(a), image.y, loss.signed)
    S, lower, upper = form.margin.ray(a)
    scaling = loss.scaling(a, C)
    scaling = scaling._replace(lower=max(scaling.lower, lower), upper=min(scaling.upper, upper))
    return form.penalty.best_scaled_dual(S, scaling, image, a)
