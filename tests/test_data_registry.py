"""The dataset registry: names, parameters, the LIBSVM catalogue and the Hydra dataset options."""

from __future__ import annotations

import csv
import math
import re
from pathlib import Path

import pytest
from hydra import compose, initialize_config_module
from omegaconf import OmegaConf

from svmlab import data
from svmlab.app.config.schema import register_configs
from svmlab.data.libsvm import LibsvmEntry
from svmlab.data.registry import REGISTRY, get_entry
from svmlab.errors import DataError

pytestmark = pytest.mark.usefixtures("isolated_data_env")

LIBSVM = {name: entry for name, entry in REGISTRY.items() if isinstance(entry, LibsvmEntry)}


# -- names -----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["../a9a", "a9a/../../etc", "sub/a9a", "..", "a9a\\x"])
def test_path_like_names_are_rejected(name):
    with pytest.raises(DataError, match="looks like a path"):
        data.validate(name)
    with pytest.raises(DataError, match="looks like a path"):
        data.load(name)


@pytest.mark.parametrize(
    "name, suggestion",
    [
        ("a9", "a9a"),
        ("higgs", "HIGGS"),
        ("breast-cancr", "breast-cancer"),
        ("synthetic_tal", "synthetic_tall"),
    ],
)
def test_unknown_name_suggests_close_matches(name, suggestion):
    with pytest.raises(DataError) as error:
        data.validate(name)
    message = str(error.value)
    assert f"unknown dataset {name!r}" in message
    assert repr(suggestion) in message
    assert "svmlab datasets list" in message


@pytest.mark.parametrize("name", ["", None, 3])
def test_name_must_be_a_non_empty_string(name):
    with pytest.raises(DataError, match="non-empty string"):
        data.validate(name)


# -- parameters ------------------------------------------------------------------------------


def test_unknown_parameter_names_it_suggests_and_lists_the_allowed_ones():
    with pytest.raises(DataError) as error:
        data.validate("breast_cancer", test_fractoin=0.3)
    message = str(error.value)
    assert "'test_fractoin'" in message
    assert "Did you mean 'test_fraction'?" in message
    assert "test_fraction (a number in (0, 1); default 0.25)" in message
    assert "standardize (true or false; default true)" in message


def test_parameter_lists_show_defaults_as_written_in_yaml():
    with pytest.raises(DataError) as error:
        data.validate("synthetic_tall", size=3)
    message = str(error.value)
    assert "zero_frac (a number in [0, 1]; default 0.0)" in message
    assert "n_test (an integer >= 2, or null for as many as n; default null)" in message
    assert "same_zero_set (true or false; default true)" in message


@pytest.mark.parametrize("value", [1.5, 0, 1, -0.1, math.nan, "0.3", True, None])
def test_test_fraction_out_of_range_or_of_the_wrong_type_is_rejected(value):
    with pytest.raises(DataError) as error:
        data.validate("breast_cancer", test_fraction=value)
    assert f"test_fraction={value!r} is not allowed" in str(error.value)
    assert "a number in (0, 1)" in str(error.value)


@pytest.mark.parametrize(
    "params, allowed",
    [
        ({"n": 2.5}, "an integer >= 2"),
        ({"n": True}, "an integer >= 2"),
        ({"d": 0}, "an integer >= 1"),
        ({"n_test": 1}, "or null"),
        ({"scale": 0.0}, "(0, inf)"),
        ({"zero_frac": 1.1}, "[0, 1]"),
        ({"same_zero_set": 1}, "true or false"),
    ],
)
def test_generator_parameters_are_checked(params, allowed):
    with pytest.raises(DataError, match=re.escape(allowed)):
        data.validate("synthetic_tall", **params)


def test_sparsity_one_is_rejected():
    with pytest.raises(DataError, match=re.escape("[0, 1)")):
        data.validate("synthetic_gaussian", sparsity=1.0)


def test_valid_parameters_pass_without_loading_anything(tmp_path):
    data.validate("synthetic_tall", n=100, n_test=None, zero_frac=0.5, same_zero_set=False)
    data.validate("a4a", max_abs_scale=True)  # not downloaded, and there is no network
    data.validate("australian", test_fraction=0.5)
    assert not any(tmp_path.rglob("*.*"))


def test_datasets_with_a_test_file_read_it_unless_given_a_test_fraction():
    assert get_entry("a9a").resolve({})["test_fraction"] is None
    assert get_entry("a9a").resolve({"test_fraction": 0.3})["test_fraction"] == 0.3
    with pytest.raises(DataError, match=r"test_fraction=1.5 .*or null for the official test"):
        data.validate("a9a", test_fraction=1.5)


@pytest.mark.parametrize("seed", [-1, 1.5, 2**32, True])
def test_seed_must_be_a_32_bit_non_negative_integer(seed):
    with pytest.raises(DataError, match="seed must be an integer"):
        data.load("synthetic_gaussian", seed=seed, n=10, d=2)


# -- the LIBSVM catalogue --------------------------------------------------------------------


def test_every_libsvm_dataset_has_one_training_file_and_consistent_rows():
    assert len(LIBSVM) >= 50
    for name, entry in LIBSVM.items():
        roles = [file.role for file in entry.files]
        assert roles.count("train") == 1 and roles.count("test") <= 1, name
        assert entry.n_features is None or entry.n_features > 0, name
        for file in entry.files:
            assert file.sha256 is None or re.fullmatch(r"[0-9a-f]{64}", file.sha256), file
            assert file.n_rows is None or file.n_rows > 0, file
        has_test = entry.file("test") is not None
        fraction = next(p for p in entry.params if p.name == "test_fraction")
        assert (fraction.default is None) is has_test, name  # null: the official test file


