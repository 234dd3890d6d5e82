"""Downloading one file: streamed, verified, and written atomically.

The bytes go to a part file beside the destination, ``.<name>.<host>.<pid>.<random>.part``,
created like any new file (mode 0666 less the umask). Once complete and verified, it is renamed
onto the destination (``os.replace``). On any failure (HTTP error, refused connection, timeout,
a response cut short, content that differs from the official file, Ctrl-C, SIGTERM) the part
file is removed, so the destination either holds the complete, verified file or does not
exist, and the folders made for it are removed again once empty. Parallel jobs that download
the same file at once are safe: each writes its own part file. A part file whose process is
gone (killed with SIGKILL, say) is left behind; ``remove_stale_parts`` removes it, which the
next fetch or load of that file does.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import re
import secrets
import socket
import sys
import urllib.error
import urllib.request
from pathlib import Path

from tqdm import tqdm

from svmlab.data.libsvm_format import Content, measure_content
from svmlab.errors import DataError, DownloadError
from svmlab.lifecycle import pid_running, sigterm_exits

TIMEOUT_S = 60  # for connecting and for each read
_CHUNK = 1 << 20
_HOST = socket.gethostname().replace(".", "_")  # no dots: part names are split at dots


def download(url: str, dest: Path, expected: Content) -> Content | None:
    """Download ``url`` to ``dest``, keeping it only if its uncompressed content agrees with
    the known values of ``expected``; returns the content measured (None if nothing is known).

    With nothing known, only the length is checked (against Content-Length); a corrupt file
    then fails when it is loaded. The progress bar goes to stderr and is shown only on a
    terminal.
    """
    part = dest.with_name(f".{dest.name}.{_HOST}.{os.getpid()}.{secrets.token_hex(8)}.part")
    made = [folder for folder in (dest.parent, *dest.parent.parents) if not folder.exists()]
    with sigterm_exits():
        try:  # the part file is created inside: Ctrl-C just after its creation removes it too
            try:
                dest.parent.mkdir(parents=True, exist_ok=True)
                out = part.open("xb")  # a new file, so its mode is 0666 less the umask
            except OSError as exc:
                raise DownloadError(
                    f"cannot write into {dest.parent} to download {url}: {exc}"
                ) from exc
            with out:
                _stream(url, out, dest.name)
                out.flush()
                os.fsync(out.fileno())
            found = _verified(part, dest, url, expected) if expected.known else None
            os.replace(part, dest)
        except BaseException:
            with contextlib.suppress(OSError):  # e.g. no folder to hold it: the error says why
                part.unlink(missing_ok=True)
                for folder in made:  # the folders made for it, nearest first, once empty
                    folder.rmdir()
            raise
    return found


def _verified(part: Path, dest: Path, url: str, expected: Content) -> Content:
    try:
        found = measure_content(part, dest.name)
    except DataError as exc:
        raise DownloadError(
            f"{dest.name} downloaded from {url} cannot be read ({exc}); the file was not kept"
        ) from exc
    problem = expected.differences(found)
    if problem:
        raise DownloadError(
            f"{dest.name} downloaded from {url} differs from the official file: "
            f"{problem} (of the uncompressed content); the file was not kept"
        )
    return found


def remove_stale_parts(dest: Path) -> None:
    """Remove the part files of ``dest`` whose download process is gone.

    Only this machine's processes can be checked: part files of other machines (a cache folder
    shared over the network) are kept. Part files named without their process, as earlier
    versions of svmlab named them, are stale.
    """
    name = re.escape(dest.name)
    earlier = re.compile(rf"\.{name}\.[a-z0-9_]{{8}}\.part")
    owned = re.compile(rf"\.{name}\.([^.]+)\.(\d+)\.[0-9a-f]{{16}}\.part")
    with contextlib.suppress(OSError):
        for part in dest.parent.iterdir():
            match = owned.fullmatch(part.name)
            stale = earlier.fullmatch(part.name) is not None or (
                match is not None and match[1] == _HOST and not pid_running(int(match[2]))
            )
            if stale:
                part.unlink(missing_ok=True)


def _stream(url: str, out, label: str) -> None:
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_S) as response:
            length = response.headers.get("Content-Length")
            total = int(length) if length else None
            received = 0
            with tqdm(
                total=total,
                desc=label,
                unit="B",
                unit_scale=True,
                unit_divisor=1024,
                file=sys.stderr,
                disable=None,
                leave=False,
            ) as bar:
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
