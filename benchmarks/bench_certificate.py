"""The end-of-fit certificate: its time and its certified gap, against the fit's time and
against the previous free-set refinement, in one run.

The hinge's free-set refinement (estimator/certificates.py) completes the model's dual point on
the points near the margin: a free set of d rows and m columns, m up to tens of thousands for
a model far from the optimum. With the l2 penalty and no free bias it now ascends the dual over the
free set (coordinate ascent, numerics/box_ascent.py, which Pegasos passes); the reference ("LP")
runs the same certificate with the previous refinement, the exact fit of largest sum (an LP, HiGHS)
where the optimality condition can be met and the bounded least-squares fit (trf) elsewhere. Cases:
- pegasos: ijcnn1, C = 1, seed 0, 5 epochs (the brief fit), and the alm_paper preset's
  Pegasos (its defaults: up to 100 epochs, tol 1e-2) at C = 1 and 10;
- nesvm: a9a, C = 1, NESVM's defaults (stop at a certified gap of 1e-2 of its quick bound),
  and nesvm_paper's settings (stop='paper', eps 1e-3, homotopy off, the paper's Lipschitz
  constant): a free bias, so the LP and trf as before;
- l1_newton: a9a, ijcnn1 and w8a (a seeded 80/20 split of its training file), its defaults,
  and on a9a l1_newton_paper's settings (lam 1e-4, mu 1e-2, eta 0.1, alpha_min 1e-4, tol 0):
  its certificate completes the dual point on the free set by a coordinate ascent of its own
  dual (solvers/l1_newton/certificate.py); the reference runs HiGHS' LP there (`LINPROG`);
- the other solvers' defaults: SVM-ALM and LIBLINEAR on a9a, the kernel solvers (FW, MFW, CVM,
  BSCA, BSGD, LIBSVM) on a3a (3,185 rows: their default fits on a9a take minutes).
Columns: the fit's median time over --repeats, the certificate's median time over the same
fits (`certificate_time_s_`, the time a run logs: at the fit's end, where the training rows'
decision values are already computed for the training metrics), their ratio, the certified
relative gap, and for the reference its time and gap once and the speed-up against the same
certificate timed the same way (called again on the fitted model, which recomputes f there).

    python benchmarks/bench_certificate.py [--data-dir ../shared/data/libsvm] [--repeats 3]
    python benchmarks/bench_certificate.py --cases pegasos_5 --no-reference
"""

import argparse
import os
import statistics
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from svmlab import data
from svmlab.estimator.formulations import L2
from svmlab.solvers.alm import SVMALM
from svmlab.solvers.baselines import Liblinear, Libsvm
from svmlab.solvers.budget import BSCA, BSGD
from svmlab.solvers.frank_wolfe import CoreVectorMachine, FrankWolfe, ModifiedFrankWolfe
from svmlab.solvers.l1_newton import L1NewtonSVM, certificate
from svmlab.solvers.nesvm import NESVM
from svmlab.solvers.pegasos import Pegasos

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "libsvm"
NESVM_PAPER = {
    "stop": "paper",
    "eps": 1e-3,
    "homotopy": "off",
    "lipschitz": "paper",
    "mu_target": 0.05,
    "nu_target": 0.05,
}
L1_NEWTON_PAPER = {"tol": 0.0, "alpha_min": 1e-4, "eta": 0.1}
W8A_SPLIT = {"test_fraction": 0.2}
CASES = {
    "pegasos_5": ("ijcnn1", lambda: Pegasos(C=1.0, epochs=5, random_state=0)),
    "pegasos_C1": ("ijcnn1", lambda: Pegasos(C=1.0, random_state=0)),
    "pegasos_C10": ("ijcnn1", lambda: Pegasos(C=10.0, random_state=0)),
    "nesvm": ("a9a", lambda: NESVM(C=1.0)),
    "nesvm_paper": ("a9a", lambda: NESVM(C=1.0, **NESVM_PAPER)),
    "l1_newton": ("a9a", lambda: L1NewtonSVM()),
    "l1_newton_paper": ("a9a", lambda: L1NewtonSVM(**L1_NEWTON_PAPER)),
    "l1_newton_ijcnn1": ("ijcnn1", lambda: L1NewtonSVM()),
    "l1_newton_w8a": ("w8a", lambda: L1NewtonSVM()),
    "alm": ("a9a", lambda: SVMALM()),
    "liblinear": ("a9a", lambda: Liblinear()),
    "fw": ("a3a", lambda: FrankWolfe(random_state=0)),
    "mfw": ("a3a", lambda: ModifiedFrankWolfe(random_state=0)),
    "cvm": ("a3a", lambda: CoreVectorMachine(random_state=0)),
    "bsca": ("a3a", lambda: BSCA(random_state=0)),
    "bsgd": ("a3a", lambda: BSGD(random_state=0)),
    "libsvm": ("a3a", lambda: Libsvm()),
}
SPLITS = {"w8a": W8A_SPLIT}  # load parameters: w8a has no test file here


def timed_certificate(model, X, y_pm, repeats):
    times, cert = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        cert = model._certificate(X, y_pm)
        times.append(time.perf_counter() - start)
    return statistics.median(times), cert


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=os.environ.get("SVMLAB_DATA_DIR", DEFAULT_DATA))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cases", nargs="+", choices=CASES, default=list(CASES))
    parser.add_argument("--no-reference", action="store_true", help="skip the LP reference")
    args = parser.parse_args()
    warnings.simplefilter("ignore", ConvergenceWarning)
    print(f"load average at start: {os.getloadavg()[0]:.1f}")
    print(
        f"{'case':16} {'data':7} {'fit s':>7} {'cert s':>8} {'ratio':>6} {'rel_gap':>10} "
        f"{'LP cert s':>10} {'LP rel_gap':>11} {'speed-up':>8}"
    )
    for name in args.cases:
        dataset, make = CASES[name]
        d = data.load(dataset, data_dir=args.data_dir, **SPLITS.get(dataset, {}))
        fits = [make().fit(d.X_train, d.y_train) for _ in range(args.repeats)]
        fit_s = statistics.median(fit.fit_time_s_ for fit in fits)
        cert_s = statistics.median(fit.certificate_time_s_ for fit in fits)
        model = fits[0]
        row = (
            f"{name:16} {dataset:7} {fit_s:7.2f} {cert_s:8.3f} "
            f"{cert_s / fit_s:6.2f} {model.certificate_.rel_gap:10.6f}"
        )
        if not args.no_reference:
            X, y_pm = (
                model._validated_X(d.X_train),
                np.where(d.y_train == model.classes_[1], 1.0, -1.0),
            )
            seconds, _ = timed_certificate(model, X, y_pm, args.repeats)
            L2.ascent, certificate.LINPROG = False, True
            try:
                old_seconds, old = timed_certificate(model, X, y_pm, 1)
            finally:
                L2.ascent, certificate.LINPROG = True, False
            row += f" {old_seconds:10.2f} {old.rel_gap:11.6f} {old_seconds / seconds:8.1f}"
        print(row, flush=True)
    print(f"load average at end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