def test_the_requested_official_datasets_are_in_the_catalogue():
    expected = {
        "a4a": ["a4a", "a4a.t"],
        "w8a": ["w8a", "w8a.t"],
        "cod-rna": ["cod-rna", "cod-rna.t", "cod-rna.r"],
        "covtype.binary": ["covtype.libsvm.binary.bz2"],
        "covtype.binary_scale": ["covtype.libsvm.binary.scale.bz2"],
        "epsilon": ["epsilon_normalized.bz2", "epsilon_normalized.t.bz2"],
        "rcv1.binary": ["rcv1_train.binary.bz2", "rcv1_test.binary.bz2"],
        "gisette": ["gisette_scale.bz2", "gisette_scale.t.bz2"],
        "ijcnn1": ["ijcnn1.bz2", "ijcnn1.t.bz2"],
        "madelon": ["madelon", "madelon.t"],
        "news20.binary": ["news20.binary.bz2"],
        "real-sim": ["real-sim.bz2"],
        "leu": ["leu.bz2", "leu.t.bz2"],
        "duke": ["duke.bz2"],
        "SUSY": ["SUSY.xz"],
        "HIGGS": ["HIGGS.xz"],
        "liver-disorders": ["liver-disorders", "liver-disorders.t"],
        "svmguide3": ["svmguide3", "svmguide3.t"],
        "german.numer": ["german.numer"],
    }
    for name, files in expected.items():
        assert [file.name for file in LIBSVM[name].files] == files
    for name in ("a5a", "a6a", "a7a", "w2a", "w4a", "w6a"):
        assert name in LIBSVM


def test_copy_names_accept_the_other_compressions():
    assert LIBSVM["madelon"].file("train").copy_names()[:2] == ("madelon", "madelon.bz2")
    assert LIBSVM["ijcnn1"].file("train").copy_names()[:2] == ("ijcnn1.bz2", "ijcnn1")
    assert "HIGGS.bz2" in LIBSVM["HIGGS"].file("train").copy_names()


def _read_tsv(path: Path) -> list[dict]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle, delimiter="\t"))


def _is_verbatim(provenance: str) -> bool:
    """NOTES.tsv says the file is a byte-identical copy of the official one."""
    return provenance.startswith("verbatim") and not any(
        word in provenance for word in ("normalised", "not byte-identical")
    )


@pytest.mark.shared_data
def test_catalogue_agrees_with_the_shared_manifest(shared_libsvm):
    notes = {row["file"]: row for row in _read_tsv(shared_libsvm / "NOTES.tsv")}
    manifest = _read_tsv(shared_libsvm / "MANIFEST.tsv")
    assert len({row["name"] for row in manifest}) == 31
    for row in manifest:
        entry = LIBSVM[row["name"]]
        shared_name = Path(row["file"]).name
        file = next(f for f in entry.files if shared_name in f.copy_names())
        assert file.n_rows == int(row["rows"]), row["file"]
        assert entry.n_features == int(row["features"]), row["file"]
        note = notes[row["file"]]
        content_sha = note["uncompressed_sha256"].removeprefix("uncompressed_sha256=")
        if _is_verbatim(note["provenance/processing"]):
            assert file.sha256 == content_sha, row["file"]
        else:
            assert file.sha256 is None, row["file"]


# -- Hydra dataset options -------------------------------------------------------------------


def test_every_dataset_is_an_option_of_the_dataset_group_with_its_default_parameters():
    register_configs()
    with initialize_config_module("svmlab.conf", version_base="1.3"):
        for name, entry in REGISTRY.items():
            cfg = compose(overrides=[f"+dataset={name}"])
            content = OmegaConf.to_container(cfg.dataset)
            assert content == {
                "name": name,
                **{param.name: param.default for param in entry.params},
            }
            data.validate(**content)
        cfg = compose(overrides=["+dataset=german.numer", "dataset.test_fraction=0.5"])
        assert OmegaConf.to_container(cfg.dataset) == {
            "name": "german.numer",
            "test_fraction": 0.5,
            "max_abs_scale": False,
            "verify": True,
        }
        cfg = compose(overrides=["+dataset=synthetic_gaussian", "dataset.n=30", "dataset.d=3"])
    dataset = data.load(**cfg.dataset, seed=4)  # as the training entry point calls it
    assert (dataset.n_train, dataset.n_test, dataset.n_features) == (30, 30, 3)


def test_a_users_own_dataset_file_is_an_option(tmp_path):
    """A file ``dataset/<name>.yaml`` on Hydra's search path (the user's own conf folder) is an
    option of the group beside the registry's."""
    register_configs()
    (tmp_path / "dataset").mkdir()
    (tmp_path / "dataset" / "a9a_scaled.yaml").write_text("name: a9a\nmax_abs_scale: true\n")
    with initialize_config_module("svmlab.conf", version_base="1.3"):
        mine, registered = (
            compose(
                "config", overrides=[f"hydra.searchpath=[file://{tmp_path}]", f"dataset={name}"]
            ).dataset
            for name in ("a9a_scaled", "a9a")
        )
    assert OmegaConf.to_container(mine) == {"name": "a9a", "max_abs_scale": True}
    assert registered.max_abs_scale is False
    data.validate(**mine)
