"""Frank-Wolfe solvers of the L2-SVM (Frandi, Nanculef, Gasparo, Lodi, Sartori): FW and MFW.

The L2-SVM (bias regularised, margin rho free, squared slacks)

    min  1/2 (||w||^2 + b^2 + C sum_i xi_i^2) - rho   s.t.  y_i (w.phi(x_i) + b) >= rho - xi_i

has the dual  min alpha^T K~ alpha  over the unit simplex, with the modified kernel
K~_ij = y_i y_j (k(x_i, x_j) + 1) + delta_ij / C (`svmlab.numerics.kernel_rows`). For a normalised
kernel (rbf) this is the minimum enclosing ball (MEB) of the points z_i with z_i.z_j = K~_ij.
FW (Algorithm 2) moves towards the point of smallest G_i = (K~ alpha)_i; MFW (Algorithm 3) may
instead move away from the active point of largest G_j, and drops it when its weight reaches 0.
The classifier is recovered exactly: h(x) = sum_i alpha_i y_i k(x_i, x) + b, b = sum_i alpha_i y_i,
support vectors = {alpha_i > 0}, rho = alpha^T K~ alpha. See docs/frank_wolfe.md.

Trace columns, one row per iterate (row 0 is the initial point):
    objective_l2svm_dual  -R/2 with R = alpha^T K~ alpha (equals objective_l2svm at the optimum)
    meb_radius2           r^2 = Delta^2 - R, the objective g the solver maximises
    delta_plus            gamma^2(i*) / r^2 - 1; the solver stops when <= (1 + eps)^2 - 1
    fw_gap                r^2 * delta_plus, the Frank-Wolfe duality gap (full scan) or its sample
    core_size             |A|, the number of active points
    step_type             the step that produced the iterate: -1 initial, 0 toward (FW),
                          1 away, 2 drop (an away step that removed a point), 3 CVM tolerance
                          tightened (epsilon annealing)
    kernel_evals          kernel values computed so far
    cache_hit_rate        fraction of requested kernel values served by the row cache so far
"""

import time
from numbers import Integral, Real
from typing import ClassVar

import numpy as np
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions

from svmlab.numerics import kernel_rows as kr
from svmlab.solvers.frank_wolfe import loops as meb
from svmlab.estimator.certificates import Certificate
from svmlab.estimator.kernels import resolve_gamma
from svmlab.estimator.models import KernelSVMClassifier
from svmlab.estimator.objectives import l2svm_objective, primal_objectives

N_INIT = 20               # points of the random-MEB start (paper section 5.2.2)
INIT_TOL = 1e-13          # SMO tolerance of the start's small QP, relative to Delta^2
FIRST_TRACE_ROWS = 1024


