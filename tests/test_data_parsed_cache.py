"""The parsed-file cache: a second load reads the parsed arrays instead of the text, gives what a
parse gives, and a damaged, stale or unwritable cache only means parsing again."""

from __future__ import annotations

import bz2
import hashlib
import json
import os
import re
from pathlib import Path

import numpy as np
import pytest

from svmlab import data
from svmlab.data import parsed_cache
from svmlab.data.libsvm_format import measure_content, read_libsvm_file
from svmlab.data.parsed_cache import MANIFEST, PARSED, PARSER_VERSION, read_libsvm_files
from svmlab.data.verified import recorded
from svmlab.errors import DataError

pytestmark = pytest.mark.usefixtures("isolated_data_env")

TRAIN = "+1 1:0.5 2:1\n-1 1:-0.5\n+1 2:0.25 60:1\n-1 1:-1 2:-1\n"
TEST = "+1 1:1\n-1 2:1 3:0.5\n"


@pytest.fixture
def parsed(monkeypatch) -> list[Path]:
    """The files parsed by loads from now on."""
    calls = []
    parse = parsed_cache.read_libsvm_file

    def counting(path, n_features, hashes=()):
        calls.append(path)
        return parse(path, n_features, hashes)

    monkeypatch.setattr(parsed_cache, "read_libsvm_file", counting)
    return calls


def _splice(folder: Path, train: str = TRAIN) -> tuple[Path, Path]:
    """Small files in the place of splice's training and test files (60 features)."""
    (folder / "splice").mkdir(parents=True, exist_ok=True)
    paths = folder / "splice" / "splice", folder / "splice" / "splice.t"
    paths[0].write_text(train)
    paths[1].write_text(TEST)
    return paths


def _load(folder: Path, cache: Path) -> data.Dataset:
    return data.load("splice", data_dir=folder, cache_dir=cache, verify=False)


def _entries(cache: Path) -> list[Path]:
    return sorted((cache / PARSED).iterdir())


def _assert_same(found: data.Dataset, expected: data.Dataset) -> None:
    for name in ("X_train", "X_test"):
        X, Y = getattr(found, name), getattr(expected, name)
        assert X.shape == Y.shape
        for part in ("data", "indices", "indptr"):
            assert np.array_equal(getattr(X, part), getattr(Y, part))
    assert np.array_equal(found.y_train, expected.y_train)
    assert np.array_equal(found.y_test, expected.y_test)
    assert (found.classes, found.digest) == (expected.classes, expected.digest)


def test_a_second_load_reads_the_cache_and_gives_what_the_parse_gave(tmp_path, parsed):
    train, test = _splice(tmp_path / "data")
    cache = tmp_path / "cache"
    first = _load(tmp_path / "data", cache)
    assert parsed == [train, test] and len(_entries(cache)) == 1
    again = _load(tmp_path / "data", cache)
    assert parsed == [train, test]  # not parsed again
    _assert_same(again, first)
    assert again.digest == hashlib.sha256((TRAIN + TEST).encode()).hexdigest()
    assert again.source == first.source and again.unverified == first.unverified
    for X in (again.X_train, again.X_test):  # the dataset's own arrays, not the read-only maps
        assert all(a.flags.writeable for a in (X.data, X.indices, X.indptr))


def test_the_cached_arrays_are_the_parsers_with_their_types(tmp_path, parsed):
    paths = list(_splice(tmp_path / "data"))
    cache = tmp_path / "cache"
    read_libsvm_files(paths, 60, cache)
    cached, digest = read_libsvm_files(paths, 60, cache)
    assert parsed == paths
    assert digest == hashlib.sha256((TRAIN + TEST).encode()).hexdigest()
    for part, path in zip(cached, paths, strict=True):
        fresh = read_libsvm_file(path, 60)
        assert type(part.X) is type(fresh.X) and part.X.shape == fresh.X.shape
        for found, expected in (
            (part.X.data, fresh.X.data),
            (part.X.indices, fresh.X.indices),
            (part.X.indptr, fresh.X.indptr),
            (part.y, fresh.y),
        ):
            assert found.dtype == expected.dtype and np.array_equal(found, expected)


def _flip_a_value(entry: Path) -> None:
    path = entry / "0.data.npy"  # the last byte: the sign and exponent of the last value
    content = bytearray(path.read_bytes())
    content[-1] ^= 0xFF
    path.write_bytes(content)


def _truncate(entry: Path) -> None:
    path = entry / "0.indices.npy"
    path.write_bytes(path.read_bytes()[:-8])


def _delete_an_array(entry: Path) -> None:
    (entry / "1.y.npy").unlink()


def _another_parser_version(entry: Path) -> None:
    manifest = json.loads((entry / MANIFEST).read_text())
    manifest["key"]["parser"] = PARSER_VERSION - 1
    (entry / MANIFEST).write_text(json.dumps(manifest))


def _garble_the_manifest(entry: Path) -> None:
    (entry / MANIFEST).write_text('{"key": ')


