"""Fitted estimators as MLflow models (scikit-learn flavor, serialized by skops).

A model is logged with its signature and explicit, pinned requirements, without an input
example: with one, MLflow loads the saved model back and predicts on the example to check that
it could be served, and checks the installed packages against the requirements a second time,
about a third of what logging the model costs in a sweep's warm worker. The signature says what
the example would (a float array of the training data's width in, labels out).
"""

from __future__ import annotations

import functools
from importlib.metadata import version

import mlflow
from mlflow.models import infer_signature

MODEL_REQUIREMENTS = ("scikit-learn", "numpy", "scipy", "skops")  # a model's pip requirements
TRUSTED_MODULES = ("svmlab.", "scipy.sparse.")  # scipy.sparse: support vectors of CSR input


def log_sklearn_model(estimator, X_example, name: str = "model") -> None:
    """Log ``estimator`` to the active run with its signature, inferred from ``X_example``."""
    example = X_example.toarray() if hasattr(X_example, "toarray") else X_example
    signature = infer_signature(example, estimator.predict(example))
    mlflow.sklearn.log_model(
        estimator,
        name=name,
        signature=signature,
        pip_requirements=model_requirements(estimator),
        skops_trusted_types=trusted_types(estimator),
    )


def model_requirements(estimator) -> list[str]:
    """What loading the model needs, pinned to the versions in use.

    Given explicitly: otherwise MLflow infers the list by loading the model in a subprocess,
    about 9 s a run, most of the time of a small job in a sweep.
    """
    names = [
        *MODEL_REQUIREMENTS,
        *(["svmlab"] if type(estimator).__module__.startswith("svmlab.") else []),
    ]
    return [pinned(name) for name in names]


@functools.cache
def pinned(name: str) -> str:
    """``name==<installed version>``: read once per process (the installed packages do not
    change while it runs)."""
    return f"{name}=={version(name)}"


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
