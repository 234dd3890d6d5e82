"""Post-hoc tests after Friedman: Nemenyi (all pairs) and Bonferroni-Dunn (against a control)
on mean ranks with their critical differences, and multiplicity corrections (Holm, Shaffer)."""

from __future__ import annotations

import itertools
from functools import cache

import numpy as np
import pandas as pd
from scipy import stats

from svmlab.errors import SvmlabError

CORRECTIONS = ("holm", "shaffer", "none")


def rank_se(n_blocks: int, n_treatments: int) -> float:
    """Standard error of a difference of two mean ranks: sqrt(k(k+1) / (6N))."""
    return float(np.sqrt(n_treatments * (n_treatments + 1) / (6 * n_blocks)))


def nemenyi_cd(n_blocks: int, n_treatments: int, alpha: float) -> float:
    """Nemenyi critical difference q_alpha sqrt(k(k+1)/(6N)), q_alpha = studentized range / sqrt 2."""
    q = stats.studentized_range.ppf(1 - alpha, n_treatments, np.inf) / np.sqrt(2)
    return float(q * rank_se(n_blocks, n_treatments))


def bonferroni_dunn_cd(n_blocks: int, n_treatments: int, alpha: float) -> float:
    """Critical difference for comparing k-1 treatments with one control (Demšar, section 3.2.2)."""
    q = stats.norm.isf(alpha / (2 * (n_treatments - 1)))
    return float(q * rank_se(n_blocks, n_treatments))


def nemenyi(mean_ranks: pd.Series, n_blocks: int, pairs=None) -> pd.DataFrame:
    """Every pair (A, B) (``pairs``, default: all in index order): the difference of mean ranks
    R_A - R_B and the Nemenyi p-value (studentized range, df = inf)."""
    k = len(mean_ranks)
    se = rank_se(n_blocks, k)
    rows = []
    for a, b in pairs or itertools.combinations(mean_ranks.index, 2):
        diff = float(mean_ranks[a] - mean_ranks[b])
        p = float(stats.studentized_range.sf(abs(diff) / se * np.sqrt(2), k, np.inf))
        rows.append({"A": a, "B": b, "rank_difference": diff, "p_value": min(1.0, p)})
    return pd.DataFrame(rows)


def versus_control(mean_ranks: pd.Series, n_blocks: int, control: str, pairs=None) -> pd.DataFrame:
    """Each treatment against the control (Bonferroni-Dunn): z = (R_A - R_B) / se, two-sided p,
    Holm-adjusted; ``pairs`` (A, B) orient the comparisons (default: (treatment, control))."""
    if control not in mean_ranks.index:
        raise SvmlabError(f"unknown control {control!r}; treatments: {', '.join(mean_ranks.index)}")
    se = rank_se(n_blocks, len(mean_ranks))
    pairs = pairs or [(t, control) for t in mean_ranks.index if t != control]
    if any(control not in pair for pair in pairs):
        raise SvmlabError(f"every pair compared with the control {control!r} must contain it")
    z = np.array([(mean_ranks[a] - mean_ranks[b]) / se for a, b in pairs])
    p = 2 * stats.norm.sf(np.abs(z))
    return pd.DataFrame(
        {
            "A": [a for a, _ in pairs],
            "B": [b for _, b in pairs],
            "rank_difference": z * se,
            "z": z,
            "p_value": p,
            "p_holm": holm(p),
        }
    )


def holm(p_values) -> np.ndarray:
    """Holm step-down adjusted p-values: max over j <= i of min(1, (m - j + 1) p_(j))."""
    return _step_down(np.asarray(p_values, float), lambda m: np.arange(m, 0, -1))


def shaffer(p_values, n_treatments: int) -> np.ndarray:
    """Shaffer's static procedure for all k(k-1)/2 pairwise hypotheses: the i-th smallest p is
    multiplied by the largest number of hypotheses that can still be true once i-1 are false."""
    p = np.asarray(p_values, float)
    m = n_treatments * (n_treatments - 1) // 2
    if len(p) != m:
        raise SvmlabError(
            f"Shaffer's procedure needs all {m} pairwise p-values of "
            f"{n_treatments} treatments; got {len(p)}"
        )
    possible = sorted(_true_counts(n_treatments))
    return _step_down(
        p, lambda m: np.array([max(s for s in possible if s <= m - i) for i in range(m)])
    )


def adjust(p_values, method: str, n_treatments: int) -> np.ndarray:
    """Adjusted p-values of all pairwise comparisons by 'holm', 'shaffer' or 'none'."""
    if method == "holm":
        return holm(p_values)
    if method == "shaffer":
        return shaffer(p_values, n_treatments)
    if method == "none":
        return np.asarray(p_values, float)
    raise SvmlabError(f"unknown correction {method!r}; allowed: {', '.join(CORRECTIONS)}")


def _step_down(p: np.ndarray, multipliers) -> np.ndarray:
    order = np.argsort(p, kind="stable")
    scaled = np.minimum(1.0, multipliers(len(p)) * p[order])
    adjusted = np.empty_like(p)
    adjusted[order] = np.maximum.accumulate(scaled)
    return adjusted


@cache
def _true_counts(k: int) -> frozenset[int]:
    """Numbers of pairwise hypotheses that can be simultaneously true among k treatments
    (Shaffer 1986): S(k) = union over j of {C(j, 2) + s : s in S(k - j)}."""
    if k <= 1:
        return frozenset({0})
    return frozenset(j * (j - 1) // 2 + s for j in range(1, k + 1) for s in _true_counts(k - j))


def nemenyi_groups(mean_ranks: pd.Series, cd: float) -> list[list[str]]:
    """Maximal runs of treatments (sorted by mean rank) whose ranks differ by less than ``cd``:
    the bars of a critical-difference diagram."""
    ordered = mean_ranks.sort_values()
    names, values = list(ordered.index), ordered.to_numpy()
    groups = []
    for i in range(len(names)):
        j = i
        while j + 1 < len(names) and values[j + 1] - values[i] < cd:
            j += 1
        if j > i and not any(g[0] <= i and j <= g[1] for g in groups):
            groups.append((i, j))
    return [names[i : j + 1] for i, j in groups]
