"""Core vector machine (Tsang, Kwok, Cheung), the baseline of the Frank-Wolfe paper (Algorithm 1).

The Badoiu-Clarkson core-set method on the L2-SVM / minimum-enclosing-ball problem of
`svmlab.solvers.frank_wolfe`: solve the QP on the core set exactly (SMO with second-order
working-set selection, warm-started), add the point furthest from the centre when it lies
outside B(c, (1 + eps) r), repeat. The core set grows by exactly one point per added point.
As in LibCVM, candidates are drawn from the points outside the core set, alternating between
the classes, in up to `sampling_rounds` rounds of `sample_size` points; the first round with a
violator supplies the point. With eps_annealing the tolerance starts at 0.1 and halves down to
eps. The inner SMO stops when max_{alpha_j > 0} G_j - min G <= tol r^2 / 2, so that at exit
every core point satisfies the same ball test as the others.

The MEB view needs a normalised kernel (k(x, x) constant), so CVM supports rbf only. Trace
columns and fitted attributes are those of FrankWolfe; iterations count the core QP solves, and
step_type 0 means a point was added, 3 that the annealed tolerance was tightened.
"""

from numbers import Integral
from typing import ClassVar

from sklearn.utils._param_validation import Interval, StrOptions

from svmlab.solvers.frank_wolfe import loops as meb
from svmlab.solvers.frank_wolfe.estimators import MEBSVMClassifier


class CoreVectorMachine(MEBSVMClassifier):
    """CVM: parameters as FrankWolfe's, plus eps_annealing and sampling_rounds (LibCVM: 7)."""

    supported_kernels = ("rbf",)
    _parameter_constraints: ClassVar[dict] = {
        **MEBSVMClassifier._parameter_constraints,
        "kernel": [StrOptions({"rbf"})],
        "eps_annealing": ["boolean"],
        "sampling_rounds": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(self, C=1.0, *, kernel="rbf", gamma="scale", degree=3, coef0=0.0, eps=1e-6,
                 init="random_meb", sampling="random", sample_size=59, sampling_rounds=7,
                 eps_annealing=True, cache_mb=200.0, max_iter=1_000_000, random_state=None):
        super().__init__(C, kernel, gamma, degree, coef0, eps, init, sampling, sample_size,
                         cache_mb, max_iter, random_state)
        self.sampling_rounds = sampling_rounds
        self.eps_annealing = eps_annealing

    def _stopping_rule(self) -> str:
        scan = "a full scan" if self.sampling == "full" else (
            f"{self.sampling_rounds} rounds of {self.sample_size} sampled points (uncertified)")
        return (f"no point outside B(c, (1 + eps) r) with eps={self.eps} over {scan}, within "
                f"max_iter={self.max_iter} added points")

    def _solve(self, buf, lru, kx, D, delta2, st, q, R, t0, rows):
        buf, q, R, _, converged, rows, n_rows = meb.run_cvm(
            buf, lru, kx, D, delta2, st, q, R, self.eps, self.eps_annealing, self._sample_size,
            self.sampling_rounds, self.max_iter, t0, rows, 0)
        return buf, q, R, converged, rows, n_rows
