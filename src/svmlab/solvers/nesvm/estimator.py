r"""NESVM (Zhou, Tao and Wu, ICDM 2010): Nesterov's optimal method on smoothed SVM objectives.

Implements spec 000 (`nesvm_problem` holds the objectives): C-SVM, LP-SVM and LS-SVM, linear
(dense or CSR, never densified) or kernel (representer form f(x) = sum_j alpha_j k(x, x_j) + b),
with the corrected Lipschitz constants, the paper's stopping rule and alternatives, and the
corrected homotopy (continuation in mu) of Algorithm 2.

One iteration (spec §2.6, Nesterov 2005 scheme 3.11), with g^k = grad F_mu(w^k):

    y^k     = w^k - g^k / L
    z^k     = w* - (1/L) sum_{i<=k} (i+1)/2 g^i             (w* = w^0, the prox-centre)
    w^{k+1} = 2/(k+3) z^k + (k+1)/(k+3) y^k
"""

import math
from dataclasses import dataclass
from numbers import Integral, Real
from typing import ClassVar

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from svmlab.errors import ConfigError
from svmlab.estimator.certificates import (
    Certificate,
    KernelImage,
    LinearImage,
    relative_gap,
)
from svmlab.estimator.formulations import (
    L1,
    L2,
    Formulation,
    FreeBias,
    Hinge,
    NoBias,
    SmoothedHinge,
    Squared,
)
from svmlab.estimator.kernels import Kernel, resolve_gamma
from svmlab.estimator.models import KernelSVMClassifier
from svmlab.estimator.objectives import least_squares_objectives
from svmlab.estimator.trace import RowBuffer
from svmlab.solvers.nesvm.problem import (
    LIPSCHITZ_MODES,
    MODELS,
    Evaluation,
    SmoothedSVM,
)

STOP_RULES = ("gap", "paper", "rel", "grad")
GAP_CHECK_GROWTH = 1.1  # stop='gap': iterations between certificates grow by this factor
ITERATES = ("w", "y", "best")
SCHEDULES = ("off", "harmonic", "geometric")
STEPS = ("adaptive", "fixed")
LOCAL_L_FIRST = 1 / 16  # step='adaptive': the first stage starts at L / 16 (L: the global bound)
LOCAL_L_NEXT = 0.5  # and each next one at half the last stage's L, times mu_previous / mu
GIB = 2**30


@dataclass
class GapState:
    """stop='gap': the next iteration to certify, and the last certified relative gap."""

    next_check: int = 1
    checked_at: int = -1
    rel_gap: float = math.inf


def should_stop(rule: str, eps: float, ev: Evaluation, previous: float) -> bool:
    """paper: |F_mu(w^k) - F_mu(w^{k-1})| < eps; rel: <= eps max(1, |F_mu|); grad: 1/2||g||^2 <= eps."""
    if rule == "grad":
        return 0.5 * float(ev.grad @ ev.grad) <= eps
    change = abs(ev.smoothed - previous)
    return change < eps if rule == "paper" else change <= eps * max(1.0, abs(ev.smoothed))


@dataclass
class LocalStep:
    """The adaptive step of `nesterov` (not in the paper): the constant L in use, at most the
    global bound, updated in place so that the next homotopy stage can start from it."""

    L: float


