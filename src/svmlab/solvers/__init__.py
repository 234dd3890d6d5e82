"""svmlab's solver families, one package each (nesvm, pegasos, frank_wolfe, ...) plus the library
baselines. A family imports the estimator and numerics layers, never another family.

Importing any solver installs svmlab's compiled kernels (``svmlab.numerics.kernels``, imported
at the first kernel block, so that a solver that needs none imports no numba) as the estimator
layer's kernel blocks: decision values, norms and certificates of kernel models.
"""

from svmlab.estimator import kernels as _kernels


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
