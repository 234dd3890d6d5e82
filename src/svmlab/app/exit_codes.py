"""The exit statuses of every ``svmlab`` command, and the one mapping of the error a command ends
with to its line and status."""

from __future__ import annotations

from svmlab.errors import StoreError, SvmlabError
from svmlab.masking import mask

EXIT_OK = 0
EXIT_FAILED = 1  # a step or job failed; its own lines said why
EXIT_USAGE = 2  # the user's mistake: a bad argument, config, dataset or selection
EXIT_STORE = 3  # the tracking store (or Optuna's storage) cannot be used
EXIT_INTERRUPTED = 130  # Ctrl-C, SIGTERM, a sweep's launcher gone: as a shell reports SIGINT


def failure(exc: BaseException, uri: str | None = None) -> tuple[str, int] | None:
    """The one line and the exit status of an error a command ends with: a StoreError or a fault
    of the store at ``uri`` (``tracking.store.store_error_line``) EXIT_STORE, any other
    SvmlabError EXIT_USAGE; None for any other error (a bug: its traceback shows)."""
    if isinstance(exc, SvmlabError):
        return mask(str(exc)), EXIT_STORE if isinstance(exc, StoreError) else EXIT_USAGE
    from svmlab.tracking.store import store_error_line

    line = store_error_line(exc, uri)
    return None if line is None else (line, EXIT_STORE)
