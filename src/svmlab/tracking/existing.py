"""A tracking store is created on purpose only.

A command that only reads a store (``analyze``, ``report``, ``workflow table``, ``runs plot``,
``runs reap``) would make a new, empty SQLite file out of a mistyped path or an unexpected
folder, then report an unknown experiment; it refuses a store that does not exist instead. A
command that writes (``train``, a sweep) says in one line when it creates a new store, and
refuses one whose folder does not exist (a typo in the path) unless asked to create the folder.
Only SQLite stores are files that can be checked: a server's store is the server's business.
"""

from __future__ import annotations

import contextlib

from svmlab.errors import ConfigError, StoreError
from svmlab.tracking.store import resolved_uri, sqlite_path


def require_store(uri: str | None, reap_left: bool = True) -> str:
    """The resolved ``uri``; StoreError when it names a SQLite file that does not exist. With
    ``reap_left``, the runs a sweep left RUNNING for want of this store are ended KILLED first
    (``liveness.reap_left``), when the store answers: the command's own work reports a store
    that does not."""
    uri = resolved_uri(uri)
    path = sqlite_path(uri)
    if path is not None and not path.is_file():
        raise StoreError(
            f"no tracking store at {uri} (no file {path}); a training run or a "
            f"sweep creates one, --tracking-uri names another"
        )
    if reap_left:
        from svmlab.tracking import liveness

        with contextlib.suppress(Exception):
            liveness.reap_left(uri)
    return uri


def announce_new_store(uri: str | None, new_folder: bool = False) -> None:
    """Say in one line that a writing command is about to create a new SQLite store at
    ``uri`` (nothing when the store exists or is not a file); ConfigError when the store's
    folder does not exist, unless ``new_folder``."""
    uri = resolved_uri(uri)
    path = sqlite_path(uri)
    if path is None or path.is_file():
        return
    if not path.parent.is_dir() and not new_folder:
        raise ConfigError(
            f"the folder of the tracking store {uri} does not exist: "
            f"{path.parent}; check the path, or add tracking.new_folder=true to "
            f"create it"
        )
    print(f"svmlab: creating a new tracking store at {uri}", flush=True)
