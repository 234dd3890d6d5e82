"""Which values are equal: one relative tolerance shared by every test of the analysis.

Aggregated measures carry float noise (the mean of 0.8 and 0.9 is 0.8500000000000001, not 0.85),
and a rank test that ranks that noise invents a difference. Two values x and y are taken as equal
when |x - y| <= rtol * scale, where the scale is that of the measured values the two quantities
came from (for a difference a - b: max(|a|, |b|)). A relative tolerance removes the noise at any
magnitude, unlike rounding to a fixed number of decimals, which stops removing it on large values
and zeroes genuine differences of small ones. ``rtol = 0`` compares exactly.

No library offers tie grouping under a tolerance with per-value scales, hence this module.
"""

from __future__ import annotations

import numpy as np

from svmlab.errors import SvmlabError

RTOL = 1e-9  # far above float noise (~1e-15 relative), far below any meaningful difference


def check_rtol(rtol: float) -> float:
    """``rtol`` if it is a finite number in [0, 1e-2]; else a SvmlabError saying what is allowed."""
    if not (isinstance(rtol, int | float) and 0 <= rtol <= 1e-2):
        raise SvmlabError(
            f"the tie tolerance must be a number in [0, 0.01] (0: exact comparison); got {rtol!r}"
        )
    return float(rtol)


def merge(values, scale, rtol: float = RTOL) -> np.ndarray:
    """``values`` with each group of near-equal values replaced by the group's smallest member.

    In increasing order a value joins the current group when it exceeds the group's first value
    by at most rtol * max(its scale, the first value's scale); otherwise it starts a new group
    (groups are anchored at their first value, so no chain of small steps merges distinct
    values). Infinite values are left as they are."""
    values = np.asarray(values, dtype=float)
    scale = np.broadcast_to(np.abs(np.asarray(scale, dtype=float)), values.shape)
    out = values.copy()
    if rtol == 0 or values.size < 2:
        return out
    order = [i for i in np.argsort(values, kind="stable") if np.isfinite(values[i])]
    if not order:
        return out
    anchor = order[0]
    for i in order[1:]:
        if values[i] - values[anchor] <= rtol * max(scale[i], scale[anchor]):
            out[i] = values[anchor]
        else:
            anchor = i
    return out


def rows(table: np.ndarray, rtol: float = RTOL) -> np.ndarray:
    """Each row of ``table`` with its near-equal values merged (scale: the values themselves)."""
    table = np.asarray(table, dtype=float)
    return np.array([merge(row, row, rtol) for row in table]).reshape(table.shape)


def differences(a, b, rtol: float = RTOL) -> np.ndarray:
    """a - b with differences within tolerance of 0 set to 0 and near-equal nonzero |a - b| made
    equal.

    The scale of d_i is max(|a_i|, |b_i|): the float noise of a difference is relative to the
    values subtracted, not to the difference."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape or a.ndim != 1:
        raise SvmlabError(
            f"paired samples need two 1-d arrays of equal length; got shapes "
            f"{a.shape} and {b.shape}"
        )
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise SvmlabError("paired samples contain NaN or inf")
    d = a - b
    scale = np.maximum(np.abs(a), np.abs(b))
    zero = np.abs(d) <= rtol * scale
    d[zero] = 0.0
    d[~zero] = np.sign(d[~zero]) * merge(np.abs(d[~zero]), scale[~zero], rtol)
    return d
