"""``svmlab tune``: hyper-parameter search with Optuna, each trial a nested MLflow run.

    svmlab tune --trials 40 solver=libsvm kernel=rbf dataset=a1a \\
        'solver.C=tag(log, interval(2^-5, 2^15))' 'kernel.gamma=tag(log, interval(2^-15, 2^3))'

A study is an Optuna study in an RDB storage (``--storage``, SQLite by default, PostgreSQL for
workers on several machines) and one parent MLflow run (``svmlab.tracking.study``). A trial
composes the config (the fixed overrides and its sampled values), scores it by K-fold
cross-validation on the training set (or one stratified hold-out split), and records each
fold's fit on its nested run as a training run records its fit (``svmlab.recording``: config,
dataset, warm-up, trace, final metrics, certified gap), plus the fold scores. After each fold
the trial reports the mean score so far to Optuna's pruner, which may stop it (tag
``svmlab.trial_state`` = PRUNED).

Pruning inside a fit: a solver that ``traces_eval_set`` traces its accuracy on the
fold's validation rows once per epoch, off its clock; with ``--metric accuracy`` its first trace
rows are checkpoints (``fit_fold``), and the trace callback stops the fit when the pruner says
so. The reported value is that validation score, a forecast of the trial's final score that the
pruner can compare across trials at one step (the same folds, the same epochs of training). The
certified gap and the primal objective are not: the gap measures the optimisation, not the
model's accuracy (a large C converges slowly and may win), and the objective's scale changes
with C. Solvers whose rows carry no validation score are pruned at fold ends only. The
invocation that opened the study ends with the best trial's config, a refit on the whole
training set (an ordinary ``svmlab train`` run, nested too) and Optuna's plots on the parent.
The best trial has the best score; among equal scores (common on a grid), the smallest values,
in the order of the parameters (Optuna's own best trial is the first to finish, which depends
on the order the trials ran in).

Warm start (``--warm-start``, a workflow's selection): the grid is trained in increasing
``solver.C`` (for each value of the other parameters, in their grid order), and each fold's fit
starts from this process's last solution on the same fold with the same other values (its dual
point or w; a solver that is ``warm_startable``). A selection reports validation scores only:
its fits' times are of a path, tagged ``svmlab.warm_start``, and no analysis or claim reads them;
the refit stays cold. It needs ``--sampler grid`` and one worker.

``--trials N`` is the number of finished (complete or pruned) trials the study should have: a
second invocation with the same ``--study`` continues it and trains no finished trial again;
a trial whose process died (its host, pid and start time are on the trial) is marked FAIL in
Optuna and FAILED in MLflow, and its values are queued to be trained again. ``--jobs N`` starts
N - 1 more worker processes on the same storage, each with its share of the cores' BLAS and
OpenMP threads (``svmlab.app.launch.threads``); workers on other machines join by running the same
command with the same ``--storage`` and ``--study``.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import hashlib
import math
import os
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import optuna
from omegaconf import DictConfig, OmegaConf, open_dict
from optuna.trial import TrialState

from svmlab.app.launch.sweep import EXIT_STORE, EXIT_USAGE
from svmlab.app.launch.threads import limit_this_process, worker_environment
from svmlab.errors import ConfigError, SvmlabError, require_extra
from svmlab.estimator.formulations import parse_metric

#: what a trial can be scored by, and the direction of the search
METRICS = {"accuracy": "maximize", "balanced_accuracy": "maximize", "roc_auc": "maximize",
           "fit_time_s": "minimize"}
SAMPLERS = ("tpe", "grid", "random")
PRUNERS = ("median", "hyperband", "successive_halving", "none")
STORAGE_SCHEMES = ("sqlite:", "postgresql", "mysql")
RETRY_ATTR = "svmlab.retry_of"
INTERRUPTED_ATTR = "svmlab.interrupted"  # a trial stopped by Ctrl-C or SIGTERM in its process
REFIT_METRICS = ("test_accuracy", "train_accuracy", "fit_time_s")
FINISHED = (TrialState.COMPLETE, TrialState.PRUNED)  # the trials --trials counts
RUN_ATTR = "mlflow_run_id"
#: steps of one fold in a trial's intermediate values: up to CHECKPOINTS - 1 mid-fit checkpoints
#: (the first trace rows of its fit), then the fold's end
CHECKPOINTS = 8
#: the parameter a warm-started grid follows, in increasing order
PATH_KEY = "solver.C"
WARM_ATTR = "svmlab.warm_start"  # the study's user attribute: its grid order is the path's
#: the trace column that holds a metric's validation score at a checkpoint: a solver whose
#: ``traces_eval_set`` traces the accuracy on it, off its clock, once per epoch
CHECKPOINT_COLUMNS = {"accuracy": "test_accuracy"}


def add_parser(sub) -> None:
    parser = sub.add_parser(
        "tune", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
        help="hyper-parameter search with Optuna, each trial a nested MLflow run")
    parser.add_argument("--trials", type=int, default=20, metavar="N",
                        help="finished trials the study should have (default: 20)")
    parser.add_argument("--sampler", choices=SAMPLERS, default="tpe")
    folds = parser.add_mutually_exclusive_group()
    folds.add_argument("--cv", type=int, default=None, metavar="K",
                       help="K-fold cross-validation on the training set (default: 5)")
    folds.add_argument("--validation", type=float, default=None, metavar="FRACTION",
                       help="score on one stratified hold-out of this fraction instead")
    parser.add_argument("--metric", default="accuracy",
                        help=f"the score: {', '.join(METRICS)} (default: accuracy)")
    parser.add_argument("--pruner", choices=PRUNERS, default="median",
                        help="stops trials whose fold scores are hopeless (default: median)")
    parser.add_argument("--jobs", type=int, default=1, metavar="N",
                        help="worker processes on this machine, each with cores/N BLAS and "
                             "OpenMP threads unless OMP_NUM_THREADS etc. are set (default: 1)")
    parser.add_argument("--storage", default="sqlite:///optuna.db", metavar="URL",
                        help="Optuna's RDB storage (default: sqlite:///optuna.db; "
                             "postgresql://... for several machines)")
    parser.add_argument("--study", default=None, metavar="NAME",
                        help="study name (default: tune-<solver>-<dataset>-<kernel>)")
    parser.add_argument("--warm-start", action="store_true",
                        help=f"train the grid in increasing {PATH_KEY}, each fit starting from "
                             "the previous solution (needs --sampler grid and --jobs 1)")
    parser.add_argument("--no-refit", dest="refit", action="store_false",
                        help="do not refit the best config on the whole training set")
    parser.add_argument("--overrides", dest="overrides_line", default="", metavar="STRING",
                        help="overrides as one string, split like a shell would (MLproject)")
    parser.add_argument("--worker-of", default=None, help=argparse.SUPPRESS)  # parent run id
    parser.add_argument("--worker-index", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("overrides", nargs="*",
                        help="Hydra overrides: fixed values and search ranges")
    parser.set_defaults(func=run_tune)


# -- the study's setup, checked before anything is created ---------------------------------------

def compose_config(overrides: list[str]) -> tuple[DictConfig, dict, dict]:
    """(config, group choices, ``hydra.sweeper.params``) for these overrides."""
    from hydra import compose, initialize_config_module
    from hydra.core.global_hydra import GlobalHydra

    from svmlab.app.config.schema import composition_error_line, register_configs

    register_configs()
    GlobalHydra.instance().clear()
    try:
        with initialize_config_module("svmlab.conf", version_base="1.3"):
            cfg = compose("config", overrides=overrides, return_hydra_config=True)
    except Exception as exc:  # Hydra's composition error: said in one line, with close matches
        line = composition_error_line(exc, overrides) or str(exc).strip().splitlines()[0]
        raise ConfigError(line) from exc
    choices = dict(cfg.hydra.runtime.choices)
    params = dict(cfg.hydra.sweeper.get("params") or {})
    with open_dict(cfg):
        del cfg["hydra"]
    return cfg, choices, params


@dataclass
class Setup:
    """Everything a worker needs: the space, the fixed overrides, the data and the folds."""

    args: argparse.Namespace
    space: dict
    fixed: list
    cfg: DictConfig
    choices: dict
    name: str
    dataset: object = None
    folds: list = field(default_factory=list)
    parent_run_id: str | None = None
    #: under --warm-start, the last fitted estimator of each (fold, the other grid values)
    path: dict = field(default_factory=dict)

    @property
    def direction(self) -> str:
        return METRICS[self.args.metric]

    @property
    def compile_lock(self) -> Path:
        """The file lock the study's workers on this machine warm their solver up under: one
        compiles the numba code, the others load it from numba's cache."""
        digest = hashlib.sha256(self.name.encode()).hexdigest()[:16]
        return Path(tempfile.gettempdir()) / f"svmlab-study-{digest}.compile.lock"

    def trial_config(self, values: dict) -> tuple[DictConfig, dict]:
        """(config, group choices) of a trial: composed once per choice of config groups
        (``kernel=rbf``), with the other values set on a copy (composing takes a second)."""
        return trial_config(tuple(self.fixed), values)

    def trial_overrides(self, values: dict) -> list[str]:
        """The overrides with which ``svmlab train`` trains a trial's config."""
        from svmlab.app.config.search_space import as_override

        return [*self.fixed, *(as_override(k, v) for k, v in values.items())]


