"""FW, MFW and CVM against scikit-learn's SVC (LIBSVM) at the same C and gamma, in one run.

For each dataset and solver: median fit time over --repeats fits (each in a fresh child
process, after a warm-up fit that loads the numba cache), the fit-time ratio to SVC and to CVM
of the same kind (certified or not: see below), test accuracy and its difference to SVC in
percentage points, the number of support vectors, and the peak resident memory added by the fit
(VmHWM after the fit minus VmRSS before it, with the peak reset just before the fit). Solvers
alternate within each repeat, so that changes in the load of the machine affect all of them
alike. The shared data have no w8a.t: w8a is a stratified 80/20 split (seed 0) of its training
file; --subset trains on a seeded subset of the training rows. gamma is a number,
1 / n_features, or a rule of `svmlab.estimator.kernels.resolve_gamma` (w1a, w3a, a1a: the
paper's avg_sq_dist), resolved once and given to every solver.

Solvers: svc is LIBSVM through svmlab's `Libsvm` baseline (SVC, cache 200 MB; its model is
certified on its own problem, hinge loss and free bias, with LIBSVM's dual point); mfw, fw and
cvm run the paper's protocol (59-point sampled searches, the ball-accuracy stop at --paper-eps,
default the paper's 1e-6, sampled stops unconfirmed: uncertified, like LibCVM's); mfw_check and
fw_check the same with final_full_check (a sampled stop confirmed by a full scan, after which G
is kept for every point: certified); mfw_full, fw_full and cvm_full full scans at --full-eps
under --full-stop (meb or gap: certified); cvm_gap is CVM with LibCVM's sampled search
stopped at a certified relative gap (stop='gap', eps 1e-2 unless given: certified). `vs_cvm` compares with cvm for uncertified runs and
with cvm_full for certified ones, when that row ran. Every row notes
the certified relative gap of its problem (svmlab's certificate, computed after the fit, off
the clock: the L2-SVM for FW/MFW/CVM, the hinge C-SVM for svc), and the kernel values computed
per iteration against what the iteration needs: m (one kernel row over every point) for a step
that keeps G over every point, or 59 q (the sample's G against the q core points) for a sampled
search, summed over the trace's iterations. A solver name takes an optional tolerance,
`NAME:VALUE` (svc: LIBSVM's tol; the others: eps), so that one run can sweep tolerances.
--gap-targets then prints, per solver and target, the fastest of its tolerances whose certified
relative gap (median) is at most the target, and its ratio to svc's. Fit time is the solver's
clock (`fit_time_s_`: the numba warm-up, the certificate and the training metrics excluded);
each fit's line on stderr adds the wall time of `fit`, which also counts the work done off the
clock (the trace's gaps of the sampled variants, the certificate).
Targets checked: MFW fit time <= 0.25 x SVC on ijcnn1 and w8a, with test accuracy within 1 pp.

    python benchmarks/bench_frank_wolfe.py                       # ijcnn1, w8a, a9a; 3 repeats
    python benchmarks/bench_frank_wolfe.py --datasets w1a w3a --solvers cvm fw mfw fw_check \
        cvm_full fw_full --full-eps 1e-4                          # the paper's Table 3 protocol
    python benchmarks/bench_frank_wolfe.py --datasets ijcnn1 --repeats 5 --solvers svc mfw
    python benchmarks/bench_frank_wolfe.py --solvers svc mfw_full --full-eps 2e-5
    python benchmarks/bench_frank_wolfe.py --datasets w8a --C 32 --solvers svc mfw_full
    python benchmarks/bench_frank_wolfe.py --solvers svc mfw_full --full-stop gap --full-eps 1e-2
    python benchmarks/bench_frank_wolfe.py --datasets ijcnn1 --full-stop gap --solvers svc:1 \
        svc:0.1 svc cvm:1e-4 cvm:1e-5 cvm mfw_full:1e-2 --gap-targets 1e-2 1e-3
"""

import argparse
import multiprocessing as mp
import os
import platform
import statistics
import sys
import time
import warnings
from datetime import UTC, datetime
from functools import partial

import numpy as np
from bench_data import load_split

