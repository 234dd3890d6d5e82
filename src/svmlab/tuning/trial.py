"""One trial of a study: its config's folds fitted and scored on its own run, as a training
run fits and records (``svmlab.recording``), its fold scores and checkpoints reported to the
pruner. ``Setup`` holds what every trial of a worker shares: the spec, the caller's
composition, the data and its folds."""

from __future__ import annotations

import hashlib
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import optuna

from svmlab.errors import ConfigError
from svmlab.estimator.formulations import parse_metric
from svmlab.tuning.spec import PATH_KEY, Configure, StudySpec, suggest

RUN_ATTR = "mlflow_run_id"
#: steps of one fold in a trial's intermediate values: up to CHECKPOINTS - 1 mid-fit checkpoints
#: (the first trace rows of its fit), then the fold's end
CHECKPOINTS = 8
#: the trace column that holds a metric's validation score at a checkpoint: a solver whose
#: ``traces_eval_set`` traces the accuracy on it, off its clock, once per epoch
CHECKPOINT_COLUMNS = {"accuracy": "test_accuracy"}


@dataclass
class Setup:
    """What the trials of one worker share: the spec, the caller's composition of a trial's
    config (``configure``), the study's config (``tree``: its seed, dataset, paths and
    store), the data and its folds (``load_folds``), the parent run."""

    spec: StudySpec
    configure: Configure
    tree: dict
    dataset: object = None
    folds: list = field(default_factory=list)
    parent_run_id: str | None = None
    #: under warm start, the last fitted estimator of each (fold, the other grid values)
    path: dict = field(default_factory=dict)

    @property
    def compile_lock(self) -> Path:
        """The file lock the study's workers on this machine warm their solver up under: one
        compiles the numba code, the others load it from numba's cache."""
        digest = hashlib.sha256(self.spec.name.encode()).hexdigest()[:16]
        return Path(tempfile.gettempdir()) / f"svmlab-study-{digest}.compile.lock"


def load_folds(setup: Setup) -> None:
    """Load the dataset and split its training set into the study's folds (seeded, so every
    worker scores on the same folds)."""
    from sklearn.model_selection import StratifiedKFold, StratifiedShuffleSplit

    from svmlab.data import load, validate

    tree, spec = setup.tree, setup.spec
    params = tree["dataset"]
    validate(**params)
    setup.dataset = load(
        **params,
        seed=tree["seed"],
        data_dir=tree["paths"]["data_dir"],
        cache_dir=tree["paths"]["cache_dir"],
    )
    if spec.validation is not None:
        splitter = StratifiedShuffleSplit(1, test_size=spec.validation, random_state=tree["seed"])
    else:
        splitter = StratifiedKFold(spec.cv, shuffle=True, random_state=tree["seed"])
    try:
        setup.folds = list(splitter.split(setup.dataset.X_train, setup.dataset.y_train))
    except ValueError as exc:  # too few samples of a class for the folds
        raise ConfigError(f"cannot split {params['name']}'s training set: {exc}") from exc


def fold_score(metric: str, estimator, X, y) -> float:
    """The validation score of a fitted estimator on one fold."""
    from sklearn import metrics

    if metric == "fit_time_s":
        return float(estimator.fit_time_s_)
    if metric == "roc_auc":
        return float(metrics.roc_auc_score(y, estimator.decision_function(X)))
    scorer = (
        metrics.balanced_accuracy_score if metric == "balanced_accuracy" else metrics.accuracy_score
    )
    return float(scorer(y, estimator.predict(X)))


class FitPruned(Exception):
    """Raised from a fit's trace callback: the pruner stopped the trial at a checkpoint."""


