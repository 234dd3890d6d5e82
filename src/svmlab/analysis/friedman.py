"""Ranks within blocks, the Friedman test, its Iman-Davenport F (Demšar 2006, section 3.2) and
its permutation p-value for few blocks.

Under H0 the treatments are exchangeable within each block, so every arrangement of a block's
observed ranks (ties included) is equally likely. The exact permutation distribution of
S = sum_j R_j^2 (R_j the rank sums) is computed by convolution over the blocks, one state per
vector of rank sums, kept sorted because S and the uniform arrangements are symmetric in the
treatments; beyond a work budget a Monte-Carlo sample of arrangements estimates it. chi2_F and
F_F are increasing functions of S for the observed ties, so the p-value serves both. scipy's
``permutation_test`` computes the same p by enumerating all (k!)^N arrangements (a test checks
the two agree), which is too slow for the sizes needed here; R's ``coin`` is not available in
Python.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
from scipy import stats

from svmlab.analysis import ties
from svmlab.errors import SvmlabError

METHODS = ("auto", "exact", "monte-carlo", "asymptotic")
PERMUTATION_MAX_BLOCKS = 15  # 'auto': permutation p-value up to this many blocks
EXACT_BUDGET = 1_000_000  # state updates of the exact distribution before Monte Carlo instead
MONTE_CARLO_SAMPLES = 100_000
MONTE_CARLO_CELLS = 4_000_000  # table cells shuffled at once (32 MB of int64)


def block_ranks(
    table: pd.DataFrame, higher_is_better: bool, rtol: float = ties.RTOL
) -> pd.DataFrame:
    """Rank the treatments (columns) within each block (row): 1 = best, values equal within the
    relative tolerance ``rtol`` (:mod:`ties`) get average ranks."""
    values = table.to_numpy(dtype=float)
    if np.isnan(values).any():
        raise SvmlabError("cannot rank a table with missing cells; drop or fill them first")
    values = ties.rows(values, rtol)
    ranks = stats.rankdata(-values if higher_is_better else values, axis=1)
    return pd.DataFrame(ranks, index=table.index, columns=table.columns)


@dataclass(frozen=True)
class FriedmanResult:
    """``chi2`` without and ``chi2_tied`` with the tie correction; F and p of Iman-Davenport for
    each (F ~ F(k-1, (k-1)(N-1)), p its upper tail). ``p_value`` is the p of the omnibus
    decision, from ``method``: 'exact' or 'monte-carlo' (permutation), or 'iman-davenport'
    (the tie-corrected F)."""

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
    method: str
    p_value: float

    def as_dict(self) -> dict:
        return asdict(self)


def friedman(ranks: pd.DataFrame, method: str = "auto", seed: int = 0) -> FriedmanResult:
    """Friedman chi-square, Iman-Davenport F and the omnibus p-value from a block x treatment
    table of ranks.

    ``method`` 'auto' takes the permutation p-value (exact within the work budget, else Monte
    Carlo) up to PERMUTATION_MAX_BLOCKS blocks or when F is infinite (every block ranks alike),
    else Iman-Davenport's; 'exact' fails when the budget does not suffice."""
    if method not in METHODS:
        raise SvmlabError(f"unknown Friedman method {method!r}; allowed: {', '.join(METHODS)}")
    n, k = ranks.shape
    if n < 2 or k < 2:
        raise SvmlabError(
            f"the Friedman test needs at least 2 blocks and 2 treatments; got "
            f"{n} blocks and {k} treatments"
        )
    mean_ranks = ranks.mean(axis=0).to_numpy()
    chi2 = 12 * n / (k * (k + 1)) * (np.sum(mean_ranks**2) - k * (k + 1) ** 2 / 4)
    ties = sum(
        float(np.sum(c**3 - c))
        for c in (np.unique(row, return_counts=True)[1] for row in ranks.to_numpy())
    )
    correction = 1 - ties / (n * (k**3 - k))
    chi2_tied = chi2 / correction if correction > 0 else 0.0  # every block tied throughout
    df1, df2 = k - 1, (k - 1) * (n - 1)
    f, p = _iman_davenport(chi2, n, k)
    f_tied, p_tied = _iman_davenport(chi2_tied, n, k)
    used, p_value = "iman-davenport", p_tied
    if method in ("exact", "monte-carlo") or (
        method == "auto" and (n <= PERMUTATION_MAX_BLOCKS or not np.isfinite(f_tied))
    ):
        used, p_value = permutation_p(ranks.to_numpy(), exact=method != "monte-carlo", seed=seed)
        if method == "exact" and used != "exact":
            raise SvmlabError(
                f"the exact Friedman distribution of {n} blocks x {k} treatments "
                f"exceeds the work budget; use method 'monte-carlo' or 'auto'"
            )
    return FriedmanResult(
        n,
        k,
        float(chi2),
        float(stats.chi2.sf(chi2, df1)),
        float(chi2_tied),
        float(stats.chi2.sf(chi2_tied, df1)),
        f,
        p,
        f_tied,
        p_tied,
        df1,
        df2,
        used,
        float(p_value),
    )


