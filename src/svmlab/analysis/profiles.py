"""Performance profiles (Dolan & Moré, Math. Program. 91, 2002) and data profiles (Moré & Wild,
SIAM J. Optim. 20, 2009) of a cost over the blocks.

For the cost t[p, s] of treatment s on block p (+inf: failed, e.g. the gap target never
reached), the performance ratio is r[p, s] = t[p, s] / min_s t[p, s], and the profile
rho_s(tau) is the share of blocks with r[p, s] <= tau: rho_s(1) is how often s is fastest,
rho_s(tau) for large tau how often it succeeds at all. The data profile d_s(b) is the share of
blocks that s solves within the budget b (seconds or iterations). No maintained Python library
computes them (benchopt draws convergence curves, not profiles), and each is a few lines.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from svmlab.errors import SvmlabError


def ratios(costs: pd.DataFrame) -> pd.DataFrame:
    """r[p, s] = t[p, s] / min_s t[p, s]; +inf for a failure, and for every treatment of a block
    that no treatment solved. Costs must be positive (or +inf): a ratio to a cost of 0 or less
    means nothing."""
    bad = ~(costs > 0)  # also NaN
    if bad.to_numpy().any():
        block, treatment = bad.stack().loc[lambda cells: cells].index[0]
        value = float(costs.loc[block, treatment])
        raise SvmlabError(
            f"performance ratios need positive costs (+inf for a failure); got "
            f"{value} for {treatment} on block {block}"
        )
    best = costs.min(axis=1)
    out = costs.div(best, axis=0)
    out.loc[~np.isfinite(best)] = np.inf
    return out


def profile(values: pd.DataFrame) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per treatment, the step function of the share of blocks whose value is <= x: its finite
    breakpoints x (sorted) and the shares at them. With ``ratios(costs)`` this is the
    performance profile, with the costs themselves the data profile."""
    n = len(values)
    out = {}
    for treatment in values.columns:
        x = np.sort(values[treatment].to_numpy(float))
        x = x[np.isfinite(x)]
        out[str(treatment)] = (x, np.arange(1, len(x) + 1) / n)
    return out


def share_within(values: pd.DataFrame, x: float) -> pd.Series:
    """Per treatment, the share of blocks whose value is <= ``x`` (rho_s(x) or d_s(x)); a
    failure (+inf) never counts, so ``x`` = inf gives the share solved."""
    return ((values <= x) & np.isfinite(values)).mean()
