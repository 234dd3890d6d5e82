r"""SVM-ALM (Nie, Huang, Wang, Huang, ICML 2014): the Lp-primal SVM by augmented Lagrange
multipliers, as a scikit-learn estimator (spec 002).

It minimises 1/2 ||w||^2 + C sum_i max(0, 1 - y_i (w.x_i + b))^p, p >= 1, with an unregularised
bias b (`admm` holds the iteration). The multipliers give the dual point alpha = -y * lam
(spec §1.5), which the certificate uses besides the model's own candidates: formulation
hinge_l2_bias (p = 1), squared_hinge_l2_bias (p = 2) or hinge_p<p>_l2_bias (other p).
"""

import math
from contextlib import nullcontext
from numbers import Integral, Real
from typing import ClassVar

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from svmlab.errors import ConfigError
from svmlab.estimator.certificates import DualImage, dual_bound
from svmlab.estimator.formulations import (
    L2,
    Formulation,
    FreeBias,
    Hinge,
    NoBias,
    PowerHinge,
    SquaredHinge,
)
from svmlab.estimator.models import LinearSVMClassifier
from svmlab.numerics.rows import Rows, rmatvec, rows_of
from svmlab.solvers.alm.admm import SCHEDULES, Settings, State, iterate

VARIANTS = ("exact", "inexact")
CERTIFY_GROWTH = 1.1  # the iterations between two certificates grow by this factor


class RowsImage(DualImage):
    """||v(a)||^2 = ||A^T (a * y)||^2 through the solver's own pass (no transposed copy of X)."""

    def __init__(self, rows: Rows, y: np.ndarray):
        super().__init__(y)
        self.rows, self.out = rows, np.empty(rows.n_cols)

    def squared_norm(self, a):
        rmatvec(self.rows, a * self.y, self.out)
        return float(self.out @ self.out)

    def fit_free(self, a, free, C, penalty, balanced, enough=np.inf):
        raise NotImplementedError("RowsImage serves the solver's own dual point only")


