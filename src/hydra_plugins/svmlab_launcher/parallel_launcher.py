"""``hydra/launcher=parallel``: a sweep's jobs in a pool of worker processes on this machine.

Hydra instantiates launchers only from the ``hydra_plugins`` package, and imports every module
of it whenever it starts; this module therefore holds only the launcher class and its config
schema, and imports the machinery (:mod:`svmlab.launcher`) when a sweep uses it. No
``from __future__ import annotations``: Hydra runs the module before registering it in
``sys.modules``, where dataclasses would look string annotations up.
"""

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, List

from hydra.core.config_store import ConfigStore
from hydra.core.utils import JobReturn, configure_log, filter_overrides, setup_globals
from hydra.plugins.launcher import Launcher
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig

log = logging.getLogger(__name__)


@dataclass
class ParallelLauncherConf:
    """Schema of svmlab's ``conf/hydra/launcher/parallel.yaml``, which extends it: a misspelt
    key or a wrong type fails when the sweep's config is composed."""

    _target_: str = "hydra_plugins.svmlab_launcher.parallel_launcher.ParallelLauncher"
    n_jobs: int = -1  # worker processes; -1: one per CPU
    # modules the workers' fork server imports besides the task function's, once for all workers
    preload: List[str] = field(default_factory=list)


ConfigStore.instance().store(group="hydra/launcher", name="base_parallel",
                             node=ParallelLauncherConf, provider="svmlab")


class ParallelLauncher(Launcher):
    """Runs a sweep's jobs in ``n_jobs`` reused worker processes; each worker composes the
    configs of its jobs from their overrides (see :mod:`svmlab.launcher`)."""

    def __init__(self, n_jobs: int = -1, preload: Sequence[str] = ()) -> None:
        self.n_jobs = n_jobs
        self.preload = list(preload)
        self.config: DictConfig | None = None
        self.hydra_context: HydraContext | None = None
        self.task_function: TaskFunction | None = None
        self.context: Any = None  # how workers start: svmlab.launcher.start_fork_server

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction,
              config: DictConfig) -> None:
        """Start the fork server now, unless ``svmlab.launcher.ForkServerStart`` has: it imports
        what the jobs need while Hydra checks that every job's config composes."""
        from svmlab import launcher

        self.config = config
        self.hydra_context = hydra_context
        self.task_function = task_function
        self.context = launcher.start_fork_server(
            [launcher.module_name(task_function), *self.preload])

    def launch(self, job_overrides: Sequence[Sequence[str]],
               initial_job_idx: int) -> Sequence[JobReturn]:
        from svmlab import launcher

        setup_globals()
        configure_log(self.config.hydra.hydra_logging, self.config.hydra.verbose)
        Path(str(self.config.hydra.sweep.dir)).mkdir(parents=True, exist_ok=True)
        pool = launcher.WorkerPool(self, len(job_overrides), self.context)
        log.info(f"Launching {len(job_overrides)} jobs in {pool.workers} worker processes")
        for idx, overrides in enumerate(job_overrides, start=initial_job_idx):
            log.info(f"\t#{idx} : {' '.join(filter_overrides(overrides))}")
        return pool.run(job_overrides, initial_job_idx)
