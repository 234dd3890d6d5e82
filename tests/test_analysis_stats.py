"""The statistical tests of the analysis stage against scipy.stats, statsmodels, scikit-posthocs,
baycomp, published tables, brute-force enumeration and small cases computed by hand."""

import itertools
import warnings

import baycomp
import numpy as np
import pandas as pd
import pytest
import scikit_posthocs
from scipy import stats
from statsmodels.stats.multitest import multipletests

from svmlab.analysis import bayes, compare, friedman, posthoc, table, ties, wilcoxon
from svmlab.errors import SvmlabError


def brute_force_w_plus(ranks) -> dict[float, float]:
    """P(W+ = w) by enumerating all 2^n sign vectors."""
    counts: dict[float, float] = {}
    for signs in itertools.product((0, 1), repeat=len(ranks)):
        w = float(np.dot(signs, ranks))
        counts[w] = counts.get(w, 0) + 0.5 ** len(ranks)
    return counts


# -- exact distribution ------------------------------------------------------------------------


def test_exact_distribution_with_ties_by_hand():
    """Ranks 1.5, 1.5, 3: W+ in {0, 1.5, 1.5, 3, 3, 4.5, 4.5, 6} over the 8 sign vectors."""
    dist = wilcoxon.exact_distribution([1.5, 1.5, 3.0])
    assert len(dist) == 13  # 2 W+ = 0..12
    expected = np.zeros(13)
    expected[[0, 3, 6, 9, 12]] = [1, 2, 2, 2, 1]
    np.testing.assert_array_equal(dist, expected / 8)


def test_exact_distribution_matches_enumeration_with_ties_and_zeros():
    rng = np.random.default_rng(3)
    d = rng.integers(-3, 4, size=12).astype(float)  # many ties and zeros
    for zero_method in wilcoxon.ZERO_METHODS:
        ranks, _, _ = wilcoxon.signed_ranks(d, zero_method)
        dist = wilcoxon.exact_distribution(ranks)
        for w, p in brute_force_w_plus(ranks).items():
            assert dist[round(2 * w)] == pytest.approx(p, abs=1e-15)
        assert dist.sum() == pytest.approx(1.0)


def test_exact_p_with_ties_and_zeros_by_hand():
    """d = (0, 1, -1, 2), Pratt: ranks of |d| are 1, 2.5, 2.5, 4; the zero is dropped, so
    W+ = 2.5 + 4 = 6.5; over the 8 signs of (2.5, 2.5, 4) W+ takes 0, 2.5, 2.5, 4, 5, 6.5, 6.5, 9,
    so P(W+ >= 6.5) = 3/8."""
    result = wilcoxon.signed_rank_test([0, 1, -1, 2], [0, 0, 0, 0], alternative="greater")
    assert (result.w_plus, result.w_minus, result.n, result.n_zero) == (6.5, 2.5, 3, 1)
    assert result.p_value == pytest.approx(3 / 8)
    wilcox = wilcoxon.signed_rank_test(
        [0, 1, -1, 2], [0, 0, 0, 0], alternative="greater", zero_method="wilcox"
    )
    assert (wilcox.w_plus, wilcox.w_minus) == (4.5, 1.5)  # ranks 1.5, 1.5, 3 without the zero
    zsplit = wilcoxon.signed_rank_test(
        [0, 1, -1, 2], [0, 0, 0, 0], alternative="greater", zero_method="zsplit"
    )
    assert (zsplit.w_plus, zsplit.w_minus) == (7.0, 3.0)  # the zero's rank 1 split in halves
    assert zsplit.p_value == pytest.approx(3 / 8)  # the split half is a constant shift


@pytest.mark.parametrize("alternative", wilcoxon.ALTERNATIVES)
def test_exact_without_ties_matches_scipy(alternative):
    rng = np.random.default_rng(0)
    for n in (5, 12, 25):
        a, b = rng.normal(size=n), rng.normal(0.3, size=n)
        ours = wilcoxon.signed_rank_test(a, b, alternative=alternative)
        theirs = stats.wilcoxon(a, b, alternative=alternative, method="exact")
        assert ours.method == "exact"
        assert ours.p_value == pytest.approx(theirs.pvalue, rel=1e-10)


