"""Verified copies: a copy that differs from the official file is refused (a cached one also
removed) or, with verify=False, used and reported; what a file holds is measured once; part
files of interrupted downloads do not stay; downloaded files get the umask's mode."""

from __future__ import annotations

import bz2
import gzip
import hashlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from svmlab import data
from svmlab.data import verified
from svmlab.data.download import remove_stale_parts
from svmlab.data.registry import REGISTRY
from svmlab.data.verified import RECORDS
from svmlab.errors import DataError

pytestmark = [pytest.mark.shared_data, pytest.mark.usefixtures("isolated_data_env")]

A1A = REGISTRY["a1a"].file("train")


def _a1a_copy(shared: Path, folder: Path, change=bytes) -> Path:
    """a1a and a1a.t copied into ``folder``/a1a, the training file's bytes passed through
    ``change``; returns the training file."""
    (folder / "a1a").mkdir(parents=True)
    shutil.copy(shared / "a1a" / "a1a.t", folder / "a1a" / "a1a.t")
    train = folder / "a1a" / "a1a"
    train.write_bytes(change((shared / "a1a" / "a1a").read_bytes()))
    return train


def _first_lines(n: int):
    return lambda content: b"".join(content.splitlines(keepends=True)[:n])


def _one_byte_altered(content: bytes) -> bytes:
    at = content.index(b"1:1")  # a value 1 becomes 2: the same rows, other bytes
    return content[:at] + b"1:2" + content[at + 3 :]


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def measured(monkeypatch) -> list[Path]:
    """The files measured by loads from now on (the hash and row count of their content)."""
    calls = []
    measure = verified.measure_content

    def counting(path, name=None):
        calls.append(path)
        return measure(path, name)

    monkeypatch.setattr(verified, "measure_content", counting)
    return calls


# -- a copy that differs from the official file ----------------------------------------------


def test_a_truncated_local_copy_is_refused_with_the_expected_and_found_values(
    shared_libsvm, tmp_path
):
    train = _a1a_copy(shared_libsvm, tmp_path, _first_lines(962))
    with pytest.raises(DataError) as error:
        data.load("a1a", data_dir=tmp_path)
    assert str(error.value) == (
        f"{train} differs from the official a1a: expected sha256 {A1A.sha256} and 1605 rows, "
        f"found sha256 {_sha256(train)} and 962 rows (of the uncompressed content). To use this "
        f"copy anyway, set the dataset parameter verify=false (dataset.verify=false in a run's "
        f"config)."
    )
    assert train.exists()  # a local copy is the user's: never removed


def test_a_local_copy_with_one_byte_altered_is_refused(shared_libsvm, tmp_path):
    train = _a1a_copy(shared_libsvm, tmp_path, _one_byte_altered)
    with pytest.raises(DataError, match="differs from the official a1a") as error:
        data.fetch("a1a", data_dir=tmp_path)  # fetch checks the copies it finds, too
    message = str(error.value)
    assert f"found sha256 {_sha256(train)} and 1605 rows" in message


def test_verify_false_uses_the_copy_and_says_how_it_differs(shared_libsvm, tmp_path):
    train = _a1a_copy(shared_libsvm, tmp_path, _first_lines(962))
    dataset = data.load("a1a", data_dir=tmp_path, verify=False)
    assert dataset.n_train == 962 and dataset.params["verify"] is False
    assert dataset.unverified == (
        f"{train} differs from the official a1a: expected sha256 {A1A.sha256} and 1605 rows, "
        f"found sha256 {_sha256(train)} and 962 rows (of the uncompressed content)"
    )
    assert data.load("a1a", data_dir=shared_libsvm, verify=False).unverified is None