def fit_fold(
    setup: Setup, trial, recording, estimator, k: int
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

    from sklearn.base import clone

    data, (train, valid) = setup.dataset, setup.folds[k]
    fold_data = dataclasses.replace(
        data,
        X_train=data.X_train[train],
        y_train=data.y_train[train],
        X_test=data.X_train[valid],
        y_test=data.y_train[valid],
    )
    column = CHECKPOINT_COLUMNS.get(setup.spec.metric)
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
        compile_s = recording.fit(
            fold,
            fold_data.X_train,
            fold_data.y_train,
            (fold_data.X_test, fold_data.y_test) if traced else None,
            checkpoint if traced else None,
            setup.compile_lock,
            start=setup.path.get(path) if setup.spec.warm_start else None,
        )
    except FitPruned as stop:  # the rows so far are the fold's trace
        recording.log_trace(
            {name: np.array([row[name] for row in rows]) for name in rows[0]}, fold=k
        )
        return None, {}, reports, stop.args[0]
    if setup.spec.warm_start:
        setup.path[path] = fold
    return fold, recording.log_fit(fold, fold_data, compile_s, fold=k), reports, None


def run_trial(setup: Setup, trial) -> float:
    """Score the trial's config fold by fold on its nested run; raises TrialPruned when the
    pruner stops it, mid-fit at a checkpoint or after a fold."""
    from svmlab.lifecycle import this_process
    from svmlab.recording.config import config_record
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
    values = {key: suggest(trial, key, dist) for key, dist in setup.spec.space.items()}
    tree, estimator, solver, overrides = setup.configure(values)
    metric, data, name = setup.spec.metric, setup.dataset, setup.spec.name
    record = config_record(tree, overrides, solver)
    record.tags |= {ROLE_TAG: "trial", STUDY_TAG: name, TRIAL_TAG: trial.number}
    scores, pruned = [], {}
    with open_run(
        tree["tracking"], f"{name}-trial{trial.number}", record, data, setup.parent_run_id
    ) as recording:
        trial.set_user_attr(RUN_ATTR, recording.run_id)
        gaps = {}
        for k, (_, valid) in enumerate(setup.folds):
            fold, metrics, reports, iteration = fit_fold(setup, trial, recording, estimator, k)
            for step, value in reports:
                recording.log({f"checkpoint_{metric}": value}, step)
            if fold is None:
                pruned = {
                    PRUNED_AT_TAG: reports[-1][0],
                    PRUNED_FOLD_TAG: k,
                    PRUNED_ITERATION_TAG: iteration,
                }
                break
            scores.append(fold_score(metric, fold, data.X_train[valid], data.y_train[valid]))
            for name, value in metrics.items():
                if (parsed := parse_metric(name)) and parsed.kind == "rel_gap":
                    gaps.setdefault(name, []).append(value)
            recording.log({f"cv_{metric}": scores[-1]}, k)
            step = (k + 1) * CHECKPOINTS - 1  # the fold's end: after its checkpoints
            trial.report(float(np.mean(scores)), step)
            if k < len(setup.folds) - 1 and trial.should_prune():
                pruned = {PRUNED_AT_TAG: step, PRUNED_FOLD_TAG: k}
                break
        score = float(np.mean(scores)) if scores else float("nan")
        summary = (
            {
                f"cv_{metric}_mean": score,
                f"cv_{metric}_std": float(np.std(scores)),
                "n_folds": len(scores),
            }
            | {f"max_{n}": max(v) for n, v in gaps.items()}
            if scores
            else {}
        )
        recording.log(
            summary, len(scores) - 1, pruned | {TRIAL_STATE_TAG: "PRUNED" if pruned else "COMPLETE"}
        )
    shown = "  ".join(
        f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in values.items()
    )
    where = (
        f"in fold {pruned[PRUNED_FOLD_TAG] + 1} at iteration {pruned[PRUNED_ITERATION_TAG]}"
        if PRUNED_ITERATION_TAG in pruned
        else f"after fold {len(scores)}"
    )
    state = f"PRUNED {where}" if pruned else "COMPLETE"
    scored = f"cv_{metric}={score:.4f}" if scores else f"checkpoint_{metric}={reports[-1][1]:.4f}"
    if pruned and scores:  # an intermediate score: say on how many folds
        scored += f" on {len(scores)} of {len(setup.folds)} folds"
    print(
        f"trial {trial.number} {state}: {scored}  {shown}  ({time.perf_counter() - start:.1f} s)",
        flush=True,
    )
    if pruned:
        raise optuna.TrialPruned(f"pruned {where}")
    return score
