"""The solver clock and the convergence record of one fit, filled by the solver.

One definition of time for every solver: ``time_s`` (and the fit's ``fit_time_s_``) is the
solver's own time, read from CLOCK_MONOTONIC since the solver started, with every pause
excluded. Work that only the trace needs (objective values, certificates, the callback, progress
lines, moving rows out of a buffer) runs while the clock is paused.

One protocol for recording: a loop stamps each row with the solver time into a buffer, and the
buffer's rows move to the Trace, off the clock, in slices: when it is full or a slice's time
has passed. A compiled loop uses `svmlab.numerics.trace_buffer` (it returns to Python at the end
of each slice, which then drains the buffer: progress lines and Ctrl-C are handled between
slices); a Python loop uses `Trace.buffered`, the same contract in Python.

A solver reports progress only through its Trace, so that solvers stay free of any tracking
library. A formulation's ``gap_<f>`` and ``rel_gap_<f>`` columns (`certified_gap`) hold
certified gaps where the solver computed them and NaN in the other rows; every other column is
finite.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np

from svmlab.estimator.formulations import parse_metric

REQUIRED_COLUMNS = ("iteration", "time_s")
PROGRESS_EVERY_S = 5.0  # wall seconds between two progress lines of a long fit
SLICE_S = 0.5  # wall seconds after which a Python loop's buffered rows move to the Trace
BATCH_ROWS = 256  # rows a Python loop's buffer holds before they move to the Trace
MAX_CHUNKS = 1024  # appended pieces of a column before they are joined into one array
progress_log = logging.getLogger("svmlab.progress")


def certified_gap(name: str) -> bool:
    """Whether the column ``name`` is a formulation's certified gap (absolute or relative)."""
    metric = parse_metric(name)
    return metric is not None and metric.kind in ("gap", "rel_gap")


def _now_ns() -> int:
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)


