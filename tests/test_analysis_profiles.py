"""Measures at equal precision (time_to_gap, iters_to_gap from the trace), performance and data
profiles, and the styled HTML report, on tables and traces small enough to check by hand."""

import numpy as np
import pandas as pd
import pytest

from svmlab.analysis import compare, measurements, precision, profiles, report, table
from svmlab.errors import SvmlabError

INF = float("inf")


def test_performance_ratios_and_profiles_by_hand():
    """A costs 1, 4, inf (never reached) on three blocks, B 2, 2, 3."""
    costs = pd.DataFrame({"A": [1.0, 4.0, INF], "B": [2.0, 2.0, 3.0]}, index=list("xyz"))
    ratios = profiles.ratios(costs)
    np.testing.assert_array_equal(ratios.to_numpy(), [[1, 2], [2, 1], [INF, 1]])
    curves = profiles.profile(ratios)
    np.testing.assert_array_equal(curves["A"][0], [1, 2])  # the failure never enters
    np.testing.assert_allclose(curves["A"][1], [1 / 3, 2 / 3])
    np.testing.assert_allclose(curves["B"][1], [1 / 3, 2 / 3, 1])
    assert profiles.share_within(ratios, 1.0).to_dict() == pytest.approx({"A": 1 / 3, "B": 2 / 3})
    assert profiles.share_within(costs, 2.0).to_dict() == pytest.approx({"A": 1 / 3, "B": 2 / 3})
    unsolved = profiles.ratios(pd.DataFrame({"A": [INF, 1.0], "B": [INF, 3.0]}))
    assert np.isinf(unsolved.iloc[0]).all()  # nobody solved it: a failure for everyone


def test_first_reach_of_a_certified_gap():
    trace = pd.DataFrame(
        {
            "iteration": [0, 5, 10, 15],
            "time_s": [0.0, 0.5, 1.0, 1.5],
            "rel_gap_hinge_l2": [np.nan, 2e-2, np.nan, 5e-4],
        }
    )
    assert precision.first_reach(trace, "rel_gap_hinge_l2", 1e-2) == (1.5, 15.0)
    assert precision.first_reach(trace, "rel_gap_hinge_l2", 0.05) == (0.5, 5.0)
    assert precision.first_reach(trace, "rel_gap_hinge_l2", 1e-4) == (INF, INF)
    assert precision.parse("time_to_gap_1e-3") == ("time", 1e-3)
    assert precision.parse("iters_to_gap_0.01") == ("iters", 0.01)
    assert precision.parse("fit_time_s") is None
    with pytest.raises(SvmlabError, match="relative gap in \\(0, 1\\), e.g. time_to_gap_1e-3"):
        table.parse_measure("time_to_gap_tight")
    assert table.parse_measure("iters_to_gap_1e-3") == table.Measure(
        "iters_to_gap_1e-3", False, 0.1, True
    )


def test_derived_measures_from_traces_with_a_fallback_to_the_final_certificate():
    runs = pd.DataFrame(
        {
            "run_id": ["traced", "final-only", "not-reached", "uncertified"],
            "tags.svmlab.formulation": ["hinge_l2", "hinge_l2", "l2svm", None],
            "metrics.rel_gap_hinge_l2": [1e-5, 1e-4, np.nan, np.nan],
            "metrics.rel_gap_l2svm": [np.nan, np.nan, 0.5, np.nan],
            "metrics.fit_time_s": [9.0, 3.0, 4.0, 1.0],
            "metrics.n_iter": [90, 30, 40, 10],
        }
    )
    traces = {
        "traced": pd.DataFrame(
            {"iteration": [1, 2], "time_s": [0.1, 0.2], "rel_gap_hinge_l2": [1e-2, 1e-4]}
        ),
        "final-only": pd.DataFrame({"iteration": [1], "time_s": [0.1]}),
        "not-reached": pd.DataFrame({"iteration": [1], "time_s": [0.1], "rel_gap_l2svm": [0.5]}),
    }
    loaded = []

    def load(uri, run_id):
        loaded.append(run_id)
        return traces[run_id]

    values, notes = precision.derive(runs, ["time_to_gap_1e-3", "iters_to_gap_1e-3"], None, load)
    np.testing.assert_array_equal(values["time_to_gap_1e-3"], [0.2, 3.0, INF, np.nan])
    np.testing.assert_array_equal(values["iters_to_gap_1e-3"], [2, 30, INF, np.nan])
    assert loaded == ["traced", "final-only", "not-reached"]  # once per run
    assert notes[0].startswith(
        "1 run(s) reached a target only by their final certificate"
    ) and notes[0].endswith("final-only")
    assert notes[1].startswith("1 run(s) have no certificate") and notes[1].endswith("uncertified")
    # the trace never reaches 2e-5, the final certificate (1e-5) does: the fit time, an upper bound
    tight, _ = precision.derive(runs.iloc[:1], ["time_to_gap_2e-5"], None, load)
    assert tight["time_to_gap_2e-5"][0] == 9.0