def trial_config(fixed: tuple, values: dict) -> tuple[DictConfig, dict]:
    from svmlab.app.config.search_space import as_override

    groups = tuple(as_override(k, v) for k, v in values.items() if "." not in k)
    cfg, choices = _composed(fixed + groups)
    cfg = cfg.copy()
    for key, value in values.items():
        if "." not in key:
            continue
        try:  # solver keys are checked against the solver's signature by build_estimator
            with open_dict(cfg) if key.startswith("solver.") else contextlib.nullcontext():
                OmegaConf.update(cfg, key, value, merge=True)
        except Exception as exc:  # a key the typed part of the tree lacks, a wrong type
            raise ConfigError(f"cannot set {key}={value!r}: "
                              f"{str(exc).splitlines()[0]}") from exc
    return cfg, choices


@functools.lru_cache(maxsize=64)
def _composed(overrides: tuple) -> tuple[DictConfig, dict]:
    cfg, choices, _ = compose_config(list(overrides))
    return cfg, choices


def prepare(args: argparse.Namespace) -> Setup:
    """Check the command line, the space, the solver's parameters at both ends of every range,
    and the data; ConfigError (or DataError) names the first problem."""
    import shlex

    from svmlab.app.config import search_space
    from svmlab.app.config.schema import checked_estimator

    args.overrides = shlex.split(args.overrides_line) + args.overrides
    args.overrides_line = ""

    if args.metric not in METRICS:
        raise ConfigError(f"unknown metric {args.metric!r}; a trial logs: {', '.join(METRICS)}")
    if args.trials < 1 or args.jobs < 1:
        raise ConfigError("--trials and --jobs must be at least 1")
    if args.cv is not None and args.cv < 2:
        raise ConfigError(f"--cv must be at least 2 folds; got {args.cv}")
    if args.validation is not None and not 0 < args.validation < 1:
        raise ConfigError(f"--validation must be a fraction between 0 and 1; got {args.validation}")
    if not args.storage.startswith(STORAGE_SCHEMES):
        raise ConfigError(f"--storage must be an RDB URL (sqlite:///optuna.db, "
                          f"postgresql://user@host/db); got {args.storage!r}")
    space, fixed = search_space.parse(args.overrides)
    _, _, preset_params = compose_config(fixed)
    space = search_space.from_params(preset_params) | space  # the command line wins
    if not space:
        raise ConfigError("no search range given: add e.g. 'solver.C=tag(log, interval(2^-5, "
                          "2^15))', or a preset whose hydra.sweeper.params holds the ranges")
    if args.sampler == "grid":
        search_space.grid(space)
    if args.warm_start and (args.sampler != "grid" or args.jobs != 1 or PATH_KEY not in space):
        raise ConfigError(f"--warm-start follows the grid of {PATH_KEY} in increasing order in "
                          f"one process: it needs --sampler grid, --jobs 1 and {PATH_KEY} in the "
                          f"search space (got --sampler {args.sampler}, --jobs {args.jobs}, "
                          f"{', '.join(space)})")
    setup = None
    for corner in search_space.endpoints(space):
        cfg, choices = trial_config(tuple(fixed), corner)
        estimator = checked_estimator(cfg, choices.get("dataset"))
        if args.warm_start and not estimator.warm_startable:
            raise ConfigError(f"--warm-start: solver {choices.get('solver')} cannot start from "
                              "another fit's solution; drop --warm-start")
        if setup is None:
            name = args.study or (f"tune-{choices.get('solver')}-{cfg.dataset.name}-"
                                  f"{cfg.kernel.name}")
            setup = Setup(args, space, fixed, cfg, choices, name)
    return setup


