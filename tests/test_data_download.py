"""Downloads, against a real HTTP server on loopback laid out like the LIBSVM site."""

from __future__ import annotations

import bz2
import hashlib
from pathlib import Path

import pytest

from svmlab import data
from svmlab.data.parsed_cache import PARSED
from svmlab.data.registry import REGISTRY
from svmlab.data.verified import RECORDS
from svmlab.errors import DataError, DownloadError

pytestmark = [pytest.mark.shared_data, pytest.mark.usefixtures("isolated_data_env")]


def _files(folder: Path) -> list[Path]:
    """The files under ``folder``, without the records of what files hold and the parsed files."""
    return [
        path
        for path in folder.rglob("*")
        if path.is_file() and not {RECORDS, PARSED} & set(path.parts)
    ]


def _stand_in(folder: Path, name: str) -> Path:
    """A file with the official row count of cod-rna's ``name`` (the shared folder lacks it)."""
    n_rows = next(file.n_rows for file in REGISTRY["cod-rna"].files if file.name == name)
    path = folder / name
    path.write_text("1 1:0.5 8:1\n-1 2:0.25\n" * (n_rows // 2) + "1 1:1\n" * (n_rows % 2))
    return path


def test_download_into_an_empty_cache_then_use_the_cache(libsvm_site, shared_libsvm, tmp_path):
    cache = tmp_path / "cache"
    paths = data.fetch("heart_scale", cache_dir=cache, base_url=libsvm_site.url)
    assert paths == [cache / "heart_scale" / "heart_scale"]
    assert paths[0].read_bytes() == (shared_libsvm / "heart_scale" / "heart_scale").read_bytes()
    assert _files(cache) == paths  # no temporary file left
    assert libsvm_site.requests["heart_scale"] == 1
    assert data.fetch("heart_scale", cache_dir=cache, base_url=libsvm_site.url) == paths
    dataset = data.load("heart_scale", cache_dir=cache)
    assert libsvm_site.requests["heart_scale"] == 1
    assert dataset.source == str(paths[0])
    assert dataset.digest == REGISTRY["heart_scale"].file("train").sha256


def test_load_downloads_train_and_test_files_from_the_url_in_the_environment(
    libsvm_site, tmp_path, monkeypatch
):
    monkeypatch.setenv("SVMLAB_LIBSVM_URL", libsvm_site.url)
    cache = tmp_path / "cache"
    dataset = data.load("a1a", cache_dir=cache)
    assert (dataset.n_train, dataset.n_test) == (1605, 30956)
    assert sorted(_files(cache)) == [cache / "a1a" / "a1a", cache / "a1a" / "a1a.t"]
    assert libsvm_site.requests == {"a1a": 1, "a1a.t": 1}


def test_a_compressed_file_is_verified_on_its_uncompressed_content(libsvm_site, tmp_path):
    cache = tmp_path / "cache"
    paths = data.fetch("ijcnn1", cache_dir=cache, base_url=libsvm_site.url)
    assert [path.name for path in paths] == ["ijcnn1.bz2", "ijcnn1.t.bz2"]
    content = bz2.decompress(paths[1].read_bytes())
    assert hashlib.sha256(content).hexdigest() == REGISTRY["ijcnn1"].file("test").sha256


def test_a_corrupted_download_fails_its_checksum_and_leaves_nothing(
    libsvm_site, shared_libsvm, tmp_path
):
    corrupted = tmp_path / "served" / "heart_scale"
    corrupted.parent.mkdir()
    content = bytearray((shared_libsvm / "heart_scale" / "heart_scale").read_bytes())
    content[100] ^= 0x01  # one bit flipped
    corrupted.write_bytes(bytes(content))
    libsvm_site.files["heart_scale"] = corrupted
    cache = tmp_path / "cache"
    with pytest.raises(DownloadError) as error:
        data.fetch("heart_scale", cache_dir=cache, base_url=libsvm_site.url)
    message = str(error.value)
    assert (
        f"heart_scale downloaded from {libsvm_site.url}/heart_scale differs from the "
        f"official file: expected sha256"
    ) in message
    assert REGISTRY["heart_scale"].file("train").sha256 in message
    assert hashlib.sha256(bytes(content)).hexdigest() in message
    assert _files(cache) == []


def test_a_corrupted_compressed_download_leaves_nothing(libsvm_site, shared_libsvm, tmp_path):
    corrupted = tmp_path / "served" / "ijcnn1.t.bz2"
    corrupted.parent.mkdir()
    content = bytearray((shared_libsvm / "ijcnn1" / "ijcnn1.t.bz2").read_bytes())
    content[len(content) // 2] ^= 0xFF
    corrupted.write_bytes(bytes(content))
    libsvm_site.files["ijcnn1.t.bz2"] = corrupted
    cache = tmp_path / "cache"
    with pytest.raises(DownloadError, match=r"cannot be read|differs from the official file"):
        data.fetch("ijcnn1", cache_dir=cache, base_url=libsvm_site.url)
    assert _files(cache) == [cache / "ijcnn1" / "ijcnn1.bz2"]  # the train file was fine


def test_http_404_names_the_url_and_the_folder_for_a_copy_by_hand(
    libsvm_site, tmp_path, monkeypatch
):
    monkeypatch.setenv("SVMLAB_LIBSVM_URL", libsvm_site.url)
    cache = tmp_path / "cache"
    for fetch_or_load in (data.fetch, data.load):
        with pytest.raises(DownloadError) as error:
            fetch_or_load("a4a", cache_dir=cache)
        message = str(error.value)
        assert f"download of {libsvm_site.url}/a4a failed: HTTP 404" in message
        assert f"put a4a (compressed or not) into {cache / 'a4a'}" in message
        assert "SVMLAB_DATA_DIR" in message
    assert _files(cache) == []


def test_a_refused_connection_says_first_where_the_file_was_looked_for(refused_url, tmp_path):
    """In one line that starts with the missing file and the folders it is not in, and leaves
    no folder behind (the cache did not exist before)."""
    cache = tmp_path / "cache"
    with pytest.raises(DownloadError) as error:
        data.fetch("heart_scale", cache_dir=cache, base_url=refused_url)
    message = str(error.value)
    assert "\n" not in message
    assert message.startswith(
        f"heart_scale is not in the cache {cache / 'heart_scale'} and no "
        f"data folder is set (SVMLAB_DATA_DIR"
    )
    assert f"download of {refused_url}/heart_scale failed" in message
    assert "refused" in message.lower()
    assert not cache.exists()


def test_a_data_folder_that_is_set_is_not_advised_but_named(refused_url, tmp_path, monkeypatch):
    folder = tmp_path / "data"
    folder.mkdir()
    monkeypatch.setenv("SVMLAB_DATA_DIR", str(folder))
    with pytest.raises(DownloadError) as error:
        data.fetch("heart_scale", cache_dir=tmp_path / "cache", base_url=refused_url)
    message = str(error.value)
    assert message.startswith(
        f"heart_scale is neither in the data folder {folder} (SVMLAB_DATA_DIR) nor in the cache"
    )
    assert "set SVMLAB_DATA_DIR" not in message
    assert f"put heart_scale (compressed or not) into {folder / 'heart_scale'}/" in message


def test_a_data_folder_that_does_not_exist_is_refused_before_any_download(libsvm_site, tmp_path):
    cache = tmp_path / "cache"
    with pytest.raises(DataError) as error:
        data.fetch(
            "heart_scale",
            data_dir=tmp_path / "nosuchdir",
            cache_dir=cache,
            base_url=libsvm_site.url,
        )
    assert str(error.value).startswith(
        f"the data folder {tmp_path / 'nosuchdir'} (paths.data_dir or --data-dir) does not exist"
    )
    assert libsvm_site.requests == {} and not cache.exists()


def test_a_response_cut_short_leaves_nothing(libsvm_site, tmp_path):
    libsvm_site.cut_short.add("a1a")  # a1a has a known hash, a2a does not: both must fail
    libsvm_site.cut_short.add("a2a")
    cache = tmp_path / "cache"
    for name in ("a1a", "a2a"):
        with pytest.raises(
            DownloadError,
            match=f"download of {libsvm_site.url}/{name} was cut short: [0-9]+ of [0-9]+ bytes",
        ):
            data.fetch(name, cache_dir=cache, base_url=libsvm_site.url)
    assert _files(cache) == []


def test_local_copies_are_not_downloaded(libsvm_site, shared_libsvm, tmp_path):
    paths = data.fetch(
        "a1a", data_dir=shared_libsvm, cache_dir=tmp_path / "cache", base_url=libsvm_site.url
    )
    assert paths == [shared_libsvm / "a1a" / "a1a", shared_libsvm / "a1a" / "a1a.t"]
    assert not libsvm_site.requests


def test_fetch_gets_every_official_file_including_the_extra_one(libsvm_site, tmp_path):
    served = tmp_path / "served"
    served.mkdir()
    for name in ("cod-rna.t", "cod-rna.r"):
        libsvm_site.files[name] = _stand_in(served, name)
    cache = tmp_path / "cache"
    paths = data.fetch("cod-rna", cache_dir=cache, base_url=libsvm_site.url)
    assert [path.name for path in paths] == ["cod-rna", "cod-rna.t", "cod-rna.r"]
    assert libsvm_site.requests == {"cod-rna": 1, "cod-rna.t": 1, "cod-rna.r": 1}


def test_load_does_not_download_the_extra_files(libsvm_site, tmp_path, monkeypatch):
    served = tmp_path / "served"
    served.mkdir()
    libsvm_site.files["cod-rna.t"] = _stand_in(served, "cod-rna.t")
    monkeypatch.setenv("SVMLAB_LIBSVM_URL", libsvm_site.url)
    dataset = data.load("cod-rna", cache_dir=tmp_path / "cache")
    assert (dataset.n_train, dataset.n_test) == (59535, 271617)
    assert libsvm_site.requests == {"cod-rna": 1, "cod-rna.t": 1}


def test_fetch_refuses_datasets_without_files():
    for name in ("breast_cancer", "synthetic_tall"):
        with pytest.raises(DataError, match="has no files to fetch"):
            data.fetch(name)
