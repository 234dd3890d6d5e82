"""Errors a user can cause. Each message says what was wrong and what is allowed."""

import difflib


class SvmlabError(ValueError):
    """Base class for every error svmlab raises on bad user input."""


class ConfigError(SvmlabError):
    """An invalid configuration: unknown name, misspelt key, or value out of range."""


class DataError(SvmlabError):
    """A dataset that cannot be used: unknown name, malformed file, bad labels, NaN/inf."""


class DownloadError(DataError):
    """A dataset file that could not be downloaded or failed its checksum."""


class TrainingError(SvmlabError):
    """Training produced an unusable result, for example NaN or inf in the model or trace."""


class StoreError(SvmlabError):
    """A tracking store that cannot be used as asked: none at the given place (a command that
    only reads never creates one). Exit status 3, as for every fault of the store."""


def did_you_mean(value, allowed) -> str:
    """`` Did you mean 'a' or 'b'?`` for the names in ``allowed`` close to ``value``; empty
    when none is."""
    close = difflib.get_close_matches(str(value), [str(a) for a in allowed], n=3)
    return f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""


class MissingExtra(SvmlabError):
    """A command needs an optional part of svmlab that is not installed (an extra of its
    package: ``notebooks``, ``server``, ``cluster``); the message gives the pip command."""


def require_extra(modules: tuple[str, ...], extra: str, what: str) -> None:
    """Raise MissingExtra unless one of ``modules`` imports: ``what`` (e.g. "a PostgreSQL
    store") needs ``svmlab[extra]``. An import, not a lookup, so that a module that is present
    but broken counts as missing too."""
    import importlib

    for module in modules:
        try:
            importlib.import_module(module)
            return
        except ImportError:
            continue
    raise MissingExtra(
        f"{what} needs svmlab's optional dependencies '{extra}', which are not "
        f"installed: pip install 'svmlab[{extra}]'"
    )