def load_folds(setup: Setup) -> None:
    """Load the dataset and split its training set into the study's folds (seeded, so every
    worker scores on the same folds)."""
    from sklearn.model_selection import StratifiedKFold, StratifiedShuffleSplit

    from svmlab import data

    cfg = setup.cfg
    params = OmegaConf.to_container(cfg.dataset, resolve=True)
    data.validate(**params)
    setup.dataset = data.load(**params, seed=cfg.seed, data_dir=cfg.paths.data_dir,
                              cache_dir=cfg.paths.cache_dir)
    y = setup.dataset.y_train
    if setup.args.validation is not None:
        splitter = StratifiedShuffleSplit(1, test_size=setup.args.validation,
                                          random_state=cfg.seed)
    else:
        splitter = StratifiedKFold(setup.args.cv or 5, shuffle=True, random_state=cfg.seed)
    try:
        setup.folds = list(splitter.split(setup.dataset.X_train, y))
    except ValueError as exc:  # too few samples of a class for the folds
        raise ConfigError(f"cannot split {cfg.dataset.name}'s training set: {exc}") from exc


# -- one trial ------------------------------------------------------------------------------------

def fold_score(metric: str, estimator, X, y) -> float:
    """The validation score of a fitted estimator on one fold."""
    from sklearn import metrics

    if metric == "fit_time_s":
        return float(estimator.fit_time_s_)
    if metric == "roc_auc":
        return float(metrics.roc_auc_score(y, estimator.decision_function(X)))
    scorer = metrics.balanced_accuracy_score if metric == "balanced_accuracy" else \
        metrics.accuracy_score
    return float(scorer(y, estimator.predict(X)))


