"""Waiting out a tracking store that is briefly away.

A tracking server that restarts, a network that blinks, a server answering 5xx, a SQLite store
busy for longer than its 20 s lock wait: such a store is usually back within minutes, and a run
that gave up on it would be lost (FAILED, or left RUNNING). A :class:`Patience` calls a store
operation again while the store's problem is one that may pass (``store.TRANSIENT``: locked,
unreachable), for up to a window (``tracking.wait_s``, default 180 s), and says so in one line
on stderr when it starts waiting and one when the store is back. After the window the error is
raised, to be reported as the store's in one line (exit status 3); a process whose store stayed
away that long tries each later operation once, until one succeeds, instead of waiting a whole
window for each.

The processes of one sweep share one window (``shared``: the sweep's state folder): the first
that finds the store away writes the time in ``store_away``, and every other waits until that
time plus the window, not a window of its own. Once the window is spent, ``store_gone`` says so:
every later operation of the sweep is tried once, and no new job starts (:func:`gone_line`).
Any operation that succeeds removes both.

MLflow's own HTTP retries stay short (``store.HTTP_LIMITS``), so the window decides how long a
job waits. A write tried again after a refused connection never reached the store; one that
failed with a 5xx may have, which MLflow's own retries on 5xx accept too.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from svmlab.masking import mask
from svmlab.tracking.store import TRANSIENT, resolved_uri, store_problem

WAIT_S = 180.0  # default window: a tracking server's restart, a network's blink
PAUSE_S = (1.0, 2.0, 5.0)  # pauses between attempts, the last one repeated
AWAY, GONE = "store_away", "store_gone"  # a sweep's shared record of an outage


def gone_line(shared: Path | None, uri: str | None) -> str | None:
    """One line saying that the store stayed away for the whole window of the sweep whose state
    folder is ``shared``; None when it did not."""
    if shared is None or not (shared / GONE).exists():
        return None
    return (
        f"the tracking store {mask(resolved_uri(uri))} is unreachable: it stayed away for the "
        f"sweep's whole wait (tracking.wait_s); this job did not start"
    )


def _say(line: str) -> None:
    print(mask(line), file=sys.stderr, flush=True)


class Patience:
    """Calls to the store at ``uri``, tried again while it is locked or unreachable, for up to
    ``window_s`` seconds; ``who`` names the waiting run or sweep in its lines. ``paused()`` is
    called after each pause: a run raises there a Ctrl-C that arrived while it waited (its
    writes hold signals back, ``lifecycle.DeferredSignals``). ``shared``: the folder where the
    processes of a sweep share the window (see the module docstring)."""

    def __init__(
        self,
        uri: str | None,
        window_s: float = WAIT_S,
        who: str = "",
        paused: Callable[[], None] = lambda: None,
        shared: Path | None = None,
    ):
        self.uri = resolved_uri(uri)
        self.paused = paused
        self.window_s = window_s
        self.who = f"{who}: " if who else ""
        self.shared = shared
        self._gave_up = False  # the store stayed away for a whole window

    @property
    def gave_up(self) -> bool:
        return self._gave_up or (self.shared is not None and (self.shared / GONE).exists())

    def __call__(self, call: Callable[..., Any], *args, **kwargs) -> Any:
        """``call(*args, **kwargs)``, waited for as the class says."""
        since = None
        attempt = 0
        while True:
            try:
                result = call(*args, **kwargs)
                break
            except Exception as exc:
                problem = store_problem(exc, self.uri) or ""
                if not problem.startswith(TRANSIENT):
                    raise
                now = time.time()
                if since is None:
                    since = self._away_since(now)
                    window = 0.0 if self.gave_up else self.window_s
                    if window:
                        _say(
                            f"svmlab: {self.who}the tracking store {self.uri} is {problem};"
                            f" waiting up to {max(0.0, since + window - now):.0f} s for it"
                            f" (tracking.wait_s)"
                        )
                if now - since >= window:
                    self._give_up()
                    raise
                time.sleep(min(PAUSE_S[min(attempt, len(PAUSE_S) - 1)], window - (now - since)))
                self.paused()
                attempt += 1
        if since is not None:
            _say(
                f"svmlab: {self.who}the tracking store {self.uri} is back after "
                f"{time.time() - since:.0f} s; going on"
            )
        self._back()
        return result

    def _away_since(self, now: float) -> float:
        """When the store was first found away: by this call, or by another process of the
        sweep (the time it wrote in the shared folder)."""
        if self.shared is None:
            return now
        away = self.shared / AWAY
        with contextlib.suppress(OSError):  # written first by another process
            descriptor = os.open(away, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
            with os.fdopen(descriptor, "w") as file:
                file.write(repr(now))
        try:
            return float(away.read_text())
        except (OSError, ValueError):  # being written, or removed: the store is back
            return now

    def _give_up(self) -> None:
        self._gave_up = True
        if self.shared is not None:
            with contextlib.suppress(OSError):
                (self.shared / GONE).touch()

    def _back(self) -> None:
        """The store answered: an outage on record is over."""
        self._gave_up = False
        if self.shared is not None:
            for name in (GONE, AWAY):
                (self.shared / name).unlink(missing_ok=True)


class PatientClient:
    """An ``MlflowClient`` whose every call waits out a store that is briefly away."""

    def __init__(self, client, patience: Patience):
        self._client = client
        self._patience = patience

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._client, name)
        return functools.partial(self._patience, found) if callable(found) else found
