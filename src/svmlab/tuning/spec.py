"""What a study is: its typed spec, the config a trial's values give (composed by the caller),
and the values a search space holds."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from optuna.distributions import BaseDistribution, CategoricalDistribution, IntDistribution

from svmlab.errors import ConfigError

#: what a trial can be scored by, and the direction of the search
METRICS = {
    "accuracy": "maximize",
    "balanced_accuracy": "maximize",
    "roc_auc": "maximize",
    "fit_time_s": "minimize",
}
SAMPLERS = ("tpe", "grid", "random")
PRUNERS = ("median", "hyperband", "successive_halving", "none")
STORAGE_SCHEMES = ("sqlite:", "postgresql", "mysql")
#: the parameter a warm-started grid follows, in increasing order
PATH_KEY = "solver.C"


@dataclass(frozen=True)
class StudySpec:
    """A study: its search space (parameter: Optuna distribution), its name, over the solver
    config of ``fixed`` (its fixed overrides), how a trial is scored (``cv`` folds, or one
    stratified hold-out of ``validation`` of the training set; ``metric``), its budget
    (``trials`` finished trials), how values are drawn and trials pruned, where it is kept
    (``storage``, an RDB URL), this machine's worker processes (``jobs``), a grid in increasing
    PATH_KEY with each fit starting from the previous one (``warm_start``), and whether the
    best config is refitted on the whole training set."""

    space: dict[str, BaseDistribution]
    name: str = ""  # none: the caller names it by its solver, dataset and kernel
    fixed: tuple[str, ...] = ()
    metric: str = "accuracy"
    cv: int = 5
    validation: float | None = None
    trials: int = 20
    sampler: str = "tpe"
    pruner: str = "median"
    storage: str = "sqlite:///optuna.db"
    jobs: int = 1
    warm_start: bool = False
    refit: bool = True
    worker_index: int = 0  # this worker's place among the study's processes

    @property
    def direction(self) -> str:
        return METRICS[self.metric]

    def check(self) -> None:
        """ConfigError naming the first setting that cannot run."""
        if self.metric not in METRICS:
            raise ConfigError(f"unknown metric {self.metric!r}; a trial logs: {', '.join(METRICS)}")
        if self.trials < 1 or self.jobs < 1:
            raise ConfigError("--trials and --jobs must be at least 1")
        if self.cv < 2:
            raise ConfigError(f"--cv must be at least 2 folds; got {self.cv}")
        if self.validation is not None and not 0 < self.validation < 1:
            raise ConfigError(
                f"--validation must be a fraction between 0 and 1; got {self.validation}"
            )
        if not self.storage.startswith(STORAGE_SCHEMES):
            raise ConfigError(
                f"--storage must be an RDB URL (sqlite:///optuna.db, "
                f"postgresql://user@host/db); got {self.storage!r}"
            )
        if not self.space:
            raise ConfigError(
                "no search range given: add e.g. 'solver.C=tag(log, "
                "interval(2^-5, 2^15))', or a preset whose hydra.sweeper.params "
                "holds the ranges"
            )
        if self.sampler == "grid":
            grid(self.space)
        if self.warm_start and (
            self.sampler != "grid" or self.jobs != 1 or PATH_KEY not in self.space
        ):
            raise ConfigError(
                f"--warm-start follows the grid of {PATH_KEY} in increasing order "
                f"in one process: it needs --sampler grid, --jobs 1 and {PATH_KEY} "
                f"in the search space (got --sampler {self.sampler}, --jobs "
                f"{self.jobs}, {', '.join(self.space)})"
            )


class Configured(NamedTuple):
    """A trial's config, composed by the caller: the resolved config as a nested dict, the
    unfitted estimator, the solver's name (its config group's option) and the overrides that
    give it (what ``svmlab train`` trains it with)."""

    tree: dict
    estimator: Any
    solver: str
    overrides: list[str]


#: the caller's composition: a trial's values -> its config
Configure = Callable[[dict], Configured]


def grid(space: dict[str, BaseDistribution]) -> dict[str, list]:
    """Every value of each distribution, for Optuna's GridSampler (finite spaces only)."""
    values = {}
    for key, dist in space.items():
        if isinstance(dist, CategoricalDistribution):
            values[key] = list(dist.choices)
        elif dist.step is not None and not dist.log:
            n = round((dist.high - dist.low) / dist.step) + 1
            values[key] = [type(dist.low)(dist.low + i * dist.step) for i in range(n)]
        else:
            raise ConfigError(
                f"--sampler grid needs a finite space: give {key} as choice(...) "
                f"or range(...), not interval(...)"
            )
    return values


def suggest(trial, key: str, dist: BaseDistribution):
    """The trial's value of ``key``, sampled from ``dist``."""
    if isinstance(dist, CategoricalDistribution):
        return trial.suggest_categorical(key, dist.choices)
    if isinstance(dist, IntDistribution):
        return trial.suggest_int(key, dist.low, dist.high, step=dist.step, log=dist.log)
    return trial.suggest_float(key, dist.low, dist.high, step=dist.step, log=dist.log)