class FitPruned(Exception):
    """Raised from a fit's trace callback: the pruner stopped the trial at a checkpoint."""


def fit_fold(setup: Setup, trial, recording, estimator, k: int
             ) -> tuple[object, dict, list, int | None]:
    """Fit fold k on the trial's run (``Recording``: the warm-up, the fit and what it logs,
    as in a training run, the fold's validation rows as its test set): (the fitted estimator,
    or None when pruned mid-fit; its metrics; the (step, value) reports of its checkpoints;
    the iteration it was pruned at, or None).

    Where the solver traces the validation score (it ``traces_eval_set`` and the metric
    has a column in ``CHECKPOINT_COLUMNS``), the fit's first ``CHECKPOINTS - 1`` trace rows are
    checkpoints: each reports its score at step ``k * CHECKPOINTS + row`` and the fit stops when
    the pruner says so.
    """
    import dataclasses

    import numpy as np
    from sklearn.base import clone

    data, (train, valid) = setup.dataset, setup.folds[k]
    fold_data = dataclasses.replace(data, X_train=data.X_train[train], y_train=data.y_train[train],
                                    X_test=data.X_train[valid], y_test=data.y_train[valid])
    column = CHECKPOINT_COLUMNS.get(setup.args.metric)
    path = (k, *((key, v) for key, v in trial.params.items() if key != PATH_KEY))
    fold = clone(estimator)
    traced = column is not None and fold.traces_eval_set
    rows, reports = [], []

    def checkpoint(row: dict) -> None:
        rows.append(row)
        if len(rows) < CHECKPOINTS:
            step = k * CHECKPOINTS + len(rows) - 1
            reports.append((step, row[column]))
            trial.report(row[column], step)
            if trial.should_prune():
                raise FitPruned(row["iteration"])

    try:
        compile_s = recording.fit(fold, fold_data.X_train, fold_data.y_train,
                                  (fold_data.X_test, fold_data.y_test) if traced else None,
                                  checkpoint if traced else None, setup.compile_lock,
                                  start=setup.path.get(path) if setup.args.warm_start else None)
    except FitPruned as stop:  # the rows so far are the fold's trace
        recording.log_trace({name: np.array([row[name] for row in rows]) for name in rows[0]},
                            fold=k)
        return None, {}, reports, stop.args[0]
    if setup.args.warm_start:
        setup.path[path] = fold
    return fold, recording.log_fit(fold, fold_data, compile_s, fold=k), reports, None


