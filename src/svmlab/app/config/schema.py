"""Typed configuration schema and the checks that run before any training.

Hydra composes ``conf/``; the schema registered here makes the fixed parts of the tree typed and
closed (a misspelt key or a wrong type fails at composition). The open parts, the solver and the
dataset, are checked against their own definitions: the solver's ``__init__`` signature and
scikit-learn parameter constraints, and the dataset registry.
"""

from __future__ import annotations

import inspect
import sys
from dataclasses import dataclass, field
from importlib.resources import files
from numbers import Real
from typing import Any

from hydra.core.config_store import ConfigStore
from hydra.utils import get_class, instantiate
from omegaconf import DictConfig, OmegaConf

from svmlab.app.config import options
from svmlab.app.config.solver_constraints import refusal
from svmlab.errors import ConfigError, did_you_mean
from svmlab.estimator.kernel_names import GAMMA_RULES, KERNELS


@dataclass
class KernelConfig:
    """The kernel group: name and the parameters of rbf/poly kernels."""

    name: str = "linear"
    gamma: Any = "scale"
    degree: int = 3
    coef0: float = 0.0

    def __post_init__(self) -> None:
        if self.name not in KERNELS:
            raise ConfigError(_unknown("kernel", self.name, KERNELS))
        gamma_ok = self.gamma in GAMMA_RULES or (
            isinstance(self.gamma, Real) and not isinstance(self.gamma, bool) and self.gamma > 0
        )
        if not gamma_ok:
            raise ConfigError(
                f"kernel.gamma must be a positive number or one of {list(GAMMA_RULES)} "
                f"(auto = 1/n_features, scale = 1/(n_features * Var(X)), avg_sq_dist = 1/(2 s2) "
                f"for rbf and 1/s2 for poly, s2 the mean squared distance between training "
                f"points); got {self.gamma!r}"
            )
        if self.degree < 1:
            raise ConfigError(f"kernel.degree must be an integer >= 1; got {self.degree}")


@dataclass
class PathsConfig:
    data_dir: str | None = None
    cache_dir: str | None = None


MAX_SEED = 2**32 - 1  # numpy's and scikit-learn's random_state take no more


@dataclass
class TrackingConfig:
    uri: str | None = None
    experiment: str = "svmlab"
    run_name: str | None = None
    log_model: bool = True
    log_figure: bool = False
    stale_after_s: float = 600.0
    new_folder: bool = False  # create the folder of a new SQLite store (else: a typo, refused)
    wait_s: float = 180.0  # how long a store that is briefly away is waited for

    def __post_init__(self) -> None:
        if not self.experiment:
            raise ConfigError("tracking.experiment must be a non-empty experiment name")
        if not self.wait_s >= 0:
            raise ConfigError(
                f"tracking.wait_s must be a number of seconds >= 0; got {self.wait_s}"
            )
        if not self.stale_after_s > 0:
            raise ConfigError(
                f"tracking.stale_after_s must be a positive number of seconds; "
                f"got {self.stale_after_s}"
            )


@dataclass
class SvmlabConfig:
    """Root schema. ``solver`` and ``dataset`` stay open: their keys belong to their group file;
    so does ``unreported``, the settings a paper does not report (``conf/unreported``), which
    solver presets read by interpolation so that a sweep varies them as a grid."""

    seed: int = 0
    paths: PathsConfig = field(default_factory=PathsConfig)
    tracking: TrackingConfig = field(default_factory=TrackingConfig)
    kernel: KernelConfig = field(default_factory=KernelConfig)
    solver: Any = None
    dataset: Any = None
    unreported: Any = None


def register_configs() -> None:
    """Register ``svmlab_schema`` (the defaults list of ``conf/config.yaml`` names it) and the
    generated options of two groups: ``solver=<name>`` for every declared solver
    (`svmlab.app.config.options`), and ``dataset=<name>`` for every dataset of the data registry, its
    node the name and the default parameters. The YAML files of these groups (the presets of
    ``conf/solver``, a user's own ``dataset/<name>.yaml`` on Hydra's search path) are options
    beside them."""
    from svmlab.data.registry import REGISTRY

    store = ConfigStore.instance()
    store.store(name="svmlab_schema", node=SvmlabConfig)
    nodes, problems = options.source_nodes()
    for problem in problems:  # one solver's mistake must not stop every run
        print(f"svmlab: warning: {problem}", file=sys.stderr)
    for name, node in (nodes | options.imported_nodes()).items():
        store.store(group="solver", name=name, node=node)
    for name, entry in REGISTRY.items():
        store.store(
            group="dataset",
            name=name,
            node={"name": name} | {param.name: param.default for param in entry.params},
        )


