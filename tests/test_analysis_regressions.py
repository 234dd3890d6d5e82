"""Regression tests of the analysis stage, each built from a failing input that was reported:
float noise deciding ranks, identical treatments in the Bayesian test, tiny designs, directed
hypotheses, practical equivalence, wording, rounding, effect sizes, incomplete tables and pooled
settings. References: scipy (permutation test, Wilcoxon), hand computation."""

import argparse
import itertools
import subprocess
import sys

import baycomp
import numpy as np
import pandas as pd
import pytest
from scipy import stats

from svmlab.analysis import (
    bayes,
    compare,
    friedman,
    hypotheses,
    measurements,
    profiles,
    report,
    stage,
    table,
    ties,
    wilcoxon,
)
from svmlab.app.analyze import add_parser
from svmlab.app.cli import run_command
from svmlab.errors import SvmlabError


def long_table(values: dict, measure: str = "m") -> pd.DataFrame:
    """{(block, treatment): [values per repetition]} in long format."""
    return pd.DataFrame(
        [
            {"block": b, "treatment": t, "repetition": i, measure: v}
            for (b, t), vs in values.items()
            for i, v in enumerate(vs)
        ]
    )


def analyze(values: dict, measure=None, **options):
    measure = measure or table.Measure("m", True)
    return compare.analyze_measure(
        long_table(values, measure.name), measure, compare.Options(bayes_samples=2000, **options)
    )


def svmlab(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="svmlab")
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(list(argv))
    return run_command(args)


# 1. float noise must not decide a rank --------------------------------------------------------

NOISY = {
    (f"b{i}", t): reps for i in range(6) for t, reps in (("A", [0.8, 0.9]), ("B", [0.85, 0.85]))
}


def test_float_noise_of_the_mean_does_not_decide_ranks():
    """mean(0.8, 0.9) = 0.8500000000000001 > 0.85 in floats: ranks 1 / 2 in every block, F = inf
    and a significant Nemenyi difference before; the values are equal."""
    assert np.mean([0.8, 0.9]) != 0.85  # the noise is there
    result = analyze(NOISY)
    assert result.mean_ranks.to_dict() == {"A": 1.5, "B": 1.5}
    assert (result.friedman.chi2, result.friedman.chi2_tied) == (0.0, 0.0)
    assert result.friedman.p_value == 1.0 and result.friedman.iman_davenport_p_tied == 1.0
    assert not result.nemenyi["significant@0.05"].any()
    assert result.nemenyi["p_value"].iloc[0] == 1.0
    row = result.pairwise.iloc[0]
    assert (row["n_zero"], row["p_value"]) == (6, 1.0)  # the same tolerance in Wilcoxon
    exact = analyze(NOISY, rtol=0)  # comparing exactly reproduces the old behaviour
    assert exact.mean_ranks.to_dict() == {"A": 1.0, "B": 2.0}


def test_tie_groups_are_anchored_and_relative():
    # 1, 1 + 5e-10, 1 + 1e-9 + 4e-10: the third is beyond the tolerance of the group's first
    np.testing.assert_array_equal(
        ties.merge([1 + 1.4e-9, 1.0, 1 + 5e-10], [1, 1, 1]), [1 + 1.4e-9, 1.0, 1.0]
    )
    np.testing.assert_array_equal(ties.rows(np.array([[1e6, 1e6 + 1e-4, 2e6]])), [[1e6, 1e6, 2e6]])
    np.testing.assert_array_equal(ties.merge([3.0, np.inf], [3.0, np.inf]), [3.0, np.inf])
    with pytest.raises(SvmlabError, match="tie tolerance must be a number in \\[0, 0.01\\]"):
        compare.Options(rtol=-1)


# 2. identical treatments in the Bayesian signed-rank test --------------------------------------


def test_bayesian_test_of_identical_treatments_is_symmetric():
    """All d = 0, ROPE 0: P(left) was 1 by argmax order, and swapping A and B kept it."""
    assert bayes.signed_rank(np.zeros(6), 0.0) == {"p_left": 0.5, "p_rope": 0.0, "p_right": 0.5}
    assert bayes.signed_rank(np.zeros(6), 0.01)["p_rope"] == 1.0
    same = {(f"b{i}", t): [0.7 + i / 10] for i in range(6) for t in "AB"}
    ab = analyze(same, table.Measure("m", True, 0.0)).pairwise.iloc[0]
    ba = analyze(
        same, table.Measure("m", True, 0.0), hypotheses=(hypotheses.parse("B!=A"),)
    ).pairwise.iloc[0]
    assert (ab["A"], ba["A"]) == ("A", "B")
    assert ab["share A better"] == ab["share B better"] == ba["share A better"] == 0.5


