"""One recorded fit: the run, its config, its dataset, the warm-up, the fit, what it logged.

The one recipe of a ``svmlab train`` run, a tune trial (one fit per fold) and a study's refit.
Each step adds its wall seconds to ``phases`` (store, data, compile, fit, evaluate, model,
figure), which a sweep's job reports.
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Iterator
from pathlib import Path

from svmlab.lifecycle import run_interruptibly
from svmlab.recording.results import check_trace_finite, evaluate, fit_tags
from svmlab.recording.warm_up import warm_up
from svmlab.tracking.patience import WAIT_S
from svmlab.tracking.tracker import TRACE_ARTIFACT, Tracker, final_metrics


@contextlib.contextmanager
def timed(phases: dict, name: str):
    """Add the wall seconds of the block to ``phases[name]``."""
    start = time.perf_counter()
    try:
        yield
    finally:
        phases[name] = phases.get(name, 0.0) + time.perf_counter() - start


@contextlib.contextmanager
def open_run(uri: str | None, experiment: str, run_name: str, parent_run_id: str | None = None,
             wait_s: float = WAIT_S, phases: dict | None = None,
             shared: Path | None = None) -> Iterator[Recording]:
    """An MLflow run (``Tracker``: it ends FINISHED, FAILED or KILLED) and its Recording;
    ``shared``: the state folder of its sweep (one wait for the store, ``Tracker``)."""
    phases = {} if phases is None else phases
    with contextlib.ExitStack() as run_open:
        with timed(phases, "store"):
            tracker = run_open.enter_context(Tracker(uri, experiment, run_name,
                                                     parent_run_id=parent_run_id, wait_s=wait_s,
                                                     shared=shared))
        yield Recording(tracker, phases)
        ending = time.perf_counter()
    phases["store"] += time.perf_counter() - ending  # the staged files and the run's end


def still_training(run_name: str, seconds: float) -> None:
    print(f"{run_name}: still training after {seconds:.0f} s (Ctrl-C stops it; the run ends "
          f"KILLED)", flush=True)


class Recording:
    """The steps of one run's record, on its open Tracker.

    A fold (``fold=k``) is one of several fits of a run (a trial's cross-validation): its final
    metrics are logged at step k rather than at its last iteration, and its trace and records
    after the first fold's under their own names.
    """

    def __init__(self, tracker: Tracker, phases: dict):
        self.tracker = tracker
        self.run_id: str = tracker.run_id
        self.phases = phases
        self._fit_start_ms: int | None = None

    def log_config(self, params: dict, tags: dict, texts: dict[str, str]) -> None:
        """The config, on record before the fit (a failed run keeps it): params, tags, and
        texts by artifact path (``config/config.yaml``)."""
        with timed(self.phases, "store"):
            self.tracker.log_batch(params=params, tags=tags)
            for path, text in texts.items():
                self.tracker.stage_text(text, path)

    def log_dataset(self, dataset) -> None:
        """The dataset as the run's input (and how a file used anyway differs from the
        official one)."""
        with timed(self.phases, "store"):
            self.tracker.log_dataset(dataset)
            if dataset.unverified:
                self.tracker.set_tags({"svmlab.data_unverified": dataset.unverified})

    def fit(self, estimator, X, y, eval_set=None, callback=None, compile_lock=None,
            launcher: dict | None = None, start=None) -> float:
        """The warm-up (``warm_up``, under ``compile_lock``), then ``estimator.fit`` in a thread
        that Ctrl-C, SIGTERM and a sweep's vanished launcher stop (``run_interruptibly``); the
        warm-up's seconds. ``eval_set`` goes to a solver that ``traces_eval_set``, ``start`` (a
        fitted estimator to start from) to one that is ``warm_startable``."""
        self._fit_start_ms = int(time.time() * 1000)
        extra = {"eval_set": eval_set} if eval_set is not None and estimator.traces_eval_set \
            else {}
        extra |= {"start": start} if start is not None else {}
        with timed(self.phases, "compile"):
            compile_s = warm_up(estimator, X, y, compile_lock, launcher)
        with timed(self.phases, "fit"):
            run_interruptibly(lambda: estimator.fit(X, y, callback=callback, **extra), launcher,
                              alive=functools.partial(still_training, self.tracker.run_name))
        return compile_s

    def log_fit(self, estimator, dataset, compile_s: float = 0.0, fold: int | None = None,
                model: bool = False, figure: bool = False) -> dict[str, float]:
        """Everything a fitted estimator says: its trace, its records, its final metrics on
        ``dataset`` (``evaluate``, with the warm-up's ``compile_s``), its fit tags, and where
        asked its model and convergence figure; the metrics."""
        trace = estimator.trace_.columns()  # joined once for the checks, the store, the plot
        records = estimator.records_  # e.g. a budget's merges
        with timed(self.phases, "store"):
            histories = self._stage_trace(trace, fold)
            for name, columns in records.items():
                self.tracker.stage_columns(columns, f"records/{name}.parquet" if not fold
                                           else f"records/fold{fold}/{name}.parquet")
        with timed(self.phases, "evaluate"):
            metrics = evaluate(estimator, dataset)
            metrics["compile_time_s"] += compile_s
        step = int(estimator.n_iter_) if fold is None else fold
        with timed(self.phases, "store"):
            self.tracker.log_batch(tags=fit_tags(estimator),
                                   metrics=final_metrics(metrics, step=step) + histories)
            self.tracker.upload_staged()
        if model:
            with timed(self.phases, "model"):
                self.tracker.log_model(estimator, dataset.X_train[:5])
        if figure:  # `svmlab runs plot` draws it later otherwise
            from svmlab.tracking.figures import CONVERGENCE_FIGURE, convergence_figure

            with timed(self.phases, "figure"):
                self.tracker.stage_figure(convergence_figure(trace, self.tracker.run_name),
                                          CONVERGENCE_FIGURE)
        return metrics

    def log_trace(self, trace: dict, fold: int | None = None) -> None:
        """The trace of a fit that did not end (a fold pruned mid-fit: its rows so far)."""
        with timed(self.phases, "store"):
            self.tracker.log_batch(metrics=self._stage_trace(trace, fold))
            self.tracker.upload_staged()

    def _stage_trace(self, trace: dict, fold: int | None) -> list:
        """Stage the trace (checked finite): ``trace/trace.parquet`` and its metric histories,
        or ``trace/fold<k>.parquet`` for a later fold; the histories."""
        check_trace_finite(trace)
        if fold:
            self.tracker.stage_columns(trace, f"trace/fold{fold}.parquet")
            return []
        self.tracker.stage_columns(trace, TRACE_ARTIFACT)
        return self.tracker.trace_metrics(trace, self._fit_start_ms)
