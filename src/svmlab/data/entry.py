"""A registry entry: what svmlab knows about a dataset name before loading anything.

Each entry declares the parameters it accepts, with their defaults and allowed values, so that
a configuration can be checked before a run starts. The three kinds of entry (embedded,
synthetic, libsvm) subclass ``Entry`` and implement ``load`` and ``info``.
"""

from __future__ import annotations

import difflib
import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any, ClassVar

from svmlab.data.dataset import Dataset, DatasetInfo
from svmlab.errors import DataError


def _is_number(value: Any) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool) and math.isfinite(value)


def _is_integer(value: Any) -> bool:
    return isinstance(value, Integral) and not isinstance(value, bool)


@dataclass(frozen=True)
class Param:
    """One dataset parameter: its default, the values it accepts, and how errors describe them."""

    name: str
    default: Any
    allowed: str  # e.g. "a number in (0, 1)"; shown in error messages
    accepts: Callable[[Any], bool]
    convert: Callable[[Any], Any]  # to a plain Python value (float, int or bool)

    def describe(self) -> str:
        return f"{self.name} ({self.allowed}; default {yaml_value(self.default)})"


def yaml_value(value: Any) -> str:
    """A parameter value as written in a YAML config: true, false, null, 0.25."""
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    return str(value)


def number(
    name: str,
    default: float | None,
    low: float,
    high: float = math.inf,
    *,
    low_open: bool = False,
    high_open: bool = False,
    null_means: str | None = None,
) -> Param:
    """A float in an interval, e.g. ``number("test_fraction", 0.25, 0, 1, low_open=True, ...)``;
    with ``null_means``, also null (None), meaning what it says."""

    def accepts(value: Any) -> bool:
        if value is None:
            return null_means is not None
        return (
            _is_number(value)
            and (low < value if low_open else low <= value)
            and (value < high if high_open else value <= high)
        )

    upper = f"{high:g}{')' if high_open else ']'}" if high < math.inf else "inf)"
    interval = f"{'(' if low_open else '['}{low:g}, {upper}"
    allowed = f"a number in {interval}" + (f", or null for {null_means}" if null_means else "")
    return Param(name, default, allowed, accepts, float)


def integer(
    name: str, default: int | None, minimum: int, *, null_means: str | None = None
) -> Param:
    """An integer >= minimum; with ``null_means``, also null (None), meaning what it says."""

    def accepts(value: Any) -> bool:
        if value is None:
            return null_means is not None
        return _is_integer(value) and value >= minimum

    allowed = f"an integer >= {minimum}" + (f", or null for {null_means}" if null_means else "")
    return Param(name, default, allowed, accepts, int)


def flag(name: str, default: bool) -> Param:
    return Param(name, default, "true or false", lambda value: isinstance(value, bool), bool)


TEST_FRACTION = number("test_fraction", 0.25, 0, 1, low_open=True, high_open=True)
#: For a dataset with an official test file: null reads it; a fraction splits the training file
#: with the seed instead (where the test file is missing, e.g. w8a.t, cod-rna.t).
OPTIONAL_TEST_FRACTION = number(
    "test_fraction", None, 0, 1, low_open=True, high_open=True, null_means="the official test file"
)


def describe_params(declared: tuple[Param, ...]) -> str:
    return "; ".join(param.describe() for param in declared) or "none"


def resolve_params(dataset: str, declared: tuple[Param, ...], given: Mapping[str, Any]) -> dict:
    """The parameters to load ``dataset`` with: ``given`` checked, completed with the defaults.

    Raises DataError naming the unknown key or the bad value, and listing what is allowed.
    """
    names = [param.name for param in declared]
    allowed = describe_params(declared)
    for key in given:
        if key not in names:
            close = difflib.get_close_matches(str(key), names, n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise DataError(
                f"dataset {dataset!r} has no parameter {key!r}.{hint} Its parameters: {allowed}"
            )
    resolved = {}
    for param in declared:
        value = given.get(param.name, param.default)
        if not param.accepts(value):
            raise DataError(
                f"dataset {dataset!r}: {param.name}={value!r} is not allowed; "
                f"{param.name} must be {param.allowed}"
            )
        resolved[param.name] = None if value is None else param.convert(value)
    return resolved


@dataclass(frozen=True, kw_only=True)
class Entry(ABC):
    """A registered dataset name: a one-line description and the parameters it accepts."""

    kind: ClassVar[str]
    name: str
    description: str
    params: tuple[Param, ...]

    def resolve(self, given: Mapping[str, Any]) -> dict:
        return resolve_params(self.name, self.params, given)

    @abstractmethod
    def load(self, params: dict, *, seed: int, data_dir=None, cache_dir=None) -> Dataset:
        """The dataset for resolved ``params`` (see ``resolve``) and ``seed``."""

    @abstractmethod
    def info(self, data_dir=None, cache_dir=None) -> DatasetInfo:
        """Sizes with the default parameters, and where the data is; loads nothing."""
