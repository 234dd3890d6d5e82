"""The application layer, the only one that imports Hydra: the ``svmlab`` command (`cli` and one
module per command), the Hydra entry point of a training run (`train`); the config before any
solver is imported (`config`), and running many runs: sweeps and their launchers (`launch`).

A warning reaches the user as one line, ``svmlab: warning: ConvergenceWarning: ...``, wherever it
was raised (a solver, scikit-learn, a sweep's worker process), not Python's two lines with the
file, the line number and the source line of the call.
"""

import sys
import warnings


def one_line_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """``warnings.showwarning`` in one line, without where the warning was raised."""
    text = " ".join(str(message).split())
    print(f"svmlab: warning: {category.__name__}: {text}", file=file or sys.stderr, flush=True)


warnings.showwarning = one_line_warning
