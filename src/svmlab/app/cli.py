"""The ``svmlab`` command: ``svmlab train [hydra overrides]``, ``datasets``, ``analyze``,
``report`` and ``server``."""

from __future__ import annotations

import argparse
import gc
import importlib
import shlex
import sys

SUBCOMMAND_MODULES = ("svmlab.data.cli", "svmlab.analysis.cli", "svmlab.tracking.server")


def _train(argv: list[str]) -> int:
    """Hand the arguments to Hydra; ``--overrides "a=1 b=2"`` is split like a shell would."""
    if argv and argv[0].startswith("--overrides"):
        value = argv[0].split("=", 1)[1] if "=" in argv[0] else (argv[1] if len(argv) > 1 else "")
        rest = argv[1:] if "=" in argv[0] else argv[2:]
        argv = shlex.split(value) + rest
    from svmlab.app import train

    sys.argv = ["svmlab train", *argv]
    train.main()
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "train":  # everything after 'train' belongs to Hydra
        return _train(argv[1:])
    parser = argparse.ArgumentParser(
        prog="svmlab", description="Reproducible, MLflow-tracked experiments with SVM solvers.")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("train", add_help=False,
                   help="train one configuration, or sweep with -m (Hydra overrides follow)")
    for module in SUBCOMMAND_MODULES:  # each registers its subcommands on `sub`
        importlib.import_module(module).add_parser(sub)
    args = parser.parse_args(argv)
    return args.func(args)


def console() -> None:
    """The ``svmlab`` command: ``main``, then an exit that skips the final garbage collection.

    Once MLflow, scikit-learn and the solvers are imported, the interpreter's last collection
    takes about a second; the process is ending, so every object still alive is frozen out of
    it (``atexit`` hooks, which flush logs and end runs, still run).
    """
    try:
        code = main()
    finally:
        gc.freeze()
    sys.exit(code)


if __name__ == "__main__":
    console()
