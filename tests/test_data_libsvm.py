"""LIBSVM datasets: reading the files, labels, the CSR layout, where copies are found, splits."""

from __future__ import annotations

import bz2
import csv
import hashlib
import shutil
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_svmlight_file
from sklearn.svm import LinearSVC

from svmlab import data
from svmlab.data.libsvm_format import measure_content, read_libsvm_file
from svmlab.data.registry import REGISTRY
from svmlab.errors import DataError

pytestmark = pytest.mark.usefixtures("isolated_data_env")

SMALL_FILES = [
    "a1a/a1a",
    "australian/australian",
    "breast-cancer/breast-cancer",
    "heart/heart",
    "fourclass/fourclass",
    "mushrooms/mushrooms",
    "svmguide1/svmguide1",
    "phishing/phishing",
    "madelon/madelon.bz2",
    "colon-cancer/colon-cancer",
]


def _manifest(shared: Path) -> list[dict]:
    with (shared / "MANIFEST.tsv").open(newline="") as handle:
        return list(csv.DictReader(handle, delimiter="\t"))


def _check_manifest_file(shared: Path, row: dict) -> None:
    entry = REGISTRY[row["name"]]
    part = read_libsvm_file(shared / row["file"], entry.n_features)
    assert part.X.shape == (int(row["rows"]), int(row["features"]))
    labels = tuple(int(v) for v in row["label values"].split(","))
    assert tuple(np.unique(part.y)) == labels
    content = measure_content(shared / row["file"])
    assert content.n_rows == int(row["rows"])
    if not row["file"].endswith(".bz2"):  # MANIFEST hashes the bytes as stored
        assert content.sha256 == row["sha256"]


# -- every shared file -----------------------------------------------------------------------


@pytest.mark.shared_data
@pytest.mark.parametrize("file", SMALL_FILES)
def test_small_shared_files_match_the_manifest(shared_libsvm, file):
    row = next(row for row in _manifest(shared_libsvm) if row["file"] == file)
    _check_manifest_file(shared_libsvm, row)


@pytest.mark.slow
@pytest.mark.shared_data
def test_every_shared_file_matches_the_manifest(shared_libsvm):
    for row in _manifest(shared_libsvm):
        _check_manifest_file(shared_libsvm, row)


@pytest.mark.slow
@pytest.mark.shared_data
def test_every_complete_shared_dataset_loads_with_the_manifest_labels(shared_libsvm):
    manifest = _manifest(shared_libsvm)
    for name in dict.fromkeys(row["name"] for row in manifest):
        if "missing" in REGISTRY[name].info(shared_libsvm).location:
            continue  # w8a.t and madelon.t are not in the shared folder
        dataset = data.load(name, data_dir=shared_libsvm)
        labels = next(row["label values"] for row in manifest if row["name"] == name)
        assert dataset.classes == tuple(int(v) for v in labels.split(","))
        assert set(np.unique(dataset.y_train)) == {-1.0, 1.0}


# -- what load returns -----------------------------------------------------------------------


@pytest.mark.shared_data
@pytest.mark.parametrize(
    "name, classes",
    [("svmguide1", (0, 1)), ("mushrooms", (1, 2)), ("breast-cancer", (2, 4)), ("a1a", (-1, 1))],
)
def test_labels_map_the_smaller_value_to_minus_one(shared_libsvm, name, classes):
    dataset = data.load(name, data_dir=shared_libsvm)
    assert dataset.classes == classes
    train_file = shared_libsvm / name / name
    _, y_raw = load_svmlight_file(str(train_file))
    if REGISTRY[name].file("test") is not None:  # rows in file order
        assert np.array_equal(dataset.y_train, np.where(y_raw == classes[1], 1.0, -1.0))
    for y in (dataset.y_train, dataset.y_test):
        assert y.dtype == np.float64 and set(np.unique(y)) == {-1.0, 1.0}


@pytest.mark.shared_data
@pytest.mark.parametrize("name", ["a1a", "australian", "svmguide1"])
def test_features_are_csr_float64_with_int32_indices_and_liblinear_accepts_them(
    shared_libsvm, name
):
    dataset = data.load(name, data_dir=shared_libsvm)
    for X in (dataset.X_train, dataset.X_test):
        assert isinstance(X, sp.csr_matrix)
        assert X.dtype == np.float64
        assert X.indices.dtype == np.int32 and X.indptr.dtype == np.int32
        assert X.has_sorted_indices
    assert dataset.X_train.shape[1] == dataset.X_test.shape[1] == REGISTRY[name].n_features
    model = LinearSVC().fit(dataset.X_train, dataset.y_train)
    assert model.score(dataset.X_test, dataset.y_test) > 0.7


