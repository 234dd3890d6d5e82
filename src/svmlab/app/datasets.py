"""``svmlab datasets list`` and ``svmlab datasets fetch NAME [NAME ...]``."""

from __future__ import annotations

import argparse
import sys

from svmlab import data
from svmlab.errors import DataError


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``datasets`` on an argparse subparsers object.

    Each subcommand sets ``func``, which takes the parsed arguments and returns the exit status.
    """
    parser = subparsers.add_parser("datasets")
    commands = parser.add_subparsers(dest="datasets_command", required=True)

    listing = commands.add_parser("list", help="every dataset with its sizes and location")
    _add_folders(listing)
    listing.set_defaults(func=list_command)

    fetching = commands.add_parser(
        "fetch", help="make LIBSVM files available: local copy, cache, or download")
    fetching.add_argument("names", nargs="+", metavar="NAME", help="dataset name, e.g. a9a")
    _add_folders(fetching)
    fetching.add_argument("--base-url", help="download from here instead of the LIBSVM site "
                                             "(default: $SVMLAB_LIBSVM_URL)")
    fetching.set_defaults(func=fetch_command)
    return parser


def _add_folders(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", help="local folder of LIBSVM files (default: "
                                           "$SVMLAB_DATA_DIR)")
    parser.add_argument("--cache-dir", help="download cache (default: $SVMLAB_CACHE_DIR, else "
                                            "~/.cache/svmlab/libsvm)")


def list_command(args: argparse.Namespace) -> int:
    """Print one row per dataset: name, kind, n_train, n_test, features, location."""
    header = ("name", "kind", "n_train", "n_test", "features", "location")
    rows = [header] + [
        (info.name, info.kind, *("?" if v is None else str(v)
                                 for v in (info.n_train, info.n_test, info.n_features)),
         info.location)
        for info in data.list_datasets(args.data_dir, args.cache_dir)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header) - 1)]
    right = {2, 3, 4}  # numbers
    for row in rows:
        cells = [cell.rjust(w) if i in right else cell.ljust(w)
                 for i, (cell, w) in enumerate(zip(row[:-1], widths, strict=True))]
        print("  ".join([*cells, row[-1]]))
    return 0


def fetch_command(args: argparse.Namespace) -> int:
    """Fetch every named dataset, print the paths of its files; 2 if any of them failed."""
    status = 0
    for name in args.names:
        try:
            paths = data.fetch(name, args.data_dir, args.cache_dir, args.base_url)
        except DataError as exc:
            print(f"svmlab: error: {exc}", file=sys.stderr)
            status = 2
            continue
        for path in paths:
            print(path)
    return status
