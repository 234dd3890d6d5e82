"""Wilcoxon signed-rank test for paired samples, with the exact null distribution under ties and
zeros, selectable zero handling, and effect sizes.

The exact distribution is computed by dynamic programming over the doubled ranks: average ranks
are multiples of 1/2, so twice a rank is an integer and the distribution of W+ is a subset-sum
count over those integers, conditional on the observed ties (as in R's coin package).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
from scipy import stats

from svmlab.analysis import ties
from svmlab.errors import SvmlabError

ZERO_METHODS = ("pratt", "wilcox", "zsplit")
ALTERNATIVES = ("two-sided", "less", "greater")
METHODS = ("auto", "exact", "normal")
EXACT_MAX_N = 50  # 'auto' uses the exact distribution up to this many ranked differences


@dataclass(frozen=True)
class SignedRankResult:
    """W+ and W- are the rank sums of the positive and negative differences (zero ranks split
    half and half under 'zsplit'); ``statistic`` = min(W+, W-) as Demšar reports it;
    ``rank_biserial`` = (W+ - W-) / (sum of the ranks given), so that under 'pratt' the zeros'
    ranks count in the denominator (Kerby 2014), and under 'wilcox' only the nonzero ones."""

    n: int
    n_zero: int
    w_plus: float
    w_minus: float
    statistic: float
    p_value: float
    method: str  # 'exact' or 'normal'
    z: float | None
    zero_method: str
    alternative: str
    rank_biserial: float

    def as_dict(self) -> dict:
        return asdict(self)


def signed_ranks(d: np.ndarray, zero_method: str) -> tuple[np.ndarray, np.ndarray, float]:
    """Ranks of |d| and signs of the differences that take part in the test, and the fixed
    contribution of the zeros to W+ ('zsplit' only).

    pratt: rank all |d| (zeros included), then drop the zeros; wilcox: drop the zeros, then rank;
    zsplit: rank all, and give each zero's rank half to W+ and half to W-.
    """
    _check_choice("zero_method", zero_method, ZERO_METHODS)
    zero = d == 0
    if zero_method == "wilcox":
        d = d[~zero]
        zero = np.zeros(len(d), bool)
    ranks = stats.rankdata(np.abs(d))
    zero_share = ranks[zero].sum() / 2 if zero_method == "zsplit" else 0.0
    return ranks[~zero], np.sign(d[~zero]), zero_share


def exact_distribution(ranks: np.ndarray) -> np.ndarray:
    """P(2 W+ = s) for s = 0..2 sum(ranks) when every rank's sign is +/- with probability 1/2."""
    doubled = np.rint(2 * np.asarray(ranks)).astype(np.int64)
    if not np.allclose(doubled, 2 * np.asarray(ranks)):
        raise SvmlabError("exact_distribution needs ranks that are multiples of 1/2")
    dist = np.zeros(int(doubled.sum()) + 1)
    dist[0] = 1.0
    for score in doubled:
        shifted = np.zeros_like(dist)
        shifted[score:] = dist[: len(dist) - score]
        dist = 0.5 * (dist + shifted)
    return dist