def test_time_to_a_test_accuracy_from_the_traced_accuracies():
    """The first traced row at or above the accuracy; inf when none is; NaN without a traced
    accuracy (a solver that does not trace one)."""
    runs = pd.DataFrame({"run_id": ["bsca", "bsgd", "libsvm"]})
    traces = {
        "bsca": pd.DataFrame(
            {"iteration": [1, 2, 3], "time_s": [1.0, 2.0, 3.0], "test_accuracy": [0.90, 0.96, 0.97]}
        ),
        "bsgd": pd.DataFrame(
            {"iteration": [1, 2], "time_s": [0.5, 1.0], "test_accuracy": [0.90, 0.94]}
        ),
        "libsvm": pd.DataFrame({"iteration": [7], "time_s": [4.0]}),
    }
    values, notes = precision.derive(
        runs, ["time_to_acc_0.95", "iters_to_acc_0.95"], None, lambda uri, run_id: traces[run_id]
    )
    np.testing.assert_array_equal(values["time_to_acc_0.95"], [2.0, INF, np.nan])
    np.testing.assert_array_equal(values["iters_to_acc_0.95"], [2.0, INF, np.nan])
    assert notes == []
    assert precision.describe("time_to_acc_0.95") == "at a test accuracy of 0.95 (time to reach it)"
    assert precision.describe("fit_time_s") == "by fit_time_s"
    with pytest.raises(SvmlabError, match="test accuracy in \\(0, 1\\)"):
        precision.parse("time_to_acc_95")


def test_time_to_within_a_relative_distance_of_the_reference_optimum():
    """The paper's measure of Nie et al.: obj* is the least final objective among the runs of a
    dataset, C and seed (here the tight run's), whatever bias each run treats; a run whose trace
    never gets within tol is inf; another seed (a seeded split: other training data) has an
    optimum of its own."""
    runs = pd.DataFrame(
        {
            "run_id": ["alm", "liblinear", "loose", "other-C", "other-seed"],
            "tags.dataset": ["d"] * 5,
            "params.solver.C": ["1.0", "1.0", "1.0", "10.0", "1.0"],
            "tags.seed": ["0", "0", "0", "0", "1"],
            "tags.solver": ["alm", "liblinear", "pegasos", "alm", "alm"],
            "tags.svmlab.formulation": [
                "hinge_l2_bias",
                "hinge_l2_penalised_bias",
                "hinge_l2",
                "hinge_l2_bias",
                "hinge_l2_bias",
            ],
            "metrics.objective_hinge_l2": [101.0, 100.0, 130.0, 500.0, 120.0],
        }
    )
    traces = {
        "alm": pd.DataFrame(
            {
                "iteration": [1, 2, 3],
                "time_s": [0.1, 0.2, 0.3],
                "objective_hinge_l2": [150.0, 100.9, 101.0],
            }
        ),
        "liblinear": pd.DataFrame(
            {"iteration": [3, 9], "time_s": [0.4, 2.0], "objective_hinge_l2": [102.0, 100.0]}
        ),
        "loose": pd.DataFrame({"iteration": [1], "time_s": [0.1], "objective_hinge_l2": [130.0]}),
        "other-C": pd.DataFrame({"iteration": [1], "time_s": [0.5], "objective_hinge_l2": [500.0]}),
        "other-seed": pd.DataFrame(
            {"iteration": [1, 2], "time_s": [0.1, 0.3], "objective_hinge_l2": [121.0, 120.0]}
        ),
    }
    values, notes = precision.derive(
        runs, ["time_to_obj_1e-2", "iters_to_obj_1e-2"], None, lambda uri, run_id: traces[run_id]
    )
    np.testing.assert_array_equal(values["time_to_obj_1e-2"], [0.2, 2.0, INF, 0.5, 0.1])
    np.testing.assert_array_equal(values["iters_to_obj_1e-2"], [2, 9, INF, 1, 1])
    assert notes[0] == (
        "reference optimum objective_hinge_l2 = 100 for d, C = 1.0, seed 0: the "
        "final value of run liblinear (solver liblinear)"
    )
    assert "= 120 for d, C = 1.0, seed 1" in notes[-1]
    assert (
        precision.metric_of("objective", "squared_hinge_l2_penalised_bias")
        == "objective_squared_hinge_l2"
    )
    assert precision.metric_of("rel_gap", "unknown") is None
    assert table.parse_measure("time_to_obj_1e-2") == table.Measure(
        "time_to_obj_1e-2", False, 0.1, True
    )
    with pytest.raises(SvmlabError, match="relative distance to the optimum in \\(0, 1\\)"):
        precision.parse("time_to_obj_2")


