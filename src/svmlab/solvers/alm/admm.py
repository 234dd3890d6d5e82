r"""SVM-ALM's outer iteration (spec 002, §1.4 and §2.2): e-step, (w, b)-step, multiplier step.

The problem is min_{w,b,e} 1/2 ||w||^2 + C sum_i (y_i e_i)_+^p s.t. A w + b 1 - y + e = 0, with
the augmented Lagrangian of penalty mu. One outer iteration k, all with the same mu_(k):

    e   <- y prox_p(y t, C / mu),   t = y - A w - b - lam / mu          (Eqs.10-13)
    w,b <- warm-started CG on the normal equations of
           min mu^-1 ||w||^2 + ||A w + b 1 - z||^2,   z = y - e - lam / mu    (Eqs.14-18),
           preconditioned by their diagonal (||A_j||^2 + 1/mu, n) with ``precondition``
    lam <- lam + mu (A w + b - y + e)                                    (Eq.9)

The exact variant (Algorithm 1) runs CG to a relative residual cg_tol; the inexact variant runs
``inner_steps`` CG iterations, and one is the paper's steepest-descent step with exact line
search (Algorithm 2). u = A w is kept in memory and updated with each CG step; it is recomputed
after every exact step and every ``refresh_every`` inexact iterations.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from svmlab.numerics.rows import Rows, matvec
from svmlab.solvers.alm.loops import (
    column_squares,
    conjugate_gradient,
    e_step_pass,
    multiplier_step,
)

SCHEDULES = ("constant", "geometric", "balance", "paper29")
BALANCE_RATIO = 10.0  # "balance": change mu when one residual exceeds 10x the other
BALANCE_FACTOR = 2.0  # ... by this factor (Boyd et al. 2011, §3.4.1)


class Settings(NamedTuple):
    """What stays fixed during a fit (spec §2.3)."""

    C: float
    p: float
    exact: bool
    inner_steps: int  # CG iterations of the inexact variant
    cg_tol: float  # exact variant: relative residual of CG
    cg_maxit: int  # exact variant: CG iterations at most
    prox_tol: float
    prox_maxit: int
    refresh_every: int  # inexact variant: u = A w recomputed every this many iterations
    bias: bool
    schedule: str
    rho: float
    mu_max: float
    precondition: bool  # CG preconditioned by the diagonal of the normal equations


@dataclass
class State:
    """The iterate: w, b, the multipliers lam, e, u = A w, and the penalty mu of the next
    iteration."""

    w: np.ndarray
    b: float
    lam: np.ndarray
    e: np.ndarray
    u: np.ndarray
    mu: float

    @classmethod
    def start(cls, rows: Rows, w: np.ndarray, mu: float) -> State:
        """w given, b = 0, lam = 0, e = 0 (spec §2.1)."""
        n = rows.n_rows
        u = np.empty(n)
        matvec(rows, w, u)
        return cls(w.astype(np.float64), 0.0, np.zeros(n), np.zeros(n), u, mu)


class Step(NamedTuple):
    """What one outer iteration reports."""

    iteration: int
    mu: float  # the penalty this iteration used
    objective: float  # 1/2 ||w||^2 + C sum_i xi_i^p at the new (w, b)
    primal_residual: float  # ||A w + b - y + e||
    dual_residual: float  # ||mu (A (w - w_old) + (b - b_old))||
    cg_iterations: int
    cg_residual: float  # ||rhs - M (w, b)|| after CG (NaN when its last A^T q was skipped)


def check_labels(y: np.ndarray) -> None:
    """The solver works on labels in {-1, +1}."""
    if not np.isin(y, (-1.0, 1.0)).all():
        raise ValueError(
            f"SVM-ALM needs labels in {{-1, +1}}; got values {np.unique(y)[:10].tolist()}"
        )


def next_mu(
    s: Settings, mu: float, primal_residual: float, dual_residual: float, bound29: float = math.inf
) -> float:
    """mu_(k+1): constant; geometric min(rho mu, mu_max); balance (x or / 2 when one residual
    is 10x the other, capped at mu_max); paper29: rho mu clamped into [mu, bound29], the
    right-hand side of the paper's Eq. 29 (non-decreasing, capped at mu_max)."""
    if s.schedule == "geometric":
        return min(s.rho * mu, s.mu_max)
    if s.schedule == "paper29":
        return min(max(min(s.rho * mu, bound29), mu), s.mu_max)
    if s.schedule == "balance":
        if primal_residual > BALANCE_RATIO * dual_residual:
            return min(BALANCE_FACTOR * mu, s.mu_max)
        if dual_residual > BALANCE_RATIO * primal_residual:
            return mu / BALANCE_FACTOR
    return mu


