"""The solver clock and a trace buffer for numba loops.

The clock is the one `svmlab.estimator.trace.SolverClock` keeps: an int64 array
``[start_ns, paused_ns]`` on CLOCK_MONOTONIC (the clock of ``time.monotonic`` and
``time.perf_counter`` on Linux and macOS). Solver time is ``now - start_ns - paused_ns``; work
that only the trace needs is done while the clock is paused, so it never counts.

A numba loop runs in slices: it records rows into a fixed-size buffer and returns to Python
when the buffer is full or the slice's deadline has passed. Python then drains the buffer into
the Trace (off the clock), logs progress and handles Ctrl-C, and calls the loop again. A loop
therefore never runs long without returning, however long the fit.
"""

from typing import NamedTuple

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

CLOCK_MONOTONIC = 1
ITERATION, TIME_S = 0, 1  # the first two columns of every buffer row


@intrinsic
def _clock_gettime_ns(typingctx, clock_id):
    """clock_gettime(clock_id) in nanoseconds, called from compiled code."""

    def codegen(context, builder, signature, args):
        i64, i32 = ir.IntType(64), ir.IntType(32)
        timespec = ir.LiteralStructType([i64, i64])
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(i32, [i32, timespec.as_pointer()]), "clock_gettime"
        )
        ts = cgutils.alloca_once(builder, timespec)
        builder.call(fn, [builder.trunc(args[0], i32), ts])
        sec = builder.load(cgutils.gep_inbounds(builder, ts, 0, 0))
        nsec = builder.load(cgutils.gep_inbounds(builder, ts, 0, 1))
        return builder.add(builder.mul(sec, ir.Constant(i64, 1_000_000_000)), nsec)

    return types.int64(types.int64), codegen


@njit(cache=True)
def monotonic_ns():
    """CLOCK_MONOTONIC in nanoseconds (``time.monotonic_ns()`` of compiled code)."""
    return _clock_gettime_ns(CLOCK_MONOTONIC)


class TraceBuffer(NamedTuple):
    """Rows recorded by a numba loop: column 0 the iteration, column 1 the solver time in
    seconds, then the loop's own columns. ``meta`` = [rows used, slice deadline in ns]."""

    rows: np.ndarray  # (capacity, n_columns) float64
    meta: np.ndarray  # int64[2]
    clock: np.ndarray  # int64[2]: [start_ns, paused_ns], shared with the SolverClock


def new_buffer(n_columns: int, clock: np.ndarray, capacity: int = 4096) -> TraceBuffer:
    """An empty buffer of ``capacity`` rows reading the solver clock ``clock``."""
    return TraceBuffer(np.empty((capacity, n_columns)), np.zeros(2, np.int64), clock)


@njit(cache=True)
def solver_seconds(buf):
    """Solver time: seconds on the clock since the start, pauses excluded."""
    return (monotonic_ns() - buf.clock[0] - buf.clock[1]) * 1e-9


@njit(cache=True)
def next_row(buf, iteration):
    """Start a row: its iteration and solver time are set; returns its index for the caller to
    fill the other columns."""
    i = buf.meta[0]
    buf.meta[0] = i + 1
    buf.rows[i, ITERATION] = iteration
    buf.rows[i, TIME_S] = solver_seconds(buf)
    return i


@njit(cache=True)
def slice_over(buf):
    """True when the loop must return to Python: the buffer is full or the deadline passed."""
    return buf.meta[0] >= buf.rows.shape[0] or monotonic_ns() >= buf.meta[1]


@njit(cache=True)
def exclude_since(buf, start_ns):
    """Take the time since start_ns (a `monotonic_ns` reading) off the solver clock: work that
    only the trace needs, done inside a loop."""
    buf.clock[1] += monotonic_ns() - start_ns