def signed_rank_test(
    a,
    b,
    *,
    alternative: str = "two-sided",
    zero_method: str = "pratt",
    method: str = "auto",
    rtol: float = ties.RTOL,
    exact_max_n: int = EXACT_MAX_N,
    continuity: bool = True,
) -> SignedRankResult:
    """Test H0 'the differences a - b are symmetric about 0'.

    alternative 'less' means H1 'a - b tends to be negative' (p = P(W+ <= w+)), 'greater' the
    opposite, 'two-sided' p = min(1, 2 min(P(W+ <= w+), P(W+ >= w+))).
    method 'auto' is exact when at most ``exact_max_n`` differences are ranked, else the normal
    approximation with the variance computed from the actual (tied) ranks, which is the usual tie
    correction, and a continuity correction of 1/2 unless ``continuity`` is False (R's coin).
    Differences are compared with the relative tolerance ``rtol`` (:mod:`ties`).
    """
    _check_choice("alternative", alternative, ALTERNATIVES)
    _check_choice("method", method, METHODS)
    d = ties.differences(a, b, rtol)
    ranks, signs, zero_share = signed_ranks(d, zero_method)
    n = len(ranks)
    w_plus = ranks[signs > 0].sum() + zero_share
    w_minus = ranks[signs < 0].sum() + zero_share
    total = stats.rankdata(np.abs(d)).sum() if zero_method == "pratt" else w_plus + w_minus
    rank_biserial = float((w_plus - w_minus) / total) if total > 0 else 0.0
    used = method if method != "auto" else ("exact" if n <= exact_max_n else "normal")
    if n == 0:
        p, z = 1.0, None
    elif used == "exact":
        p, z = _exact_p(ranks, w_plus - zero_share, alternative), None
    else:
        p, z = _normal_p(ranks, w_plus - zero_share, alternative, 0.5 if continuity else 0.0)
    return SignedRankResult(
        n=n,
        n_zero=int((d == 0).sum()),
        w_plus=float(w_plus),
        w_minus=float(w_minus),
        statistic=float(min(w_plus, w_minus)),
        p_value=float(min(1.0, p)),
        method=used,
        z=z,
        zero_method=zero_method,
        alternative=alternative,
        rank_biserial=rank_biserial,
    )


def _exact_p(ranks: np.ndarray, w: float, alternative: str) -> float:
    dist = exact_distribution(ranks)
    s = round(2 * w)
    lower, upper = dist[: s + 1].sum(), dist[s:].sum()
    if alternative == "less":
        return float(lower)
    if alternative == "greater":
        return float(upper)
    return float(min(1.0, 2 * min(lower, upper)))


def _normal_p(ranks: np.ndarray, w: float, alternative: str, cc: float) -> tuple[float, float]:
    """Normal approximation of W+ with mean sum(r)/2, variance sum(r^2)/4 and continuity
    correction ``cc`` towards the mean."""
    mean = ranks.sum() / 2
    sd = np.sqrt((ranks**2).sum() / 4)
    diff = w - mean
    if alternative == "two-sided":
        z = np.sign(diff) * max(abs(diff) - cc, 0.0) / sd
        return float(2 * stats.norm.sf(abs(z))), float(z)
    if alternative == "less":
        z = (diff + cc) / sd
        return float(stats.norm.cdf(z)), float(z)
    z = (diff - cc) / sd
    return float(stats.norm.sf(z)), float(z)


def hodges_lehmann(d, *, confidence: float = 0.95) -> dict:
    """Hodges-Lehmann estimate of the shift of d (the median of the Walsh averages
    (d_i + d_j)/2, i <= j) and the exact confidence interval that inverts the signed-rank test.

    With M = n(n+1)/2 sorted Walsh averages w and c the largest integer with
    P(W+ <= c - 1) <= (1 - confidence)/2 under the exact null distribution of W+ (for every n),
    the interval is [w_(c), w_(M+1-c)], of coverage 1 - 2 P(W+ <= c - 1), reported as attained.
    When even c = 1 covers less than asked (n <= 5 at 95 %), the interval is [min w, max w] with
    its lower coverage 1 - 2^(1-n), as R's ``wilcox.test(conf.int = TRUE)`` gives it and
    states. The null distribution assumes no ties, so with ties and zeros the coverage is
    approximate (R then warns).
    """
    d = np.asarray(d, dtype=float)
    if d.ndim != 1 or len(d) == 0 or not np.isfinite(d).all():
        raise SvmlabError(
            f"the Hodges-Lehmann estimate needs at least one pair and finite "
            f"differences; got {d.tolist()[:10]}"
        )
    return _walsh_interval(d, confidence)


