"""LIBSVM binary datasets: the catalogue of official files, where copies are found, and loading.

Every dataset of ``libsvm_catalogue.tsv`` goes through the same code. Each file is looked for in

1. the local data folder (``data_dir``, else ``$SVMLAB_DATA_DIR``), as ``<dir>/<dataset>/<file>``
   or ``<dir>/<file>``;
2. the cache folder (``cache_dir``, else ``$SVMLAB_CACHE_DIR``, else ``~/.cache/svmlab/libsvm``),
   as ``<cache>/<dataset>/<file>``;
3. and otherwise downloaded from the LIBSVM site (``base_url``, else ``$SVMLAB_LIBSVM_URL``) into
   the cache folder.

A copy may be compressed differently from the official file (``madelon.bz2`` for ``madelon``,
``ijcnn1`` for ``ijcnn1.bz2``): hashes are taken over the uncompressed content.

Every copy is verified against what the catalogue knows of the official file, its sha256 and
row count, once per file (see ``svmlab.data.verified``). A download that differs is not kept; a
cached copy that differs is refused and removed, so that the next load or fetch downloads it
again; a local copy that differs is refused, unless the dataset parameter ``verify`` is false:
it is then used, and ``Dataset.unverified`` says how it differs.

Loading parses the files once: later loads read the parsed arrays from the cache folder (see
``svmlab.data.parsed_cache``).
"""

from __future__ import annotations

import csv
import os
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import ClassVar
from urllib.parse import quote

import scipy.sparse as sp

from svmlab.data.dataset import Dataset, DatasetInfo
from svmlab.data.download import download, remove_stale_parts
from svmlab.data.entry import OPTIONAL_TEST_FRACTION, TEST_FRACTION, Entry, flag
from svmlab.data.libsvm_format import OPENERS, Content
from svmlab.data.parsed_cache import read_libsvm_files
from svmlab.data.prepare import (
    as_csr32,
    encode_labels,
    encode_test_labels,
    max_abs_scale,
    split_sizes,
    stratified_split,
)
from svmlab.data.verified import content_of, remember
from svmlab.errors import DataError, DownloadError

DEFAULT_URL = "https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/binary"
DEFAULT_CACHE = Path("~/.cache/svmlab/libsvm")
ROLES = ("train", "test", "extra")
MAX_ABS_SCALE = flag("max_abs_scale", False)
VERIFY = flag("verify", True)  # false: use a copy that differs from the official file


@dataclass(frozen=True)
class CatalogueFile:
    """One official file of a dataset."""

    role: str  # "train", "test", or "extra" (fetched but not used by load)
    name: str  # the official file name, also its download name
    n_rows: int | None
    sha256: str | None  # of the uncompressed content, where the official file's is known

    @property
    def expected(self) -> Content:
        return Content(self.sha256, self.n_rows)

    def copy_names(self) -> tuple[str, ...]:
        """Names a copy may have: the official name first, then the other compressions."""
        suffix = Path(self.name).suffix
        stem = self.name.removesuffix(suffix) if suffix in OPENERS else self.name
        names = (self.name, stem, *(stem + suffix for suffix in OPENERS))
        return tuple(dict.fromkeys(names))


def data_folder(data_dir: str | os.PathLike | None) -> Path | None:
    folder = data_dir if data_dir is not None else os.environ.get("SVMLAB_DATA_DIR")
    return Path(folder).expanduser() if folder else None


def cache_folder(cache_dir: str | os.PathLike | None) -> Path:
    folder = cache_dir if cache_dir is not None else os.environ.get("SVMLAB_CACHE_DIR")
    return Path(folder).expanduser() if folder else DEFAULT_CACHE.expanduser()


def _origin(data_dir) -> str:
    """What set the data folder: the argument (``paths.data_dir``, ``--data-dir``) or the
    environment."""
    return "SVMLAB_DATA_DIR" if data_dir is None else "paths.data_dir or --data-dir"


def find_copy(
    dataset: str, file: CatalogueFile, data_dir=None, cache_dir=None
) -> tuple[str, Path] | None:
    """("local" or "cache", path) of the first copy of ``file`` found, or None."""
    local = data_folder(data_dir)
    folders = [("local", local / dataset), ("local", local)] if local else []
    folders.append(("cache", cache_folder(cache_dir) / dataset))
    for where, folder in folders:
        for name in file.copy_names():
            if (folder / name).is_file():
                return where, folder / name
    return None


