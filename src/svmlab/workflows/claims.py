"""A paper's claims judged on the runs of a workflow: the svmlab value of each claim, the test
that decides it, and the verdict, as one table (Markdown, HTML, CSV)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from svmlab.analysis import page, report
from svmlab.workflows.spec import Claim, Select, Workflow

REPRODUCED, NOT_REPRODUCED, UNTESTABLE = "reproduced", "not reproduced", "not testable here"
VERDICTS = (REPRODUCED, NOT_REPRODUCED, UNTESTABLE)
COLUMNS = ("claim", "source", "measure", "paper", "svmlab", "test", "verdict", "detail")


@dataclass(frozen=True)
class Judged:
    """A claim with the value svmlab measured (None when untestable), the test and the verdict."""

    claim: Claim
    value: float | None
    test: str
    verdict: str
    detail: str

    def row(self) -> dict:
        c = self.claim
        paper = _number(c.paper) if c.paper is not None else ""
        if c.paper_text:
            paper = f"{paper} ({c.paper_text})" if paper else c.paper_text
        return {"claim": c.claim, "source": c.source, "measure": c.measure or "",
                "paper": paper, "svmlab": "" if self.value is None else _number(self.value),
                "test": self.test, "verdict": self.verdict, "detail": self.detail}


def judge_all(claims: list[Claim], runs: pd.DataFrame,
              derive: Callable[[list[str]], dict[str, np.ndarray]]) -> list[Judged]:
    """Judge every claim on ``runs`` (FINISHED training runs, the layout of
    :func:`svmlab.tracking.queries.search_runs`); ``derive(names)`` gives the values of
    measures computed from traces (``time_to_gap_1e-3``), one per run."""
    wanted = sorted({c.measure for c in claims if c.measure and f"metrics.{c.measure}" not in runs})
    values = {f"metrics.{k}": v for k, v in derive(wanted).items()} if wanted and len(runs) else {}
    runs = runs.assign(**values)
    return [judge(c, runs) for c in claims]


def judge(claim: Claim, runs: pd.DataFrame) -> Judged:
    """One claim on runs that carry its measure as ``metrics.<measure>``."""
    if claim.untestable is not None:
        return Judged(claim, None, "", UNTESTABLE, claim.untestable)
    sides = [_side(claim.measure, claim.value, runs, claim.spread_over)]
    if claim.relative_to is not None:
        sides.append(_side(claim.measure, claim.relative_to, runs, claim.spread_over))
    (rule, bound), = claim.decide.items()
    test = _test_text(rule, bound, claim.paper)
    empty = [s for s in sides if s.n == 0]
    if empty:
        return Judged(claim, None, test, UNTESTABLE,
                      "; ".join(f"no finished run of {s.label} with {claim.measure}"
                                for s in empty))
    detail = " against ".join(s.text(claim.measure) for s in sides)
    tested = sides[0]
    if tested.n_inf:  # the method under test never reached a target (time_to_gap_...)
        return Judged(claim, math.inf, test, NOT_REPRODUCED,
                      f"{tested.label} never reached the target in {tested.n_inf} of "
                      f"{tested.n} run(s): {detail}")
    if len(sides) == 1:
        value = tested.mean
    elif claim.combine == "ratio":
        value = tested.mean / sides[1].mean if sides[1].mean else math.inf
    else:
        value = tested.mean - sides[1].mean
    return Judged(claim, value, test, REPRODUCED if _holds(rule, bound, value, claim.paper)
                  else NOT_REPRODUCED, detail)


def table(judged: list[Judged]) -> pd.DataFrame:
    """The claims table: one row per claim, the columns of COLUMNS."""
    return pd.DataFrame([j.row() for j in judged], columns=list(COLUMNS))


def markdown(frame: pd.DataFrame) -> str:
    """The claims table as GitHub-flavoured Markdown."""
    return report.markdown(frame)


def selection_table(chosen: list, metric: str) -> pd.DataFrame:
    """One row per dataset: the selected values, their validation score and the study
    (``chosen``: the selection step's results, with dataset, values, score and study)."""
    return pd.DataFrame([{"dataset": c.dataset, **{k: _number(v) if isinstance(v, float) else v
                                                      for k, v in c.values.items()},
                          f"validation {metric}": _number(c.score), "study": c.study}
                         for c in chosen])


def selection_text(select: Select) -> str:
    """How the values were selected, in one sentence."""
    grid = "; ".join(f"{k} = {v}" for k, v in select.grid.items())
    by = f", trained with {' '.join(select.overrides)}" if select.overrides else ""
    return (f"Selected by validation, per {select.per}, before the sweep: the values with the "
            f"best {select.metric} on a {select.validation * 100:g} % validation split of the "
            f"training set (seed {select.seed}){by}, over {grid}; ties go to the smallest "
            f"values. Every run of the sweep trains with its dataset's values.")


def selection_markdown(select: Select, chosen: list) -> str:
    return f"{selection_text(select)}\n\n{markdown(selection_table(chosen, select.metric))}"


def write(folder: Path, workflow: Workflow, scale: str, judged: list[Judged],
          figures: dict[str, Path] | None = None, notes: list[str] = (),
          chosen: list = ()) -> None:
    """``claims.md``, ``claims.csv`` and ``claims.html``, a styled page that also shows
    ``figures`` ({caption: local PNG file}, embedded) in ``folder``; ``notes`` say how derived measures
    were obtained (e.g. the reference optimum of a distance to it), below the table; ``chosen``
    are the values the selection step chose, above it."""
    frame = table(judged)
    title = f"{workflow.name} ({scale} scale): {workflow.paper}"
    summary = ", ".join(f"{n} {v}" for v, n in counts(judged).items())
    command = f"svmlab workflow {workflow.name} --scale {scale}"
    noted = "".join(f"\n- {n}" for n in notes)
    selected = selection_markdown(workflow.select, chosen) + "\n\n" if chosen else ""
    (folder / "claims.md").write_text(f"# {title}\n\n{workflow.description}\n\n"
                                      f"Claims: {summary}. Regenerate: `{command}`\n\n"
                                      + selected + markdown(frame)
                                      + (f"\n\nNotes:{noted}\n" if notes else ""))
    frame.to_csv(folder / "claims.csv", index=False)
    cells = page.table(frame, index=False)
    for verdict, css in ((REPRODUCED, "keep"), (NOT_REPRODUCED, "reject")):
        cells = cells.replace(f"<td>{verdict}</td>", f"<td class='{css}'>{verdict}</td>")
    shown = "".join(page.figure(path, caption) for caption, path in (figures or {}).items())
    selection = ([("selection", "Selection", page.conclusions([selection_text(workflow.select)])
                   + page.table(selection_table(chosen, workflow.select.metric), index=False))]
                 if chosen else [])
    (folder / "claims.html").write_text(page.render(
        title, f"{workflow.description}\n{summary}\n{command}",
        selection + [("claims", "Claims", cells + (page.conclusions(list(notes)) if notes else ""))]
        + ([("figures", "Figures", shown)] if shown else [])))


def counts(judged: list[Judged]) -> dict[str, int]:
    """How many claims got each verdict."""
    return {v: sum(j.verdict == v for j in judged) for v in VERDICTS}


@dataclass(frozen=True)
class _Side:
    label: str
    n: int
    mean: float
    n_inf: int = 0  # runs whose value is infinite: a time-to-target never reached
    low: float = math.nan
    high: float = math.nan

    over: str | None = None  # the largest over the smallest mean across this key's values

    def text(self, measure: str) -> str:
        spread = f" (range {_number(self.low)} to {_number(self.high)})" if self.n > 1 else ""
        never = f", {self.n_inf} never reached the target" if self.n_inf else ""
        if self.over:
            return (f"{measure}: largest / smallest mean across {self.over} = "
                    f"{_number(self.mean)} ({_number(self.high)} / {_number(self.low)}) over "
                    f"{self.n} run(s) of {self.label}{never}")
        return (f"{measure} {_number(self.mean)} = mean of {self.n} run(s) of {self.label}"
                f"{spread}{never}")


def _side(measure: str, where: dict, runs: pd.DataFrame, over: str | None = None) -> _Side:
    """The mean (and range) of ``measure`` over the runs matching every key of ``where``; with
    ``over``, the ratio of the largest to the smallest mean across the values of that key (how
    sensitive the measure is to it)."""
    label = ", ".join(f"{k}={v}" for k, v in where.items())
    column = f"metrics.{measure}"
    if column not in runs or runs.empty:
        return _Side(label, 0, math.nan)
    chosen = np.ones(len(runs), dtype=bool)
    for key, wanted in where.items():
        chosen &= _matches(_key_values(runs, key), wanted)
    values = runs.loc[chosen, column].astype(float).dropna()
    if not len(values):
        return _Side(label, 0, math.nan)
    n_inf = int(np.isinf(values).sum())
    if over is not None:
        means = values.groupby(_key_values(runs, over).loc[values.index].astype(str)).mean()
        if len(means) < 2:
            return _Side(f"{label} (one value of {over})", 0, math.nan)
        spread = math.inf if n_inf else float(means.max() / means.min())
        return _Side(label, len(values), spread, n_inf, float(means.min()), float(means.max()),
                     over)
    return _Side(label, len(values), float(values.mean()), n_inf,
                 float(values.min()), float(values.max()))


def _key_values(runs: pd.DataFrame, key: str) -> pd.Series:
    """The values of a tag, else of a param (``solver.C``); all missing if neither was logged."""
    for column in (f"tags.{key}", f"params.{key}"):
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


def _holds(rule: str, bound: float, value: float, paper: float | None) -> bool:
    if rule == "tolerance":
        return abs(value - paper) <= bound
    if rule == "relative_tolerance":
        return abs(value - paper) <= bound * abs(paper)
    return value < bound if rule == "below" else value > bound


def _test_text(rule: str, bound: float, paper: float | None) -> str:
    return {"tolerance": f"|svmlab - paper| <= {_number(bound)}",
            "relative_tolerance": f"|svmlab - paper| <= {_number(bound)} x |{paper}|",
            "below": f"svmlab < {_number(bound)}",
            "above": f"svmlab > {_number(bound)}"}[rule]


def _number(value: float) -> str:
    return f"{value:.4g}"
