"""Datasets: one registry of names, and ``load`` to turn a name into a train/test split.

Three kinds of dataset:

- embedded: ``breast_cancer`` (scikit-learn), split by ``test_fraction`` with the seed and
  standardized with training statistics;
- synthetic: ``synthetic_tall``, ``synthetic_wide`` (the l1-SVM paper) and ``synthetic_gaussian``,
  generated from the seed;
- libsvm: the LIBSVM binary datasets of ``libsvm_catalogue.tsv``, read from a local folder or
  the cache, or downloaded (see ``svmlab.data.libsvm``).

Labels are always +1.0 / -1.0 (the smaller original value becomes -1). ``Dataset.digest``
identifies the source data: for LIBSVM datasets, the sha256 of the uncompressed bytes of the
training file followed by the test file (``cat a9a a9a.t | sha256sum``); for embedded data, of
the arrays as loaded; for synthetic data, of the generated arrays and the parameters. With
``Dataset.params`` and the seed it determines the returned arrays exactly.

Hydra passes the ``dataset`` node (an entry's name and default parameters, generated at start,
or a user's ``dataset/<name>.yaml``) as ``load(**cfg.dataset, seed=..., ...)``.
"""

from __future__ import annotations

import os
from numbers import Integral
from pathlib import Path

from svmlab.data.dataset import Dataset, DatasetInfo
from svmlab.data.libsvm import LibsvmEntry
from svmlab.data.registry import KINDS, REGISTRY, get_entry
from svmlab.errors import DataError

__all__ = ["Dataset", "DatasetInfo", "fetch", "list_datasets", "load", "prepare", "validate"]

PathLike = str | os.PathLike


def load(
    name: str,
    *,
    seed: int = 0,
    data_dir: PathLike | None = None,
    cache_dir: PathLike | None = None,
    **params,
) -> Dataset:
    """Load dataset ``name`` with its parameters ``params`` (defaults for those not given).

    ``seed`` drives the train/test split and the generators. ``data_dir`` and ``cache_dir``
    are where LIBSVM files are looked for (see ``svmlab.data.libsvm``). Raises DataError for an
    unknown name or parameter, a bad value, unusable data, or a LIBSVM file that differs from
    the official one (unless the parameter ``verify`` is false).
    """
    entry = get_entry(name)
    resolved = entry.resolve(params)
    if not (isinstance(seed, Integral) and not isinstance(seed, bool) and 0 <= seed < 2**32):
        raise DataError(f"seed must be an integer in [0, 2**32); got {seed!r}")
    return entry.load(resolved, seed=int(seed), data_dir=data_dir, cache_dir=cache_dir)


def validate(name: str, **params) -> None:
    """Check a dataset name and its parameters without loading anything; raises DataError."""
    get_entry(name).resolve(params)


def prepare(
    name: str, *, data_dir: PathLike | None = None, cache_dir: PathLike | None = None, **params
) -> None:
    """Make the files ``load`` reads available (found or downloaded, verified) without reading
    them: a sweep checks each of its datasets once before any job starts. Raises DataError as
    ``load`` does for a file that cannot be had."""
    entry = get_entry(name)
    resolved = entry.resolve(params)
    if isinstance(entry, LibsvmEntry):
        entry.prepare(resolved, data_dir, cache_dir)


def list_datasets(
    data_dir: PathLike | None = None, cache_dir: PathLike | None = None
) -> list[DatasetInfo]:
    """Every registered dataset, embedded first, then synthetic, then LIBSVM by name."""
    entries = sorted(REGISTRY.values(), key=lambda e: (KINDS.index(e.kind), e.name.lower()))
    return [entry.info(data_dir, cache_dir) for entry in entries]


def fetch(
    name: str,
    data_dir: PathLike | None = None,
    cache_dir: PathLike | None = None,
    base_url: str | None = None,
    split: bool = False,
) -> list[Path]:
    """Make the files of LIBSVM dataset ``name`` available and return their paths; with
    ``split`` (its training file split by ``test_fraction``), the training file only.

    Files found in the local folder or the cache are verified (see ``svmlab.data.libsvm``); the
    others are downloaded into the cache. Raises DataError for a copy that differs from the
    official file, DownloadError when a download fails.
    """
    entry = get_entry(name)
    if not isinstance(entry, LibsvmEntry):
        raise DataError(f"dataset {name!r} is {entry.kind}: it has no files to fetch")
    return entry.fetch(data_dir, cache_dir, base_url, split)
