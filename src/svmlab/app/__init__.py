"""The application layer, the only one that imports Hydra: the ``svmlab`` command (`cli` and one
module per command), the Hydra entry point of a training run (`train`); the config before any
solver is imported (`config`), and running many runs: sweeps and their launchers (`launch`).

A warning reaches the user as one line, ``svmlab: warning: ConvergenceWarning: ...``, wherever it
was raised (a solver, scikit-learn, a sweep's worker process), not Python's two lines with the
file, the line number and the source line of the call; a library's warning of what svmlab says
itself (`DUPLICATES`) only with ``--verbose`` (``SVMLAB_VERBOSE``, which the processes a command
starts inherit).
"""

import os
import re
import sys
import warnings

VERBOSE_ENV = "SVMLAB_VERBOSE"
#: scikit-learn's LIBLINEAR and LIBSVM warnings that their solver stopped early: svmlab's own
#: ConvergenceWarning says so too, with the stopping rule that did not hold
DUPLICATES = re.compile(r"Liblinear failed to converge|Solver terminated early")


def verbose() -> bool:
    """Whether ``--verbose`` was given to this command or to the one that started it."""
    return os.environ.get(VERBOSE_ENV, "") not in ("", "0")


def one_line_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """``warnings.showwarning`` in one line, without where the warning was raised."""
    text = " ".join(str(message).split())
    if DUPLICATES.match(text) and not verbose():
        return
    print(f"svmlab: warning: {category.__name__}: {text}", file=file or sys.stderr, flush=True)


warnings.showwarning = one_line_warning
