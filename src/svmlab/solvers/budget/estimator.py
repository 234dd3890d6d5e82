r"""Budgeted kernel SVMs (Qaadan, Schueler, Glasmachers): BSCA and the BSGD baseline.

Both solve the hinge-loss C-SVM without bias, min 1/2 ||w||^2 + C sum_i max(0, 1 - y_i f(x_i))
(objective_hinge_l2), with a model of at most ``budget`` kernel terms, and run a fixed number of
epochs (spec 004, 4.6: under a budget the KKT violations do not vanish, so no tolerance can
stop them). See `loops` for the steps and `model` for the budget maintenance.

``bias=True`` adds a free offset b, f(x) = sum_j beta_j k(x, z_j) + b: after every epoch b is
set to the minimiser of the training hinge loss of the model (exact, `best_offset`), and the
next epoch's steps use f + b. Merges leave b alone, so the constant part of f no longer drifts
with them (with a wide kernel, where every k(x, z) is close to 1, sum_j beta_j acts as an
intercept that lossy merges move at random). The problem is then the C-SVM with a free bias
(objective_hinge_l2 of f + b, certified as hinge_l2_bias): alternating minimisation, the
budgeted steps for w at fixed b and the exact minimiser for b at fixed w.

Training rows are kept as CSR without stored zeros whatever the input's layout, so that a
dense array and its CSR copy give the same kernel sums bit for bit, and the same model.

Kernels: merging needs the Gaussian kernel (k(z, z) = 1 and the geometry of the merged point).
Any kernel runs with ``maintenance='remove'`` or in exact mode (``budget=None``: one term per
training point, no maintenance, so BSCA is exact stochastic coordinate ascent and BSGD exact
kernel Pegasos); kernel='linear' or 'poly' with merging is a ConfigError.

Trace, one row per epoch (evaluated off the clock, O(nB + B^2) kernel values like the
reference code's objectives, plus the test set's n_test B):
    objective_hinge_l2      P_C of the budgeted model (with b when ``bias``)
    dual_hybrid             1^T alpha - 1/2 sum_i alpha_i y_i f(x_i) (f without b), the dual the
                            reference code plots (= D(alpha) while nothing was merged)
    offset                  b (0 without ``bias``)
with ``trace_certificate=True`` also, at O(#SV^2) kernel values per epoch:
    dual_alpha              D(alpha) = 1^T alpha - 1/2 alpha^T Q alpha, exact (BSGD's alpha may
                            leave the box, so its D(alpha) can be negative)
    dual_<f>, gap_<f>, rel_gap_<f>  (f = hinge_l2, or hinge_l2_bias with ``bias``)
                            the certified lower bound (from alpha, scaled into the box, and the
                            model's own candidate) and the gap of P_C over it
and always:
    test_accuracy           on ``eval_set`` when `fit` is given one
    nonzero_step_fraction   BSCA: steps with delta != 0; BSGD: margin violations
    merge_fraction          maintenances per step
    merge_time_s            solver seconds spent in maintenance during the epoch
    sum_sqrt_wd             sum of sqrt(WD) over the epoch's maintenances
    model_size              terms in the model
The fitted ``merges_`` holds one record per maintenance (`model.LOG_COLUMNS`); a training run
logs it as the artifact records/merges.parquet.
"""

from __future__ import annotations

import functools
from numbers import Integral, Real
from typing import ClassVar

import numpy as np
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_array

from svmlab.errors import ConfigError
from svmlab.estimator.certificates import KernelImage, certify
from svmlab.estimator.formulations import L2, Formulation, FreeBias, Hinge, NoBias
from svmlab.estimator.kernels import canonical_csr, resolve_gamma
from svmlab.estimator.models import KernelSVMClassifier
from svmlab.estimator.validation import finite_csr_int32
from svmlab.numerics.box_ascent import gram_ascent
from svmlab.numerics.kernels import kernel_spec, point_set, self_kernel
from svmlab.solvers.budget import loops
from svmlab.solvers.budget import model as bm
from svmlab.solvers.budget.merge import TABLE_SIZE, h_table

FORMULATIONS = {
    False: Formulation(Hinge(), L2(), NoBias()),  # by ``bias``
    True: Formulation(Hinge(), L2(), FreeBias()),
}


