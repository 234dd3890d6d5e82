r"""The parts of an SVM formulation as objects: a loss, a penalty and a bias treatment.

A solver minimises P(w, b) = R(w) + C sum_i phi(1 - m_i) over margins m_i = y_i (w.phi(x_i) + b).
Its Fenchel dual over a in R^n, with v(a) = sum_i a_i y_i phi(x_i), is

    D(a) = sum_i a_i - C sum_i phi*(a_i / C) - R*(v(a)),

so each part brings its value and its conjugate: the loss phi and phi*, the penalty R and R*.
For certificates a part also gives how its conjugate scales along a ray t a (the best scale t
is then found in closed form or by one root search), and a loss gives the model's own dual
point a_i = C phi'(1 - m_i). As in skglm's datafits and penalties, a new loss or penalty is one
small class here; `certificates` builds every bound from these methods.

    loss           phi(z)              phi*(u)                            u's domain
    Hinge          max(0, z)           0                                  0 <= u <= 1
    SquaredHinge   max(0, z)^2         u^2 / 4                            u >= 0
    Squared        z^2                 u^2 / 4                            u free (LS-SVM)
    PowerHinge(p)  max(0, z)^p         ((p-1)/p) u (u/p)^(1/(p-1))        u >= 0   (p > 1)
    SmoothedHinge  h_t(z) (Nesterov)   t u^2 / 2                          0 <= u <= 1

    penalty            R(w)                          R*(v)
    L2                 1/2 ||w||^2                   1/2 ||v||^2
    L1                 ||w||_1                       0 if ||v||_inf <= 1, else +inf
    ElasticNet(l, m)   l/2 ||w||^2 + m ||w||_1       ||S_m(v)||^2 / (2 l)   (S_m: soft threshold;
                                                     with l = 0: 0 if ||v||_inf <= m, else +inf)

The bias is absent (NoBias), free (FreeBias: the dual gains sum_i a_i y_i = 0) or penalised like
a weight on a constant feature of value s (PenalisedBias(s), LIBLINEAR's intercept).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import NamedTuple

import numpy as np


class Scaling(NamedTuple):
    """How a conjugate term grows along a ray t a: it equals t^degree * coef for t in
    [lower, upper] (and is +inf outside)."""

    degree: float
    coef: float
    lower: float = -np.inf
    upper: float = np.inf


# -- losses -----------------------------------------------------------------------------------

class Loss(ABC):
    """phi of the margin violation z = 1 - m, summed over the samples (without C)."""

    name: str
    signed = False  # whether the dual variables a_i may be negative
    refinable = False  # whether the model's dual point is inexact at m_i = 1 (a kink there)

    @abstractmethod
    def value(self, margins: np.ndarray) -> float:
        """sum_i phi(1 - m_i)."""

    @abstractmethod
    def conjugate(self, u: np.ndarray) -> float:
        """sum_i phi*(u_i) (+inf outside the domain)."""

    @abstractmethod
    def dual_candidate(self, margins: np.ndarray, C: float) -> np.ndarray:
        """The model's own dual point a_i = C phi'(1 - m_i) (exact at the optimum where phi is
        differentiable)."""

    @abstractmethod
    def scaling(self, a: np.ndarray, C: float) -> Scaling:
        """C sum_i phi*(t a_i / C) as t^degree coef on t's feasible interval (a feasible)."""

    def feasible(self, a: np.ndarray) -> np.ndarray:
        """a in the sign domain of phi* (the box's upper end is left to `scaling`)."""
        a = np.asarray(a, dtype=np.float64)
        return a if self.signed else np.maximum(a, 0.0)


class Hinge(Loss):
    name = "hinge"
    refinable = True

    def value(self, margins):
        return float(np.maximum(1.0 - margins, 0.0).sum())

    def conjugate(self, u):
        return 0.0 if np.all((u >= 0.0) & (u <= 1.0)) else np.inf

    def dual_candidate(self, margins, C):
        return np.where(1.0 - margins > 0.0, C, 0.0)

    def scaling(self, a, C):
        top = a.max(initial=0.0)
        return Scaling(1.0, 0.0, 0.0, C / top if top > 0 else np.inf)


class _Quadratic(Loss):
    """phi*(u) = u^2 / 4 on its domain: C sum phi*(t a / C) = t^2 (a.a) / 4C."""

    def scaling(self, a, C):
        return Scaling(2.0, float(a @ a) / (4.0 * C), -np.inf if self.signed else 0.0)

    def conjugate(self, u):
        return float(u @ u) / 4.0 if self.signed or np.all(u >= 0.0) else np.inf