def _unknown(what: str, value: Any, allowed) -> str:
    return (
        f"unknown {what} {value!r}; allowed: {', '.join(map(str, allowed))}."
        f"{did_you_mean(value, allowed)}"
    )


def check_typed_parts(cfg: DictConfig) -> None:
    """Run the value checks of the typed parts (kernel, tracking, seed)."""
    for key, schema in (("kernel", KernelConfig), ("tracking", TrackingConfig)):
        schema(**OmegaConf.to_container(cfg[key], resolve=True))
    if not 0 <= cfg.seed <= MAX_SEED:
        raise ConfigError(
            f"seed must be an integer from 0 to 2**32 - 1 = {MAX_SEED}; got {cfg.seed}"
        )


def check_dataset(cfg: DictConfig, choice: str | None) -> None:
    """The dataset group holds a dataset (a choice such as ``../solver/libsvm`` reaches out
    of it and composes another group's file)."""
    if not isinstance(cfg.dataset, DictConfig) or "name" not in cfg.dataset:
        raise ConfigError(
            f"dataset={choice} is not a dataset of the dataset group; "
            f"`svmlab datasets list` names them"
        )


def solver_class(cfg: DictConfig) -> type:
    """The estimator class named by ``solver._target_``, checked to be an svmlab solver."""
    from svmlab.estimator.base import SVMClassifier

    target = cfg.solver.get("_target_") if isinstance(cfg.solver, DictConfig) else None
    if not target:
        raise ConfigError("the solver config has no _target_ naming its estimator class")
    try:
        cls = get_class(target)
    except Exception as exc:  # hydra wraps import errors of every kind
        raise ConfigError(f"solver._target_ {target!r} cannot be imported: {exc}") from exc
    if not (isinstance(cls, type) and issubclass(cls, SVMClassifier)):
        raise ConfigError(
            f"solver._target_ {target!r} is not a svmlab.estimator.base.SVMClassifier"
        )
    return cls


def build_estimator(cfg: DictConfig):
    """Instantiate the configured solver with the kernel and seed, and validate its parameters.

    Raises ConfigError for unknown solver keys, a kernel the solver cannot use, or a value
    outside the solver's parameter constraints, before any data is loaded.
    """
    if isinstance(cfg.solver, DictConfig):  # a value out of range: refused before the import
        values = OmegaConf.to_container(cfg.solver, resolve=True)
        refused = refusal(str(values.pop("_target_", None)), values)
        if refused:
            raise ConfigError(f"invalid solver parameter: {refused}")
    cls = solver_class(cfg)
    allowed = [p for p in inspect.signature(cls.__init__).parameters if p != "self"]
    solver_params = {
        k: v for k, v in OmegaConf.to_container(cfg.solver, resolve=True).items() if k != "_target_"
    }
    for key in solver_params:
        if key not in allowed:
            raise ConfigError(_unknown(f"key solver.{key} for {cls.__name__}", key, allowed))
    kernel = OmegaConf.to_container(cfg.kernel, resolve=True)
    if kernel["name"] not in cls.supported_kernels:
        raise ConfigError(
            f"solver {cls.__name__} cannot use kernel {kernel['name']!r}; "
            f"it supports: {', '.join(cls.supported_kernels)}"
        )
    extra = {"random_state": cfg.seed} if "random_state" in allowed else {}
    if "kernel" in allowed:
        extra |= {"kernel": kernel["name"]} | {
            k: kernel[k] for k in ("gamma", "degree", "coef0") if k in allowed
        }
    estimator = instantiate(cfg.solver, _convert_="all", **extra)
    try:
        estimator._validate_params()
    except ValueError as exc:
        raise ConfigError(f"invalid solver parameter: {exc}") from exc
    return estimator


