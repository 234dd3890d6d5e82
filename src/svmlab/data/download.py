"""Downloading one file: streamed, checksummed, and written atomically.

The bytes go to a temporary file in the destination folder, which is fsynced and then renamed
onto the destination (``os.replace``). On any failure (HTTP error, refused connection, timeout,
a response cut short, a checksum mismatch, Ctrl-C) the temporary file is removed, so the
destination either holds the complete, verified file or does not exist. Parallel jobs that
download the same file at once are safe: each writes its own temporary file.
"""

from __future__ import annotations

import http.client
import lzma
import os
import sys
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

from tqdm import tqdm

from svmlab.data.libsvm_format import content_sha256
from svmlab.errors import DownloadError

TIMEOUT_S = 60  # for connecting and for each read
_CHUNK = 1 << 20


def download(url: str, dest: Path, sha256: str | None) -> None:
    """Download ``url`` to ``dest``; with ``sha256``, verify the uncompressed content first.

    Without a known hash only the length is checked (against Content-Length), so that large
    files are not decompressed twice; a corrupt file then fails when it is loaded. The progress
    bar goes to stderr and is shown only on a terminal.
    """
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".part")
    except OSError as exc:
        raise DownloadError(f"cannot write into {dest.parent} to download {url}: {exc}") from exc
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            _stream(url, out, dest.name)
            out.flush()
            os.fsync(out.fileno())
        if sha256 is not None:
            try:
                actual = content_sha256(tmp, dest.name)
            except (OSError, EOFError, lzma.LZMAError) as exc:
                raise DownloadError(f"{dest.name} downloaded from {url} failed its checksum: "
                                    f"it cannot be decompressed ({exc})") from exc
            if actual != sha256:
                raise DownloadError(
                    f"checksum mismatch for {dest.name} downloaded from {url}: expected sha256 "
                    f"{sha256}, got {actual} (of the uncompressed content); the file was not kept")
        os.replace(tmp, dest)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _stream(url: str, out, label: str) -> None:
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_S) as response:
            length = response.headers.get("Content-Length")
            total = int(length) if length else None
            received = 0
            with tqdm(total=total, desc=label, unit="B", unit_scale=True, unit_divisor=1024,
                      file=sys.stderr, disable=None, leave=False) as bar:
                while chunk := response.read(_CHUNK):
                    out.write(chunk)
                    received += len(chunk)
                    bar.update(len(chunk))
    except urllib.error.HTTPError as exc:
        raise DownloadError(f"download of {url} failed: HTTP {exc.code} {exc.reason}") from exc
    except (urllib.error.URLError, http.client.HTTPException, OSError) as exc:
        reason = exc.reason if isinstance(exc, urllib.error.URLError) else repr(exc)
        raise DownloadError(f"download of {url} failed: {reason}") from exc
    if total is not None and received != total:
        raise DownloadError(f"download of {url} was cut short: {received} of {total} bytes")