def best_offset(y: np.ndarray, f: np.ndarray) -> float:
    """argmin_b sum_i max(0, 1 - y_i (f_i + b)), the midpoint of the minimising interval.

    The loss of i has its kink at k_i = y_i - f_i; the right derivative at b is the number of
    negatives with k_i <= b less the number of positives with k_i > b, nondecreasing in b.
    """
    knots = np.sort(y - f)
    negatives, positives = np.sort((y - f)[y < 0]), np.sort((y - f)[y > 0])
    slope = np.searchsorted(negatives, knots, "right") - (
        len(positives) - np.searchsorted(positives, knots, "right")
    )
    j = int(np.argmax(slope >= 0))
    upper = knots[min(np.searchsorted(knots, knots[j], "right"), len(knots) - 1)]
    return float(0.5 * (knots[j] + upper)) if slope[j] == 0 else float(knots[j])


def _csr_rows(X):
    """X as canonical CSR (`canonical_csr`) with int32 indices: dense and CSR input then hold
    the same nonzeros in the same order, and every kernel sum adds the same terms in the same
    order."""
    return finite_csr_int32(canonical_csr(X))


@functools.cache
def _h_table() -> np.ndarray:
    """The table of merge positions, built once per process (a few milliseconds)."""
    return h_table(TABLE_SIZE)


