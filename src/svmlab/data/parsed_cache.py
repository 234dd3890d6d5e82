"""Parsed LIBSVM files, kept on disk so that a file is parsed once, not by every job loading it.

The first load of a dataset's files (the training file, and the test file where it is used)
stores what the parser returned in the cache folder as ``.parsed/<key>/``: for the i-th file,
its CSR parts ``<i>.data.npy``, ``<i>.indices.npy``, ``<i>.indptr.npy`` and its labels
``<i>.y.npy``, uncompressed, and ``manifest.json`` with the key, each file's shape, the
dataset's digest and each array file's size and sha256. Later loads, in any process or on any
machine sharing the folder, check the entry and memory-map its arrays (read-only).

An entry holds all the files of one load, not one file, because the dataset's digest is one
sha256 over the training then the test file's uncompressed bytes: it cannot be computed from the
files' own sha256, so the entry keeps it. The key is a sha256 over ``PARSER_VERSION``,
``n_features`` and each file's content sha256 as recorded in ``svmlab.data.verified`` (a parse
records it too, so no file is read twice). A changed file gets a new entry, and so does a copy
that differs from the official file. A copy of the same content under another path or
compression uses the same entry once its content is recorded (a copy checked against the
catalogue is measured before it is parsed). After a change of ``PARSER_VERSION`` the older
entries are no longer read (their keys differ) and new ones are written beside them.

An entry is written into a temporary folder, then renamed into place: nobody sees half of one,
and of two processes writing the same entry, the one that renames second discards its copy. A
missing or truncated array, a checksum that differs, or a manifest that cannot be read or is of
another key: the entry is removed and the files are parsed again. A cache folder that cannot be
written only means parsing again. Only successful parses are stored, so a malformed file is
reported by the parser, as without the cache. The ``.parsed`` folder can be deleted at any time.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import shutil
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from svmlab.data.libsvm_format import Content, LibsvmFile, read_libsvm_file
from svmlab.data.verified import recorded, remember

PARSER_VERSION = 1  # bump when what read_libsvm_file returns, or an entry's layout, changes
PARSED = ".parsed"
MANIFEST = "manifest.json"
ARRAYS = ("data", "indices", "indptr", "y")


def read_libsvm_files(
    paths: list[Path], n_features: int | None, cache: Path
) -> tuple[list[LibsvmFile], str]:
    """The files at ``paths`` parsed, and the sha256 of their uncompressed bytes one after the
    other: from an intact cache entry, else parsed and stored. Raises the parser's DataError."""
    try:  # before parsing: a file changed while it is parsed is seen as changed next time
        stats = [path.stat() for path in paths]
    except OSError:  # gone since it was found: the parser reports it
        return _parse(paths, n_features)[:2]
    contents = [recorded(path, cache, stat) for path, stat in zip(paths, stats, strict=True)]
    if None not in contents:
        key = _key(contents, n_features)
        found = _read_entry(_entry(cache, key), key)
        if found is not None:
            return found
    parts, digest, contents = _parse(paths, n_features)
    for path, stat, content in zip(paths, stats, contents, strict=True):
        remember(path, content, cache, stat)
    key = _key(contents, n_features)
    _write_entry(_entry(cache, key), key, parts, digest)
    return parts, digest


def _parse(
    paths: list[Path], n_features: int | None
) -> tuple[list[LibsvmFile], str, list[Content]]:
    """The parsed files, their combined sha256, and each file's content, from one pass."""
    digest = hashlib.sha256()
    parts, contents = [], []
    for path in paths:
        own = hashlib.sha256()
        part = read_libsvm_file(path, n_features, hashes=(digest, own))
        parts.append(part)
        # the parser's rows are measure_content's: the lines neither blank nor only a comment
        contents.append(Content(own.hexdigest(), part.X.shape[0]))
    return parts, digest.hexdigest(), contents


def _key(contents: list[Content], n_features: int | None) -> dict:
    return {
        "parser": PARSER_VERSION,
        "n_features": n_features,
        "files": [content.sha256 for content in contents],
    }


def _entry(cache: Path, key: dict) -> Path:
    return cache / PARSED / hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()


def _sha256(path: Path) -> str:
    with path.open("rb") as stream:
        return hashlib.file_digest(stream, "sha256").hexdigest()


def _read_entry(entry: Path, key: dict) -> tuple[list[LibsvmFile], str] | None:
    """The parsed files and digest kept in ``entry``, if it is intact and of ``key``; else
    None, the entry (if any) removed."""
    try:
        manifest = json.loads((entry / MANIFEST).read_text())
        shapes = manifest["shapes"]
        if manifest["key"] != key or len(shapes) != len(key["files"]):
            raise ValueError(f"{entry} is not an entry of {key}")
        parts = [_read_file(entry, i, shape, manifest["arrays"]) for i, shape in enumerate(shapes)]
        return parts, manifest["digest"]
    except (OSError, ValueError, KeyError, TypeError):
        shutil.rmtree(entry, ignore_errors=True)  # absent or damaged: parsed and written again
        return None


def _read_file(entry: Path, i: int, shape: list[int], sizes_and_sums: dict) -> LibsvmFile:
    data, indices, indptr, y = (
        _mapped(entry / f"{i}.{name}.npy", sizes_and_sums[f"{i}.{name}"]) for name in ARRAYS
    )
    # built as load_svmlight_file builds it: csr_matrix's own constructor would copy the int64
    # index arrays into int32 ones
    X = sp.csr_matrix(sp.csr_array((data, indices, indptr), shape=tuple(shape)))
    return LibsvmFile(X, y)


def _mapped(path: Path, expected: dict) -> np.ndarray:
    """The array in ``path``, memory-mapped once its size and sha256 are the expected ones."""
    if path.stat().st_size != expected["bytes"] or _sha256(path) != expected["sha256"]:
        raise ValueError(f"{path} is truncated or corrupt")
    return np.asarray(np.load(path, mmap_mode="r", allow_pickle=False))


def _write_entry(entry: Path, key: dict, parts: list[LibsvmFile], digest: str) -> None:
    """Store ``parts`` and ``digest`` as ``entry``; when that cannot be done, store nothing."""
    temporary = entry.with_name(f".{entry.name}.{secrets.token_hex(8)}.tmp")
    try:
        temporary.mkdir(parents=True)
        sizes_and_sums = {}
        for i, part in enumerate(parts):
            arrays = (part.X.data, part.X.indices, part.X.indptr, part.y)
            for name, array in zip(ARRAYS, arrays, strict=True):
                path = temporary / f"{i}.{name}.npy"
                np.save(path, array, allow_pickle=False)
                sizes_and_sums[f"{i}.{name}"] = {
                    "bytes": path.stat().st_size,
                    "sha256": _sha256(path),
                }
        manifest = {
            "key": key,
            "digest": digest,
            "shapes": [part.X.shape for part in parts],
            "arrays": sizes_and_sums,
        }
        (temporary / MANIFEST).write_text(json.dumps(manifest))
        temporary.rename(entry)  # refused if another process has put the entry in place
    except OSError:
        pass  # not writable or full (parsed again next time), or written by another process
    finally:
        shutil.rmtree(temporary, ignore_errors=True)
