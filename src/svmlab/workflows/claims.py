"""Claims judged on the runs of a workflow: each claim is decided on blocks of runs (by default
one dataset and seed), by an estimate with a confidence interval, never by one run or a ratio
of means; the paper's claims and svmlab's own statements are two tables (Markdown, HTML, CSV).

The statistics are the analysis stage's: the Hodges-Lehmann estimate with its exact
signed-rank interval (over blocks), bounded where a block is censored (a time to a target
never reached, or only known to lie between two times), and Theil-Sen slopes on log-log axes
(``svmlab.analysis.trend``). Blocks are distinct measurements: a block whose measured values
equal another block's of the same problem exactly, on both sides, is a copy and counts once (a
deterministic solver on a fixed split gives every seed the same numbers). A verdict is decided
only by an interval that attains CONFIDENCE (95 %: six distinct blocks for the signed-rank
interval); an accuracy measured once on one fixed test set gets the exact binomial interval of
that test set instead, and an accuracy is reproduced only by a model significantly better than
the majority-class classifier on its test set."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from svmlab import vocabulary
from svmlab.analysis import measurements, page, precision, report, trend, wilcoxon
from svmlab.tracking import columns
from svmlab.workflows.spec import KINDS, Claim, Select, Workflow

REPRODUCED, NOT_REPRODUCED = "reproduced", "not reproduced"
INCONCLUSIVE, UNTESTABLE = "inconclusive", "not testable here"
#: Reproduced under some readings of the protocol (or settings) and refuted under others.
DEPENDS = "depends"
VERDICTS = (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE, DEPENDS, UNTESTABLE)
COLUMNS = (
    "claim",
    "source",
    "measure",
    "paper",
    "n",
    "unit",
    "confidence",
    "estimate",
    "interval",
    "test",
    "verdict",
    "detail",
)
#: The confidence a decided verdict's interval must attain.
CONFIDENCE = 0.95
#: The keys of a block that measure one problem again (another seed), not another problem.
REPEATS = ("seed",)
#: The size of the run's test set, from its dataset's recorded profile.
TEST_SIZE = columns.profile(vocabulary.TEST_SIZE)
#: Whose statements each table holds, in the order shown.
TITLES = {"paper": "The paper's claims", "svmlab": "svmlab's own statements"}
#: A stop reason that names a cap: it contains ``max_`` (``max_iter=...``, ``max_time_s=...``)
#: or a word starting with ``cap`` (an epoch or time cap).
CAPPED = re.compile(r"max_|\bcap", re.IGNORECASE)
STOP_REASON = columns.tag(vocabulary.STOP_REASON_TAG)


@dataclass(frozen=True)
class Judged:
    """A claim with its verdict: ``n`` distinct blocks of its ``unit`` of replication (or test
    points: an accuracy on one fixed test set), the ``estimate`` (a range (low, high) when
    censored blocks leave it open; equal ends otherwise) and the ``interval`` with its attained
    ``confidence``, on the scale of the test (a ratio, a difference, a value or a slope); None
    when nothing was estimated. ``depends_on`` names what a DEPENDS verdict depends on;
    ``reading`` the reading of the protocol a row of svmlab's judges its paper claim under."""

    claim: Claim
    test: str
    verdict: str
    detail: str
    n: int = 0
    estimate: tuple[float, float] | None = None
    interval: tuple[float, float] | None = None
    unit: str = ""
    confidence: float | None = None
    depends_on: str = ""
    reading: str = ""

    def row(self) -> dict:
        c = self.claim
        paper = _number(c.paper) if c.paper is not None else ""
        if c.paper_text:
            paper = f"{paper} ({c.paper_text})" if paper else c.paper_text
        estimate = interval = ""
        if self.estimate is not None:
            low, high = self.estimate
            estimate = _number(low) if low == high else f"{_number(low)} to {_number(high)}"
            interval = f"[{_number(self.interval[0])}, {_number(self.interval[1])}]"
        text = (
            f"svmlab's reading: {c.claim}, under {self.reading}"
            if self.reading
            else f"svmlab's companion: {c.claim}"
            if c.companion_of
            else c.claim
        )
        confidence = "" if self.confidence is None else f"{self.confidence * 100:.3g} %"
        verdict = f"{DEPENDS} on {self.depends_on}" if self.verdict == DEPENDS else self.verdict
        return {
            "claim": text,
            "source": c.source,
            "measure": c.measure or "",
            "paper": paper,
            "n": self.n or "",
            "unit": self.unit if self.n else "",
            "confidence": confidence,
            "estimate": estimate,
            "interval": interval,
            "test": self.test,
            "verdict": verdict,
            "detail": self.detail,
        }


@dataclass(frozen=True)
class _Estimate:
    """What a claim's statistic gave: distinct blocks, estimate range, interval, how it was
    obtained, the interval's attained confidence and, where it is not the claim's, the unit of
    ``n``."""

    n: int
    estimate: tuple[float, float]
    interval: tuple[float, float]
    method: str
    confidence: float
    unit: str | None = None


class _Undecided(Exception):
    """A claim that cannot be estimated on these runs: the verdict and the reason."""

    def __init__(self, verdict: str, reason: str, n: int = 0):
        super().__init__(reason)
        self.verdict, self.reason, self.n = verdict, reason, n


