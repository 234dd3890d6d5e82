"""The search space of ``svmlab tune``: Hydra sweep overrides read as Optuna distributions.

Hydra's override grammar (as Hydra's own Optuna sweeper reads it) names the space:

    solver.C=tag(log, interval(2^-5, 2^15))   FloatDistribution, log scale (IntDistribution if
                                              both ends are integers)
    kernel.gamma=interval(0.01, 1.0)          FloatDistribution, uniform
    solver.max_iter=range(100, 1000, 100)     IntDistribution with that step (Hydra's range: the
                                              stop is excluded); floats give a stepped float
    kernel=linear,rbf  or  choice(1, 10)      CategoricalDistribution

``a^b`` (a power, e.g. ``2^-5``) is read as its value before Hydra parses the override, so the
grids of LIBSVM's grid.py are written as they are in its documentation. Every other override
is a fixed override of the study's config.
"""

from __future__ import annotations

import re

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Override, Transformer
from optuna.distributions import (
    BaseDistribution,
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)

from svmlab.errors import ConfigError

POWER = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\^(-?\d+(?:\.\d+)?)")
#: keys a study keeps fixed: every trial is scored on the same data, folds and store
FIXED_KEYS = ("dataset", "seed", "paths", "tracking")


def expand_powers(text: str) -> str:
    """``2^-5`` -> ``0.03125`` (an integer power of an integer stays an integer)."""

    def value(match: re.Match) -> str:
        base, exponent = float(match[1]), float(match[2])
        result = base**exponent
        exact = result.is_integer() and "." not in match[0] and exponent >= 0
        return str(int(result)) if exact else repr(result)

    return POWER.sub(value, text)


def parse(overrides: list[str]) -> tuple[dict[str, BaseDistribution], list[str]]:
    """(search distributions by key, fixed overrides) of the command line's overrides."""
    expanded = [expand_powers(o) for o in overrides]
    try:
        parsed = OverridesParser.create().parse_overrides(expanded)
    except Exception as exc:  # Hydra's grammar error, already a readable sentence
        raise ConfigError(f"cannot parse the overrides: {str(exc).splitlines()[0]}") from exc
    space, fixed = {}, []
    for override, text in zip(parsed, expanded):
        if override.is_sweep_override():
            space[override.get_key_element()] = distribution(override)
        else:
            fixed.append(text)
    return space, fixed


def from_params(params: dict) -> dict[str, BaseDistribution]:
    """The search space of a preset's ``hydra.sweeper.params`` block (key: override value)."""
    space, fixed = parse([f"{key}={value}" for key, value in params.items()])
    if fixed:
        raise ConfigError(
            f"hydra.sweeper.params holds fixed values, not search ranges: {', '.join(fixed)}"
        )
    return space


def distribution(override: Override) -> BaseDistribution:
    """The Optuna distribution of one sweep override; ConfigError for an empty space."""
    key = override.get_key_element()
    if key.split(".")[0] in FIXED_KEYS:
        raise ConfigError(
            f"{key} cannot be searched: a study keeps {', '.join(FIXED_KEYS)} "
            f"fixed (give one value)"
        )
    value = override.value()
    log = "log" in getattr(value, "tags", set())
    if override.is_interval_sweep():
        low, high = value.start, value.end
        if not low < high:
            raise ConfigError(
                f"{key}: interval({low}, {high}) is empty or inverted; "
                f"the lower end must be below the upper end"
            )
        if log and low <= 0:
            raise ConfigError(f"{key}: a log-scale interval needs a positive lower end; got {low}")
        if isinstance(low, int) and isinstance(high, int):
            return IntDistribution(low, high, log=log)
        return FloatDistribution(float(low), float(high), log=log)
    values = list(override.sweep_iterator(transformer=Transformer.encode))
    if not values:
        raise ConfigError(f"{override.input_line} holds no value (empty or inverted range)")
    if override.is_range_sweep() and not value.shuffle and len(values) > 1:
        if log:
            raise ConfigError(f"{key}: tag(log, ...) applies to interval(...), not to range(...)")
        step = value.step
        if all(isinstance(v, int) for v in (value.start, step)):
            return IntDistribution(int(values[0]), int(values[-1]), step=int(step))
        return FloatDistribution(float(values[0]), float(values[-1]), step=float(step))
    return CategoricalDistribution(values)


def endpoints(space: dict[str, BaseDistribution]) -> list[dict]:
    """Two corners of the space (every low end, every high end): configs checked before the
    study starts, so a value the solver refuses fails at once and not in a trial."""

    def end(dist: BaseDistribution, last: bool):
        if isinstance(dist, CategoricalDistribution):
            return dist.choices[-1 if last else 0]
        return dist.high if last else dist.low

    return [{key: end(dist, last) for key, dist in space.items()} for last in (False, True)]


def as_override(key: str, value) -> str:
    """``key=value`` in Hydra's syntax (floats keep every digit)."""
    return f"{key}={value!r}" if isinstance(value, float) else f"{key}={value}"
