"""Ranks within blocks, the Friedman test and its Iman-Davenport F (Demšar 2006, section 3.2)."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
from scipy import stats

from svmlab.errors import SvmlabError


def block_ranks(table: pd.DataFrame, higher_is_better: bool) -> pd.DataFrame:
    """Rank the treatments (columns) within each block (row): 1 = best, ties get average ranks."""
    values = table.to_numpy(dtype=float)
    if np.isnan(values).any():
        raise SvmlabError("cannot rank a table with missing cells; drop or fill them first")
    ranks = stats.rankdata(-values if higher_is_better else values, axis=1)
    return pd.DataFrame(ranks, index=table.index, columns=table.columns)


@dataclass(frozen=True)
class FriedmanResult:
    """``chi2`` without and ``chi2_tied`` with the tie correction; F and p of Iman-Davenport for
    each (F ~ F(k-1, (k-1)(N-1)), p its upper tail)."""

    n_blocks: int
    n_treatments: int
    chi2: float
    chi2_p: float
    chi2_tied: float
    chi2_tied_p: float
    iman_davenport_f: float
    iman_davenport_p: float
    iman_davenport_f_tied: float
    iman_davenport_p_tied: float
    df1: int
    df2: int

    def as_dict(self) -> dict:
        return asdict(self)


def friedman(ranks: pd.DataFrame) -> FriedmanResult:
    """Friedman chi-square and Iman-Davenport F from a block x treatment table of ranks."""
    n, k = ranks.shape
    if n < 2 or k < 2:
        raise SvmlabError(f"the Friedman test needs at least 2 blocks and 2 treatments; got "
                          f"{n} blocks and {k} treatments")
    mean_ranks = ranks.mean(axis=0).to_numpy()
    chi2 = 12 * n / (k * (k + 1)) * (np.sum(mean_ranks ** 2) - k * (k + 1) ** 2 / 4)
    ties = sum(float(np.sum(c ** 3 - c)) for c in
               (np.unique(row, return_counts=True)[1] for row in ranks.to_numpy()))
    correction = 1 - ties / (n * (k ** 3 - k))
    chi2_tied = chi2 / correction if correction > 0 else float("nan")
    df1, df2 = k - 1, (k - 1) * (n - 1)
    f, p = _iman_davenport(chi2, n, k)
    f_tied, p_tied = _iman_davenport(chi2_tied, n, k)
    return FriedmanResult(n, k, float(chi2), float(stats.chi2.sf(chi2, df1)), float(chi2_tied),
                          float(stats.chi2.sf(chi2_tied, df1)), f, p, f_tied, p_tied, df1, df2)


def _iman_davenport(chi2: float, n: int, k: int) -> tuple[float, float]:
    """F_F = (N-1) chi2 / (N(k-1) - chi2); infinite (p = 0) when every block ranks alike."""
    if not np.isfinite(chi2):
        return float("nan"), float("nan")
    denominator = n * (k - 1) - chi2
    if denominator <= 1e-12 * n * (k - 1):
        return float("inf"), 0.0
    f = (n - 1) * chi2 / denominator
    return float(f), float(stats.f.sf(f, k - 1, (k - 1) * (n - 1)))
