"""Convergence record of one fit, filled by the solver and read by tracking and analysis.

A solver reports progress only through its Trace (and the Trace's callback), so that solvers stay
free of any tracking library.
"""

import time
from collections.abc import Callable

import numpy as np
import pandas as pd

REQUIRED_COLUMNS = ("iteration", "time_s")


class Trace:
    """Convergence record: one row per iteration (or epoch).

    Columns: 'iteration' (int), 'time_s' (elapsed seconds since fit start), and any float columns
    the solver adds (objective values named by formulation, gaps, ...). Every row has the same
    columns. If a callback is given, it is called with each new row as a dict, in order.

    The clock starts when the Trace is created; `SVMClassifier.fit` creates it after input
    validation, just before the solver runs, so `elapsed()` measures the solver only.
    The callback is not pickled: it is a live hook of the caller (for example an MLflow tracker),
    not part of the record.
    """

    def __init__(self, callback: Callable[[dict], object] | None = None):
        self.callback = callback
        self._start = time.perf_counter()
        self._columns: dict[str, list] = {name: [] for name in REQUIRED_COLUMNS}
        self._value_names: tuple[str, ...] | None = None

    def elapsed(self) -> float:
        """Seconds since the Trace was created (the solver's start)."""
        return time.perf_counter() - self._start

    def append(self, iteration: int, time_s: float, **values: float) -> None:
        """Append one row and pass it to the callback."""
        self._check_names(tuple(values))
        row = {"iteration": int(iteration), "time_s": float(time_s)}
        row.update({name: float(value) for name, value in values.items()})
        for name, value in row.items():
            self._columns[name].append(value)
        if self.callback is not None:
            self.callback(row)

    def extend(self, columns: dict[str, np.ndarray]) -> None:
        """Append many rows given as equal-length columns (for solvers that record inside numba).

        The callback is called once per row, in order.
        """
        missing = [name for name in REQUIRED_COLUMNS if name not in columns]
        if missing:
            raise ValueError(f"Trace.extend needs the columns {list(REQUIRED_COLUMNS)}; "
                             f"missing {missing}")
        lengths = {name: len(values) for name, values in columns.items()}
        if len(set(lengths.values())) > 1:
            raise ValueError(f"Trace.extend needs columns of equal length; got {lengths}")
        values = {name: np.asarray(col) for name, col in columns.items()
                  if name not in REQUIRED_COLUMNS}
        iterations, times = columns["iteration"], columns["time_s"]
        for i in range(lengths["iteration"]):
            self.append(iterations[i], times[i], **{name: col[i] for name, col in values.items()})

    def _check_names(self, names: tuple[str, ...]) -> None:
        if self._value_names is None:
            self._value_names = names
            self._columns.update({name: [] for name in names})
        elif set(names) != set(self._value_names):
            raise ValueError(
                f"every Trace row must have the same columns: expected "
                f"{sorted(self._value_names)} besides {list(REQUIRED_COLUMNS)}, got {sorted(names)}"
            )

    def columns(self) -> dict[str, np.ndarray]:
        """Column name -> array ('iteration' int64, everything else float64)."""
        return {
            name: np.asarray(values, dtype=np.int64 if name == "iteration" else np.float64)
            for name, values in self._columns.items()
        }

    def __len__(self) -> int:
        return len(self._columns["iteration"])

    def to_frame(self) -> pd.DataFrame:
        """The record as a DataFrame, one row per recorded iteration."""
        return pd.DataFrame(self.columns())

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state["callback"] = None
        return state
