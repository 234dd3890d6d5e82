"""``datasets list`` and ``datasets fetch``, run through argparse as the main CLI runs them."""

from __future__ import annotations

import argparse

import pytest
from hydra import initialize_config_module
from hydra.core.global_hydra import GlobalHydra

from svmlab.app.cli import run_command
from svmlab.app.config.schema import register_configs
from svmlab.app.datasets import add_parser, presets
from svmlab.data.registry import REGISTRY

pytestmark = pytest.mark.usefixtures("isolated_data_env")


def run(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="svmlab")
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(list(argv))
    return run_command(args)


@pytest.mark.shared_data
def test_list_prints_one_row_per_dataset_with_its_location(shared_libsvm, capsys):
    assert run("datasets", "list", "--data-dir", str(shared_libsvm)) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["name", "kind", "n_train", "n_test", "features", "location"]
    assert len(lines) == 1 + len(REGISTRY) + len(presets())
    rows = {line.split()[0]: line.split() for line in lines[1:]}
    assert rows["a9a"] == [
        "a9a",
        "libsvm",
        "32561",
        "16281",
        "123",
        "local:",
        str(shared_libsvm / "a9a"),
    ]
    assert rows["breast_cancer"] == ["breast_cancer", "embedded", "426", "143", "30", "embedded"]
    assert rows["synthetic_wide"][1:] == ["synthetic", "50", "50", "2500", "generated"]
    assert rows["duke"][2:] == ["?", "?", "7129", "not", "downloaded"]
    assert rows["w8a_split"] == [
        "w8a_split",
        "libsvm",
        "?",
        "?",
        "300",
        "preset",
        "of",
        "w8a",
        "(dataset/w8a_split.yaml)",
    ]


def test_the_datasets_listed_are_the_options_of_train_and_fetch_knows_them_all(capsys):
    """One list: `datasets list` names what `svmlab train --help` offers as dataset=NAME (the
    registry and the presets of conf/dataset), and `datasets fetch` knows every one of them."""
    register_configs()
    GlobalHydra.instance().clear()
    with initialize_config_module("svmlab.conf", version_base="1.3"):
        offered = GlobalHydra.instance().config_loader().get_group_options("dataset")
    GlobalHydra.instance().clear()
    assert run("datasets", "list") == 0
    listed = [line.split()[0] for line in capsys.readouterr().out.splitlines()[1:]]
    assert sorted(listed) == sorted(offered) and len(listed) == len(set(listed))
    assert len(listed) == len(REGISTRY) + len(presets()) and presets()
    assert run("datasets", "fetch", *(n for n in listed if n not in REGISTRY)) == 2
    err = capsys.readouterr().err
    assert "unknown dataset" not in err
    assert (
        "svmlab: error: synthetic_tall_overlap is a preset of synthetic_tall: dataset "
        "'synthetic_tall' is synthetic: it has no files to fetch"
    ) in err


@pytest.mark.shared_data
def test_fetch_prints_the_paths_and_uses_the_cache_dir_and_base_url(libsvm_site, tmp_path, capsys):
    cache = tmp_path / "cache"
    status = run(
        "datasets",
        "fetch",
        "heart_scale",
        "fourclass",
        "--cache-dir",
        str(cache),
        "--base-url",
        libsvm_site.url,
    )
    assert status == 0
    assert capsys.readouterr().out.splitlines() == [
        str(cache / "heart_scale" / "heart_scale"),
        str(cache / "fourclass" / "fourclass"),
    ]


@pytest.mark.shared_data
def test_fetch_reports_each_failure_goes_on_and_exits_2(libsvm_site, tmp_path, capsys):
    status = run(
        "datasets",
        "fetch",
        "a4a",
        "heart_scale",
        "breast_cancer",
        "--cache-dir",
        str(tmp_path),
        "--base-url",
        libsvm_site.url,
    )
    assert status == 2
    captured = capsys.readouterr()
    errors = [line for line in captured.err.splitlines() if line.startswith("svmlab: error: ")]
    assert len(errors) == 2
    assert "HTTP 404" in errors[0] and "is embedded: it has no files to fetch" in errors[1]
    assert captured.out.splitlines() == [str(tmp_path / "heart_scale" / "heart_scale")]


@pytest.mark.shared_data
def test_fetch_of_a_preset_that_splits_the_training_file_fetches_that_file_alone(
    shared_libsvm, capsys
):
    assert run("datasets", "fetch", "w8a_split", "--data-dir", str(shared_libsvm)) == 0
    assert capsys.readouterr().out.splitlines() == [str(shared_libsvm / "w8a" / "w8a")]


def test_fetch_of_an_unknown_name_exits_2(capsys):
    assert run("datasets", "fetch", "a9") == 2
    assert capsys.readouterr().err.startswith("svmlab: error: unknown dataset 'a9'. Did you mean")


def test_datasets_needs_a_subcommand_and_fetch_a_name():
    for argv in (["datasets"], ["datasets", "fetch"]):
        with pytest.raises(SystemExit) as error:
            run(*argv)
        assert error.value.code == 2