class MEBSVMClassifier(KernelSVMClassifier):
    """Shared machinery of FW, MFW and CVM: start, kernel rows, trace and model recovery.

    A subclass implements `_solve(buf, lru, kx, D, delta2, st, q, R, t0, trace)`, which
    runs its numba loop and returns (buf, q, R, converged, trace array, n_rows).

    Fitted attributes besides KernelSVMClassifier's: support_ (training indices of the support
    vectors, ascending), alpha_ (their weights, summing to 1), n_support_, rho_ (= R),
    radius2_ (r^2 = Delta^2 - R), delta2_ (Delta^2 = max_i K~_ii), delta_plus_ (last measured),
    converged_, n_kernel_evals_, cache_hit_rate_, n_toward_steps_, n_away_steps_, n_drop_steps_.
    """

    _parameter_constraints: ClassVar[dict] = {
        **KernelSVMClassifier._parameter_constraints,
        "C": [Interval(Real, 0.0, None, closed="neither")],
        "eps": [Interval(Real, 0.0, None, closed="neither")],
        "init": [StrOptions({"random_meb", "two_point"})],
        "sampling": [StrOptions({"random", "full"})],
        "sample_size": [Interval(Integral, 1, None, closed="left")],
        "cache_mb": [Interval(Real, 0.0, None, closed="neither")],
        "max_iter": [Interval(Integral, 0, None, closed="left")],
        "random_state": ["random_state"],
    }
    _warm_up: ClassVar[dict] = {"max_iter": 2}

    def __init__(self, C, kernel, gamma, degree, coef0, eps, init, sampling, sample_size,
                 cache_mb, max_iter, random_state):
        self.C = C
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.eps = eps
        self.init = init
        self.sampling = sampling
        self.sample_size = sample_size
        self.cache_mb = cache_mb
        self.max_iter = max_iter
        self.random_state = random_state

    def _fit(self, X, y, trace):
        self._gamma = resolve_gamma(self.gamma, X)
        kx = kr.kernel_data(kr.rows_layout(X), y, self.kernel, self._gamma, self.degree,
                            self.coef0, self.C)
        D = kr.diagonal(kx)
        delta2 = float(D.max())
        buf, lru = kr.new_cache(X.shape[0], self.cache_mb, self._row_width(X.shape[0]))
        st = meb.new_state(X.shape[0])
        meb.seed_rng(check_random_state(self.random_state).randint(np.iinfo(np.int32).max))
        t_base, t0 = trace.elapsed(), time.monotonic_ns()
        if self.init == "random_meb":
            buf, q, R = meb.init_random_meb(buf, lru, kx, D, st, N_INIT, INIT_TOL * delta2)
        else:
            buf, q, R = meb.init_two_points(buf, lru, kx, D, st)
        rows = np.empty((FIRST_TRACE_ROWS, len(meb.TRACE_COLUMNS)))
        buf, q, R, converged, rows, n_rows = self._solve(
            buf, lru, kx, D, delta2, st, q, R, t0, rows)
        with trace.paused():
            self._record(trace, dict(zip(meb.TRACE_COLUMNS, rows[:n_rows].T)), delta2, t_base)
        self._recover(X, y, st, q, R, delta2, converged)

    def _row_width(self, n_points: int) -> int:
        """Columns of a cached row to start with: rows over the core slots grow with the core."""
        return kr.FIRST_WIDTH

    @property
    def _sample_size(self) -> int:
        """Candidates per search: sample_size for random sampling, 0 (all points) for full."""
        return self.sample_size if self.sampling == "random" else 0

    def _record(self, trace, raw: dict, delta2: float, t_base: float) -> None:
        R, requested = raw["R"], raw["kernel_evals"] + raw["kernel_served"]
        step = raw["step_type"].astype(np.int64)
        trace.extend({
            "iteration": raw["iteration"].astype(np.int64),
            "time_s": t_base + raw["time_ns"] * 1e-9,
            "objective_l2svm_dual": -0.5 * R,
            "meb_radius2": delta2 - R,
            "delta_plus": raw["delta_plus"],
            "fw_gap": (delta2 - R) * raw["delta_plus"],
            "core_size": raw["core_size"],
            "step_type": step,
            "kernel_evals": raw["kernel_evals"],
            "cache_hit_rate": np.divide(raw["kernel_served"], requested,
                                        out=np.zeros_like(R), where=requested > 0),
        })
        self.n_kernel_evals_ = int(raw["kernel_evals"][-1])
        self.cache_hit_rate_ = float(trace.columns()["cache_hit_rate"][-1])
        self.delta_plus_ = float(raw["delta_plus"][-1])
        self.n_toward_steps_, self.n_away_steps_, self.n_drop_steps_ = (
            int(np.sum(step == kind)) for kind in (meb.TOWARD, meb.AWAY, meb.DROP))

    def _recover(self, X, y, st, q, R, delta2, converged) -> None:
        """The classifier of eq. 13: coefficients alpha_i y_i, bias sum alpha_i y_i."""
        core, alpha = st[0][:q], st[1][:q]
        keep = alpha > 0
        order = np.argsort(core[keep])
        self.support_ = core[keep][order]
        self.alpha_ = alpha[keep][order]
        self.support_vectors_ = X[self.support_]
        self.dual_coef_ = (self.alpha_ * y[self.support_])[None, :]
        self.intercept_ = np.array([self.dual_coef_[0].sum()])
        self.n_support_ = len(self.support_)
        self.rho_, self.delta2_, self.radius2_ = float(R), delta2, delta2 - float(R)
        self.converged_ = bool(converged)

    def _certificate(self, X, y: np.ndarray) -> Certificate:
        """The L2-SVM primal at the model against the dual value -R/2 of its alpha."""
        squared_l2, _ = self._regularizer_norms()
        primal = l2svm_objective(y * self._decision_function(X), squared_l2, self.intercept_[0],
                                 self.C)
        return Certificate("l2svm", primal, -0.5 * self.rho_, "solver")

    def _objective_values(self, X, y_pm: np.ndarray) -> dict[str, float]:
        """The common objectives plus objective_l2svm, the formulation these solvers minimise."""
        squared_l2, l1 = self._regularizer_norms()
        margins = y_pm * self._decision_function(X)
        return primal_objectives(margins, squared_l2, l1, self.C) | {
            "objective_l2svm": l2svm_objective(margins, squared_l2, self.intercept_[0], self.C)}


