"""Timing a command of the benchmarks: its wall time, and its output, or a stop with both
streams' tails when it fails."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path


def timed(command: list[str], folder: Path, what: str) -> tuple[float, subprocess.CompletedProcess]:
    """Run ``command`` in ``folder``; (wall seconds, the finished process). A non-zero exit
    stops the benchmark with ``what`` and the output's tails."""
    start = time.perf_counter()
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode:
        raise SystemExit(
            f"{what} failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        )
    return wall, done
