"""Bayesian signed-rank test with a region of practical equivalence (Benavoli et al. 2017).

The posterior of the distribution of the differences is a Dirichlet process with a prior
pseudo-observation at 0 of weight ``prior``; for each posterior sample w the probabilities of
the three regions are the w-weighted mass of the Walsh averages (d_i + d_j)/2 falling below -rope,
within [-rope, rope] and above rope (an average at a bound counts half on each side). "At a
bound" uses the analysis' relative tie tolerance (``ties``): differences of exactly one ROPE
(0.80 - 0.79 against a ROPE of 0.01) are 0.010000000000000009 in floats, and an exact
comparison would put them all outside the ROPE, where their decimal values sit on its bound
(baycomp gives 0 / 1 / 0 for d = 0.01 and 0 / 0.04 / 0.96 for the float differences).
The result is, as in the authors' baycomp package, the share of posterior samples in which each
region has the largest probability; a sample whose largest probability is shared by two regions
counts half for each (baycomp's argmax gives it to the first, so that identical treatments came
out as 'left is better' and swapping them did not swap the result).
"""

from __future__ import annotations

import numpy as np

from svmlab.analysis import ties
from svmlab.errors import SvmlabError


def signed_rank_posterior(
    d,
    rope: float = 0.0,
    *,
    scale=None,
    rtol: float = ties.RTOL,
    prior: float = 0.5,
    n_samples: int = 20000,
    seed: int = 0,
) -> np.ndarray:
    """Posterior samples (n_samples x 3) of P(d < -rope), P(|d| <= rope), P(d > rope).

    ``scale`` is that of the values each d_i came from (for d = a - b: max(|a|, |b|); default
    |d|): a Walsh sum d_i + d_j within rtol * (scale_i + scale_j) of a bound is at the bound."""
    d = np.asarray(d, dtype=float)
    if d.ndim != 1 or len(d) == 0 or not np.isfinite(d).all():
        raise SvmlabError(
            "the Bayesian signed-rank test needs a non-empty 1-d array of finite differences"
        )
    if rope < 0 or prior <= 0:
        raise SvmlabError(f"rope must be >= 0 and prior > 0; got rope={rope}, prior={prior}")
    z = np.concatenate([[0.0], d])
    s = np.concatenate([[0.0], np.abs(d if scale is None else np.asarray(scale, dtype=float))])
    weights = np.concatenate([[prior], np.ones(len(d))])
    samples = np.random.default_rng(seed).dirichlet(weights, n_samples)
    walsh = z[:, None] + z[None, :]
    tolerance = ties.check_rtol(rtol) * (s[:, None] + s[None, :])
    at_left = np.abs(walsh + 2 * rope) <= tolerance  # a tie at a bound counts half
    at_right = np.abs(walsh - 2 * rope) <= tolerance
    left = (walsh < -2 * rope) * ~at_left + 0.5 * at_left
    right = (walsh > 2 * rope) * ~at_right + 0.5 * at_right
    p_left = np.einsum("si,ij,sj->s", samples, left, samples)
    p_right = np.einsum("si,ij,sj->s", samples, right, samples)
    return np.stack([p_left, 1 - p_left - p_right, p_right], axis=1)


def signed_rank(d, rope: float = 0.0, **options) -> dict:
    """P(left: d < -rope), P(rope), P(right: d > rope) as shares of posterior samples in which
    that region is the most probable (ties within 1e-12 shared equally)."""
    samples = signed_rank_posterior(d, rope, **options)
    top = samples >= samples.max(axis=1, keepdims=True) - 1e-12
    winners = (top / top.sum(axis=1, keepdims=True)).mean(axis=0)
    return {"p_left": float(winners[0]), "p_rope": float(winners[1]), "p_right": float(winners[2])}
