"""Core vector machine (Tsang, Kwok, Cheung), the baseline of the Frank-Wolfe paper (Algorithm 1).

The Badoiu-Clarkson core-set method on the L2-SVM / minimum-enclosing-ball problem of
`svmlab.solvers.frank_wolfe`: solve the QP on the core set exactly (SMO with second-order
working-set selection, warm-started), add the point furthest from the centre when it lies
outside B(c, (1 + eps) r), repeat. The core set grows by exactly one point per added point.
As in LibCVM, candidates are drawn from the points outside the core set, alternating between
the classes, in up to `sampling_rounds` rounds of `sample_size` points; the first round with a
violator supplies the point. With eps_annealing the tolerance starts at 0.1 and halves down to
eps. The inner SMO stops when max_{alpha_j > 0} G_j - min G is at most the R - min G the stopping
rule allows (tol r^2 / 2 under 'meb'), so that at exit every core point passes the same test as
the others.

stop='gap' stops at a certified relative L2-SVM duality gap of at most eps instead, so that
CVM can be asked for the same precision as any other solver (LibCVM's ball accuracy is
relative to r^2, not to the SVM objective: on ijcnn1 at C = 32 no eps of it certifies 1e-2, on
a9a eps = 1e-3 stops at a gap of 3). With sampling='full' every step searches every point; with
the default sampling='random' LibCVM's sampled search and annealed levels drive the run, and
where they would end a level a search over every point outside the core certifies the iterate:
the run stops when the gap is at most eps, else the level ends all the same (halved, with no
lower bound at eps, which is the gap's tolerance) and that search's furthest point is added if
it violated the level.
The default stays stop='meb', LibCVM's rule, which the paper presets reproduce.

The MEB view needs a normalised kernel (k(x, x) constant), so CVM supports rbf only. Trace
columns and fitted attributes are those of FrankWolfe; iterations count the core QP solves, and
step_type 0 means a point was added, 3 that the annealed tolerance was tightened.
"""

from numbers import Integral
from typing import ClassVar

from sklearn.utils._param_validation import Interval, StrOptions

from svmlab.solvers.frank_wolfe import loops as meb
from svmlab.solvers.frank_wolfe.estimator import MEBSVMClassifier


class CoreVectorMachine(MEBSVMClassifier):
    """CVM: parameters as FrankWolfe's, plus eps_annealing and sampling_rounds (LibCVM: 7).
    stop='gap' (eps: the certified relative gap) certifies with a search over every point:
    at each step (sampling='full') or where the sampled rule ends a level (sampling='random')."""

    name = "cvm"
    test_config = ({"random_state": 0},)

    supported_kernels = ("rbf",)
    keeps_gradient = False
    _parameter_constraints: ClassVar[dict] = {
        **MEBSVMClassifier._parameter_constraints,
        "kernel": [StrOptions({"rbf"})],
        "eps_annealing": ["boolean"],
        "sampling_rounds": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(
        self,
        C=1.0,
        *,
        kernel="rbf",
        gamma="scale",
        degree=3,
        coef0=0.0,
        stop="meb",
        eps=1e-6,
        init="random_meb",
        sampling="random",
        sample_size=59,
        sampling_rounds=7,
        eps_annealing=True,
        cache_mb=200.0,
        max_iter=1_000_000,
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
        self.eps_annealing = eps_annealing

    _loop = staticmethod(meb.run_cvm)

    def _options(self) -> meb.Options:
        return meb.Options(
            False,
            self.stop == "gap",
            float(self.eps),
            self._sample_size,
            self.sampling_rounds,
            False,
            self.max_iter,
            0,
            self.sampling == "full",
        )

    def _first_level(self) -> float:
        """LibCVM's annealing starts at eps = 0.1."""
        return 0.1 if self.eps_annealing and self.eps < 0.1 else float(self.eps)

    def _stopping_rule(self) -> str:
        if self.sampling == "full":
            scan = "a full scan"
        elif self.stop == "gap":
            scan = (
                f"a full scan where {self.sampling_rounds} rounds of {self.sample_size} "
                "sampled points find no violator of the level"
            )
        else:
            scan = (
                f"{self.sampling_rounds} rounds of {self.sample_size} sampled points (uncertified)"
            )
        return f"{self._rule()} over {scan}, within max_iter={self.max_iter} added points"