def judge_all(
    claims: list[Claim], runs: pd.DataFrame, derive: Callable[[list[str]], dict[str, np.ndarray]]
) -> list[Judged]:
    """Judge every claim on ``runs`` (FINISHED training runs, the layout of
    :func:`svmlab.tracking.queries.search_runs`); ``derive(names)`` gives the values of
    measures computed from traces (``time_to_gap_1e-3``), one per run. A paper claim with
    ``readings`` is one row of the paper's tally; each reading but its first (the paper's
    stated one) follows it as svmlab's statement, in svmlab's tally (:func:`_extra_readings`).
    Warm-started runs (``measurements.WARM_START``) are left out: their times are of a step along a
    path of fits."""
    if measurements.WARM_START in runs:
        runs = runs[runs[measurements.WARM_START] != "true"]
    wanted = sorted(
        {
            c.measure
            for c in claims
            if c.measure and columns.metric(c.measure) not in runs and precision.parse(c.measure)
        }
    )
    values = (
        {columns.metric(k): v for k, v in derive(wanted).items()} if wanted and len(runs) else {}
    )
    runs = runs.assign(**values)
    return [j for c in claims for j in [judge(c, runs), *_extra_readings(c, runs)]]


def _extra_readings(claim: Claim, runs: pd.DataFrame) -> list[Judged]:
    """svmlab's statements of a paper claim under each reading of its protocol but the first:
    each beside the claim, in svmlab's tally (none for other claims)."""
    if not claim.readings or claim.kind != "paper":
        return []
    return [
        replace(
            judge(_read(claim, reading), runs),
            reading=name,
            claim=replace(_read(claim, reading), kind="svmlab", companion_of=claim.claim),
        )
        for name, reading in list(claim.readings.items())[1:]
    ]


def _read(claim: Claim, reading: dict) -> Claim:
    """The claim under one reading of the protocol: its sides with the reading's overrides."""
    relative_to = (
        {**(claim.relative_to or {}), **reading["relative_to"]}
        if "relative_to" in reading
        else claim.relative_to
    )
    return replace(
        claim,
        readings={},
        value={**claim.value, **reading.get("value", {})},
        relative_to=relative_to,
    )


def judge(claim: Claim, runs: pd.DataFrame) -> Judged:
    """One claim on runs that carry its measure as ``metrics.<measure>``; under each of its
    ``readings`` and at each point of its ``grid``, one verdict over them (:func:`_combined`)."""
    unit = unit_of(claim)
    if claim.untestable is not None:
        return Judged(claim, "", UNTESTABLE, claim.untestable)
    if claim.readings:
        return _over_readings(claim, runs)
    if claim.grid:
        return _over_grid(claim, runs)
    ((rule, bound),) = claim.decide.items()
    test = _test_text(claim, rule, bound)
    sides = [claim.value] + ([claim.relative_to] if claim.relative_to is not None else [])
    frames = [_runs_of(claim, where, runs) for where in sides]
    empty = [_label(where) for where, frame in zip(sides, frames) if frame.empty]
    if empty:
        return Judged(
            claim,
            test,
            UNTESTABLE,
            "; ".join(f"no finished run of {label} with {claim.measure}" for label in empty),
            unit=unit,
        )
    summary = " against ".join(
        _side_text(where, frame, claim.measure) for where, frame in zip(sides, frames)
    )
    # where every run of both sides is at the measure's ceiling (separable data), a comparison
    # of the two cannot order them
    ceiling, margin = vocabulary.ceiling(claim.measure) or (math.inf, 0.0)
    if len(frames) == 2 and all((f["low"] >= ceiling - margin).all() for f in frames):
        return Judged(
            claim,
            test,
            UNTESTABLE,
            f"every run of both sides is within {margin:g} of "
            f"{claim.measure} = {_number(ceiling)} (separable "
            f"data): this data cannot order them; {summary}",
            unit=unit,
        )
    try:
        if claim.growth_with is not None:
            found = _growth(claim, frames)
        elif claim.sensitivity_to is not None:
            found = _sensitivity(claim, frames)
        else:
            found = _paired(claim, frames)
    except _Undecided as why:
        return Judged(claim, test, why.verdict, f"{why.reason}; {summary}", why.n, unit=unit)
    verdict, reason = _decide(rule, bound, claim.paper, found)
    if vocabulary.baseline(claim.measure) and claim.relative_to is None:
        verdict, reason, against = _against_majority(claim, frames[0], verdict, reason)
        summary += f"; {against}"
    return Judged(
        claim,
        test,
        verdict,
        f"{reason}; {found.method}; {summary}",
        found.n,
        found.estimate,
        found.interval,
        found.unit or unit,
        found.confidence,
    )


def unit_of(claim: Claim) -> str:
    """The claim's unit of replication (spec.UNITS): as the claim states it, else derived from
    its tested side: ``problems`` where it spans datasets (or names none), else, on one dataset,
    ``timings`` for a time or an iteration count (the same work measured again) and ``seeds``
    for any other measure (a randomised solver's seeds)."""
    if claim.unit is not None:
        return claim.unit
    datasets = claim.value.get("dataset")
    if datasets is None or (isinstance(datasets, list) and len(datasets) > 1):
        return "problems"
    cost = claim.measure in vocabulary.OWN_STOP or (
        claim.measure is not None and precision.PATTERN.match(claim.measure)
    )
    return "timings" if cost else "seeds"


def _over_readings(claim: Claim, runs: pd.DataFrame) -> Judged:
    """A claim under each reading of the paper's protocol (its ``readings``), one verdict."""
    judged = [judge(_read(claim, r), runs) for r in claim.readings.values()]
    return _combined(
        claim,
        judged,
        [f"under {name}" for name in claim.readings],
        f"the {len(judged)} readings of the paper's protocol",
        "the reading of the protocol",
    )