def hodges_lehmann_bounds(low, high, *, confidence: float = 0.95) -> dict:
    """The Hodges-Lehmann estimate and interval when each difference is only known to lie in
    [low_i, high_i], possibly infinite (a censored pair: a time to a target that one side never
    reached is only bounded below by its run's time).

    The estimate and both ends of the interval are order statistics of the Walsh averages, so
    they never decrease when one difference grows: over every set of differences within the
    bounds, the estimate ranges from that of ``low`` to that of ``high``, and the interval
    covering them all is [low end for ``low``, high end for ``high``]. Returns ``estimate_low``,
    ``estimate_high``, ``low``, ``high`` and ``coverage``; equal to :func:`hodges_lehmann` when
    no difference is censored.
    """
    low, high = np.asarray(low, dtype=float), np.asarray(high, dtype=float)
    if (
        low.ndim != 1
        or len(low) == 0
        or low.shape != high.shape
        or np.isnan(low).any()
        or np.isnan(high).any()
        or (low > high).any()
        or (low == np.inf).any()
        or (high == -np.inf).any()
    ):
        raise SvmlabError(
            f"censored differences need bounds low <= high with a finite side "
            f"each; got {low.tolist()[:10]} and {high.tolist()[:10]}"
        )
    lower, upper = _walsh_interval(low, confidence), _walsh_interval(high, confidence)
    return {
        "estimate_low": lower["estimate"],
        "estimate_high": upper["estimate"],
        "low": lower["low"],
        "high": upper["high"],
        "coverage": lower["coverage"],
    }


def _walsh_interval(d: np.ndarray, confidence: float) -> dict:
    """The Hodges-Lehmann estimate and exact interval of ``d``, where an infinite difference
    (all of one sign) makes the Walsh averages it enters infinite."""
    n = len(d)
    i, j = np.triu_indices(n)
    walsh = np.sort((d[i] + d[j]) / 2)
    m = len(walsh)
    cdf = np.cumsum(_lower_half_distribution(n))  # P(W+ <= w), w = 0..floor(M/2)
    tail = (1 - confidence) / 2
    c = max(1, int(np.searchsorted(cdf, tail * (1 + 1e-12), side="right")))
    return {
        "estimate": float(np.median(walsh)),
        "low": float(walsh[c - 1]),
        "high": float(walsh[m - c]),
        "coverage": float(1 - 2 * cdf[c - 1]),
    }


def _lower_half_distribution(n: int) -> np.ndarray:
    """P(W+ = w) for w = 0..floor(M/2), M = n(n+1)/2, with untied ranks 1..n (each sign +/- with
    probability 1/2). Adding rank k moves mass upwards only, so the lower half is computed
    alone: O(n^3 / 4) operations, about a second at n = 1000."""
    dist = np.zeros(n * (n + 1) // 4 + 1)
    dist[0] = 1.0
    for k in range(1, n + 1):
        if k < len(dist):
            dist[k:] += dist[:-k].copy()
        dist *= 0.5
    return dist


def hypothesis(a: str, b: str, measure: str, higher_is_better: bool, alternative: str) -> dict:
    """H0 and H1 in words for d = a - b of ``measure``."""
    h0 = f"d = {a} - {b} on {measure} is symmetric about 0"
    if alternative == "two-sided":
        h1 = f"d = {a} - {b} on {measure} is not symmetric about 0"
    else:
        a_higher = alternative == "greater"
        a_better = a_higher == higher_is_better
        h1 = (
            f"{a} has {'higher' if a_higher else 'lower'} {measure} than {b} "
            f"(d = {a} - {b} tends to be {'positive' if a_higher else 'negative'}): "
            f"{a} is {'better' if a_better else 'worse'}"
        )
    return {"H0": h0, "H1": h1}


def _check_choice(name: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise SvmlabError(f"unknown {name} {value!r}; allowed: {', '.join(allowed)}")
