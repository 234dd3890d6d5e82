"""Time per iteration of each solver family against the memory-traffic floor of that iteration.

The floor is what the iteration must read and compute, timed with numpy/scipy on the same data
in the same run (medians of at least 7 repeats), each primitive in bulk so that no per-call
overhead enters it:
* NESVM (linear, C = 1, mu = 5): X @ w and X.T @ u.
* SVM-ALM (p = 1, 1 CG step): X.T @ r (the e-step's A^T r), then X @ d and X.T @ q (the CG
  step's normal product); X @ w every refresh_every = 50 iterations.
* l1 Newton (defaults): per Newton iteration X.T @ r and the Gram block X_A^T X_A of the final
  active set A over all rows (an upper bound on the weighted block it forms, so the ratio is a
  lower bound), plus X @ d per accepted step and per alpha level.
* Frank-Wolfe (RBF, C = 1, full sampling, certified 1e-2): the kernel values the iteration
  computed (the fit's count per iteration; the cache serves the rest), at the cost per value of
  a bulk scipy RBF block, plus one axpy over the n gradient entries.
* BSCA (RBF, budget B = 200, 1 epoch; partner search by golden section, the default, and by
  the table of merge positions): per step the B kernel values of x_i against the model, plus,
  on a merge, the B values of the merged point against the model (the fit's merge rate), at
  the cost per value of a bulk dense block.
* Pegasos (C = 1, 1 epoch): per step one row's dot product and one row's update, i.e. a
  1/n share of X @ w and X.T @ u.
Linear families run on a9a's training file; kernel families on its first --kernel-rows rows
(min-max scaled, gamma = 1 / d), to keep the run short. Iteration times are the solver's own
clock (fit_time_s_, numba compiled beforehand) divided by its iterations. With --cpu-time, BSCA
is also timed by the thread's CPU time: its compiled epoch as `fit` calls it (the same steps)
and the floor's block, so that the ratio holds on a loaded machine, where wall times of both
sides stretch at random.

    python benchmarks/bench_iteration_cost.py [--data-dir ../shared/data/libsvm] [--repeats 3]
                                              [--kernel-rows 5000] [--families fw pegasos]
                                              [--cpu-time]
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy is imported

import argparse
import statistics
import time
import warnings
from pathlib import Path

import numpy as np
from bench_alm import DEFAULT_DATA, load, median_time
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import MinMaxScaler

from svmlab.numerics.kernels import kernel_spec, point_set, self_kernel
from svmlab.solvers.alm import SVMALM
from svmlab.solvers.budget import BSCA, loops
from svmlab.solvers.budget import model as bm
from svmlab.solvers.budget.estimator import _csr_rows, _h_table
from svmlab.solvers.frank_wolfe import FrankWolfe
from svmlab.solvers.l1_newton import L1NewtonSVM
from svmlab.solvers.nesvm import NESVM
from svmlab.solvers.pegasos import Pegasos

BLOCK = 1000  # rows per bulk kernel block
FAMILIES = ("nesvm", "alm", "l1_newton", "fw", "bsca", "pegasos")


def timed(fn, repeats: int) -> float:
    """Median seconds of a primitive (cheap: at least 7 repeats)."""
    return median_time(fn, max(repeats, 7))[0]


def per_iteration(model, X, y, repeats: int) -> tuple[float, object]:
    """(median solver seconds per iteration, the last fitted model)."""
    times = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for _ in range(repeats):
            model.fit(X, y)
            times.append(model.fit_time_s_ / model.n_iter_)
    return statistics.median(times), model


def rbf_value_cost(A, B, gamma: float, repeats: int) -> float:
    """Seconds per RBF kernel value of a bulk block exp(-gamma ||a - b||^2), A rows x B rows."""
    a2 = np.asarray(A.multiply(A).sum(1)).ravel() if hasattr(A, "multiply") else (A * A).sum(1)
    b2 = (B * B).sum(1)

    def block():
        np.exp(-gamma * (a2[:, None] + b2[None, :] - 2.0 * (A @ B.T)))

    return timed(block, repeats) / (A.shape[0] * B.shape[0])


def cpu_seconds(fn, repeats: int) -> list[float]:
    """Thread CPU seconds of each of ``repeats`` calls of fn, after one call that compiles."""
    fn()
    times = []
    for _ in range(repeats):
        start = time.thread_time()
        fn()
        times.append(time.thread_time() - start)
    return times


def bsca_cpu_rows(K, y, gamma: float, budget: int, repeats: int) -> list[tuple]:
    """Report rows of BSCA's epoch (C = 1, seed 0's order) by thread CPU time, both searches,
    against the floor's block by thread CPU time."""
    A, Z = K[:BLOCK], K[:budget]
    a2, z2 = (A * A).sum(1), (Z * Z).sum(1)
    block = cpu_seconds(
        lambda: np.exp(-gamma * (a2[:, None] + z2[None, :] - 2.0 * (A @ Z.T))), max(repeats, 7)
    )
    value = statistics.median(block) / (BLOCK * budget)
    n, spec = len(y), kernel_spec("rbf", gamma)
    points = point_set(_csr_rows(K))
    qdiag = self_kernel(spec, points)
    order = np.random.RandomState(0).permutation(n).astype(np.int64)
    rows = []
    for search in ("golden", "table"):
        stats = np.zeros(len(loops.STAT_NAMES))
        opt = bm.Options(
            budget,
            bm.MERGE,
            bm.SAME_LABEL,
            0.01,
            0.001,
            True,
            False,
            _h_table() if search == "table" else np.empty((0, 0)),
        )

        def epoch(stats=stats, opt=opt):
            stats[:] = 0.0
            loops.bsca_epoch(
                points,
                y,
                qdiag,
                np.zeros(n),
                1.0,
                bm.new_model(n, K.shape[1], budget + 1),
                spec,
                opt,
                order,
                np.zeros(n),
                0,
                0.0,
                stats,
                bm.new_log(0),
            )

        seconds = statistics.median(cpu_seconds(epoch, repeats)) / n
        merges = stats[loops.MERGES] / n
        rows.append(
            (
                f"BSCA {search} CPU",
                seconds,
                (1 + merges) * budget * value,
                f"(1 + {merges:.2f} merges) x B = {budget} kernel values, thread CPU time",
            )
        )
    return rows


