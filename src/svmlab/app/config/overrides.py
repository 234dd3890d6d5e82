"""Hydra override strings (``key=value``, ``+key=value``, ``~key``): their keys and values, and
one list of overrides updated by another. Used by the workflow runner and its selection step."""

from __future__ import annotations


def replaced(overrides: list[str], new: list[str]) -> list[str]:
    """``overrides`` less those that set a key of ``new``, then ``new``."""
    keys = {override_key(o) for o in new}
    return [o for o in overrides if override_key(o) not in keys] + list(new)


def override_key(override: str) -> str:
    return override.split("=", 1)[0].lstrip("+~")


def override_value(overrides: list[str], key: str) -> str:
    return [o.split("=", 1)[1] for o in overrides if override_key(o) == key][-1]
