"""Hydra's record of a job on disk with a URI's password masked, as in all svmlab writes.

Hydra writes ``.hydra/config.yaml``, ``hydra.yaml`` and ``overrides.yaml`` into the job's
folder (and a sweep's ``multirun.yaml``) before the job starts; :class:`MaskedHydraFiles`, a
Hydra callback (``hydra.callbacks.svmlab_masked_files`` in ``conf/config.yaml``), rewrites
those that hold a secret as the job starts. A rewrite replaces the file at once, so that the
jobs of a parallel sweep rewriting the same ``multirun.yaml`` never leave it half written.
"""

from __future__ import annotations

import os
from pathlib import Path

from hydra.experimental.callback import Callback
from hydra.types import RunMode
from omegaconf import DictConfig

from svmlab.masking import mask

JOB_FILES = ("config.yaml", "hydra.yaml", "overrides.yaml")


def mask_file(path: Path) -> None:
    """``path`` with its secrets masked (nothing when it holds none, or is not there)."""
    if not path.is_file():
        return
    text = path.read_text()
    masked = mask(text)
    if masked != text:
        partial = path.with_name(f".{path.name}.{os.getpid()}.part")
        partial.write_text(masked)
        partial.replace(path)


class MaskedHydraFiles(Callback):
    """Masks the secrets of Hydra's files of the job that starts."""

    def on_job_start(self, config: DictConfig, **kwargs) -> None:
        hydra = config.hydra
        paths = []
        if hydra.output_subdir is not None:
            folder = Path(hydra.runtime.output_dir) / hydra.output_subdir
            paths += [folder / name for name in JOB_FILES]
        if hydra.mode == RunMode.MULTIRUN:
            paths.append(Path(hydra.sweep.dir) / "multirun.yaml")
        for path in paths:
            mask_file(path)
