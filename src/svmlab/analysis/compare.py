"""The protocol for one measure: aggregate, rank, Friedman / Iman-Davenport (or its permutation
p-value), Nemenyi, pairwise Wilcoxon with a multiplicity correction, effect sizes and the
Bayesian signed-rank test, and optionally every treatment against a control. Every table orients
a pair the same way (:mod:`hypotheses`) and compares values with one tie tolerance (:mod:`ties`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from svmlab.analysis import bayes, friedman, hypotheses, posthoc, table, ties, wilcoxon
from svmlab.errors import SvmlabError, did_you_mean

REJECT, NOT_REJECTED = "reject H0", "not rejected"


class TooFewBlocks(SvmlabError):
    """A measure whose complete table is too small for the tests."""


#: Columns of the Bayesian signed-rank test: shares of posterior samples, not probabilities of
#: the hypotheses themselves.
SHARES = ("share A better", "share equivalent", "share B better")


@dataclass(frozen=True)
class Options:
    """Choices of the protocol; the defaults follow Demšar (2006) and the Frank-Wolfe paper."""

    aggregate: str = "mean"
    strict: bool = False
    alphas: tuple[float, ...] = (0.01, 0.05, 0.10)
    hypotheses: tuple[hypotheses.Hypothesis, ...] = ()  # directed pairs; the others two-sided
    zero_method: str = "pratt"
    method: str = "auto"
    friedman_method: str = "auto"
    rtol: float = ties.RTOL
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
        ties.check_rtol(self.rtol)
        if self.correction not in posthoc.CORRECTIONS:
            raise SvmlabError(
                f"unknown correction {self.correction!r}; allowed: {', '.join(posthoc.CORRECTIONS)}"
            )
        for name, value, allowed in (
            ("friedman_method", self.friedman_method, friedman.METHODS),
            ("zero_method", self.zero_method, wilcoxon.ZERO_METHODS),
            ("method", self.method, wilcoxon.METHODS),
            ("aggregate", self.aggregate, table.AGGREGATES),
        ):
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
    costs: pd.DataFrame | None = None  # for performance profiles: +inf = never reached

    @property
    def profiled(self) -> bool:
        """Whether the measure is a cost that performance profiles compare (lower is better,
        positive values or +inf, at least 2 blocks)."""
        return self.costs is not None and len(self.costs) >= 2


def analyze_measure(
    long: pd.DataFrame,
    measure: table.Measure,
    options: Options = Options(),
    columns: dict | None = None,
) -> MeasureAnalysis:
    """Run the whole protocol on one measure of a long results table; ``columns`` names the run
    columns of the block and treatment labels, for the filters that messages suggest."""
    full = table.aggregate(long, measure.name, options.aggregate)
    costs = _costs(full, measure, options.rtol)
    full = table.infinite_as_missing(full, measure, profiled=costs is not None)
    values, dropped = table.complete_blocks(full, options.strict, columns)
    if min(values.shape) < 2 and not options.strict:
        values, dropped = table.complete_part_table(full, options.control) or (values, dropped)
    n, k = values.shape
    if k < 2 or n < 2:
        raise TooFewBlocks(
            f"{measure.name}: need at least 2 treatments and 2 complete blocks; "
            f"have {k} treatment(s) and {n} complete block(s)"
            + table.incomplete_hint(full, columns)
        )
    if options.control is not None and options.control not in values.columns:
        raise SvmlabError(
            f"unknown control {options.control!r}; treatments: "
            f"{', '.join(map(str, values.columns))}."
            f"{did_you_mean(options.control, values.columns)}"
        )
    counts = long.dropna(subset=[measure.name]).pivot_table(
        index="block", columns="treatment", values=measure.name, aggfunc="count"
    )
    ranks = friedman.block_ranks(values, measure.higher_is_better, options.rtol)
    mean_ranks = ranks.mean(axis=0)
    result = friedman.friedman(ranks, options.friedman_method, options.seed)
    cds = {
        alpha: {
            "nemenyi": posthoc.nemenyi_cd(n, k, alpha),
            "bonferroni_dunn": posthoc.bonferroni_dunn_cd(n, k, alpha),
        }
        for alpha in options.alphas
    }
    pairs = hypotheses.pairs(values.columns, measure.name, options.hypotheses, options.control)
    nemenyi = posthoc.nemenyi(mean_ranks, n, [(p.a, p.b) for p in pairs])
    for alpha in options.alphas:
        nemenyi[f"significant@{alpha:g}"] = nemenyi["rank_difference"].abs() > cds[alpha]["nemenyi"]
    pairwise = signed_rank_table(values, pairs, measure, options)
    pairwise["p_adjusted"] = posthoc.adjust(pairwise["p_value"], options.correction, k)
    _decide(pairwise, "p_adjusted", options.alphas)
    control = None
    if options.control is not None:
        control = _versus_control(values, mean_ranks, pairs, measure, options)
    return MeasureAnalysis(
        measure,
        values,
        dropped,
        counts.reindex_like(values),
        ranks,
        mean_ranks,
        result,
        _omnibus(result, options.alphas),
        cds,
        nemenyi,
        pairwise,
        control,
        costs,
    )


def _costs(full: pd.DataFrame, measure: table.Measure, rtol: float) -> pd.DataFrame | None:
    """The blocks without missing cells, near-equal costs merged (so float noise does not decide
    which treatment is best), when the measure is a positive cost (lower is better; +inf where a
    run never reached a derived measure's target), else None."""
    costs = full.dropna()
    if measure.higher_is_better or costs.empty or not (costs.to_numpy() > 0).all():
        return None
    return pd.DataFrame(ties.rows(costs.to_numpy(), rtol), costs.index, costs.columns)


def signed_rank_table(
    values: pd.DataFrame, pairs: list[hypotheses.Pair], measure: table.Measure, options: Options
) -> pd.DataFrame:
    """Wilcoxon signed-rank test, effect sizes and Bayesian signed-rank test for each pair with
    d = A - B over the blocks."""
    rows = []
    for pair in pairs:
        a, b = values[pair.a].to_numpy(float), values[pair.b].to_numpy(float)
        test = wilcoxon.signed_rank_test(
            a,
            b,
            alternative=pair.alternative,
            zero_method=options.zero_method,
            method=options.method,
            rtol=options.rtol,
            exact_max_n=options.exact_max_n,
            continuity=options.continuity,
        )
        d = ties.differences(a, b, options.rtol)
        shift = wilcoxon.hodges_lehmann(d, confidence=options.confidence)
        rope_d, scale = _rope_scale(d, a, b, measure)
        posterior = bayes.signed_rank(
            rope_d,
            _rope(measure),
            scale=scale,
            rtol=options.rtol,
            prior=options.bayes_prior,
            n_samples=options.bayes_samples,
            seed=options.seed,
        )
        a_better, b_better = (
            ("p_right", "p_left") if measure.higher_is_better else ("p_left", "p_right")
        )
        rows.append(
            {
                "A": pair.a,
                "B": pair.b,
                "alternative": pair.alternative,
                "n": test.n,
                "n_zero": test.n_zero,
                "W+": test.w_plus,
                "W-": test.w_minus,
                "W": test.statistic,
                "method": test.method,
                "z": test.z,
                "p_value": test.p_value,
                "rank_biserial": test.rank_biserial,
                "hodges_lehmann": shift["estimate"],
                "ci_low": shift["low"],
                "ci_high": shift["high"],
                "ci_coverage": shift["coverage"],
                SHARES[0]: posterior[a_better],
                SHARES[1]: posterior["p_rope"],
                SHARES[2]: posterior[b_better],
                "rope": measure.rope_text,
                **wilcoxon.hypothesis(
                    pair.a, pair.b, measure.name, measure.higher_is_better, pair.alternative
                ),
            }
        )
    return pd.DataFrame(rows)


def _rope_scale(
    d: np.ndarray, a: np.ndarray, b: np.ndarray, measure: table.Measure
) -> tuple[np.ndarray, np.ndarray]:
    """The differences the ROPE applies to, and the scale of their float noise: d and
    max(|A|, |B|), or for a relative ROPE log(A / B) (0 where the values are equal within the
    tie tolerance) and max(1, |log A|, |log B|) (a relative error of A is an absolute one of
    log A)."""
    if not measure.relative:
        return d, np.maximum(np.abs(a), np.abs(b))
    if (a <= 0).any() or (b <= 0).any():
        raise SvmlabError(
            f"{measure.name}: a relative ROPE ({measure.rope_text}) compares "
            f"log-ratios and needs positive values; give an absolute ROPE "
            f"({measure.name}:{measure.direction}:NUMBER) instead"
        )
    log_a, log_b = np.log(a), np.log(b)
    return (
        np.where(d == 0, 0.0, log_a - log_b),
        np.maximum(1.0, np.maximum(np.abs(log_a), np.abs(log_b))),
    )


def _rope(measure: table.Measure) -> float:
    return float(np.log1p(measure.rope)) if measure.relative else measure.rope


def _versus_control(values, mean_ranks, pairs, measure, options) -> pd.DataFrame:
    """Bonferroni-Dunn on mean ranks and Wilcoxon against the control, both Holm-adjusted, on
    the pairs with the control as oriented for the pairwise table."""
    with_control = [p for p in pairs if options.control in (p.a, p.b)]
    ranks_test = posthoc.versus_control(
        mean_ranks, len(values), options.control, [(p.a, p.b) for p in with_control]
    )
    signed = signed_rank_table(values, with_control, measure, options)
    signed["p_adjusted"] = posthoc.holm(signed["p_value"])
    out = ranks_test.rename(columns={"p_value": "p_ranks", "p_holm": "p_ranks_holm"}).merge(
        signed[
            ["A", "B", "alternative", "W", "method", "p_value", "p_adjusted", "rank_biserial", "H1"]
        ].rename(columns={"p_value": "p_wilcoxon", "p_adjusted": "p_wilcoxon_holm"}),
        on=["A", "B"],
    )
    _decide(out, "p_wilcoxon_holm", options.alphas)
    return out


def _omnibus(result: friedman.FriedmanResult, alphas) -> pd.DataFrame:
    r = result
    """One row per omnibus statistic; ``decides`` marks the p-value of the omnibus decision."""
    r = result
    chosen = (
        "Iman-Davenport F (tie-corrected chi2)"
        if r.method == "iman-davenport"
        else f"Friedman permutation ({r.method})"
    )
    rows = [
        ("Friedman chi2", r.chi2, f"{r.df1}", r.chi2_p),
        ("Friedman chi2 (tie-corrected)", r.chi2_tied, f"{r.df1}", r.chi2_tied_p),
        ("Iman-Davenport F", r.iman_davenport_f, f"{r.df1}, {r.df2}", r.iman_davenport_p),
        (
            "Iman-Davenport F (tie-corrected chi2)",
            r.iman_davenport_f_tied,
            f"{r.df1}, {r.df2}",
            r.iman_davenport_p_tied,
        ),
    ]
    if r.method != "iman-davenport":
        rows.append((chosen, r.chi2_tied, "", r.p_value))
    frame = pd.DataFrame(rows, columns=["test", "statistic", "df", "p_value"])
    frame["decides"] = frame["test"] == chosen
    _decide(frame, "p_value", alphas)
    return frame


def _decide(frame: pd.DataFrame, column: str, alphas) -> None:
    """Add one 'reject H0' / 'not rejected' column per alpha level."""
    for alpha in alphas:
        frame[f"decision@{alpha:g}"] = np.where(frame[column] <= alpha, REJECT, NOT_REJECTED)