class SquaredHinge(_Quadratic):
    name = "squared_hinge"

    def value(self, margins):
        return float(np.square(np.maximum(1.0 - margins, 0.0)).sum())

    def dual_candidate(self, margins, C):
        return 2.0 * C * np.maximum(1.0 - margins, 0.0)


class Squared(_Quadratic):
    name = "squared"
    signed = True

    def value(self, margins):
        r = 1.0 - margins
        return float(r @ r)

    def dual_candidate(self, margins, C):
        return 2.0 * C * (1.0 - margins)


class PowerHinge(Loss):
    """max(0, z)^p, p > 1: C phi*(a / C) = h_p(a) = ((p-1)/p) a (a / (C p))^(1/(p-1)), so the
    conjugate term has degree q = p / (p - 1). With p = 2 it is SquaredHinge."""

    def __init__(self, power: float):
        if not power > 1.0:
            raise ValueError(f"the power hinge needs power > 1; got power={power}")
        self.power = power
        self.name = f"hinge_p{power:g}"

    def value(self, margins):
        return float((np.maximum(1.0 - margins, 0.0) ** self.power).sum())

    def conjugate(self, u):
        if np.any(u < 0.0):
            return np.inf
        p = self.power
        return float(((p - 1.0) / p * u * (u / p) ** (1.0 / (p - 1.0))).sum())

    def dual_candidate(self, margins, C):
        return C * self.power * np.maximum(1.0 - margins, 0.0) ** (self.power - 1.0)

    def scaling(self, a, C):
        p = self.power
        h = float(((p - 1.0) / p * a * (a / (C * p)) ** (1.0 / (p - 1.0))).sum())
        return Scaling(p / (p - 1.0), h, 0.0)


class SmoothedHinge(Loss):
    """Nesterov's smoothing of the hinge with quadratic-zone width t_i >= 0 per sample (NESVM):
    h_t(z) = max over 0 <= u <= 1 of u z - t u^2 / 2, so phi*(u) = t u^2 / 2 on [0, 1]; a
    zero width is the hinge itself."""

    name = "smoothed_hinge"

    def __init__(self, width: np.ndarray):
        self.width = np.asarray(width, dtype=np.float64)

    def value(self, margins):
        z = 1.0 - margins
        u = self._derivative(z)
        return float((u * z - 0.5 * self.width * u * u).sum())

    def conjugate(self, u):
        if np.any((u < 0.0) | (u > 1.0)):
            return np.inf
        return float(0.5 * (self.width * u) @ u)

    def dual_candidate(self, margins, C):
        return C * self._derivative(1.0 - margins)

    def scaling(self, a, C):
        top = a.max(initial=0.0)
        return Scaling(2.0, float((self.width * a) @ a) / (2.0 * C), 0.0,
                       C / top if top > 0 else np.inf)

    def _derivative(self, z: np.ndarray) -> np.ndarray:
        """h_t'(z) = clip(z / t, 0, 1) (a zero width: 1 where z > 0, else 0)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(self.width > 0.0, np.clip(z / self.width, 0.0, 1.0), z > 0.0)


# -- penalties --------------------------------------------------------------------------------

class Penalty(ABC):
    """R(w), the regulariser, and its conjugate R*. A penalty a Formulation names also gives
    `from_norms`, `scaling` and `optimality_target`, which the certificates use."""

    name: str
    ascent = False  # whether the hinge's free-set refinement may ascend sum a - R*(v(a))

    @abstractmethod
    def value(self, w: np.ndarray) -> float:
        """R(w)."""

    @abstractmethod
    def conjugate(self, v: np.ndarray) -> float:
        """R*(v) (+inf outside the domain)."""


class L2(Penalty):
    name = "l2"
    ascent = True

    def value(self, w):
        return 0.5 * float(w @ w)

    def conjugate(self, v):
        return 0.5 * float(v @ v)

    def from_norms(self, squared_l2: float, l1: float | None) -> float:
        """R(w) from the model's norms ||w||_2^2 and ||w||_1."""
        return 0.5 * squared_l2

    def scaling(self, image, a: np.ndarray) -> Scaling:
        """R*(t v(a)) = t^2 ||v(a)||^2 / 2 (``image``: a certificates.DualImage)."""
        return Scaling(2.0, 0.5 * image.squared_norm(a))

    def optimality_target(self, w: np.ndarray) -> tuple[slice | np.ndarray, np.ndarray]:
        """(coordinates, target): at the optimum v(a) = w on every coordinate."""
        return slice(None), w