@pytest.mark.shared_data
def test_train_and_test_have_the_catalogue_width_even_when_the_last_features_are_unused(
    shared_libsvm,
):
    dataset = data.load("a1a", data_dir=shared_libsvm)  # a1a uses indices up to 119 of 123
    assert dataset.X_train.shape == (1605, 123) and dataset.X_test.shape == (30956, 123)
    assert (dataset.n_train, dataset.n_test, dataset.n_features) == (1605, 30956, 123)


@pytest.mark.shared_data
def test_digest_is_the_sha256_of_the_uncompressed_train_then_test_bytes(shared_libsvm, tmp_path):
    a1a = data.load("a1a", data_dir=shared_libsvm)
    both = (shared_libsvm / "a1a/a1a").read_bytes() + (shared_libsvm / "a1a/a1a.t").read_bytes()
    assert a1a.digest == hashlib.sha256(both).hexdigest()
    heart = data.load("heart_scale", data_dir=shared_libsvm)
    assert heart.digest == REGISTRY["heart_scale"].file("train").sha256
    assert heart.source == str(shared_libsvm / "heart_scale" / "heart_scale")
    compressed = tmp_path / "heart_scale.bz2"  # flat layout, other compression: same digest
    compressed.write_bytes(bz2.compress((shared_libsvm / "heart_scale/heart_scale").read_bytes()))
    again = data.load("heart_scale", data_dir=tmp_path)
    assert again.source == str(compressed)
    assert again.digest == heart.digest
    assert (again.X_train != heart.X_train).nnz == 0


@pytest.mark.shared_data
def test_split_is_seeded_and_stratified(shared_libsvm):
    first = data.load("australian", seed=3, data_dir=shared_libsvm)
    again = data.load("australian", seed=3, data_dir=shared_libsvm)
    other = data.load("australian", seed=4, data_dir=shared_libsvm)
    assert np.array_equal(first.y_train, again.y_train)
    assert (first.X_train != again.X_train).nnz == 0
    assert not np.array_equal(first.y_train, other.y_train)
    assert first.digest == other.digest  # the digest identifies the file, not the split
    assert (first.n_train, first.n_test) == (517, 173)
    positives = 307  # of 690
    assert abs(np.sum(first.y_test > 0) - positives * 173 / 690) <= 1
    assert abs(np.sum(first.y_train > 0) - positives * 517 / 690) <= 1
    half = data.load("australian", seed=3, test_fraction=0.5, data_dir=shared_libsvm)
    assert (half.n_train, half.n_test) == (345, 345)
    assert half.params == {"test_fraction": 0.5, "max_abs_scale": False, "verify": True}


@pytest.mark.shared_data
def test_a_test_fraction_splits_the_training_file_and_leaves_the_official_test_file(
    shared_libsvm, tmp_path
):
    (tmp_path / "a1a").mkdir()  # the training file alone, as w8a and cod-rna are here
    shutil.copy(shared_libsvm / "a1a" / "a1a", tmp_path / "a1a" / "a1a")
    split = data.load("a1a", seed=3, test_fraction=0.5, data_dir=tmp_path)
    assert (len(split.y_train), len(split.y_test)) == (802, 803)  # of a1a's 1605 rows
    assert split.source == str(tmp_path / "a1a" / "a1a")
    official = data.load("a1a", data_dir=shared_libsvm)
    assert (len(official.y_train), len(official.y_test)) == (1605, 30956)
    assert official.params["test_fraction"] is None


@pytest.mark.shared_data
def test_max_abs_scale_keeps_sparsity_and_uses_training_statistics(shared_libsvm):
    raw = data.load("german.numer", data_dir=shared_libsvm)
    scaled = data.load("german.numer", data_dir=shared_libsvm, max_abs_scale=True)
    assert scaled.X_train.nnz == raw.X_train.nnz and scaled.X_test.nnz == raw.X_test.nnz
    train_max = abs(scaled.X_train).max(axis=0).toarray().ravel()
    assert np.allclose(train_max[train_max > 0], 1.0)
    factor = abs(raw.X_train).max(axis=0).toarray().ravel()
    assert np.allclose(scaled.X_test.toarray() * factor, raw.X_test.toarray())
    assert scaled.X_train.indices.dtype == np.int32


# -- where copies are found ------------------------------------------------------------------


def _copy(shared: Path, dataset: str, folder: Path, *, flat: bool = False) -> Path:
    target = folder if flat else folder / dataset
    target.mkdir(parents=True, exist_ok=True)
    for file in (shared / dataset).iterdir():
        shutil.copy(file, target / file.name)
    return target


