r"""SmSVM-l1-l2 (Hajewski, Oliveira, Stewart): the l1-penalised SVM by smoothing and Newton steps.

Minimises P(w) = lam/2 ||w||^2 + mu ||w||_1 + 1/N sum_i max(0, 1 - y_i x_i.w) (no intercept,
as in the paper) through the square-root smoothed hinge j_alpha, with alpha divided by beta from
alpha0 until alpha <= alpha_min (the repaired algorithm of spec 001 §2.6, `newton`). lam = 0 is
the LP-SVM; lam > 0 the elastic net the paper runs. The certificate is P's duality gap
(`certificate`, from the smoothed problem's dual point j_alpha'(z)), named hinge_elastic_net,
or for lam = 0 < mu hinge_l1, in that objective's scale at C = 1/(N mu) (P / mu). objective_hinge_l1 and objective_hinge_l2 are reported at
C_ = 1/(N mu) (or 1/(N lam) when mu = 0), where they equal P / mu (P / lam) when the other
weight is 0.

``path`` > 1 runs a regularisation path: ``path`` values of mu, geometric from mu_max =
||X^T y||_inf / N (where w = 0) down to ``mu``, each warm-started from the previous solution;
the trace holds the whole path (column ``mu``) and the model is the last one.
"""

from contextlib import nullcontext
from numbers import Integral, Real
from typing import ClassVar

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from svmlab.errors import ConfigError
from svmlab.estimator.certificates import Certificate, LinearImage, certify
from svmlab.estimator.models import LinearSVMClassifier
from svmlab.estimator.objectives import primal_objectives
from svmlab.estimator.trace import RowBuffer
from svmlab.numerics.rows import rmatvec, rows_of
from svmlab.solvers.l1_newton.certificate import (
    certified,
    exact_objective,
    free_set_duals,
    problem,
)
from svmlab.solvers.l1_newton.newton import PRUNES, Settings, minimise_over_schedule
from svmlab.solvers.l1_newton.passes import hinge_derivatives, smoothed_objective

WARM_UP_COLUMNS = 20


