"""svmlab's Hydra sweeper and launchers. Hydra takes a plugin only from a class defined in the
``hydra_plugins`` package: the SLURM launcher here is the one of ``svmlab.app.launch.slurm``,
defined again. It exists only where Hydra's submitit plugin is installed (``svmlab[cluster]``):
Hydra imports every plugin module at start, and a failing import would warn on every command.
The sweeper is defined here on the basic sweeper as Hydra's plugin scan leaves it (the scan
executes Hydra's plugin modules again, and ``BasicSweeper.__init__`` names its class by the
module's global)."""

from hydra._internal.core_plugins.basic_sweeper import BasicSweeper

from svmlab.app.launch import preflight

try:
    from svmlab.app.launch import slurm
except ImportError:  # no svmlab[cluster]; `svmlab train` names the extra when a sweep asks for it
    slurm = None

if slurm is not None:

    class SlurmLauncher(slurm.SlurmLauncher):
        """``svmlab.app.launch.slurm.SlurmLauncher`` (``hydra/launcher=submitit_slurm``)."""


class CheckedSweeper(BasicSweeper):
    """Hydra's basic sweeper (``hydra/sweeper=checked``, svmlab's default) without its own
    composition of every job before launching (``validate_batch_is_legal``): the sweep's
    checks (``svmlab.app.launch.preflight.check_jobs``) composed and checked those jobs
    already. Jobs they did not check are composed here as Hydra does."""

    def validate_batch_is_legal(self, batch) -> None:
        jobs = preflight.unchecked(batch)
        if jobs:
            super().validate_batch_is_legal(jobs)
