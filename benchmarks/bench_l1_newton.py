"""The l1 Newton solver against linprog (HiGHS) on the exact l1-SVM and against LIBLINEAR's
l1-regularised squared hinge, in one run.

The exact problem is the LP-SVM  min_w mu ||w||_1 + 1/N sum_i max(0, 1 - y_i x_i.w)  (lam = 0,
no intercept), with mu = --mu-ratio x mu_max (mu_max = ||X^T y||_inf / N, where w = 0).
- newton: L1NewtonSVM(lam=0, mu, eta, alpha_min, tol): stops at the end of the first smoothing
  level whose certified relative gap is <= tol (1e-4; alpha_min = 1e-9 only bounds the run);
  its fit_time_s_ is the solver alone (numba compiled before the clock; the gap tests are on
  it). --eta 0.1 --tol 0 --alpha-min 1e-4 runs the paper's settings instead;
- linprog: scipy's linprog(method=--lp-method) on the LP in w = u - v, slacks xi; wall time of
  the call (the constraint matrix is built before); its precision is certified the same way,
  with HiGHS's own dual values as the dual point;
- liblinear: LinearSVC(penalty='l1', loss='squared_hinge', dual=False, fit_intercept=False,
  C = 1/(N mu), tol=--ll-tol), a related but DIFFERENT problem (squared hinge, C-scaled sum):
  its gap is certified for its own problem (squared_hinge_l1).
Columns: median time over --repeats (solvers interleaved), ratio to linprog, certified relative
gap, excess = P(w) / P(w_linprog) - 1 (the LP-SVM's objective P, whatever the solver solved),
nnz(w), test accuracy, passes over X (newton: spec 001 §3.2 accounting; linprog: simplex
or IPM iterations; liblinear: its iterations) and, for newton, smoothing levels and the median
and largest number of Newton iterations per level. w8a has no test file in the shared data: a stratified 80/20
split (seed 0) of its training file. australian is max-abs scaled (raw values up to 5e4).
Target: newton <= 0.1 x linprog's time on a9a and w8a at relative gap <= 1e-4.

    python benchmarks/bench_l1_newton.py                                 # all, 3 repeats
    python benchmarks/bench_l1_newton.py --datasets a9a --repeats 1 --mu-ratio 0.002
    python benchmarks/bench_l1_newton.py --solvers newton --eta 0.1 --tol 0 --alpha-min 1e-4
"""

import argparse
import os
import platform
import statistics
import time
from datetime import UTC, datetime

import numpy as np
import scipy.sparse as sp
from bench_data import load_split

DATASETS = {
    "australian": {"max_abs_scale": True},
    "colon-cancer": {},
    "a9a": {},
    "w8a": {},
    "w8a_split": {},
    "ijcnn1": {},
    "synthetic_tall": {},
    "synthetic_wide": {},
}
SOLVERS = ("linprog", "newton", "liblinear")
TARGET_RATIO, TARGET_ON = 0.1, ("a9a", "w8a", "w8a_split")


def run_linprog(X, y, mu, method):
    """(seconds, w, theta) of the LP; theta_i in [0, 1] from HiGHS's constraint duals."""
    from scipy.optimize import linprog

    n, d = X.shape
    A = sp.csr_matrix(X).multiply(-y[:, None]).tocsr()
    A_ub = sp.hstack([A, -A, -sp.eye(n)]).tocsc()
    c = np.r_[mu * np.ones(2 * d), np.ones(n) / n]
    start = time.perf_counter()
    result = linprog(c, A_ub=A_ub, b_ub=-np.ones(n), bounds=(0, None), method=method)
    seconds = time.perf_counter() - start
    if result.status != 0:
        raise RuntimeError(f"linprog failed: {result.message}")
    theta = np.clip(-n * result.ineqlin.marginals, 0.0, 1.0)
    return seconds, result.x[:d] - result.x[d : 2 * d], theta, int(result.nit)


def lp_objective(X, y, w, mu):
    """The LP-SVM's objective at w."""
    from svmlab.solvers.l1_newton.certificate import exact_objective

    return exact_objective(y * (X @ w), w, 0.0, mu)


def gap_of(X, y, w, theta, mu):
    """Certified relative gap of the LP-SVM at w with the dual point theta (and 1[z > 0]):
    that of hinge_l1 at C = 1/(N mu), P / mu."""
    from svmlab.estimator.certificates import LinearImage, certify
    from svmlab.estimator.formulations import L1, Formulation, Hinge

    C = 1.0 / (len(y) * mu)
    return certify(
        Formulation(Hinge(), L1()),
        C,
        y * (X @ w),
        float(np.abs(w).sum()),
        LinearImage(X, y, w),
        (C * theta,),
    ).rel_gap


def liblinear_gap(X, y, model, C):
    from svmlab.estimator.certificates import LinearImage, certify
    from svmlab.estimator.formulations import L1, Formulation, SquaredHinge

    w = model.coef_[0]
    return certify(
        Formulation(SquaredHinge(), L1()),
        C,
        y * (X @ w),
        float(np.abs(w).sum()),
        LinearImage(X, y, w),
    ).rel_gap


