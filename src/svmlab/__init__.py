"""svmlab: reproducible, MLflow-tracked experiments with fast SVM solvers."""

__version__ = "0.1.0"
