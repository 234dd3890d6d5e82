"""NESVM speed on a9a (32,561 x 123 CSR), every ratio against a reference measured in this run.

1. One NESVM C-SVM iteration (one pass over the rows + the O(n + p) Nesterov update) against the
   two scipy.sparse products X @ w and X.T @ u. Target: ratio <= 0.5.
2. Paper experiment A: NESVM (mu = 5, eps = 1e-3, paper Lipschitz constant and stopping rule,
   no bias) for C in {1e-3, ..., 1e3}: fit time after compilation (target <= 1 s) and test
   accuracy against LIBLINEAR (LinearSVC, hinge loss, no intercept, tol 1e-3) at the same C
   (target: within 1 percentage point).
3. Small mu (homotopy, and a direct run for comparison): relative gap of the true hinge
   objective against LIBLINEAR's optimum (LinearSVC, tol 1e-6; target <= 1e-3) and the time
   ratio to that LIBLINEAR fit.
4. numba: compile time in a process with an empty cache, and the first-fit overhead of a second
   process that loads the cache (target < 1 s).
5. The default (stop='gap', eps = 1e-2, tight L, adaptive step, geometric homotopy) on a9a,
   ijcnn1 and w8a: solver time to a certified relative gap of 1e-2 against LIBLINEAR's on the
   same problem (hinge, no intercept, C = 1; the largest tol in 1e-1, 1e-2, 1e-3 whose model
   certifies 1e-2, both certified by svmlab's certificate), target ratio <= 5; the share of
   NESVM's fit time spent in its in-loop stopping test (the certificate; target <= 10 %) and
   the iterations per homotopy stage. The training rows are those of `bench_data.load_split`:
   the official training file, or, for w8a (the shared folder has no w8a.t), a stratified
   80/20 split of w8a with seed 0.

    python benchmarks/bench_nesvm.py [--data-dir ../shared/data/libsvm] [--repeats 5]
    python benchmarks/bench_nesvm.py --sections 5 --datasets a9a ijcnn1 w8a --steps adaptive fixed
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from functools import partial
from pathlib import Path

import numpy as np
from bench_data import load_split
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import LinearSVC

from svmlab import data
from svmlab.estimator.formulations import Hinge
from svmlab.solvers.baselines import Liblinear
from svmlab.solvers.nesvm import NESVM, nesterov
from svmlab.solvers.nesvm.problem import SmoothedSVM

C_GRID = [10.0**k for k in range(-3, 4)]
DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "libsvm"


def median_time(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def hinge_objective(X, y, w, C):
    return 0.5 * w @ w + C * Hinge().value(y * (X @ w))


def liblinear(X, y, C, tol):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        start = time.perf_counter()
        model = LinearSVC(
            C=C, loss="hinge", fit_intercept=False, dual=True, tol=tol, max_iter=100_000
        ).fit(X, y)
        elapsed = time.perf_counter() - start
    return model, elapsed, bool(caught)


def iteration_cost(X, y, repeats):
    """Seconds per NESVM iteration (at w = 0 and along a fit) vs the two scipy products."""
    problem = SmoothedSVM(X, y, 1.0, "csvm", 5.0)
    L = problem.lipschitz("paper")
    w, u = np.zeros(X.shape[1]), np.random.default_rng(0).random(X.shape[0])
    iterations = 200

    def products():
        for _ in range(iterations):
            X @ w
            X.T @ u

    def nesvm_iterations():
        nesterov(problem.evaluate, np.zeros(problem.dim), L, 0.0, max_iter=iterations - 1)

    def one_pass():
        for _ in range(iterations):
            problem.evaluate(w)

    nesvm_iterations()  # compile / warm up
    reference = median_time(products, repeats) / iterations
    full = median_time(nesvm_iterations, repeats) / iterations
    oracle = median_time(one_pass, repeats) / iterations
    print("\n## 1. cost of one iteration (C = 1, mu = 5)")
    print(f"scipy X @ w + X.T @ u              {1e3 * reference:8.3f} ms")
    print(
        f"NESVM oracle pass at w = 0         {1e3 * oracle:8.3f} ms   ratio {oracle / reference:.2f}"
    )
    print(
        f"NESVM iteration (first {iterations})      {1e3 * full:8.3f} ms   ratio {full / reference:.2f}"
        "   (target <= 0.5)"
    )


def experiment_a(d, repeats):
    print("\n## 2. experiment A: mu = 5, eps = 1e-3, lipschitz = paper, no bias")
    print(
        f"{'C':>7} {'NESVM s':>9} {'iters':>6} {'conv':>5} {'acc %':>7} "
        f"{'LIBLINEAR s':>12} {'acc %':>7} {'d acc pp':>9} {'F_nesvm/F_lib':>14}"
    )
    for C in C_GRID:
        model = NESVM(
            C=C, mu=5.0, eps=1e-3, stop="paper", homotopy="off", lipschitz="paper", step="fixed"
        )
        model.fit(d.X_train, d.y_train)  # compiled and warm
        fit_s = median_time(partial(model.fit, d.X_train, d.y_train), repeats)
        ref, ref_s, warned = liblinear(d.X_train, d.y_train, C, 1e-3)
        acc = 100 * np.mean(model.predict(d.X_test) == d.y_test)
        ref_acc = 100 * np.mean(ref.predict(d.X_test) == d.y_test)
        ratio = model.objectives(d.X_train, d.y_train)["objective_hinge_l2"] / hinge_objective(
            d.X_train, np.where(d.y_train > 0, 1.0, -1.0), ref.coef_[0], C
        )
        print(
            f"{C:7.0e} {fit_s:9.3f} {model.n_iter_:6d} {model.converged_!s:>5} {acc:7.2f} "
            f"{ref_s:12.3f}{'*' if warned else ' '}{ref_acc:7.2f} {acc - ref_acc:9.2f} "
            f"{ratio:14.4f}"
        )
    print("(* LIBLINEAR warned that it reached max_iter)")


def homotopy(d, Cs, mu_target, tolerances):
    print(
        f"\n## 3. to mu = {mu_target}: geometric homotopy from mu = 5 (rho = 0.5, inner_eps = "
        "scaled) and a direct run, tight L, stop = rel; against LIBLINEAR tol 1e-6"
    )
    y_pm = np.where(d.y_train > 0, 1.0, -1.0)
    print(
        f"{'C':>7} {'run':>9} {'eps':>7} {'rel gap':>10} {'NESVM s':>9} {'iters':>7} "
        f"{'LIBLINEAR s':>12} {'time ratio':>11}"
    )
    for C in Cs:
        ref, ref_s, warned = liblinear(d.X_train, d.y_train, C, 1e-6)
        F_ref = hinge_objective(d.X_train, y_pm, ref.coef_[0], C)
        for run, params in (
            ("homotopy", {"mu": 5.0, "homotopy": "geometric"}),
            ("direct", {"mu": mu_target}),
        ):
            for eps in tolerances:
                start = time.perf_counter()
                model = NESVM(
                    C=C,
                    mu_target=mu_target,
                    stop="rel",
                    eps=eps,
                    inner_eps="scaled",
                    lipschitz="tight",
                    step="fixed",
                    **params,
                ).fit(d.X_train, d.y_train)
                nes_s = time.perf_counter() - start
                F = model.objectives(d.X_train, d.y_train)["objective_hinge_l2"]
                print(
                    f"{C:7.0e} {run:>9} {eps:7.0e} {(F - F_ref) / F_ref:10.2e} {nes_s:9.3f} "
                    f"{model.n_iter_:7d} {ref_s:11.3f}{'*' if warned else ' '} "
                    f"{nes_s / ref_s:11.2f}"
                )


PROBE = """
import time
start = time.perf_counter()
import numpy as np
from svmlab.solvers.nesvm import NESVM
from svmlab.solvers.pegasos import Pegasos
imported = time.perf_counter()
rng = np.random.default_rng(0)
X, y = rng.normal(size=(40, 5)), np.repeat([0, 1], 20)
def fits():
    for model in ("csvm", "lpsvm", "lssvm"):
        NESVM(model=model, max_iter=50).fit(X, y)
    NESVM(kernel="rbf", max_iter=50).fit(X, y)
    Pegasos(epochs=1).fit(X, y)