@pytest.mark.parametrize("zero_method", ["pratt", "wilcox"])
@pytest.mark.parametrize("alternative", wilcoxon.ALTERNATIVES)
@pytest.mark.parametrize("continuity", [True, False])
def test_normal_approximation_with_ties_and_zeros_matches_scipy(
    zero_method, alternative, continuity
):
    rng = np.random.default_rng(1)
    a, b = rng.integers(0, 6, 60).astype(float), rng.integers(0, 6, 60).astype(float)
    ours = wilcoxon.signed_rank_test(
        a, b, alternative=alternative, zero_method=zero_method, continuity=continuity
    )
    theirs = stats.wilcoxon(
        a,
        b,
        alternative=alternative,
        zero_method=zero_method,
        method="approx",
        correction=continuity,
    )
    assert ours.method == "normal"  # chosen automatically: more than 50 ranked differences
    assert ours.w_plus == theirs.statistic
    assert ours.z == pytest.approx(theirs.zstatistic, rel=1e-12)
    assert ours.p_value == pytest.approx(theirs.pvalue, rel=1e-12)


def test_zsplit_normal_approximation_uses_the_moments_of_the_exact_distribution():
    """Under zsplit the zeros' half-ranks are constants, so mean and variance are those of the
    exact conditional distribution (scipy also counts the zeros' ranks in the variance)."""
    d = np.array([0, 0, 1, -1, 2, 3, -3, 3, 4, 5, -6, 2], float)
    ranks, _, _ = wilcoxon.signed_ranks(d, "zsplit")
    dist = wilcoxon.exact_distribution(ranks)
    support = np.arange(len(dist)) / 2
    mean, var = dist @ support, dist @ support**2 - (dist @ support) ** 2
    result = wilcoxon.signed_rank_test(
        d,
        np.zeros_like(d),
        zero_method="zsplit",
        method="normal",
        alternative="greater",
        continuity=False,
    )
    w = result.w_plus - 1.5  # W+ minus the zeros' halves (the zeros have ranks 1.5, 1.5)
    assert result.z == pytest.approx((w - mean) / np.sqrt(var), rel=1e-12)


def test_auto_switches_to_the_normal_approximation_above_the_threshold():
    rng = np.random.default_rng(2)
    d = rng.normal(size=60)
    assert wilcoxon.signed_rank_test(d[:50], np.zeros(50)).method == "exact"
    assert wilcoxon.signed_rank_test(d[:51], np.zeros(51)).method == "normal"
    assert wilcoxon.signed_rank_test(d, np.zeros(60), method="exact").method == "exact"
    assert wilcoxon.signed_rank_test(d[:10], np.zeros(10), exact_max_n=5).method == "normal"


def test_tie_tolerance_restores_zeros_and_ties_lost_to_float_noise():
    a = np.array([0.1 + 0.2, 0.7, 0.4, 0.9])
    b = np.array([0.3, 0.6, 0.3, 0.1])
    assert wilcoxon.signed_rank_test(a, b).n_zero == 1  # 0.1 + 0.2 - 0.3 = 5.6e-17
    assert wilcoxon.signed_rank_test(a, b, rtol=0).n_zero == 0
    ranks, _, _ = wilcoxon.signed_ranks(ties.differences(a, b), "wilcox")
    np.testing.assert_array_equal(ranks, [1.5, 1.5, 3])  # 0.7-0.6 and 0.4-0.3 tie


def test_effect_sizes_by_hand():
    result = wilcoxon.signed_rank_test([3, 5, 1, 8], [1, 1, 2, 1])  # d = 2, 4, -1, 7
    assert (result.w_plus, result.w_minus) == (9, 1)
    assert result.rank_biserial == pytest.approx((9 - 1) / 10)
    # d = 1, 2, 4: Walsh averages 1, 1.5, 2, 2.5, 3, 4; their median 2.25
    assert wilcoxon.hodges_lehmann(np.array([1.0, 2, 4]))["estimate"] == 2.25
    # n = 2, too few for 95 %: the widest interval, [1, 2], of coverage 1 - 2 P(W+ = 0) = 1/2
    assert wilcoxon.hodges_lehmann(np.array([1.0, 2])) == {
        "estimate": 1.5,
        "low": 1.0,
        "high": 2.0,
        "coverage": 0.5,
    }


