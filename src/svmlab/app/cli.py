"""The ``svmlab`` command: ``svmlab train [hydra overrides]``, ``datasets``, ``analyze``,
``report``, ``tune``, ``workflow``, ``server`` and ``runs``."""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import shlex
import sys

from svmlab.app import VERBOSE_ENV, verbose
from svmlab.app.exit_codes import EXIT_INTERRUPTED, EXIT_OK, failure

# name: (module whose add_parser registers it, one-line help). A module is imported only when
# one of its subcommands runs, so that `svmlab --help` needs argparse alone.
SUBCOMMANDS = {
    "datasets": ("svmlab.app.datasets", "list the datasets, download LIBSVM files"),
    "analyze": (
        "svmlab.app.analyze",
        "Friedman, Nemenyi, Wilcoxon and Bayesian tests over runs or a CSV table",
    ),
    "report": (
        "svmlab.app.analyze",
        "analyze, and execute the significance-report notebook on the result",
    ),
    "tune": (
        "svmlab.app.tune",
        "hyper-parameter search with Optuna, each trial a nested MLflow run",
    ),
    "workflow": (
        "svmlab.app.workflow",
        "reproduce a paper in one command: sweep, analysis, report, claims table",
    ),
    "server": ("svmlab.app.server", "run an MLflow tracking server (PostgreSQL or SQLite backend)"),
    "runs": (
        "svmlab.app.runs",
        "runs list, runs show: the runs of a store, one run; "
        "runs reap: end KILLED the runs a dead process left RUNNING; runs plot: draw a "
        "run's convergence figure",
    ),
}


def _train(argv: list[str]) -> int:
    """Hand the arguments to Hydra; ``--overrides "a=1 b=2"`` is split like a shell would."""
    if argv and argv[0].startswith("--overrides"):
        value = argv[0].split("=", 1)[1] if "=" in argv[0] else (argv[1] if len(argv) > 1 else "")
        rest = argv[1:] if "=" in argv[0] else argv[2:]
        argv = shlex.split(value) + rest
    from svmlab.app import train

    if verbose():  # Hydra's launch lines too (conf/config.yaml keeps them below WARNING)
        argv = [*argv, "hydra.hydra_logging.root.level=INFO"]
    sys.argv = ["svmlab train", *argv]
    train.main()
    return EXIT_OK


def be_quiet_unless_verbose(argv: list[str]) -> list[str]:
    """``argv`` without ``--verbose`` (anywhere: every command takes it), which it records for
    this process and those it starts (``SVMLAB_VERBOSE``); without it, no MLflow progress bar
    per copied artifact (the user's own MLflow setting wins)."""
    if "--verbose" in argv:
        os.environ[VERBOSE_ENV] = "1"
        argv = [a for a in argv if a != "--verbose"]
    if not verbose():
        os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    return argv


def main(argv: list[str] | None = None) -> int:
    argv = be_quiet_unless_verbose(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "train":  # everything after 'train' belongs to Hydra
        return _train(argv[1:])
    parser = argparse.ArgumentParser(
        prog="svmlab",
        description="Reproducible, MLflow-tracked experiments with SVM solvers.",
        epilog="--verbose (with any command): also the launch lines of Hydra, the progress bars "
        "of MLflow and the warnings of libraries that svmlab repeats in its own words",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser(
        "train",
        add_help=False,
        help="train one configuration, or sweep with -m (Hydra overrides follow)",
    )
    chosen = SUBCOMMANDS.get(argv[0], ("",))[0] if argv else ""
    if chosen:  # the chosen command's module registers its subcommands on `sub`
        importlib.import_module(chosen).add_parser(sub)
    for name, (module, text) in SUBCOMMANDS.items():
        if module == chosen:
            sub.choices[name].description = sub.choices[name].description or text
        else:
            sub.add_parser(name, help=text)
    args, rest = parser.parse_known_args(argv)
    if rest:  # a command that takes Hydra overrides also takes them after its options
        if not hasattr(args, "overrides") or any(a.startswith("-") for a in rest):
            parser.error(f"unrecognized arguments: {' '.join(rest)}")
        args.overrides += rest
    return run_command(args)


def run_command(args: argparse.Namespace) -> int:
    """Run the chosen command, the one way every command but ``train`` (Hydra's) ends: the error
    it ends with becomes one line naming the command and its exit status (``exit_codes.failure``:
    2 for the user's mistake, 3 for the store); any other error is a bug, and its traceback
    shows."""
    try:
        return args.func(args)
    except Exception as exc:
        found = failure(exc, getattr(args, "tracking_uri", None))
        if found is None:
            raise
        # 'svmlab runs list: error: ...': a command's own subcommand is ``<command>_command``
        sub = getattr(args, f"{args.command}_command", None)
        command = f"{args.command} {sub}" if sub else args.command
        print(f"svmlab {command}: error: {found[0]}", file=sys.stderr)
        return found[1]


def console() -> None:
    """The ``svmlab`` command: ``main`` (Ctrl-C: one line and status 130, not a traceback), then an
    exit that skips the final garbage collection.

    Once MLflow, scikit-learn and the solvers are imported, the interpreter's last collection
    takes about a second; the process is ending, so every object still alive is frozen out of
    it (``atexit`` hooks, which flush logs and end runs, still run).
    """
    try:
        code = main()
    except KeyboardInterrupt:  # Ctrl-C in a command that has no handler of its own
        print("svmlab: interrupted", file=sys.stderr)
        code = EXIT_INTERRUPTED
    finally:
        gc.freeze()
    sys.exit(code)


if __name__ == "__main__":
    console()
