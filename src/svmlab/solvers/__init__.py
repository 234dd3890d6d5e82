"""svmlab solvers: binary scikit-learn classifiers, one module per paper.

Every solver subclasses `base.SVMClassifier` (usually through `models.LinearSVMClassifier` or
`models.KernelSVMClassifier`), records its convergence in a `base.Trace`, and reports the
objective values of `objectives`, so that runs of different solvers compare.
"""