@dataclass(frozen=True, kw_only=True)
class LibsvmEntry(Entry):
    """A LIBSVM dataset: its official files and number of features."""

    kind: ClassVar[str] = "libsvm"
    files: tuple[CatalogueFile, ...]
    n_features: int | None  # None: the largest feature index in the files

    def file(self, role: str) -> CatalogueFile | None:
        return next((file for file in self.files if file.role == role), None)

    def used_files(self, split: bool = False) -> list[CatalogueFile]:
        """The files ``load`` reads: the training file, then the test file if there is one and
        the training file is not ``split``."""
        test = None if split else self.file("test")
        return [file for file in (self.file("train"), test) if file is not None]

    def fetch(
        self, data_dir=None, cache_dir=None, base_url=None, split: bool = False
    ) -> list[Path]:
        """Paths of all official files (with ``split``, of the training file alone), verified;
        those not found locally or in the cache are downloaded. Raises DataError for a copy
        that differs from the official file."""
        return [
            self._ensure(file, data_dir, cache_dir, base_url, verify=True)[0]
            for file in (self.used_files(split=True) if split else self.files)
        ]

    def _ensure(
        self, file: CatalogueFile, data_dir, cache_dir, base_url, verify: bool
    ) -> tuple[Path, str | None]:
        """A copy of ``file``, found or downloaded into the cache, and how it differs from the
        official file (None: it does not, or nothing is known to compare it with)."""
        cache = cache_folder(cache_dir)
        dest = cache / self.name / file.name
        remove_stale_parts(dest)
        found = find_copy(self.name, file, data_dir, cache_dir)
        if found is None:
            local = data_folder(data_dir)
            if local is not None and not local.is_dir():  # a typo: no download in its place
                raise DataError(
                    f"the data folder {local} ({_origin(data_dir)}) does not exist: create it "
                    f"and put {file.name} into {local / self.name}/, or set no data folder "
                    f"to download {file.name} into {dest.parent}"
                )
            self._download(file, dest, cache, base_url, local, _origin(data_dir))
            return dest, None
        where, path = found
        return path, self._verify(file, where, path, cache, verify)

    def _download(
        self,
        file: CatalogueFile,
        dest: Path,
        cache: Path,
        base_url,
        local: Path | None,
        origin: str,
    ) -> None:
        """Download ``file`` into ``dest``; a failure first says where the file was looked for
        (the local data folder ``local``, set by ``origin``, and the cache), then why the
        download failed and where the file could be put by hand."""
        base = base_url or os.environ.get("SVMLAB_LIBSVM_URL") or DEFAULT_URL
        url = f"{base.rstrip('/')}/{quote(file.name)}"
        try:
            content = download(url, dest, file.expected)
        except DownloadError as exc:
            if local is None:
                missing = (
                    f"{file.name} is not in the cache {dest.parent} and no data folder "
                    f"is set (SVMLAB_DATA_DIR or paths.data_dir)"
                )
                by_hand = (
                    f"put {file.name} (compressed or not) into {dest.parent}, or into "
                    f"<dir>/{self.name}/ and set SVMLAB_DATA_DIR=<dir>"
                )
            else:
                missing = (
                    f"{file.name} is neither in the data folder {local} ({origin}) nor "
                    f"in the cache {dest.parent}"
                )
                by_hand = f"put {file.name} (compressed or not) into {local / self.name}/"
            raise DownloadError(f"{missing}; {exc}. To provide it by hand, {by_hand}.") from exc
        if content is not None:
            remember(dest, content, cache)

    def _verify(
        self, file: CatalogueFile, where: str, path: Path, cache: Path, verify: bool
    ) -> str | None:
        """None if the copy at ``path`` agrees with what is known of ``file``. Otherwise, with
        ``verify``, refuse it (removing a cached copy); without, say how it differs."""
        if not file.expected.known:
            return None
        problem = file.expected.differences(content_of(path, cache))
        if problem is None:
            return None
        differs = (
            f"{path} differs from the official {file.name}: {problem} (of the uncompressed content)"
        )
        if not verify:
            return differs
        if where == "cache":
            path.unlink(missing_ok=True)
            raise DataError(
                f"{differs}. This copy in the download cache was removed: the next "
                f"load or `svmlab datasets fetch {self.name}` downloads it again."
            )
        raise DataError(
            f"{differs}. To use this copy anyway, set the dataset parameter "
            f"verify=false (dataset.verify=false in a run's config)."
        )

    def prepare(self, params: dict, data_dir=None, cache_dir=None) -> list[tuple[Path, str | None]]:
        """The copies of the files ``load`` reads with ``params``, found or downloaded and
        verified, each with how it differs from the official file (None: it does not)."""
        used = self.used_files(split=params["test_fraction"] is not None)
        return [
            self._ensure(file, data_dir, cache_dir, base_url=None, verify=params["verify"])
            for file in used
        ]

    def load(self, params: dict, *, seed: int, data_dir=None, cache_dir=None) -> Dataset:
        copies = self.prepare(params, data_dir, cache_dir)
        paths = [path for path, _ in copies]
        parts, digest = read_libsvm_files(paths, self.n_features, cache_folder(cache_dir))
        n_features = max(part.X.shape[1] for part in parts)
        X = _with_columns(parts[0].X, n_features)
        y, classes = encode_labels(parts[0].y, f"training file {paths[0]}")
        if len(parts) == 2:
            X_train, y_train = X, y
            X_test = _with_columns(parts[1].X, n_features)
            y_test = encode_test_labels(parts[1].y, classes, f"test file {paths[1]}")
        else:
            train, test = stratified_split(y, params["test_fraction"], seed, str(paths[0]))
            X_train, y_train, X_test, y_test = X[train], y[train], X[test], y[test]
        if params["max_abs_scale"]:
            X_train, X_test = max_abs_scale(X_train, X_test)
        unverified = "; ".join(differs for _, differs in copies if differs) or None
        return Dataset(
            self.name,
            as_csr32(X_train, self.name),
            y_train,
            as_csr32(X_test, self.name),
            y_test,
            classes,
            digest,
            ", ".join(map(str, paths)),
            dict(params),
            unverified,
        )

    def info(self, data_dir=None, cache_dir=None) -> DatasetInfo:
        train, test = self.file("train"), self.file("test")
        if test is not None:
            n_train, n_test = train.n_rows, test.n_rows
        elif train.n_rows is not None:
            n_train, n_test = split_sizes(train.n_rows, TEST_FRACTION.default)
        else:
            n_train = n_test = None
        return DatasetInfo(
            self.name,
            self.kind,
            n_train,
            n_test,
            self.n_features,
            self._location(data_dir, cache_dir),
        )

    def _location(self, data_dir, cache_dir) -> str:
        used = self.used_files()
        found = [find_copy(self.name, file, data_dir, cache_dir) for file in used]
        missing = [file.name for file, copy in zip(used, found, strict=True) if copy is None]
        present = [copy for copy in found if copy is not None]
        if not present:
            return "not downloaded"
        wheres = "+".join(w for w in ("local", "cache") if any(c[0] == w for c in present))
        folders = ", ".join(dict.fromkeys(str(path.parent) for _, path in present))
        return (f"missing {', '.join(missing)}; " if missing else "") + f"{wheres}: {folders}"