def fit(solver, X, y, mu, args) -> dict:
    from sklearn.svm import LinearSVC

    from svmlab.solvers.l1_newton import L1NewtonSVM

    if solver == "linprog":
        seconds, w, theta, nit = run_linprog(X, y, mu, args.lp_method)
        return {"time": seconds, "w": w, "gap": gap_of(X, y, w, theta, mu), "passes": nit}
    if solver == "newton":
        model = L1NewtonSVM(lam=0.0, mu=mu, eta=args.eta, alpha_min=args.alpha_min, tol=args.tol)
        model.fit(X, y)
        alphas = model.trace_.columns()["alpha"]
        per_level = np.unique(alphas, return_counts=True)[1]
        return {
            "time": model.fit_time_s_,
            "w": model.coef_[0],
            "gap": model.certificate_.rel_gap,
            "passes": model.n_passes_,
            "levels": model.n_levels_,
            "per_level": (float(np.median(per_level)), int(per_level.max())),
        }
    C = 1.0 / (len(y) * mu)
    model = LinearSVC(
        penalty="l1",
        loss="squared_hinge",
        dual=False,
        fit_intercept=False,
        C=C,
        tol=args.ll_tol,
        max_iter=100_000,
    )
    start = time.perf_counter()
    model.fit(X, y)
    seconds = time.perf_counter() - start
    return {
        "time": seconds,
        "w": model.coef_[0],
        "gap": liblinear_gap(X, y, model, C),
        "passes": int(model.n_iter_),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=list(DATASETS))
    parser.add_argument("--solvers", nargs="+", default=list(SOLVERS), choices=SOLVERS)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--mu-ratio", type=float, default=0.02, help="mu / mu_max")
    parser.add_argument("--tol", type=float, default=1e-4, help="newton: certified rel. gap")
    parser.add_argument("--eta", type=float, default=1e-10, help="newton: decrement factor")
    parser.add_argument("--alpha-min", type=float, default=1e-9, help="newton: last alpha")
    parser.add_argument("--lp-method", default="highs", help="highs | highs-ds | highs-ipm")
    parser.add_argument("--ll-tol", type=float, default=1e-4, help="LIBLINEAR's tol")
    parser.add_argument(
        "--data-dir", default=os.environ.get("SVMLAB_SHARED_DATA") or "../shared/data/libsvm"
    )
    args = parser.parse_args()
    from svmlab.solvers.l1_newton import L1NewtonSVM

    rng = np.random.default_rng(0)  # the numba code compiled (or loaded) once, off the clock
    L1NewtonSVM(lam=0.0, mu=0.01).fit(rng.standard_normal((20, 3)), np.repeat([-1.0, 1.0], 10))
    print(
        f"# {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {platform.processor() or 'cpu'}, "
        f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}; lam = 0, "
        f"mu = {args.mu_ratio:g} mu_max; newton eta={args.eta:g} tol={args.tol:g} "
        f"alpha_min={args.alpha_min:g}; "
        f"linprog {args.lp_method}; liblinear tol={args.ll_tol:g}"
    )
    print(
        "dataset         N x d            mu        solver     time_s   ratio  rel_gap   "
        "excess    nnz  test_acc  passes  notes"
    )
    for name in args.datasets:
        X, y, X_test, y_test = load_split(name, args.data_dir, **DATASETS[name])
        mu = args.mu_ratio * float(np.abs(np.asarray(X.T @ y)).max()) / X.shape[0]
        runs = {solver: [] for solver in args.solvers}
        for _ in range(args.repeats):
            for solver in args.solvers:
                runs[solver].append(fit(solver, X, y, mu, args))
        base = statistics.median(r["time"] for r in runs.get("linprog", [{"time": np.nan}]))
        optimum = lp_objective(X, y, runs["linprog"][-1]["w"], mu) if "linprog" in runs else np.nan
        for solver, results in runs.items():
            t = statistics.median(r["time"] for r in results)
            last = results[-1]
            acc = float(np.mean(np.where(X_test @ last["w"] > 0, 1.0, -1.0) == y_test))
            excess = lp_objective(X, y, last["w"], mu) / optimum - 1.0
            notes = ""
            if solver == "newton":
                median, most = last["per_level"]
                notes = (
                    f"levels {last['levels']}, Newton iterations per level: median "
                    f"{median:g}, max {most}"
                )
                if name in TARGET_ON and "linprog" in runs:
                    met = t <= TARGET_RATIO * base and last["gap"] <= args.tol
                    notes += f"; target {'MET' if met else 'MISSED'}"
            notes += f"; times {[round(r['time'], 3) for r in results]}"
            print(
                f"{name:15s} {X.shape[0]:6d} x {X.shape[1]:<6d} {mu:<9.3g} {solver:9s} "
                f"{t:8.3f} {t / base:7.3f}  {last['gap']:.1e}  {excess:8.1e} "
                f"{np.count_nonzero(last['w']):5d}"
                f"  {100 * acc:7.2f}  {last['passes']:6d}  {notes}",
                flush=True,
            )


if __name__ == "__main__":
    main()