def _over_grid(claim: Claim, runs: pd.DataFrame) -> Judged:
    """A claim that hinges on settings the paper does not report, judged at each combination of
    the values of its ``grid`` keys that the runs of its tested side hold, one verdict."""
    keys, plain = claim.grid, replace(claim, grid=[])
    values = {k: _key_values(runs, k).astype(str).to_numpy() for k in keys}
    tested = np.ones(len(runs), dtype=bool)
    for key, wanted in claim.value.items():
        tested &= _matches(_key_values(runs, key), wanted)
    points = sorted({tuple(values[k][i] for k in keys) for i in np.flatnonzero(tested)})
    if not points:
        return judge(plain, runs.iloc[:0])
    judged = []
    for point in points:
        at = np.ones(len(runs), dtype=bool)
        for key, value in zip(keys, point):
            at &= values[key] == value
        judged.append(judge(plain, runs[at]))
    varying = [i for i, _ in enumerate(keys) if len({p[i] for p in points}) > 1]
    labels = [
        "at " + ", ".join(f"{keys[i]}={p[i]}" for i in (varying or range(len(keys))))
        for p in points
    ]
    fixed = "".join(
        f", {keys[i]}={points[0][i]}" for i in range(len(keys)) if varying and i not in varying
    )
    grid = (
        f"the {len(points)} setting(s) the paper does not report that the runs hold "
        f"({', '.join(keys)}{'; fixed: ' + fixed[2:] if fixed else ''})"
    )
    return _combined(
        claim, judged, labels, grid, ", ".join(keys[i] for i in (varying or range(len(keys))))
    )


def _combined(
    claim: Claim, judged: list[Judged], labels: list[str], points: str, over: str
) -> Judged:
    """One verdict from the verdicts at several points (readings of the protocol, or settings
    the paper does not report), over the points where the claim can be tested: reproduced when
    it is at every one, not reproduced when it is at none (refuted at each), DEPENDS (on
    ``over``) when it is reproduced at some and refuted at others, else inconclusive; not
    testable when no point tests it. Each point's verdict is in the detail."""
    each = "; ".join(
        f"{label}: {j.row()['verdict']}"
        + (f", estimate {j.row()['estimate']} {j.row()['interval']}" if j.estimate else "")
        + (f" ({j.detail.split(';')[0]})" if j.verdict != REPRODUCED else "")
        for label, j in zip(labels, judged)
    )
    tested = {j.verdict for j in judged if j.verdict != UNTESTABLE}
    held = sum(j.verdict == REPRODUCED for j in judged)
    if not tested:
        verdict, reason = UNTESTABLE, f"not testable at any of {points}"
    elif tested == {REPRODUCED}:
        verdict, reason = REPRODUCED, f"reproduced at each of {points} where it can be tested"
    elif tested == {NOT_REPRODUCED}:
        verdict, reason = NOT_REPRODUCED, f"refuted at each of {points} where it can be tested"
    elif {REPRODUCED, NOT_REPRODUCED} <= tested or DEPENDS in tested:
        verdict, reason = DEPENDS, f"depends on {over}: reproduced at {held} of {points}"
    else:
        verdict, reason = INCONCLUSIVE, f"reproduced at {held} of {points}, undecided elsewhere"
    found = [j for j in judged if j.estimate is not None]
    span = (
        dict(
            estimate=(min(j.estimate[0] for j in found), max(j.estimate[1] for j in found)),
            interval=(min(j.interval[0] for j in found), max(j.interval[1] for j in found)),
            confidence=min(j.confidence for j in found),
        )
        if found
        else {}
    )
    units = ", ".join(dict.fromkeys(j.unit for j in judged if j.n))
    return Judged(
        claim,
        judged[0].test,
        verdict,
        f"{reason}: {each}",
        sum(j.n for j in judged),
        unit=units,
        depends_on=over,
        **span,
    )


def _runs_of(claim: Claim, where: dict, runs: pd.DataFrame) -> pd.DataFrame:
    """The runs matching ``where`` that carry the measure: their block (a tuple of the values
    of the claim's blocks), the keys of its shape, and the measure as bounds [low, high]. A
    value is its own bounds; an infinite one (a target never reached) is more than the run's
    own time: [fit_time_s, inf] (an iteration count: [n_iter, inf]); a value with a lower bound
    (``<measure>:lower``, precision.LOWER: a time known only to lie before the fit's end) is
    [lower, value]; a measure of the run's own stop (OWN_STOP) of a run that a cap stopped
    (CAPPED) is more than its value: [value, inf]. ``censored`` marks the runs open above,
    ``bounded`` those known within an interval; ``majority`` and ``n_test`` describe the run's
    test set."""
    column = columns.metric(claim.measure)
    if column not in runs or runs.empty:
        return pd.DataFrame(
            columns=["block", "key", "low", "high", "censored", "bounded", "majority", "n_test"]
        )
    chosen = np.ones(len(runs), dtype=bool)
    for key, wanted in where.items():
        chosen &= _matches(_key_values(runs, key), wanted)
    found = runs[chosen & runs[column].astype(float).notna().to_numpy()]
    value = found[column].astype(float)
    capped = (
        found[STOP_REASON].fillna("").astype(str).str.contains(CAPPED).to_numpy()
        if claim.measure in vocabulary.OWN_STOP and STOP_REASON in found
        else False
    )
    censored = (np.isinf(value) & (value > 0)) | capped
    below = columns.metric(vocabulary.floor(claim.measure))
    floor = (
        found[below].astype(float).fillna(0.0)
        if below in found
        else pd.Series(0.0, index=found.index)
    )
    lower = (
        found[column + precision.LOWER].astype(float)
        if column + precision.LOWER in found
        else pd.Series(math.nan, index=found.index)
    )
    bounded = lower.notna() & np.isfinite(value) & ~censored
    shape = claim.growth_with or claim.sensitivity_to
    majority = columns.metric(vocabulary.baseline(claim.measure))
    return pd.DataFrame(
        {
            "block": list(zip(*(_key_values(found, k).astype(str) for k in claim.blocks))),
            "key": pd.to_numeric(_key_values(found, shape), errors="coerce") if shape else math.nan,
            "low": np.where(np.isinf(value), floor, np.where(bounded, lower, value)),
            "high": np.where(censored, np.inf, value),
            "censored": censored,
            "bounded": bounded,
            "majority": found[majority].astype(float) if majority in found else math.nan,
            "n_test": (
                pd.to_numeric(found[TEST_SIZE], errors="coerce") if TEST_SIZE in found else math.nan
            ),
        },
        index=found.index,
    )


