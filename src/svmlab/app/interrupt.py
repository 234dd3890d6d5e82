"""A fit that Ctrl-C, SIGTERM or a vanished sweep launcher stops within about a second.

Python runs signal handlers in the main thread only, between bytecodes: a fit sitting in
compiled code (LIBSVM on a large problem) would not see Ctrl-C for minutes. So the fit runs in
a daemon thread and the main thread waits for it in short joins, during which the handlers run
and raise (``KeyboardInterrupt``, ``Terminated``); the run is then ended KILLED from the main
thread, and the abandoned fit thread ends with the process. Compiled code that holds the
interpreter lock (numba loops) delays the handlers until it returns to Python.

A job of a sweep also watches the sweep's launching process when it runs on the same host:
once the launcher is gone (SIGKILL), nobody collects the job's outcome, so the job stops
(``LauncherGone``) instead of working on as an orphan.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from svmlab.tracking.liveness import HOST_TAG, PID_STARTED_TAG, PID_TAG, is_alive
from svmlab.tracking.runs import Terminated

WAIT_S = 0.1  # a signal is handled within this
WATCH_S = 1.0  # the launcher is looked at this often
ALIVE_S = 30.0  # a fit still running says so this often


class LauncherGone(Terminated):
    """The sweep's launching process is gone: this job has nobody to report to."""


def stop_without_launcher(launcher: dict | None) -> None:
    """Raise LauncherGone when the process named by ``launcher`` (tags of
    ``liveness.this_process``) ran on this host and no longer does."""
    if launcher and is_alive(launcher.get(HOST_TAG), launcher.get(PID_TAG),
                             launcher.get(PID_STARTED_TAG)) is False:
        raise LauncherGone(f"the sweep's launching process {launcher[PID_TAG]} is gone")


def run_interruptibly(call: Callable[[], Any], launcher: dict | None = None,
                      alive: Callable[[float], None] | None = None,
                      alive_s: float = ALIVE_S) -> Any:
    """``call()`` in a daemon thread, waited for by this thread in short joins; its result,
    or its exception re-raised here. ``alive(seconds)`` is called every ``alive_s`` seconds
    while it runs: a long fit (LIBSVM reports nothing while it works) shows that it is alive."""
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = call()
        except BaseException as exc:  # handed to the waiting thread
            outcome["error"] = exc

    thread = threading.Thread(target=target, name="svmlab-fit", daemon=True)
    thread.start()
    started = watched = time.monotonic()
    beats = 0
    while thread.is_alive():
        thread.join(WAIT_S)
        now = time.monotonic()
        if now - watched > WATCH_S:
            stop_without_launcher(launcher)
            watched = now
        if alive is not None and now - started >= (beats + 1) * alive_s and thread.is_alive():
            beats += 1
            alive(now - started)
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]