def test_censored_differences_bound_the_estimate_and_the_interval():
    """Without censoring the bounds are hodges_lehmann's; a difference known only to be at
    least 3 (or at most 0) moves the estimate and the interval ends to every value they can
    take, and no further."""
    d = np.array([0.5, 1.0, 2.0, 3.5, 1.5, 0.2, 2.5, 1.1])
    plain = wilcoxon.hodges_lehmann(d)
    same = wilcoxon.hodges_lehmann_bounds(d, d)
    assert same == {
        "estimate_low": plain["estimate"],
        "estimate_high": plain["estimate"],
        "low": plain["low"],
        "high": plain["high"],
        "coverage": plain["coverage"],
    }
    high = d.copy()
    high[0] = np.inf
    low = d.copy()
    low[0] = 3.0  # at least 3
    censored = wilcoxon.hodges_lehmann_bounds(low, high)
    for value in (3.0, 10.0, 1e6):  # any value it may have lies within the bounds
        shift = wilcoxon.hodges_lehmann(np.where(np.arange(len(d)) == 0, value, d))
        assert censored["estimate_low"] <= shift["estimate"] <= censored["estimate_high"]
        assert censored["low"] <= shift["low"] and shift["high"] <= censored["high"]
    assert censored["estimate_low"] == wilcoxon.hodges_lehmann(low)["estimate"]
    below = wilcoxon.hodges_lehmann_bounds(
        np.where(np.arange(8) == 0, -np.inf, d), np.where(np.arange(8) == 0, 0.0, d)
    )
    assert (
        below["low"] == -np.inf
        and below["high"] == wilcoxon.hodges_lehmann(np.where(np.arange(8) == 0, 0.0, d))["high"]
    )
    with pytest.raises(SvmlabError, match="censored differences need bounds low <= high"):
        wilcoxon.hodges_lehmann_bounds(high, low)


def test_hypothesis_in_words():
    words = wilcoxon.hypothesis("FW", "CVM", "fit_time_s", False, "less")
    assert words == {
        "H0": "d = FW - CVM on fit_time_s is symmetric about 0",
        "H1": "FW has lower fit_time_s than CVM (d = FW - CVM tends to be negative): FW is better",
    }
    assert wilcoxon.hypothesis("FW", "CVM", "acc", True, "less")["H1"].endswith("FW is worse")
    assert wilcoxon.hypothesis("A", "B", "acc", True, "two-sided")["H1"] == (
        "d = A - B on acc is not symmetric about 0"
    )


def test_bad_choices_name_what_is_allowed():
    with pytest.raises(SvmlabError, match="zero_method 'drop'.*pratt, wilcox, zsplit"):
        wilcoxon.signed_rank_test([1, 2], [0, 0], zero_method="drop")
    with pytest.raises(SvmlabError, match="alternative 'lower'"):
        wilcoxon.signed_rank_test([1, 2], [0, 0], alternative="lower")
    with pytest.raises(SvmlabError, match="equal length"):
        wilcoxon.signed_rank_test([1, 2], [0])
    with pytest.raises(SvmlabError, match="NaN"):
        wilcoxon.signed_rank_test([1, np.nan], [0, 0])


# -- Friedman ------------------------------------------------------------------------------------