def run_trial(setup: Setup, trial) -> float:
    """Score the trial's config fold by fold on its nested run; raises TrialPruned when the
    pruner stops it, mid-fit at a checkpoint or after a fold."""
    import numpy as np

    from svmlab.app.config.schema import build_estimator
    from svmlab.app.config.search_space import suggest
    from svmlab.app.train import RunContext, config_record
    from svmlab.lifecycle import this_process
    from svmlab.recording.run import open_run
    from svmlab.tracking.sweeps import ROLE_TAG
    from svmlab.vocabulary import (
        PRUNED_AT_TAG,
        PRUNED_FOLD_TAG,
        PRUNED_ITERATION_TAG,
        STUDY_TAG,
        TRIAL_STATE_TAG,
        TRIAL_TAG,
    )

    start = time.perf_counter()
    for key, value in this_process().items():  # who runs it: see recover()
        trial.set_user_attr(key, value)
    values = {key: suggest(trial, key, dist) for key, dist in setup.space.items()}
    cfg, choices = setup.trial_config(values)
    estimator = build_estimator(cfg)
    metric, data = setup.args.metric, setup.dataset
    context = RunContext(choices=choices, overrides=setup.trial_overrides(values),
                         parent_run_id=setup.parent_run_id)
    record = config_record(cfg, context, estimator)
    record["tags"] |= {ROLE_TAG: "trial", STUDY_TAG: setup.name, TRIAL_TAG: trial.number}
    scores, pruned = [], {}
    tracking = cfg.tracking
    with open_run(tracking.uri, tracking.experiment, f"{setup.name}-trial{trial.number}",
                  setup.parent_run_id, tracking.wait_s) as recording:
        trial.set_user_attr(RUN_ATTR, recording.run_id)
        recording.log_config(**record)
        recording.log_dataset(data)
        gaps = {}
        for k, (_, valid) in enumerate(setup.folds):
            fold, metrics, reports, iteration = fit_fold(setup, trial, recording, estimator, k)
            for step, value in reports:
                recording.tracker.log_metrics({f"checkpoint_{metric}": value}, step=step)
            if fold is None:
                pruned = {PRUNED_AT_TAG: reports[-1][0], PRUNED_FOLD_TAG: k,
                          PRUNED_ITERATION_TAG: iteration}
                break
            scores.append(fold_score(metric, fold, data.X_train[valid], data.y_train[valid]))
            for name, value in metrics.items():
                if (parsed := parse_metric(name)) and parsed.kind == "rel_gap":
                    gaps.setdefault(name, []).append(value)
            recording.tracker.log_metrics({f"cv_{metric}": scores[-1]}, step=k)
            step = (k + 1) * CHECKPOINTS - 1  # the fold's end: after its checkpoints
            trial.report(float(np.mean(scores)), step)
            if k < len(setup.folds) - 1 and trial.should_prune():
                pruned = {PRUNED_AT_TAG: step, PRUNED_FOLD_TAG: k}
                break
        recording.tracker.set_tags(pruned | {TRIAL_STATE_TAG: "PRUNED" if pruned else "COMPLETE"})
        score = float(np.mean(scores)) if scores else float("nan")
        if scores:
            recording.tracker.log_metrics(
                {f"cv_{metric}_mean": score, f"cv_{metric}_std": float(np.std(scores)),
                 "n_folds": len(scores)} | {f"max_{n}": max(v) for n, v in gaps.items()},
                step=len(scores) - 1)
    shown = "  ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                      for k, v in values.items())
    where = (f"in fold {pruned[PRUNED_FOLD_TAG] + 1} at iteration {pruned[PRUNED_ITERATION_TAG]}"
             if PRUNED_ITERATION_TAG in pruned else f"after fold {len(scores)}")
    state = f"PRUNED {where}" if pruned else "COMPLETE"
    scored = f"cv_{metric}={score:.4f}" if scores else f"checkpoint_{metric}={reports[-1][1]:.4f}"
    if pruned and scores:  # an intermediate score: say on how many folds
        scored += f" on {len(scores)} of {len(setup.folds)} folds"
    print(f"trial {trial.number} {state}: {scored}  {shown}  "
          f"({time.perf_counter() - start:.1f} s)", flush=True)
    if pruned:
        raise optuna.TrialPruned(f"pruned {where}")
    return score


# -- the study --------------------------------------------------------------------------------

class RetryingGridSampler(optuna.samplers.GridSampler):
    """Optuna's GridSampler, which also ends a queued retry (a trial with fixed values and no
    grid id) of a point whose first trial died: the grid counts that point as visited by the
    failed trial, and the retry trains it. With a ``path`` key, the grid is in increasing
    values of it, for each value of the others in their grid order (Optuna's first trials take
    the grid's points in order), instead of shuffled."""

    def __init__(self, search_space: dict, seed: int, path: str | None = None):
        super().__init__(search_space, seed)
        if path is not None:
            names = self._param_names
            rank = [{repr(v): i for i, v in enumerate(self._search_space[n])} for n in names]
            self._all_grids.sort(key=lambda point: (
                [rank[i][repr(v)] for i, v in enumerate(point) if names[i] != path],
                point[names.index(path)]))

    def after_trial(self, study, trial, state, values) -> None:
        if "grid_id" in study._storage.get_trial_system_attrs(trial._trial_id):
            super().after_trial(study, trial, state, values)
        elif not self._get_unvisited_grid_ids(study):
            study.stop()