def eq29_bound(res2: float, f: float, previous: float | None) -> float:
    """The right-hand side of Eq. 29 (spec §1.4.4) on iterations (k-1, k), the bound for
    mu_(k+1): (mu_(k-1) ||res_(k-1)||^2 / 2 + f_(k-1) - f_k) / (||res_k||^2 / 2), where
    ``previous`` = mu_(k-1) ||res_(k-1)||^2 / 2 + f_(k-1), res2 = ||res_k||^2 and
    f = 1/2 ||w||^2 + C sum (y e)_+^p. Eq. 29 is implicit in mu_(k+1), so it is evaluated one
    iteration late; +inf without a previous iteration or residual."""
    if previous is None or res2 == 0.0:
        return math.inf
    return (previous - f) / (0.5 * res2)


def iterate(rows: Rows, y: np.ndarray, state: State, s: Settings) -> Iterator[Step]:
    """Outer iterations 1, 2, ... from ``state`` (updated in place), without end."""
    check_labels(y)
    n, d = rows.n_rows, rows.n_cols
    g, h = np.empty(d), np.empty(d if s.exact else 0)
    d_w, m_w, q, u_old = np.empty(d), np.empty(d), np.empty(n), np.empty(n)
    z_w = np.empty(d)
    if s.precondition:
        column_sq = np.empty(d)
        column_squares(rows, column_sq)
    pre_w = np.empty(0)
    maxit = s.cg_maxit if s.exact else s.inner_steps
    k, lyapunov = 0, None  # lyapunov: mu ||res||^2 / 2 + f of the last iteration (paper29)
    while True:
        k += 1
        mu = state.mu
        sum_r, sum_z = e_step_pass(
            rows,
            y,
            state.u,
            state.b,
            state.lam,
            mu,
            s.C,
            s.p,
            s.prox_tol,
            s.prox_maxit,
            state.e,
            g,
            h,
        )
        res_w = -(g + state.w / mu)  # rhs - M (w, b) = -(A^T r + w / mu, sum r)
        rhs_norm = math.sqrt(h @ h + (sum_z * sum_z if s.bias else 0.0)) if s.exact else 0.0
        u_old[:] = state.u
        b_old = state.b
        if s.precondition:
            pre_w = 1.0 / (column_sq + 1.0 / mu)
        state.b, cg_its, cg_res = conjugate_gradient(
            rows,
            state.w,
            state.b,
            state.u,
            res_w,
            -sum_r,
            mu,
            s.bias,
            maxit,
            s.cg_tol * rhs_norm,
            d_w,
            q,
            m_w,
            pre_w,
            1.0 / n,
            z_w,
        )
        if s.exact or k % s.refresh_every == 0:
            matvec(rows, state.w, state.u)
        res2, change2, loss = multiplier_step(
            y, state.u, state.b, state.e, state.lam, mu, s.p, u_old, b_old
        )
        objective = 0.5 * float(state.w @ state.w) + s.C * loss
        step = Step(k, mu, objective, math.sqrt(res2), mu * math.sqrt(change2), cg_its, cg_res)
        bound = math.inf
        if s.schedule == "paper29":
            f = 0.5 * float(state.w @ state.w) + s.C * float(
                np.sum(np.maximum(y * state.e, 0.0) ** s.p)
            )
            bound = eq29_bound(res2, f, lyapunov)
            lyapunov = 0.5 * mu * res2 + f
        state.mu = next_mu(s, mu, step.primal_residual, step.dual_residual, bound)
        yield step