def checked_estimator(cfg: DictConfig, dataset_choice: str | None):
    """Every check of a run's composed config, before anything is created: the typed parts,
    the dataset node and its parameters, the solver's keys and values (`build_estimator`);
    the estimator. A single run and each job of a sweep (`svmlab.app.launch.preflight`) go
    through it."""
    check_typed_parts(cfg)  # config errors first, before the slow imports of the training path
    check_dataset(cfg, dataset_choice)
    estimator = build_estimator(cfg)
    from svmlab import data

    data.validate(**OmegaConf.to_container(cfg.dataset, resolve=True))
    return estimator


def unknown_key_hints(args: list[str]) -> list[str]:
    """For each ``a.b=value`` or ``key=value`` override whose key the composed config lacks:
    what is allowed there, and the close matches.

    Hydra rejects such an override with "Key 'b' is not in struct"; this says which keys the
    chosen solver, dataset or kernel (or the top level) takes. The group choices among ``args``
    are applied first.
    """
    from hydra import compose, initialize_config_module
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.override_parser.overrides_parser import OverridesParser

    try:
        overrides = OverridesParser.create().parse_overrides(
            [a for a in args if "=" in a and not a.startswith("-")]
        )
        groups = {p.name for p in files("svmlab.conf").iterdir() if p.is_dir()} | {
            key for key, node in ConfigStore.instance().repo.items() if isinstance(node, dict)
        }
        choices = [
            o.input_line
            for o in overrides
            if not o.is_sweep_override() and (o.key_or_group in groups or "/" in o.key_or_group)
        ]
        if GlobalHydra.instance().is_initialized():  # Hydra's own: its search path, kept
            cfg = compose("config", overrides=choices)
        else:
            with initialize_config_module("svmlab.conf", version_base="1.3"):
                cfg = compose("config", overrides=choices)
    except Exception:  # the choices themselves are wrong: Hydra's own message says so
        return []
    hints = []
    for override in overrides:
        path = override.key_or_group.split(".")
        if override.is_add() or override.is_delete() or path[0] == "hydra" or "/" in path[0]:
            continue
        node = cfg
        for depth, leaf in enumerate(path):  # noqa: B007 (read after the loop: where it stopped)
            if not isinstance(node, DictConfig) or leaf not in node:
                break
            node = node[leaf]
        else:
            continue
        if isinstance(node, DictConfig):
            parent = ".".join(path[:depth])
            keys = [k for k in node if not str(k).startswith("_")]
            hints.append(
                _unknown(f"key in {parent}:", leaf, keys)
                if parent
                else _unknown("key", leaf, keys) + f" (+{leaf}=... adds a new key)"
            )
    return hints


MANY_OPTIONS = 30  # a group with more options is not listed in full in one line
OPTION_LISTS = {"dataset": "svmlab datasets list"}


def composition_error_line(exc: Exception, args: list[str]) -> str | None:
    """One line for an error Hydra raised while composing the config from ``args``: an unknown
    group option or key (with the close matches), a value of the wrong type, an override that
    does not parse. None for any other error."""
    from hydra.errors import HydraException, MissingConfigException
    from omegaconf.errors import OmegaConfBaseException

    if isinstance(exc, MissingConfigException) and exc.missing_cfg_file and exc.options:
        head, out_of_group, tail = exc.missing_cfg_file.partition("/../")  # dataset=../solver/x
        group, name = (head, f"../{tail}") if out_of_group else exc.missing_cfg_file.rsplit("/", 1)
        return _unknown_option(group, name, exc.options)
    if not isinstance(exc, HydraException | OmegaConfBaseException):
        return None
    hints = unknown_key_hints(args)
    if hints:
        return "; ".join(hints)
    cause = exc.__cause__ if isinstance(exc.__cause__, OmegaConfBaseException) else None
    first = (str(cause or exc).strip().splitlines() or [type(exc).__name__])[0]
    merging = str(exc).split("Error merging override ", 1)
    return f"{merging[1].splitlines()[0]}: {first}" if cause and len(merging) == 2 else first


def _unknown_option(group: str, name: str, options: list[str]) -> str:
    """``unknown solver 'libsvn'`` with the close matches; all options when they are few."""
    if len(options) <= MANY_OPTIONS:
        return _unknown(group, name, options)
    listing = OPTION_LISTS.get(group, "svmlab train --help")
    return (
        f"unknown {group} {name!r}; {len(options)} options, `{listing}` names them."
        f"{did_you_mean(name, options)}"
    )
