"""The application layer, the only one that imports Hydra: the ``svmlab`` command, the Hydra
entry point of a training run, the config checks and the sweep callback."""
