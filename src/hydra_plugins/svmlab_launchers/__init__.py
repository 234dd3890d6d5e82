"""svmlab's Hydra launchers. Hydra takes a launcher only from a class defined in the
``hydra_plugins`` package: the class here is the one of ``svmlab.app.launch.slurm``, defined again.
It exists only where Hydra's submitit plugin is installed (``svmlab[cluster]``): Hydra imports
every plugin module at start, and a failing import would warn on every command."""

try:
    from svmlab.app.launch import slurm
except ImportError:  # no svmlab[cluster]; `svmlab train` names the extra when a sweep asks for it
    slurm = None

if slurm is not None:
    class SlurmLauncher(slurm.SlurmLauncher):
        """``svmlab.app.launch.slurm.SlurmLauncher`` (``hydra/launcher=submitit_slurm``)."""