def test_friedman_with_ties_matches_scipy_and_the_formula_without():
    rng = np.random.default_rng(4)
    values = pd.DataFrame(rng.integers(0, 4, size=(15, 4)).astype(float))
    ranks = friedman.block_ranks(values, higher_is_better=True)
    result = friedman.friedman(ranks)
    scipy_result = stats.friedmanchisquare(*values.to_numpy().T)  # tie-corrected
    assert result.chi2_tied == pytest.approx(scipy_result.statistic, rel=1e-12)
    assert result.chi2_tied_p == pytest.approx(scipy_result.pvalue, rel=1e-10)
    r_sums = ranks.sum().to_numpy()  # Friedman's form: 12/(Nk(k+1)) sum R_j^2 - 3N(k+1)
    assert result.chi2 == pytest.approx(12 / (15 * 4 * 5) * (r_sums**2).sum() - 3 * 15 * 5)
    f = (15 - 1) * result.chi2 / (15 * 3 - result.chi2)
    assert result.iman_davenport_f == pytest.approx(f)
    assert result.iman_davenport_p == pytest.approx(stats.f.sf(f, 3, 3 * 14))


def test_ranks_follow_the_direction_and_average_ties():
    values = pd.DataFrame({"a": [0.9, 0.5], "b": [0.8, 0.5], "c": [0.7, 0.6]})
    np.testing.assert_array_equal(friedman.block_ranks(values, True), [[1, 2, 3], [2.5, 2.5, 1]])
    np.testing.assert_array_equal(friedman.block_ranks(values, False), [[3, 2, 1], [1.5, 1.5, 3]])


def test_identical_rankings_give_an_infinite_iman_davenport_f():
    ranks = friedman.block_ranks(pd.DataFrame([[1, 2, 3]] * 4), True)
    result = friedman.friedman(ranks)
    assert result.chi2 == pytest.approx(8.0)  # N(k-1), the maximum
    assert (result.iman_davenport_f, result.iman_davenport_p) == (float("inf"), 0.0)


# -- post-hoc ----------------------------------------------------------------------------------


def test_nemenyi_matches_scikit_posthocs():
    rng = np.random.default_rng(5)
    shifts = np.array([0, 0.3, 0.6, 1.2])
    values = pd.DataFrame(rng.normal(size=(20, 4)) + shifts, columns=list("ABCD"))
    ranks = friedman.block_ranks(values, higher_is_better=True)
    ours = posthoc.nemenyi(ranks.mean(), n_blocks=20)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = scikit_posthocs.posthoc_nemenyi_friedman(values.to_numpy())
    for row in ours.itertuples():
        i, j = "ABCD".index(row.A), "ABCD".index(row.B)
        assert row.p_value == pytest.approx(theirs.iloc[i, j], rel=1e-6, abs=1e-12)


@pytest.mark.parametrize(
    "k, q05, q10",
    [
        (2, 1.960, 1.645),
        (3, 2.343, 2.052),
        (4, 2.569, 2.291),
        (5, 2.728, 2.459),
        (10, 3.164, 2.920),
    ],
)
def test_nemenyi_critical_values_of_demsar_table_5a(k, q05, q10):
    scale = posthoc.rank_se(n_blocks=1, n_treatments=k)
    assert posthoc.nemenyi_cd(1, k, 0.05) / scale == pytest.approx(q05, abs=1e-3)
    assert posthoc.nemenyi_cd(1, k, 0.10) / scale == pytest.approx(q10, abs=1e-3)


@pytest.mark.parametrize("k, q05", [(2, 1.960), (3, 2.241), (4, 2.394), (5, 2.498), (10, 2.773)])
def test_bonferroni_dunn_critical_values_of_demsar_table_5b(k, q05):
    scale = posthoc.rank_se(n_blocks=1, n_treatments=k)
    assert posthoc.bonferroni_dunn_cd(1, k, 0.05) / scale == pytest.approx(q05, abs=1e-3)


def test_holm_matches_statsmodels():
    p = np.random.default_rng(6).uniform(0, 0.1, size=10)
    np.testing.assert_allclose(posthoc.holm(p), multipletests(p, method="holm")[1], rtol=1e-12)


