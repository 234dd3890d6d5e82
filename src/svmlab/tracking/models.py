"""Fitted estimators as MLflow models (scikit-learn flavor, serialized by skops)."""

from __future__ import annotations

from importlib.metadata import version

import mlflow
from mlflow.models import infer_signature

MODEL_REQUIREMENTS = ("scikit-learn", "numpy", "scipy", "skops")  # a model's pip requirements
TRUSTED_MODULES = ("svmlab.", "scipy.sparse.")  # scipy.sparse: support vectors of CSR input


def log_sklearn_model(estimator, X_example, name: str = "model") -> None:
    """Log ``estimator`` to the active run with signature and input example."""
    example = X_example.toarray() if hasattr(X_example, "toarray") else X_example
    signature = infer_signature(example, estimator.predict(example))
    mlflow.sklearn.log_model(estimator, name=name, signature=signature, input_example=example,
                             pip_requirements=model_requirements(estimator),
                             skops_trusted_types=trusted_types(estimator))


def model_requirements(estimator) -> list[str]:
    """What loading the model needs, pinned to the versions in use.

    Given explicitly: otherwise MLflow infers the list by loading the model in a subprocess,
    about 9 s a run, most of the time of a small job in a sweep.
    """
    names = [*MODEL_REQUIREMENTS, *(["svmlab"] if type(estimator).__module__.startswith("svmlab.")
                                    else [])]
    return [f"{name}=={version(name)}" for name in names]


def trusted_types(estimator) -> list[str]:
    """The types in the model that skops (MLflow's serializer) must be told to trust: the
    logged estimator's own class (a solver from outside svmlab too), svmlab's classes, and
    scipy's sparse matrices (the support vectors of a model trained on CSR input; skops stores
    them as arrays, which load without running code).

    Any other type skops does not know stays untrusted, so logging such a model still fails.
    """
    import skops.io

    own = f"{type(estimator).__module__}.{type(estimator).__qualname__}"
    found = skops.io.get_untrusted_types(data=skops.io.dumps(estimator))
    return [name for name in found if name == own or name.startswith(TRUSTED_MODULES)]