def _blockwise(frame: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """One row per block (and ``by``, kept when missing): the mean of its runs' bounds, key and
    test set size, how many of its runs are censored or bounded."""
    means = {c: (c, "mean") for c in ("low", "high", "key", "n_test") if c not in by}
    return (
        frame.groupby(["block", *by], sort=True, dropna=False)
        .agg(**means, censored=("censored", "sum"), bounded=("bounded", "sum"))
        .reset_index()
    )


def _paired(claim: Claim, frames: list[pd.DataFrame]) -> _Estimate:
    """The Hodges-Lehmann estimate and exact interval over distinct blocks: of the per-block
    value (one side), else of the per-block log ratio (or difference) of the two sides. An
    accuracy whose blocks are one measurement (one fixed test set) gets that test set's exact
    binomial interval (:func:`_fixed_test_set`)."""
    tested = _blockwise(frames[0], [])
    if len(frames) == 1:
        found = _located(
            claim, tested["block"], tested["low"], tested["high"], "value", _censored(tested)
        )
        once = tested.iloc[0]
        if (
            found.n == 1
            and vocabulary.baseline(claim.measure)
            and once["low"] == once["high"]
            and frames[0]["low"].nunique() == 1
            and once["n_test"] > 0
        ):
            return _fixed_test_set(once["low"], int(once["n_test"]), len(tested))
        return found
    other = _blockwise(frames[1], [])
    low, high, both, censored = _differences(claim, tested, other)
    left = len(tested) + len(other) - 2 * len(both)
    log = claim.combine == "ratio"
    found = _located(
        claim,
        both["block"],
        low,
        high,
        "log ratio" if log else "difference",
        censored,
        f", {left} unpaired block(s) left out" if left else "",
        same=[both[c] for c in ("low", "high", "low_other", "high_other")],
    )
    if not log:
        return found
    exp = tuple(float(np.exp(v)) for v in (*found.estimate, *found.interval))
    return replace(found, estimate=exp[:2], interval=exp[2:])


def _fixed_test_set(accuracy: float, n_test: int, blocks: int) -> _Estimate:
    """An accuracy measured on one fixed test set (every block the same number): its only
    uncertainty is the test set's, the exact binomial (Clopper-Pearson) interval of its number
    correct, round(accuracy x n_test), out of n_test."""
    correct = round(accuracy * n_test)
    ci = stats.binomtest(correct, n_test).proportion_ci(CONFIDENCE, method="exact")
    copies = f" ({blocks} block(s) with that same value: one measurement)" if blocks > 1 else ""
    return _Estimate(
        n_test,
        (accuracy, accuracy),
        (ci.low, ci.high),
        f"one fixed test set of {n_test} points{copies}: the exact binomial "
        f"(Clopper-Pearson) {CONFIDENCE * 100:g} % interval of {correct} correct",
        CONFIDENCE,
        "test points",
    )


def _differences(claim: Claim, tested: pd.DataFrame, other: pd.DataFrame):
    """Per paired block, the bounds of the log ratio or the difference of the two sides."""
    both = tested.merge(other, on="block", suffixes=("", "_other"))
    if both.empty:
        raise _Undecided(
            UNTESTABLE, f"no block ({' x '.join(claim.blocks)}) has runs of both sides"
        )
    if claim.combine == "difference":
        return (
            both["low"] - both["high_other"],
            both["high"] - both["low_other"],
            both,
            _censored(both),
        )
    if (both[["high", "high_other"]] <= 0).any(axis=None):
        raise _Undecided(UNTESTABLE, f"a ratio needs positive values of {claim.measure}")
    with np.errstate(divide="ignore"):  # a lower bound of 0 is a ratio open below
        return (
            np.log(both["low"]) - np.log(both["high_other"]),
            np.log(both["high"]) - np.log(both["low_other"]),
            both,
            _censored(both),
        )


def _distinct(claim: Claim, blocks, same: list) -> np.ndarray:
    """Which blocks are distinct measurements. The blocks of one problem (equal values of the
    claim's block keys but REPEATS: the seeds of one dataset) are copies of one measurement
    when each of ``same`` (their measured values on both sides) is exactly equal, as logged,
    in all of them: a deterministic solver on a fixed split gives every seed the same numbers,
    and they count once. Where a problem's blocks differ at all (a randomised solver, a seeded
    split), each is its own measurement, even two that happen to tie."""
    problem = [i for i, key in enumerate(claim.blocks) if key not in REPEATS]
    keys = pd.DataFrame(
        {
            "problem": [tuple(b[i] for i in problem) for b in blocks],
            **{str(i): np.asarray(v, dtype=float) for i, v in enumerate(same)},
        }
    )
    values = list(keys.columns[1:])
    copied = (
        keys.groupby("problem")[values]
        .transform(lambda v: v.nunique(dropna=False) == 1)
        .all(axis=1)
    )
    return ~(copied & keys.duplicated("problem")).to_numpy()


def _located(
    claim: Claim,
    blocks,
    low,
    high,
    what: str,
    censored: str,
    unpaired: str = "",
    same: list | None = None,
) -> _Estimate:
    """The Hodges-Lehmann estimate and interval of the per-block numbers known within bounds,
    over the distinct blocks (:func:`_distinct` of ``same``, default the bounds)."""
    kept = _distinct(claim, list(blocks), same if same is not None else [low, high])
    low, high = np.asarray(low, dtype=float)[kept], np.asarray(high, dtype=float)[kept]
    n, copies = len(low), int((~kept).sum())
    found = wilcoxon.hodges_lehmann_bounds(low, high, confidence=CONFIDENCE)
    counted = (
        f", {copies} more block(s) of the same problem with exactly the same values on "
        f"both sides (copies of one measurement, counted once)"
        if copies
        else ""
    )
    method = (
        f"{n} distinct block(s) ({' x '.join(claim.blocks)}){counted}{unpaired}: "
        f"Hodges-Lehmann estimate of the per-block {what} with its exact signed-rank "
        f"interval (attained {found['coverage'] * 100:.3g} %){censored}"
    )
    return _Estimate(
        n,
        (found["estimate_low"], found["estimate_high"]),
        (found["low"], found["high"]),
        method,
        found["coverage"],
    )


def signed_rank_blocks(confidence: float = CONFIDENCE) -> int:
    """The fewest distinct blocks whose exact signed-rank interval attains ``confidence``: the
    widest interval, [min, max] of the Walsh averages, attains 1 - 2^(1-n)."""
    return 1 + math.ceil(-math.log2(1 - confidence) - 1e-12)


def _growth(claim: Claim, frames: list[pd.DataFrame]) -> _Estimate:
    """The Theil-Sen slope of the per-block log ratio (or difference) against log of the
    block's size (``growth_with``), with Sen's interval."""
    tested, other = (_blockwise(f, []) for f in frames)
    low, _high, both, censored = _differences(claim, tested, other)
    if censored:
        raise _Undecided(
            INCONCLUSIVE, f"a censored block{censored} has no place on a fitted line", len(both)
        )
    kept = _distinct(claim, list(both["block"]), [both["key"], both["low"], both["low_other"]])
    size, low = both["key"][kept], low[kept]
    if size.isna().any() or (size <= 0).any():
        raise _Undecided(UNTESTABLE, f"runs without a positive {claim.growth_with}")
    sizes = size.nunique()
    fit = trend.theil_sen(size, low, confidence=CONFIDENCE) if sizes > 1 else None
    if fit is None:
        raise _Undecided(INCONCLUSIVE, f"1 value of {claim.growth_with}: no slope", len(size))
    what = "log ratio" if claim.combine == "ratio" else "difference"
    attained = min(CONFIDENCE, 1 - 2 / math.factorial(sizes))
    return _Estimate(
        len(size),
        (fit["estimate"],) * 2,
        (fit["low"], fit["high"]),
        f"{len(size)} distinct block(s) ({' x '.join(claim.blocks)}): Theil-Sen "
        f"slope of the per-block {what} against log {claim.growth_with} over "
        f"{sizes} sizes, Sen's {CONFIDENCE * 100:g} % interval (approximate; "
        f"{sizes} sizes attain {attained * 100:.3g} % at most: 1 - 2/{sizes}!)",
        attained,
    )


def _sensitivity(claim: Claim, frames: list[pd.DataFrame]) -> _Estimate:
    """Per block, each side's least-squares slope of log measure against log ``sensitivity_to``
    over the values both sides ran; the Hodges-Lehmann estimate and interval of |slope| of the
    tested side less the other's (below 0: the tested side is less sensitive), within bounds
    where censored values leave a slope open (:func:`_slope_range`)."""
    key = claim.sensitivity_to
    tested, other = (_blockwise(f, ["key"]) for f in frames)
    if (
        tested["key"].isna().any()
        or other["key"].isna().any()
        or (tested["key"] <= 0).any()
        or (other["key"] <= 0).any()
    ):
        raise _Undecided(UNTESTABLE, f"runs without a positive value of {key}")
    both = tested.merge(other, on=["block", "key"], suffixes=("", "_other"))
    fitted = [g for _, g in both.groupby("block") if g["key"].nunique() >= 2]
    if not fitted:
        raise _Undecided(INCONCLUSIVE, f"no block where both sides ran two values of {key}")
    if any((g[["bounded", "bounded_other"]] > 0).any(axis=None) for g in fitted):
        raise _Undecided(
            INCONCLUSIVE,
            f"a value known only within an interval has no place "
            f"on a fitted slope{_censored(pd.concat(fitted))}",
        )
    ranges = [
        (
            _slope_range(g["key"], g["low"], g["censored"] > 0),
            _slope_range(g["key"], g["low_other"], g["censored_other"] > 0),
        )
        for g in fitted
    ]
    low = np.array([a[0] - b[1] for a, b in ranges])
    high = np.array([a[1] - b[0] for a, b in ranges])
    slopes = [
        (
            trend.log_log_slope(g["key"], np.log(g["low"])),
            trend.log_log_slope(g["key"], np.log(g["low_other"])),
        )
        for g in fitted
    ]
    return _located(
        claim,
        [g["block"].iloc[0] for g in fitted],
        low,
        high,
        f"|slope| of log {claim.measure} against log {key} "
        f"(tested less the other; median slopes "
        f"{_number(np.median([a for a, _ in slopes]))} and "
        f"{_number(np.median([b for _, b in slopes]))}, censored "
        f"values at their lower bounds)",
        _censored(pd.concat(fitted)),
    )


def _slope_range(key: pd.Series, low: pd.Series, censored: pd.Series) -> tuple[float, float]:
    """The range of |least-squares slope| of log measure against log key when the censored
    values are only known to be at least ``low``. Raising a value at a key above the mean log
    key raises the slope, so with every censored value there and the slope at the lower bounds
    s >= 0, |slope| is at least s (a time that grows with C and was capped at the largest C);
    otherwise it can be anything from 0."""
    slope = trend.log_log_slope(key, np.log(low))
    if not censored.any():
        return abs(slope), abs(slope)
    x = np.log(key.to_numpy(float))
    if slope >= 0 and (x[censored.to_numpy()] > x.mean()).all():
        return slope, np.inf
    return 0.0, np.inf


def _censored(blocks: pd.DataFrame) -> str:
    """How many of the blocks' runs never reached their target or stopped at a cap, and how
    many are known only within an interval, in words ('' when none)."""
    count = int(blocks.filter(like="censored").to_numpy().sum())
    bounded = int(blocks.filter(like="bounded").to_numpy().sum())
    return (
        (
            f"; {count} run(s) never reached the target or stopped at a cap: censored, more "
            f"than the run's own time (or iterations)"
        )
        if count
        else ""
    ) + (
        (
            f"; {bounded} run(s) without a traced gap reached the target by the fit's end: "
            f"interval-censored, between the last certified trace row (0 without one) and the "
            f"fit time"
        )
        if bounded
        else ""
    )


def _decide(rule: str, bound: float, paper: float | None, found: _Estimate) -> tuple[str, str]:
    """The verdict of an interval against the claim's rule: reproduced when the whole interval
    holds it, not reproduced when none of it does, inconclusive when it straddles the bound
    or does not attain CONFIDENCE (too few distinct blocks)."""
    low, high = found.interval
    if rule in ("tolerance", "relative_tolerance"):
        width = bound if rule == "tolerance" else bound * abs(paper)
        holds, fails = (
            paper - width <= low and high <= paper + width,
            high < paper - width or low > paper + width,
        )
    elif rule == "below":
        holds, fails = high < bound, low >= bound
    else:
        holds, fails = low > bound, high <= bound
    if found.confidence < CONFIDENCE * (1 - 1e-9):
        return INCONCLUSIVE, (
            f"the interval attains {found.confidence * 100:.3g} % confidence, "
            f"below the {CONFIDENCE * 100:g} % a verdict needs (the exact "
            f"signed-rank interval needs {signed_rank_blocks()} distinct "
            f"blocks, here {found.n})"
        )
    if holds:
        return REPRODUCED, "the whole interval holds the claim"
    if fails:
        return NOT_REPRODUCED, "no value of the interval holds the claim"
    return INCONCLUSIVE, "the interval straddles the bound"


def _against_majority(
    claim: Claim, frame: pd.DataFrame, verdict: str, reason: str
) -> tuple[str, str, str]:
    """An accuracy is reproduced only by models significantly better than the majority-class
    classifier on their test set: for each run, the exact one-sided binomial test of its number
    correct (round(accuracy x n_test)) against the majority-class rate, at level 1 -
    CONFIDENCE. Where a run is not, a reproduced verdict becomes not reproduced when the paper's
    figure would pass that test on the same test set, else inconclusive (this test set cannot
    tell the paper's figure from a constant classifier's either); without the test set's size or
    majority rate, inconclusive. Returns the verdict, its reason and the test in words."""
    alpha = 1 - CONFIDENCE
    sized = frame.dropna(subset=["majority", "n_test"])
    if len(sized) < len(frame) or sized.empty:
        said = "the test set's size or majority-class rate is not logged"
        if verdict == REPRODUCED:
            return INCONCLUSIVE, f"{said}: a constant classifier cannot be ruled out", said
        return verdict, reason, said
    p = [
        _beats(acc, n, rate)
        for acc, n, rate in zip(sized["high"], sized["n_test"], sized["majority"])
    ]
    rate, n = float(sized["majority"].iloc[0]), int(sized["n_test"].min())
    said = (
        f"majority-class rate of the test set {_number(rate)} ({n} test points); exact "
        f"one-sided binomial test of each run's number correct against it: largest p = "
        f"{max(p):.3g}"
    )
    if verdict != REPRODUCED or max(p) < alpha:
        return verdict, reason, said
    failing = [
        (size, at) for q, size, at in zip(p, sized["n_test"], sized["majority"]) if q >= alpha
    ]  # the paper's figure is tested on each such run's test set
    if claim.paper is not None and all(
        _beats(claim.paper, size, at) < alpha for size, at in failing
    ):
        return (
            NOT_REPRODUCED,
            (
                f"a run is not significantly better than the majority-class "
                f"classifier (p = {max(p):.3g}), where the paper's figure "
                f"would be"
            ),
            said,
        )
    return (
        INCONCLUSIVE,
        (
            f"a run is not significantly better than the majority-class "
            f"classifier (p = {max(p):.3g}), and on this test set neither would "
            f"the paper's figure be"
        ),
        said,
    )


def _beats(accuracy: float, n_test: float, rate: float) -> float:
    """The p-value of the exact one-sided binomial test of round(accuracy x n_test) correct out
    of n_test against the rate of a constant classifier."""
    n = int(n_test)
    return float(
        stats.binomtest(
            round(accuracy * n), n, min(max(rate, 0.0), 1.0), alternative="greater"
        ).pvalue
    )


def table(judged: list[Judged]) -> pd.DataFrame:
    """The claims table: one row per claim, the columns of COLUMNS."""
    return pd.DataFrame([j.row() for j in judged], columns=list(COLUMNS))


def markdown(frame: pd.DataFrame) -> str:
    """The claims table as GitHub-flavoured Markdown."""
    return report.markdown(frame)


def by_kind(judged: list[Judged]) -> dict[str, list[Judged]]:
    """The judged claims of each kind (the paper's, svmlab's own) that has any."""
    found = {kind: [j for j in judged if j.claim.kind == kind] for kind in KINDS}
    return {kind: claims for kind, claims in found.items() if claims}


def sections(judged: list[Judged]) -> dict[str, list[Judged]]:
    """The rows of each table: the paper's claims, each followed by its companions (svmlab's
    statements of the same comparison at equal precision), then svmlab's other statements."""
    found = {
        "paper": [j for j in judged if j.claim.kind == "paper" or j.claim.companion_of],
        "svmlab": [j for j in judged if j.claim.kind == "svmlab" and not j.claim.companion_of],
    }
    return {kind: rows for kind, rows in found.items() if rows}


def section_count(rows: list[Judged]) -> str:
    """A table's counts: its claims', and its companions' and readings' apart ('' for none)."""
    companions = [j for j in rows if j.claim.companion_of]
    own = counted([j for j in rows if not j.claim.companion_of])
    what = "companions and readings" if any(j.reading for j in companions) else "companions"
    return own + (f"; svmlab's {what} beside them: {counted(companions)}" if companions else "")


def selection_table(chosen: list, metric: str) -> pd.DataFrame:
    """One row per dataset: the selected values, their validation score and the study
    (``chosen``: the selection step's results, with dataset, values, score and study)."""
    return pd.DataFrame(
        [
            {
                "dataset": c.dataset,
                **{k: _number(v) if isinstance(v, float) else v for k, v in c.values.items()},
                f"validation {metric}": _number(c.score),
                "study": c.study,
            }
            for c in chosen
        ]
    )


def selection_text(select: Select) -> str:
    """How the values were selected, in one sentence."""
    grid = "; ".join(f"{k} = {v}" for k, v in select.grid.items())
    by = f", trained with {' '.join(select.overrides)}" if select.overrides else ""
    return (
        f"Selected by validation, per {select.per}, before the sweep: the values with the "
        f"best {select.metric} on a {select.validation * 100:g} % validation split of the "
        f"training set (seed {select.seed}){by}, over {grid}; ties go to the smallest "
        f"values. Every run of the sweep trains with its dataset's values."
    )


def selection_markdown(select: Select, chosen: list) -> str:
    return f"{selection_text(select)}\n\n{markdown(selection_table(chosen, select.metric))}"


def summary(judged: list[Judged]) -> str:
    """The counts of each table, e.g. 'The paper's claims: 2 reproduced, ...'."""
    return "; ".join(f"{TITLES[kind]}: {counted(j)}" for kind, j in by_kind(judged).items())


def write(
    folder: Path,
    workflow: Workflow,
    scale: str,
    judged: list[Judged],
    figures: dict[str, Path] | None = None,
    notes: list[str] = (),
    chosen: list = (),
) -> None:
    """``claims.md``, ``claims.csv`` (with a ``kind`` column) and ``claims.html``, a styled
    page that also shows ``figures`` ({caption: local PNG file}, embedded) in ``folder``: the
    paper's claims and svmlab's own statements as two tables with their own counts; ``notes``
    say how derived measures were obtained (e.g. the reference optimum of a distance to it),
    below the tables; ``chosen`` are the values the selection step chose, above them."""
    title = f"{workflow.name} ({scale} scale): {workflow.paper}"
    command = f"svmlab workflow {workflow.name} --scale {scale}"
    noted = "".join(f"\n- {n}" for n in notes)
    selected = selection_markdown(workflow.select, chosen) + "\n\n" if chosen else ""
    groups = sections(judged)
    tables = "\n\n".join(
        f"## {TITLES[kind]}\n\n{section_count(j)}.\n\n{markdown(table(j))}"
        for kind, j in groups.items()
    )
    (folder / "claims.md").write_text(
        f"# {title}\n\n{workflow.description}\n\n"
        f"{summary(judged)}. Regenerate: `{command}`\n\n"
        + selected
        + tables
        + (f"\n\nNotes:{noted}\n" if notes else "")
    )
    pd.concat(
        [
            table(j).assign(
                kind=[r.claim.kind for r in j], beside=[r.claim.companion_of or "" for r in j]
            )
            for j in groups.values()
        ]
    ).to_csv(folder / "claims.csv", index=False)
    parts = []
    for kind, j in groups.items():
        cells = page.table(table(j), index=False)
        for verdict, css in ((REPRODUCED, "keep"), (NOT_REPRODUCED, "reject")):
            cells = cells.replace(f"<td>{verdict}</td>", f"<td class='{css}'>{verdict}</td>")
        parts.append((kind, TITLES[kind], page.conclusions([section_count(j)]) + cells))
    if notes:
        parts.append(("notes", "Notes", page.conclusions(list(notes))))
    shown = "".join(page.figure(path, caption) for caption, path in (figures or {}).items())
    selection = (
        [
            (
                "selection",
                "Selection",
                page.conclusions([selection_text(workflow.select)])
                + page.table(selection_table(chosen, workflow.select.metric), index=False),
            )
        ]
        if chosen
        else []
    )
    (folder / "claims.html").write_text(
        page.render(
            title,
            f"{workflow.description}\n{summary(judged)}\n{command}",
            selection + parts + ([("figures", "Figures", shown)] if shown else []),
        )
    )


TALLY_TITLE = "Verdicts per workflow (the paper's claims; svmlab's statements in brackets)"


def tally_row(name: str, frame: pd.DataFrame) -> dict[str, str]:
    """One workflow's count of each verdict in its ``claims.csv`` frame: the paper's claims
    (companions excluded: they are svmlab's), svmlab's statements in brackets."""
    own = frame.get("beside", pd.Series("", index=frame.index)).eq("")
    paper = frame["kind"].eq("paper") & own
    row = {"workflow": f"`{name}`"}
    for verdict in VERDICTS:
        hit = frame["verdict"].str.startswith(verdict)
        row[verdict] = f"{int((hit & paper).sum())} ({int((hit & ~paper).sum())})"
    return row


def counts(judged: list[Judged]) -> dict[str, int]:
    """How many claims got each verdict."""
    return {v: sum(j.verdict == v for j in judged) for v in VERDICTS}


def counted(judged: list[Judged]) -> str:
    """The counts in words: '2 reproduced, 0 not reproduced, ...'."""
    return ", ".join(f"{n} {v}" for v, n in counts(judged).items())


def metrics(judged: list[Judged]) -> dict[str, int]:
    """The counts as run metrics: ``claims_<verdict>`` for the paper's claims and
    ``svmlab_statements_<verdict>`` for svmlab's own."""
    prefix = {"paper": "claims", "svmlab": "svmlab_statements"}
    return {
        f"{prefix[kind]}_{v.replace(' ', '_')}": n
        for kind in KINDS
        for v, n in counts([j for j in judged if j.claim.kind == kind]).items()
    }


def _side_text(where: dict, frame: pd.DataFrame, measure: str) -> str:
    """A side in words: its runs, blocks, median and range of the measure (a censored run at
    its lower bound), censored runs."""
    never = int(frame["censored"].sum())
    shown = frame["high"].where(~frame["censored"].astype(bool), frame["low"])
    spread = (
        f"median {_number(shown.median())}, range {_number(shown.min())} to {_number(shown.max())}"
    )
    return (
        f"{_label(where)}: {len(frame)} run(s) in {frame['block'].nunique()} block(s), "
        f"{measure} {spread}"
        + (
            f", {never} censored (a target never reached or a cap: their lower bound counted)"
            if never
            else ""
        )
    )


def _label(where: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in where.items())


def _key_values(runs: pd.DataFrame, key: str) -> pd.Series:
    """The values of a tag, else of a param (``solver.C``), else of the dataset's recorded
    profile (``n_train``); all missing if none was logged."""
    for column in (columns.tag(key), columns.param(key), columns.profile(key)):
        if column in runs and runs[column].notna().any():
            return runs[column]
    return pd.Series([None] * len(runs), index=runs.index)


def _matches(values: pd.Series, wanted) -> np.ndarray:
    """Which values equal ``wanted`` (or one of a list): as numbers when both are numbers
    (``1e-3`` is ``0.001``), else as text."""
    options = wanted if isinstance(wanted, list) else [wanted]
    return np.array([any(_equal(v, w) for w in options) for v in values], dtype=bool)


def _equal(logged, wanted) -> bool:
    if logged is None or (isinstance(logged, float) and math.isnan(logged)):
        return False
    try:
        return math.isclose(float(logged), float(wanted), rel_tol=1e-12)
    except (TypeError, ValueError):
        return str(logged) == str(wanted)


def _test_text(claim: Claim, rule: str, bound: float) -> str:
    paper = claim.paper
    if claim.growth_with:
        scale = "log ratio" if claim.combine == "ratio" else "difference"
        name = f"slope of the {scale} against log {claim.growth_with}"
    elif claim.sensitivity_to:
        name = f"|slope| - |slope of the other| against log {claim.sensitivity_to}"
    else:
        name = "svmlab"
    return {
        "tolerance": f"|{name} - paper| <= {_number(bound)}",
        "relative_tolerance": f"|{name} - paper| <= {_number(bound)} x |{paper}|",
        "below": f"{name} < {_number(bound)}",
        "above": f"{name} > {_number(bound)}",
    }[rule]


def _number(value: float) -> str:
    return f"{value:.4g}"
