"""``svmlab datasets list`` and ``svmlab datasets fetch NAME [NAME ...]``.

The datasets are the options of ``svmlab train dataset=NAME``: every dataset of the data registry
and the presets of ``conf/dataset`` (``w8a_split``: w8a with its training file split by the
seed), each a registered dataset with other parameters. Both commands name them all, as
``svmlab train --help`` does.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

import svmlab.conf
from svmlab import data
from svmlab.app.exit_codes import EXIT_OK, EXIT_USAGE
from svmlab.errors import DataError

PRESET_DIR = Path(svmlab.conf.__file__).resolve().parent / "dataset"


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
        "fetch", help="make LIBSVM files available: local copy, cache, or download"
    )
    fetching.add_argument("names", nargs="+", metavar="NAME", help="dataset name, e.g. a9a")
    _add_folders(fetching)
    fetching.add_argument(
        "--base-url",
        help="download from here instead of the LIBSVM site (default: $SVMLAB_LIBSVM_URL)",
    )
    fetching.set_defaults(func=fetch_command)
    return parser


def _add_folders(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data-dir", help="local folder of LIBSVM files (default: $SVMLAB_DATA_DIR)"
    )
    parser.add_argument(
        "--cache-dir",
        help="download cache (default: $SVMLAB_CACHE_DIR, else ~/.cache/svmlab/libsvm)",
    )


def presets() -> dict[str, dict]:
    """The dataset presets of ``conf/dataset``: their parameters, ``name`` the registered
    dataset each sets up (its own, or that of the file it extends)."""
    found = {}
    for path in sorted(PRESET_DIR.glob("*.yaml")):
        node = yaml.safe_load(path.read_text()) or {}
        extends = [d for d in node.pop("defaults", []) if d != "_self_"]
        found[path.stem] = {"name": extends[0]} | node if extends else node
    return found


def list_command(args: argparse.Namespace) -> int:
    """Print one row per dataset: name, kind, n_train, n_test, features, location; a preset
    has its dataset's kind and features, and sizes only a load gives (its split may differ)."""
    header = ("name", "kind", "n_train", "n_test", "features", "location")
    infos = {info.name: info for info in data.list_datasets(args.data_dir, args.cache_dir)}
    rows = (
        [header]
        + [
            (
                info.name,
                info.kind,
                *(
                    "?" if v is None else str(v)
                    for v in (info.n_train, info.n_test, info.n_features)
                ),
                info.location,
            )
            for info in infos.values()
        ]
        + [
            (
                name,
                infos[base].kind,
                "?",
                "?",
                str(infos[base].n_features or "?"),
                f"preset of {base} ({PRESET_DIR.name}/{name}.yaml)",
            )
            for name, base in ((n, p["name"]) for n, p in presets().items())
        ]
    )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header) - 1)]
    right = {2, 3, 4}  # numbers
    for row in rows:
        cells = [
            cell.rjust(w) if i in right else cell.ljust(w)
            for i, (cell, w) in enumerate(zip(row[:-1], widths, strict=True))
        ]
        print("  ".join([*cells, row[-1]]))
    return EXIT_OK


def fetch_command(args: argparse.Namespace) -> int:
    """Fetch every named dataset, print the paths of its files; EXIT_USAGE if any of them
    failed (each named in its own line)."""
    status, known = EXIT_OK, presets()
    for name in args.names:
        preset = known.get(name, {})
        base = preset.get("name", name)
        try:
            paths = data.fetch(
                base,
                args.data_dir,
                args.cache_dir,
                args.base_url,
                split=preset.get("test_fraction") is not None,
            )
        except DataError as exc:
            where = f"{name} is a preset of {base}: " if preset else ""
            print(f"svmlab: error: {where}{exc}", file=sys.stderr)
            status = EXIT_USAGE
            continue
        for path in paths:
            print(path)
    return status