def test_a_cached_copy_that_differs_is_removed_and_the_next_fetch_downloads_it(
    libsvm_site, shared_libsvm, tmp_path
):
    cache = tmp_path / "cache"
    train = _a1a_copy(shared_libsvm, cache, _first_lines(962))
    kept = data.load("a1a", cache_dir=cache, verify=False)  # verify=False keeps it, too
    assert kept.n_train == 962 and kept.unverified.startswith(f"{train} differs")
    with pytest.raises(DataError) as error:
        data.load("a1a", cache_dir=cache)
    assert str(error.value).endswith(
        "This copy in the download cache was removed: the next load or `svmlab datasets fetch "
        "a1a` downloads it again."
    )
    assert not train.exists() and (cache / "a1a" / "a1a.t").exists()
    assert data.fetch("a1a", cache_dir=cache, base_url=libsvm_site.url)[0] == train
    assert libsvm_site.requests == {"a1a": 1}
    assert data.load("a1a", cache_dir=cache).n_train == 1605


def test_a_download_that_differs_from_the_known_row_count_is_not_kept(
    libsvm_site, shared_libsvm, tmp_path
):
    assert REGISTRY["a2a"].file("train").sha256 is None  # only the row count tells
    served = tmp_path / "served"
    served.mkdir()
    (served / "a2a").write_bytes(_first_lines(100)((shared_libsvm / "a1a" / "a1a").read_bytes()))
    libsvm_site.files["a2a"] = served / "a2a"
    cache = tmp_path / "cache"
    with pytest.raises(
        DataError,
        match=r"a2a downloaded from .* differs from the official file: "
        r"expected 2265 rows, found 100 rows",
    ):
        data.fetch("a2a", cache_dir=cache, base_url=libsvm_site.url)
    assert not (cache / "a2a").exists()  # no part file, and no folder made for it


# -- measured once -----------------------------------------------------------------------------


def test_a_file_is_measured_once_and_again_when_it_changes(shared_libsvm, tmp_path, measured):
    cache = tmp_path / "cache"
    train = _a1a_copy(shared_libsvm, tmp_path / "data")
    test = train.with_name("a1a.t")
    data.load("a1a", data_dir=tmp_path / "data", cache_dir=cache)
    assert sorted(measured) == [train, test]
    data.load("a1a", data_dir=tmp_path / "data", cache_dir=cache)
    data.fetch("a1a", data_dir=tmp_path / "data", cache_dir=cache)
    assert len(measured) == 2
    records = [json.loads(path.read_text()) for path in (cache / RECORDS).iterdir()]
    assert sorted(
        (r["file"]["path"], r["file"]["size"], r["sha256"], r["n_rows"]) for r in records
    ) == [
        (str(train.resolve()), train.stat().st_size, A1A.sha256, 1605),
        (str(test.resolve()), test.stat().st_size, _sha256(test), 30956),
    ]
    train.write_bytes(_one_byte_altered(train.read_bytes()))  # same size
    changed = train.stat().st_mtime_ns + 1_000_000_000  # and a time surely not the old one
    os.utime(train, ns=(changed, changed))
    with pytest.raises(DataError, match="differs from the official a1a"):
        data.load("a1a", data_dir=tmp_path / "data", cache_dir=cache)
    assert measured[2:] == [train]


def test_a_download_is_measured_on_the_way_not_again_when_loaded(libsvm_site, tmp_path, measured):
    cache = tmp_path / "cache"
    data.fetch("a1a", cache_dir=cache, base_url=libsvm_site.url)
    data.load("a1a", cache_dir=cache)
    assert measured == []


def test_a_file_nothing_is_known_of_is_not_measured(tmp_path, measured):
    assert REGISTRY["duke"].file("train").expected.known is False
    (tmp_path / "duke").mkdir()
    (tmp_path / "duke" / "duke.bz2").write_bytes(bz2.compress(b"1 1:1\n-1 2:1\n" * 4))
    dataset = data.load("duke", data_dir=tmp_path)
    assert dataset.unverified is None and measured == []


# -- compressed bytes under a plain name ------------------------------------------------------


def test_gzip_bytes_under_a_plain_name_are_refused_with_the_name_to_give_them(
    shared_libsvm, tmp_path
):
    train = _a1a_copy(shared_libsvm, tmp_path, gzip.compress)
    for verify in (True, False):
        with pytest.raises(DataError) as error:
            data.load("a1a", data_dir=tmp_path, verify=verify)
        assert str(error.value) == (
            f"{train} is compressed (.gz) but its name does not end in "
            f".gz; rename it to a1a.gz so that it is decompressed when "
            f"read"
        )
    train.rename(train.with_name("a1a.gz"))
    assert data.load("a1a", data_dir=tmp_path).n_train == 1605