class BudgetedSVMClassifier(KernelSVMClassifier):
    """Shared machinery of BSCA and BSGD: budget, epochs, trace and the fitted model.

    Parameters: C; kernel, gamma, degree, coef0 (LIBSVM's definitions); budget, the most terms
    the model keeps (None: exact mode); epochs; max_iter, a cap on the steps (None: epochs x n);
    selection, 'permutation' (a fresh one per epoch) or 'uniform' (i.i.d. indices);
    maintenance, 'merge' or 'remove'; partner_rule, 'same_label', 'same_sign', 'all' or
    'random'; partner_search, 'golden' (the paper's golden-section search at gss_eps_search)
    or 'table' (h read from a table over (mr, kappa), `merge.tabulated_h`) while scoring
    partners; gss_eps_search and gss_eps_final, the golden-section tolerances while scoring
    partners and for the merge performed; gss_endpoint_check (also try h in {0, 1}; off for the
    paper's plain search); accumulate_duplicates (add a step to the point's own unmerged term
    instead of appending a twin; always on when budget=None); record_merges (keep ``merges_``);
    bias (a free offset refitted after every epoch, see the module docstring); trace_certificate
    (certified columns in every trace row, O(#SV^2) each; the fitted certificate_ is always
    computed); random_state.

    Fitted attributes besides KernelSVMClassifier's: alpha_ (the dual variables), sv_labels_,
    n_support_, n_merges_, merges_ (dict of LOG_COLUMNS arrays), converged_ (all epochs ran).
    """

    traces_eval_set = True
    _free_set_ascent = staticmethod(gram_ascent)
    _parameter_constraints: ClassVar[dict] = {
        **KernelSVMClassifier._parameter_constraints,
        "C": [Interval(Real, 0.0, None, closed="neither")],
        "budget": [Interval(Integral, 2, None, closed="left"), None],
        "epochs": [Interval(Integral, 1, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left"), None],
        "selection": [StrOptions({"permutation", "uniform"})],
        "maintenance": [StrOptions(set(bm.MAINTENANCE))],
        "partner_rule": [StrOptions(set(bm.PARTNER_RULES))],
        "partner_search": [StrOptions({"golden", "table"})],
        "gss_eps_search": [Interval(Real, 0.0, 1.0, closed="neither")],
        "gss_eps_final": [Interval(Real, 0.0, 1.0, closed="neither")],
        "gss_endpoint_check": ["boolean"],
        "accumulate_duplicates": ["boolean"],
        "record_merges": ["boolean"],
        "bias": ["boolean"],
        "trace_certificate": ["boolean"],
        "random_state": ["random_state"],
    }
    _warm_up: ClassVar[dict] = {"epochs": 1, "max_iter": None}

    def __init__(
        self,
        C=1.0,
        *,
        kernel="rbf",
        gamma="scale",
        degree=3,
        coef0=0.0,
        budget=500,
        epochs=20,
        max_iter=None,
        selection="permutation",
        maintenance="merge",
        partner_rule="same_label",
        partner_search="golden",
        gss_eps_search=0.01,
        gss_eps_final=0.001,
        gss_endpoint_check=True,
        accumulate_duplicates=False,
        record_merges=True,
        bias=False,
        trace_certificate=False,
        random_state=None,
    ):
        self.C = C
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.budget = budget
        self.epochs = epochs
        self.max_iter = max_iter
        self.selection = selection
        self.maintenance = maintenance
        self.partner_rule = partner_rule
        self.partner_search = partner_search
        self.gss_eps_search = gss_eps_search
        self.gss_eps_final = gss_eps_final
        self.gss_endpoint_check = gss_endpoint_check
        self.accumulate_duplicates = accumulate_duplicates
        self.record_merges = record_merges
        self.bias = bias
        self.trace_certificate = trace_certificate
        self.random_state = random_state

    def _formulation(self) -> Formulation:
        return FORMULATIONS[bool(self.bias)]

    def _stopping_rule(self) -> str:
        cap = f", max_iter={self.max_iter} steps" if self.max_iter is not None else ""
        return f"a fixed number of steps: epochs={self.epochs} x n{cap}"

    def _solver_duals(self, y: np.ndarray) -> tuple[np.ndarray, ...]:
        return (self.alpha_,)

    def _fit(self, X, y, trace):
        n, d = X.shape
        rows = _csr_rows(X)
        # gamma from the CSR rows, for both layouts
        self._gamma = resolve_gamma(self.gamma, rows, self.kernel)
        if self.kernel != "rbf" and self.maintenance == "merge" and self.budget is not None:
            raise ConfigError(
                f"maintenance='merge' needs kernel='rbf' (a merged point's coefficient relies "
                f"on k(z, z) = 1 and the Gaussian kernel's geometry); with kernel="
                f"{self.kernel!r} use maintenance='remove', or budget=None (exact, no budget)"
            )
        spec = kernel_spec(self.kernel, self._gamma, self.degree, self.coef0)
        points = point_set(rows)
        budget = n if self.budget is None else self.budget
        model = bm.new_model(n, d, budget + 1)
        opt = bm.Options(
            budget,
            bm.MAINTENANCE[self.maintenance],
            bm.PARTNER_RULES[self.partner_rule],
            float(self.gss_eps_search),
            float(self.gss_eps_final),
            bool(self.gss_endpoint_check),
            bool(self.accumulate_duplicates or self.budget is None),
            _h_table() if self.partner_search == "table" else np.empty((0, 0)),
        )
        state = self._new_state(n)
        rng = check_random_state(self.random_state)
        total = self.epochs * n if self.max_iter is None else min(self.max_iter, self.epochs * n)
        evaluation = self._evaluation(X, y, spec, points)
        qdiag = self_kernel(spec, points)
        done, logs, b = 0, [], 0.0
        with trace.buffered() as trace_rows:
            while done < total:
                size = min(n, total - done)
                order = (
                    rng.permutation(n)[:size]
                    if self.selection == "permutation"
                    else rng.randint(0, n, size)
                ).astype(np.int64)
                u = rng.random_sample(size) if self.partner_rule == "random" else np.zeros(size)
                stats = np.zeros(len(loops.STAT_NAMES))
                log = bm.new_log(size if self.record_merges else 0)
                self._epoch(
                    points, y, qdiag, state, model, spec, opt, order, u, done, b, stats, log
                )
                done += size
                logs.append(log.rows[: log.count[0]])
                f = None
                if self.bias:  # on the clock: the next epoch's steps use b
                    f = bm.decisions(spec, points, model) * self._scale(n, done)
                    b = best_offset(y, f)
                with trace.paused():
                    f = bm.decisions(spec, points, model) * self._scale(n, done) if f is None else f
                    row = evaluation(
                        self._alpha(state, done),
                        model,
                        done,
                        f,
                        b,
                        dict(zip(loops.STAT_NAMES, stats)),
                    )
                    trace_rows.append(done, **row)
        self._set_model(
            model, self._alpha(state, done), self._scale(n, done), b, np.concatenate(logs)
        )
        self.converged_ = done == self.epochs * n
        self.stop_reason_ = None if self.converged_ else f"max_iter={self.max_iter} steps"

    def _evaluation(self, X, y, spec, points):
        """The function that computes a trace row from alpha, the model and an epoch's stats."""
        eval_set = getattr(self, "_eval_set", None)
        if eval_set is not None:
            X_test = check_array(eval_set[0], accept_sparse="csr", dtype=np.float64)
            if X_test.shape[1] != X.shape[1]:
                raise ValueError(
                    f"eval_set's X has {X_test.shape[1]} features; the training "
                    f"data has {X.shape[1]}"
                )
            test_points, y_test = point_set(_csr_rows(X_test)), np.asarray(eval_set[1])
        form = self._formulation()

        def row(alpha, model, done, f, b, stats):
            """The trace row of the model sum_j beta_j k(., z_j) + b with training values f
            (without b): O(B^2) kernel values here, O(#SV^2) more with trace_certificate."""
            size, scale = int(model.size[0]), self._scale(len(y), done)
            coef = model.beta[:size] * scale
            squared_l2 = float(coef @ bm.decisions(spec, model.points, model)[:size]) * scale
            margins = y * (f + b)
            values = {
                form.metric("objective"): 0.5 * squared_l2 + self.C * form.loss.value(margins),
                "dual_hybrid": float(alpha.sum() - 0.5 * alpha @ (y * f)),
                "offset": b,
            }
            if self.trace_certificate:
                image = KernelImage(X, y, self._kernel(), model.Z[:size], coef, b)
                cert = certify(
                    form, self.C, margins, 0.5 * squared_l2, image, (alpha,), refine=False
                )
                values["dual_alpha"] = float(alpha.sum() - 0.5 * image.squared_norm(alpha))
                values.update(
                    (k, v) for k, v in cert.metrics().items() if k != form.metric("primal")
                )
            values |= {
                "nonzero_step_fraction": stats["nonzero_steps"] / stats["steps"],
                "merge_fraction": stats["merges"] / stats["steps"],
                "merge_time_s": stats["merge_ns"] * 1e-9,
                "sum_sqrt_wd": stats["sum_sqrt_wd"],
                "model_size": float(size),
            }
            if eval_set is not None:
                test_f = bm.decisions(spec, test_points, model) * scale + b
                predicted = self.classes_[(test_f > 0) * 1]
                values["test_accuracy"] = float(np.mean(predicted == y_test))
            return values

        return row

    def _set_model(self, model, alpha, scale, b, merges) -> None:
        size = int(model.size[0])
        self.support_vectors_ = model.Z[:size].copy()
        self.dual_coef_ = (model.beta[:size] * scale)[None, :]
        self.intercept_ = np.array([b])
        self.sv_labels_ = model.label[:size].astype(np.float64)
        self.n_support_ = size
        self.alpha_ = alpha
        self.merges_ = dict(zip(bm.LOG_COLUMNS, merges.T))
        self.n_merges_ = len(merges)

    @property
    def records_(self) -> dict[str, dict[str, np.ndarray]]:
        """Per-event records for tracking: {'merges': merges_}."""
        return {"merges": self.merges_}

    def _new_state(self, n: int) -> np.ndarray:
        """The solver's dual state: BSCA's alpha, BSGD's violation counts."""
        raise NotImplementedError

    def _alpha(self, state: np.ndarray, steps: int) -> np.ndarray:
        raise NotImplementedError

    def _scale(self, n: int, steps: int) -> float:
        """The factor between the model's stored coefficients and beta after ``steps``."""
        return 1.0

    def _epoch(self, points, y, qdiag, state, model, spec, opt, order, u, done, b, stats, log):
        raise NotImplementedError


class BSCA(BudgetedSVMClassifier):
    """Budgeted stochastic coordinate ascent on the no-bias dual (Algorithm 1 of the paper)."""

    name = "bsca"
    test_config = (
        {"random_state": 0, "budget": 30, "epochs": 3},
        {"random_state": 0, "budget": None, "epochs": 5, "kernel": "poly"},
    )

    def _new_state(self, n):
        return np.zeros(n)

    def _alpha(self, state, steps):
        return state.copy()

    def _epoch(self, points, y, qdiag, state, model, spec, opt, order, u, done, b, stats, log):
        loops.bsca_epoch(
            points, y, qdiag, state, float(self.C), model, spec, opt, order, u, done, b, stats, log
        )


class BSGD(BudgetedSVMClassifier):
    """Budgeted stochastic gradient descent (Pegasos with merging; Wang, Crammer, Vucetic)."""

    name = "bsgd"
    test_config = ({"random_state": 0, "budget": 30, "epochs": 3},)

    def _new_state(self, n):
        return np.zeros(n, np.int64)

    def _alpha(self, state, steps):
        return self._scale(len(state), steps) * state

    def _scale(self, n, steps):
        """nC / t: the model is (nC / t) sum_j b_j phi(z_j) after t steps."""
        return n * float(self.C) / steps

    def _epoch(self, points, y, qdiag, state, model, spec, opt, order, u, done, b, stats, log):
        loops.bsgd_epoch(
            points,
            y,
            state,
            len(y) * float(self.C),
            model,
            spec,
            opt,
            order,
            u,
            done,
            b,
            stats,
            log,
        )
