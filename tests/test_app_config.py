"""Every config composes, and every bad config fails before training with a helpful message."""

import re
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_module
from omegaconf import OmegaConf

from support.runs import runs, train
from svmlab import solvers
from svmlab.app import cli
from svmlab.app.config.schema import build_estimator, check_typed_parts, register_configs
from svmlab.errors import ConfigError
from svmlab.estimator import kernel_names

CONF = Path(__import__("svmlab.conf").conf.__file__).parent
# the registered solvers and their presets (conf/solver/*.yaml)
SOLVERS = sorted([*solvers.registered(), *(p.stem for p in (CONF / "solver").glob("*.yaml"))])
KERNELS = sorted(p.stem for p in (CONF / "kernel").glob("*.yaml"))
DATASETS = ["breast_cancer", "a9a", "ijcnn1", "mushrooms", "synthetic_tall", "synthetic_wide"]

register_configs()


def composed(*overrides):
    with initialize_config_module("svmlab.conf", version_base="1.3"):
        return compose("config", overrides=list(overrides))


def test_config_groups_have_options():
    assert {"liblinear", "libsvm"} <= set(SOLVERS)


def test_one_kernel_list():
    """The kernel group, the compiled kernels and the estimators follow the list in `estimator.kernel_names`."""
    from svmlab.numerics.kernels import KERNEL_KINDS

    assert KERNELS == sorted(kernel_names.KERNELS) == sorted(KERNEL_KINDS)


def representative_compositions() -> list[tuple[str, str, str]]:
    """Every solver with every kernel, each pair with one dataset, so that every dataset meets
    every kernel and a third of the solvers. The groups set only their own keys
    (`test_the_solver_kernel_and_dataset_groups_set_only_their_own_keys`), and building the
    estimator reads the solver, the kernel and the seed only: what a composition yields for
    the solver and the kernel does not depend on the dataset, nor the dataset node on them, so
    these cover the whole cross product of the three groups."""
    return [
        (solver, kernel, DATASETS[(i + j) % len(DATASETS)])
        for i, solver in enumerate(SOLVERS)
        for j, kernel in enumerate(KERNELS)
    ]


def test_the_solver_kernel_and_dataset_groups_set_only_their_own_keys():
    """No file of these groups moves itself to another package (Hydra's ``@package``) or
    refers to another key (an interpolation), but for the settings a paper does not report
    (``${oc.select:unreported.<key>,<default>}``), which no other group sets."""
    for group in ("solver", "kernel", "dataset"):
        for path in (CONF / group).glob("*.yaml"):
            text = re.sub(r"\$\{oc\.select:unreported\.\w+,[^}]+\}", "", path.read_text())
            assert "@package" not in text and "${" not in text, path


@pytest.mark.parametrize("solver, kernel, dataset", representative_compositions())
def test_every_solver_kernel_dataset_composes(solver, kernel, dataset):
    cfg = composed(f"solver={solver}", f"kernel={kernel}", f"dataset={dataset}")
    check_typed_parts(cfg)
    assert cfg.dataset.name == dataset and cfg.kernel.name == kernel
    if kernel in build_estimator_kernels(cfg):
        estimator = build_estimator(cfg)
        assert estimator.get_params().get("kernel", "linear") == kernel
    else:
        with pytest.raises(ConfigError, match="cannot use kernel"):
            build_estimator(cfg)


def build_estimator_kernels(cfg):
    from svmlab.app.config.schema import solver_class

    return solver_class(cfg).supported_kernels


def test_seed_reaches_estimators_that_take_one():
    estimator = build_estimator(composed("solver=liblinear", "seed=7"))
    assert estimator.random_state == 7


@pytest.mark.parametrize(
    "overrides, message",
    [
        (["kernel.gamma=-1"], "kernel.gamma must be a positive number or one of"),
        (["kernel.gamma=fast"], "'scale', 'auto'"),
        (["kernel=poly", "kernel.degree=0"], "kernel.degree must be an integer >= 1"),
        (["seed=-1"], "seed must be an integer from 0 to"),
        (["seed=4294967296"], r"seed must be an integer from 0 to 2\*\*32 - 1"),
        (["tracking.stale_after_s=0"], "tracking.stale_after_s must be a positive number"),
    ],
)
def test_invalid_typed_values(overrides, message):
    with pytest.raises(ConfigError, match=message):
        check_typed_parts(composed(*overrides))


