"""The convergence record and the solver clock: rows, columns, callback, pauses, numba buffers."""

import math
import pickle
import time

import numpy as np
import pytest

from svmlab.estimator import trace as trace_module
from svmlab.estimator.trace import SolverClock, Trace
from svmlab.numerics.trace_buffer import new_buffer, next_row, slice_over


def started_trace(callback=None) -> Trace:
    trace = Trace(callback)
    trace.clock.start()
    return trace


def test_append_records_rows_at_solver_time_and_calls_back_with_each_row():
    rows = []
    trace = started_trace(rows.append)
    trace.append(1, objective_hinge_l2=3.0, gap=1.0)
    trace.append(2, gap=0.5, objective_hinge_l2=2.0)
    assert len(trace) == 2
    assert [{k: v for k, v in r.items() if k != "time_s"} for r in rows] == [
        {"iteration": 1, "objective_hinge_l2": 3.0, "gap": 1.0},
        {"iteration": 2, "objective_hinge_l2": 2.0, "gap": 0.5},
    ]
    columns = trace.columns()
    assert list(columns) == ["iteration", "time_s", "objective_hinge_l2", "gap"]
    assert columns["iteration"].dtype == np.int64
    assert all(columns[name].dtype == np.float64 for name in ("time_s", "gap"))
    assert 0.0 <= columns["time_s"][0] <= columns["time_s"][1] <= trace.elapsed()
    np.testing.assert_array_equal(columns["gap"], [1.0, 0.5])


def test_rows_with_other_columns_are_refused():
    trace = started_trace()
    trace.append(1, gap=1.0)
    with pytest.raises(ValueError, match="same columns"):
        trace.append(2, objective=1.0)
    with pytest.raises(ValueError, match="same columns"):
        trace.append(2)
    assert len(trace) == 1


def test_extend_appends_columns_and_calls_back_row_by_row():
    rows = []
    trace = started_trace(rows.append)
    trace.extend(
        {
            "iteration": np.arange(1, 4),
            "time_s": np.array([0.1, 0.2, 0.3]),
            "gap": np.array([2.0, 1.0, 0.5]),
        }
    )
    assert len(trace) == 3 and len(rows) == 3
    assert rows[-1] == {"iteration": 3, "time_s": 0.3, "gap": 0.5}
    np.testing.assert_array_equal(trace.columns()["iteration"], [1, 2, 3])
    with pytest.raises(ValueError, match="same columns"):
        trace.extend({"iteration": [4], "time_s": [0.4], "other": [1.0]})


def test_extend_refuses_missing_or_unequal_columns():
    trace = started_trace()
    with pytest.raises(ValueError, match="missing \\['time_s'\\]"):
        trace.extend({"iteration": [1], "gap": [1.0]})
    with pytest.raises(ValueError, match="equal lengths"):
        trace.extend({"iteration": [1, 2], "time_s": [0.1], "gap": [1.0, 2.0]})


def test_the_clock_stands_still_while_paused_and_after_stop():
    clock = SolverClock()
    clock.start()
    with clock.paused():
        inside = clock.elapsed()
        time.sleep(0.05)
        with clock.paused():  # nested pauses count once
            time.sleep(0.05)
        assert clock.elapsed() == inside
    after = clock.elapsed()
    assert after >= inside and clock.state[1] >= 100_000_000  # the 0.1 s paused were recorded
    stopped = clock.stop()
    time.sleep(0.01)
    assert clock.elapsed() == stopped >= after


def test_a_slow_callback_does_not_count_as_solver_time():
    trace = started_trace(lambda row: time.sleep(0.2))
    for k in range(3):
        trace.append(k, objective_hinge_l2=1.0)
    assert trace.clock.state[1] >= 600_000_000  # 0.6 s of callbacks, all paused
    assert trace.elapsed() < trace.clock.state[1] * 1e-9


def test_a_numba_buffer_reads_the_same_clock_and_drains_into_the_trace():
    trace = started_trace()
    buffer = new_buffer(3, trace.clock.state, capacity=4)
    buffer.meta[1] = np.iinfo(np.int64).max  # no deadline
    for k in range(4):
        row = next_row(buffer, k)
        buffer.rows[row, 2] = 10.0 * k
    assert slice_over(buffer)  # full
    before = trace.elapsed()
    trace.drain(buffer, ("objective",))
    assert buffer.meta[0] == 0 and not slice_over(buffer)
    columns = trace.columns()
    np.testing.assert_array_equal(columns["iteration"], np.arange(4))
    np.testing.assert_array_equal(columns["objective"], [0.0, 10.0, 20.0, 30.0])
    assert np.all(np.diff(columns["time_s"]) >= 0) and 0 <= columns["time_s"][-1] <= before


def test_a_passed_deadline_ends_a_slice():
    buffer = new_buffer(2, SolverClock().state, capacity=8)
    assert slice_over(buffer)  # deadline 0: long passed
    buffer.meta[1] = np.iinfo(np.int64).max
    assert not slice_over(buffer)


def test_a_python_loops_buffer_moves_full_batches_and_its_rest_at_the_end(monkeypatch):
    monkeypatch.setattr(trace_module, "SLICE_S", math.inf)  # batches by size only
    seen = []
    trace = started_trace(seen.append)
    with pytest.raises(KeyboardInterrupt), trace.buffered() as rows:
        for k in range(trace_module.BATCH_ROWS + 3):
            rows.append(k, objective=float(k))
            # a row reaches the trace (its callback, progress) once its batch is full
            assert len(trace) == (k + 1) // trace_module.BATCH_ROWS * trace_module.BATCH_ROWS
        raise KeyboardInterrupt  # the rows recorded before an interruption are kept
    columns = trace.columns()
    np.testing.assert_array_equal(columns["iteration"], np.arange(trace_module.BATCH_ROWS + 3))
    assert len(seen) == len(trace) and np.all(np.diff(columns["time_s"]) >= 0)


def test_a_python_loops_buffer_moves_its_rows_once_a_slice_has_passed(monkeypatch):
    monkeypatch.setattr(trace_module, "SLICE_S", 0.0)  # every slice has passed
    trace = started_trace()
    with trace.buffered() as rows:
        with rows.paused():  # a row's values, off the clock
            stamp = trace.elapsed()
            rows.append(1, objective=1.0)
        assert len(trace) == 1 and trace.columns()["time_s"][0] == stamp


def test_empty_trace_and_pickling_drops_the_callback():
    assert len(Trace()) == 0
    assert list(Trace().columns()) == ["iteration", "time_s"]
    trace = started_trace(lambda row: None)
    trace.append(1, gap=1.0)
    restored = pickle.loads(pickle.dumps(trace))
    assert restored.callback is None
    for name, values in trace.columns().items():
        np.testing.assert_array_equal(restored.columns()[name], values)
