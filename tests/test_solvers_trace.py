"""The convergence record: rows, columns, callback, bulk append, pickling."""

import pickle

import numpy as np
import pandas as pd
import pytest

from svmlab.estimator.base import Trace


def test_append_records_rows_and_calls_back_with_each_row():
    rows = []
    trace = Trace(callback=rows.append)
    trace.append(1, 0.5, objective_hinge_l2=3.0, gap=1.0)
    trace.append(2, 0.75, gap=0.5, objective_hinge_l2=2.0)
    assert len(trace) == 2
    assert rows == [
        {"iteration": 1, "time_s": 0.5, "objective_hinge_l2": 3.0, "gap": 1.0},
        {"iteration": 2, "time_s": 0.75, "objective_hinge_l2": 2.0, "gap": 0.5},
    ]
    columns = trace.columns()
    assert list(columns) == ["iteration", "time_s", "objective_hinge_l2", "gap"]
    assert columns["iteration"].dtype == np.int64
    assert all(columns[name].dtype == np.float64 for name in ("time_s", "gap"))
    np.testing.assert_array_equal(columns["gap"], [1.0, 0.5])


def test_rows_with_other_columns_are_refused():
    trace = Trace()
    trace.append(1, 0.1, gap=1.0)
    with pytest.raises(ValueError, match="same columns"):
        trace.append(2, 0.2, objective=1.0)
    with pytest.raises(ValueError, match="same columns"):
        trace.append(2, 0.2)
    assert len(trace) == 1


def test_extend_appends_columns_row_by_row_through_the_callback():
    rows = []
    trace = Trace(callback=rows.append)
    trace.append(0, 0.0, gap=4.0)
    trace.extend({"iteration": np.arange(1, 4), "time_s": np.array([0.1, 0.2, 0.3]),
                  "gap": np.array([2.0, 1.0, 0.5])})
    assert len(trace) == 4 and len(rows) == 4
    assert rows[-1] == {"iteration": 3, "time_s": 0.3, "gap": 0.5}
    np.testing.assert_array_equal(trace.columns()["iteration"], [0, 1, 2, 3])
    with pytest.raises(ValueError, match="same columns"):
        trace.extend({"iteration": [4], "time_s": [0.4], "other": [1.0]})


def test_extend_refuses_missing_or_unequal_columns():
    trace = Trace()
    with pytest.raises(ValueError, match="missing \\['time_s'\\]"):
        trace.extend({"iteration": [1], "gap": [1.0]})
    with pytest.raises(ValueError, match="equal length"):
        trace.extend({"iteration": [1, 2], "time_s": [0.1], "gap": [1.0, 2.0]})


def test_to_frame_and_empty_trace():
    assert len(Trace()) == 0
    assert list(Trace().to_frame().columns) == ["iteration", "time_s"]
    trace = Trace()
    trace.append(5, 1.5, gap=0.25)
    pd.testing.assert_frame_equal(
        trace.to_frame(), pd.DataFrame({"iteration": [5], "time_s": [1.5], "gap": [0.25]})
    )


def test_elapsed_grows_and_pickling_drops_the_callback():
    trace = Trace(callback=lambda row: None)
    trace.append(1, trace.elapsed(), gap=1.0)
    assert 0.0 <= trace.columns()["time_s"][0] <= trace.elapsed()
    restored = pickle.loads(pickle.dumps(trace))
    assert restored.callback is None
    assert restored.to_frame().equals(trace.to_frame())