def nesterov(
    evaluate,
    theta0: np.ndarray,
    L: float,
    eps: float,
    stop="paper",
    max_iter: int = 100_000,
    return_iterate: str = "w",
    on_iterate=None,
    local: LocalStep | None = None,
):
    """Minimise F_mu from theta0 = w* (the prox-centre) with step 1/L.

    `evaluate(theta)` returns an Evaluation; `on_iterate(k, theta, ev)` sees every evaluated
    iterate w^k, k = 0, 1, ..., after its stopping test. `stop` is a rule of `should_stop` or a
    test `stop(k, theta, ev, previous)`; it runs from k = 1 on, so there is at least one
    update. `local` (not in the paper): step 1/local.L with local.L < L, and, once the
    gradient's change between w^{k-1} and w^k shows a curvature above local.L, local.L set to
    twice that curvature (at most L) and the scheme restarted at w^k (prox-centre w* = w^k,
    weights from i = 0): with few samples in the quadratic zone, F_mu is far flatter than its
    global bound L says. Returns (theta, k, converged): the chosen iterate ('w': w^k, 'y':
    y^k = w^k - g^k/L, 'best': the evaluated w^j of least F_mu), the number of updates k and
    whether the rule held before max_iter updates.
    """
    theta, wstar, G = theta0.copy(), theta0.copy(), np.zeros_like(theta0)
    best, best_value, previous = theta, math.inf, math.nan
    theta_previous, grad_previous = theta, G  # the last iterate and gradient, set at k = 0
    step = L if local is None else min(local.L, L)
    i = 0  # the scheme's own index: 0 at the start and at each restart
    for k in range(max_iter + 1):
        ev = evaluate(theta)
        converged = k >= 1 and (
            stop(k, theta, ev, previous) if callable(stop) else should_stop(stop, eps, ev, previous)
        )
        if on_iterate is not None:
            on_iterate(k, theta, ev)
        if ev.smoothed < best_value:
            best, best_value = theta, ev.smoothed
        if converged or k == max_iter:
            break
        if step < L and k >= 1:
            moved = float(np.linalg.norm(theta - theta_previous))
            curvature = float(np.linalg.norm(ev.grad - grad_previous)) / moved if moved else 0.0
            if curvature > step:
                step = local.L = min(L, 2.0 * curvature)
                wstar, G, i = theta.copy(), np.zeros_like(theta0), 0
        previous, theta_previous, grad_previous = ev.smoothed, theta, ev.grad
        y = theta - ev.grad / step
        G += 0.5 * (i + 1) * ev.grad
        theta = (2.0 / (i + 3)) * (wstar - G / step) + ((i + 1) / (i + 3)) * y
        i += 1
    chosen = {"w": theta, "y": theta - ev.grad / step, "best": best}[return_iterate]
    return chosen, k, converged


def schedule(start: float, target: float, kind: str, rho: float) -> list[float]:
    """Smoothing values of a homotopy: harmonic max(start/(t+1), target) (Eq.44, corrected to end
    at target) or geometric max(start rho^t, target); 'off' is [start]."""
    if kind == "off":
        return [start]
    values, t = [], 0
    while not values or values[-1] > target:
        value = start / (t + 1) if kind == "harmonic" else start * rho**t
        values.append(max(value, target))
        t += 1
    return values