def test_shaffer_by_hand_and_never_above_holm():
    """k = 3: at most 3, 1, 1 hypotheses can be true in turn; k = 4: S = {0, 1, 2, 3, 6}."""
    assert posthoc._true_counts(3) == {0, 1, 3}
    assert posthoc._true_counts(4) == {0, 1, 2, 3, 6}
    np.testing.assert_allclose(posthoc.shaffer([0.01, 0.02, 0.04], 3), [0.03, 0.03, 0.04])
    p = np.array([0.001, 0.01, 0.02, 0.03, 0.04, 0.05])
    np.testing.assert_allclose(
        posthoc.shaffer(p, 4), [0.006, 0.03, 0.06, 0.09, 0.09, 0.09]
    )  # times 6, 3, 3, 3, 2, 1
    assert (posthoc.shaffer(p, 4) <= posthoc.holm(p)).all()
    with pytest.raises(SvmlabError, match="all 6 pairwise p-values"):
        posthoc.shaffer(p[:5], 4)


def test_versus_control_by_hand():
    mean_ranks = pd.Series({"A": 1.0, "B": 2.0, "C": 3.0})
    result = posthoc.versus_control(mean_ranks, n_blocks=6, control="A")
    se = np.sqrt(3 * 4 / 36)
    np.testing.assert_allclose(result["z"], [1 / se, 2 / se])
    np.testing.assert_allclose(result["p_value"], 2 * stats.norm.sf([1 / se, 2 / se]))
    with pytest.raises(SvmlabError, match="unknown control 'D'; treatments: A, B, C"):
        posthoc.versus_control(mean_ranks, 6, "D")


def test_nemenyi_groups_are_the_maximal_cliques_of_the_cd_diagram():
    ranks = pd.Series({"a": 1.0, "b": 1.4, "c": 2.2, "d": 3.5})
    assert posthoc.nemenyi_groups(ranks, cd=1.25) == [["a", "b", "c"]]
    assert posthoc.nemenyi_groups(ranks, cd=0.9) == [["a", "b"], ["b", "c"]]
    assert posthoc.nemenyi_groups(ranks, cd=0.1) == []


# -- Bayesian signed-rank ------------------------------------------------------------------------


@pytest.mark.parametrize("rope", [0.0, 0.005])
def test_bayesian_signed_rank_matches_baycomp(rope):
    rng = np.random.default_rng(7)
    a = rng.normal(0.8, 0.05, 20)
    b = a - rng.normal(0.004, 0.01, 20)
    ours = bayes.signed_rank(a - b, rope, n_samples=50000)
    theirs = baycomp.SignedRankTest.probs(b, a, rope, nsamples=50000, random_state=1)
    if rope == 0:
        theirs = (theirs[0], 0.0, theirs[1])
    np.testing.assert_allclose([ours["p_left"], ours["p_rope"], ours["p_right"]], theirs, atol=0.01)


def test_bayesian_signed_rank_limits():
    clear = bayes.signed_rank(np.linspace(0.5, 1.0, 30), rope=0.01)
    assert clear["p_right"] > 0.999
    equivalent = bayes.signed_rank(np.linspace(-0.001, 0.001, 30), rope=0.01)
    assert equivalent["p_rope"] > 0.999
    with pytest.raises(SvmlabError, match="rope must be >= 0"):
        bayes.signed_rank([0.1, 0.2], rope=-1)


# -- tables and the whole protocol ---------------------------------------------------------------


def long_table(values: dict, repetitions: int = 1) -> pd.DataFrame:
    """{(block, treatment): [values per repetition]} in long format."""
    rows = [
        {"block": b, "treatment": t, "repetition": i, "m": v}
        for (b, t), vs in values.items()
        for i, v in enumerate(vs)
    ]
    return pd.DataFrame(rows)