# dataset -> (C, gamma); gamma None = 1 / n_features, a string: a gamma rule
SETTINGS = {
    "ijcnn1": (32.0, 2.0),
    "w8a": (1.0, None),
    "a9a": (1.0, None),
    "w1a": (32.0, "avg_sq_dist"),
    "w3a": (32.0, "avg_sq_dist"),
    "a1a": (32.0, "avg_sq_dist"),
}
SOLVERS = (
    "svc",
    "mfw",
    "fw",
    "cvm",
    "mfw_check",
    "fw_check",
    "mfw_full",
    "fw_full",
    "cvm_full",
    "cvm_gap",
)
TARGET_RATIO, TARGET_PP = 0.25, 1.0


def _certified(solver: str) -> bool:
    """Whether the solver's stop is confirmed over every point (its gap is then certified)."""
    return solver.partition(":")[0].endswith(("_check", "_full", "_gap"))


def _parse_solver(text: str) -> str:
    """A --solvers entry: a solver name, optionally with its tolerance, NAME:VALUE."""
    name, _, value = text.partition(":")
    if name not in SOLVERS:
        raise argparse.ArgumentTypeError(f"unknown solver {name!r}; choose from {SOLVERS}")
    if value:
        try:
            float(value)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{text!r}: the tolerance after ':' must be a number"
            ) from None
    return text


def _median(runs: list, key: str) -> float:
    """The median of one result over the repeats."""
    return statistics.median(r[key] for r in runs)


