"""Warm starts: a fit that starts from another fit's solution (``fit``'s ``start``) reaches the
optimum a cold fit reaches, in every family that takes a start; it does start there; a start
that cannot serve is refused; and no analysis or claim reads a warm-started run's times."""

import warnings
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest
import yaml
from mlflow import MlflowClient
from sklearn.datasets import load_breast_cancer
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import StandardScaler

from svmlab import solvers
from svmlab.analysis import measurements
from svmlab.workflows import claims, spec

WARM = [cls for cls in solvers.registered().values() if cls.warm_startable]
#: each family's settings for a tight certified stop on the small problem below
TIGHT = {
    "fw": {"eps": 1e-3},
    "mfw": {"eps": 1e-3},
    "cvm": {"stop": "gap", "eps": 1e-3},
    "alm": {"tol_gap": 1e-3},
}


@pytest.fixture(scope="module")
def data():
    X, y = load_breast_cancer(return_X_y=True)
    return StandardScaler().fit_transform(X)[::2], y[::2]


def fitted(cls, C: float, X, y, start=None):
    model = cls(**cls.test_config[0] | TIGHT[cls.name] | {"C": C})
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        return model.fit(X, y, start=start)


def test_the_families_that_take_a_start():
    assert sorted(cls.name for cls in WARM) == sorted(TIGHT)


@pytest.mark.parametrize("cls", WARM, ids=lambda cls: cls.name)
def test_a_warm_started_fit_reaches_the_cold_fits_optimum_and_starts_at_its_start(cls, data):
    X, y = data
    smaller = fitted(cls, 0.5, X, y)
    cold, warm = fitted(cls, 4.0, X, y), fitted(cls, 4.0, X, y, start=smaller)
    assert (cold.warm_started_, warm.warm_started_) == (False, True)
    # both are certified within their own gap of the one optimum
    low = max(cold.certificate_.dual, warm.certificate_.dual)
    high = min(cold.certificate_.primal, warm.certificate_.primal)
    assert low <= high * (1 + 1e-12)
    assert (
        abs(warm.certificate_.primal - cold.certificate_.primal)
        <= cold.certificate_.gap + warm.certificate_.gap
    )
    # started at the optimum, a fit has less to do than from scratch
    again = fitted(cls, 4.0, X, y, start=cold)
    assert again.n_iter_ < cold.n_iter_


def test_a_start_that_cannot_serve_is_refused(data):
    X, y = data
    cold = solvers.registered()["libsvm"]()
    with pytest.raises(TypeError, match="cannot start from another fit"):
        cold.fit(X, y, start=cold)
    fw, cvm = (solvers.registered()[name] for name in ("fw", "cvm"))
    with pytest.raises(TypeError, match="start must be a fitted FrankWolfe"):
        fw(random_state=0).fit(X, y, start=cvm(random_state=0))
    narrow = fitted(fw, 1.0, X[:, :5], y)
    with pytest.raises(ValueError, match="start was fitted on 5 features, X has 30"):
        fw(random_state=0).fit(X, y, start=narrow)


def test_no_analysis_reads_a_warm_started_run(store):
    uri = f"sqlite:///{store}"
    client = MlflowClient(uri)
    experiment = client.create_experiment("paths")
    for warm, seconds in (("true", 0.1), (None, 2.0), (None, 3.0)):
        run = client.create_run(experiment, tags={"svmlab.warm_start": warm} if warm else {})
        client.log_metric(run.info.run_id, "fit_time_s", seconds)
        client.log_param(run.info.run_id, "solver", "cvm")
        client.set_terminated(run.info.run_id)
    runs, excluded = measurements.finished_runs(["paths"], "", uri)
    assert sorted(runs["metrics.fit_time_s"]) == [2.0, 3.0]
    assert excluded == {"warm-started": 1}


def test_no_claim_reads_a_warm_started_time():
    claim = spec.Claim(
        claim="CVM takes two seconds or more",
        source="Table 1",
        measure="fit_time_s",
        value={"solver": "cvm"},
        decide={"above": 1.5},
    )
    runs = pd.DataFrame(
        {
            "params.solver": ["cvm"] * 3,
            "params.dataset": ["a1a"] * 3,
            "params.seed": ["0", "1", "2"],
            "metrics.fit_time_s": [0.1, 2.0, 3.0],
            "tags.svmlab.warm_start": ["true", None, None],
        }
    )
    [judged] = claims.judge_all([claim], runs, lambda names: {})
    assert judged.n == 2 and judged.estimate[0] >= 2.0, judged


def test_a_selection_warm_starts_where_its_solver_can_unless_its_block_says_not(tmp_path):
    from svmlab.app import workflow_selection
    from svmlab.app.workflow import sweep_arguments

    workflows = Path(spec.__file__).parent
    storage = f"sqlite:///{tmp_path / 'optuna.db'}"
    for name, warm in (("fw_paper", True), ("fw_poly", False)):
        workflow = spec.load(str(workflows / f"{name}.yaml"))
        assert workflow.select.warm_start is warm
        arguments = sweep_arguments(workflow, "quick", f"sqlite:///{tmp_path / 'm.db'}", "basic")
        study = workflow_selection.study(workflow, "quick", arguments, "w1a", storage)
        assert study.warm_start is warm
    warmed = replace(workflow, select=replace(workflow.select, warm_start=True))
    warm = workflow_selection.study(warmed, "quick", arguments, "w1a", storage)
    assert warm.name != study.name  # a warm grid is another study

    content = yaml.safe_load((workflows / "fw_paper.yaml").read_text())
    content["select"]["warm_start"] = "yes"
    with pytest.raises(spec.WorkflowError, match=r"select.warm_start: true .* or false"):
        spec.parse(content, tmp_path / "bad.yaml")
