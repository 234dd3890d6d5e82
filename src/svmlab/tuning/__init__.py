"""Hyper-parameter studies with Optuna whose trials are recorded runs, as a library.

A study is described by a typed spec (``spec.StudySpec``: its search space, the solver config's
fixed overrides, folds, metric, budget, sampler, pruner and storage) and run by one function
(``study.run_study``). The config of a trial's values is composed by the caller (``Configure``:
the application layer, the only one that composes with Hydra); each trial is recorded as a
training run records its fit (``svmlab.recording``). No Hydra, no command line.
"""
