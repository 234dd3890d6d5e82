"""A study: its Optuna study on an RDB storage, its parent MLflow run, its trials in this
process (and in the worker processes the caller starts), the best trial, its refit (a training
run of the best config on the whole training set) and its summary; one function runs it all
(``run_study``)."""

from __future__ import annotations

import math
import os
import sys
import time
import warnings
from collections.abc import Callable

import optuna
from optuna.trial import TrialState

from svmlab.errors import ConfigError, TrainingError, require_extra
from svmlab.tuning.spec import METRICS, PATH_KEY, Configure, StudySpec, grid
from svmlab.tuning.trial import CHECKPOINTS, RUN_ATTR, Setup, load_folds, run_trial
from svmlab.vocabulary import WARM_START_TAG

RETRY_ATTR = "svmlab.retry_of"
INTERRUPTED_ATTR = "svmlab.interrupted"  # a trial stopped by Ctrl-C or SIGTERM in its process
REFIT_METRICS = ("test_accuracy", "train_accuracy", "fit_time_s")
FINISHED = (TrialState.COMPLETE, TrialState.PRUNED)  # the trials the budget counts
WARM_ATTR = WARM_START_TAG  # the study's user attribute: its grid order is the path's


class StorageError(Exception):
    """The study's storage could not be opened (its cause says why)."""


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
            self._all_grids.sort(
                key=lambda point: (
                    [rank[i][repr(v)] for i, v in enumerate(point) if names[i] != path],
                    point[names.index(path)],
                )
            )

    def after_trial(self, study, trial, state, values) -> None:
        if "grid_id" in study._storage.get_trial_system_attrs(trial._trial_id):
            super().after_trial(study, trial, state, values)
        elif not self._get_unvisited_grid_ids(study):
            study.stop()


def open_study(spec: StudySpec, seed: int, stale_after_s: float):
    """The Optuna study (created or loaded) on its RDB storage, with sampler and pruner.

    The sampler's seed is the config's seed plus the number of trials the study holds and this
    worker's index: a later invocation or another worker does not draw the same values again
    (the grid sampler's is the config's seed alone: its grid's order must be the same in every
    process). StorageError when its storage cannot be opened.
    """
    import sqlalchemy

    from svmlab.tracking.store import again_if_duplicate

    url = storage_url(spec.storage)
    engine = {"connect_args": {"timeout": 60}} if url.startswith("sqlite:") else {}
    with warnings.catch_warnings():  # Optuna calls its trial heartbeat experimental
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        storage = again_if_duplicate(  # workers opening a new database at once
            lambda: optuna.storages.RDBStorage(
                url, engine_kwargs=engine, heartbeat_interval=60, grace_period=int(stale_after_s)
            ),
            errors=(sqlalchemy.exc.IntegrityError, sqlalchemy.exc.ProgrammingError),
        )
    n_steps = (1 if spec.validation is not None else spec.cv) * CHECKPOINTS
    pruner = {
        "median": lambda: optuna.pruners.MedianPruner(n_startup_trials=3),
        "hyperband": lambda: optuna.pruners.HyperbandPruner(1, n_steps),
        "successive_halving": lambda: optuna.pruners.SuccessiveHalvingPruner(),
        "none": lambda: optuna.pruners.NopPruner(),
    }
    study = optuna.create_study(
        storage=storage,
        study_name=spec.name,
        load_if_exists=True,
        direction=spec.direction,
        pruner=pruner[spec.pruner](),
    )
    if study.direction.name.lower() != spec.direction:
        raise ConfigError(
            f"study {spec.name} exists with direction {study.direction.name}; "
            f"--metric {spec.metric} needs {spec.direction}"
        )
    check_same_space(study, spec.space)
    check_same_order(study, spec.warm_start)
    drawn = seed + 1000 * len(study.trials) + spec.worker_index
    study.sampler = {
        "tpe": lambda: optuna.samplers.TPESampler(seed=drawn),
        "random": lambda: optuna.samplers.RandomSampler(seed=drawn),
        # grid ids index the shuffled grid: one order in every worker and invocation
        "grid": lambda: RetryingGridSampler(
            grid(spec.space), seed, PATH_KEY if spec.warm_start else None
        ),
    }[spec.sampler]()
    return study