t0 = time.perf_counter(); fits(); t1 = time.perf_counter(); fits(); t2 = time.perf_counter()
print(imported - start, t1 - t0, t2 - t1)
"""


def compile_times():
    print("\n## 4. numba compilation and cache (fresh NUMBA_CACHE_DIR, new processes)")
    with tempfile.TemporaryDirectory() as cache:
        env = os.environ | {"NUMBA_CACHE_DIR": cache}
        for label in ("empty cache (compiles)", "second process (loads cache)"):
            out = subprocess.run(
                [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True
            ).stdout.split()
            imported, first, second = map(float, out)
            print(
                f"{label:30s} import {imported:6.3f} s  first fits {first:6.3f} s  "
                f"same fits again {second:6.3f} s  overhead {first - second:6.3f} s"
            )


class LiblinearTo1e2(Liblinear):
    """LIBLINEAR whose certificate is refined only until it shows 1e-2, all section 5 asks (the
    default refinement toward 1e-3 takes minutes on ijcnn1; it is off the clock either way)."""

    def _certificate_tol(self) -> float:
        return 1e-2


def to_certified_gap(data_dir, names, repeats, steps):
    """Section 5: the default (and with --steps fixed, the paper's step) against LIBLINEAR, both
    to a certified relative gap of 1e-2."""
    print("\n## 5. time to a certified relative gap of 1e-2 (hinge, no intercept, C = 1)")
    print(
        f"{'data':>7} {'LIBLINEAR s':>11} {'tol':>6} {'gap':>8} {'step':>8} {'NESVM s':>8} "
        f"{'gap':>8} {'iters':>6} {'cert s':>7} {'cert %':>6} {'ratio':>6} {'load':>5}  "
        "iterations per mu"
    )
    for name in names:
        X, y, _, _ = load_split(name, data_dir)
        for tol in (1e-1, 1e-2, 1e-3):
            ref = LiblinearTo1e2(loss="hinge", fit_intercept=False, tol=tol, max_iter=100_000)
            ref_s = statistics.median(ref.fit(X, y).fit_time_s_ for _ in range(repeats))
            if ref.certificate_.rel_gap <= 1e-2:
                break
        spent = []
        gap_test = NESVM._gap_test

        def timed_test(self, *args):
            test = gap_test(self, *args)

            def timed(*test_args):
                start = time.perf_counter()
                try:
                    return test(*test_args)
                finally:
                    spent.append(time.perf_counter() - start)

            return timed

        for step in steps:
            NESVM._gap_test = timed_test
            try:
                fits = []
                for _ in range(repeats):
                    spent.clear()
                    model = NESVM(step=step).fit(X, y)
                    fits.append((model.fit_time_s_, sum(spent)))
            finally:
                NESVM._gap_test = gap_test
            fit_s, cert_s = sorted(fits)[len(fits) // 2]
            mus, counts = np.unique(model.trace_.columns()["mu"], return_counts=True)
            stages = " ".join(f"{m:g}:{c}" for m, c in zip(mus[::-1], counts[::-1]))
            print(
                f"{name:>7} {ref_s:11.3f} {tol:6.0e} {ref.certificate_.rel_gap:8.1e} {step:>8} "
                f"{fit_s:8.2f} {model.certificate_.rel_gap:8.1e} {model.n_iter_:6d} "
                f"{cert_s:7.2f} {100 * cert_s / fit_s:6.1f} {fit_s / ref_s:6.1f} "
                f"{os.getloadavg()[0]:5.1f}  {stages}"
            )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=os.environ.get("SVMLAB_SHARED_DATA", DEFAULT_DATA))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--homotopy-C", type=float, nargs="+", default=[0.1, 1.0])
    parser.add_argument("--mu-target", type=float, default=1e-2)
    parser.add_argument(
        "--eps",
        type=float,
        nargs="+",
        default=[1e-7, 1e-8],
        help="relative stopping tolerances of the small-mu runs",
    )
    parser.add_argument("--sections", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    parser.add_argument(
        "--datasets", nargs="+", default=["a9a", "ijcnn1", "w8a"], help="datasets of section 5"
    )
    parser.add_argument(
        "--steps",
        nargs="+",
        default=["adaptive"],
        choices=["adaptive", "fixed"],
        help="NESVM steps of section 5 (fixed: the paper's 1/L)",
    )
    args = parser.parse_args()
    if 5 in args.sections:
        to_certified_gap(args.data_dir, args.datasets, args.repeats, args.steps)
    if not set(args.sections) & {1, 2, 3, 4}:
        return
    d = data.load("a9a", data_dir=args.data_dir)
    print(
        f"a9a: train {d.X_train.shape}, nnz {d.X_train.nnz}; test {d.X_test.shape}; "
        f"numba threads {os.environ.get('NUMBA_NUM_THREADS', 'default')} (loops are serial)"
    )
    if 1 in args.sections:
        iteration_cost(d.X_train, np.where(d.y_train > 0, 1.0, -1.0), args.repeats)
    if 2 in args.sections:
        experiment_a(d, args.repeats)
    if 3 in args.sections:
        homotopy(d, args.homotopy_C, args.mu_target, args.eps)
    if 4 in args.sections:
        compile_times()


if __name__ == "__main__":
    main()