class SVMALM(LinearSVMClassifier):
    """SVM-ALM for the Lp-primal SVM (p = 1: hinge, p = 2: squared hinge, any p >= 1).

    Parameters (spec §2.3): C; p; fit_intercept (unregularised bias); variant ('inexact':
    ``inner_steps`` warm-started CG iterations per outer iteration, default 3, 1 = the paper's
    Algorithm 2; 'exact': CG to relative residual cg_tol within cg_maxit iterations, default
    min(d+1, 1000), Algorithm 1); mu_schedule ('constant', 'geometric': min(rho mu, mu_max),
    'balance', 'paper29': rho mu clamped into [mu, the right-hand side of the paper's
    Eq. 29], non-decreasing), mu0 (default 0.1 C), rho, mu_max; precondition (default True, not
    in the paper: CG preconditioned by the diagonal of the normal equations, ||A_j||^2 + 1/mu
    and n, which on data with features of very unequal frequencies such as w8a's cuts the outer
    iterations 2.6x; False: the paper's gradient steps); w_init ('ones', the paper's, or
    'zeros'); prox_tol, prox_maxit (general p); refresh_every. Stopping (any enabled rule
    stops): tol_gap (default 1e-2): the relative duality gap certified by the dual point
    alpha = -y lam <= tol_gap (on the solver's clock); the paper's rules, off by default
    (conf/solver/alm_paper.yaml): tol, |obj_k - obj_k-1| <= tol max(1, |obj_k-1|) with
    tol_change='relative', <= tol with 'absolute' (section 4's "objectives changes are less
    than 10^-4", read as written; 0 disables it), and eps_grad (p > 1): ||grad obj(w, b)|| <=
    eps_grad (times ||grad obj|| at the start if grad_rel); max_iter outer iterations. The dual
    bound of the multipliers' point is computed on a schedule, at iterations 1, 2, ..., 20, 22,
    24, 26, 28, 30, 33, ... spaced by a factor 1.1 (CERTIFY_GROWTH), and at the iteration that
    ends the fit, so it costs a small part of a fit; every iteration's certified gap is its
    objective minus the best bound so far, so a fit stops at the first iterate that bound
    certifies. trace_certificate=True computes the bound at every iteration (off the clock
    without tol_gap; without either, no iterate is certified, only the final model).

    Fitted: coef_, intercept_, multipliers_ (lam), mu_ (the last penalty used), converged_ (the
    certified gap of the last iterate is <= tol_gap; never without tol_gap), stop_reason_ (the
    rule that ended the fit).
    Trace columns: objective_<loss>_l2, primal_residual, dual_residual, mu, cg_iterations and
    with tol_gap or trace_certificate, dual_<f> (the best bound so far), gap_<f>, rel_gap_<f>
    (f: the formulation).
    """

    name = "alm"
    test_config = (
        {"inner_steps": 5, "tol": 0.0, "tol_gap": 1e-6, "max_iter": 5000},
        {"p": 1.5, "variant": "exact", "fit_intercept": False, "max_iter": 5000},
    )
    gap_tol = "tol_gap"

    _parameter_constraints: ClassVar[dict] = {
        "C": [Interval(Real, 0.0, None, closed="neither")],
        "p": [Interval(Real, 1.0, None, closed="left")],
        "fit_intercept": ["boolean"],
        "variant": [StrOptions(set(VARIANTS))],
        "inner_steps": [Interval(Integral, 1, None, closed="left")],
        "mu_schedule": [StrOptions(set(SCHEDULES))],
        "mu0": [Interval(Real, 0.0, None, closed="neither"), None],
        "rho": [Interval(Real, 1.0, None, closed="left")],
        "mu_max": [Interval(Real, 0.0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0.0, None, closed="left")],
        "tol_change": [StrOptions({"absolute", "relative"})],
        "eps_grad": [Interval(Real, 0.0, None, closed="neither"), None],
        "grad_rel": ["boolean"],
        "tol_gap": [Interval(Real, 0.0, None, closed="neither"), None],
        "cg_tol": [Interval(Real, 0.0, None, closed="neither")],
        "cg_maxit": [Interval(Integral, 1, None, closed="left"), None],
        "w_init": [StrOptions({"ones", "zeros"})],
        "prox_tol": [Interval(Real, 0.0, None, closed="neither")],
        "prox_maxit": [Interval(Integral, 1, None, closed="left")],
        "refresh_every": [Interval(Integral, 1, None, closed="left")],
        "trace_certificate": ["boolean"],
        "precondition": ["boolean"],
    }
    _warm_up: ClassVar[dict] = {"max_iter": 2}
    warm_startable = True  # from another fit's w (`fit`'s start) instead of w_init

    def __init__(
        self,
        C=1.0,
        *,
        p=1.0,
        fit_intercept=True,
        variant="inexact",
        inner_steps=3,
        mu_schedule="constant",
        mu0=None,
        rho=1.0,
        mu_max=1e5,
        max_iter=10_000,
        tol=0.0,
        tol_change="relative",
        eps_grad=None,
        grad_rel=False,
        tol_gap=1e-2,
        cg_tol=1e-10,
        cg_maxit=None,
        w_init="ones",
        prox_tol=1e-12,
        prox_maxit=100,
        refresh_every=50,
        trace_certificate=False,
        precondition=True,
    ):
        self.C = C
        self.p = p
        self.fit_intercept = fit_intercept
        self.variant = variant
        self.inner_steps = inner_steps
        self.mu_schedule = mu_schedule
        self.mu0 = mu0
        self.rho = rho
        self.mu_max = mu_max
        self.max_iter = max_iter
        self.tol = tol
        self.tol_change = tol_change
        self.eps_grad = eps_grad
        self.grad_rel = grad_rel
        self.tol_gap = tol_gap
        self.cg_tol = cg_tol
        self.cg_maxit = cg_maxit
        self.w_init = w_init
        self.prox_tol = prox_tol
        self.prox_maxit = prox_maxit
        self.refresh_every = refresh_every
        self.trace_certificate = trace_certificate
        self.precondition = precondition

    def _validate_params(self) -> None:
        super()._validate_params()
        if self.eps_grad is not None and self.p == 1.0:
            raise ConfigError(
                "eps_grad needs p > 1: the hinge objective (p = 1) has no "
                "gradient; use tol (objective change) or tol_gap"
            )

    def _formulation(self) -> Formulation:
        loss = (
            Hinge()
            if self.p == 1.0
            else SquaredHinge()
            if self.p == 2.0
            else PowerHinge(float(self.p))
        )
        return Formulation(loss, L2(), FreeBias() if self.fit_intercept else NoBias())

    def _certificate_tol(self) -> float:
        return self.tol_gap if self.tol_gap is not None else super()._certificate_tol()

    def _stopping_rule(self) -> str:
        target = (
            f"certified {self._formulation().metric('rel_gap')} <= tol_gap={self.tol_gap}"
            if self.tol_gap is not None
            else "none (tol_gap=None: no certified gap asked)"
        )
        relative = " max(1, |obj_k-1|)" if self.tol_change == "relative" else ""
        rules = [f"|obj_k - obj_k-1| <= tol{relative} with tol={self.tol}"] if self.tol > 0 else []
        if self.eps_grad is not None:
            scale = " ||grad obj(w_init, 0)||" if self.grad_rel else ""
            rules.append(f"||grad obj(w, b)|| <= eps_grad{scale} with eps_grad={self.eps_grad}")
        paper = f", unless the paper's {' or '.join(rules)} stops it first" if rules else ""
        return f"{target}{paper}, within max_iter={self.max_iter} outer iterations"

    def _settings(self, n_features: int) -> Settings:
        cg_maxit = self.cg_maxit or min(n_features + 1, 1000)
        return Settings(
            float(self.C),
            float(self.p),
            self.variant == "exact",
            self.inner_steps,
            self.cg_tol,
            cg_maxit,
            self.prox_tol,
            self.prox_maxit,
            self.refresh_every,
            self.fit_intercept,
            self.mu_schedule,
            float(self.rho),
            float(self.mu_max),
            self.precondition,
        )

    def _fit(self, X, y, trace):
        rows = rows_of(X)
        settings = self._settings(X.shape[1])
        mu0 = self.mu0 if self.mu0 is not None else 0.1 * self.C
        w0 = (
            self._start.coef_[0].copy()
            if self._start is not None  # another fit's w
            else np.ones(X.shape[1])
            if self.w_init == "ones"
            else np.zeros(X.shape[1])
        )
        state = State.start(rows, w0, float(mu0))
        image, form = RowsImage(rows, y), self._formulation()
        previous = self._objective(state, y)
        grad0 = self._gradient_norm(rows, y, state) if self.grad_rel else 1.0
        dual, self._dual_point, next_check = -math.inf, None, 1
        objective_name = form.metric("objective")
        with trace.buffered() as rows_out:
            for step in iterate(rows, y, state, settings):
                paper = None
                scale = max(1.0, abs(previous)) if self.tol_change == "relative" else 1.0
                if self.tol > 0 and abs(previous - step.objective) <= self.tol * scale:
                    paper = f"paper's rule |obj_k - obj_k-1| <= tol={self.tol}"
                elif self.eps_grad is not None and (
                    self._gradient_norm(rows, y, state) <= self.eps_grad * grad0
                ):
                    paper = f"paper's rule ||grad obj|| <= eps_grad={self.eps_grad}"
                last = paper is not None or step.iteration >= self.max_iter
                row = {
                    objective_name: step.objective,
                    "primal_residual": step.primal_residual,
                    "dual_residual": step.dual_residual,
                    "mu": step.mu,
                    "cg_iterations": float(step.cg_iterations),
                }
                if self.trace_certificate or (
                    self.tol_gap is not None and (last or step.iteration >= next_check)
                ):
                    next_check = max(step.iteration + 1, int(step.iteration * CERTIFY_GROWTH))
                    with trace.paused() if self.tol_gap is None else nullcontext():
                        point = -y * state.lam
                        bound = dual_bound(form, self.C, point, image)
                    if bound > dual or self._dual_point is None:
                        dual, self._dual_point = bound, point
                if self._dual_point is not None:
                    row |= self._gap_row(form, step.objective, dual)
                rows_out.append(step.iteration, **row)
                previous = step.objective
                self.converged_ = (
                    self.tol_gap is not None and row[form.metric("rel_gap")] <= self.tol_gap
                )
                if self.converged_ or last:
                    self.stop_reason_ = (
                        "certified gap <= tol_gap"
                        if self.converged_
                        else paper or f"max_iter={self.max_iter} iterations"
                    )
                    break
        self.coef_ = state.w[None, :].copy()
        self.intercept_ = np.array([state.b])
        self.multipliers_ = state.lam.copy()
        self.mu_ = step.mu

    def _objective(self, state: State, y: np.ndarray) -> float:
        margins = y * (state.u + state.b)
        return 0.5 * float(state.w @ state.w) + self.C * self._formulation().loss.value(margins)

    def _gradient_norm(self, rows: Rows, y: np.ndarray, state: State) -> float:
        """||(w - A^T a, -sum a)|| with a = C p xi^(p-1) y (spec §2.2; p > 1)."""
        xi = np.maximum(0.0, 1.0 - y * (state.u + state.b))
        a = self.C * self.p * xi ** (self.p - 1.0) * y
        grad_w = np.empty_like(state.w)
        rmatvec(rows, a, grad_w)
        grad_w = state.w - grad_w
        grad_b = -float(a.sum()) if self.fit_intercept else 0.0
        return math.hypot(float(np.linalg.norm(grad_w)), grad_b)

    @staticmethod
    def _gap_row(form, primal: float, dual: float) -> dict[str, float]:
        """dual_<f>, gap_<f>, rel_gap_<f> of the iterate of objective ``primal`` against the best
        dual bound so far (any dual feasible point bounds the optimum)."""
        gap = primal - dual
        return {
            form.metric("dual"): dual,
            form.metric("gap"): gap,
            form.metric("rel_gap"): gap / abs(primal) if primal else math.inf,
        }

    def _solver_duals(self, y: np.ndarray) -> tuple[np.ndarray, ...]:
        """The last multipliers' dual point and the one of the best bound in the fit, so the
        final certificate is at least as tight as the one that stopped it."""
        last = -y * self.multipliers_
        return (last,) if self._dual_point is None else (last, self._dual_point)

    def _objective_values(self, X, y_pm):
        """The shared objectives, and the power hinge's own when it is not among them."""
        values, form = super()._objective_values(X, y_pm), self._formulation()
        if form.metric("objective") not in values:
            margins = y_pm * self._decision_function(X)
            values[form.metric("objective")] = 0.5 * float(
                self.coef_[0] @ self.coef_[0]
            ) + self.C * form.loss.value(margins)
        return values