# 3. tiny designs -------------------------------------------------------------------------------


def test_three_blocks_two_treatments_use_the_exact_permutation_p():
    """A better in all 3 blocks: chi2 = 3, F(1, 2) = inf, p = 0 before; exactly, 2 of the 8
    sign patterns are as extreme, p = 0.25, and nothing is rejected at 0.05."""
    values = {(b, t): [v + i] for i, b in enumerate("xyz") for t, v in (("A", 0.9), ("B", 0.5))}
    result = analyze(values)
    f = result.friedman
    assert f.iman_davenport_f_tied == float("inf")  # still reported, not used
    assert (f.method, f.p_value) == ("exact", 0.25)
    assert bool(result.omnibus.set_index("test").loc["Friedman permutation (exact)", "decides"])
    assert "not rejected at alpha = 0.05" in report.conclusions(result, 0.05)[0]


def permutation_reference(values: np.ndarray) -> float:
    """scipy's permutation test of S = sum of squared rank sums, every arrangement enumerated."""

    def statistic(*samples, axis=-1):
        ranks = stats.rankdata(np.stack(samples), axis=0)
        return (ranks.sum(axis=-1) ** 2).sum(axis=0)

    return stats.permutation_test(
        tuple(values.T),
        statistic,
        permutation_type="samples",
        alternative="greater",
        vectorized=True,
        n_resamples=np.inf,
    ).pvalue


@pytest.mark.parametrize("n, k", [(3, 2), (5, 3), (3, 4), (6, 3)])
def test_exact_permutation_p_matches_scipy_with_ties(n, k):
    values = np.random.default_rng(n * k).integers(0, 3, size=(n, k)).astype(float)
    ranks = friedman.block_ranks(pd.DataFrame(values), higher_is_better=False)
    method, p = friedman.permutation_p(ranks.to_numpy())
    assert method == "exact"
    assert p == pytest.approx(permutation_reference(values), rel=1e-12)
    _, monte_carlo = friedman.permutation_p(ranks.to_numpy(), exact=False, samples=20000)
    assert monte_carlo == pytest.approx(p, abs=0.015)  # 4.5 standard errors at most


def test_friedman_method_is_chosen_like_the_wilcoxon_method():
    values = pd.DataFrame(np.random.default_rng(0).normal(size=(20, 3)))
    ranks = friedman.block_ranks(values, True)
    assert friedman.friedman(ranks).method == "iman-davenport"  # 20 blocks
    assert friedman.friedman(ranks.iloc[:15]).method == "exact"
    assert friedman.friedman(ranks, "monte-carlo").method == "monte-carlo"
    budget, friedman.EXACT_BUDGET = friedman.EXACT_BUDGET, 10
    try:
        assert friedman.friedman(ranks.iloc[:15]).method == "monte-carlo"
        with pytest.raises(SvmlabError, match="exceeds the work budget; use method 'monte-carlo'"):
            friedman.friedman(ranks.iloc[:15], "exact")
    finally:
        friedman.EXACT_BUDGET = budget
    with pytest.raises(SvmlabError, match="unknown Friedman method 'perm'; allowed: auto, exact"):
        friedman.friedman(ranks, "perm")


# 4. directed hypotheses, one orientation everywhere ---------------------------------------------


