"""The dataset registry: every name ``load`` accepts, each mapped to one entry.

Adding a LIBSVM dataset means one row per file in ``libsvm_catalogue.tsv``; a generator or an
embedded dataset is one entry in its module. Each entry is the option ``dataset=<name>`` of
``svmlab train`` (``svmlab.app.config.register_configs``).
"""

from __future__ import annotations

import difflib

from svmlab.data import embedded, libsvm, synthetic
from svmlab.data.entry import Entry
from svmlab.errors import DataError

KINDS = ("embedded", "synthetic", "libsvm")


def _build() -> dict[str, Entry]:
    registry: dict[str, Entry] = {}
    for entry in (*embedded.ENTRIES, *synthetic.ENTRIES, *libsvm.ENTRIES):
        if entry.name in registry:
            raise RuntimeError(f"dataset {entry.name!r} is registered twice")
        registry[entry.name] = entry
    return registry


REGISTRY = _build()


def get_entry(name: str) -> Entry:
    """The entry of ``name``; DataError for a path-like or unknown name, with close matches."""
    if not isinstance(name, str) or not name:
        raise DataError(f"a dataset name must be a non-empty string; got {name!r}")
    if "/" in name or "\\" in name or ".." in name:
        raise DataError(
            f"dataset name {name!r} looks like a path; a dataset name is a plain name "
            f"such as 'a9a' (to use your own copy of a LIBSVM file, put it into "
            f"<dir>/<name>/ and set SVMLAB_DATA_DIR=<dir>)"
        )
    if name in REGISTRY:
        return REGISTRY[name]
    lower = {known.lower(): known for known in REGISTRY}
    close = [lower[match] for match in difflib.get_close_matches(name.lower(), lower, n=5)]
    hint = f" Did you mean {', '.join(map(repr, close))}?" if close else ""
    raise DataError(f"unknown dataset {name!r}.{hint} `svmlab datasets list` shows them all.")