def _changed_heart(folder: Path, shared: Path) -> None:
    """A heart copy with one more sample: distinguishable from the shared one."""
    (folder / "heart").mkdir(parents=True)
    text = (shared / "heart" / "heart").read_text()
    (folder / "heart" / "heart").write_text(text.rstrip("\n") + "\n-1 1:1\n")


@pytest.mark.shared_data
def test_local_folder_takes_precedence_over_the_cache(shared_libsvm, tmp_path):
    cache = tmp_path / "cache"
    _changed_heart(cache, shared_libsvm)
    local = data.load("heart", data_dir=shared_libsvm, cache_dir=cache)
    assert local.n_train + local.n_test == 270
    assert local.source == str(shared_libsvm / "heart" / "heart")
    cached = data.load("heart", data_dir=tmp_path / "empty", cache_dir=cache, verify=False)
    assert cached.n_train + cached.n_test == 271
    assert cached.source == str(cache / "heart" / "heart")


@pytest.mark.shared_data
def test_environment_variables_name_the_folders(shared_libsvm, tmp_path, monkeypatch):
    monkeypatch.setenv("SVMLAB_DATA_DIR", str(shared_libsvm))
    assert data.load("fourclass").source == str(shared_libsvm / "fourclass" / "fourclass")
    cache = tmp_path / "env-cache"
    _copy(shared_libsvm, "diabetes", cache)
    monkeypatch.setenv("SVMLAB_DATA_DIR", str(tmp_path / "nothing-here"))
    monkeypatch.setenv("SVMLAB_CACHE_DIR", str(cache))
    assert data.load("diabetes").source == str(cache / "diabetes" / "diabetes")
    flat = _copy(shared_libsvm, "heart_scale", tmp_path / "flat", flat=True)
    assert data.load("heart_scale", data_dir=flat).source == str(flat / "heart_scale")


@pytest.mark.shared_data
def test_list_datasets_reports_locations_and_the_sizes_load_gives(shared_libsvm):
    infos = {info.name: info for info in data.list_datasets(shared_libsvm)}
    assert len(infos) == len(REGISTRY)
    assert infos["a1a"].location == f"local: {shared_libsvm / 'a1a'}"
    assert infos["a4a"].location == "not downloaded"
    assert infos["w8a"].location == f"missing w8a.t; local: {shared_libsvm / 'w8a'}"
    for name in ("australian", "a1a"):
        dataset = data.load(name, data_dir=shared_libsvm)
        info = infos[name]
        assert (info.n_train, info.n_test, info.n_features) == (
            dataset.n_train,
            dataset.n_test,
            dataset.n_features,
        )


# -- files svmlab must refuse ----------------------------------------------------------------

GOOD = "+1 1:0.5 2:1\n-1 1:-0.5\n+1 2:0.25\n-1 1:-1 2:-1\n"
CORRUPT_THIRD_LINE = [
    ("+1 1:0.5 2:abc", "the value in '2:abc' is not a finite number"),
    ("+1 1:0.5 2", "'2' is not of the form <index>:<value>"),
    ("+1 0:0.5", "the index in '0:0.5' is not a positive integer"),
    ("+1 -2:0.5", "the index in '-2:0.5' is not a positive integer"),
    ("+1 1.5:0.5", "the index in '1.5:0.5' is not a positive integer"),
    ("yes 1:0.5", "the label 'yes' is not a finite number"),
    ("1:1 2:1", "the label '1:1' is not a finite number"),
    ("+1 2:1 1:1", "the index in '1:1' does not come after the previous index 2"),
    ("+1 1:1 1:2", "the index in '1:2' does not come after the previous index 1"),
    ("+1 1:1 3:1", "the index in '3:1' is larger than the dataset's 2 features"),
    ("+1 1:nan", "the value in '1:nan' is not a finite number"),
    ("+1 1:inf 2:1", "the value in '1:inf' is not a finite number"),
    ("nan 1:1", "the label 'nan' is not a finite number"),
]


def _write_fourclass(folder: Path, text: str) -> Path:
    """A file in the place of fourclass_scale (2 features, no test file); not the official
    file, so it is loaded with verify=False."""
    path = folder / "fourclass_scale" / "fourclass_scale"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.mark.parametrize("line, problem", CORRUPT_THIRD_LINE)
def test_malformed_line_is_reported_with_file_line_number_and_text(tmp_path, line, problem):
    lines = GOOD.splitlines()
    path = _write_fourclass(tmp_path, "\n".join([*lines[:2], line, *lines[2:]]) + "\n")
    with pytest.raises(DataError) as error:
        data.load("fourclass_scale", data_dir=tmp_path, verify=False)
    message = str(error.value)
    assert message.startswith(f"{path}, line 3: {problem}: {line!r}")
    assert "expected lines of the form '<label> <index>:<value>" in message


