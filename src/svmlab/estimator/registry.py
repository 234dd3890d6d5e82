"""The solver registry: every solver svmlab knows, by the name ``solver=<name>`` selects, and the
kernels (``kernel=<name>``) the kernel solvers take.

An entry names the estimator class by its import path (classes are imported when asked for, so
that reading the registry loads no solver) and the settings the conformance suite trains it
with on small problems. ``conf/solver/<name>.yaml`` must exist for every entry and name the same
class; other files there are presets of a registered solver. Adding a solver family means one
package, one entry per solver here, its YAML files and its tests: the conformance suite
(``tests/test_conformance.py``) then runs over it like over every other solver.
"""

from __future__ import annotations

import difflib
import importlib
from dataclasses import dataclass, field

from svmlab.errors import ConfigError

KERNELS = ("linear", "rbf", "poly")  # conf/kernel/<name>.yaml and numerics.kernels follow this list
GAMMA_RULES = ("scale", "auto", "avg_sq_dist")  # data-dependent gammas (estimator.kernels)


@dataclass(frozen=True)
class SolverEntry:
    """One registered solver.

    ``target``: 'package.module.Class'. ``family``: the package that owns it. ``checks``: the
    parameter sets the conformance suite checks it with (the first one must fit small problems
    quickly and tightly). ``truncated``: parameters that stop it long before its stopping rule
    can hold (the suite expects a ConvergenceWarning). ``gap_tol``: the parameter holding the
    certified relative gap its converged_ stands for (its default is at most 1e-2); None where
    converged_ follows another rule: the reference libraries' own tolerances and the budgeted
    solvers, which run their epochs and report the gap their budgeted model certifies.
    """

    name: str
    target: str
    family: str
    checks: tuple[dict, ...] = ({},)
    truncated: dict = field(default_factory=lambda: {"max_iter": 1})
    gap_tol: str | None = None

    def load(self) -> type:
        """The estimator class."""
        module, _, name = self.target.rpartition(".")
        return getattr(importlib.import_module(module), name)


SOLVERS: dict[str, SolverEntry] = {}


def register(entry: SolverEntry) -> SolverEntry:
    """Add ``entry``; a name registered twice is an error."""
    if entry.name in SOLVERS:
        raise ValueError(f"solver {entry.name!r} is registered twice")
    SOLVERS[entry.name] = entry
    return entry


def get(name: str) -> SolverEntry:
    """The entry of ``name``; ConfigError naming the registered solvers otherwise."""
    if name in SOLVERS:
        return SOLVERS[name]
    close = difflib.get_close_matches(name, list(SOLVERS), n=3)
    hint = f" Did you mean {' or '.join(map(repr, close))}?" if close else ""
    raise ConfigError(f"unknown solver {name!r}; registered: {', '.join(sorted(SOLVERS))}.{hint}")


def by_target(target: str) -> SolverEntry | None:
    """The entry whose class is ``target``, if any."""
    return next((e for e in SOLVERS.values() if e.target == target), None)


for _entry in (
    SolverEntry("libsvm", "svmlab.solvers.baselines.Libsvm", "baselines",
                ({"tol": 1e-8}, {"kernel": "linear"}, {"kernel": "poly"})),
    SolverEntry("liblinear", "svmlab.solvers.baselines.Liblinear", "baselines",
                ({"tol": 1e-8, "max_iter": 100_000}, {"penalty": "l1"}, {"loss": "hinge"})),
    SolverEntry("nesvm", "svmlab.solvers.nesvm.NESVM", "nesvm",
                ({}, {"model": "lpsvm", "fit_intercept": True}, {"model": "lssvm"},
                 {"kernel": "rbf", "fit_intercept": True}), gap_tol="eps"),
    SolverEntry("pegasos", "svmlab.solvers.pegasos.Pegasos", "pegasos",
                ({"random_state": 0}, {"projection": False, "random_state": 0}), gap_tol="tol"),
    SolverEntry("fw", "svmlab.solvers.frank_wolfe.FrankWolfe", "frank_wolfe",
                ({"random_state": 0}, {"kernel": "linear", "max_iter": 500}), gap_tol="eps"),
    SolverEntry("mfw", "svmlab.solvers.frank_wolfe.ModifiedFrankWolfe", "frank_wolfe",
                ({"random_state": 0},), gap_tol="eps"),
    SolverEntry("cvm", "svmlab.solvers.frank_wolfe.CoreVectorMachine", "frank_wolfe",
                ({"random_state": 0},)),
    SolverEntry("bsca", "svmlab.solvers.budget.BSCA", "budget",
                ({"random_state": 0, "budget": 30, "epochs": 3},
                 {"random_state": 0, "budget": None, "epochs": 5, "kernel": "poly"})),
    SolverEntry("bsgd", "svmlab.solvers.budget.BSGD", "budget",
                ({"random_state": 0, "budget": 30, "epochs": 3},)),
    SolverEntry("l1_newton", "svmlab.solvers.l1_newton.L1NewtonSVM", "l1_newton",
                ({"lam": 1e-3, "mu": 1e-2, "eta": 1e-8, "alpha_min": 1e-6},
                 {"lam": 0.0, "mu": 1e-2}, {"path": 3}),
                {"max_newton": 1}, gap_tol="tol"),
    SolverEntry("alm", "svmlab.solvers.alm.SVMALM", "alm",
                ({"inner_steps": 5, "tol": 0.0, "tol_gap": 1e-6, "max_iter": 5000},
                 {"p": 1.5, "variant": "exact", "fit_intercept": False, "max_iter": 5000}),
                gap_tol="tol_gap"),
):
    register(_entry)