def open_study(setup: Setup):
    """The Optuna study (created or loaded) on its RDB storage, with sampler and pruner.

    The sampler's seed is the config's seed plus the number of trials the study holds and this
    worker's index: a later invocation or another worker does not draw the same values again
    (the grid sampler's is the config's seed alone: its grid's order must be the same in every
    process).
    """
    import sqlalchemy

    from svmlab.app.config.search_space import grid
    from svmlab.tracking.store import again_if_duplicate

    url = storage_url(setup.args.storage)
    engine = {"connect_args": {"timeout": 60}} if url.startswith("sqlite:") else {}
    with warnings.catch_warnings():  # Optuna calls its trial heartbeat experimental
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        storage = again_if_duplicate(  # workers opening a new database at once
            lambda: optuna.storages.RDBStorage(
                url, engine_kwargs=engine, heartbeat_interval=60,
                grace_period=int(setup.cfg.tracking.stale_after_s)),
            errors=(sqlalchemy.exc.IntegrityError, sqlalchemy.exc.ProgrammingError))
    n_steps = len(setup.folds) * CHECKPOINTS
    pruner = {"median": lambda: optuna.pruners.MedianPruner(n_startup_trials=3),
              "hyperband": lambda: optuna.pruners.HyperbandPruner(1, n_steps),
              "successive_halving": lambda: optuna.pruners.SuccessiveHalvingPruner(),
              "none": lambda: optuna.pruners.NopPruner()}
    study = optuna.create_study(storage=storage, study_name=setup.name, load_if_exists=True,
                                direction=setup.direction, pruner=pruner[setup.args.pruner]())
    if study.direction.name.lower() != setup.direction:
        raise ConfigError(f"study {setup.name} exists with direction {study.direction.name}; "
                          f"--metric {setup.args.metric} needs {setup.direction}")
    check_same_space(study, setup.space)
    check_same_order(study, setup.args.warm_start)
    seed = setup.cfg.seed + 1000 * len(study.trials) + setup.args.worker_index
    study.sampler = {"tpe": lambda: optuna.samplers.TPESampler(seed=seed),
                     "random": lambda: optuna.samplers.RandomSampler(seed=seed),
                     # grid ids index the shuffled grid: one order in every worker and invocation
                     "grid": lambda: RetryingGridSampler(
                         grid(setup.space), setup.cfg.seed,
                         PATH_KEY if setup.args.warm_start else None),
                     }[setup.args.sampler]()
    return study


def check_same_order(study, warm_start: bool) -> None:
    """A study keeps its grid's order: a warm-started grid's (the path's), or the shuffled one
    (its trials' grid ids index that order)."""
    if not study.trials:
        study.set_user_attr(WARM_ATTR, warm_start)
    elif study.user_attrs.get(WARM_ATTR, False) != warm_start:
        had = "with" if study.user_attrs.get(WARM_ATTR, False) else "without"
        raise ConfigError(f"study {study.study_name} was started {had} --warm-start; continue "
                          f"it the same way, or give another --study")


def check_same_space(study, space: dict) -> None:
    """A study's parameters keep their kind of distribution (and a categorical its choices)."""
    from optuna.distributions import check_distribution_compatibility

    for trial in study.get_trials(deepcopy=False)[-1:]:
        for key, old in trial.distributions.items():
            try:
                if key in space:
                    check_distribution_compatibility(old, space[key])
            except ValueError as exc:
                raise ConfigError(f"study {study.study_name} searched {key} over {old}; it "
                                  f"cannot change to {space[key]} ({exc}): give another --study"
                                  ) from exc


def storage_url(url: str) -> str:
    """The URL SQLAlchemy should open: ``postgresql://`` through psycopg (version 3, the
    driver svmlab[server] installs) where psycopg2, SQLAlchemy's default, is absent."""
    import importlib.util

    from svmlab.tracking.store import POSTGRES_DRIVERS

    if url.startswith("postgresql"):
        require_extra(POSTGRES_DRIVERS, "server", "a PostgreSQL study storage")
    if url.startswith("postgresql://") and importlib.util.find_spec("psycopg2") is None:
        return "postgresql+psycopg://" + url[len("postgresql://"):]
    return url


def recover(study, uri: str | None) -> None:
    """Trials left RUNNING by a process that is gone (on this host, or a SLURM job that SLURM
    says has ended): FAIL in Optuna, FAILED in MLflow, and their values queued to be trained
    again; one line each. A trial interrupted in its process (FAIL in Optuna, KILLED in MLflow)
    has its values queued again once, so that a grid sampler, which counts it as visited, still
    trains its point."""
    from svmlab.lifecycle import why_dead
    from svmlab.tracking.study import fail_run

    retried = {t.user_attrs.get(RETRY_ATTR) for t in study.get_trials(deepcopy=False)}
    for trial in study.get_trials(deepcopy=False, states=(TrialState.FAIL,)):
        if trial.user_attrs.get(INTERRUPTED_ATTR) and trial.params and trial.number not in retried:
            study.enqueue_trial(trial.params, user_attrs={RETRY_ATTR: trial.number})
            print(f"svmlab: trial {trial.number} was interrupted: its values are queued again",
                  file=sys.stderr, flush=True)
    for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        started = trial.datetime_start.timestamp() if trial.datetime_start else time.time()
        why = why_dead(trial.user_attrs, started, stale_after_s=math.inf, now=time.time())
        if why:
            study.tell(trial.number, state=TrialState.FAIL, skip_if_finished=True)
            study.enqueue_trial(trial.params, user_attrs={RETRY_ATTR: trial.number})
            print(f"svmlab: trial {trial.number} was left RUNNING ({why}): marked FAIL, its "
                  f"values queued again", file=sys.stderr, flush=True)
    for trial in study.get_trials(deepcopy=False, states=(TrialState.FAIL,)):
        run_id = trial.user_attrs.get(RUN_ATTR)
        if run_id:
            fail_run(uri, run_id, f"trial {trial.number} failed in Optuna (its process is gone)")


