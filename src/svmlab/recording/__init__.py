"""The fit-and-record pipeline of every training run: ``svmlab train``, a tune trial, a study's
refit and so a workflow's selection.

Plain values in (params, tags, texts, the dataset's parameters, the estimator), MLflow out
through ``svmlab.tracking``: the run and its config (``run.open_run``), the dataset as its
input, one warm-up per process and solver configuration under a lock that parallel workers
share (``warm_up``), the fit through ``lifecycle.run_interruptibly``, and one place that turns
a fitted estimator into metrics, tags, trace, records, the model and the certified line
(``results``). No Hydra: the application layer composes the config and calls in.
"""
