"""svmlab's solver families, one package each (nesvm, pegasos, frank_wolfe, ...) plus the library
baselines. A family imports the estimator and numerics layers, never another family.

Importing any solver installs svmlab's compiled kernels (``svmlab.numerics.kernels``) as the
estimator layer's kernel blocks: decision values, norms and certificates of kernel models.
"""

from svmlab.estimator import kernels as _kernels
from svmlab.numerics import kernels as _compiled


def _spec(kernel) -> _compiled.KernelSpec:
    return _compiled.kernel_spec(kernel.name, kernel.gamma, kernel.degree, kernel.coef0)


_kernels.use_compiled(lambda kernel, A, B: _compiled.kernel_matrix(_spec(kernel), A, B),
                      lambda kernel, A, B, coef: _compiled.kernel_products(_spec(kernel), A, B,
                                                                           coef))
