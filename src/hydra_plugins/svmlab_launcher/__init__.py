"""svmlab's Hydra launcher plugin: ``hydra/launcher=parallel`` (see ``parallel_launcher``)."""