def test_a_directed_hypothesis_is_tested_alike_in_the_pairwise_and_control_tables():
    """--alternative greater --control CVM tested d = CVM - FW in one table and FW - CVM in the
    other; a hypothesis now fixes the pair's orientation and direction for both."""
    values = {
        (b, t): [v * (i + 1)]
        for i, b in enumerate("uvwxyz")
        for t, v in (("CVM", 3.0), ("FW", 1.0), ("MFW", 2.0))
    }
    result = analyze(
        values,
        table.Measure("time", False),
        control="CVM",
        hypotheses=(hypotheses.parse("time:CVM>FW"),),
    )
    pairs = result.pairwise.set_index(["A", "B"])
    control = result.control.set_index(["A", "B"])
    assert list(control.index) == [("CVM", "FW"), ("MFW", "CVM")]
    assert (
        control.loc[("CVM", "FW"), "alternative"]
        == pairs.loc[("CVM", "FW"), "alternative"]
        == "greater"
    )
    assert (
        control.loc[("CVM", "FW"), "p_wilcoxon"]
        == pairs.loc[("CVM", "FW"), "p_value"]
        == pytest.approx(1 / 64)
    )
    assert control.loc[("CVM", "FW"), "rank_difference"] == 2.0  # R_CVM - R_FW, same sign
    assert pairs.loc[("CVM", "FW"), "W+"] == 21  # d = CVM - FW > 0 in every block
    assert pairs.loc[("CVM", "FW"), "H1"].startswith("CVM has higher time than FW")


def test_hypotheses_are_checked():
    assert hypotheses.parse("fit_time_s:MFW<CVM") == hypotheses.Hypothesis(
        "MFW", "CVM", "less", "fit_time_s"
    )
    assert hypotheses.parse(" libsvm / rbf != liblinear ").b == "liblinear"
    for bad in ("MFW", "A<A", "A<<B"):
        with pytest.raises(SvmlabError, match="expected \\[MEASURE:\\]A<B, A>B or A!=B"):
            hypotheses.parse(bad)
    with pytest.raises(SvmlabError, match="unknown treatment\\(s\\) XX; treatments: A, B"):
        hypotheses.pairs(["A", "B"], "m", [hypotheses.parse("XX<A")])
    with pytest.raises(SvmlabError, match="two hypotheses for B and A on m"):
        hypotheses.pairs(["A", "B"], "m", [hypotheses.parse("A<B"), hypotheses.parse("B<A")])


# 5. ROPE defaults per measure ------------------------------------------------------------------


def test_times_within_ten_percent_are_equivalent_at_any_scale():
    """Times from 0.5 s to 2.5e5 s, B 2 % slower throughout: the default relative ROPE (10 % on
    log-ratios) concludes equivalence; an absolute ROPE on seconds cannot."""
    scale = np.geomspace(0.5, 2.5e5, 12)
    values = {
        (f"b{i}", t): [s * f] for i, s in enumerate(scale) for t, f in (("A", 1), ("B", 1.02))
    }
    relative = analyze(values, table.parse_measure("fit_time_s")).pairwise.iloc[0]
    assert relative["rope"] == "10%"
    assert relative["share equivalent"] > 0.99
    absolute = analyze(values, table.parse_measure("fit_time_s:lower:1")).pairwise.iloc[0]
    assert absolute["share equivalent"] < 0.5
    accuracy = table.parse_measure("test_accuracy")
    assert (accuracy.rope, accuracy.relative) == (0.01, False)  # one percentage point
    with pytest.raises(
        SvmlabError, match="relative ROPE \\(10%\\) compares log-ratios and needs positive values"
    ):
        analyze({**values, ("b0", "A"): [0.0]}, table.parse_measure("fit_time_s"))


def test_differences_of_exactly_one_rope_sit_on_its_bound():
    """Every A - B is 0.01 in decimals, 0.010000000000000009 in floats: the float noise put every
    Walsh average outside the default ROPE of test_accuracy (0.954 / 0.046 / 0 before); the
    bound takes the ranks' tie tolerance, so the decimal result 0 / 1 / 0 holds, as baycomp
    gives it for differences that are exactly 0.01."""
    a = [0.80, 0.71, 0.62, 0.93, 0.55, 0.87]
    b = [0.79, 0.70, 0.61, 0.92, 0.54, 0.86]
    assert (np.subtract(a, b) > 0.01).all()  # the noise is there
    values = {(f"b{i}", t): [v] for i, pair in enumerate(zip(a, b)) for t, v in zip("AB", pair)}
    row = analyze(values, table.parse_measure("test_accuracy")).pairwise.iloc[0]
    shares = [row["share A better"], row["share equivalent"], row["share B better"]]
    assert shares == [0.0, 1.0, 0.0]
    exact = baycomp.SignedRankTest.probs(np.zeros(6), np.full(6, 0.01), 0.01, nsamples=2000)
    np.testing.assert_array_equal(exact, [0.0, 1.0, 0.0])
    clear = {**values, **{(f"b{i}", "A"): [v + 0.001] for i, v in enumerate(a)}}
    row = analyze(clear, table.parse_measure("test_accuracy")).pairwise.iloc[0]
    assert row["share A better"] > 0.9  # 0.011 is outside the ROPE