def check_same_order(study, warm_start: bool) -> None:
    """A study keeps its grid's order: a warm-started grid's (the path's), or the shuffled one
    (its trials' grid ids index that order)."""
    if not study.trials:
        study.set_user_attr(WARM_ATTR, warm_start)
    elif study.user_attrs.get(WARM_ATTR, False) != warm_start:
        had = "with" if study.user_attrs.get(WARM_ATTR, False) else "without"
        raise ConfigError(
            f"study {study.study_name} was started {had} --warm-start; continue "
            f"it the same way, or give another --study"
        )


def check_same_space(study, space: dict) -> None:
    """A study's parameters keep their kind of distribution (and a categorical its choices)."""
    from optuna.distributions import check_distribution_compatibility

    for trial in study.get_trials(deepcopy=False)[-1:]:
        for key, old in trial.distributions.items():
            try:
                if key in space:
                    check_distribution_compatibility(old, space[key])
            except ValueError as exc:
                raise ConfigError(
                    f"study {study.study_name} searched {key} over {old}; it "
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
        return "postgresql+psycopg://" + url[len("postgresql://") :]
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
            print(
                f"svmlab: trial {trial.number} was interrupted: its values are queued again",
                file=sys.stderr,
                flush=True,
            )
    for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        started = trial.datetime_start.timestamp() if trial.datetime_start else time.time()
        why = why_dead(trial.user_attrs, started, stale_after_s=math.inf, now=time.time())
        if why:
            study.tell(trial.number, state=TrialState.FAIL, skip_if_finished=True)
            study.enqueue_trial(trial.params, user_attrs={RETRY_ATTR: trial.number})
            print(
                f"svmlab: trial {trial.number} was left RUNNING ({why}): marked FAIL, its "
                f"values queued again",
                file=sys.stderr,
                flush=True,
            )
    for trial in study.get_trials(deepcopy=False, states=(TrialState.FAIL,)):
        run_id = trial.user_attrs.get(RUN_ATTR)
        if run_id:
            fail_run(uri, run_id, f"trial {trial.number} failed in Optuna (its process is gone)")


def finished(study) -> int:
    return len(study.get_trials(deepcopy=False, states=FINISHED))


def optimize(setup: Setup, study) -> None:
    """Run trials in this process until the study has ``trials`` finished ones."""
    wanted = setup.spec.trials
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

        study.optimize(
            objective,
            n_trials=remaining,
            callbacks=[done],
            catch=(TrainingError,),
            gc_after_trial=False,
        )


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
    pruned = [
        t
        for t in study.get_trials(deepcopy=False, states=(TrialState.PRUNED,))
        if t.intermediate_values
    ]
    if not pruned:
        return None
    sign = 1 if METRICS[metric] == "minimize" else -1
    last = {t.number: t.intermediate_values[max(t.intermediate_values)] for t in pruned}
    top = min(last, key=lambda n: sign * last[n])
    above = (
        f"; trial {top}'s {last[top]:.4f} looks better than the best final score for that reason"
        if sign * last[top] < sign * best.value
        else ""
    )
    where = (
        f"on fewer folds than the {n_folds} of a final score, or at a checkpoint mid-fit"
        if n_folds > 1
        else "at a checkpoint mid-fit"
    )
    return (
        f"  {len(pruned)} trial(s) pruned: a pruned trial's score is an intermediate score "
        f"({where}), not comparable to a final score; the best trial is chosen among "
        f"complete trials{above}"
    )


def summarize(setup: Setup, study, parent) -> bool:
    """The best trial's config, its refit on the whole training set and Optuna's plots, on the
    parent run; False when no trial completed."""
    from svmlab.recording.config import as_yaml, config_record
    from svmlab.recording.run import finished_lines, train
    from svmlab.tracking.study import study_figures

    spec = setup.spec
    states = [t.state.name for t in study.trials]
    counts = {f"trials_{s.lower()}": states.count(s) for s in ("COMPLETE", "PRUNED", "FAIL")}
    try:
        best = best_trial(study, spec.metric)
    except ValueError:
        print(f"study {spec.name}: no trial completed", flush=True)
        parent.log_summary(counts, {}, {}, None)
        return False
    tree, estimator, solver, overrides = setup.configure(best.params)
    metric = f"best_cv_{spec.metric}"
    metrics = counts | {metric: best.value, "best_trial": best.number}
    refit = None
    if parent.refit and parent.refit[1] == str(best.number):  # refitted by an earlier invocation
        refit = parent.refit[:2]
        metrics |= {f"refit_{k}": v for k, v in parent.refit[2].items() if k in REFIT_METRICS}
    elif spec.refit:
        tree["tracking"]["run_name"] = name = f"{spec.name}-refit"
        recording, fitted = train(
            tree["tracking"],
            name,
            config_record(tree, overrides, solver),
            estimator,
            setup.dataset,
            parent.run_id,
        )
        print("\n".join(finished_lines(recording, name, fitted, estimator)), flush=True)
        refit = recording.run_id, best.number
        metrics |= {f"refit_{k}": v for k, v in fitted.items() if k in REFIT_METRICS}
    texts = {
        "best/config.yaml": as_yaml(tree),
        "best/params.yaml": as_yaml(dict(best.params)),
        "trials.csv": study.trials_dataframe().to_csv(index=False),
    }
    parent.log_summary(metrics, texts, study_figures(study), refit)
    shown = "  ".join(
        f"{k}={v:.6g}" if isinstance(v, float) else f"{k}={v}" for k, v in best.params.items()
    )
    print(
        f"study {spec.name}: best trial {best.number}  {metric[5:]}={best.value:.4f}  {shown}"
        + (f"  refit test_accuracy={metrics['refit_test_accuracy']:.4f}" if refit else ""),
        flush=True,
    )
    note = pruning_note(study, spec.metric, len(setup.folds), best)
    if note:
        print(note, flush=True)
    return True


def run_study(
    spec: StudySpec,
    configure: Configure,
    tree: dict,
    parent_run_id: str | None = None,
    worker_of: str | None = None,
    start_workers: Callable[[str, str], list] | None = None,
) -> bool:
    """Run the study of ``spec`` on the config ``tree`` (its seed, dataset, paths and store):
    its data and folds, its Optuna study, the trials that died queued again, its parent run
    (nested under ``parent_run_id`` when given) with the store's prelude around it, the trials
    of this process and of the workers ``start_workers(study name, parent run id)`` starts
    (child processes, waited for), the summary; False when no trial completed. A worker of
    another process's study (``worker_of``: its parent run) runs trials only. ConfigError and
    DataError say what is wrong before anything is created; StorageError that the storage
    cannot be opened."""
    from svmlab.errors import SvmlabError
    from svmlab.recording.config import announce, reap
    from svmlab.tracking.store import ui_line
    from svmlab.tracking.study import StudyRun

    setup = Setup(spec, configure, tree)
    load_folds(setup)
    # one line per trial is printed here; Optuna's own log of a failed trial is a traceback
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    tracking = tree["tracking"]
    try:
        study = open_study(spec, tree["seed"], tracking["stale_after_s"])
    except SvmlabError:
        raise
    except Exception as exc:
        raise StorageError(str(exc)) from exc
    if worker_of:
        recover(study, tracking["uri"])
        setup.parent_run_id = worker_of
        optimize(setup, study)
        return True
    announce(tracking)
    recover(study, tracking["uri"])
    # under `mlflow run` the study's parent run is nested under the project's run, and its
    # trials must not resume that run
    project_run = os.environ.pop("MLFLOW_RUN_ID", None)
    parent = StudyRun(tracking["uri"], tracking["experiment"], spec.name)
    try:
        setup.parent_run_id = parent.open(
            study_params(spec), spec.storage, parent_run_id or project_run
        )
        reap(tracking)  # the parent, reopened by this process, is not a dead process's
        workers = start_workers(spec.name, setup.parent_run_id) if start_workers else []
        try:
            optimize(setup, study)
        finally:
            for worker in workers:
                if worker.wait():
                    print(
                        f"svmlab tune: worker process {worker.pid} ended with status "
                        f"{worker.returncode}",
                        file=sys.stderr,
                        flush=True,
                    )
        if not summarize(setup, study, parent):
            parent.end("FAILED", "no trial completed")
            return False
        parent.end("FINISHED")
    except KeyboardInterrupt:
        parent.end("KILLED", "interrupted")
        raise
    except Exception as exc:
        parent.end("FAILED", f"{type(exc).__name__}: {exc}")
        raise
    if parent_run_id is None:  # a workflow's selection: the workflow says what follows
        print(ui_line(parent.uri, parent.experiment_id, setup.parent_run_id))
    return True


def study_params(spec: StudySpec) -> dict:
    """The study's params on its parent run."""
    return {
        "sampler": spec.sampler,
        "pruner": spec.pruner,
        "metric": spec.metric,
        "direction": spec.direction,
        "folds": 1 if spec.validation is not None else spec.cv,
        "validation": spec.validation,
        "trials": spec.trials,
        "jobs": spec.jobs,
        "warm_start": spec.warm_start,
        "overrides": " ".join(spec.fixed),
        **{f"search.{k}": repr(v) for k, v in spec.space.items()},
    }
