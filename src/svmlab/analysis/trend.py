"""How a measure changes with a size or a setting: slopes on log-log axes."""

from __future__ import annotations

import numpy as np
from scipy import stats

from svmlab.errors import SvmlabError


def log_log_slope(x, y) -> float:
    """The least-squares slope of y against log x (y already on a log scale when it is a log
    ratio, or log of a positive measure): 1 means proportional to x, 0 flat."""
    x = np.log(np.asarray(x, dtype=float))
    y = np.asarray(y, dtype=float)
    if len(np.unique(x)) < 2:
        raise SvmlabError(f"a slope needs two values of x at least; got {np.exp(x).tolist()}")
    return float(np.polyfit(x, y, 1)[0])


def theil_sen(x, y, *, confidence: float = 0.95) -> dict:
    """The Theil-Sen slope of y against log x (the median of the pairwise slopes: one outlying
    point moves it little) and Sen's interval from Kendall's tau (scipy's, whose variance is
    the normal approximation, so its coverage is approximate with few points)."""
    x = np.log(np.asarray(x, dtype=float))
    y = np.asarray(y, dtype=float)
    if len(np.unique(x)) < 2 or not np.isfinite(y).all():
        raise SvmlabError("a Theil-Sen slope needs finite values at two values of x at least")
    fit = stats.theilslopes(y, x, alpha=confidence)
    return {
        "estimate": float(fit.slope),
        "low": float(fit.low_slope),
        "high": float(fit.high_slope),
    }
