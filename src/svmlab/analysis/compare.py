"""The protocol for one measure: aggregate, rank, Friedman / Iman-Davenport, Nemenyi, pairwise
Wilcoxon with a multiplicity correction, effect sizes and the Bayesian signed-rank test, and
optionally every treatment against a control."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from svmlab.analysis import bayes, friedman, posthoc, table, wilcoxon
from svmlab.errors import SvmlabError


@dataclass(frozen=True)
class Options:
    """Choices of the protocol; the defaults follow Demšar (2006) and the Frank-Wolfe paper."""

    aggregate: str = "mean"
    strict: bool = False
    alphas: tuple[float, ...] = (0.01, 0.05, 0.10)
    alternative: str = "two-sided"  # for d = A - B, A before B in treatment order
    zero_method: str = "pratt"
    method: str = "auto"
    decimals: int | None = 10
    exact_max_n: int = wilcoxon.EXACT_MAX_N
    continuity: bool = True
    correction: str = "holm"
    control: str | None = None
    confidence: float = 0.95
    bayes_prior: float = 0.5
    bayes_samples: int = 20000
    seed: int = 0

    def __post_init__(self):
        if not self.alphas or not all(0 < a < 1 for a in self.alphas):
            raise SvmlabError(f"alpha levels must lie in (0, 1); got {list(self.alphas)}")
        if not 0 < self.confidence < 1:
            raise SvmlabError(f"confidence must lie in (0, 1); got {self.confidence}")
        if self.correction not in posthoc.CORRECTIONS:
            raise SvmlabError(f"unknown correction {self.correction!r}; allowed: "
                              f"{', '.join(posthoc.CORRECTIONS)}")
        for name, value, allowed in (("alternative", self.alternative, wilcoxon.ALTERNATIVES),
                                     ("zero_method", self.zero_method, wilcoxon.ZERO_METHODS),
                                     ("method", self.method, wilcoxon.METHODS),
                                     ("aggregate", self.aggregate, table.AGGREGATES)):
            if value not in allowed:
                raise SvmlabError(f"unknown {name} {value!r}; allowed: {', '.join(allowed)}")


@dataclass
class MeasureAnalysis:
    """Everything the protocol computed for one measure."""

    measure: table.Measure
    table: pd.DataFrame  # complete blocks x treatments, aggregated
    dropped: dict
    repetitions: pd.DataFrame  # number of repetitions per cell
    ranks: pd.DataFrame
    mean_ranks: pd.Series
    friedman: friedman.FriedmanResult
    omnibus: pd.DataFrame
    critical_differences: dict
    nemenyi: pd.DataFrame
    pairwise: pd.DataFrame
    control: pd.DataFrame | None = None
    notes: list[str] = field(default_factory=list)


def analyze_measure(long: pd.DataFrame, measure: table.Measure,
                    options: Options = Options()) -> MeasureAnalysis:
    """Run the whole protocol on one measure of a long results table."""
    full = table.aggregate(long, measure.name, options.aggregate)
    values, dropped = table.complete_blocks(full, options.strict)
    n, k = values.shape
    if k < 2 or n < 2:
        raise SvmlabError(f"{measure.name}: need at least 2 treatments and 2 complete blocks; "
                          f"have {k} treatment(s) and {n} complete block(s)")
    counts = long.dropna(subset=[measure.name]).pivot_table(
        index="block", columns="treatment", values=measure.name, aggfunc="count")
    ranks = friedman.block_ranks(values, measure.higher_is_better)
    mean_ranks = ranks.mean(axis=0)
    result = friedman.friedman(ranks)
    cds = {alpha: {"nemenyi": posthoc.nemenyi_cd(n, k, alpha),
                   "bonferroni_dunn": posthoc.bonferroni_dunn_cd(n, k, alpha)}
           for alpha in options.alphas}
    nemenyi = posthoc.nemenyi(mean_ranks, n)
    for alpha in options.alphas:
        nemenyi[f"significant@{alpha:g}"] = nemenyi["rank_difference"].abs() > cds[alpha]["nemenyi"]
    pairs = list(itertools.combinations(values.columns, 2))
    pairwise = signed_rank_table(values, pairs, measure, options)
    pairwise["p_adjusted"] = posthoc.adjust(pairwise["p_value"], options.correction, k)
    _decide(pairwise, "p_adjusted", options.alphas)
    control = None
    if options.control is not None:
        control = _versus_control(values, mean_ranks, measure, options)
    return MeasureAnalysis(measure, values, dropped, counts.reindex_like(values), ranks,
                           mean_ranks, result, _omnibus(result, options.alphas), cds, nemenyi,
                           pairwise, control)


def signed_rank_table(values: pd.DataFrame, pairs, measure: table.Measure,
                      options: Options) -> pd.DataFrame:
    """Wilcoxon signed-rank test, effect sizes and Bayesian signed-rank test for each pair (A, B)
    with d = A - B over the blocks."""
    rows = []
    for a, b in pairs:
        test = wilcoxon.signed_rank_test(
            values[a], values[b], alternative=options.alternative,
            zero_method=options.zero_method, method=options.method, decimals=options.decimals,
            exact_max_n=options.exact_max_n, continuity=options.continuity)
        d = wilcoxon.differences(values[a], values[b], options.decimals)
        median = wilcoxon.median_difference(values[a], values[b], confidence=options.confidence,
                                            decimals=options.decimals)
        posterior = bayes.signed_rank(d, measure.rope, prior=options.bayes_prior,
                                      n_samples=options.bayes_samples, seed=options.seed)
        a_better, b_better = (("p_right", "p_left") if measure.higher_is_better
                              else ("p_left", "p_right"))
        rows.append({
            "A": a, "B": b, "n": test.n, "n_zero": test.n_zero, "W+": test.w_plus,
            "W-": test.w_minus, "W": test.statistic, "method": test.method, "z": test.z,
            "p_value": test.p_value, "rank_biserial": test.rank_biserial,
            "median_difference": median["median"], "ci_low": median["low"],
            "ci_high": median["high"], "ci_coverage": median["coverage"],
            "P(A better)": posterior[a_better], "P(equivalent)": posterior["p_rope"],
            "P(B better)": posterior[b_better], "rope": measure.rope,
            **wilcoxon.hypothesis(a, b, measure.name, measure.higher_is_better,
                                  options.alternative)})
    return pd.DataFrame(rows)


def _versus_control(values, mean_ranks, measure, options) -> pd.DataFrame:
    """Bonferroni-Dunn on mean ranks and Wilcoxon against the control, both Holm-adjusted."""
    ranks_test = posthoc.versus_control(mean_ranks, len(values), options.control)
    pairs = [(t, options.control) for t in ranks_test["A"]]
    signed = signed_rank_table(values, pairs, measure, options)
    signed["p_adjusted"] = posthoc.holm(signed["p_value"])
    out = ranks_test.rename(columns={"p_value": "p_ranks", "p_holm": "p_ranks_holm"}).merge(
        signed[["A", "B", "W", "method", "p_value", "p_adjusted", "rank_biserial", "H1"]]
        .rename(columns={"p_value": "p_wilcoxon", "p_adjusted": "p_wilcoxon_holm"}),
        on=["A", "B"])
    _decide(out, "p_wilcoxon_holm", options.alphas)
    return out


def _omnibus(result: friedman.FriedmanResult, alphas) -> pd.DataFrame:
    r = result
    rows = [("Friedman chi2", r.chi2, f"{r.df1}", r.chi2_p),
            ("Friedman chi2 (tie-corrected)", r.chi2_tied, f"{r.df1}", r.chi2_tied_p),
            ("Iman-Davenport F", r.iman_davenport_f, f"{r.df1}, {r.df2}", r.iman_davenport_p),
            ("Iman-Davenport F (tie-corrected)", r.iman_davenport_f_tied, f"{r.df1}, {r.df2}",
             r.iman_davenport_p_tied)]
    frame = pd.DataFrame(rows, columns=["test", "statistic", "df", "p_value"])
    _decide(frame, "p_value", alphas)
    return frame


def _decide(frame: pd.DataFrame, column: str, alphas) -> None:
    """Add one 'reject H0'/'keep H0' column per alpha level."""
    for alpha in alphas:
        frame[f"decision@{alpha:g}"] = np.where(frame[column] <= alpha, "reject H0", "keep H0")
