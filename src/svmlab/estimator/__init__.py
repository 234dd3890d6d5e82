"""The estimator layer: the contract every solver meets (numpy, scipy and scikit-learn only).

`base.SVMClassifier` validates input, maps labels, times the solver alone and certifies the
result; `models` provides linear models and kernel expansions; `trace` the convergence record;
`objectives` and `certificates` the primal values and duality gaps by formulation; `kernel_names`
names the kernels.
"""
