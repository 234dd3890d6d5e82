r"""The parts of an SVM formulation as objects (a loss, a penalty, a bias treatment and a
margin), the formulation built from them, and the names of the metrics reported about it.

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
a weight on a constant feature of value s (PenalisedBias(s), LIBLINEAR's intercept). The margin
is 1 (UnitMargin) or a variable rho (FreeMargin: phi(rho - m_i) with -rho added to P, so the
dual loses sum_i a_i and gains sum_i a_i = 1; the L2-SVM of the Frank-Wolfe solvers).

A `Formulation` is built from these part objects, and it alone names them: its ``name``
('hinge_l2_bias', or a name of its own such as 'l2svm') and every metric a run reports about it,
``<kind>_<name>`` for the kinds of METRIC_KINDS, come from `metric_name` and go back through
`parse_metric`. The tables LOSSES, PENALTIES and BIASES are the single vocabulary of part names:
they live here, in the estimator layer, because the certificates, the solver families and the
analysis all read them and this layer may be imported by each of those (numerics may not import
it, and needs none of it: its compiled losses are told apart by their data).
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
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

    name_pattern = r"hinge_p[0-9.e+]+"  # the names `parse_metric` reads back

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


class SmoothedHinge(NamedTuple):
    """Nesterov's smoothing of the hinge with quadratic-zone width t_i >= 0 per sample (NESVM):
    h_t(z) = max over 0 <= u <= 1 of u z - t u^2 / 2, so phi*(u) = t u^2 / 2 on [0, 1]; a
    zero width is the hinge itself.

    The one smoothed-hinge class of svmlab: a NamedTuple, so that numba compiles the NESVM
    pass over it (`numerics.rows.loss_pass` knows it by its per-row ``width``), and a Loss by
    registration (a NamedTuple takes no other base)."""

    width: np.ndarray

    name = "smoothed_hinge"
    signed = False
    refinable = False

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
        return Scaling(
            2.0, float((self.width * a) @ a) / (2.0 * C), 0.0, C / top if top > 0 else np.inf
        )

    feasible = Loss.feasible

    def _derivative(self, z: np.ndarray) -> np.ndarray:
        """h_t'(z) = clip(z / t, 0, 1) (a zero width: 1 where z > 0, else 0)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(self.width > 0.0, np.clip(z / self.width, 0.0, 1.0), z > 0.0)


Loss.register(SmoothedHinge)


# -- penalties --------------------------------------------------------------------------------


class Penalty(ABC):
    """R(w), the regulariser, and its conjugate R*, with what the certificates ask of it: R from
    the model's norms, the optimality condition on v(a), and the best dual value along a ray
    t a (through `scaling`, R*(t v(a)) as a power of t, where it is one)."""

    name: str
    ascent = False  # whether the hinge's free-set refinement may ascend sum a - R*(v(a))

    @abstractmethod
    def value(self, w: np.ndarray) -> float:
        """R(w)."""

    @abstractmethod
    def conjugate(self, v: np.ndarray) -> float:
        """R*(v) (+inf outside the domain)."""

    @abstractmethod
    def from_norms(self, squared_l2: float, l1: float | None) -> float:
        """R(w) from the model's norms ||w||_2^2 and ||w||_1."""

    @abstractmethod
    def optimality_target(self, w: np.ndarray) -> tuple[slice | np.ndarray, np.ndarray]:
        """(coordinates, target): at the optimum v(a) equals target on those coordinates."""

    def scaling(self, image, a: np.ndarray) -> Scaling:
        """R*(t v(a)) as t^degree coef (``image``: a certificates.DualImage)."""
        raise NotImplementedError(f"R* of {self.name} is no power of t along a ray")

    def best_scaled_dual(self, S: float, loss: Scaling, image, a: np.ndarray) -> float:
        """max over t of t S - (the loss's conjugate term ``loss``) - R*(t v(a))."""
        return best_on_ray(loss, self.scaling(image, a), S)