def finished(study) -> int:
    return len(study.get_trials(deepcopy=False, states=FINISHED))


def optimize(setup: Setup, study) -> None:
    """Run trials in this process until the study has ``--trials`` finished ones."""
    from svmlab.errors import TrainingError

    wanted = setup.args.trials
    remaining = wanted - finished(study)
    if remaining > 0:
        done = optuna.study.MaxTrialsCallback(wanted, states=FINISHED)
        def objective(trial) -> float:
            try:
                return run_trial(setup, trial)
            except TrainingError as exc:  # its run holds the error and the traceback
                print(f"trial {trial.number} FAIL: {exc}", flush=True)
                raise
            except KeyboardInterrupt:  # trained again by the next invocation (recover)
                trial.set_user_attr(INTERRUPTED_ATTR, True)
                raise

        study.optimize(objective, n_trials=remaining, callbacks=[done], catch=(TrainingError,),
                       gc_after_trial=False)


def worker_command(setup: Setup, index: int) -> list[str]:
    """The command of one more worker process of this study."""
    args = setup.args
    folds = ["--validation", str(args.validation)] if args.validation is not None else \
        ["--cv", str(args.cv or 5)]
    return [sys.executable, "-m", "svmlab.app.cli", "tune", "--trials", str(args.trials),
            "--sampler", args.sampler, *folds, "--metric", args.metric, "--pruner", args.pruner,
            "--storage", args.storage, "--study", setup.name,
            "--worker-of", setup.parent_run_id, "--worker-index", str(index),
            "--", *args.overrides]


def best_trial(study, metric: str):
    """The complete trial with the best score, ties to the smallest values (module docstring);
    ValueError when no trial completed."""
    sign = 1 if METRICS[metric] == "minimize" else -1
    complete = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    if not complete:
        raise ValueError("no trial completed")
    keys = list(complete[0].distributions)
    return min(complete, key=lambda t: (sign * t.value, [t.params[k] for k in keys]))


def pruning_note(study, metric: str, n_folds: int, best) -> str | None:
    """Why a pruned trial's score may look better than the best trial's: it is an
    intermediate score (the mean over the folds it reached, or a checkpoint mid-fit), not a
    final score over all ``n_folds`` folds; None when no trial was pruned."""
    pruned = [t for t in study.get_trials(deepcopy=False, states=(TrialState.PRUNED,))
              if t.intermediate_values]
    if not pruned:
        return None
    sign = 1 if METRICS[metric] == "minimize" else -1
    last = {t.number: t.intermediate_values[max(t.intermediate_values)] for t in pruned}
    top = min(last, key=lambda n: sign * last[n])
    above = (f"; trial {top}'s {last[top]:.4f} looks better than the best final score for "
             f"that reason" if sign * last[top] < sign * best.value else "")
    where = (f"on fewer folds than the {n_folds} of a final score, or at a checkpoint mid-fit"
             if n_folds > 1 else "at a checkpoint mid-fit")
    return (f"  {len(pruned)} trial(s) pruned: a pruned trial's score is an intermediate score "
            f"({where}), not comparable to a final score; the best trial is chosen among "
            f"complete trials{above}")


def summarize(setup: Setup, study, parent) -> bool:
    """The best trial's config, its refit on the whole training set and Optuna's plots, on the
    parent run; False when no trial completed."""

    from svmlab.app import train
    from svmlab.tracking.study import study_figures

    states = [t.state.name for t in study.trials]
    counts = {f"trials_{s.lower()}": states.count(s) for s in ("COMPLETE", "PRUNED", "FAIL")}
    try:
        best = best_trial(study, setup.args.metric)
    except ValueError:
        print(f"study {setup.name}: no trial completed", flush=True)
        parent.log_summary(counts, {}, {}, None)
        return False
    cfg, choices = setup.trial_config(best.params)
    metric = f"best_cv_{setup.args.metric}"
    metrics = counts | {metric: best.value, "best_trial": best.number}
    refit = None
    if parent.refit and parent.refit[1] == str(best.number):  # refitted by an earlier invocation
        refit = parent.refit[:2]
        metrics |= {f"refit_{k}": v for k, v in parent.refit[2].items() if k in REFIT_METRICS}
    elif setup.args.refit:
        with open_dict(cfg):
            cfg.tracking.run_name = f"{setup.name}-refit"
        context = train.RunContext(choices=choices, overrides=setup.trial_overrides(best.params),
                                   parent_run_id=parent.run_id)
        refit = train.run(cfg, context), best.number
        metrics |= {f"refit_{k}": v for k, v in context.metrics.items() if k in REFIT_METRICS}
    texts = {"best/config.yaml": OmegaConf.to_yaml(cfg, resolve=True),
             "best/params.yaml": OmegaConf.to_yaml(OmegaConf.create(best.params)),
             "trials.csv": study.trials_dataframe().to_csv(index=False)}
    parent.log_summary(metrics, texts, study_figures(study), refit)
    shown = "  ".join(f"{k}={v:.6g}" if isinstance(v, float) else f"{k}={v}"
                      for k, v in best.params.items())
    print(f"study {setup.name}: best trial {best.number}  {metric[5:]}={best.value:.4f}  {shown}"
          + (f"  refit test_accuracy={metrics['refit_test_accuracy']:.4f}" if refit else ""),
          flush=True)
    note = pruning_note(study, setup.args.metric, len(setup.folds), best)
    if note:
        print(note, flush=True)
    return True


