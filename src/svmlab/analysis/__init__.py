"""Analysis stage: turn many MLflow runs into a defensible claim.

Runs (or a published results table) become a block x treatment table per measure
(:mod:`~svmlab.analysis.measurements`, :mod:`~svmlab.analysis.table`); the Friedman /
Iman-Davenport omnibus test, Nemenyi and Wilcoxon post-hoc tests and the Bayesian signed-rank
test follow Demšar (2006) and Benavoli et al. (2016, 2017); the results are logged as an MLflow
run (:mod:`~svmlab.analysis.stage`). This package reads MLflow and never imports a solver.
"""
