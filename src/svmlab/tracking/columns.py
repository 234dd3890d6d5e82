"""The columns of the run table that ``tracking.queries.search_runs`` returns: one per param,
tag and metric of a run and per number of its dataset's profile, named by kind. The readers
(analysis, claims, ``svmlab runs list``) name a column through these functions, never by its
spelling, so that the table's layout is the tracking layer's alone (another backend returns the
same table). Standard library only: a reader need not import MLflow to name a column."""

from __future__ import annotations

PARAMS, TAGS, METRICS, INPUTS = "params", "tags", "metrics", "inputs"
KINDS = (PARAMS, TAGS, METRICS, INPUTS)


def column(kind: str, name: str) -> str:
    """The column of the param, tag, metric or profile number ``name``."""
    return f"{kind}.{name}"


def param(name: str) -> str:
    return column(PARAMS, name)


def tag(name: str) -> str:
    return column(TAGS, name)


def metric(name: str) -> str:
    return column(METRICS, name)


def profile(name: str) -> str:
    """The column of a number of the profile of the run's dataset (``n_test``)."""
    return column(INPUTS, name)


def names(columns, kind: str) -> list[str]:
    """The names of the columns of ``kind`` among ``columns``, in their order."""
    prefix = f"{kind}."
    return [c[len(prefix) :] for c in columns if c.startswith(prefix)]


def split(key: str) -> tuple[str | None, str]:
    """A key as a user may write it, with its kind or without: 'params.solver.C' is
    ('params', 'solver.C'), 'solver' is (None, 'solver')."""
    kind, _, rest = key.partition(".")
    return (kind, rest) if kind in KINDS and rest else (None, key)