def run_tune(args: argparse.Namespace, parent_run_id: str | None = None) -> int:
    """The command: check, open the study and its parent run (nested under ``parent_run_id``,
    a workflow's run, when given), work, summarize."""
    from svmlab.tracking.store import store_error_line

    try:
        setup = prepare(args)
        load_folds(setup)
    except SvmlabError as exc:
        return _error(args, str(exc), EXIT_USAGE)
    # one line per trial is printed here; Optuna's own log of a failed trial is a traceback
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    uri = setup.cfg.tracking.uri
    try:
        study = open_study(setup)
    except SvmlabError as exc:
        return _error(args, str(exc), EXIT_USAGE)
    except Exception as exc:
        line = store_error_line(exc, args.storage)
        if line is None:
            raise
        return _error(args, line.replace("the tracking store", "the study storage", 1),
                      EXIT_STORE)
    parent = None
    try:
        recover(study, uri)
        if args.worker_of:
            setup.parent_run_id = args.worker_of
            optimize(setup, study)
            return 0
        from svmlab.tracking.liveness import reap_on_start
        from svmlab.tracking.study import StudyRun

        # under `mlflow run` the study's parent run is nested under the project's run, and
        # its trials must not resume that run
        project_run = os.environ.pop("MLFLOW_RUN_ID", None)
        parent = StudyRun(uri, setup.cfg.tracking.experiment, setup.name)
        setup.parent_run_id = parent.open(_study_params(setup), args.storage,
                                          parent_run_id or project_run)
        reap_on_start(uri, setup.cfg.tracking.experiment, setup.cfg.tracking.stale_after_s)
        workers = [subprocess.Popen(worker_command(setup, i), env=worker_environment(args.jobs))
                   for i in range(1, args.jobs)]
        limit_this_process(args.jobs)
        try:
            optimize(setup, study)
        finally:
            for worker in workers:
                if worker.wait():
                    print(f"svmlab tune: worker process {worker.pid} ended with status "
                          f"{worker.returncode}", file=sys.stderr, flush=True)
        if not summarize(setup, study, parent):
            parent.end("FAILED", "no trial completed")
            return 1
        parent.end("FINISHED")
        if parent_run_id is None:  # a workflow's selection: the workflow says what follows
            from svmlab.app.runs import next_line
            from svmlab.tracking.store import ui_line

            print(ui_line(parent.uri, parent.experiment_id, setup.parent_run_id))
            print(next_line(uri, setup.cfg.tracking.experiment))
        return 0
    except KeyboardInterrupt:
        if parent:
            parent.end("KILLED", "interrupted")
        print("svmlab: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        if parent:
            parent.end("FAILED", f"{type(exc).__name__}: {exc}")
        line = store_error_line(exc, uri)
        if isinstance(exc, SvmlabError) or line:
            return _error(args, line or str(exc), EXIT_STORE if line else EXIT_USAGE)
        raise


def _study_params(setup: Setup) -> dict:
    args = setup.args
    return {"sampler": args.sampler, "pruner": args.pruner, "metric": args.metric,
            "direction": setup.direction, "folds": len(setup.folds),
            "validation": args.validation, "trials": args.trials, "jobs": args.jobs,
            "warm_start": args.warm_start,
            "overrides": " ".join(setup.fixed),
            **{f"search.{k}": repr(v) for k, v in setup.space.items()}}


def _error(args: argparse.Namespace, message: str, status: int) -> int:
    """One line naming the command that failed (``svmlab workflow`` when a workflow's selection
    ran the study), and the exit status."""
    print(f"{getattr(args, 'command_name', 'svmlab tune')}: error: {message}", file=sys.stderr)
    return status