# 6. wording --------------------------------------------------------------------------------------


def test_decisions_hypotheses_and_shares_are_worded_as_what_they_are(new_store, tmp_path, capsys):
    csv = tmp_path / "t.csv"
    pd.DataFrame(
        {
            "dataset": list("wxyzwxyz"),
            "solver": ["A"] * 4 + ["B"] * 4,
            "acc": [0.9, 0.8, 0.7, 0.6, 0.5, 0.55, 0.65, 0.7],
        }
    ).to_csv(csv, index=False)
    assert (
        svmlab(
            "analyze",
            "--csv",
            str(csv),
            "-m",
            "acc:higher",
            "--bayes-samples",
            "500",
            "--tracking-uri",
            f"sqlite:///{new_store(tmp_path / 'a.db')}",
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "keep" not in out and "0.05:not rejected" in out
    assert "H0: d symmetric about 0" in out
    assert "Iman-Davenport F(1, 3) from the tie-corrected chi2" in out
    assert "posterior shares A better / equivalent (ROPE 0) / B better" in out
    assert "omnibus p = 0.625 (Friedman permutation test, exact" in out


# 7. relative, not absolute, rounding -------------------------------------------------------------


def test_noise_is_removed_at_large_magnitudes_and_small_differences_are_kept():
    """Rounding to 10 decimals kept the noise of values ~1e7 (ulp 1.9e-9) and zeroed genuine
    differences of objective values ~1e-11."""
    large = np.array([(0.1 + 0.2) * 1e7, (0.7 + 0.1) * 3e7, sum([0.1] * 10) * 4e7])
    same = np.array([3e6, 2.4e7, 4e7])
    assert (np.abs(large - same) > 1e-10).all()  # noise beyond the 10th decimal
    assert wilcoxon.signed_rank_test(large, same).n_zero == 3
    small = np.array([1.2e-11, 2.2e-11, 3.2e-11, 4.2e-11, 0.6e-11])
    result = wilcoxon.signed_rank_test(small, np.full(5, 1e-12), alternative="greater")
    assert (result.n_zero, result.w_plus, result.p_value) == (0, 15, 1 / 32)
    assert (np.round(small - 1e-12, 10) == 0).all()  # what the rounding did


# 8. Hodges-Lehmann and the Pratt rank-biserial ----------------------------------------------------


def test_hodges_lehmann_interval_inverts_scipys_exact_signed_rank_test():
    """[lo, hi] holds exactly the shifts mu that scipy's exact two-sided test on d - mu does not
    reject at 1 - coverage (R's wilcox.test(conf.int = TRUE) builds it the same way)."""
    d = np.random.default_rng(11).normal(0.5, 1, 12)
    shift = wilcoxon.hodges_lehmann(d)
    i, j = np.triu_indices(12)
    assert shift["estimate"] == pytest.approx(np.median((d[i] + d[j]) / 2))
    # n = 12: P(W+ <= 13) = 87 / 4096 (enumerating the 4096 sign vectors), R's qsignrank = 14
    below = sum(
        sum(r for r, s in zip(range(1, 13), signs) if s) <= 13
        for signs in itertools.product((0, 1), repeat=12)
    )
    assert shift["coverage"] == pytest.approx(1 - 2 * below / 4096) == 1 - 2 * 87 / 4096
    alpha = 1 - shift["coverage"]
    for mu, inside in (
        (shift["low"] + 1e-9, True),
        (shift["high"] - 1e-9, True),
        (shift["low"] - 1e-9, False),
        (shift["high"] + 1e-9, False),
    ):
        p = stats.wilcoxon(d - mu, method="exact").pvalue
        assert (p > alpha + 1e-12) == inside, (mu, p)


def test_pratt_rank_biserial_counts_the_zeros_ranks():
    """d = (0, 1, -1, 2): ranks 1, 2.5, 2.5, 4; W+ = 6.5, W- = 2.5; r = 4 / 10 (was 4 / 9)."""
    pratt = wilcoxon.signed_rank_test([0, 1, -1, 2], [0, 0, 0, 0])
    assert pratt.rank_biserial == pytest.approx(0.4)
    wilcox = wilcoxon.signed_rank_test([0, 1, -1, 2], [0, 0, 0, 0], zero_method="wilcox")
    assert wilcox.rank_biserial == pytest.approx((4.5 - 1.5) / 6)


def test_hodges_lehmann_interval_is_exact_above_fifty_pairs():
    """n = 60: the normal approximation took w_(648), one below the exact order statistic
    w_(649); scipy's exact test at the bounds gives p = 1 - coverage just outside, more inside."""
    d = np.random.default_rng(60).normal(0.5, 1, 60)
    shift = wilcoxon.hodges_lehmann(d)
    i, j = np.triu_indices(60)
    walsh = np.sort((d[i] + d[j]) / 2)
    assert shift["low"] == walsh[648] and shift["high"] == walsh[len(walsh) - 649]
    alpha = 1 - shift["coverage"]
    assert 0.95 <= shift["coverage"] < 0.951
    for mu, inside in (
        (shift["low"] + 1e-9, True),
        (shift["high"] - 1e-9, True),
        (shift["low"] - 1e-9, False),
        (shift["high"] + 1e-9, False),
    ):
        p = stats.wilcoxon(d - mu, method="exact").pvalue
        assert (p > alpha * (1 + 1e-9)) == inside, (mu, p)
        if not inside:
            assert p == pytest.approx(alpha, rel=1e-9)


@pytest.mark.parametrize(
    "d, low, high, coverage",
    [
        ([1.0, 2, 4], 1.0, 4.0, 1 - 2 / 8),  # Walsh averages 1, 1.5, 2, 2.5, 3, 4
        ([0.3, -0.1, 0.7, 0.2, 0.5], -0.1, 0.7, 1 - 2 / 32),  # R: conf.level 0.94 and a warning
        ([0.3, -0.1, 0.7, 0.2, 0.5, 0.4], -0.1, 0.7, 1 - 2 / 64),  # 95 % attained
    ],
)
def test_too_few_pairs_for_the_level_widen_to_the_extremes_and_say_so(d, low, high, coverage):
    """NaN bounds for n <= 5 at 95 %, before; R widens to [min, max] and states the lower level
    it attains, 1 - 2 P(W+ = 0) = 1 - 2^(1-n)."""
    shift = wilcoxon.hodges_lehmann(np.array(d))
    assert (shift["low"], shift["high"]) == (low, high)
    assert shift["coverage"] == coverage
    row = {"ci_low": low, "ci_high": high, "ci_coverage": coverage}
    said = report._interval(row, 0.95)
    assert said.startswith(f", {100 * coverage:.1f} % CI [{low:.4g}, {high:.4g}]")
    assert ("95 % is not attainable with so few blocks" in said) == (coverage < 0.95)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_hodges_lehmann_refuses_what_is_not_a_number(bad):
    with pytest.raises(ValueError, match="Hodges-Lehmann estimate needs .* finite differences"):
        wilcoxon.hodges_lehmann(np.array([0.1, bad, 0.3]))


@pytest.mark.parametrize("bad", [0.0, -2.0, np.nan])
def test_performance_ratios_refuse_costs_that_are_not_positive(bad):
    costs = pd.DataFrame({"A": [1.0, 2.0], "B": [np.inf, bad]}, index=["x", "y"])
    with pytest.raises(
        ValueError,
        match=f"need positive costs \\(\\+inf for a failure\\); got {bad} for B on block y",
    ):
        profiles.ratios(costs)


def test_an_infinite_accuracy_is_not_called_a_target_never_reached():
    values = {(f"b{i}", t): [v] for i in range(4) for t, v in (("A", 0.9), ("B", 0.8 + i / 100))}
    values[("b0", "A")] = [np.inf]
    with pytest.warns(UserWarning) as caught:
        analyze(values, table.parse_measure("test_accuracy"))
    assert str(caught[0].message) == (
        "test_accuracy is infinite (treated as missing by the tests): b0: A"
    )


# 9. incomplete tables, tidy tables, pooled settings ----------------------------------------------


def test_too_few_complete_blocks_names_the_cells_and_the_filter():
    full = pd.DataFrame(
        {"liblinear": [0.9, 0.8], "libsvm": [0.95, np.nan], "nesvm": [0.85, 0.7]},
        index=["a1a", "australian"],
    )
    hint = table.incomplete_hint(full, {"block": ["tags.dataset"], "treatment": ["tags.solver"]})
    assert hint == (
        "; missing cells (block: treatments): australian: libsvm; to leave out the "
        "treatments missing somewhere: --filter \"tags.`solver` != 'libsvm'\""
    )
    long = pd.DataFrame(
        [
            {"block": b, "treatment": t, "m": v}
            for b, row in full.iterrows()
            for t, v in row.items()
            if pd.notna(v)
        ]
    )
    with pytest.raises(SvmlabError, match="missing cells .*australian: libsvm"):
        compare.analyze_measure(long, table.Measure("m", True), compare.Options(strict=True))
    with pytest.warns(UserWarning, match="leaving out the treatment\\(s\\) libsvm, which miss"):
        result = compare.analyze_measure(
            long, table.Measure("m", True), compare.Options(bayes_samples=200)
        )
    assert list(result.table.columns) == ["liblinear", "nesvm"]


def test_a_measure_too_small_to_test_is_left_out_while_others_are_analysed(tmp_path):
    """B never reached the gap target on two of three blocks: time_to_gap cannot be tested, the
    accuracy can; the analysis goes on and says which measure it left out."""
    csv = tmp_path / "t.csv"
    pd.DataFrame(
        {
            "dataset": list("xyzxyz"),
            "solver": list("AAABBB"),
            "acc": [0.9, 0.8, 0.7, 0.6, 0.5, 0.4],
            "time_to_gap_1e-3": [1, 2, 3, 4, np.inf, np.inf],
        }
    ).to_csv(csv, index=False)
    request = stage.Request(
        csv=str(csv),
        measures=[table.parse_measure("acc:higher"), table.parse_measure("time_to_gap_1e-3")],
    )
    analysis = stage.analyze(request, compare.Options(bayes_samples=200))
    assert [a.measure.name for a in analysis.measures] == ["acc"]
    assert any(
        w.startswith(
            "not analysed: time_to_gap_1e-3: need at least 2 treatments and 2 "
            "complete blocks; have 2 treatment(s) and 1"
        )
        for w in analysis.warnings
    )
    with pytest.raises(SvmlabError, match="missing cells .*: y: B; z: B"):  # strict: no skipping
        stage.analyze(request, compare.Options(bayes_samples=200, strict=True))


def test_tidy_csv_with_key_names(tmp_path):
    csv = tmp_path / "tidy.csv"
    pd.DataFrame(
        {
            "dataset": ["a", "a", "b", "b"],
            "solver": ["X", "Y", "X", "Y"],
            "measure": "acc",
            "value": [1, 2, 3, 4],
        }
    ).to_csv(csv, index=False)
    long = measurements.from_csv(csv, ["acc"]).long
    assert list(long[["block", "treatment", "acc"]].itertuples(index=False, name=None)) == [
        ("a", "X", 1),
        ("a", "Y", 2),
        ("b", "X", 3),
        ("b", "Y", 4),
    ]
    pd.concat([pd.read_csv(csv)] * 2).to_csv(csv, index=False)
    with pytest.raises(SvmlabError, match="rows repeat a cell.*own 'repetition' value"):
        measurements.from_csv(csv, ["acc"])


WIDE = "dataset,solver,seed,acc\nx,A,0,0.9\nx,B,0,0.8\ny,A,0,0.7\ny,B,0,0.6\n"


@pytest.mark.parametrize(
    "extra",
    [
        "y,B,0,0.6\n",  # an exact duplicate row
        "y,B,0,0.5\n",  # a second value for the same cell
        "y,B,0,0.6\ny,B,1,0.6\n",  # the same repetition id twice
    ],
    ids=["duplicate row", "two values", "repetition twice"],
)
@pytest.mark.parametrize("layout", ["wide", "tidy", "wide without seed"])
def test_a_repeated_cell_is_refused_in_every_layout(tmp_path, extra, layout):
    """Wide tables averaged repeated cells silently, where tidy ones were refused."""
    csv = tmp_path / "t.csv"
    csv.write_text(WIDE + extra)
    table_ = pd.read_csv(csv)
    if layout == "tidy":
        table_ = table_.melt(["dataset", "solver", "seed"], var_name="measure")
    elif layout == "wide without seed":
        table_ = table_.drop(columns="seed")
    table_.to_csv(csv, index=False)
    with pytest.raises(
        SvmlabError,
        match="[23] rows repeat a cell, e.g. {'block': 'y', 'treatment'"
        ": 'B'.*give each repetition its own 'repetition'",
    ):
        measurements.from_csv(csv, ["acc"])
    pd.read_csv(csv).drop_duplicates().iloc[:4].to_csv(csv, index=False)
    assert len(measurements.from_csv(csv, ["acc"]).long) == 4  # each cell once: accepted


def test_an_empty_label_is_named_by_its_row(tmp_path):
    """`,A,0.9`: a TypeError from sorting a float (NaN) among strings, before; now one line
    naming the row, status 2, from the real command; likewise under the key names."""
    csv = tmp_path / "t.csv"
    rows = "x,A,0.8\nx,B,0.7\ny,A,0.9\ny,B,0.6\n"
    csv.write_text("block,treatment,acc\n" + rows + ",A,0.9\n")
    done = subprocess.run(
        [sys.executable, "-m", "svmlab.app.cli", "analyze", "--csv", str(csv), "-m", "acc:higher"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        f"svmlab analyze: error: {csv}: row 5 after the header (',A,0.9') has an "
        f"empty block label (column 'block'); give every row its block\n"
    )
    csv.write_text("dataset,solver,acc\n" + rows.replace("y,B", "y, "))
    with pytest.raises(
        SvmlabError,
        match="row 4 after the header \\('y, ,0.6'\\) has an empty "
        "treatment label \\(column 'solver'\\)",
    ):
        measurements.from_csv(csv, ["acc"])


def test_runs_of_one_treatment_with_different_settings_are_named():
    runs = pd.DataFrame(
        {
            "params.solver.C": ["1.0", "10.0", "1.0"],
            "params.kernel.name": ["linear", "rbf", "linear"],
            "params.dataset.name": ["a", "b", "a"],
            "params.seed": ["0", "0", "1"],
            "tags.solver": ["libsvm", "libsvm", "liblinear"],
        }
    )
    found = measurements.confounds(
        runs, runs["tags.solver"].to_numpy(), {"tags.solver", "params.seed"}
    )
    assert found == {"libsvm": {"solver.C": ["1.0", "10.0"], "kernel.name": ["linear", "rbf"]}}
    message = measurements.confound_message(found)
    assert message.startswith(
        "treatment libsvm: runs differ in solver.C (1.0, 10.0), kernel.name"
        " (linear, rbf); their values are pooled as repetitions"
    )
    assert "--treatment solver --treatment kernel.name" in message


def test_a_table_without_a_complete_block_suggests_a_filter_that_leaves_one():
    """The default solver on the embedded data only, two baselines on two LIBSVM files: no block
    is complete, and neither leaving out blocks nor treatments alone helps; both together do."""
    full = pd.DataFrame(
        {
            "nesvm": [0.95, np.nan, np.nan],
            "liblinear": [np.nan, 0.8, 0.85],
            "libsvm": [np.nan, 0.82, 0.86],
        },
        index=["breast_cancer", "a1a", "heart"],
    )
    hint = table.incomplete_hint(full, {"block": ["tags.dataset"], "treatment": ["tags.solver"]})
    assert hint.endswith(
        '; a complete table of what remains: --filter "tags.`dataset` != '
        "'breast_cancer' and tags.`solver` != 'nesvm'\""
    )


def test_a_solver_that_rarely_reached_the_target_is_left_out_instead_of_every_block():
    """time_to_gap: C reached the target on one block only, B (the control) missed it on z: the
    blocks w, x, y compare A and B, instead of no comparison at all."""
    rows = [
        (b, t, v)
        for b, values in {
            "x": (1.0, 2.0, np.inf),
            "y": (2.0, 3.0, np.inf),
            "z": (1.5, np.inf, np.inf),
            "w": (1.0, 1.2, 5.0),
        }.items()
        for t, v in zip("ABC", values)
    ]
    long = pd.DataFrame(rows, columns=["block", "treatment", "time_to_gap_1e-2"])
    with pytest.warns(
        UserWarning, match="leaving out the treatment\\(s\\) C and the block\\(s\\) z"
    ):
        result = compare.analyze_measure(
            long,
            table.parse_measure("time_to_gap_1e-2"),
            compare.Options(control="B", bayes_samples=200),
        )
    assert list(result.table.columns) == ["A", "B"] and list(result.table.index) == ["w", "x", "y"]
    assert result.control is not None and result.dropped == {"z": ["B", "C"]}
