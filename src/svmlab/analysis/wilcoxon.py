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

from svmlab.errors import SvmlabError

ZERO_METHODS = ("pratt", "wilcox", "zsplit")
ALTERNATIVES = ("two-sided", "less", "greater")
METHODS = ("auto", "exact", "normal")
EXACT_MAX_N = 50  # 'auto' uses the exact distribution up to this many ranked differences


@dataclass(frozen=True)
class SignedRankResult:
    """W+ and W- are the rank sums of the positive and negative differences (zero ranks split
    half and half under 'zsplit'); ``statistic`` = min(W+, W-) as Demšar reports it."""

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


def differences(a, b, decimals: int | None = 10) -> np.ndarray:
    """a - b rounded to ``decimals`` places, so that float noise does not break ties or zeros."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape or a.ndim != 1:
        raise SvmlabError(f"paired samples need two 1-d arrays of equal length; got shapes "
                          f"{a.shape} and {b.shape}")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise SvmlabError("paired samples contain NaN or inf")
    d = a - b
    return d if decimals is None else np.round(d, decimals)


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
        shifted[score:] = dist[:len(dist) - score]
        dist = 0.5 * (dist + shifted)
    return dist


def signed_rank_test(a, b, *, alternative: str = "two-sided", zero_method: str = "pratt",
                     method: str = "auto", decimals: int | None = 10,
                     exact_max_n: int = EXACT_MAX_N, continuity: bool = True) -> SignedRankResult:
    """Test H0 'the differences a - b are symmetric about 0'.

    alternative 'less' means H1 'a - b tends to be negative' (p = P(W+ <= w+)), 'greater' the
    opposite, 'two-sided' p = min(1, 2 min(P(W+ <= w+), P(W+ >= w+))).
    method 'auto' is exact when at most ``exact_max_n`` differences are ranked, else the normal
    approximation with the variance computed from the actual (tied) ranks, which is the usual tie
    correction, and a continuity correction of 1/2 unless ``continuity`` is False (R's coin).
    """
    _check_choice("alternative", alternative, ALTERNATIVES)
    _check_choice("method", method, METHODS)
    d = differences(a, b, decimals)
    ranks, signs, zero_share = signed_ranks(d, zero_method)
    n = len(ranks)
    w_plus = ranks[signs > 0].sum() + zero_share
    w_minus = ranks[signs < 0].sum() + zero_share
    total = w_plus + w_minus
    rank_biserial = float((w_plus - w_minus) / total) if total > 0 else 0.0
    used = method if method != "auto" else ("exact" if n <= exact_max_n else "normal")
    if n == 0:
        p, z = 1.0, None
    elif used == "exact":
        p, z = _exact_p(ranks, w_plus - zero_share, alternative), None
    else:
        p, z = _normal_p(ranks, w_plus - zero_share, alternative, 0.5 if continuity else 0.0)
    return SignedRankResult(n=n, n_zero=int((d == 0).sum()), w_plus=float(w_plus),
                            w_minus=float(w_minus), statistic=float(min(w_plus, w_minus)),
                            p_value=float(min(1.0, p)), method=used, z=z,
                            zero_method=zero_method, alternative=alternative,
                            rank_biserial=rank_biserial)


def _exact_p(ranks: np.ndarray, w: float, alternative: str) -> float:
    dist = exact_distribution(ranks)
    s = round(2 * w)
    lower, upper = dist[:s + 1].sum(), dist[s:].sum()
    if alternative == "less":
        return float(lower)
    if alternative == "greater":
        return float(upper)
    return float(min(1.0, 2 * min(lower, upper)))


def _normal_p(ranks: np.ndarray, w: float, alternative: str, cc: float) -> tuple[float, float]:
    """Normal approximation of W+ with mean sum(r)/2, variance sum(r^2)/4 and continuity
    correction ``cc`` towards the mean."""
    mean = ranks.sum() / 2
    sd = np.sqrt((ranks ** 2).sum() / 4)
    diff = w - mean
    if alternative == "two-sided":
        z = np.sign(diff) * max(abs(diff) - cc, 0.0) / sd
        return float(2 * stats.norm.sf(abs(z))), float(z)
    if alternative == "less":
        z = (diff + cc) / sd
        return float(stats.norm.cdf(z)), float(z)
    z = (diff - cc) / sd
    return float(stats.norm.sf(z)), float(z)


def median_difference(a, b, *, confidence: float = 0.95, decimals: int | None = 10) -> dict:
    """Median of a - b and a distribution-free confidence interval from its order statistics.

    The interval [d_(l), d_(n+1-l)] covers the population median with probability
    1 - 2 P(Bin(n, 1/2) < l) >= ``confidence``; l is the largest such index. Returns NaN bounds
    when n is too small for that coverage, and the coverage actually achieved.
    """
    d = np.sort(differences(a, b, decimals))
    n = len(d)
    if n == 0:
        raise SvmlabError("median_difference needs at least one pair")
    below = stats.binom.cdf(np.arange(n), n, 0.5)  # below[j] = P(Bin(n, 1/2) <= j)
    feasible = [l for l in range(1, n // 2 + 1) if 1 - 2 * below[l - 1] >= confidence]
    if not feasible:
        return {"median": float(np.median(d)), "low": float("nan"), "high": float("nan"),
                "coverage": float("nan")}
    l = max(feasible)
    return {"median": float(np.median(d)), "low": float(d[l - 1]), "high": float(d[n - l]),
            "coverage": float(1 - 2 * below[l - 1])}


def hypothesis(a: str, b: str, measure: str, higher_is_better: bool, alternative: str) -> dict:
    """H0 and H1 in words for d = a - b of ``measure``."""
    better = "higher" if higher_is_better else "lower"
    h0 = f"{a} and {b} perform equally on {measure} (a - b is symmetric about 0)"
    if alternative == "two-sided":
        h1 = f"{a} and {b} differ on {measure}"
    else:
        a_higher = alternative == "greater"
        a_better = a_higher == higher_is_better
        h1 = (f"{a} is {'better' if a_better else 'worse'} than {b} on {measure} "
              f"({a} has the {'higher' if a_higher else 'lower'} values; {better} is better)")
    return {"H0": h0, "H1": h1}


def _check_choice(name: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise SvmlabError(f"unknown {name} {value!r}; allowed: {', '.join(allowed)}")