class L1(Penalty):
    name = "l1"

    def value(self, w):
        return float(np.abs(w).sum())

    def conjugate(self, v):
        return 0.0 if np.abs(v).max(initial=0.0) <= 1.0 else np.inf

    def from_norms(self, squared_l2, l1):
        return l1

    def scaling(self, image, a):
        """R*(t v(a)) = 0 for |t| <= 1 / ||v(a)||_inf (linear models only)."""
        sup = image.sup_norm(a)
        bound = 1.0 / sup if sup > 0 else np.inf
        return Scaling(2.0, 0.0, -bound, bound)

    def optimality_target(self, w):
        """At the optimum v(a)_j = sign(w_j) where w_j != 0."""
        return np.flatnonzero(w), np.sign(w)


class ElasticNet(Penalty):
    """lam/2 ||w||^2 + mu ||w||_1 (lam = 0: mu times L1), the l1 Newton solver's penalty."""

    name = "elastic_net"

    def __init__(self, lam: float, mu: float):
        self.lam, self.mu = lam, mu

    def value(self, w):
        return 0.5 * self.lam * float(w @ w) + self.mu * float(np.abs(w).sum())

    def conjugate(self, v):
        excess = np.maximum(np.abs(v) - self.mu, 0.0)
        if self.lam == 0.0:
            return 0.0 if not excess.any() else np.inf
        return float(excess @ excess) / (2.0 * self.lam)

    def best_scaled_dual(self, s: float, v: np.ndarray, t_max: float) -> float:
        """max over 0 <= t <= t_max of t s - R*(t v): concave, and piecewise quadratic with
        kinks t_k = mu / |v_k|, so its maximiser lies on the segment where the slope's
        zero falls."""
        size = np.abs(v)
        size = size[size > 0.0]
        if self.lam == 0.0:
            largest = size.max(initial=0.0)
            return min(t_max, self.mu / largest if largest > 0.0 else np.inf) * s
        kinks = self.mu / size
        order = np.argsort(kinks)
        kinks, size = kinks[order], size[order]
        roots = (self.lam * s + self.mu * np.cumsum(size)) / np.cumsum(size * size)
        within = np.flatnonzero(roots <= np.append(kinks[1:], np.inf))
        t = min(t_max, roots[within[0]] if len(within) else np.inf)
        return t * s - float(np.square(np.maximum(t * size - self.mu, 0.0)).sum()) / (
            2.0 * self.lam)


# -- the bias ---------------------------------------------------------------------------------

class NoBias:
    """f(x) = w.phi(x): the dual has no equality."""

    suffix = ""
    balanced = False  # whether the dual has the equality sum_i a_i y_i = 0
    scale = None  # the constant feature's value s of a penalised bias

    def penalty_part(self, b: float, penalty: Penalty) -> float:
        """The bias's share of the regulariser."""
        return 0.0

    def balance(self, a: np.ndarray, y: np.ndarray, signed: bool) -> np.ndarray:
        """a satisfying the dual's bias constraint."""
        return a


class FreeBias(NoBias):
    """An unpenalised b: the dual gains sum_i a_i y_i = 0."""

    suffix = "_bias"
    balanced = True

    def balance(self, a, y, signed):
        """The heavier class shrunk to the lighter one's total (for free-signed a, its mean
        along y removed instead)."""
        if signed:
            return a - y * (a @ y) / len(y)
        plus, minus = float(a[y > 0].sum()), float(a[y < 0].sum())
        if plus == minus:
            return a
        heavy = 1.0 if plus > minus else -1.0
        ratio = min(plus, minus) / max(plus, minus)
        return np.where(y == heavy, a * ratio, a)


class PenalisedBias(NoBias):
    """b penalised as the weight b / s of a constant feature of value s."""

    suffix = "_penalised_bias"

    def __init__(self, scale: float):
        self.scale = scale

    def penalty_part(self, b, penalty):
        return penalty.value(np.array([b / self.scale]))


LOSSES = {"hinge": Hinge, "squared_hinge": SquaredHinge, "squared": Squared,
          "power_hinge": PowerHinge}
PENALTIES = {"l2": L2, "l1": L1}
BIASES = {"none": NoBias, "free": FreeBias, "penalised": PenalisedBias}