class FrankWolfe(MEBSVMClassifier):
    """FW: Frank-Wolfe on the L2-SVM dual (Algorithm 2 of the paper); see the module docstring.

    Parameters: C; kernel, gamma, degree, coef0 (as in LIBSVM); eps, the MEB accuracy (stop when
    delta+ <= (1 + eps)^2 - 1; default 1e-5, the paper's 1e-6); init 'random_meb' (MEB of 20
    class-balanced random points) or 'two_point'; sampling 'full' (the default: every point,
    G = K~ alpha is kept for all points, one kernel row over all points per step;
    deterministic, and the stop certifies g(alpha*) <= (1 + tol) g(alpha)) or 'random' (the
    paper's: sample_size i.i.d. uniform candidates per iteration, 59 in the paper);
    sampling_rounds, the samples in a row without a violator that a sampled stop needs (1 in the
    paper); final_full_check (confirm a sampled stop with a full scan: on by default; off is the
    paper's unconfirmed stop, which certifies nothing);
    cache_mb, the kernel row cache budget; max_iter, the cap on steps; refresh_every, the steps
    between renormalisations of alpha, with G and R recomputed from kernel rows (random) or
    rescaled (full) (0: never); random_state.
    """

    away_steps = False
    _parameter_constraints: ClassVar[dict] = {
        **MEBSVMClassifier._parameter_constraints,
        "sampling_rounds": [Interval(Integral, 1, None, closed="left")],
        "final_full_check": ["boolean"],
        "refresh_every": [Interval(Integral, 0, None, closed="left")],
    }

    def __init__(self, C=1.0, *, kernel="rbf", gamma="scale", degree=3, coef0=0.0, eps=1e-5,
                 init="random_meb", sampling="full", sample_size=59, sampling_rounds=1,
                 final_full_check=True, cache_mb=200.0, max_iter=1_000_000, refresh_every=1000,
                 random_state=None):
        super().__init__(C, kernel, gamma, degree, coef0, eps, init, sampling, sample_size,
                         cache_mb, max_iter, random_state)
        self.sampling_rounds = sampling_rounds
        self.final_full_check = final_full_check
        self.refresh_every = refresh_every

    def _stopping_rule(self) -> str:
        scan = ("a full scan" if self.sampling == "full" else
                f"{self.sampling_rounds} sample(s) of {self.sample_size} points"
                + (" confirmed by a full scan" if self.final_full_check else " (uncertified)"))
        return (f"delta+ <= (1 + eps)^2 - 1 with eps={self.eps} over {scan}, within "
                f"max_iter={self.max_iter} steps")

    def _row_width(self, n_points: int) -> int:
        """A full scan keeps G for every point: its cached rows span all points."""
        return n_points if self.sampling == "full" else kr.FIRST_WIDTH

    def _solve(self, buf, lru, kx, D, delta2, st, q, R, t0, rows):
        tol = (1.0 + self.eps) ** 2 - 1.0
        full = self.sampling == "full"
        Gf = np.empty(len(D) if full else 0)
        if full:
            R = meb.full_gradient(buf, lru, kx, st, q, Gf)
        buf, q, R, _, converged, rows, n_rows, _ = meb.run_frank_wolfe(
            buf, lru, kx, D, delta2, st, q, R, self.away_steps, tol, self._sample_size,
            self.sampling_rounds, self.final_full_check, self.max_iter, self.refresh_every, t0,
            rows, 0, 0, meb.INITIAL, Gf, full)
        return buf, q, R, converged, rows, n_rows


class ModifiedFrankWolfe(FrankWolfe):
    """MFW: Frank-Wolfe with away and drop steps (Algorithm 3 of the paper, with the corrected
    away-step radius update). Same parameters as FrankWolfe."""

    away_steps = True