def _with_columns(X: sp.csr_matrix, n_features: int) -> sp.csr_matrix:
    """X with n_features columns (a file may not use the last features)."""
    return sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], n_features))


def _read_catalogue() -> tuple[LibsvmEntry, ...]:
    text = files("svmlab.data").joinpath("libsvm_catalogue.tsv").read_text()
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    rows: dict[str, list[dict]] = {}
    for row in csv.DictReader(lines, delimiter="\t"):
        rows.setdefault(row["dataset"], []).append(row)
    return tuple(_entry(name, dataset_rows) for name, dataset_rows in rows.items())


def _entry(name: str, rows: list[dict]) -> LibsvmEntry:
    def number(text: str | None) -> int | None:
        return int(text) if text else None

    catalogue_files = tuple(
        CatalogueFile(row["role"], row["file"], number(row["n_rows"]), row["sha256"] or None)
        for row in rows
    )
    roles = [file.role for file in catalogue_files]
    widths = {number(row["n_features"]) for row in rows}
    if (
        roles.count("train") != 1
        or roles.count("test") > 1
        or set(roles) - set(ROLES)
        or len(widths) != 1
    ):
        raise RuntimeError(
            f"libsvm_catalogue.tsv: bad rows for {name}: one train file, at most "
            f"one test file, roles among {ROLES} and one n_features are required"
        )
    n_features = widths.pop()
    used = [file for file in catalogue_files if file.role != "extra"]
    features = f"{n_features} features" if n_features else "features counted in the files"
    if all(file.n_rows for file in used):
        counts = " + ".join(
            f"{file.n_rows} {file.role}" if len(used) > 1 else str(file.n_rows) for file in used
        )
        size = f"{counts} rows x {features}"
    else:
        size = f"{features}, row counts not listed"
    split = "" if "test" in roles else ", split by test_fraction"
    names = ", ".join(file.name for file in used)
    description = f"LIBSVM {name}: {size}{split} (file{'s' if len(used) > 1 else ''} {names})"
    return LibsvmEntry(
        name=name,
        description=description,
        files=catalogue_files,
        n_features=n_features,
        params=(OPTIONAL_TEST_FRACTION, MAX_ABS_SCALE, VERIFY)
        if "test" in roles
        else (TEST_FRACTION, MAX_ABS_SCALE, VERIFY),
    )


ENTRIES = _read_catalogue()
