"""Measurements in long format (block, treatment, repetition, one column per measure), read
from MLflow runs or from a CSV file of results (wide: one column per measure; or tidy: measure,
value)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from svmlab import vocabulary
from svmlab.analysis import precision
from svmlab.errors import SvmlabError
from svmlab.tracking import columns

KEY_COLUMNS = ("block", "treatment", "repetition")
JOIN = " / "  # between the values of a combined block or treatment key
#: Params that may differ between the runs of one treatment: the dataset's own settings (they
#: vary with the block) and where a run was stored.
CONTEXT_PREFIXES = ("dataset.", "tracking.", "paths.", "hydra.")
#: The columns of a run's config digest (the sha256 of its resolved config, ``svmlab train``),
#: of a run whose fit started from another fit's solution, and of a run's role.
DIGEST = columns.tag(vocabulary.DIGEST_TAG)
WARM_START = columns.tag(vocabulary.WARM_START_TAG)
ROLE = columns.tag(vocabulary.ROLE_TAG)


@dataclass
class Selection:
    """The long table, where it came from, and the runs left out by status; ``columns`` names
    the run columns of the block and treatment labels; ``confounds`` the params other than the
    keys in which a treatment's runs differ ({treatment: {param: [values]}}); ``notes`` how
    derived measures were obtained."""

    long: pd.DataFrame
    source: str
    excluded: dict[str, int] = field(default_factory=dict)
    columns: dict[str, list[str]] = field(default_factory=dict)
    confounds: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def run_ids(self) -> list[str]:
        return list(self.long["run_id"]) if "run_id" in self.long else []


def from_mlflow(
    experiments: list[str],
    filter_string: str = "",
    *,
    measures: list[str],
    blocks: list[str] = ("dataset",),
    treatments: list[str] = ("solver",),
    repetition: str = "seed",
    tracking_uri: str | None = None,
    run_ids: set[str] | None = None,
) -> Selection:
    """Runs of the named experiments matching ``filter_string`` (and among ``run_ids`` when
    given: a workflow's current sweep); only FINISHED runs that have the block and treatment
    keys are used (runs with a role, such as sweep parents, are skipped).

    ``blocks`` and ``treatments`` are params or tags (dotted keys as logged: ``solver.C``); a bare
    key is looked up among the tags, then the params; 'params.X' or 'tags.X' chooses. Several keys
    are combined into one label.
    """
    from svmlab.tracking import queries

    if not experiments:
        raise SvmlabError("name at least one experiment to analyse")
    runs, excluded = finished_runs(experiments, filter_string, tracking_uri, run_ids)
    block_columns = [_column(runs, key) for key in blocks]
    treatment_columns = [_column(runs, key) for key in treatments]
    labelled = runs[block_columns + treatment_columns].notna().all(axis=1)
    if not labelled.all():
        excluded["without block or treatment"] = int((~labelled).sum())
        runs = runs[labelled]
    long = pd.DataFrame(
        {
            "block": _label(runs, block_columns),
            "treatment": _label(runs, treatment_columns),
            "repetition": _label(runs, [_column(runs, repetition)]),
            "run_id": runs["run_id"].to_numpy(),
            "experiment_id": runs["experiment_id"].to_numpy(),
        }
    )
    derived = [name for name in measures if precision.parse(name)]
    values, notes = (
        precision.derive(runs, derived, tracking_uri, queries.load_trace) if derived else ({}, [])
    )
    for name in measures:
        column = columns.metric(name)
        if name in values:
            long[name] = values[name]
            continue
        if column not in runs:
            available = sorted(
                c
                for c in columns.names(runs.columns, columns.METRICS)
                if not c.startswith("trace/")
            )
            raise SvmlabError(f"no run logged the metric {name!r}; logged: {', '.join(available)}")
        long[name] = runs[column].to_numpy(dtype=float)
    keys = {*block_columns, *treatment_columns, _column(runs, repetition)}
    found = confounds(runs, long["treatment"].to_numpy(), keys)
    long, repeated = once_per_config(long, runs.get(DIGEST), measures)
    return Selection(
        long.reset_index(drop=True),
        source=f"mlflow:{','.join(experiments)}",
        excluded=excluded,
        columns={"block": block_columns, "treatment": treatment_columns},
        confounds=found,
        notes=notes + repeated,
    )


def once_per_config(
    long: pd.DataFrame, digests: pd.Series | None, measures: list[str]
) -> tuple[pd.DataFrame, list[str]]:
    """One row per config: runs with the same config digest (DIGEST: the same resolved
    config in the same experiment, e.g. the same command run twice) computed the same thing,
    so they are one measurement, not repetitions: their measures are averaged (a time over its
    re-timings) into the row of the first of them, and one line says how many were merged."""
    if digests is None:
        return long, []
    key = pd.Series(digests.to_numpy(), index=long.index).fillna(
        pd.Series(long["run_id"].to_numpy(), index=long.index)
    )
    if not key.duplicated().any():
        return long, []
    means = long.groupby(key.to_numpy(), sort=False)[list(measures)].transform("mean")
    merged = long.assign(**{m: means[m] for m in measures})[~key.duplicated().to_numpy()]
    repeats = len(long) - len(merged)
    configs = int(key[key.duplicated(keep=False)].nunique())
    said = (
        f"{repeats} run(s) repeat the exact config of another ({configs} config(s), same "
        f"{vocabulary.DIGEST_TAG}): each config counted once, its measures "
        f"averaged over its identical re-runs"
    )
    return merged, [said]


def confounds(runs: pd.DataFrame, treatments, keys: set[str]) -> dict[str, dict[str, list]]:
    """Per treatment, the params (other than ``keys`` and CONTEXT_PREFIXES) with more than one
    value among its runs: runs that would be pooled although their settings differ."""
    params = {
        columns.param(p): p
        for p in columns.names(runs.columns, columns.PARAMS)
        if columns.param(p) not in keys and not p.startswith(CONTEXT_PREFIXES)
    }
    found: dict[str, dict[str, list]] = {}
    for treatment, group in runs[list(params)].groupby(pd.Series(treatments, index=runs.index)):
        values = {
            p: sorted(group[c].astype("string").fillna("(none)").unique())
            for c, p in params.items()
        }
        varying = {k: v for k, v in values.items() if len(v) > 1}
        if varying:
            found[str(treatment)] = varying
    return found


def confound_message(found: dict[str, dict[str, list]]) -> str:
    """A warning naming the treatments whose runs differ, and how to split them."""
    listing = "; ".join(
        f"treatment {t}: runs differ in "
        + ", ".join(f"{k} ({', '.join(v)})" for k, v in params.items())
        for t, params in found.items()
    )
    keys = sorted({k for params in found.values() for k in params})
    return (
        f"{listing}; their values are pooled as repetitions. Split them by naming the "
        f"key(s) as treatments too (--treatment solver --treatment {keys[0]}), or select "
        f"one setting with --filter"
    )


def finished_runs(
    experiments: list[str],
    filter_string: str,
    tracking_uri: str | None,
    run_ids: set[str] | None = None,
) -> tuple[pd.DataFrame, dict]:
    """The FINISHED runs of the experiments that match the filter (and are among ``run_ids``
    when given), and how many others there were by status. Runs with a role (a sweep's parent
    run, a workflow's own runs) summarise other runs and are skipped; warm-started runs (tag
    WARM_START) are left out and counted: their times are of a step along a path of fits, not
    of a fit from scratch, and would pass for the solver's."""
    from svmlab.tracking import queries

    ids = queries.experiment_ids(tracking_uri, experiments)
    runs = queries.search_runs(tracking_uri, ids, filter_string)
    if run_ids is not None and not runs.empty:
        runs = runs[runs["run_id"].isin(run_ids)]
    if runs.empty:
        raise SvmlabError(f"no runs in {', '.join(experiments)} match the filter {filter_string!r}")
    if ROLE in runs:
        runs = runs[runs[ROLE].isna()]
    warm = runs[WARM_START] == "true" if WARM_START in runs else pd.Series(False, index=runs.index)
    runs, excluded = runs[~warm], {"warm-started": int(warm.sum())} if warm.any() else {}
    if runs.empty and warm.any():
        raise SvmlabError(
            f"the {int(warm.sum())} runs selected all started from another fit "
            f"({vocabulary.WARM_START_TAG}): their times are not those of a fit "
            f"from scratch"
        )
    finished = runs["status"] == "FINISHED"
    excluded |= dict(Counter(runs.loc[~finished, "status"]))
    if not finished.any():
        raise SvmlabError(f"no FINISHED runs among the {len(finished)} selected ({excluded})")
    return runs[finished], excluded


def from_csv(
    path: str | Path,
    measures: list[str],
    blocks=("dataset",),
    treatments=("solver",),
    repetition: str = "seed",
) -> Selection:
    """A table with columns block, treatment, optional repetition, and one column per measure;
    or, as published tables are often typed in, tidy: ``measure`` and ``value`` columns. Instead
    of block, treatment and repetition the columns may carry the names of the keys (dataset,
    solver, seed by default; several keys are combined). Every row needs its labels, and a cell
    (block, treatment, repetition, measure) may be given once, in either layout."""
    try:
        long = pd.read_csv(path)
    except (OSError, ValueError) as exc:
        raise SvmlabError(f"cannot read the results table {path}: {exc}") from None
    labels = {
        role: [role] if role in long else keys
        for role, keys in (
            ("block", list(blocks)),
            ("treatment", list(treatments)),
            ("repetition", [repetition]),
        )
        if role in long or all(k in long for k in keys)
    }
    for role, keys in labels.items():
        _check_labels(long, keys, role, path)
    for role, keys in labels.items():
        if keys != [role]:
            long[role] = long[keys].astype(str).agg(JOIN.join, axis=1)
    tidy = {"measure", "value"} <= set(long.columns)
    if tidy:
        long = _widen(long, path)
    required = ["block", "treatment", *measures]
    missing = [c for c in required if c not in long]
    if missing:
        raise SvmlabError(
            f"{path}: missing column(s) {', '.join(missing)}; a results table has "
            f"the columns block, treatment, repetition (optional) and one per "
            f"measure, or block, treatment, measure, value (the key names "
            f"may stand for block, treatment, repetition); found: "
            f"{', '.join(map(str, long.columns))}"
        )
    if not tidy:
        _check_cells(long, [c for c in KEY_COLUMNS if c in long], path)
    if "repetition" not in long:
        long["repetition"] = 0
    for key in KEY_COLUMNS:
        long[key] = long[key].astype(str)
    for name in measures:
        values = pd.to_numeric(long[name], errors="coerce")
        bad = values.isna() & long[name].notna()
        if bad.any():
            raise SvmlabError(
                f"{path}: column {name!r} has non-numeric values, e.g. "
                f"{long.loc[bad, name].iloc[0]!r}"
            )
        long[name] = values
    return Selection(long, source=f"csv:{path}")


def _widen(tidy: pd.DataFrame, path) -> pd.DataFrame:
    """One column per measure from a tidy table (key columns, measure, value)."""
    index = [c for c in KEY_COLUMNS if c in tidy]
    _check_cells(tidy, [*index, "measure"], path)
    return tidy.pivot(index=index, columns="measure", values="value").reset_index()


def _check_labels(table: pd.DataFrame, columns: list[str], role: str, path) -> None:
    """A SvmlabError naming the first row with an empty ``role`` label in ``columns``."""
    for column in columns:
        empty = table[column].isna() | (table[column].astype(str).str.strip() == "")
        if empty.any():
            row = int(empty.to_numpy().nonzero()[0][0])
            typed = ",".join("" if pd.isna(v) else str(v) for v in table.iloc[row])
            raise SvmlabError(
                f"{path}: row {row + 1} after the header ({typed!r}) has an empty "
                f"{role} label (column {column!r}); give every row its {role}"
            )


def _check_cells(table: pd.DataFrame, keys: list[str], path) -> None:
    """A SvmlabError when rows repeat a cell (the same ``keys``): repeated rows would be averaged
    silently, as if they were repetitions."""
    duplicated = table.duplicated(keys, keep=False)
    if duplicated.any():
        first = table.loc[duplicated, keys].iloc[0].to_dict()
        raise SvmlabError(
            f"{path}: {int(duplicated.sum())} rows repeat a cell, e.g. {first}; "
            f"give each repetition its own 'repetition' value"
        )


def _label(runs: pd.DataFrame, columns: list[str]) -> pd.Series:
    """One label per run from the values of ``columns``, joined."""
    return runs[columns].astype("string").fillna("?").agg(JOIN.join, axis=1).to_numpy()


def _column(runs: pd.DataFrame, key: str) -> str:
    """The column of a param or tag: 'params.X' or 'tags.X' as given, else the tag X, else the
    param X."""
    kind, name = columns.split(key)
    candidates = (
        [columns.column(kind, name)]
        if kind in (columns.PARAMS, columns.TAGS)
        else [columns.tag(key), columns.param(key)]
    )
    for column in candidates:
        if column in runs and runs[column].notna().any():
            return column
    available = sorted(
        columns.column(kind, name)
        for kind in (columns.PARAMS, columns.TAGS)
        for name in columns.names(runs.columns, kind)
    )
    raise SvmlabError(f"no run has the param or tag {key!r}; available: {', '.join(available)}")
