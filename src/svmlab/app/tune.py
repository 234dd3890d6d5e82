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
import dataclasses
import functools
import subprocess
import sys

from omegaconf import DictConfig, OmegaConf, open_dict

from svmlab.app.exit_codes import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, failure
from svmlab.errors import ConfigError, SvmlabError
from svmlab.tuning.spec import METRICS, PATH_KEY, PRUNERS, SAMPLERS, Configured, StudySpec


def add_parser(sub) -> None:
    parser = sub.add_parser(
        "tune",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        help="hyper-parameter search with Optuna, each trial a nested MLflow run",
    )
    parser.add_argument(
        "--trials",
        type=int,
        default=20,
        metavar="N",
        help="finished trials the study should have (default: 20)",
    )
    parser.add_argument("--sampler", choices=SAMPLERS, default="tpe")
    folds = parser.add_mutually_exclusive_group()
    folds.add_argument(
        "--cv",
        type=int,
        default=None,
        metavar="K",
        help="K-fold cross-validation on the training set (default: 5)",
    )
    folds.add_argument(
        "--validation",
        type=float,
        default=None,
        metavar="FRACTION",
        help="score on one stratified hold-out of this fraction instead",
    )
    parser.add_argument(
        "--metric", default="accuracy", help=f"the score: {', '.join(METRICS)} (default: accuracy)"
    )
    parser.add_argument(
        "--pruner",
        choices=PRUNERS,
        default="median",
        help="stops trials whose fold scores are hopeless (default: median)",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=1,
        metavar="N",
        help="worker processes on this machine, each with cores/N BLAS and "
        "OpenMP threads unless OMP_NUM_THREADS etc. are set (default: 1)",
    )
    parser.add_argument(
        "--storage",
        default="sqlite:///optuna.db",
        metavar="URL",
        help="Optuna's RDB storage (default: sqlite:///optuna.db; "
        "postgresql://... for several machines)",
    )
    parser.add_argument(
        "--study",
        default=None,
        metavar="NAME",
        help="study name (default: tune-<solver>-<dataset>-<kernel>)",
    )
    parser.add_argument(
        "--warm-start",
        action="store_true",
        help=f"train the grid in increasing {PATH_KEY}, each fit starting from "
        "the previous solution (needs --sampler grid and --jobs 1)",
    )
    parser.add_argument(
        "--no-refit",
        dest="refit",
        action="store_false",
        help="do not refit the best config on the whole training set",
    )
    parser.add_argument(
        "--overrides",
        dest="overrides_line",
        default="",
        metavar="STRING",
        help="overrides as one string, split like a shell would (MLproject)",
    )
    parser.add_argument("--worker-of", default=None, help=argparse.SUPPRESS)  # parent run id
    parser.add_argument("--worker-index", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument(
        "overrides", nargs="*", help="Hydra overrides: fixed values and search ranges"
    )
    parser.set_defaults(func=run_command)


# -- the study's config, composed and checked before anything is created --------------------------


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
            raise ConfigError(f"cannot set {key}={value!r}: {str(exc).splitlines()[0]}") from exc
    return cfg, choices


@functools.lru_cache(maxsize=64)
def _composed(overrides: tuple) -> tuple[DictConfig, dict]:
    cfg, choices, _ = compose_config(list(overrides))
    return cfg, choices


def configured(fixed: tuple, values: dict) -> Configured:
    """A trial's config (``tuning.spec.Configure``): composed, its estimator built."""
    from svmlab.app.config.schema import build_estimator
    from svmlab.app.config.search_space import as_override

    cfg, choices = trial_config(fixed, values)
    estimator = build_estimator(cfg)
    return Configured(
        OmegaConf.to_container(cfg, resolve=True),
        estimator,
        choices.get("solver") or type(estimator).__name__,
        [*fixed, *(as_override(k, v) for k, v in values.items())],
    )


def spec_of(overrides: list[str], **settings) -> StudySpec:
    """The study of these overrides (fixed values and search ranges; a preset's
    ``hydra.sweeper.params`` adds its ranges) and settings (``StudySpec``'s fields)."""
    from svmlab.app.config import search_space

    space, fixed = search_space.parse(overrides)
    _, _, preset_params = compose_config(fixed)
    space = search_space.from_params(preset_params) | space  # the command line wins
    return StudySpec(space=space, fixed=tuple(fixed), **settings)


def prepare(spec: StudySpec) -> tuple[StudySpec, functools.partial, dict]:
    """Check the spec and the solver's parameters at both ends of every range: the spec
    (named ``tune-<solver>-<dataset>-<kernel>`` when it has no name), the composition of a
    trial's config, and the study's config; ConfigError names the first problem."""
    from svmlab.app.config import search_space
    from svmlab.app.config.schema import checked_estimator

    spec.check()
    first = None
    for corner in search_space.endpoints(spec.space):
        cfg, choices = trial_config(spec.fixed, corner)
        estimator = checked_estimator(cfg, choices.get("dataset"))
        if spec.warm_start and not estimator.warm_startable:
            raise ConfigError(
                f"--warm-start: solver {choices.get('solver')} cannot start from "
                "another fit's solution; drop --warm-start"
            )
        first = first or (cfg, choices)
    cfg, choices = first
    name = spec.name or f"tune-{choices.get('solver')}-{cfg.dataset.name}-{cfg.kernel.name}"
    return (
        dataclasses.replace(spec, name=name),
        functools.partial(configured, spec.fixed),
        OmegaConf.to_container(cfg, resolve=True),
    )


# -- the command ----------------------------------------------------------------------------------


def run(
    spec: StudySpec,
    parent_run_id: str | None = None,
    worker_of: str | None = None,
    start_workers=None,
    command: str = "svmlab tune",
) -> int:
    """Check and run the study (``tuning.study.run_study``, nested under ``parent_run_id``, a
    workflow's run, when given); its exit status, and a problem in one line naming
    ``command``."""
    from svmlab.tuning.study import StorageError, run_study

    uri = None
    try:
        spec, configure, tree = prepare(spec)
        uri = tree["tracking"]["uri"]
        done = run_study(spec, configure, tree, parent_run_id, worker_of, start_workers)
    except KeyboardInterrupt:
        print("svmlab: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except StorageError as exc:  # Optuna's storage, not the tracking store
        found = failure(exc.__cause__, spec.storage)
        if found is None:
            raise exc.__cause__ from None
        line, status = found
        return _error(command, line.replace("the tracking store", "the study storage", 1), status)
    except Exception as exc:
        found = failure(exc, uri)
        if found is None:
            raise
        return _error(command, *found)
    if not done:
        return EXIT_FAILED
    if parent_run_id is None and worker_of is None:
        from svmlab.app.runs import next_line

        print(next_line(uri, tree["tracking"]["experiment"]))
    return EXIT_OK


def run_command(args: argparse.Namespace) -> int:
    """``svmlab tune``: the study of the command line."""
    import shlex

    overrides = shlex.split(args.overrides_line) + args.overrides
    try:
        spec = spec_of(
            overrides,
            name=args.study or "",
            metric=args.metric,
            cv=5 if args.cv is None else args.cv,
            validation=args.validation,
            trials=args.trials,
            sampler=args.sampler,
            pruner=args.pruner,
            storage=args.storage,
            jobs=args.jobs,
            warm_start=args.warm_start,
            refit=args.refit,
            worker_index=args.worker_index,
        )
    except SvmlabError as exc:
        return _error("svmlab tune", *failure(exc))
    return run(
        spec,
        worker_of=args.worker_of,
        start_workers=functools.partial(start_workers, args, overrides),
    )


def start_workers(
    args: argparse.Namespace, overrides: list[str], name: str, parent_run_id: str
) -> list:
    """The study's other ``--jobs`` - 1 worker processes on this machine, each with its share of
    the cores' threads (and this process its own)."""
    from svmlab.app.launch.threads import limit_this_process, worker_environment

    folds = (
        ["--validation", str(args.validation)]
        if args.validation is not None
        else ["--cv", str(args.cv or 5)]
    )
    workers = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "svmlab.app.cli",
                "tune",
                "--trials",
                str(args.trials),
                "--sampler",
                args.sampler,
                *folds,
                "--metric",
                args.metric,
                "--pruner",
                args.pruner,
                "--storage",
                args.storage,
                "--study",
                name,
                "--worker-of",
                parent_run_id,
                "--worker-index",
                str(index),
                "--",
                *overrides,
            ],
            env=worker_environment(args.jobs),
        )
        for index in range(1, args.jobs)
    ]
    limit_this_process(args.jobs)
    return workers


def _error(command: str, message: str, status: int) -> int:
    """One line naming the command that failed (``svmlab workflow`` when a workflow's selection
    ran the study), and the exit status."""
    print(f"{command}: error: {message}", file=sys.stderr)
    return status