@pytest.mark.parametrize(
    "overrides, message",
    [
        (["solver=libsvm", "solver.C=-1"], "'C' parameter of Libsvm must be"),
        (["solver=libsvm", "solver.C=0"], "'C' parameter of Libsvm must be"),
        (["solver=liblinear", "solver.loss=hing"], "'loss' parameter of Liblinear must be"),
        (["solver=liblinear", "kernel=rbf"], "cannot use kernel 'rbf'; it supports: linear"),
    ],
)
def test_invalid_solver_values(overrides, message):
    with pytest.raises(ConfigError, match=message):
        build_estimator(composed(*overrides))


def test_unknown_solver_key_in_a_yaml_is_named_with_the_allowed_ones():
    cfg = composed("solver=libsvm")
    OmegaConf.set_struct(cfg, False)
    cfg.solver.CC = 1.0
    with pytest.raises(
        ConfigError, match=r"unknown key solver.CC .* allowed: C, .*Did you mean 'C'"
    ):
        build_estimator(cfg)


@pytest.mark.parametrize(
    "overrides, message",
    [
        (["solver=libsvn"], "unknown solver 'libsvn'; "),
        (["kernel=gaussian"], "unknown kernel 'gaussian'; allowed: linear, poly, rbf."),
        (["dataset=a10a"], "unknown dataset 'a10a'; "),
        (["sed=1"], "unknown key 'sed'; allowed: seed, "),
        (["solver=libsvm", "solver.CC=1"], "unknown key in solver: 'CC'; allowed: C, tol, "),
        (["solver=fw", "solver.CC=1"], "unknown key in solver: 'CC'; allowed: C, stop, eps, "),
        (
            ["kernel.gama=1"],
            "unknown key in kernel: 'gama'; allowed: name, gamma, degree, coef0. "
            "Did you mean 'gamma'?",
        ),
        (["seed=abc"], "seed=abc: Value 'abc' of type 'str' could not be converted to Integer"),
        (["solver=libsvm", "solver.C=-1"], "'C' parameter of Libsvm must be a float in the range"),
        (["solver=liblinear", "kernel=rbf"], "cannot use kernel 'rbf'"),
        (["kernel=rbf", "kernel.gamma=0"], "kernel.gamma must be a positive number"),
        (["dataset.test_fraction=1.5"], "test_fraction"),
    ],
)
def test_bad_config_on_the_command_line_fails_before_any_run(tmp_path, capsys, overrides, message):
    """One line, status 2, no run and no job folder."""
    store = tmp_path / "mlflow.db"
    with pytest.raises(SystemExit) as exit_info:
        train(store, *overrides)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err
    assert runs(store) == [] if store.exists() else True
    assert not (tmp_path / "outputs").exists()


@pytest.mark.parametrize(
    "override, suggestion",
    [
        ("sed=1", "'seed'"),
        ("sedd=1", "'seed'"),
        ("trackin.uri=x", "'tracking'"),
        ("tracking.experimnt=x", "'experiment'"),
        ("kernal=rbf", "'kernel'"),
        ("solvr=libsvm", "'solver'"),
        ("dataset=a9b", "'a9a'"),
        ("solver=libsvn", "'libsvm'"),
        ("solver.CC=1", "'C'"),
        ("dataset=breast_cancr", "'breast_cancer'"),
        ("kernel=rfb", "'rbf'"),
    ],
)
def test_a_misspelt_name_gets_one_line_with_a_suggestion(tmp_path, capsys, override, suggestion):
    with pytest.raises(SystemExit) as exit_info:
        train(tmp_path / "mlflow.db", override)
    assert exit_info.value.code == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("svmlab: error: ")
    if suggestion:
        assert f"Did you mean {suggestion}" in line


