"""Frank-Wolfe solvers of the L2-SVM (Frandi, Nanculef, Gasparo, Lodi, Sartori): FW and MFW.

The L2-SVM (bias regularised, margin rho free, squared slacks)

    min  1/2 (||w||^2 + b^2 + C sum_i xi_i^2) - rho   s.t.  y_i (w.phi(x_i) + b) >= rho - xi_i

has the dual  min alpha^T K~ alpha  over the unit simplex, with the modified kernel
K~_ij = y_i y_j (k(x_i, x_j) + 1) + delta_ij / C (`kernel`). For a normalised
kernel (rbf) this is the minimum enclosing ball (MEB) of the points z_i with z_i.z_j = K~_ij.
FW (Algorithm 2) moves towards the point of smallest G_i = (K~ alpha)_i; MFW (Algorithm 3) may
instead move away from the active point of largest G_j, and drops it when its weight reaches 0.
The classifier is recovered exactly: h(x) = sum_i alpha_i y_i k(x_i, x) + b, b = sum_i alpha_i y_i,
support vectors = {alpha_i > 0}, rho = alpha^T K~ alpha. See docs/frank_wolfe.md.

Trace columns, one row per iterate (row 0 is the initial point):
    objective_l2svm_dual  -R/2 with R = alpha^T K~ alpha (equals objective_l2svm at the optimum)
    meb_radius2           r^2 = Delta^2 - R, the objective g the solver maximises
    delta_plus            gamma^2(i*) / r^2 - 1; rule 'meb' stops when <= (1 + eps)^2 - 1
    fw_gap                r^2 * delta_plus, the Frank-Wolfe duality gap (full scan) or its sample
    gap_l2svm             the certified L2-SVM duality gap of the iterate's model (`loops`),
                          at iterations spaced by a factor 1.1, at every full search (CVM) and
                          at the last iterate (NaN elsewhere), for every rule and sampling
    rel_gap_l2svm         gap_l2svm / |primal value|; rule 'gap' stops when <= eps
    core_size             |A|, the number of active points
    step_type             the step that produced the iterate: -1 initial, 0 toward (FW),
                          1 away, 2 drop (an away step that removed a point), 3 CVM tolerance
                          tightened (epsilon annealing)
    kernel_evals          kernel values computed so far
    cache_hit_rate        fraction of requested kernel values served by the row cache so far
    iter_kernel_evals     kernel values computed by this iteration (since the previous row)
    iter_cache_hit_rate   fraction of this iteration's requested kernel values served by the
                          cache (NaN when it requested none)
"""

import time
from numbers import Integral, Real
from typing import ClassVar

import numpy as np
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions

from svmlab.errors import ConfigError
from svmlab.estimator.certificates import Certificate, certify
from svmlab.estimator.formulations import L2SVM, Formulation
from svmlab.estimator.kernels import resolve_gamma
from svmlab.estimator.models import KernelSVMClassifier
from svmlab.estimator.objectives import primal_objectives
from svmlab.numerics.trace_buffer import new_buffer
from svmlab.solvers.frank_wolfe import loops as meb
from svmlab.solvers.frank_wolfe.kernel import diagonal, modified_kernel
from svmlab.solvers.frank_wolfe.row_cache import EVALS, FIRST_WIDTH, SERVED, new_cache

N_INIT = 20  # points of the random-MEB start (paper section 5.2.2)
INIT_TOL = 1e-13  # SMO tolerance of the start's small QP, relative to Delta^2
SLICE_NS = 500_000_000  # a loop returns to Python at least this often (progress, Ctrl-C)
STOP_RULES = ("meb", "gap")


