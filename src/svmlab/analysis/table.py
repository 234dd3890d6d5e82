"""Measures with their direction, and the block x treatment table of one measure."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import pandas as pd

from svmlab.errors import SvmlabError

#: Measures whose direction is known; any other needs ':higher' or ':lower'.
DIRECTIONS = {"test_accuracy": "higher", "train_accuracy": "higher", "fit_time_s": "lower",
              "predict_time_s": "lower", "n_iter": "lower", "n_support": "lower"}
DEFAULT_MEASURES = ("test_accuracy", "fit_time_s")
AGGREGATES = ("mean", "median")


@dataclass(frozen=True)
class Measure:
    """A metric, whether higher values are better, and its region of practical equivalence."""

    name: str
    higher_is_better: bool
    rope: float = 0.0

    @property
    def direction(self) -> str:
        return "higher" if self.higher_is_better else "lower"


def parse_measure(spec: str) -> Measure:
    """'NAME', 'NAME:higher|lower' or 'NAME:higher|lower:ROPE' (objective_* default to lower)."""
    name, *rest = spec.split(":")
    if not name or len(rest) > 2:
        raise SvmlabError(f"bad measure {spec!r}; expected NAME[:higher|lower[:ROPE]], "
                          f"e.g. test_accuracy:higher:0.01")
    direction = rest[0] if rest else DIRECTIONS.get(
        name, "lower" if name.startswith("objective_") else None)
    if direction not in ("higher", "lower"):
        raise SvmlabError(f"measure {spec!r}: say whether higher or lower is better "
                          f"({name}:higher or {name}:lower)")
    try:
        rope = float(rest[1]) if len(rest) == 2 else 0.0
    except ValueError:
        raise SvmlabError(f"measure {spec!r}: the ROPE must be a number; got {rest[1]!r}") from None
    if not rope >= 0:
        raise SvmlabError(f"measure {spec!r}: the ROPE must be >= 0; got {rope}")
    return Measure(name, direction == "higher", rope)


def aggregate(long: pd.DataFrame, measure: str, how: str = "mean") -> pd.DataFrame:
    """Block x treatment table of ``measure``, repetitions aggregated by 'mean' or 'median'.

    A cell whose repetitions all lack the measure is missing (NaN)."""
    if how not in AGGREGATES:
        raise SvmlabError(f"unknown aggregate {how!r}; allowed: {', '.join(AGGREGATES)}")
    table = long.pivot_table(index="block", columns="treatment", values=measure, aggfunc=how,
                             dropna=False, observed=True)
    treatments = sorted(long["treatment"].unique())
    blocks = sorted(long["block"].unique())
    return table.reindex(index=blocks, columns=treatments)


def complete_blocks(table: pd.DataFrame, strict: bool = False) -> tuple[pd.DataFrame, dict]:
    """Drop the blocks with missing treatments, warning with the list (or failing if strict).

    Returns the complete table and {block: [missing treatments]}."""
    missing = {str(block): [str(t) for t in row.index[row.isna()]]
               for block, row in table.iterrows() if row.isna().any()}
    if missing:
        listing = "; ".join(f"{b}: {', '.join(ts)}" for b, ts in missing.items())
        if strict:
            raise SvmlabError(f"missing cells (block: treatments without a value): {listing}")
        warnings.warn(f"dropping {len(missing)} block(s) with missing treatments: {listing}",
                      stacklevel=2)
    return table.dropna(axis=0, how="any"), missing