class L2(Penalty):
    name = "l2"
    ascent = True

    def value(self, w):
        return 0.5 * float(w @ w)

    def conjugate(self, v):
        return 0.5 * float(v @ v)

    def from_norms(self, squared_l2, l1):
        return 0.5 * squared_l2

    def scaling(self, image, a):
        """R*(t v(a)) = t^2 ||v(a)||^2 / 2."""
        return Scaling(2.0, 0.5 * image.squared_norm(a))

    def optimality_target(self, w):
        """At the optimum v(a) = w on every coordinate."""
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
    """lam/2 ||w||^2 + mu ||w||_1 (lam = 0: mu times L1), the l1 Newton solver's penalty
    (linear models only). R*(t v) is piecewise quadratic in t, with kinks t_k = mu / |v_k|,
    no power of t: `best_scaled_dual` maximises along the ray segment by segment."""

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

    def from_norms(self, squared_l2, l1):
        return 0.5 * self.lam * squared_l2 + self.mu * l1

    def optimality_target(self, w):
        """At the optimum v(a)_j = lam w_j + mu sign(w_j) where w_j != 0."""
        return np.flatnonzero(w), self.lam * w + self.mu * np.sign(w)

    def best_scaled_dual(self, S, loss, image, a):
        """max over t in the loss's interval of D(t) = t S - t^2 H - R*(t v(a)), the loss's
        term t^2 H quadratic or zero (H = 0): D is concave, so its maximiser is the first
        segment's stationary point t_k = (lam S + mu sum s) / (2 lam H + sum s^2) (sums over
        the |v_j| = s past their kinks) that lies before the next kink, clipped to t's
        interval."""
        if loss.degree != 2.0 and loss.coef != 0.0:
            raise ValueError(
                f"the elastic net's dual bound needs a loss whose conjugate is "
                f"quadratic along a ray; got degree {loss.degree}"
            )
        H, v = loss.coef, image.vector(a)
        size = np.abs(v)
        size = size[size > 0.0]
        if S <= 0.0:  # D decreases from t = 0 on
            t = 0.0
        elif self.lam == 0.0:
            largest = size.max(initial=0.0)
            t = min(
                self.mu / largest if largest > 0.0 else np.inf, S / (2.0 * H) if H > 0.0 else np.inf
            )
        else:
            kinks = self.mu / size
            order = np.argsort(kinks)
            kinks, size = kinks[order], size[order]
            with np.errstate(divide="ignore"):
                roots = (self.lam * S + self.mu * np.cumsum(np.append(0.0, size))) / (
                    2.0 * self.lam * H + np.cumsum(np.append(0.0, size * size))
                )
            within = np.flatnonzero(roots <= np.append(kinks, np.inf))
            t = roots[within[0]] if len(within) else np.inf
        t = min(max(t, loss.lower), loss.upper)
        if self.lam == 0.0:  # t <= mu / max|v_j|: R* is 0 (evaluated, it could round to inf)
            return t * S - t * t * H
        return t * S - t * t * H - self.conjugate(t * v)


def best_on_ray(loss: Scaling, penalty: Scaling, S: float) -> float:
    """max over feasible t of D(t a) = t S - t^d H - t^2 Q / 2, where the loss's conjugate
    term is ``loss`` (t^d H) and the penalty's ``penalty`` (t^2 Q / 2; both give t's
    interval): in closed form when d is 2 or H is 0, else at the root of the decreasing
    derivative, by brentq."""
    lower, upper = max(loss.lower, penalty.lower), min(loss.upper, penalty.upper)
    if lower > upper:
        return -np.inf
    if loss.degree == 2.0 or loss.coef == 0.0:
        curvature = loss.coef + penalty.coef
        if curvature <= 0.0:
            t = upper if S > 0 else max(lower, 0.0)
            if not np.isfinite(t):
                return 0.0 if S == 0 else np.inf
        else:
            t = min(max(S / (2.0 * curvature), lower), upper)
        return t * S - t * t * curvature
    if S <= 0.0:
        return 0.0
    from scipy.optimize import brentq  # here: the metric names are read without scipy

    q, H, Q = loss.degree, loss.coef, 2.0 * penalty.coef

    def slope(t):
        return S - q * H * t ** (q - 1.0) - Q * t

    ends = [S / Q] if Q > 0.0 else []
    ends += [(S / (q * H)) ** (1.0 / (q - 1.0))] if H > 0.0 else []
    ends += [upper] if np.isfinite(upper) else []
    if not ends:
        return np.inf
    end = min(ends)
    t = end if slope(end) >= 0.0 else brentq(slope, 0.0, end, xtol=1e-15, rtol=1e-14)
    return t * S - t**q * H - 0.5 * t * t * Q


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


# -- the margin -------------------------------------------------------------------------------


class UnitMargin:
    """The margin 1: C sum_i phi(1 - m_i), and the dual's linear term sum_i a_i."""

    def check(self, loss: Loss) -> None:
        """Raise if this margin cannot go with ``loss``."""

    def data_term(self, loss: Loss, margins: np.ndarray, C: float) -> float:
        """The primal's loss term."""
        return C * loss.value(margins)

    def dual_candidate(self, loss: Loss, margins: np.ndarray, C: float) -> np.ndarray:
        """The model's own dual point."""
        return loss.dual_candidate(margins, C)

    def ray(self, a: np.ndarray) -> tuple[float, float, float]:
        """(S, lower, upper): the dual's linear term along the ray t a is t S, for t in
        [lower, upper]."""
        return float(a.sum()), -np.inf, np.inf


