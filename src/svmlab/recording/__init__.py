"""The fit-and-record pipeline of every training run: ``svmlab train``, a sweep's job, a tune
trial, a study's refit and so a workflow's selection.

Plain values in (the resolved config as a nested dict, the dataset, the estimator), MLflow out
through ``svmlab.tracking``: what a run records before its fit and the store's prelude
(``config``), the run opened with its config and dataset (``run.open_run``), one warm-up per
process and solver configuration under a lock that parallel workers share (``warm_up``), the
fit through ``lifecycle.run_interruptibly``, and one place that turns a fitted estimator into
its record, built without a store and written in one call: metrics, tags, trace, records, and
the certified line (``results``). No Hydra: the application layer composes the config and
calls in.
"""
