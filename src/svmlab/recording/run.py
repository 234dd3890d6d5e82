"""One recorded fit: the run, its config, its dataset, the warm-up, the fit, what it logged.

The one recipe of a ``svmlab train`` run, a tune trial (one fit per fold) and a study's refit:
``open_run`` opens the run with its config and dataset on record, ``Recording.fit`` fits, and
``Recording.log_fit`` builds the fit's record (``results.fit_record``) and writes it in one
call. Each step adds its wall seconds to ``phases`` (store, data, compile, fit, evaluate,
figure), which a sweep's job reports.
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Iterator
from pathlib import Path

from svmlab.lifecycle import run_interruptibly
from svmlab.recording.results import certified_line, fit_record, trace_record
from svmlab.recording.warm_up import warm_up
from svmlab.tracking.record import RunRecord, final_points
from svmlab.tracking.tracker import Tracker
from svmlab.vocabulary import DATA_UNVERIFIED_TAG, TRACE_ARTIFACT


@contextlib.contextmanager
def timed(phases: dict, name: str):
    """Add the wall seconds of the block to ``phases[name]``."""
    start = time.perf_counter()
    try:
        yield
    finally:
        phases[name] = phases.get(name, 0.0) + time.perf_counter() - start


@contextlib.contextmanager
def open_run(
    tracking: dict,
    run_name: str,
    config: RunRecord,
    dataset=None,
    parent_run_id: str | None = None,
    phases: dict | None = None,
    shared: Path | None = None,
) -> Iterator[Recording]:
    """An MLflow run (``Tracker``: it ends FINISHED, FAILED or KILLED) with its config on
    record (a failed run keeps it) and ``dataset`` as its input, and its Recording.
    ``tracking``: the config's tracking section (``uri``, ``experiment``, ``wait_s``);
    ``shared``: the state folder of its sweep (one wait for the store, ``Tracker``)."""
    phases = {} if phases is None else phases
    with contextlib.ExitStack() as run_open:
        with timed(phases, "store"):
            tracker = run_open.enter_context(
                Tracker(
                    tracking["uri"],
                    tracking["experiment"],
                    run_name,
                    parent_run_id=parent_run_id,
                    wait_s=tracking["wait_s"],
                    shared=shared,
                )
            )
            if dataset is not None:
                tracker.log_dataset(dataset)
                if dataset.unverified:  # how a file used anyway differs from the official one
                    config.tags = config.tags | {DATA_UNVERIFIED_TAG: dataset.unverified}
            tracker.write(config)
        yield Recording(tracker, phases)
        ending = time.perf_counter()
    phases["store"] += time.perf_counter() - ending  # the staged files and the run's end


def still_training(run_name: str, seconds: float) -> None:
    print(
        f"{run_name}: still training after {seconds:.0f} s (Ctrl-C stops it; the run ends KILLED)",
        flush=True,
    )


class Recording:
    """The steps of one run's record, on its open Tracker: fits, and what each said."""

    def __init__(self, tracker: Tracker, phases: dict):
        self.tracker = tracker
        self.run_id: str = tracker.run_id
        self.phases = phases
        self._fit_start_ms = int(time.time() * 1000)

    def fit(
        self,
        estimator,
        X,
        y,
        eval_set=None,
        callback=None,
        compile_lock=None,
        launcher: dict | None = None,
        start=None,
    ) -> float:
        """The warm-up (``warm_up``, under ``compile_lock``), then ``estimator.fit`` in a thread
        that Ctrl-C, SIGTERM and a sweep's vanished launcher stop (``run_interruptibly``); the
        warm-up's seconds. ``eval_set`` goes to a solver that ``traces_eval_set``, ``start`` (a
        fitted estimator to start from) to one that is ``warm_startable``."""
        self._fit_start_ms = int(time.time() * 1000)
        extra = {"eval_set": eval_set} if eval_set is not None and estimator.traces_eval_set else {}
        extra |= {"start": start} if start is not None else {}
        with timed(self.phases, "compile"):
            compile_s = warm_up(estimator, X, y, compile_lock, launcher)
        with timed(self.phases, "fit"):
            run_interruptibly(
                lambda: estimator.fit(X, y, callback=callback, **extra),
                launcher,
                alive=functools.partial(still_training, self.tracker.run_name),
            )
        return compile_s

    def log_fit(
        self,
        estimator,
        dataset,
        compile_s: float = 0.0,
        fold: int | None = None,
        model: bool = False,
        figure: bool = False,
    ) -> dict[str, float]:
        """Everything a fitted estimator says (``fit_record``: its trace, its records, its
        final metrics on ``dataset``, its fit tags) and where asked its model and convergence
        figure, written in one call; the metrics."""
        with timed(self.phases, "evaluate"):
            record, metrics = fit_record(estimator, dataset, compile_s, fold, self._fit_start_ms)
        if model:
            record.model = estimator, dataset.X_train[:5]
        if figure:  # `svmlab runs plot` draws it later otherwise
            from svmlab.tracking.figures import CONVERGENCE_FIGURE, convergence_figure

            with timed(self.phases, "figure"):
                record.figures[CONVERGENCE_FIGURE] = convergence_figure(
                    record.tables[TRACE_ARTIFACT], self.tracker.run_name
                )
        with timed(self.phases, "store"):
            self.tracker.write(record)
        return metrics

    def log_trace(self, trace: dict, fold: int | None = None) -> None:
        """The trace of a fit that did not end (a fold pruned mid-fit: its rows so far)."""
        with timed(self.phases, "store"):
            self.tracker.write(trace_record(trace, fold, self._fit_start_ms))

    def log(
        self, metrics: dict[str, float] | None = None, step: int = 0, tags: dict | None = None
    ) -> None:
        """More of the run's record: final ``metrics`` at ``step``, ``tags``."""
        with timed(self.phases, "store"):
            self.tracker.write(
                RunRecord(tags=tags or {}, metrics=final_points(metrics or {}, step))
            )


def train(
    tracking: dict,
    run_name: str,
    config: RunRecord,
    estimator,
    dataset,
    parent_run_id: str | None = None,
    phases: dict | None = None,
    shared: Path | None = None,
    compile_lock: Path | None = None,
    launcher: dict | None = None,
    opened=None,
) -> tuple[Recording, dict[str, float]]:
    """A training run (``svmlab train``, a sweep's job, a study's refit): the run opened with
    its config and dataset (``open_run``), the fit on the training set (the test set traced
    where the solver can), its record with the model and figure the tracking section asks
    for; the Recording and the metrics. ``opened`` is told the run's id as soon as it exists."""
    with open_run(tracking, run_name, config, dataset, parent_run_id, phases, shared) as recording:
        if opened is not None:
            opened(recording.run_id)
        compile_s = recording.fit(
            estimator,
            dataset.X_train,
            dataset.y_train,
            (dataset.X_test, dataset.y_test),
            compile_lock=compile_lock,
            launcher=launcher,
        )
        metrics = recording.log_fit(
            estimator,
            dataset,
            compile_s,
            model=tracking["log_model"],
            figure=tracking["log_figure"],
        )
    return recording, metrics


def finished_lines(recording: Recording, run_name: str, metrics: dict, estimator) -> list[str]:
    """What a finished training run says of itself: its line, its certified line, and where
    the UI shows it."""
    return [
        f"run {recording.run_id} FINISHED: {run_name}  "
        f"test_accuracy={metrics['test_accuracy']:.4f}  "
        f"fit_time_s={metrics['fit_time_s']:.3f}  n_iter={estimator.n_iter_}",
        certified_line(estimator),
        recording.tracker.ui_line,
    ]
