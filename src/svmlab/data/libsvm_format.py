"""Reading one LIBSVM-format file (plain, .bz2, .xz or .gz), and measuring its content.

The parser is scikit-learn's ``load_svmlight_file``. Its errors do not say where the problem is,
so on failure the file is scanned again here to report the first offending line. What
``read_libsvm_file`` returns is kept by ``svmlab.data.parsed_cache``: a change to it needs a new
``parsed_cache.PARSER_VERSION``.
"""

from __future__ import annotations

import bz2
import gzip
import hashlib
import io
import lzma
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np
import scipy.sparse as sp

from svmlab.errors import DataError

OPENERS = {".bz2": bz2.open, ".xz": lzma.open, ".gz": gzip.open}
MAGIC = {b"BZh": ".bz2", b"\xfd7zXZ\x00": ".xz", b"\x1f\x8b": ".gz"}  # first bytes -> suffix
EXPECTED = (
    "lines of the form '<label> <index>:<value> <index>:<value> ...': a numeric label, "
    "then feature indices that are positive integers in ascending order, each with a "
    "numeric value"
)
_CHUNK = 1 << 20


def open_content(path: Path, name: str | None = None) -> BinaryIO:
    """Open ``path`` for reading its uncompressed bytes.

    The compression is chosen by the suffix of ``name`` (default: the file's own name), so that
    a download in progress under a temporary name can be read as what it will become. Raises
    DataError for compressed bytes under a name without that compression's suffix: they would
    otherwise be parsed as text.
    """
    opener = OPENERS.get(Path(name or path.name).suffix)
    if opener is None:
        _refuse_unnamed_compression(path)
        opener = open
    return opener(path, "rb")


def _refuse_unnamed_compression(path: Path) -> None:
    with open(path, "rb") as stream:
        start = stream.read(max(map(len, MAGIC)))
    suffix = next((suffix for magic, suffix in MAGIC.items() if start.startswith(magic)), None)
    if suffix is not None:
        raise DataError(
            f"{path} is compressed ({suffix}) but its name does not end in {suffix}; "
            f"rename it to {path.name}{suffix} so that it is decompressed when read"
        )


@dataclass(frozen=True)
class Content:
    """A summary of a file's uncompressed content: its sha256 and number of samples.

    An expected content has None where the official value is not known.
    """

    sha256: str | None
    n_rows: int | None

    @property
    def known(self) -> bool:
        return self.sha256 is not None or self.n_rows is not None

    def differences(self, found: Content) -> str | None:
        """None if ``found`` agrees with every known value of this expected content, else
        "expected <values>, found <values>"."""
        seen = Content(
            found.sha256 if self.sha256 is not None else None,
            found.n_rows if self.n_rows is not None else None,
        )
        return None if seen == self else f"expected {self}, found {seen}"

    def __str__(self) -> str:
        values = ([f"sha256 {self.sha256}"] if self.sha256 is not None else []) + (
            [f"{self.n_rows} rows"] if self.n_rows is not None else []
        )
        return " and ".join(values)


def measure_content(path: Path, name: str | None = None) -> Content:
    """sha256 and number of samples of the uncompressed content of ``path``, in one pass
    (compression chosen as in open_content). Samples are the lines the parser reads: not
    blank, not only a '#' comment. Raises DataError if the file cannot be read."""
    digest = hashlib.sha256()
    n_rows, tail = 0, b""
    try:
        with open_content(path, name) as stream:
            while chunk := stream.read(_CHUNK):
                digest.update(chunk)
                lines = (tail + chunk).split(b"\n")
                tail = lines.pop()
                n_rows += sum(map(_is_sample, lines))
    except (OSError, EOFError, lzma.LZMAError) as exc:
        raise DataError(f"cannot read {path}: {exc}") from exc
    return Content(digest.hexdigest(), n_rows + _is_sample(tail))


def _is_sample(line: bytes) -> bool:
    return bool(line.split(b"#", 1)[0].strip())


