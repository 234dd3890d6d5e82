"""The numerics layer: @njit(cache=True) pieces shared by two or more solver families.

It imports numpy and numba only (and svmlab.errors): no estimator, no tracking.
"""
