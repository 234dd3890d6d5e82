"""Measures with their direction and region of practical equivalence, and the block x treatment
table of one measure."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from svmlab import vocabulary
from svmlab.analysis import precision
from svmlab.errors import SvmlabError, did_you_mean

DEFAULT_MEASURES = ("test_accuracy", "fit_time_s")
AGGREGATES = ("mean", "median")
#: Default ROPEs by kind of measure: accuracies (fractions) within 1 percentage point, counts
#: and times within 10 % (a relative ROPE applies to log-ratios, the only scale on which 0.5 s
#: and 2.5e5 s compare); any other kind 0 (no equivalence).
ROPES = {
    vocabulary.ACCURACY: "0.01",
    vocabulary.TIME: "10%",
    vocabulary.ITERATIONS: "10%",
    vocabulary.COUNT: "10%",
}


@dataclass(frozen=True)
class Measure:
    """A metric, whether higher values are better, and its region of practical equivalence:
    |A - B| <= rope, or with ``relative`` |log(A / B)| <= log(1 + rope)."""

    name: str
    higher_is_better: bool
    rope: float = 0.0
    relative: bool = False

    @property
    def direction(self) -> str:
        return vocabulary.HIGHER if self.higher_is_better else vocabulary.LOWER

    @property
    def rope_text(self) -> str:
        """The ROPE as written in a measure specification: '0.01' or '10%'."""
        return f"{100 * self.rope:g}%" if self.relative else f"{self.rope:g}"

    @property
    def spec(self) -> str:
        return f"{self.name}:{self.direction}:{self.rope_text}"


def default_rope(name: str) -> str:
    """The ROPE of a measure named without one: that of its kind (ROPES), else 0."""
    return ROPES.get(vocabulary.kind(name), "0")


def parse_measure(spec: str) -> Measure:
    """'NAME', 'NAME:higher|lower' or 'NAME:higher|lower:ROPE' (the direction of a measure of
    ``svmlab.vocabulary`` may be left out); ROPE is a number (absolute) or a percentage ('10%',
    on log-ratios)."""
    name, *rest = spec.split(":")
    if not name or len(rest) > 2:
        raise SvmlabError(
            f"bad measure {spec!r}; expected NAME[:higher|lower[:ROPE]], "
            f"e.g. test_accuracy:higher:0.01"
        )
    direction = rest[0] if rest else vocabulary.direction(name)
    if name.startswith(vocabulary.TO_TARGET):
        precision.parse(name)  # checks the tolerance
    if direction not in (vocabulary.HIGHER, vocabulary.LOWER):
        named = [m for m in vocabulary.directed() if not m.endswith("*")]
        hint = did_you_mean(name, named) if not rest else ""
        raise SvmlabError(
            f"measure {spec!r}: say whether higher or lower is better "
            f"({name}:higher or {name}:lower); measures whose direction is known: "
            f"{', '.join(vocabulary.directed())}.{hint}"
        )
    text = rest[1].strip() if len(rest) == 2 else default_rope(name)
    relative = text.endswith("%")
    try:
        rope = float(text[:-1]) / 100 if relative else float(text)
    except ValueError:
        raise SvmlabError(
            f"measure {spec!r}: the ROPE must be a number (absolute) or a "
            f"percentage such as 10% (on log-ratios); got {text!r}"
        ) from None
    if not (math.isfinite(rope) and rope >= 0):
        raise SvmlabError(f"measure {spec!r}: the ROPE must be >= 0; got {text}")
    return Measure(name, direction == vocabulary.HIGHER, rope, relative)


def aggregate(long: pd.DataFrame, measure: str, how: str = "mean") -> pd.DataFrame:
    """Block x treatment table of ``measure``, repetitions aggregated by 'mean' or 'median'.

    A cell whose repetitions all lack the measure is missing (NaN)."""
    if how not in AGGREGATES:
        raise SvmlabError(f"unknown aggregate {how!r}; allowed: {', '.join(AGGREGATES)}")
    table = long.pivot_table(
        index="block", columns="treatment", values=measure, aggfunc=how, dropna=False, observed=True
    )
    treatments = sorted(long["treatment"].unique())
    blocks = sorted(long["block"].unique())
    return table.reindex(index=blocks, columns=treatments)


def infinite_as_missing(table: pd.DataFrame, measure: Measure, profiled: bool) -> pd.DataFrame:
    """``table`` with infinite cells as missing, with a warning naming them, worded for the
    measure: a derived measure's +inf is a target never reached, any other measure's is just
    infinite. A rank test cannot order them; the performance profiles (``profiled``) count
    them as failures."""
    infinite = np.isinf(table.to_numpy(dtype=float))
    if not infinite.any():
        return table
    listing = "; ".join(
        f"{b}: {', '.join(map(str, row.index[row]))}"
        for b, row in pd.DataFrame(infinite, table.index, table.columns).iterrows()
        if row.any()
    )
    what = (
        "target never reached"
        if measure.name.startswith(vocabulary.TO_TARGET)
        else f"{measure.name} is infinite"
    )
    failures = ", as failures by the performance profiles" if profiled else ""
    warnings.warn(f"{what} (treated as missing by the tests{failures}): {listing}", stacklevel=3)
    return table.mask(infinite)


def complete_blocks(
    table: pd.DataFrame, strict: bool = False, columns: dict | None = None
) -> tuple[pd.DataFrame, dict]:
    """Drop the blocks with missing treatments, warning with the list and the filters that
    would avoid it (or failing if strict); ``columns`` as for :func:`incomplete_hint`.

    Returns the complete table and {block: [missing treatments]}."""
    missing = {
        str(block): [str(t) for t in row.index[row.isna()]]
        for block, row in table.iterrows()
        if row.isna().any()
    }
    if missing:
        listing = "; ".join(f"{b}: {', '.join(ts)}" for b, ts in missing.items())
        hint = incomplete_hint(table, columns, listed=False)
        if strict:
            raise SvmlabError(
                f"missing cells (block: treatments without a value): {listing}" + hint
            )
        warnings.warn(
            f"dropping {len(missing)} block(s) with missing treatments: {listing}" + hint,
            stacklevel=2,
        )
    return table.dropna(axis=0, how="any"), missing


def incomplete_hint(table: pd.DataFrame, columns: dict | None = None, listed: bool = True) -> str:
    """The missing cells of ``table`` (unless ``listed`` elsewhere) and the MLflow filters that
    leave out the incomplete blocks, or the treatments missing somewhere.

    ``columns`` {'block': [...], 'treatment': [...]} names the run columns ('tags.dataset') the
    labels came from; a filter is suggested for a single column only (combined labels have no
    single filter) and when what it keeps is still a table of 2 x 2 or more."""
    missing = table.isna()
    if not missing.to_numpy().any():
        return ""
    text = (
        ""
        if not listed
        else "; missing cells (block: treatments): "
        + "; ".join(
            f"{b}: {', '.join(map(str, row.index[row]))}"
            for b, row in missing.iterrows()
            if row.any()
        )
    )
    n, k = table.shape
    keys = {role: (columns or {}).get(role, []) for role in ("block", "treatment")}
    suggested = False
    for role, dropped, kept, what in (
        ("block", table.index[missing.any(axis=1)], k, "incomplete blocks"),
        ("treatment", table.columns[missing.any(axis=0)], n, "treatments missing somewhere"),
    ):
        if len(keys[role]) == 1 and len(dropped) <= (n if role == "block" else k) - 2 and kept >= 2:
            text += (
                f'; to leave out the {what}: --filter "'
                f'{_not_in_filter(keys[role][0], list(map(str, dropped)))}"'
            )
            suggested = True
    blocks, treatments = complete_part(missing)
    if (
        not suggested
        and len(keys["block"]) == len(keys["treatment"]) == 1
        and n - len(blocks) >= 2
        and k - len(treatments) >= 2
    ):
        both = " and ".join(
            _not_in_filter(keys[role][0], list(map(str, left_out)))
            for role, left_out in (("block", blocks), ("treatment", treatments))
            if left_out
        )
        text += f'; a complete table of what remains: --filter "{both}"'
    return text


def complete_part(missing: pd.DataFrame, keep=None) -> tuple[list, list]:
    """Blocks and treatments to leave out so that no cell is missing, found greedily: the block
    or treatment with the largest share of missing cells goes first (blocks on a tie); the
    treatment ``keep`` (a control) stays."""
    rows, cols = list(missing.index), list(missing.columns)
    while rows and cols and missing.loc[rows, cols].to_numpy().any():
        part = missing.loc[rows, cols]
        by_row = part.mean(axis=1)
        by_col = part.mean(axis=0).drop([keep] if keep is not None else [], errors="ignore")
        if by_col.empty or by_row.max() >= by_col.max():
            rows.remove(by_row.idxmax())
        else:
            cols.remove(by_col.idxmax())
    return (
        [b for b in missing.index if b not in rows],
        [t for t in missing.columns if t not in cols],
    )


def complete_part_table(table: pd.DataFrame, keep=None) -> tuple[pd.DataFrame, dict] | None:
    """When fewer than 2 blocks have every treatment: the table without what
    :func:`complete_part` leaves out (a solver that reached a time-to-gap target on few blocks
    goes, instead of those blocks), with a warning naming it, if 2 blocks and 2 treatments
    remain (else None). Returns what :func:`complete_blocks` does."""
    blocks, treatments = complete_part(table.isna(), keep)
    if min(len(table.index) - len(blocks), len(table.columns) - len(treatments)) < 2:
        return None
    missing = {str(b): [str(t) for t in table.columns[table.loc[b].isna()]] for b in blocks}
    left_out = " and ".join(
        f"the {what} {', '.join(map(str, names))}"
        for what, names in (("treatment(s)", treatments), ("block(s)", blocks))
        if names
    )
    warnings.warn(
        f"fewer than 2 blocks have every treatment: leaving out {left_out}, which "
        f"miss the most cells",
        stacklevel=2,
    )
    return table.drop(index=blocks, columns=treatments), missing


def _not_in_filter(column: str, values: list[str]) -> str:
    """An MLflow filter that ``column`` (tags.X or params.X) is none of ``values`` (MLflow has no
    IN for tags and params, nor OR, so: a conjunction of !=)."""
    kind, key = column.split(".", 1)
    return " and ".join(f"{kind}.`{key}` != '" + v.replace("'", "\\'") + "'" for v in values)