class SolverClock:
    """Solver time: CLOCK_MONOTONIC since ``start``, less the time spent in ``paused`` blocks.

    ``state`` = [start_ns, paused_ns] is an int64 array that compiled loops read too.
    """

    def __init__(self):
        self.state = np.zeros(2, np.int64)
        self._depth = 0
        self._paused_at = 0
        self._stopped_at: int | None = None

    def start(self) -> None:
        self.state[:] = (_now_ns(), 0)
        self._stopped_at = None

    def stop(self) -> float:
        """Freeze the clock; returns the solver time."""
        self._stopped_at = _now_ns()
        return self.elapsed()

    def elapsed(self) -> float:
        """Solver seconds so far (frozen while paused or stopped)."""
        now = self._stopped_at or (self._paused_at if self._depth else _now_ns())
        return (now - int(self.state[0]) - int(self.state[1])) * 1e-9

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Work inside the block does not count as solver time (nested blocks count once)."""
        if self._depth == 0:
            self._paused_at = _now_ns()
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1
            if self._depth == 0:
                self.state[1] += _now_ns() - self._paused_at


class Trace:
    """Convergence record: one row per recorded iteration (or epoch).

    Columns: 'iteration' (int), 'time_s' (solver seconds) and the float columns the solver adds
    (objective values named by formulation, gaps, ...); every row has the same columns. A
    ``callback`` gets each new row as a dict, off the clock. A fit longer than PROGRESS_EVERY_S
    logs a progress line to the logger ``svmlab.progress`` every PROGRESS_EVERY_S seconds.
    """

    def __init__(self, callback: Callable[[dict], object] | None = None, progress: bool = True):
        self.callback = callback
        self.progress = progress  # False: no progress lines (e.g. a warm-up fit)
        self.clock = SolverClock()
        self._chunks: dict[str, list[np.ndarray]] = {name: [] for name in REQUIRED_COLUMNS}
        self._value_names: tuple[str, ...] | None = None
        self._rows = 0
        self._last: dict[str, float] = {}
        self._wall_start = time.monotonic()
        self._last_progress = self._wall_start

    def elapsed(self) -> float:
        """Solver seconds since the fit started."""
        return self.clock.elapsed()

    def paused(self):
        """``with trace.paused(): ...`` for work only the trace needs."""
        return self.clock.paused()

    def append(self, iteration: int, **values: float) -> None:
        """Record one row at the current solver time, moved at once (a single row, such as a
        library's; a loop records through `buffered`)."""
        time_s = self.elapsed()
        with self.paused():
            self._add(
                {
                    "iteration": [iteration],
                    "time_s": [time_s],
                    **{k: [v] for k, v in values.items()},
                }
            )

    def extend(self, columns: dict[str, np.ndarray]) -> None:
        """Record many rows given as equal-length columns, 'time_s' included (rows recorded by
        compiled code)."""
        with self.paused():
            self._add(columns)

    @contextmanager
    def buffered(self) -> Iterator[RowBuffer]:
        """``with trace.buffered() as rows:`` a Python loop's buffer; its last rows reach the
        trace when the block ends, however it ends."""
        rows = RowBuffer(self)
        try:
            yield rows
        finally:
            rows.flush()

    def drain(self, buffer, names: tuple[str, ...]) -> None:
        """Move the rows of a numba loop's TraceBuffer (its columns after iteration and time_s
        are ``names``) into the trace, and empty the buffer."""
        with self.paused():
            rows = buffer.rows[: buffer.meta[0]]
            buffer.meta[0] = 0
            self._add(
                {
                    "iteration": rows[:, 0],
                    "time_s": rows[:, 1],
                    **{name: rows[:, 2 + k] for k, name in enumerate(names)},
                }
            )

    def _add(self, columns: dict) -> None:
        missing = [name for name in REQUIRED_COLUMNS if name not in columns]
        if missing:
            raise ValueError(
                f"a trace row needs the columns {list(REQUIRED_COLUMNS)}; missing {missing}"
            )
        lengths = {name: len(values) for name, values in columns.items()}
        if len(set(lengths.values())) > 1:
            raise ValueError(f"trace columns must have equal lengths; got {lengths}")
        self._check_names(tuple(k for k in columns if k not in REQUIRED_COLUMNS))
        n = lengths["iteration"]
        if not n:
            return
        chunk = {
            name: np.array(values, dtype=np.int64 if name == "iteration" else np.float64)
            for name, values in columns.items()
        }
        for name, values in chunk.items():
            self._chunks[name].append(values)
        if len(self._chunks["iteration"]) >= MAX_CHUNKS:  # keep few arrays (pickling, memmaps)
            self._chunks = self._joined()
        self._rows += n
        self._last = {name: values[-1] for name, values in chunk.items()}
        if self.callback is not None:
            for i in range(n):
                self.callback({name: values[i].item() for name, values in chunk.items()})
        self._progress()

    def _check_names(self, names: tuple[str, ...]) -> None:
        if self._value_names is None:
            self._value_names = names
            self._chunks.update({name: [] for name in names})
        elif set(names) != set(self._value_names):
            raise ValueError(
                f"every Trace row must have the same columns: expected "
                f"{sorted(self._value_names)} besides {list(REQUIRED_COLUMNS)}, got {sorted(names)}"
            )

    def _progress(self) -> None:
        now = time.monotonic()
        if (
            not self.progress
            or now - self._last_progress < PROGRESS_EVERY_S
            or not progress_log.isEnabledFor(logging.INFO)
        ):
            return
        self._last_progress = now
        last = self._last
        shown = [
            f"{k}={v:.6g}"
            for k, v in last.items()
            if getattr(parse_metric(k), "kind", None) in ("objective", "rel_gap") and np.isfinite(v)
        ]
        progress_log.info(
            "iteration %d  %s  solver %.1f s, wall %.1f s",
            last["iteration"],
            "  ".join(shown[:3]),
            last["time_s"],
            now - self._wall_start,
        )

    def columns(self) -> dict[str, np.ndarray]:
        """Column name -> array ('iteration' int64, everything else float64)."""
        dtype = {"iteration": np.int64}
        return {
            name: np.concatenate(chunks) if chunks else np.empty(0, dtype.get(name, float))
            for name, chunks in self._chunks.items()
        }

    def __len__(self) -> int:
        return self._rows

    def __getstate__(self) -> dict:
        """Picklable (a logged model): no callback, and each column as one array."""
        state = self.__dict__.copy()
        state["callback"] = None
        state["_chunks"] = self._joined()
        return state

    def _joined(self) -> dict[str, list[np.ndarray]]:
        """The chunks with each column joined into one array."""
        return {name: [values] for name, values in self.columns().items()}


class RowBuffer:
    """A Python loop's trace rows, the counterpart of `numerics.trace_buffer.TraceBuffer`: each
    row gets the solver time when it is appended, and the rows move to the Trace (callback,
    progress lines) off the clock once BATCH_ROWS wait or SLICE_S wall seconds have passed
    since the last move. A fit of thousands of iterations so stores (and pickles) a few arrays
    per column rather than one per row."""

    def __init__(self, trace: Trace):
        self.trace = trace
        self.columns: dict[str, list] = {}
        self._moved_at = time.monotonic()

    def paused(self):
        """``with rows.paused(): ...`` for work only the trace needs (a row's values)."""
        return self.trace.paused()

    def append(self, iteration: int, **values: float) -> None:
        """Record one row at the current solver time (the bookkeeping off the clock)."""
        time_s = self.trace.elapsed()
        with self.paused():
            for name, value in {"iteration": iteration, "time_s": time_s, **values}.items():
                self.columns.setdefault(name, []).append(value)
            if (
                len(self.columns["iteration"]) >= BATCH_ROWS
                or time.monotonic() - self._moved_at >= SLICE_S
            ):
                self.flush()

    def flush(self) -> None:
        """Move the waiting rows to the Trace (off the clock)."""
        if self.columns:
            self.trace.extend(self.columns)
            self.columns = {}
        self._moved_at = time.monotonic()
