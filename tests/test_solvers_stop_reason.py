"""Every family records why a fit stopped: a fit its cap stopped names the cap as
``max_<param>=<value>`` at the start of its stop reason (what workflows/claims.py reads as
capped), and a fit that met its own rule does not (the LIBSVM/LIBLINEAR baselines have their
own test in test_solvers_baselines.py)."""

import warnings

import pytest
from sklearn.exceptions import ConvergenceWarning

from svmlab.solvers.alm import SVMALM
from svmlab.solvers.budget import BSCA, BSGD
from svmlab.solvers.frank_wolfe import CoreVectorMachine, FrankWolfe, ModifiedFrankWolfe
from svmlab.solvers.l1_newton import L1NewtonSVM
from svmlab.solvers.nesvm import NESVM
from svmlab.solvers.pegasos import Pegasos
from svmlab.workflows.claims import CAPPED
from test_solvers_nesvm_math import make_problem

# (estimator stopped by its cap, the cap as it must open the stop reason, estimator whose own
# rule ends the fit)
CASES = {
    "pegasos_epochs": (
        Pegasos(epochs=1, tol=1e-9, random_state=0),
        "max_epochs=1",
        Pegasos(tol=0.5, random_state=0),
    ),
    "pegasos_steps": (
        Pegasos(max_iter=50, tol=1e-9, random_state=0),
        "max_iter=50",
        Pegasos(max_iter=100_000, tol=0.5, random_state=0),
    ),
    "bsca": (
        BSCA(budget=20, epochs=2, max_iter=30, random_state=0),
        "max_iter=30",
        BSCA(budget=20, epochs=1, random_state=0),
    ),
    "bsgd": (
        BSGD(budget=20, epochs=2, max_iter=30, random_state=0),
        "max_iter=30",
        BSGD(budget=20, epochs=1, random_state=0),
    ),
    "fw": (
        FrankWolfe(eps=1e-9, max_iter=3, random_state=0),
        "max_iter=3",
        FrankWolfe(random_state=0),
    ),
    "mfw": (
        ModifiedFrankWolfe(eps=1e-9, max_iter=3, random_state=0),
        "max_iter=3",
        ModifiedFrankWolfe(random_state=0),
    ),
    "cvm": (
        CoreVectorMachine(max_iter=2, random_state=0),
        "max_iter=2",
        CoreVectorMachine(random_state=0),
    ),
    "cvm_gap": (
        CoreVectorMachine(stop="gap", eps=1e-9, max_iter=2, random_state=0),
        "max_iter=2",
        CoreVectorMachine(stop="gap", eps=1e-2, random_state=0),
    ),
    "nesvm": (NESVM(eps=1e-12, max_iter=3), "max_iter=3", NESVM(eps=1e-2)),
    "alm": (SVMALM(tol_gap=1e-12, max_iter=3), "max_iter=3", SVMALM(tol_gap=1e-2)),
    "l1_newton": (L1NewtonSVM(tol=1e-14, max_newton=1), "max_newton=1", L1NewtonSVM()),
}


def fitted(model):
    X, y = make_problem(n=120, p=8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return model.fit(X, y)


@pytest.mark.parametrize("case", CASES)
def test_a_fit_stopped_by_its_cap_names_the_cap(case):
    model = fitted(CASES[case][0])
    assert not model.converged_
    assert model.stop_reason_.startswith(CASES[case][1]), model.stop_reason_
    assert model.stop_reason_.startswith("max_") and CAPPED.search(model.stop_reason_)


@pytest.mark.parametrize("case", CASES)
def test_a_fit_its_rule_ended_names_no_cap(case):
    model = fitted(CASES[case][2])
    assert model.converged_
    assert model.stop_reason_ is None or not CAPPED.search(model.stop_reason_), model.stop_reason_
