"""svmlab's Hydra launchers. Hydra takes a launcher only from a class defined in the
``hydra_plugins`` package: the class here is the one of ``svmlab.app.slurm``, defined again."""

from svmlab.app import slurm


class SlurmLauncher(slurm.SlurmLauncher):
    """``svmlab.app.slurm.SlurmLauncher`` (``hydra/launcher=submitit_slurm``)."""
