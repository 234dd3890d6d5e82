"""Workflow files: loaded from the package folder (or any path) and checked on load, so that a
mistake names the file, the key, what was found and what is allowed."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from svmlab.analysis import hypotheses, notebooks, precision, table
from svmlab.errors import SvmlabError, did_you_mean

#: The workflow files shipped with svmlab.
WORKFLOW_DIR = Path(__file__).resolve().parent
SCALES = ("quick", "medium", "paper")
#: Whether a workflow file must define each scale (medium: where the paper scale is too long).
SCALE_REQUIRED = {"quick": True, "medium": False, "paper": True}
DECISIONS = ("tolerance", "relative_tolerance", "below", "above")
COMBINATIONS = ("ratio", "difference")
#: Whose statement a claim is: the paper's, or svmlab's own (a certificate, a companion).
KINDS = ("paper", "svmlab")
#: Why a claim is not testable here: its data or its software cannot be had on this machine.
UNTESTABLE_KINDS = ("data", "software")
UNTESTABLE_KEYS = {"kind": True, "why": True}
#: Where the papers' texts are, relative to the repository's root (``paper_file`` names one).
PAPERS_DIR = Path("..") / "shared" / "papers"
TOP_KEYS = {
    "paper": True,
    "description": True,
    "sweep": True,
    "scales": True,
    "analysis": True,
    "report": False,
    "claims": True,
    "select": False,
    "paper_file": False,
}
SELECT_KEYS = {
    "grid": True,
    "overrides": False,
    "validation": True,
    "metric": False,
    "per": False,
    "seed": False,
    "warm_start": False,
}
SELECT_PER = ("dataset",)
SWEEP_KEYS = {"preset": True, "overrides": False}
SCALE_KEYS = {
    "overrides": False,
    "description": False,
    "select_grid": False,
    "runs": False,
    "wall_time": False,
}
#: A measured wall time: seconds (the whole workflow), with how many workers, when, the
#: machine's load average then, and what else a reader must know of the measurement.
WALL_TIME_KEYS = {"seconds": True, "workers": True, "date": True, "load": True, "note": False}
ANALYSIS_KEYS = {
    "measures": True,
    "blocks": False,
    "treatments": False,
    "hypotheses": False,
    "control": False,
    "filter": False,
    "objective": False,
}
REPORT_KEYS = {"notebook": True}
CLAIM_KEYS = {
    "claim": True,
    "source": True,
    "measure": False,
    "value": False,
    "relative_to": False,
    "combine": False,
    "paper": False,
    "paper_text": False,
    "decide": False,
    "why": False,
    "untestable": False,
    "kind": False,
    "blocks": False,
    "growth_with": False,
    "sensitivity_to": False,
    "companion": False,
    "grid": False,
    "unit": False,
    "readings": False,
    "quote": False,
}
#: A claim's unit of replication: what makes two of its blocks distinct measurements.
UNITS = ("problems", "seeds", "timings")
#: A companion's keys: its measure (an equal-precision one) and why it is the same comparison;
#: ``decide`` when it differs from its paper claim's.
COMPANION_KEYS = {"measure": True, "why": True, "decide": False}


class WorkflowError(SvmlabError):
    """A workflow that does not exist or whose file is malformed."""


@dataclass(frozen=True)
class Claim:
    """One claim and the comparison that decides it (``svmlab.workflows.claims`` judges it).

    ``measure`` is read on the runs matching ``value`` (tags or params and their values), one
    number per block (the runs sharing the values of ``blocks``, by default dataset and seed);
    with ``relative_to`` each block is paired with the same block of the runs matching it, and
    compared by their ratio or (``combine: difference``) their difference. ``decide`` holds one
    of DECISIONS: the estimate within ``tolerance`` (absolute) or ``relative_tolerance`` of the
    paper's number, or ``below`` / ``above`` a bound; ``why`` justifies that bound from the
    paper's wording. ``untestable`` says why svmlab cannot test it at all (a solver or dataset
    it does not have). Two shapes replace the per-block comparison by a slope: ``growth_with``
    (a key whose value is a size, e.g. ``n_train``) fits how the per-block number changes with
    it; ``sensitivity_to`` (a key that varies inside a block, e.g. ``solver.C``) fits each
    side's slope over the values both sides ran and compares their sizes. ``kind`` says whose
    statement it is: the paper's, or svmlab's own (a certificate, a companion measurement).
    ``grid`` names keys of settings the paper does not report: the claim is judged at each of
    their combinations and holds only where it holds at every one. ``companion_of`` is the
    paper claim a companion (the same comparison at equal precision) stands beside.

    ``unit`` is the claim's unit of replication, one of UNITS: distinct ``problems`` (datasets
    or resampled splits), a randomised solver's ``seeds`` on one problem, or repeated
    ``timings`` of identical work; without it, ``claims.unit_of`` derives it. ``readings``
    maps the name of each reading of the paper's protocol (e.g. its stopping rule read two
    ways) to what that reading changes: ``value`` and/or ``relative_to``, each a mapping that
    overrides those keys of the claim's side. The claim is judged under each reading and gets
    one verdict: reproduced when every reading reproduces it, not reproduced when none does,
    else "depends on the reading of the protocol" (``claims.judge``), counted once in the
    paper's tally; the first reading is the paper's stated one, and each other reading's own
    verdict is svmlab's statement beside it (``claims.judge_all``).

    ``quote`` is the paper's sentence the claim tests, verbatim (see :func:`normalised`);
    ``untestable_kind`` says what is missing for an untestable claim: its data or software."""

    claim: str
    source: str
    measure: str | None = None
    value: dict = field(default_factory=dict)
    relative_to: dict | None = None
    combine: str = "ratio"
    paper: float | None = None
    paper_text: str | None = None
    decide: dict = field(default_factory=dict)
    why: str | None = None
    untestable: str | None = None
    kind: str = "paper"
    blocks: list[str] = field(default_factory=lambda: ["dataset", "seed"])
    growth_with: str | None = None
    sensitivity_to: str | None = None
    grid: list[str] = field(default_factory=list)
    companion_of: str | None = None
    unit: str | None = None
    readings: dict[str, dict] = field(default_factory=dict)
    quote: str | None = None
    untestable_kind: str | None = None


@dataclass(frozen=True)
class Select:
    """The selection step: before the sweep, one ``svmlab tune`` study per dataset scores every
    point of ``grid`` (parameter: values in Hydra's sweep syntax, e.g. ``choice(2^0, 2^1)``) on
    one hold-out split of the training set (``validation``: its fraction, drawn with ``seed``),
    trained with the sweep's config and ``overrides`` (the solver that selects); that dataset's
    sweep then uses the values with the best ``metric``. With ``warm_start`` (the default) the
    grid is trained in increasing C, each fit starting from the previous solution where the
    solver can (``svmlab tune --warm-start``): its times are never reported, its scores are."""

    grid: dict[str, str]
    validation: float
    overrides: list[str] = field(default_factory=list)
    metric: str = "accuracy"
    per: str = "dataset"
    seed: int = 0
    warm_start: bool = True


@dataclass(frozen=True)
class AnalysisStep:
    """The analysis step: the arguments of ``svmlab analyze`` that the workflow fixes."""

    measures: list[str]
    blocks: list[str] = field(default_factory=lambda: ["dataset"])
    treatments: list[str] = field(default_factory=lambda: ["solver"])
    hypotheses: list[str] = field(default_factory=list)
    control: str | None = None
    filter: str = ""
    objective: str | None = None


@dataclass(frozen=True)
class Budget:
    """What one scale costs: the runs its sweep launches and, where it was measured, the
    workflow's wall time in seconds and how it was measured (workers, date, load)."""

    runs: int | None = None
    wall_s: float | None = None
    measured: str = ""

    def line(self) -> str:
        """``120 runs, 18 min 42 s (2 workers, 2026-11-28, load about 2-3)``."""
        runs = f"{self.runs} runs" if self.runs is not None else "runs not stated"
        if self.wall_s is None:
            return f"{runs}, wall time not measured"
        minutes, seconds = divmod(round(self.wall_s), 60)
        shown = f"{minutes} min {seconds} s" if minutes else f"{seconds} s"
        return f"{runs}, {shown} ({self.measured})"


@dataclass(frozen=True)
class Workflow:
    """A paper's reproduction: its sweep (an experiment preset with overrides per scale), the
    analysis, the report notebook and the claims."""

    name: str
    path: Path
    paper: str
    description: str
    preset: str
    overrides: list[str]
    scales: dict[str, list[str]]
    analysis: AnalysisStep
    notebook: str | None
    claims: list[Claim]
    select: Select | None = None
    select_grids: dict[str, dict[str, str]] = field(default_factory=dict)
    budgets: dict[str, Budget] = field(default_factory=dict)
    paper_file: str | None = None

    def at_scale(self, scale: str) -> Workflow:
        """This workflow with the selection grid of ``scale`` (its ``select_grid``, e.g. fewer
        values of C at medium scale), else the ``select`` block's."""
        if scale not in self.select_grids:
            return self
        return replace(self, select=replace(self.select, grid=self.select_grids[scale]))

    def sweep_overrides(self, scale: str) -> list[str]:
        """The preset and the overrides of every scale's common part and of ``scale``."""
        if scale not in self.scales:
            raise WorkflowError(
                f"workflow {self.name} has no {scale} scale; its scales: "
                f"{', '.join(self.scales)}.{did_you_mean(scale, self.scales)}"
            )
        return [f"+experiment={self.preset}", *self.overrides, *self.scales[scale]]


def names() -> list[str]:
    """The workflows shipped with svmlab."""
    return sorted(p.stem for p in WORKFLOW_DIR.glob("*.yaml"))


def load(name: str) -> Workflow:
    """The workflow ``name`` (a shipped one) or the file at path ``name`` (``*.yaml``)."""
    path = Path(name) if name.endswith((".yaml", ".yml")) else WORKFLOW_DIR / f"{name}.yaml"
    if not path.is_file():
        raise WorkflowError(
            f"unknown workflow {name!r}; available: {', '.join(names())} "
            f"(or the path of a workflow file, *.yaml)."
            f"{did_you_mean(name, names())}"
        )
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise WorkflowError(f"{path}: not valid YAML: {exc}") from None
    return parse(data, path)


def parse(data: Any, path: Path) -> Workflow:
    """A checked Workflow from the mapping read from ``path``."""
    where = str(path)
    data = _mapping(data, where, TOP_KEYS)
    sweep = _mapping(data["sweep"], f"{where}: sweep", SWEEP_KEYS)
    scales = _mapping(data["scales"], f"{where}: scales", SCALE_REQUIRED)
    report = _mapping(data.get("report") or {"notebook": None}, f"{where}: report", REPORT_KEYS)
    notebook = report["notebook"]
    shipped = sorted(p.stem for p in notebooks.NOTEBOOK_DIR.glob("*.ipynb"))
    if notebook is not None and notebook not in shipped:
        raise WorkflowError(
            f"{where}: report.notebook: unknown notebook {notebook!r}; "
            f"available: {', '.join(shipped)}"
        )
    scale_data = {
        s: _mapping(scales[s] or {}, f"{where}: scales.{s}", SCALE_KEYS)
        for s in SCALES
        if s in scales
    }
    select = _select(data["select"], f"{where}: select") if "select" in data else None
    grids = {
        s: _grid(scale["select_grid"], f"{where}: scales.{s}.select_grid")
        for s, scale in scale_data.items()
        if "select_grid" in scale
    }
    for s, grid in grids.items():
        if select is None or set(grid) != set(select.grid):
            raise WorkflowError(
                f"{where}: scales.{s}.select_grid: other values of the select block's "
                f"parameters ({', '.join(select.grid) if select else 'there is no select block'})"
                f"; got {', '.join(grid)}"
            )
    claims = data["claims"]
    if not isinstance(claims, list) or not claims:
        raise WorkflowError(f"{where}: claims must be a non-empty list of claims")
    return Workflow(
        name=path.stem,
        path=path,
        paper=_text(data["paper"], f"{where}: paper"),
        description=_text(data["description"], f"{where}: description"),
        preset=_text(sweep["preset"], f"{where}: sweep.preset"),
        overrides=_overrides(sweep.get("overrides"), f"{where}: sweep.overrides"),
        scales={
            s: _overrides(scale.get("overrides"), f"{where}: scales.{s}.overrides")
            for s, scale in scale_data.items()
        },
        analysis=_analysis(data["analysis"], f"{where}: analysis"),
        notebook=notebook,
        claims=[
            c
            for i, data in enumerate(claims)
            for c in _claim_and_companion(data, f"{where}: claims[{i}]")
        ],
        select=select,
        select_grids=grids,
        budgets={s: _budget(scale, f"{where}: scales.{s}") for s, scale in scale_data.items()},
        paper_file=(
            _text(data["paper_file"], f"{where}: paper_file") if "paper_file" in data else None
        ),
    )


def _budget(scale: dict, where: str) -> Budget:
    """A scale's ``runs`` (a positive count) and ``wall_time`` (WALL_TIME_KEYS)."""
    runs = scale.get("runs")
    if runs is not None and (not isinstance(runs, int) or isinstance(runs, bool) or runs < 1):
        raise WorkflowError(
            f"{where}.runs: the number of runs of the scale's sweep, a positive "
            f"integer; got {runs!r}"
        )
    if "wall_time" not in scale:
        return Budget(runs)
    wall = _mapping(scale["wall_time"], f"{where}.wall_time", WALL_TIME_KEYS)
    seconds, workers = wall["seconds"], wall["workers"]
    number = isinstance(seconds, (int, float)) and not isinstance(seconds, bool) and seconds > 0
    count = isinstance(workers, int) and not isinstance(workers, bool) and workers >= 1
    if not (number and count):
        raise WorkflowError(
            f"{where}.wall_time: seconds a positive number and workers a "
            f"positive integer; got {seconds!r}, {workers!r}"
        )
    measured = (
        f"{workers} worker{'s' if workers > 1 else ''}, {wall['date']}, "
        f"load {wall['load']}" + (f"; {wall['note']}" if wall.get("note") else "")
    )
    return Budget(runs, float(seconds), measured)


def normalised(text: str) -> str:
    """``text`` as quotes are compared with a paper's text: a hyphen that ends a line joins the
    word it breaks ("exper-" at a line's end, then "iments", is "experiments"), and every run
    of white space (line breaks included) is one space; nothing else changes (case,
    punctuation and typographic quotes are kept)."""
    return " ".join(re.sub(r"-[ \t]*\n\s*", "", text).split())


def _select(data: Any, where: str) -> Select:
    data = _mapping(data, where, SELECT_KEYS)
    grid = _grid(data["grid"], f"{where}.grid")
    fraction = data["validation"]
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not 0 < fraction < 1:
        raise WorkflowError(
            f"{where}.validation: the fraction of the training set held out, "
            f"between 0 and 1; got {fraction!r}"
        )
    per = data.get("per", "dataset")
    if per not in SELECT_PER:
        raise WorkflowError(f"{where}.per: {per!r}; allowed: {', '.join(SELECT_PER)}")
    seed = data.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise WorkflowError(f"{where}.seed: an integer (the split's seed); got {seed!r}")
    warm_start = data.get("warm_start", True)
    if not isinstance(warm_start, bool):
        raise WorkflowError(
            f"{where}.warm_start: true (fit the grid along increasing C, each "
            f"fit from the previous solution) or false; got {warm_start!r}"
        )
    return Select(
        grid=grid,
        validation=float(fraction),
        overrides=_overrides(data.get("overrides"), f"{where}.overrides"),
        metric=_text(data.get("metric", "accuracy"), f"{where}.metric"),
        per=per,
        seed=seed,
        warm_start=warm_start,
    )


def _grid(grid: Any, where: str) -> dict[str, str]:
    if not isinstance(grid, dict) or not grid:
        raise WorkflowError(
            f"{where}: a mapping of each parameter to its values, e.g. "
            f"{{solver.C: 'choice(2^0, 2^1, 2^2)'}}; got {grid!r}"
        )
    for key, values in grid.items():
        if not isinstance(values, str) or not values.strip():
            raise WorkflowError(
                f"{where}.{key}: the values in Hydra's sweep syntax, e.g. "
                f"'choice(2^0, 2^1, 2^2)'; got {values!r}"
            )
    return {str(k): v.strip() for k, v in grid.items()}


def _analysis(data: Any, where: str) -> AnalysisStep:
    data = _mapping(data, where, ANALYSIS_KEYS)
    measures = _strings(data["measures"], f"{where}.measures")
    if not measures:
        raise WorkflowError(f"{where}.measures: name at least one measure")
    for spec in measures:
        _checked(table.parse_measure, spec, f"{where}.measures")
    specs = _strings(data.get("hypotheses"), f"{where}.hypotheses")
    for spec in specs:
        _checked(hypotheses.parse, spec, f"{where}.hypotheses")
    return AnalysisStep(
        measures=measures,
        blocks=_strings(data.get("blocks"), f"{where}.blocks") or ["dataset"],
        treatments=_strings(data.get("treatments"), f"{where}.treatments") or ["solver"],
        hypotheses=specs,
        control=data.get("control"),
        filter=data.get("filter") or "",
        objective=data.get("objective"),
    )


def _claim_and_companion(data: Any, where: str) -> list[Claim]:
    """The claim, then its companion when it has one: svmlab's statement of the same
    comparison on an equal-precision measure (a time to a certified gap or to an accuracy)."""
    claim = _claim(data, where)
    if "companion" not in data:
        return [claim]
    more = _mapping(data["companion"], f"{where}.companion", COMPANION_KEYS)
    _checked(precision.parse, more["measure"], f"{where}.companion.measure")
    if claim.kind != "paper" or claim.untestable is not None:
        raise WorkflowError(f"{where}.companion: only a testable paper claim has a companion")
    companion = {
        **data,
        "claim": f"{claim.claim}, {precision.describe(more['measure'])}",
        "kind": "svmlab",
        "measure": more["measure"],
        "why": _text(more["why"], f"{where}.companion.why"),
        "decide": more.get("decide", claim.decide),
    }
    return [claim, _claim(companion, f"{where}.companion", claim.claim)]


def _claim(data: Any, where: str, companion_of: str | None = None) -> Claim:
    data = _mapping(data, where, CLAIM_KEYS)
    data = {k: v for k, v in data.items() if k != "companion"}
    claim = Claim(**{k: v for k, v in data.items() if v is not None}, companion_of=companion_of)
    if claim.paper is not None and (
        isinstance(claim.paper, bool) or not isinstance(claim.paper, (int, float))
    ):
        raise WorkflowError(
            f"{where}.paper: the paper's number; got {claim.paper!r} (words go in paper_text)"
        )
    if claim.kind not in KINDS:
        raise WorkflowError(
            f"{where}.kind: {claim.kind!r}; allowed: {', '.join(KINDS)} (whose statement it is)"
        )
    if claim.quote is not None:
        _text(claim.quote, f"{where}.quote")
    if claim.untestable is not None:
        return _untestable(claim, where)
    missing = [k for k in ("measure", "value", "decide") if k not in data]
    if missing:
        raise WorkflowError(
            f"{where}: missing {', '.join(missing)}; a claim has a measure, "
            f"the runs of its value, and decide (or untestable: the reason "
            f"svmlab cannot test it)"
        )
    for key in ("value", "relative_to"):
        if key in data and (not isinstance(data[key], dict) or not data[key]):
            raise WorkflowError(
                f"{where}.{key}: a mapping of tags or params to their values, "
                f"e.g. {{solver: mfw, dataset: w1a}}; got {data[key]!r}"
            )
    if claim.combine not in COMBINATIONS:
        raise WorkflowError(
            f"{where}.combine: {claim.combine!r}; allowed: {', '.join(COMBINATIONS)}"
        )
    decide = claim.decide
    if not isinstance(decide, dict) or len(decide) != 1 or next(iter(decide)) not in DECISIONS:
        raise WorkflowError(
            f"{where}.decide: one of {', '.join(DECISIONS)} with a number, "
            f"e.g. {{tolerance: 0.01}}; got {decide!r}"
        )
    ((rule, bound),) = decide.items()
    if isinstance(bound, bool) or not isinstance(bound, (int, float)):
        raise WorkflowError(f"{where}.decide.{rule}: a number; got {bound!r}")
    if claim.why is not None:
        _text(claim.why, f"{where}.why")
    _replication(claim, where)
    _shape(claim, data, rule, where)
    if rule.endswith("tolerance") and not isinstance(claim.paper, (int, float)):
        raise WorkflowError(
            f"{where}: decide.{rule} compares with the paper's number; give it as paper: <number>"
        )
    return claim


def _replication(claim: Claim, where: str) -> None:
    """The unit of replication and the readings of a claim: known names and mappings."""
    if claim.unit is not None and claim.unit not in UNITS:
        raise WorkflowError(
            f"{where}.unit: {claim.unit!r}; allowed: {', '.join(UNITS)} (what "
            f"makes two blocks distinct measurements)"
        )
    readings = claim.readings
    sides = ("value", "relative_to")
    if (
        not isinstance(readings, dict)
        or len(readings) == 1
        or any(
            not isinstance(r, dict)
            or not r
            or set(r) - set(sides)
            or not all(isinstance(v, dict) and v for v in r.values())
            for r in readings.values()
        )
    ):
        raise WorkflowError(
            f"{where}.readings: two or more readings, each a name and what it "
            f"overrides of value and/or relative_to, e.g. {{one round: {{value: "
            f"{{solver: fw}}}}, seven rounds: {{value: {{solver: fw_rounds}}}}}}"
            f"; got {readings!r}"
        )


def _untestable(claim: Claim, where: str) -> Claim:
    """The claim with its untestable reason split into its kind (data or software) and why."""
    reason = claim.untestable
    if not isinstance(reason, dict):
        raise WorkflowError(
            f"{where}.untestable: a mapping {{kind: data|software, why: ...}} "
            f"(what this machine cannot have, and why); got {reason!r}"
        )
    reason = _mapping(reason, f"{where}.untestable", UNTESTABLE_KEYS)
    if reason["kind"] not in UNTESTABLE_KINDS:
        raise WorkflowError(
            f"{where}.untestable.kind: {reason['kind']!r}; allowed: "
            f"{', '.join(UNTESTABLE_KINDS)} (a claim that needs a sweep svmlab "
            f"can run is tested, not untestable)"
        )
    return replace(
        claim,
        untestable=_text(reason["why"], f"{where}.untestable.why"),
        untestable_kind=reason["kind"],
    )


def _shape(claim: Claim, data: dict, rule: str, where: str) -> None:
    """The blocks and the slope shapes of a claim: keys that exist together and make sense."""
    if "grid" in data and not _strings(data["grid"], f"{where}.grid"):
        raise WorkflowError(
            f"{where}.grid: the keys of the settings the paper does not report, "
            f"e.g. [unreported.lam, dataset]; got {data['grid']!r}"
        )
    if "blocks" in data and (
        not _strings(data["blocks"], f"{where}.blocks")
        or not all(b.strip() for b in data["blocks"])
    ):
        raise WorkflowError(
            f"{where}.blocks: the keys whose values make a block, e.g. "
            f"[dataset, seed]; got {data['blocks']!r}"
        )
    shapes = [k for k in ("growth_with", "sensitivity_to") if getattr(claim, k) is not None]
    if len(shapes) > 1:
        raise WorkflowError(f"{where}: growth_with and sensitivity_to exclude each other")
    for key in shapes:
        _text(data[key], f"{where}.{key}")
        if rule not in ("below", "above"):
            raise WorkflowError(
                f"{where}: {key} decides on a slope: use decide below or above "
                f"(e.g. {{below: 0}}); got {rule}"
            )
        if claim.relative_to is None:
            raise WorkflowError(
                f"{where}: {key} fits the comparison of two sides; give relative_to"
            )
    if claim.sensitivity_to is not None and claim.sensitivity_to in claim.blocks:
        raise WorkflowError(
            f"{where}: sensitivity_to {claim.sensitivity_to} varies inside a "
            f"block; take it out of blocks ({', '.join(claim.blocks)})"
        )


def _mapping(data: Any, where: str, keys: dict[str, bool]) -> dict:
    """``data`` as a mapping with every required key of ``keys`` and no other key."""
    if not isinstance(data, dict):
        raise WorkflowError(
            f"{where}: expected a mapping with the keys "
            f"{', '.join(keys)}; got {type(data).__name__}"
        )
    unknown = sorted(set(data) - set(keys))
    if unknown:
        raise WorkflowError(
            f"{where}: unknown key(s) {', '.join(map(str, unknown))}; allowed: {', '.join(keys)}"
        )
    missing = [k for k, required in keys.items() if required and k not in data]
    if missing:
        raise WorkflowError(f"{where}: missing key(s) {', '.join(missing)}")
    return data


def _strings(data: Any, where: str) -> list[str]:
    if data is None:
        return []
    if not isinstance(data, list) or not all(isinstance(s, str) for s in data):
        raise WorkflowError(f"{where}: a list of strings; got {data!r}")
    return list(data)


def _overrides(data: Any, where: str) -> list[str]:
    """Hydra overrides: KEY=VALUE (a sweep over values is one quoted string, "seed=0,1")."""
    overrides = _strings(data, where)
    bad = [o for o in overrides if "=" not in o and not o.startswith("~")]
    if bad:
        raise WorkflowError(
            f"{where}: {', '.join(map(repr, bad))} is not KEY=VALUE; quote "
            f'a list of values in YAML: ["dataset=a1a,w1a", seed=0]'
        )
    return overrides


def _text(data: Any, where: str) -> str:
    if not isinstance(data, str) or not data.strip():
        raise WorkflowError(f"{where}: a non-empty string; got {data!r}")
    return data.strip()


def _checked(parse_one, spec: str, where: str) -> None:
    try:
        parse_one(spec)
    except SvmlabError as exc:
        raise WorkflowError(f"{where}: {exc}") from None