class L1NewtonSVM(LinearSVMClassifier):
    """Newton active-set l1(+l2) SVM on the smoothed hinge; dense or CSR input (kept sparse).

    Stops as soon as the certified relative gap of P is <= tol at the end of an alpha level, or
    when alpha <= alpha_min (the paper's rule), or after max_newton Newton iterations.
    converged_ means the model's certified gap is <= tol (tol = 0 asks for none: never);
    stop_reason_ says which rule ended the fit. Fitted diagnostics: alpha_final_ (last alpha
    solved), n_passes_, n_steps_, n_backtracks_, n_levels_; with a path also path_mu_ and
    path_coef_ (one row per mu).
    """

    name = "l1_newton"
    test_config = (
        {"lam": 1e-3, "mu": 1e-2, "eta": 1e-8, "alpha_min": 1e-6},
        {"lam": 0.0, "mu": 1e-2},
        {"path": 3},
    )
    test_truncated: ClassVar[dict] = {"max_newton": 1}
    gap_tol = "tol"

    _parameter_constraints: ClassVar[dict] = {
        "lam": [Interval(Real, 0.0, None, closed="left")],
        "mu": [Interval(Real, 0.0, None, closed="left")],
        "alpha0": [Interval(Real, 0.0, None, closed="neither")],
        "alpha_min": [Interval(Real, 0.0, None, closed="neither")],
        "beta": [Interval(Real, 1.0, None, closed="neither")],
        "eta": [Interval(Real, 0.0, None, closed="neither")],
        "c1": [Interval(Real, 0.0, 1.0, closed="neither")],
        "max_newton": [Interval(Integral, 1, None, closed="left")],
        "max_backtrack": [Interval(Integral, 0, None, closed="left")],
        "prune": [StrOptions(set(PRUNES))],
        "tol": [Interval(Real, 0.0, None, closed="left")],
        "path": [Interval(Integral, 1, None, closed="left")],
    }
    _warm_up: ClassVar[dict] = {"alpha_min": 0.5, "max_newton": 50, "path": 1}

    def __init__(
        self,
        lam=1e-4,
        mu=1e-2,
        *,
        alpha0=1.0,
        alpha_min=1e-4,
        beta=2.0,
        eta=0.1,
        c1=1e-4,
        max_newton=10_000,
        max_backtrack=50,
        prune="resolve",
        tol=1e-2,
        path=1,
    ):
        self.lam = lam
        self.mu = mu
        self.alpha0 = alpha0
        self.alpha_min = alpha_min
        self.beta = beta
        self.eta = eta
        self.c1 = c1
        self.max_newton = max_newton
        self.max_backtrack = max_backtrack
        self.prune = prune
        self.tol = tol
        self.path = path

    def _compile(self, X, y) -> float:
        """The base class's warm-up on the first WARM_UP_COLUMNS columns: the compiled code does
        not depend on d, and on wide data a warm-up on every column spends seconds factorising
        the Hessian block of the coordinates it releases."""
        return super()._compile(X[:, :WARM_UP_COLUMNS], y)

    def _stopping_rule(self) -> str:
        rel_gap = certified(self.lam, self.mu)[0].metric("rel_gap")
        return (
            f"certified {rel_gap} <= tol={self.tol} at a level's "
            f"end, before the paper's rule alpha <= alpha_min={self.alpha_min} (Newton "
            f"decrement < eta={self.eta} x alpha and no inactive KKT violator at every "
            f"level), within max_newton={self.max_newton} Newton iterations per mu"
        )

    def _settings(self, mu: float) -> Settings:
        return Settings(
            self.lam,
            mu,
            self.alpha0,
            self.alpha_min,
            self.beta,
            self.eta,
            self.c1,
            self.max_newton,
            self.max_backtrack,
            self.prune,
        )

    def _fit(self, X, y, trace):
        rows = rows_of(X)
        n, p = X.shape
        mus = self._path_mus(rows, y)
        w, done = np.zeros(p), 0
        with nullcontext() if self.tol > 0 else trace.paused():  # the gaps' features
            image = LinearImage(X, y, w)
        coefs, totals = [], np.zeros(4, np.int64)
        with trace.buffered() as trace_rows:
            for mu in mus:
                state, gap = self._solve(X, rows, y, mu, w, trace_rows, done, image)
                w, done = state.w, done + state.iterations
                coefs.append(w)
                totals += (state.passes, state.steps, state.backtracks, state.levels)
        self.converged_ = bool(gap <= self.tol)
        self.stop_reason_ = (
            "certified gap <= tol"
            if state.stopped
            else f"max_newton={self.max_newton} iterations"
            if state.iterations >= self.max_newton
            else "paper's rule alpha <= alpha_min"
        )
        self.coef_, self.intercept_ = w[None, :], np.zeros(1)
        self.alpha_final_ = state.solved
        self.n_passes_, self.n_steps_, self.n_backtracks_, self.n_levels_ = map(int, totals)
        self.C_ = 1.0 / (n * (self.mu or self.lam or 1.0))
        if self.path > 1:
            self.path_mu_, self.path_coef_ = np.asarray(mus), np.vstack(coefs)

    def _path_mus(self, rows, y) -> list[float]:
        """The path's mu from mu_max = ||X^T y||_inf / N down to mu (X^T y by the row pass
        of both input formats, so dense and CSR input share the path)."""
        if self.path == 1:
            return [float(self.mu)]
        xty = np.empty(rows.n_cols)
        rmatvec(rows, y, xty)
        top = float(np.abs(xty).max()) / rows.n_rows
        if not 0.0 < self.mu < top:
            raise ConfigError(
                f"path={self.path} needs 0 < mu < mu_max = ||X^T y||_inf / N = "
                f"{top:.6g} (w = 0 from mu_max on); got mu={self.mu}"
            )
        return list(np.geomspace(top, self.mu, self.path))

    def _solve(self, X, rows, y, mu, w0, trace: RowBuffer, offset, image: LinearImage):
        """One run of the method at mu from w0, traced in the fit's buffer; returns its final
        State and the certified relative gap there (certified on the clock at the end when no
        level's end was; inf if tol = 0 or max_newton ran out). ``image``: X's features for
        the certificates."""
        gap = {"value": np.nan, "primal": np.inf, "final": np.inf}
        on_clock = self.tol > 0
        gap_column = certified(self.lam, mu)[0].metric("rel_gap")
        objective_column = problem(self.lam, mu).metric("objective")

        def on_level(state):
            """The gap at a level's end: the stopping test (tol > 0), certified once P changed by
            at most tol x P over the level (before, it cannot be due yet); else trace-only."""
            if not on_clock:
                with trace.paused():
                    gap["value"] = self._gap(X, y, state, mu, image, refine=False)
                return False
            primal = exact_objective(y * state.xw, state.w, self.lam, mu)
            due = gap["primal"] - primal <= self.tol * primal
            gap["primal"] = primal
            if due:
                gap["value"] = gap["final"] = self._gap(X, y, state, mu, image)
            return due and gap["value"] <= self.tol

        def on_iteration(state):
            with trace.paused():
                F = (
                    state.objective
                    if np.isfinite(state.objective)
                    else smoothed_objective(y, state.xw, state.w, state.alpha, self.lam, mu)
                )
                row = {
                    "objective_smoothed": F,
                    "alpha": state.alpha,
                    objective_column: exact_objective(y * state.xw, state.w, self.lam, mu),
                    "active": state.active,
                    "nnz": int(np.count_nonzero(state.w)),
                    "passes": state.passes,
                    gap_column: gap["value"],
                    "mu": mu,
                }
                gap["value"] = np.nan
            trace.append(offset + state.iterations, **row)

        state = minimise_over_schedule(rows, y, self._settings(mu), w0, on_iteration, on_level)
        if not on_clock or state.stopped or state.iterations >= self.max_newton:
            return state, gap["final"] if state.stopped else np.inf
        return state, self._gap(X, y, state, mu, image)

    def _gap(self, X, y, state, mu, image, refine=True) -> float:
        """Certified relative gap at the iterate (theta from the alpha just solved)."""
        return self._weights_cert(X, y, state.w, state.xw, state.solved, mu, image, refine).rel_gap

    def _weights_cert(self, X, y, w, xw, alpha, mu, image, refine=True) -> Certificate:
        """The certificate of `certificate.certified` (P, or for lam = 0 < mu P / mu) from the
        smoothed problem's dual point, the hinge's subgradient (the model's own) and
        (``refine``) its free-set completions (`certificate.free_set_duals`), drawn one at a
        time while the gap exceeds tol."""
        form, scale = certified(self.lam, mu)
        C, z = scale / len(y), 1.0 - y * xw
        smoothed = hinge_derivatives(y, xw, alpha)
        completions = ()
        if refine:
            primal = exact_objective(y * xw, w, self.lam, mu)
            enough = primal - self.tol * abs(primal) if self.tol > 0 else np.inf
            hinge_sum = image.vector((z > 0.0).astype(float))
            completions = (
                C * theta
                for theta in free_set_duals(X, y, w, z, self.lam, mu, hinge_sum, smoothed, enough)
            )
        regulariser = form.regulariser(float(w @ w), float(np.abs(w).sum()), 0.0)
        return certify(
            form,
            C,
            y * xw,
            regulariser,
            image.with_weights(w),
            (C * smoothed,),
            refine=False,
            tol=self.tol,
            model_duals=completions,
        )

    def _certificate(self, X, y) -> Certificate:
        w = self.coef_[0]
        return self._weights_cert(
            X, y, w, X @ w, self.alpha_final_, float(self.mu), LinearImage(X, y, w)
        )

    def _objective_values(self, X, y_pm) -> dict[str, float]:
        """The common objectives at C_, and P itself (objective_hinge_elastic_net)."""
        w = self.coef_[0]
        margins = y_pm * self._decision_of(X)
        values = primal_objectives(margins, float(w @ w), float(np.abs(w).sum()), self.C_)
        values[problem(self.lam, self.mu).metric("objective")] = exact_objective(
            margins, w, self.lam, self.mu
        )
        return values
