"""svmlab's Hydra launchers. Hydra takes a launcher only from a class defined in the
``hydra_plugins`` package: the class here is the one of ``svmlab.app.launch.slurm``, defined again."""

from svmlab.app.launch import slurm


class SlurmLauncher(slurm.SlurmLauncher):
    """``svmlab.app.launch.slurm.SlurmLauncher`` (``hydra/launcher=submitit_slurm``)."""