def test_train_help_names_groups_sweeps_presets_and_outputs(capsys):
    with pytest.raises(SystemExit):
        cli.main(["train", "--help"])
    out = capsys.readouterr().out
    for text in (
        "solver: ",
        "kernel: linear, poly, rbf",
        "-m",
        "+experiment=NAME",
        "hydra/launcher=joblib",
        "sqlite:///mlflow.db",
        "multirun/",
        "paths.data_dir",
    ):
        assert text in out


def test_top_level_help_imports_no_subcommand_module():
    """`svmlab --help` and `svmlab datasets ...` import only what they need (start-up time)."""
    code = (
        "import sys, contextlib, io\n"
        "from svmlab.app import cli\n"
        "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
        "    cli.main(['--help'])\n"
        "print(sorted(m for m in ('sklearn', 'mlflow', 'numba', 'hydra', 'matplotlib',\n"
        "                         'svmlab.data', 'svmlab.analysis') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_unknown_group_option_lists_the_available_ones(tmp_path, capsys):
    with pytest.raises(SystemExit):
        train(tmp_path / "mlflow.db", "kernel=gaussian")
    assert "allowed: linear, poly, rbf" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # more than MANY_OPTIONS: the command that lists them
        train(tmp_path / "mlflow.db", "solver=libsvn")
    err = capsys.readouterr().err
    assert "`svmlab train --help` names them" in err and "Did you mean 'libsvm'?" in err


def test_the_solver_options_are_read_from_the_source_with_inherited_defaults(tmp_path, monkeypatch):
    """A subclass declaring a name takes its base class's ``__init__`` (the conformance suite
    compares the reading of svmlab's own solvers with the imported classes)."""
    from svmlab.app.config import options

    family = tmp_path / "svmlab" / "solvers" / "mine"
    family.mkdir(parents=True)
    monkeypatch.setattr(options, "SOURCE", family.parent)
    (family / "estimator.py").write_text(
        "class Mine(Base):\n    name = 'mine'\n\n"
        "    def __init__(self, C=1.0, *, kernel='rbf', tol=1e-3):\n        pass\n\n\n"
        "class Yours(Mine):\n    name = 'yours'\n"
    )
    (family / "__init__.py").write_text("from svmlab.solvers.mine.estimator import Mine\n")
    assert options.source_nodes() == (
        {
            "mine": {"_target_": "svmlab.solvers.mine.Mine", "C": 1.0, "tol": 1e-3},
            "yours": {"_target_": "svmlab.solvers.mine.estimator.Yours", "C": 1.0, "tol": 1e-3},
        },
        [],
    )


def test_a_solver_the_source_reading_cannot_follow_is_left_out_in_one_line(tmp_path, monkeypatch):
    """A default that is not a literal costs that solver its option, named with its file, and
    no other; a class of the same name in another family does not stand in for a solver's
    base class."""
    from svmlab.app.config import options

    solvers = tmp_path / "svmlab" / "solvers"
    for family in ("mine", "other"):
        (solvers / family).mkdir(parents=True)
        (solvers / family / "__init__.py").write_text("")
    monkeypatch.setattr(options, "SOURCE", solvers)
    (solvers / "mine" / "estimator.py").write_text(
        "TOL = 1e-3\n\n\nclass Base:\n    def __init__(self, C=1.0):\n        pass\n\n\n"
        "class Mine(Base):\n    name = 'mine'\n\n\n"
        "class Bad(Base):\n    name = 'bad'\n\n    def __init__(self, tol=TOL):\n        pass\n"
    )
    (solvers / "other" / "estimator.py").write_text(
        "class Base:\n    def __init__(self, C=99.0, other=True):\n        pass\n"
    )
    nodes, problems = options.source_nodes()
    assert nodes == {"mine": {"_target_": "svmlab.solvers.mine.estimator.Mine", "C": 1.0}}
    (problem,) = problems
    assert problem.startswith(f"solver 'bad' ({solvers / 'mine' / 'estimator.py'}) is left out")
    assert "Bad.__init__: the defaults of a solver are literals" in problem