def _status(field: str) -> int:
    """A field of /proc/self/status in bytes."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"{field} not in /proc/self/status")


def _estimator(solver: str, C: float, gamma: float, seed: int, settings: dict):
    from svmlab.solvers.baselines import Libsvm
    from svmlab.solvers.frank_wolfe import CoreVectorMachine, FrankWolfe, ModifiedFrankWolfe

    solver, _, tolerance = solver.partition(":")
    if solver == "svc":
        return Libsvm(
            C=C, kernel="rbf", gamma=gamma, cache_size=200.0, tol=float(tolerance or 1e-3)
        )
    name, _, variant = solver.partition("_")
    cls = {"mfw": ModifiedFrankWolfe, "fw": FrankWolfe, "cvm": CoreVectorMachine}[name]
    if variant == "full":
        options = {"sampling": "full", "eps": settings["full_eps"], "stop": settings["full_stop"]}
    elif variant == "gap":
        options = {"stop": "gap", "sampling": "random", "eps": 1e-2}
    else:
        options = {"stop": "meb", "sampling": "random", "eps": settings["paper_eps"]}
        if name != "cvm":
            options["final_full_check"] = variant == "check"
    if tolerance:
        options["eps"] = float(tolerance)
    return cls(C=C, kernel="rbf", gamma=gamma, cache_mb=200.0, random_state=seed, **options)


def _needed(solver: str, est, m: int) -> tuple[str, float]:
    """What the iterations of a fit need in kernel values, summed over its trace: m per step
    (one kernel row over every point) for full scans, which keep G over every point; else 59 q
    per search (the sample's G against the q core points; CVM's LibCVM search may take up to
    `sampling_rounds` of them, a *_check run's steps after a refuted confirmation need m)."""
    if solver.partition(":")[0].endswith("_full"):
        return "m per step", m * max(est.n_iter_, 1)
    core = est.trace_.columns()["core_size"][1:]
    return "59 q per search", est.sample_size * float(core.sum())


def _fit_once(args) -> dict:
    """Child process: load, reset the peak RSS, fit, measure; one solver, one seed."""
    dataset, C, gamma, solver, seed, data_dir, settings = args
    X_train, y_train, X_test, y_test = load_split(dataset, data_dir)
    if settings["subset"] and settings["subset"] < X_train.shape[0]:
        rows = np.sort(
            np.random.default_rng(0).choice(X_train.shape[0], settings["subset"], replace=False)
        )
        X_train, y_train = X_train[rows], y_train[rows]
    gamma = _gamma(gamma, X_train)
    if not solver.startswith("svc"):  # load the numba cache on a tiny problem (A17: no JIT time)
        warm = np.r_[np.flatnonzero(y_train > 0)[:100], np.flatnonzero(y_train < 0)[:100]]
        _estimator(solver, C, gamma, seed, settings).fit(X_train[warm], y_train[warm])
    est = _estimator(solver, C, gamma, seed, settings)
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    rss = _status("VmRSS")
    with warnings.catch_warnings():  # a loose tolerance's ConvergenceWarning is in the notes
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        est.fit(X_train, y_train)
        wall = time.perf_counter() - start
    peak = _status("VmHWM") - rss
    acc = float(np.mean(est.predict(X_test) == y_test))
    n_sv = int(np.sum(est.n_support_))
    result = {
        "fit_s": est.fit_time_s_,
        "wall_s": wall,
        "acc": acc,
        "n_sv": n_sv,
        "peak_mb": peak / 2**20,
        "gamma": gamma,
        "n_iter": est.n_iter_,
        "converged": est.converged_,
        "rel_gap": est.certificate_.rel_gap,
    }
    if not solver.startswith("svc"):
        need, value = _needed(solver, est, X_train.shape[0])
        result |= {
            "evals": est.n_kernel_evals_,
            "hit_rate": est.cache_hit_rate_,
            "need": need,
            "need_evals": value,
            "core": int(est.trace_.columns()["core_size"][-1]),
        }
    return result


def _gamma(gamma, X) -> float:
    """The numeric gamma of a SETTINGS entry on the training set X."""
    from svmlab.estimator.kernels import resolve_gamma

    if gamma is None:
        return 1.0 / X.shape[1]
    return resolve_gamma(gamma, X, "rbf")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=list(SETTINGS), choices=list(SETTINGS))
    parser.add_argument(
        "--solvers",
        nargs="+",
        default=["svc", "mfw", "mfw_full", "fw"],
        type=_parse_solver,
        metavar="NAME[:TOL]",
        help=f"solvers, each optionally with its tolerance: {', '.join(SOLVERS)}",
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--paper-eps",
        type=float,
        default=1e-6,
        help="eps of the sampled variants mfw, fw, cvm, *_check (paper: 1e-6)",
    )
    parser.add_argument(
        "--full-eps",
        type=float,
        default=1e-5,
        help="eps of the full-scan variants mfw_full, fw_full and cvm_full",
    )
    parser.add_argument(
        "--full-stop",
        choices=("meb", "gap"),
        default="meb",
        help="stopping rule of the full-scan variants",
    )
    parser.add_argument(
        "--gap-targets",
        nargs="*",
        type=float,
        default=[],
        help="certified relative gaps at which to compare each solver's fastest "
        "tolerance with svc's",
    )
    parser.add_argument(
        "--subset",
        type=int,
        default=0,
        help="train on this many training rows drawn with seed 0 (0: all)",
    )
    parser.add_argument(
        "--C",
        type=float,
        help="C on every dataset (default: "
        + ", ".join(f"{name} {C:g}" for name, (C, _) in SETTINGS.items())
        + ")",
    )
    parser.add_argument(
        "--data-dir", default=os.environ.get("SVMLAB_SHARED_DATA") or "../shared/data/libsvm"
    )
    args = parser.parse_args()
    ctx = mp.get_context("spawn")
    settings = {
        "paper_eps": args.paper_eps,
        "full_eps": args.full_eps,
        "full_stop": args.full_stop,
        "subset": args.subset,
    }
    print(
        f"# {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {platform.processor() or 'cpu'}, "
        f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}; *_full: "
        f"sampling='full', stop={args.full_stop}, eps={args.full_eps:g}; mfw, fw, cvm, "
        f"*_check: 59-point samples, stop=meb, eps={args.paper_eps:g}"
        + (f"; training rows: a seeded subset of {args.subset}" if args.subset else "")
    )
    print(
        "dataset  solver         C      gamma     fit_s(median)  ratio_to_svc  vs_cvm  "
        "test_acc  d_acc_pp  n_sv   peak_mb  notes"
    )
    for dataset in args.datasets:
        C, gamma = SETTINGS[dataset]
        C = C if args.C is None else args.C
        results = {solver: [] for solver in args.solvers}
        for seed in range(args.repeats):  # solvers interleaved: load changes hit all of them
            for solver in args.solvers:
                task = (dataset, C, gamma, solver, seed, args.data_dir, settings)
                with ctx.Pool(1) as pool:
                    results[solver].append(pool.apply(_fit_once, (task,)))
                last = results[solver][-1]
                print(
                    f"# {datetime.now(UTC):%H:%M:%S} {dataset} {solver} seed {seed}: "
                    f"{last['fit_s']:.2f} s (wall {last['wall_s']:.2f} s), rel gap "
                    f"{last['rel_gap']:.2g}, test acc "
                    f"{100 * last['acc']:.2f}, load average {os.getloadavg()[0]:.2f}",
                    file=sys.stderr,
                    flush=True,
                )
        median = {
            solver: statistics.median(r["fit_s"] for r in runs) for solver, runs in results.items()
        }
        base_t = median.get("svc", np.nan)  # svc at LIBSVM's default tol
        base_acc = statistics.median(r["acc"] for r in results.get("svc", [{"acc": np.nan}]))
        for solver, runs in results.items():
            t = median[solver]
            acc = statistics.median(r["acc"] for r in runs)
            cvm = median.get("cvm_full" if _certified(solver) else "cvm", np.nan)
            mid = partial(_median, runs)
            notes = (
                f"iters {mid('n_iter'):.0f}, converged "
                f"{sum(r['converged'] for r in runs)}/{len(runs)}, rel gap "
                f"{mid('rel_gap'):.2g}, fit_s {[round(r['fit_s'], 3) for r in runs]}"
            )
            if not solver.startswith("svc"):
                per_iter = statistics.median(r["evals"] / max(r["n_iter"], 1) for r in runs)
                notes = (
                    f"{'certified' if _certified(solver) else 'uncertified'}, {notes}, "
                    f"kernel evals {mid('evals'):.3g} ({per_iter:.3g} per iteration, "
                    f"{statistics.median(r['evals'] / r['need_evals'] for r in runs):.3g}"
                    f" x {runs[0]['need']}), cache hit {mid('hit_rate'):.2f}, final "
                    f"core {mid('core'):.0f}"
                )
            if solver.startswith("mfw") and dataset in ("ijcnn1", "w8a"):
                met = t / base_t <= TARGET_RATIO and abs(acc - base_acc) * 100 <= TARGET_PP
                notes += f"; target {'MET' if met else 'MISSED'}"
            print(
                f"{dataset:8s} {solver:14s} {C:<6g} {runs[0]['gamma']:<9.4g} {t:13.3f}  "
                f"{t / base_t:12.3f}  {t / cvm:6.3f}  {100 * acc:8.2f}  "
                f"{100 * (acc - base_acc):+8.2f}  "
                f"{statistics.median(r['n_sv'] for r in runs):5.0f}  "
                f"{statistics.median(r['peak_mb'] for r in runs):7.1f}  {notes}",
                flush=True,
            )
        _print_gap_targets(dataset, results, median, args.gap_targets)


def _print_gap_targets(dataset: str, results: dict, median: dict, targets: list) -> None:
    """Per solver and target gap: the fastest tolerance whose median certified relative gap is
    at most the target, and the ratio of its time to svc's fastest at the same target."""
    for target in targets:
        best = {}
        for solver, runs in results.items():
            name = solver.partition(":")[0]
            gap = statistics.median(r["rel_gap"] for r in runs)
            if gap <= target and median[solver] < best.get(name, ("", np.inf))[1]:
                best[name] = (solver, median[solver])
        svc = best.get("svc", ("none", np.nan))
        for name, (solver, t) in best.items():
            print(
                f"{dataset:8s} certified rel gap <= {target:g}: {name} fastest {solver} "
                f"{t:.3f} s, ratio to svc ({svc[0]}) {t / svc[1]:.3f}",
                flush=True,
            )
        missing = sorted({s.partition(":")[0] for s in results} - set(best))
        if missing:
            print(
                f"{dataset:8s} certified rel gap <= {target:g}: none of the tolerances of "
                f"{', '.join(missing)} reached it",
                flush=True,
            )


if __name__ == "__main__":
    main()