def permutation_p(
    ranks: np.ndarray, exact: bool = True, seed: int = 0, samples: int = MONTE_CARLO_SAMPLES
) -> tuple[str, float]:
    """('exact' or 'monte-carlo', P(S >= observed S)) under within-block exchangeability.

    The Monte-Carlo p is (1 + #{S* >= S}) / (samples + 1), never 0 (Phipson & Smyth 2010)."""
    doubled = np.rint(2 * np.asarray(ranks, dtype=float)).astype(np.int64)  # ranks are k/2
    observed = int((doubled.sum(axis=0) ** 2).sum())
    p = _exact_p(doubled, observed) if exact else None
    if p is not None:
        return "exact", min(1.0, p)
    rng = np.random.default_rng(seed)
    batch = max(1, MONTE_CARLO_CELLS // doubled.size)  # bounded memory for any table
    hits = 0
    for start in range(0, samples, batch):
        size = min(batch, samples - start)
        order = np.argsort(rng.random((size, *doubled.shape)), axis=2)
        shuffled = np.take_along_axis(np.broadcast_to(doubled, order.shape), order, axis=2)
        hits += np.count_nonzero((shuffled.sum(axis=1) ** 2).sum(axis=1) >= observed)
    return "monte-carlo", float((1 + hits) / (samples + 1))


def _exact_p(doubled: np.ndarray, observed: int) -> float | None:
    """Exact P(S >= observed) by convolving the blocks' arrangements; None over the budget."""
    states, work = {(0,) * doubled.shape[1]: 1.0}, 0
    for row in doubled:
        _values, counts = np.unique(row, return_counts=True)
        arrangements = math.factorial(len(row)) // math.prod(map(math.factorial, counts))
        work += len(states) * arrangements
        if work > EXACT_BUDGET:
            return None
        perms = set(itertools.permutations(row.tolist()))
        following: dict[tuple, float] = defaultdict(float)
        for state, p in states.items():
            for perm in perms:
                following[tuple(sorted(map(int.__add__, state, perm)))] += p / arrangements
        states = following
    return sum(p for state, p in states.items() if sum(x * x for x in state) >= observed)


def _iman_davenport(chi2: float, n: int, k: int) -> tuple[float, float]:
    """F_F = (N-1) chi2 / (N(k-1) - chi2); infinite (p = 0) when every block ranks alike."""
    if not np.isfinite(chi2):
        return float("nan"), float("nan")
    denominator = n * (k - 1) - chi2
    if denominator <= 1e-12 * n * (k - 1):
        return float("inf"), 0.0
    f = (n - 1) * chi2 / denominator
    return float(f), float(stats.f.sf(f, k - 1, (k - 1) * (n - 1)))