class FreeMargin(UnitMargin):
    """A margin rho of the primal's own, min over rho of C sum_i phi(rho - m_i) - rho: the
    dual's sum_i a_i turns into the constraint sum_i a_i = 1 (t = 1 / sum a). The squared
    hinge only, whose best rho solves sum_i max(0, rho - m_i) = 1 / (2C) in closed form."""

    def check(self, loss):
        if not isinstance(loss, SquaredHinge):
            raise ValueError(f"a free margin needs the squared hinge; got {loss.name}")

    def best(self, margins: np.ndarray, C: float) -> float:
        """The minimising rho, over the sorted margins."""
        m = np.sort(np.asarray(margins, dtype=np.float64))
        rho_k = (0.5 / C + np.cumsum(m)) / np.arange(1, len(m) + 1)
        return float(rho_k[int(np.argmax(rho_k <= np.append(m[1:], np.inf)))])

    def data_term(self, loss, margins, C):
        rho = self.best(margins, C)
        return C * loss.value(margins - rho + 1.0) - rho

    def dual_candidate(self, loss, margins, C):
        return loss.dual_candidate(margins - self.best(margins, C) + 1.0, C)

    def ray(self, a):
        total = float(a.sum())
        return (0.0, 1.0 / total, 1.0 / total) if total > 0.0 else (0.0, np.inf, -np.inf)


# -- the formulation and its metric names ---------------------------------------------------


@dataclass(frozen=True)
class Formulation:
    """What a solver minimises, from its parts: R(w) (+ the bias's part) + the loss term."""

    loss: Loss
    penalty: Penalty
    bias: NoBias = field(default_factory=NoBias)
    margin: UnitMargin = field(default_factory=UnitMargin)
    label: str | None = None  # a name of its own, instead of the parts' (e.g. 'l2svm')

    def __post_init__(self):
        self.margin.check(self.loss)

    @property
    def name(self) -> str:
        """e.g. 'hinge_l2_bias': loss, penalty, and '_bias' (free) or '_penalised_bias'."""
        return self.label or f"{self.loss.name}_{self.penalty.name}{self.bias.suffix}"

    def metric(self, kind: str) -> str:
        """This formulation's metric of ``kind`` (`metric_name`)."""
        return metric_name(kind, self.name)

    def regulariser(self, squared_l2: float, l1: float | None, b: float) -> float:
        """R(w) (with a penalised bias's part) from the model's norms and bias."""
        return self.penalty.from_norms(squared_l2, l1) + self.bias.penalty_part(b, self.penalty)

    def primal(self, margins: np.ndarray, regulariser: float, C: float) -> float:
        """P at a model with these margins and regulariser value."""
        return float(regulariser + self.margin.data_term(self.loss, margins, C))


LOSSES = {
    "hinge": Hinge,
    "squared_hinge": SquaredHinge,
    "squared": Squared,
    "power_hinge": PowerHinge,
    "smoothed_hinge": SmoothedHinge,
}
PENALTIES = {"l2": L2, "l1": L1, "elastic_net": ElasticNet}
BIASES = {"none": NoBias, "free": FreeBias, "penalised": PenalisedBias}

# the L2-SVM of the Frank-Wolfe and CVM solvers: 1/2 (||w||^2 + b^2) + C' sum_i xi_i^2 - rho
# with xi_i = max(0, rho - m_i), certified at C' = C / 2 of their C (their slack term is C/2)
L2SVM = Formulation(SquaredHinge(), L2(), PenalisedBias(1.0), FreeMargin(), label="l2svm")

METRIC_KINDS = ("objective", "primal", "dual", "gap", "rel_gap")
_NAME = re.compile(
    "(?P<loss>{})_(?P<penalty>{})(?P<bias>{})|(?P<label>{})".format(
        "|".join(
            getattr(part, "name_pattern", None) or re.escape(part.name) for part in LOSSES.values()
        ),
        "|".join(PENALTIES),
        "|".join(sorted({b.suffix for b in BIASES.values()}, key=len, reverse=True)),
        re.escape(L2SVM.name),
    )
)
_METRIC = re.compile(f"(?P<kind>{'|'.join(METRIC_KINDS)})_(?P<formulation>{_NAME.pattern})")


class MetricName(NamedTuple):
    """A per-formulation metric, '<kind>_<formulation>'."""

    kind: str
    formulation: str


def metric_name(kind: str, formulation: str) -> str:
    """The metric '<kind>_<formulation>' (kind: one of METRIC_KINDS), e.g.
    'rel_gap_hinge_l2_bias'. An objective names the loss and penalty alone
    ('objective_hinge_l2'): every model's objectives are evaluated with its bias unpenalised."""
    parts = _NAME.fullmatch(formulation)
    if kind not in METRIC_KINDS or parts is None:
        raise ValueError(
            f"no metric {kind!r} of {formulation!r}; kinds {METRIC_KINDS}, "
            f"formulations <loss>_<penalty>[_bias|_penalised_bias] or "
            f"{L2SVM.name}"
        )
    if kind == "objective" and parts["bias"]:
        formulation = formulation[: parts.start("bias")]
    return f"{kind}_{formulation}"


def parse_metric(name: str) -> MetricName | None:
    """(kind, formulation) of a name `metric_name` builds, None for any other name."""
    found = _METRIC.fullmatch(name)
    return MetricName(found["kind"], found["formulation"]) if found else None
