"""FW, MFW and CVM trace the certified L2-SVM gap of their iterate under every rule and search,
the paper's sampled ones included: at iterations spaced by GAP_CHECK_GROWTH and at the last
one, each the gap the end-of-fit certificate gives for that iterate, so that a run's time to a
gap is read from its trace rather than bounded by its fit time."""

import warnings
from itertools import pairwise

import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import ConvergenceWarning

from svmlab.analysis.precision import derive
from svmlab.solvers.frank_wolfe import CoreVectorMachine, FrankWolfe, ModifiedFrankWolfe
from svmlab.solvers.frank_wolfe.loops import GAP_CHECK_GROWTH
from test_solvers_frank_wolfe import problem

PAPER = {"stop": "meb", "eps": 1e-6, "sampling": "random", "final_full_check": False}
COMMON = {"C": 4.0, "gamma": 0.5, "random_state": 0}
SAMPLED = {
    "fw_paper": (FrankWolfe, PAPER),
    "mfw_paper": (ModifiedFrankWolfe, PAPER),
    "cvm": (CoreVectorMachine, {}),
}


@pytest.fixture(scope="module")
def data():
    return problem()


def fitted(case, data, **params):
    cls, settings = SAMPLED[case]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return cls(**COMMON, **settings, **params).fit(*data)


def spaced(last: int) -> list[int]:
    """The iterations 0, 1, ... spaced by GAP_CHECK_GROWTH below ``last``, then ``last``."""
    out, k = [], 0
    while k < last:
        out.append(k)
        k = max(k + 1, int(k * GAP_CHECK_GROWTH))
    return [*out, last]


@pytest.mark.parametrize("case", SAMPLED)
def test_sampled_runs_trace_their_gap_at_spaced_iterations_and_at_the_end(case, data):
    est = fitted(case, data)
    columns = est.trace_.columns()
    gap, rel = columns["gap_l2svm"], columns["rel_gap_l2svm"]
    traced = columns["iteration"][np.isfinite(gap)]
    assert est.n_iter_ > 30
    if case == "cvm":  # also where a level ended (a possible end), the spacing from there
        assert traced[0] == 0 and traced[-1] == est.n_iter_
        assert all(b <= max(a + 1, int(a * GAP_CHECK_GROWTH)) for a, b in pairwise(traced))
    else:
        assert traced.tolist() == spaced(est.n_iter_)
    assert np.all(gap[np.isfinite(gap)] >= 0)
    assert gap[-1] == pytest.approx(est.certificate_.gap, rel=1e-7)
    assert rel[-1] == pytest.approx(est.certificate_.rel_gap, rel=1e-7)


@pytest.mark.parametrize("case", ["fw_paper", "mfw_paper"])
def test_a_traced_gap_is_the_certificate_of_the_fit_stopped_there(case, data):
    """The same seed gives the same iterates up to a cap, so the gap traced at step k is the
    end-of-fit certificate of the fit capped at k steps."""
    columns = fitted(case, data).trace_.columns()
    for k in (7, 22):
        capped = fitted(case, data, max_iter=k)
        assert capped.n_iter_ == k
        row = np.flatnonzero(columns["iteration"] == k)[0]
        assert columns["gap_l2svm"][row] == pytest.approx(capped.certificate_.gap, rel=1e-7)


def test_time_to_gap_of_a_sampled_run_is_read_from_its_trace(data):
    est = fitted("fw_paper", data)
    trace = pd.DataFrame(est.trace_.columns())
    rel = trace["rel_gap_l2svm"]
    name = f"time_to_gap_{rel.dropna().median():.3g}"
    tol = float(name.rsplit("_", 1)[1])
    assert 0 < tol < 1
    first = trace[rel <= tol].iloc[0]
    runs = pd.DataFrame(
        {
            "run_id": ["r"],
            "tags.svmlab.formulation": ["l2svm"],
            "metrics.rel_gap_l2svm": [est.certificate_.rel_gap],
            "metrics.fit_time_s": [est.fit_time_s_],
            "metrics.n_iter": [est.n_iter_],
        }
    )
    values, notes = derive(
        runs, [name, name.replace("time", "iters")], None, lambda uri, run_id: trace
    )
    assert values[name][0] == first["time_s"] < est.fit_time_s_
    assert values[name.replace("time", "iters")][0] == first["iteration"] < est.n_iter_
    assert notes == []