class _HashingReader(io.RawIOBase):
    """Passes a stream through unchanged, feeding every byte read to the given hash objects."""

    def __init__(self, stream: BinaryIO, hashes: tuple):
        self._stream = stream
        self._hashes = hashes

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        n = self._stream.readinto(buffer)
        for digest in self._hashes:
            digest.update(memoryview(buffer)[:n])
        return n


@dataclass(frozen=True)
class LibsvmFile:
    """The content of one file: features (CSR, float64, int64 indices) and labels as written."""

    X: sp.csr_matrix
    y: np.ndarray


def read_libsvm_file(path: Path, n_features: int | None, hashes: tuple = ()) -> LibsvmFile:
    """Parse ``path``, feeding its uncompressed bytes to the hash objects ``hashes`` on the way.

    ``n_features`` fixes the number of columns (None: the largest index found). Raises DataError
    with the file, line number and line text for a malformed file, an index beyond
    ``n_features``, or a NaN or inf label or value.
    """
    from sklearn.datasets import load_svmlight_file  # imported here: `svmlab datasets` starts fast

    try:
        with open_content(path) as raw:
            stream = io.BufferedReader(_HashingReader(raw, hashes), _CHUNK)
            try:
                X, y = load_svmlight_file(
                    stream, n_features=n_features, dtype=np.float64, zero_based=False
                )
            except ValueError as exc:
                raise DataError(_malformed(path, n_features, str(exc))) from None
            while stream.read(_CHUNK):  # hash anything the parser left unread
                pass
    except (OSError, EOFError, lzma.LZMAError) as exc:
        raise DataError(f"cannot read {path}: {exc}") from exc
    if X.shape[0] == 0:
        raise DataError(f"{path} contains no samples; expected {EXPECTED}")
    if not (np.all(np.isfinite(X.data)) and np.all(np.isfinite(y))):
        raise DataError(_malformed(path, n_features, "NaN or inf found"))
    return LibsvmFile(X, y)


def _malformed(path: Path, n_features: int | None, parser_message: str) -> str:
    found = first_bad_line(path, n_features)
    if found is None:
        return f"{path} is not a valid LIBSVM file ({parser_message}); expected {EXPECTED}"
    line_number, problem, text = found
    shown = text if len(text) <= 80 else text[:77] + "..."
    return f"{path}, line {line_number}: {problem}: {shown!r}; expected {EXPECTED}"


def first_bad_line(path: Path, n_features: int | None) -> tuple[int, str, str] | None:
    """(line number, problem, line text) of the first line the parser would refuse, or None."""
    with open_content(path) as stream:
        for line_number, line in enumerate(stream, start=1):
            problem = _line_problem(line, n_features)
            if problem:
                return line_number, problem, line.decode("utf-8", "replace").strip()
    return None


def _is_finite_number(token: bytes) -> bool:
    try:
        return bool(np.isfinite(float(token)))
    except ValueError:
        return False


def _line_problem(line: bytes, n_features: int | None) -> str | None:
    """What is wrong with one line, following scikit-learn's rules ('#' starts a comment)."""
    tokens = line.split(b"#", 1)[0].split()
    if not tokens:
        return None
    label, *pairs = tokens
    if not _is_finite_number(label):
        return f"the label {label.decode(errors='replace')!r} is not a finite number"
    previous = 0
    for token in pairs:
        if token.startswith(b"qid:"):
            continue
        text = token.decode(errors="replace")
        index, colon, value = token.partition(b":")
        if not colon:
            return f"{text!r} is not of the form <index>:<value>"
        if not (index.isdigit() and int(index) > 0):
            return f"the index in {text!r} is not a positive integer"
        if int(index) <= previous:
            return f"the index in {text!r} does not come after the previous index {previous}"
        if n_features is not None and int(index) > n_features:
            return f"the index in {text!r} is larger than the dataset's {n_features} features"
        if not _is_finite_number(value):
            return f"the value in {text!r} is not a finite number"
        previous = int(index)
    return None
