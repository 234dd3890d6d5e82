"""The kernels (``kernel=<name>``) the kernel solvers take, and the data-dependent gamma rules.

The solvers themselves are declared on their classes and found by `svmlab.solvers.registered`.
"""

KERNELS = ("linear", "rbf", "poly")  # conf/kernel/<name>.yaml and numerics.kernels follow this list
GAMMA_RULES = ("scale", "auto", "avg_sq_dist")  # data-dependent gammas (estimator.kernels)