def test_measure_specifications():
    assert table.parse_measure("test_accuracy") == table.Measure("test_accuracy", True, 0.01)
    assert table.parse_measure("fit_time_s") == table.Measure("fit_time_s", False, 0.1, True)
    assert table.parse_measure("objective_hinge_l2") == table.Measure(
        "objective_hinge_l2", False, 0.0
    )
    assert table.parse_measure("auc:higher:0.01") == table.Measure("auc", True, 0.01)
    assert table.parse_measure("time_s:lower") == table.Measure("time_s", False, 0.1, True)
    assert table.parse_measure("time_s:lower:5%").spec == "time_s:lower:5%"
    assert table.parse_measure("time_s:lower:0").relative is False
    with pytest.raises(SvmlabError, match="auc:higher or auc:lower"):
        table.parse_measure("auc")
    with pytest.raises(SvmlabError, match="ROPE must be >= 0"):
        table.parse_measure("auc:higher:-1%")
    with pytest.raises(SvmlabError, match="ROPE must be a number"):
        table.parse_measure("auc:higher:wide")
    with pytest.raises(SvmlabError, match="NAME\\[:higher\\|lower\\[:ROPE\\]\\]"):
        table.parse_measure("a:higher:1:2")


def test_aggregate_by_mean_or_median_and_drop_incomplete_blocks():
    long = long_table(
        {
            ("x", "A"): [1, 2, 6],
            ("x", "B"): [3],
            ("y", "A"): [4],
            ("z", "A"): [5],
            ("z", "B"): [5, 7],
        }
    )
    np.testing.assert_array_equal(table.aggregate(long, "m", "mean").loc["x"], [3, 3])
    np.testing.assert_array_equal(table.aggregate(long, "m", "median").loc["x"], [2, 3])
    with pytest.warns(UserWarning, match="dropping 1 block\\(s\\) with missing treatments: y: B"):
        complete, dropped = table.complete_blocks(table.aggregate(long, "m"))
    assert list(complete.index) == ["x", "z"] and dropped == {"y": ["B"]}
    with pytest.raises(SvmlabError, match="missing cells .*: y: B"):
        table.complete_blocks(table.aggregate(long, "m"), strict=True)


def test_protocol_options_are_checked():
    with pytest.raises(SvmlabError, match="unknown correction 'bonferroni'"):
        compare.Options(correction="bonferroni")
    with pytest.raises(SvmlabError, match="alpha levels must lie in \\(0, 1\\)"):
        compare.Options(alphas=(0.05, 5))
    long = long_table({("x", "A"): [1], ("x", "B"): [2]})
    with pytest.raises(SvmlabError, match="2 complete blocks; have 2 treatment\\(s\\) and 1"):
        compare.analyze_measure(long, table.Measure("m", True))


def test_protocol_on_a_small_table():
    """Four blocks, three treatments: C is always best, A always worst; with A the control,
    every pair with A is oriented (other, A) in the pairwise and the control table alike."""
    values = {
        (b, t): [v + i]
        for i, b in enumerate("wxyz")
        for t, v in (("A", 0.1), ("B", 0.5), ("C", 0.9))
    }
    result = compare.analyze_measure(
        long_table(values),
        table.Measure("m", True),
        compare.Options(control="A", bayes_samples=2000),
    )
    assert result.mean_ranks.to_dict() == {"A": 3.0, "B": 2.0, "C": 1.0}
    assert result.friedman.chi2 == pytest.approx(8.0)
    assert list(zip(result.pairwise["A"], result.pairwise["B"])) == [
        ("B", "A"),
        ("C", "A"),
        ("B", "C"),
    ]
    pairs = result.pairwise.set_index(["A", "B"])
    assert pairs.loc[("C", "A"), "W+"] == 10 and pairs.loc[("C", "A"), "W-"] == 0
    assert pairs.loc[("C", "A"), "p_value"] == pytest.approx(2 / 16)  # exact, two-sided, n = 4
    np.testing.assert_allclose(result.pairwise["p_adjusted"], [0.375, 0.375, 0.375])
    assert (result.pairwise["decision@0.1"] == "not rejected").all()
    assert pairs.loc[("C", "A"), "share A better"] > 0.9  # C is better than A in every block
    assert list(zip(result.control["A"], result.control["B"])) == [("B", "A"), ("C", "A")]
    assert (result.control["rank_difference"] < 0).all()  # B and C rank better than A
    nemenyi = result.nemenyi.set_index(["A", "B"])["rank_difference"]
    assert nemenyi[("C", "A")] == -2.0 and nemenyi[("B", "C")] == 1.0