# -- part files and modes ----------------------------------------------------------------------


def _fetch_process(name: str, cache: Path, url: str) -> subprocess.Popen:
    """`svmlab datasets fetch` as a child process (the environment, PYTHONPATH included, is
    this one's)."""
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "svmlab.app.cli",
            "datasets",
            "fetch",
            name,
            "--cache-dir",
            str(cache),
            "--base-url",
            url,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_ctrl_c_as_in_a_terminal,
    )


def _ctrl_c_as_in_a_terminal() -> None:
    """SIGINT's default action in the child, as a shell's foreground command has it: a test
    worker may run with SIGINT ignored, which its children would inherit."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _parts(folder: Path) -> list[Path]:
    return sorted(folder.glob(".*.part"))


def _wait_for_part(folder: Path, proc: subprocess.Popen) -> Path:
    """The part file of a download under way in ``proc``, once it exists."""
    _wait_until(lambda: _parts(folder), proc)
    (part,) = _parts(folder)
    return part


def _wait_until(condition, proc: subprocess.Popen) -> None:
    """Poll ``condition()`` while ``proc`` runs; the time limit is only a safety net."""
    deadline = time.monotonic() + 600
    while not condition():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"the download never started: {proc.communicate()}")
        time.sleep(0.05)


def _reading(site, proc: subprocess.Popen) -> None:
    """Wait until ``proc`` reads a stalled download: the server has sent its first half, so the
    request was made from inside the download's clean-up block (the part file alone exists a
    moment before that block is entered)."""
    _wait_until(site.sent.is_set, proc)


def test_sigterm_during_a_fetch_leaves_no_part_file(libsvm_site, tmp_path):
    cache = tmp_path / "cache"
    libsvm_site.stalled.add("a1a")
    proc = _fetch_process("a1a", cache, libsvm_site.url)
    _reading(libsvm_site, proc)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=600) == 128 + signal.SIGTERM
    assert not (cache / "a1a").exists()  # no part file, and no folder made for it


def test_ctrl_c_during_a_fetch_says_so_in_one_line_and_leaves_no_part_file(libsvm_site, tmp_path):
    cache = tmp_path / "cache"
    libsvm_site.stalled.add("a1a")
    proc = _fetch_process("a1a", cache, libsvm_site.url)
    _reading(libsvm_site, proc)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=600) == 130
    err = proc.stderr.read()
    assert "svmlab: interrupted" in err and "Traceback" not in err
    assert not (cache / "a1a").exists()  # no part file, and no folder made for it


def test_a_part_file_whose_process_is_gone_is_removed_by_the_next_fetch(libsvm_site, tmp_path):
    cache = tmp_path / "cache"
    folder = cache / "a1a"
    libsvm_site.stalled.add("a1a")
    proc = _fetch_process("a1a", cache, libsvm_site.url)
    part = _wait_for_part(folder, proc)
    remove_stale_parts(folder / "a1a")
    assert part.exists()  # its download is under way
    proc.kill()
    proc.wait(timeout=60)
    assert part.exists()  # SIGKILL leaves it behind
    earlier = folder / ".a1a.x7_abc12.part"  # as earlier versions named them: no process
    elsewhere = folder / f".a1a.elsewhere.{proc.pid}.{'0' * 16}.part"  # another machine's
    earlier.touch()
    elsewhere.touch()
    libsvm_site.stalled.clear()
    assert data.fetch("a1a", cache_dir=cache, base_url=libsvm_site.url)[0] == folder / "a1a"
    assert _parts(folder) == [elsewhere]


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o077, 0o600)])
def test_a_downloaded_file_has_the_mode_of_any_new_file(libsvm_site, tmp_path, umask, mode):
    previous = os.umask(umask)
    try:
        paths = data.fetch("heart_scale", cache_dir=tmp_path / "cache", base_url=libsvm_site.url)
    finally:
        os.umask(previous)
    assert stat.S_IMODE(paths[0].stat().st_mode) == mode