class NESVM(KernelSVMClassifier):
    """NESVM: C-SVM, LP-SVM or LS-SVM by Nesterov's method on the smoothed primal.

    Parameters (spec 000): model ('csvm', 'lpsvm', 'lssvm'); C (multiplies a sum over samples);
    mu (hinge smoothing; LP-SVM: l1 smoothing) and nu (LP-SVM hinge smoothing); eps and stop
    ('gap', the default: the certified relative duality gap of the unsmoothed problem <= eps;
    'paper': |dF_mu| < eps, 'rel': |dF_mu| <= eps max(1, |F_mu|), 'grad': 1/2||grad||^2 <= eps,
    C-SVM/LS-SVM, linear, without bias). The defaults (stop='gap', eps=1e-2, geometric homotopy
    from mu=5 to 0.01) certify a 1 % gap; the paper's settings (stop='paper', eps=1e-3,
    homotopy='off', conf/solver/nesvm_paper.yaml) stop on a change of F_mu, which on badly
    scaled data happens after one update far from the optimum; fit_intercept (unregularised
    bias b, augmented rows);
    lipschitz ('auto' = 'tight': lambda_max of the loss's Hessian bound, by Lanczos or a small
    dense eigenproblem; 'paper', the paper's Eq.21 as in nesvm_paper.yaml, 'trace'; LS-SVM
    refuses 'paper': Eq.56 is not a Lipschitz constant); return_iterate
    ('w', 'y', 'best'); max_iter (updates per NESVM run); homotopy ('off', 'harmonic',
    'geometric'), mu_target, nu_target, rho (geometric ratio), inner_eps ('fixed': eps at every
    stage; 'scaled': eps mu_t/mu_target before the last stage); step ('adaptive', the default,
    not in the paper: start each stage with a fraction of L and double the local estimate, with a
    restart, when the gradient shows more curvature; 'fixed': the paper's step 1/L throughout,
    as in nesvm_paper.yaml); kernel, gamma, degree, coef0; max_kernel_gib (refuse an n x n
    kernel matrix above this size).

    Fitted: with kernel='linear', the model is the one-vector expansion f(x) = 1 * (w . x) + b
    (support_vectors_ = [w], dual_coef_ = [[1]]), so coef_ = w; with other kernels
    support_vectors_ are the training rows with alpha_j != 0 and dual_coef_ their alpha_j.
    converged_ (stop='gap': the certified gap held; never for the rules on F_mu, which certify
    nothing of the problem), stop_reason_ (the rule that ended the fit), lipschitz_ (the global
    bound L of the last stage), mu_stages_.
    The trace has per iteration the smoothed objective, the true objective (named by
    formulation), grad_norm, mu (and nu), and for linear C-SVM without bias dual_gap =
    F(w) - D(t C u(w)) (best t in [0, 1]), an upper bound on F(w) - F*.
    """

    name = "nesvm"
    # scikit-learn's checks fit ill-conditioned data (features near 100, random labels, no
    # intercept) on which the accelerated gradient needs ~1e5 iterations: a cap keeps them fast
    test_config = (
        {"max_iter": 2000},
        {"model": "lpsvm", "fit_intercept": True, "max_iter": 2000},
        {"model": "lssvm"},
        {"kernel": "rbf", "fit_intercept": True},
    )
    gap_tol = "eps"

    _parameter_constraints: ClassVar[dict] = {
        **KernelSVMClassifier._parameter_constraints,
        "C": [Interval(Real, 0.0, None, closed="left")],
        "model": [StrOptions(set(MODELS))],
        "mu": [Interval(Real, 0.0, None, closed="neither")],
        "nu": [Interval(Real, 0.0, None, closed="neither")],
        "eps": [Interval(Real, 0.0, None, closed="neither")],
        "fit_intercept": ["boolean"],
        "lipschitz": [StrOptions({"auto", *LIPSCHITZ_MODES})],
        "stop": [StrOptions(set(STOP_RULES))],
        "return_iterate": [StrOptions(set(ITERATES))],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "homotopy": [StrOptions(set(SCHEDULES))],
        "mu_target": [Interval(Real, 0.0, None, closed="neither")],
        "nu_target": [Interval(Real, 0.0, None, closed="neither")],
        "rho": [Interval(Real, 0.0, 1.0, closed="neither")],
        "inner_eps": [StrOptions({"fixed", "scaled"})],
        "step": [StrOptions(set(STEPS))],
        "max_kernel_gib": [Interval(Real, 0.0, None, closed="neither")],
    }
    _warm_up: ClassVar[dict] = {"max_iter": 2}

    def __init__(
        self,
        C=1.0,
        *,
        model="csvm",
        mu=5.0,
        nu=5.0,
        eps=1e-2,
        fit_intercept=False,
        lipschitz="auto",
        stop="gap",
        return_iterate="w",
        max_iter=100_000,
        homotopy="geometric",
        mu_target=0.01,
        nu_target=0.01,
        rho=0.5,
        inner_eps="fixed",
        step="adaptive",
        kernel="linear",
        gamma="scale",
        degree=3,
        coef0=0.0,
        max_kernel_gib=4.0,
    ):
        self.C = C
        self.model = model
        self.mu = mu
        self.nu = nu
        self.eps = eps
        self.fit_intercept = fit_intercept
        self.lipschitz = lipschitz
        self.stop = stop
        self.return_iterate = return_iterate
        self.max_iter = max_iter
        self.homotopy = homotopy
        self.mu_target = mu_target
        self.nu_target = nu_target
        self.rho = rho
        self.inner_eps = inner_eps
        self.step = step
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.max_kernel_gib = max_kernel_gib

    def _validate_params(self) -> None:
        """scikit-learn's check of each parameter, then of the combinations spec 000 excludes."""
        super()._validate_params()
        linear = self.kernel == "linear"
        if self.model == "lssvm" and self.lipschitz == "paper":
            raise ConfigError(
                "lipschitz='paper' is invalid for model='lssvm': Eq.56 "
                "(1 + 2C max_i ||X_i||^2) underestimates the Lipschitz constant and "
                "the iteration diverges; use 'trace', 'tight' or 'auto'"
            )
        if self.stop == "grad" and (self.model == "lpsvm" or self.fit_intercept or not linear):
            raise ConfigError(
                "stop='grad' certifies F_mu - F_mu* only for a 1-strongly convex "
                "F_mu: model='csvm' or 'lssvm' with kernel='linear' and "
                "fit_intercept=false; use stop='paper' or 'rel'"
            )
        if self.stop == "gap" and self.return_iterate != "w":
            raise ConfigError(
                "stop='gap' certifies the iterate w^k, so it returns w^k: use "
                f"return_iterate='w' (got {self.return_iterate!r})"
            )
        if self.model == "lpsvm" and not linear:
            raise ConfigError(
                "model='lpsvm' (l1-norm SVM) supports kernel='linear' only; "
                f"got kernel={self.kernel!r}"
            )

    def lipschitz_mode(self) -> str:
        """The Lipschitz mode used: 'auto' is 'tight' (the paper's constant is 2-17x larger on
        a9a and ijcnn1, and the step 1/L that much shorter)."""
        return "tight" if self.lipschitz == "auto" else self.lipschitz

    def _fit(self, X, y, trace):
        linear = self.kernel == "linear"
        self._gamma = resolve_gamma(self.gamma, X, self.kernel)
        data = X if linear else self._kernel_matrix(X)
        problem = SmoothedSVM(
            data, y, self.C, self.model, self.mu, self.nu, self.fit_intercept, kernel=not linear
        )
        with trace.buffered() as rows:
            theta = self._homotopy(problem, rows, X, y)
        w, b = problem.split(theta)
        self.intercept_ = np.array([b])
        if linear:
            self.support_vectors_, self.dual_coef_ = w[None, :].copy(), np.ones((1, 1))
        else:
            self.support_ = np.flatnonzero(w)
            self.support_vectors_ = X[self.support_]
            self.dual_coef_ = w[self.support_][None, :]
            self.n_support_ = len(self.support_)

    def _kernel_matrix(self, X) -> np.ndarray:
        """K(X, X), after checking that it fits in max_kernel_gib."""
        n = X.shape[0]
        size = 8 * n * n / GIB
        if size > self.max_kernel_gib:
            raise ConfigError(
                f"NESVM with kernel={self.kernel!r} needs the {n} x {n} kernel matrix "
                f"({size:.3g} GiB of float64), above max_kernel_gib={self.max_kernel_gib}; "
                "raise solver.max_kernel_gib if the memory exists, train on fewer samples, "
                "or use kernel=linear"
            )
        return Kernel(self.kernel, self._gamma, self.degree, self.coef0).matrix(X, X)

    def _homotopy(self, problem: SmoothedSVM, rows: RowBuffer, X, y) -> np.ndarray:
        """Corrected Algorithm 2 (spec §3): stages at decreasing mu (and nu), each warm-started
        with prox-centre w* = its start, L recomputed from the mu-free parts; 'off' = one stage,
        and so is LS-SVM's, which has nothing smoothed.

        stop='gap' ends the fit at the first certified iterate (see `_gap_test`); a stage before
        the last ends once its iterate is certified to within its own smoothing error."""
        mode = self.lipschitz_mode()
        reg, loss = problem.lipschitz_parts(mode)
        homotopy = "off" if self.model == "lssvm" else self.homotopy
        mus = schedule(self.mu, self.mu_target, homotopy, self.rho)
        nus = schedule(self.nu, self.nu_target, homotopy, self.rho)
        stages = max(len(mus), len(nus)) if self.model == "lpsvm" else len(mus)
        mus += [mus[-1]] * (stages - len(mus))
        nus += [nus[-1]] * (stages - len(nus))
        theta, done, self.converged_ = np.zeros(problem.dim), 0, True
        gap = GapState()
        problem.mu, problem.nu = mus[0], nus[0]
        local = (
            LocalStep(problem.combine_lipschitz(reg, loss) * LOCAL_L_FIRST)
            if (self.step == "adaptive")
            else None
        )
        image = LinearImage(X, y, np.zeros(X.shape[1])) if self.kernel == "linear" else None

        for stage in range(stages):
            problem.mu, problem.nu = mus[stage], nus[stage]
            L = problem.combine_lipschitz(reg, loss)
            last = stage == stages - 1
            eps = (
                self.eps
                if last or self.inner_eps == "fixed"
                else (self.eps * problem.mu / self.mu_target)
            )
            record = self._recorder(problem, rows, done, gap)
            stop = self.stop
            if stop == "gap":
                gap.checked_at = -1
                stop = self._gap_test(X, y, problem, image, last, done, gap)
            if local is not None and stage > 0:
                local.L *= mus[stage - 1] / problem.mu * LOCAL_L_NEXT
            theta, k, converged = nesterov(
                problem.evaluate,
                theta,
                L,
                eps,
                stop,
                self.max_iter,
                self.return_iterate,
                record,
                local,
            )
            done += k + 1
            if self.stop == "gap":
                self.converged_ = gap.rel_gap <= self.eps
                if self.converged_:
                    break
            else:
                self.converged_ &= converged
        if self.stop == "gap" and not self.converged_:  # the quick certificates are looser
            self.converged_ = (
                self._iterate_certificate(X, y, problem, theta, image, refine=True).rel_gap
                <= self.eps
            )
        if self.stop != "gap":  # a rule on F_mu held (or not): no gap of the problem was asked
            self.stop_reason_ = (
                f"the stop={self.stop!r} rule on F_mu"
                if self.converged_
                else f"max_iter={self.max_iter} updates"
            )
            self.converged_ = False
        else:
            self.stop_reason_ = (
                "certified gap <= eps" if self.converged_ else f"max_iter={self.max_iter} updates"
            )
        self.lipschitz_, self.mu_stages_ = L, mus
        w, b = problem.split(theta)
        self._last_duals = self._smoothed_duals(problem, y * (problem.X @ w + b))
        return theta

    def _gap_test(self, X, y, problem: SmoothedSVM, image, last: bool, offset: int, gap: GapState):
        """The stopping test of stop='gap': the certified relative gap of the true problem at the
        iterate is <= eps (the fit ends), or, in a stage before the last, the certified gap is at
        most the stage's smoothing error F(w) - F_mu(w) at the iterate: the stage is solved as
        far as its mu allows (at the smoothed optimum the smoothed dual point certifies exactly
        that much, since F_mu <= F and D_mu <= D), so the homotopy moves on with an accuracy
        proportional to mu. The test is on the solver's clock (it is part of the solver).
        Linear C-SVM without bias: at every iteration, with the oracle's own dual_gap (the
        smoothed dual point, from the sums of the pass that computed the gradient: free).
        Otherwise at iterations 1, 2, 3, ... of the fit, spaced by a factor GAP_CHECK_GROWTH,
        with the quick certificates (`certificates.certify` with refine=False): the smoothed
        problem's dual point is among their candidates, and it is tight as mu gets small; the
        free-set refinement would cost a bounded least-squares fit each time, so it is tried
        once, on the last iterate, when the quick ones never met eps."""

        def test(k, theta, ev, previous):
            if ev.dual_gap is not None:  # the oracle's own bound: free at every iteration
                gap.checked_at, gap.rel_gap = k, relative_gap(ev.true, ev.true - ev.dual_gap)
                return gap.rel_gap <= self.eps or (
                    not last and ev.dual_gap <= ev.true - ev.smoothed
                )
            if offset + k < gap.next_check:
                return False
            gap.next_check = max(offset + k + 1, int((offset + k) * GAP_CHECK_GROWTH))
            cert = self._iterate_certificate(X, y, problem, theta, image)
            gap.checked_at, gap.rel_gap = k, cert.rel_gap
            return cert.rel_gap <= self.eps or (not last and cert.gap <= ev.true - ev.smoothed)

        return test

    def _iterate_certificate(
        self, X, y, problem: SmoothedSVM, theta, image, refine: bool = False
    ) -> Certificate:
        """The certificate of the iterate theta for the true (unsmoothed) problem, with the
        smoothed problem's dual point a_i = -C l_mu'(m_i) among the candidates: quick, or with
        the free-set refinement (refine). ``image``: the fit's LinearImage (linear models; its
        transposed copy of X is built once per fit), None for kernels."""
        w, b = problem.split(theta)
        scores = problem.X @ w  # problem.X: the rows (linear) or the kernel matrix
        if self.kernel == "linear":
            image, squared, l1 = image.with_weights(w), float(w @ w), float(np.abs(w).sum())
        else:
            image, squared, l1 = KernelImage(X, y, self._kernel(), X, w, b), float(w @ scores), None
        margins = y * (scores + b)
        return self._certify(
            X,
            y,
            margins,
            squared,
            l1,
            b,
            image,
            self._smoothed_duals(problem, margins),
            refine=refine,
        )

    def _smoothed_duals(self, problem: SmoothedSVM, margins: np.ndarray) -> tuple:
        """The smoothed problem's dual point a_i = C clip((1 - m_i) / width_i, 0, 1) (none for
        the LS-SVM, which is not smoothed)."""
        if self.model == "lssvm":
            return ()
        return (SmoothedHinge(problem.hinge_width()).dual_candidate(margins, self.C),)

    def _solver_duals(self, y: np.ndarray) -> tuple:
        """The final certificate tries the smoothed dual point of the last stage too, as the
        stopping test did."""
        return self._last_duals

    def _recorder(self, problem: SmoothedSVM, rows: RowBuffer, offset: int, gap: GapState):
        """The `nesterov` hook of one stage that records each iterate's row in the fit's buffer
        (its values off the clock); iteration numbers continue across homotopy stages."""
        form = self._formulation()
        smoothing = {} if self.model == "lssvm" else {"mu": problem.mu}
        if self.model == "lpsvm":
            smoothing["nu"] = problem.nu

        def record(k, theta, ev):
            with rows.paused():
                row = {
                    form.metric("objective"): ev.true,
                    "grad_norm": float(np.linalg.norm(ev.grad)),
                    **smoothing,
                }
                if self.model != "lssvm":
                    row["objective_smoothed"] = ev.smoothed
                if ev.dual_gap is not None:
                    row["dual_gap"] = ev.dual_gap
                if self.stop == "gap":  # NaN where the iterate was not certified
                    row[form.metric("rel_gap")] = gap.rel_gap if gap.checked_at == k else math.nan
                rows.append(offset + k, **row)

        return record

    def _formulation(self) -> Formulation:
        return Formulation(
            Squared() if self.model == "lssvm" else Hinge(),
            L1() if self.model == "lpsvm" else L2(),
            FreeBias() if self.fit_intercept else NoBias(),
        )

    def _certificate_tol(self) -> float:
        return self.eps if self.stop == "gap" else super()._certificate_tol()

    def _stopping_rule(self) -> str:
        if self.stop == "gap":
            return (
                f"certified relative duality gap of the {self._formulation().name} problem "
                f"<= eps={self.eps} at an iterate, within max_iter={self.max_iter} updates "
                "per smoothing stage"
            )
        rule = {
            "paper": "|F_mu(w^k) - F_mu(w^k-1)| < eps",
            "rel": "|F_mu(w^k) - F_mu(w^k-1)| <= eps max(1, |F_mu|)",
            "grad": "1/2 ||grad F_mu||^2 <= eps",
        }[self.stop]
        stages = "" if self.homotopy == "off" else " at every homotopy stage"
        return (
            f"a certified gap, which stop={self.stop!r} does not ask for (converged_ is "
            f"False); the fit ends when {rule}{stages} with eps={self.eps}, within "
            f"max_iter={self.max_iter} updates"
        )

    def _objective_values(self, X, y_pm):
        values = super()._objective_values(X, y_pm)
        if self.model == "lssvm":
            squared_l2, _ = self._regularizer_norms()
            values |= least_squares_objectives(
                y_pm * self._decision_function(X), squared_l2, self.C
            )
        return values
