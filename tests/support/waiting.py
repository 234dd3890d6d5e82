"""Waiting for a state, never for a time: poll with a generous limit as a safety net."""

import time

import pytest

LIMIT_S = 120  # how long a state is waited for before the test fails


def wait_for(condition, what: str, limit_s: float = LIMIT_S):
    """Poll ``condition()`` until it returns something true; fail after ``limit_s``."""
    deadline = time.monotonic() + limit_s
    while not (found := condition()):
        if time.monotonic() > deadline:
            pytest.fail(f"waited {limit_s} s for {what}")
        time.sleep(0.2)
    return found