def analysis_with_a_failure():
    values = {
        ("x", "A"): 1.0,
        ("x", "B"): 2.0,
        ("y", "A"): 4.0,
        ("y", "B"): 2.0,
        ("z", "A"): INF,
        ("z", "B"): 3.0,
        ("w", "A"): 2.0,
        ("w", "B"): 5.0,
    }
    long = pd.DataFrame(
        [
            {"block": b, "treatment": t, "repetition": 0, "time_to_gap_1e-3": v}
            for (b, t), v in values.items()
        ]
    )
    with pytest.warns(UserWarning) as caught:
        analysis = compare.analyze_measure(
            long, table.parse_measure("time_to_gap_1e-3"), compare.Options(bayes_samples=500)
        )
    return long, analysis, [str(w.message) for w in caught]


def test_a_target_never_reached_is_a_failure_in_the_profile_and_missing_in_the_tests():
    _, analysis, messages = analysis_with_a_failure()
    assert messages[0] == (
        "target never reached (treated as missing by the tests, as failures "
        "by the performance profiles): z: A"
    )
    assert list(analysis.table.index) == ["w", "x", "y"]  # z dropped from the tests
    assert analysis.profiled and analysis.costs.loc["z", "A"] == INF
    assert profiles.share_within(analysis.costs, INF).to_dict() == {"A": 0.75, "B": 1.0}


def test_styled_report_with_profiles(tmp_path, monkeypatch):
    long, analysis, _ = analysis_with_a_failure()
    titles = []

    def cd_diagram(mean_ranks, cd, title=""):  # the real figure; its title kept
        titles.append(title)
        return drawn(mean_ranks, cd, title)

    drawn = report.figures.cd_diagram
    monkeypatch.setattr(report.figures, "cd_diagram", cd_diagram)
    summary = report.write(
        tmp_path,
        measurements.Selection(long, "test"),
        [analysis],
        compare.Options(bayes_samples=500),
    )
    assert summary["measures"]["time_to_gap_1e-3"]["profile"] == {
        "n_blocks": 4,
        "fastest": {"A": 0.5, "B": 0.5},
        "done": {"A": 0.75, "B": 1.0},
    }
    folder = tmp_path / "time_to_gap_1e-3"
    for name in ("performance_profile", "data_profile", "cd_diagram"):
        assert (folder / f"{name}.png").stat().st_size > 5000
    assert pd.read_csv(folder / "performance_ratios.csv", index_col=0).loc["z", "A"] == INF
    page = (tmp_path / "report.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and "<style>" in page
    assert "<td class='keep'>not rejected</td>" in page
    assert "<img src='data:image/png;base64," in page  # embedded: the page alone is enough
    assert titles == ["time_to_gap_1e-3: mean ranks, Nemenyi CD = 1.132 at alpha = 0.05"]
    assert "alt='time_to_gap_1e-3: performance profile" in page
    assert "performance profile over 4 blocks, share best / done: A 0.50 / 0.75" in page
    assert "<section id='time_to_gap_1e-3'>" in page and "href='#time_to_gap_1e-3'" in page


def test_costs_equal_but_for_float_noise_are_both_best():
    """mean(0.1, 0.2) = 0.15000000000000002: A and B tie for best in the profile too."""
    long = pd.DataFrame(
        [
            {"block": b, "treatment": t, "repetition": i, "fit_time_s": v}
            for b in "xy"
            for t, reps in (("A", [0.1, 0.2]), ("B", [0.15, 0.15]), ("C", [1.0, 1.0]))
            for i, v in enumerate(reps)
        ]
    )
    analysis = compare.analyze_measure(
        long, table.parse_measure("fit_time_s"), compare.Options(bayes_samples=200)
    )
    best = profiles.share_within(profiles.ratios(analysis.costs), 1.0)
    assert best.to_dict() == {"A": 1.0, "B": 1.0, "C": 0.0}
