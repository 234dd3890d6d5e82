"""Each solver's default configuration against LIBLINEAR (linear) or LIBSVM (rbf) at the same C.

    python benchmarks/bench_defaults.py [--datasets ijcnn1 a9a w8a] [--solvers nesvm pegasos ...]

Every solver is built exactly as ``svmlab train solver=NAME kernel=K`` builds it (Hydra composes
the config, ``build_estimator`` instantiates it): C = 1 and, for the rbf kernel, gamma = 'scale'.
Linear solvers (nesvm, pegasos, alm_gap) are compared with liblinear's default (or libsvm's with
the linear kernel: --linear-reference libsvm), kernel solvers (fw, mfw, cvm) with libsvm's
default on the rbf kernel. Prints test accuracy, the difference in percentage
points to the reference (target: within 1 pp), the certified relative gap, converged and fit
time. w8a's test file is not in the shared folder: its rows are a seeded 80/20 split of w8a.
"""

from __future__ import annotations

import argparse
import os
import warnings

import numpy as np
from bench_data import load_split
from hydra import compose, initialize_config_module

from svmlab.app.config.schema import build_estimator, register_configs

LINEAR, KERNEL = ("nesvm", "pegasos", "alm_gap"), ("fw", "mfw", "cvm")
REFERENCE = {"linear": "liblinear", "rbf": "libsvm"}
TARGET_PP = 1.0


def default_estimator(solver: str, kernel: str):
    register_configs()
    with initialize_config_module("svmlab.conf", version_base="1.3"):
        return build_estimator(
            compose("config", overrides=[f"solver={solver}", f"kernel={kernel}"])
        )


def measure(solver: str, kernel: str, split) -> dict:
    X_train, y_train, X_test, y_test = split
    est = default_estimator(solver, kernel)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X_train, y_train)
    certificate = est.certificate_
    gaps = {certificate.formulation: certificate.rel_gap} if certificate else {}
    return {
        "acc": float(np.mean(est.predict(X_test) == y_test)),
        "fit_s": est.fit_time_s_,
        "converged": getattr(est, "converged_", None),
        "gaps": gaps,
        "warned": any("stopped before" in str(w.message) for w in caught),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["ijcnn1", "a9a", "w8a"])
    parser.add_argument("--solvers", nargs="+", default=[*LINEAR, *KERNEL])
    parser.add_argument(
        "--linear-reference",
        choices=["liblinear", "libsvm"],
        default="liblinear",
        help="the reference of the linear solvers (libsvm: SVC, linear kernel)",
    )
    parser.add_argument(
        "--data-dir",
        default=os.environ.get("SVMLAB_SHARED_DATA")
        or os.path.join(os.path.dirname(__file__), "../../shared/data/libsvm"),
    )
    args = parser.parse_args()
    REFERENCE["linear"] = args.linear_reference
    print(
        "| dataset | solver | kernel | test accuracy | reference | difference (pp) | within 1 pp "
        "| certified relative gap | converged | fit time (s) |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for dataset in args.datasets:
        split = load_split(dataset, args.data_dir)
        kernels = sorted({"linear" if s in LINEAR else "rbf" for s in args.solvers})
        refs = {k: measure(REFERENCE[k], k, split) for k in kernels}
        for k, r in refs.items():
            print(
                f"| {dataset} | {REFERENCE[k]} | {k} | {100 * r['acc']:.2f} % | | | "
                f"| {_gap(r)} | {r['converged']} | {r['fit_s']:.2f} |",
                flush=True,
            )
        for solver in args.solvers:
            kernel = "linear" if solver in LINEAR else "rbf"
            r, ref = measure(solver, kernel, split), refs[kernel]
            diff = 100 * (r["acc"] - ref["acc"])
            print(
                f"| {dataset} | {solver} | {kernel} | {100 * r['acc']:.2f} % | "
                f"{REFERENCE[kernel]} {100 * ref['acc']:.2f} % | {diff:+.2f} | "
                f"{'yes' if diff >= -TARGET_PP else 'NO'} | {_gap(r)} | {r['converged']} | "
                f"{r['fit_s']:.2f} |",
                flush=True,
            )


def _gap(result: dict) -> str:
    return ", ".join(f"{k} {v:.1e}" for k, v in result["gaps"].items())


if __name__ == "__main__":
    main()
