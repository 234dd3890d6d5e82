"""svmlab's solver families, one package each (nesvm, pegasos, frank_wolfe, ...) plus the library
baselines, and the solver registry. A family imports the estimator and numerics layers, never
another family.

A solver declares itself once, on its class (`SVMClassifier.name`, `test_config`,
`test_truncated`, `gap_tol`); `registered` finds it by importing every module of this package
(`pkgutil.walk_packages`), so adding a solver is one module and its tests. Discovery lives here,
not in the estimator layer: this package owns the families and is the one place that loads them
all, while the estimator layer imports no solver. A declared class defined outside this package
(a user's or a test's) is registered as soon as its module is imported. `svmlab train` reads
the same declarations from the source instead (`svmlab.app.config.options`), to compose a config
without importing any solver.

Importing any solver installs svmlab's compiled kernels (``svmlab.numerics.kernels``, imported
at the first kernel block, so that a solver that needs none imports no numba) as the estimator
layer's kernel blocks: decision values, norms and certificates of kernel models.
"""

import importlib
import pkgutil

from svmlab.estimator import kernels as _kernels
from svmlab.estimator.base import SVMClassifier, declared_solvers


def _spec(kernel):
    from svmlab.numerics.kernels import kernel_spec

    return kernel_spec(kernel.name, kernel.gamma, kernel.degree, kernel.coef0)


def _matrix(kernel, A, B):
    from svmlab.numerics.kernels import kernel_matrix

    return kernel_matrix(_spec(kernel), A, B)


def _products(kernel, A, B, coef):
    from svmlab.numerics.kernels import kernel_products

    return kernel_products(_spec(kernel), A, B, coef)


_kernels.use_compiled(_matrix, _products)


def registered() -> dict[str, type[SVMClassifier]]:
    """Every solver by name, sorted: every module of this package imported, the classes that
    declare a name (`svmlab.estimator.base.declared_solvers`)."""
    for module in pkgutil.walk_packages(__path__, f"{__name__}."):
        importlib.import_module(module.name)
    return declared_solvers()


def target(cls: type) -> str:
    """The import path Hydra's ``_target_`` names ``cls`` by: its family's package where that
    exports it (svmlab.solvers.alm.SVMALM), else its module."""
    package = cls.__module__.rpartition(".")[0]
    if (
        package.startswith(f"{__name__}.")
        and getattr(importlib.import_module(package), cls.__name__, None) is cls
    ):
        return f"{package}.{cls.__name__}"
    return f"{cls.__module__}.{cls.__qualname__}"
