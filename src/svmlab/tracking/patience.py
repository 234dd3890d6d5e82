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

MLflow's own HTTP retries stay short (``store.HTTP_LIMITS``), so the window decides how long a
job waits. A write tried again after a refused connection never reached the store; one that
failed with a 5xx may have, which MLflow's own retries on 5xx accept too.
"""

from __future__ import annotations

import functools
import sys
import time
from collections.abc import Callable
from typing import Any

from svmlab.masking import mask
from svmlab.tracking.store import TRANSIENT, resolved_uri, store_problem

WAIT_S = 180.0  # default window: a tracking server's restart, a network's blink
PAUSE_S = (1.0, 2.0, 5.0)  # pauses between attempts, the last one repeated


def _say(line: str) -> None:
    print(mask(line), file=sys.stderr, flush=True)


class Patience:
    """Calls to the store at ``uri``, tried again while it is locked or unreachable, for up to
    ``window_s`` seconds; ``who`` names the waiting run or sweep in its lines. ``paused()`` is
    called after each pause: a run raises there a Ctrl-C that arrived while it waited (its
    writes hold signals back, ``lifecycle.DeferredSignals``)."""

    def __init__(self, uri: str | None, window_s: float = WAIT_S, who: str = "",
                 paused: Callable[[], None] = lambda: None):
        self.uri = resolved_uri(uri)
        self.paused = paused
        self.window_s = window_s
        self.who = f"{who}: " if who else ""
        self.gave_up = False  # the store stayed away for a whole window

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
                now = time.monotonic()
                if since is None:
                    since = now
                    window = 0.0 if self.gave_up else self.window_s
                    if window:
                        _say(f"svmlab: {self.who}the tracking store {self.uri} is {problem};"
                                 f" waiting up to {window:.0f} s for it (tracking.wait_s)")
                if now - since >= window:
                    self.gave_up = True
                    raise
                time.sleep(min(PAUSE_S[min(attempt, len(PAUSE_S) - 1)],
                               window - (now - since)))
                self.paused()
                attempt += 1
        if since is not None:
            _say(f"svmlab: {self.who}the tracking store {self.uri} is back after "
                     f"{time.monotonic() - since:.0f} s; going on")
        self.gave_up = False
        return result


class PatientClient:
    """An ``MlflowClient`` whose every call waits out a store that is briefly away."""

    def __init__(self, client, patience: Patience):
        self._client = client
        self._patience = patience

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._client, name)
        return functools.partial(self._patience, found) if callable(found) else found