@pytest.mark.parametrize(
    "damage",
    [_flip_a_value, _truncate, _delete_an_array, _another_parser_version, _garble_the_manifest],
)
def test_a_damaged_or_stale_entry_is_rebuilt_not_used(tmp_path, parsed, damage):
    train, test = _splice(tmp_path / "data")
    cache = tmp_path / "cache"
    first = _load(tmp_path / "data", cache)
    (entry,) = _entries(cache)
    damage(entry)
    again = _load(tmp_path / "data", cache)
    assert parsed == [train, test] * 2
    _assert_same(again, first)
    assert _entries(cache) == [entry]
    third = _load(tmp_path / "data", cache)  # the rebuilt entry is used
    assert len(parsed) == 4
    _assert_same(third, first)


def test_a_cache_folder_that_cannot_be_written_only_means_parsing_again(tmp_path, parsed):
    train, test = _splice(tmp_path / "data")
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    cache = blocker / "cache"  # cannot be made: its parent is a file
    first = _load(tmp_path / "data", cache)
    again = _load(tmp_path / "data", cache)
    assert parsed == [train, test] * 2
    _assert_same(again, first)
    assert first.n_train == 4 and first.n_test == 2


def test_a_changed_file_gets_a_new_entry(tmp_path, parsed):
    train, test = _splice(tmp_path / "data")
    cache = tmp_path / "cache"
    first = _load(tmp_path / "data", cache)
    train.write_text(TRAIN + "+1 3:1\n")
    later = train.stat().st_mtime_ns + 1_000_000_000
    os.utime(train, ns=(later, later))
    changed = _load(tmp_path / "data", cache)
    assert parsed == [train, test] * 2
    assert changed.n_train == first.n_train + 1
    assert changed.digest == hashlib.sha256((TRAIN + "+1 3:1\n" + TEST).encode()).hexdigest()
    assert len(_entries(cache)) == 2


def test_another_copy_of_the_same_content_uses_the_same_entry(tmp_path, parsed):
    train, test = _splice(tmp_path / "data")
    cache = tmp_path / "cache"
    first = _load(tmp_path / "data", cache)
    other = tmp_path / "other" / "splice"  # compressed otherwise, measured when it is checked
    other.mkdir(parents=True)
    (other / "splice.bz2").write_bytes(bz2.compress(TRAIN.encode()))
    (other / "splice.t").write_text(TEST)
    again = _load(tmp_path / "other", cache)
    assert parsed == [train, test]
    assert again.source == f"{other / 'splice.bz2'}, {other / 'splice.t'}"
    _assert_same(again, first)
    assert len(_entries(cache)) == 1


def test_a_writer_that_finds_the_entry_written_discards_its_copy(tmp_path, parsed, monkeypatch):
    _splice(tmp_path / "data")
    cache = tmp_path / "cache"
    first = _load(tmp_path / "data", cache)
    (entry,) = _entries(cache)
    with monkeypatch.context() as patch:  # as if another process wrote it during this parse
        patch.setattr(parsed_cache, "_read_entry", lambda entry, key: None)
        _load(tmp_path / "data", cache)
    assert len(parsed) == 4
    assert _entries(cache) == [entry]  # no temporary folder left
    _assert_same(_load(tmp_path / "data", cache), first)
    assert len(parsed) == 4


def test_a_malformed_file_is_reported_by_the_parser_and_nothing_is_stored(tmp_path, parsed):
    train, _test = _splice(tmp_path / "data", TRAIN + "+1 2:1 1:1\n")
    cache = tmp_path / "cache"
    for _ in range(2):
        with pytest.raises(
            DataError,
            match=re.escape(
                f"{train}, line 5: the index in '1:1' does not come after the previous index 2"
            ),
        ):
            _load(tmp_path / "data", cache)
    assert parsed == [train, train]
    assert not (cache / PARSED).exists()


def test_a_parse_records_what_a_measurement_of_the_file_would(tmp_path, parsed):
    text = b"# a comment\n\n+1 qid:1 1:0.5 2:1  # trailing\n-1 1:-0.5\n+1 2:1\n-1 1:-1\n" * 4
    path = tmp_path / "duke" / "duke.bz2"  # nothing is known of duke: it is not measured
    path.parent.mkdir()
    path.write_bytes(bz2.compress(text))
    cache = tmp_path / "cache"
    first = data.load("duke", data_dir=tmp_path, cache_dir=cache)
    assert recorded(path, cache, path.stat()) == measure_content(path)
    again = data.load("duke", data_dir=tmp_path, cache_dir=cache)
    assert parsed == [path]
    _assert_same(again, first)


@pytest.mark.shared_data
def test_a1a_from_the_cache_is_a1a_parsed(shared_libsvm, tmp_path, parsed):
    cache = tmp_path / "cache"
    first = data.load("a1a", data_dir=shared_libsvm, cache_dir=cache)
    again = data.load("a1a", data_dir=shared_libsvm, cache_dir=cache)
    assert parsed == [shared_libsvm / "a1a" / "a1a", shared_libsvm / "a1a" / "a1a.t"]
    _assert_same(again, first)
    assert (again.n_train, again.n_test, again.n_features) == (1605, 30956, 123)