def test_indices_start_at_one_and_a_zero_index_is_refused(tmp_path):
    _write_fourclass(tmp_path, "+1 1:5\n-1 2:7\n" * 4)
    dataset = data.load("fourclass_scale", data_dir=tmp_path, test_fraction=0.5, verify=False)
    for X, y in ((dataset.X_train, dataset.y_train), (dataset.X_test, dataset.y_test)):
        assert np.array_equal(X.toarray(), np.where(y[:, None] > 0, [5.0, 0.0], [0.0, 7.0]))
    path = _write_fourclass(tmp_path, "+1 0:5\n-1 1:7\n" * 4)  # a valid zero-based file
    with pytest.raises(DataError, match=f"{path}, line 1: the index in '0:5' is not a positive"):
        data.load("fourclass_scale", data_dir=tmp_path, verify=False)


def test_comments_blank_lines_and_qid_are_accepted(tmp_path):
    text = "# a comment\n\n+1 qid:1 1:0.5 2:1  # trailing\n-1 1:-0.5\n+1 2:1\n-1 1:-1\n" * 4
    _write_fourclass(tmp_path, text)
    dataset = data.load("fourclass_scale", data_dir=tmp_path, test_fraction=0.5, verify=False)
    assert dataset.n_train + dataset.n_test == 16


def test_long_offending_lines_are_shortened(tmp_path):
    line = "+1 " + " ".join(f"{i}:1" for i in range(1, 60)) + " x"
    path = _write_fourclass(tmp_path, line + "\n")
    with pytest.raises(DataError) as error:
        read_libsvm_file(path, None)
    assert f"{path}, line 1: 'x' is not of the form" in str(error.value)
    assert "...'" in str(error.value) and line not in str(error.value)


def test_a_corrupt_compressed_file_is_a_data_error(tmp_path):
    path = tmp_path / "fourclass_scale" / "fourclass_scale.bz2"
    path.parent.mkdir()
    path.write_bytes(b"BZh9 this is not bzip2 data")
    with pytest.raises(DataError, match=f"cannot read {path}"):
        data.load("fourclass_scale", data_dir=tmp_path)


@pytest.mark.parametrize(
    "text, message",
    [
        (GOOD.replace("-1 1:-1 2:-1", "+3 1:-1 2:-1"), r"3 label values \(-1, 1, 3\)"),
        (GOOD.replace("-1", "+1"), r"only one label value \(1\)"),
        ("", "contains no samples"),
        ("# only a comment\n", "contains no samples"),
    ],
)
def test_bad_label_sets_and_empty_files_are_refused(tmp_path, text, message):
    path = _write_fourclass(tmp_path, text)
    with pytest.raises(DataError, match=message) as error:
        data.load("fourclass_scale", data_dir=tmp_path, verify=False)
    assert str(path) in str(error.value)


def test_without_a_catalogue_width_train_and_test_get_the_widest_file(tmp_path):
    assert REGISTRY["svmguide3"].n_features is None
    folder = tmp_path / "svmguide3"
    folder.mkdir()
    (folder / "svmguide3").write_text("+1 1:1\n-1 2:1\n")
    (folder / "svmguide3.t").write_text("+1 3:1\n-1 1:1\n")
    dataset = data.load("svmguide3", data_dir=tmp_path, verify=False)
    assert dataset.X_train.shape == (2, 3) and dataset.X_test.shape == (2, 3)
    assert dataset.X_test[0, 2] == 1.0


def test_test_labels_must_be_among_the_training_labels(tmp_path):
    folder = tmp_path / "splice"
    folder.mkdir()
    (folder / "splice").write_text(GOOD)
    (folder / "splice.t").write_text("+1 1:1\n+2 2:1\n")
    with pytest.raises(DataError, match=r"test file .*splice\.t has label values \[2\]"):
        data.load("splice", data_dir=tmp_path, verify=False)
    (folder / "splice.t").write_text("+1 1:1\n+1 2:1\n")  # one class in a test file is fine
    assert data.load("splice", data_dir=tmp_path, verify=False).n_test == 2


def test_a_class_too_small_to_split_is_refused(tmp_path):
    _write_fourclass(tmp_path, "+1 1:1\n" + "-1 1:2\n" * 9)
    with pytest.raises(DataError, match="cannot split"):
        data.load("fourclass_scale", data_dir=tmp_path, verify=False)