class MEBSVMClassifier(KernelSVMClassifier):
    """Shared machinery of FW, MFW and CVM: start, kernel rows, sliced loop, trace and model.
    A fit may start from another fit's alpha (`fit`'s ``start``, e.g. at a smaller C).

    A subclass provides `_loop` (its numba loop, `loops.run_frank_wolfe` or `loops.run_cvm`),
    `_options()` (its `loops.Options`), `_first_level()` (the tolerance level it starts at) and
    `keeps_gradient` (a full scan keeps G = K~ alpha for every point, FW/MFW, also after a
    refuted final_full_check, or searches every point anew, CVM).

    Fitted attributes besides KernelSVMClassifier's: support_ (training indices of the support
    vectors, ascending), alpha_ (their weights, summing to 1), n_support_, rho_ (= R),
    radius2_ (r^2 = Delta^2 - R), delta2_ (Delta^2 = max_i K~_ii), delta_plus_ (last measured),
    converged_, n_kernel_evals_, cache_hit_rate_, n_toward_steps_, n_away_steps_, n_drop_steps_.
    """

    _parameter_constraints: ClassVar[dict] = {
        **KernelSVMClassifier._parameter_constraints,
        "C": [Interval(Real, 0.0, None, closed="neither")],
        "stop": [StrOptions(set(STOP_RULES))],
        "eps": [Interval(Real, 0.0, None, closed="neither")],
        "init": [StrOptions({"random_meb", "two_point"})],
        "sampling": [StrOptions({"random", "full"})],
        "sample_size": [Interval(Integral, 1, None, closed="left")],
        "cache_mb": [Interval(Real, 0.0, None, closed="neither")],
        "max_iter": [Interval(Integral, 0, None, closed="left")],
        "random_state": ["random_state"],
    }
    _warm_up: ClassVar[dict] = {"max_iter": 2}
    warm_startable = True
    keeps_gradient = True
    max_time_s = None  # a cap on the solver's seconds (FW, MFW), seen when a slice returns

    def __init__(
        self,
        C,
        kernel,
        gamma,
        degree,
        coef0,
        stop,
        eps,
        init,
        sampling,
        sample_size,
        cache_mb,
        max_iter,
        random_state,
    ):
        self.C = C
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.stop = stop
        self.eps = eps
        self.init = init
        self.sampling = sampling
        self.sample_size = sample_size
        self.cache_mb = cache_mb
        self.max_iter = max_iter
        self.random_state = random_state

    def _fit(self, X, y, trace):
        self._gamma = resolve_gamma(self.gamma, X, self.kernel)
        mk = modified_kernel(X, y, self.kernel, self._gamma, self.degree, self.coef0, self.C)
        D = diagonal(mk)
        delta2 = float(D.max())
        opt = self._options()
        keep = opt.full and self.keeps_gradient
        cache = new_cache(X.shape[0], self.cache_mb, X.shape[0] if keep else FIRST_WIDTH)
        sl = meb.new_slots(X.shape[0])
        meb.seed_rng(check_random_state(self.random_state).randint(np.iinfo(np.int32).max))
        if self._start is not None:
            cache, q, R = meb.init_from(cache, mk, sl, *self._start_point(X.shape[0]))
        elif self.init == "random_meb":
            cache, q, R = meb.init_random_meb(cache, mk, D, sl, N_INIT, INIT_TOL * delta2)
        else:
            cache, q, R = meb.init_two_points(cache, mk, D, sl)
        if keep:
            R = meb.full_gradient(cache, mk, sl, q)
        progress = meb.new_progress(q, R, self._first_level(), np.argmin(sl.Gf) if keep else -1)
        buffer = new_buffer(2 + len(meb.TRACE_COLUMNS), trace.clock.state)
        while progress.counts[meb.STATUS] == meb.RUNNING:
            buffer.meta[1] = time.monotonic_ns() + SLICE_NS
            cache = self._loop(cache, mk, D, delta2, sl, opt, progress, buffer)
            trace.drain(buffer, meb.TRACE_COLUMNS)
            if self.max_time_s is not None and trace.elapsed() >= self.max_time_s:
                break  # the status stays RUNNING: the time cap ended the fit
        with trace.paused():
            self._summarise(trace, cache.stats)
        self._recover(X, y, sl, progress, delta2)

    def _start_point(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """The support and alpha of the fit to start from (`fit`'s ``start``): a point of the
        simplex, feasible whatever C is, since C enters K~ only."""
        support, alpha = self._start.support_, self._start.alpha_
        if support.size == 0 or support[-1] >= n:
            raise ValueError(
                f"start was fitted on other rows: its support vectors index up to "
                f"{support[-1] if support.size else 'none'}, this fit has {n} rows"
            )
        return support.astype(np.int64), alpha / alpha.sum()

    @property
    def _sample_size(self) -> int:
        """Candidates per search: sample_size for random sampling, 0 (all points) for full."""
        return self.sample_size if self.sampling == "random" else 0

    def _first_level(self) -> float:
        return self.eps

    def _rule(self) -> str:
        """The stopping rule's test, in words."""
        if self.stop == "gap":
            return f"certified relative L2-SVM duality gap <= eps={self.eps}"
        return f"delta+ <= (1 + eps)^2 - 1 with eps={self.eps}"

    def _summarise(self, trace, stats: np.ndarray) -> None:
        """Counts of the fit, from the cache's statistics and the trace."""
        columns = trace.columns()
        step = columns["step_type"]
        requested = stats[EVALS] + stats[SERVED]
        self.n_kernel_evals_ = int(stats[EVALS])
        self.cache_hit_rate_ = float(stats[SERVED] / requested) if requested else 0.0
        self.delta_plus_ = float(columns["delta_plus"][-1])
        self.n_toward_steps_, self.n_away_steps_, self.n_drop_steps_ = (
            int(np.sum(step == kind)) for kind in (meb.TOWARD, meb.AWAY, meb.DROP)
        )

    def _recover(self, X, y, sl, progress, delta2) -> None:
        """The classifier of eq. 13: coefficients alpha_i y_i, bias sum alpha_i y_i."""
        q, R = progress.counts[meb.Q], float(progress.values[meb.RADIUS])
        core, alpha = sl.core[:q], sl.alpha[:q]
        keep = alpha > 0
        order = np.argsort(core[keep])
        self.support_ = core[keep][order]
        self.alpha_ = alpha[keep][order]
        self.support_vectors_ = X[self.support_]
        self.dual_coef_ = (self.alpha_ * y[self.support_])[None, :]
        self.intercept_ = np.array([self.dual_coef_[0].sum()])
        self.n_support_ = len(self.support_)
        self.rho_, self.delta2_, self.radius2_ = R, delta2, delta2 - R
        status = progress.counts[meb.STATUS]
        self.converged_ = bool(status == meb.CONVERGED)
        self.stop_reason_ = (
            f"max_iter={self.max_iter} steps"
            if status == meb.MAX_STEPS
            else f"max_time_s={self.max_time_s} s"
            if status == meb.RUNNING
            else f"the finest ball level {meb.MIN_LEVEL:g} without a certified gap "
            f"<= eps={self.eps}"
            if status == meb.LEVEL_FLOOR
            else None
        )

    def _formulation(self) -> Formulation:
        return L2SVM

    @property
    def _l2svm_C(self) -> float:
        """The C of `formulations.L2SVM`: the slack term here is C/2 sum xi^2."""
        return 0.5 * self.C

    def _certificate(self, X, y: np.ndarray) -> Certificate:
        """The L2-SVM primal at the model against the dual bound of the solver's alpha,
        -alpha^T K~ alpha / 2 (the loop's -R/2, up to rounding): the certificate the gap rule
        stops at."""
        squared_l2, l1 = self._regularizer_norms()
        alpha = np.zeros(len(y))
        alpha[self.support_] = self.alpha_
        regulariser = L2SVM.regulariser(squared_l2, l1, float(self.intercept_[0]))
        return certify(
            L2SVM,
            self._l2svm_C,
            y * self._decision_of(X),
            regulariser,
            self._dual_image(X, y),
            (alpha,),
            own_point=False,
        )

    def _objective_values(self, X, y_pm: np.ndarray) -> dict[str, float]:
        """The common objectives plus the L2-SVM's, the formulation these solvers minimise."""
        squared_l2, l1 = self._regularizer_norms()
        margins = y_pm * self._decision_of(X)
        regulariser = L2SVM.regulariser(squared_l2, l1, float(self.intercept_[0]))
        return primal_objectives(margins, squared_l2, l1, self.C) | {
            L2SVM.metric("objective"): L2SVM.primal(margins, regulariser, self._l2svm_C)
        }


class FrankWolfe(MEBSVMClassifier):
    """FW: Frank-Wolfe on the L2-SVM dual (Algorithm 2 of the paper); see the module docstring.

    Parameters: C; kernel, gamma, degree, coef0 (as in LIBSVM); stop and eps, the stopping rule
    and its tolerance: 'gap' (the default: the certified relative L2-SVM duality gap <= eps,
    default 1e-2, which means the same for every kernel and C; `loops`) or 'meb' (the paper's:
    delta+ <= (1 + eps)^2 - 1, a ball accuracy, 1e-6 in the paper, which on unscaled data with
    a linear kernel can stop at a gap of several times the objective); init 'random_meb' (MEB of 20
    class-balanced random points) or 'two_point'; sampling 'full' (the default: every point,
    G = K~ alpha is kept for all points, one kernel row over all points per step;
    deterministic, and every stop is certified) or 'random' (the paper's: sample_size i.i.d.
    uniform candidates per iteration, 59 in the paper); sampling_rounds, the samples in a row
    without a violator that a sampled stop needs (1 in the paper); final_full_check (confirm a
    sampled stop with a full scan, G = K~ alpha over every point, which is then kept as under
    sampling='full' if the scan finds a violator: on by default; off is the paper's unconfirmed
    stop, which certifies nothing; stop='gap' needs sampling='full'); cache_mb, the kernel row cache
    budget; max_iter, the cap on steps; max_time_s, the cap on solver seconds (None: none; seen
    when the loop returns to Python, at least every half second); refresh_every, the steps
    between renormalisations of alpha, with G and R recomputed from kernel rows (random) or
    rescaled (full) (0: never); random_state.
    """

    name = "fw"
    test_config = ({"random_state": 0}, {"kernel": "linear", "max_iter": 500})
    gap_tol = "eps"

    away_steps = False
    _parameter_constraints: ClassVar[dict] = {
        **MEBSVMClassifier._parameter_constraints,
        "sampling_rounds": [Interval(Integral, 1, None, closed="left")],
        "final_full_check": ["boolean"],
        "refresh_every": [Interval(Integral, 0, None, closed="left")],
        "max_time_s": [Interval(Real, 0.0, None, closed="neither"), None],
    }

    def __init__(
        self,
        C=1.0,
        *,
        kernel="rbf",
        gamma="scale",
        degree=3,
        coef0=0.0,
        stop="gap",
        eps=1e-2,
        init="random_meb",
        sampling="full",
        sample_size=59,
        sampling_rounds=1,
        final_full_check=True,
        cache_mb=200.0,
        max_iter=1_000_000,
        max_time_s=None,
        refresh_every=1000,
        random_state=None,
    ):
        super().__init__(
            C,
            kernel,
            gamma,
            degree,
            coef0,
            stop,
            eps,
            init,
            sampling,
            sample_size,
            cache_mb,
            max_iter,
            random_state,
        )
        self.sampling_rounds = sampling_rounds
        self.final_full_check = final_full_check
        self.max_time_s = max_time_s
        self.refresh_every = refresh_every

    _loop = staticmethod(meb.run_frank_wolfe)

    def _validate_params(self) -> None:
        super()._validate_params()
        if self.stop == "gap" and self.sampling != "full":
            raise ConfigError(
                "stop='gap' needs G over every point, which sampling='random' "
                "does not compute: use sampling='full', or stop='meb'"
            )

    def _options(self) -> meb.Options:
        return meb.Options(
            self.away_steps,
            self.stop == "gap",
            float(self.eps),
            self._sample_size,
            self.sampling_rounds,
            self.final_full_check,
            self.max_iter,
            self.refresh_every,
            self.sampling == "full",
        )

    def _stopping_rule(self) -> str:
        scan = (
            "a full scan"
            if self.sampling == "full"
            else f"{self.sampling_rounds} sample(s) of {self.sample_size} points"
            + (
                " confirmed by a full scan (then G kept for every point)"
                if self.final_full_check
                else " (uncertified)"
            )
        )
        limit = "" if self.max_time_s is None else f" and max_time_s={self.max_time_s} s"
        return f"{self._rule()} over {scan}, within max_iter={self.max_iter} steps{limit}"


class ModifiedFrankWolfe(FrankWolfe):
    """MFW: Frank-Wolfe with away and drop steps (Algorithm 3 of the paper, with the corrected
    away-step radius update). Same parameters as FrankWolfe."""

    name = "mfw"
    test_config = ({"random_state": 0},)
    gap_tol = "eps"

    away_steps = True