def linear_floors(X, repeats: int) -> dict[str, float]:
    """Seconds of X @ w and X.T @ u."""
    rng = np.random.default_rng(0)
    w, u = rng.random(X.shape[1]), rng.random(X.shape[0])
    return {"Xw": timed(lambda: X @ w, repeats), "XTu": timed(lambda: X.T @ u, repeats)}


def report(rows: list[tuple[str, float, float, str]]) -> None:
    print(f"\n{'family':<16}{'s/iteration':>13}{'floor s':>12}{'ratio':>8}  floor")
    for family, seconds, floor, what in rows:
        print(f"{family:<16}{seconds:13.3e}{floor:12.3e}{seconds / floor:8.2f}  {what}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--kernel-rows", type=int, default=5000)
    parser.add_argument("--families", nargs="+", choices=FAMILIES, default=FAMILIES)
    parser.add_argument(
        "--cpu-time",
        action="store_true",
        help="also time BSCA's epoch and its floor by thread CPU time",
    )
    args = parser.parse_args()
    run = set(args.families)
    r = args.repeats
    X, y = load(args.data_dir, "a9a")
    n, d = X.shape
    f = linear_floors(X, r)
    rows = []

    if "nesvm" in run:
        seconds, _ = per_iteration(
            NESVM(C=1.0, mu=5.0, stop="paper", eps=1e-300, homotopy="off", max_iter=300), X, y, r
        )
        rows.append(("NESVM", seconds, f["Xw"] + f["XTu"], "X @ w + X.T @ u"))

    if "alm" in run:
        seconds, _ = per_iteration(
            SVMALM(p=1.0, inner_steps=1, tol_gap=None, trace_certificate=False, max_iter=300),
            X,
            y,
            r,
        )
        rows.append(
            (
                "SVM-ALM",
                seconds,
                2 * f["XTu"] + f["Xw"] * (1 + 1 / 50),
                "X.T @ r + X @ d + X.T @ q (+ X @ w / 50)",
            )
        )

    if "l1_newton" in run:
        seconds, model = per_iteration(L1NewtonSVM(), X, y, r)
        active = np.flatnonzero(model.coef_[0])
        XA = X[:, active]
        gram = timed(lambda: (XA.T @ XA).toarray(), r)
        products = (model.n_steps_ + model.n_levels_) / model.n_iter_
        rows.append(
            (
                "l1 Newton",
                seconds,
                f["XTu"] + gram + products * f["Xw"],
                f"X.T @ r + X_A^T X_A (|A| = {active.size}) + {products:.2f} X @ d",
            )
        )

    m = args.kernel_rows
    K = MinMaxScaler().fit_transform(X[:m].toarray())
    yk, gamma = y[:m], 1.0 / d
    if "fw" in run:
        value = rbf_value_cost(K[:BLOCK], K, gamma, r)
        axpy = timed(lambda: np.add(K[:, 0], 0.5 * K[:, 1]), r)
        seconds, model = per_iteration(FrankWolfe(C=1.0, gamma=gamma, random_state=0), K, yk, r)
        values = model.n_kernel_evals_ / model.n_iter_
        rows.append(
            (
                "FW",
                seconds,
                values * value + axpy,
                (
                    f"{values:.0f} kernel values (n = {m}, cache hits "
                    f"{100 * model.cache_hit_rate_:.0f} %, {model.n_iter_} iterations) "
                    "+ axpy over n"
                ),
            )
        )

    if "bsca" in run:
        budget = 200
        Z = K[:budget]
        value = rbf_value_cost(K[:BLOCK], Z, gamma, r)
        for search in ("golden", "table"):
            seconds, model = per_iteration(
                BSCA(
                    C=1.0,
                    gamma=gamma,
                    budget=budget,
                    epochs=1,
                    partner_search=search,
                    random_state=0,
                ),
                K,
                yk,
                r,
            )
            merges = model.n_merges_ / model.n_iter_
            merging = model.trace_.columns()["merge_time_s"][-1] / model.fit_time_s_
            rows.append(
                (
                    f"BSCA {search}",
                    seconds,
                    (1 + merges) * budget * value,
                    f"(1 + {merges:.2f} merges) x B = {budget} kernel values; "
                    f"{100 * merging:.0f} % of the fit merging",
                )
            )
        if args.cpu_time:
            rows += bsca_cpu_rows(K, yk, gamma, budget, r)

    if "pegasos" in run:
        seconds, _ = per_iteration(Pegasos(C=1.0, epochs=1, tol=0.0, random_state=0), X, y, r)
        rows.append(("Pegasos", seconds, (f["Xw"] + f["XTu"]) / n, "(X @ w + X.T @ u) / n"))

    print(f"# a9a: n = {n}, d = {d}, nnz = {X.nnz}; kernel families on {m} rows; medians of {r}")
    report(rows)


if __name__ == "__main__":
    main()
