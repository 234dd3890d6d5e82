"""What a file holds, measured once: later loads of an unchanged file only stat it.

Measuring a copy (the sha256 and row count of its uncompressed content) reads all of it. The
result is kept in the cache folder as ``.verified/<sha256 of the absolute path>.json`` with the
file's size and modification time; while both are unchanged, the record stands for the file.
A file changed in place gets a new modification time and is measured again. Parsing a file
records what it read, too (``svmlab.data.parsed_cache``). Records are
written atomically, and a cache folder that cannot be written only means measuring again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
from pathlib import Path

from svmlab.data.libsvm_format import Content, measure_content

RECORDS = ".verified"


def _record(path: Path, cache: Path) -> Path:
    return cache / RECORDS / f"{hashlib.sha256(str(path).encode()).hexdigest()}.json"


def _signature(path: Path, stat: os.stat_result) -> dict:
    return {"path": str(path), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def content_of(path: Path, cache: Path) -> Content:
    """The content of ``path``: as recorded if the file is unchanged, else measured and
    recorded. Raises DataError if the file cannot be read."""
    stat = path.stat()  # before measuring: a change during the measurement is seen next time
    content = recorded(path, cache, stat)
    if content is None:
        content = measure_content(path)
        remember(path, content, cache, stat)
    return content


def recorded(path: Path, cache: Path, stat: os.stat_result) -> Content | None:
    """The content recorded for ``path`` with the size and modification time of ``stat``;
    None if there is no such record (or an unreadable one)."""
    absolute = path.resolve()
    try:
        record = json.loads(_record(absolute, cache).read_text())
        if record["file"] == _signature(absolute, stat):
            return Content(record["sha256"], record["n_rows"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return None


def remember(path: Path, content: Content, cache: Path, stat: os.stat_result | None = None) -> None:
    """Record ``content`` as what ``path`` holds while it has the size and modification time
    of ``stat`` (default: the file's now)."""
    absolute = path.resolve()
    record = _record(absolute, cache)
    text = json.dumps(
        {
            "file": _signature(absolute, stat or path.stat()),
            "sha256": content.sha256,
            "n_rows": content.n_rows,
        }
    )
    written = record.with_name(f"{record.name}.{secrets.token_hex(8)}.tmp")
    try:
        record.parent.mkdir(parents=True, exist_ok=True)
        written.write_text(text)
        os.replace(written, record)
    except OSError:
        with contextlib.suppress(OSError):
            written.unlink(missing_ok=True)
