"""The shared numba pieces: rows of dense/CSR data, kernel values between any two point sets,
the generic LRU row cache (checked against scikit-learn's pairwise kernels and a plain dict)."""

import numpy as np
import pytest
import scipy.sparse as sp
from numba import njit
from sklearn.metrics.pairwise import pairwise_kernels

from svmlab.numerics import row_cache as rc
from svmlab.numerics.kernels import (VECTOR_EXP_FROM, kernel_spec, kernel_values, point_set,
                                     self_kernel)
from svmlab.numerics.rows import row_norms, rows_of


def _data(n, p, seed, density=0.3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p)) * (rng.random((n, p)) < density)
    return X


@pytest.mark.parametrize("sparse", [False, True])
def test_row_norms_match_numpy(sparse):
    X = _data(30, 7, 0)
    inf_norm, sq_norm = row_norms(rows_of(sp.csr_matrix(X) if sparse else X))
    np.testing.assert_allclose(inf_norm, np.abs(X).max(axis=1), rtol=1e-15)
    np.testing.assert_allclose(sq_norm, (X ** 2).sum(axis=1), rtol=1e-13)


KERNELS = [("linear", {}), ("rbf", {"gamma": 0.3}),
           ("poly", {"gamma": 0.5, "degree": 3, "coef0": 1.0})]


@pytest.mark.parametrize("name,params", KERNELS)
@pytest.mark.parametrize("a_sparse,b_sparse", [(False, False), (False, True), (True, False),
                                               (True, True)])
@pytest.mark.parametrize("n_b", [5, 3 * VECTOR_EXP_FROM])  # scalar and vectorised paths
def test_kernel_values_between_two_point_sets(name, params, a_sparse, b_sparse, n_b):
    A, B = _data(6, 11, 1), _data(n_b, 11, 2, density=0.5)
    pa = point_set(sp.csr_matrix(A) if a_sparse else A)
    pb = point_set(sp.csr_matrix(B) if b_sparse else B)
    spec = kernel_spec(name, params.get("gamma", 1.0), params.get("degree", 3),
                       params.get("coef0", 0.0))
    expected = pairwise_kernels(A, B, metric=name, **params)
    cols = np.random.default_rng(3).permutation(n_b).astype(np.int64)
    out = np.full(n_b, np.nan)
    for i in range(len(A)):
        assert kernel_values(spec, pa, i, pb, cols, 2, n_b, out) == n_b - 2
        np.testing.assert_allclose(out[2:], expected[i, cols[2:]], rtol=1e-12, atol=1e-14)
        assert np.isnan(out[:2]).all()  # values outside [start, stop) are not touched
    np.testing.assert_allclose(self_kernel(spec, pa), np.diag(pairwise_kernels(A, metric=name,
                                                                                 **params)),
                               rtol=1e-12)


@njit(cache=True)
def _fill_index_sum(data, key, cols, start, stop, out):
    """Test filler: row(key)[t] = key * 1000 + cols[t] + data[0], counting its calls in data."""
    data[1] += 1.0
    for t in range(start, stop):
        out[t] = key * 1000.0 + cols[t] + data[0]
    return stop - start


def test_row_cache_serves_prefixes_and_evicts_least_recent():
    cache = rc.new_cache(n_keys=10, cache_mb=0.0, width=4)  # budget: two rows of four
    cols = np.arange(4, dtype=np.int64)
    data = np.array([0.5, 0.0])
    s = rc.cached_row(cache, 3, cols, 2, _fill_index_sum, data)
    np.testing.assert_array_equal(cache.buf[s, :2], [3000.5, 3001.5])
    s = rc.cached_row(cache, 3, cols, 4, _fill_index_sum, data)  # only the tail is computed
    np.testing.assert_array_equal(cache.buf[s, :4], 3000.5 + np.arange(4))
    assert cache.stats[rc.EVALS] == 4 and cache.stats[rc.SERVED] == 2
    rc.cached_row(cache, 5, cols, 4, _fill_index_sum, data)
    rc.cached_row(cache, 3, cols, 4, _fill_index_sum, data)  # hit: 3 becomes most recent
    rc.cached_row(cache, 7, cols, 4, _fill_index_sum, data)  # evicts 5, not 3
    assert cache.slot_of[5] == -1 and cache.slot_of[3] >= 0 and cache.slot_of[7] >= 0


def test_row_cache_move_column_and_grow_keep_rows_exact():
    rng = np.random.default_rng(0)
    cache = rc.new_cache(n_keys=50, cache_mb=0.01, width=8)
    cols = np.arange(8, dtype=np.int64)
    data = np.array([0.0, 0.0])
    for key in rng.integers(0, 50, 40):
        rc.cached_row(cache, key, cols, 8, _fill_index_sum, data)
    cols[2] = cols[7]  # remove column 2 by moving the last column into it
    rc.move_column(cache, 2, 8)
    wide = np.concatenate([cols[:7], np.arange(100, 120)])
    cache = rc.grow(cache, len(wide))
    assert cache.buf.shape[1] >= len(wide)
    for key in rng.integers(0, 50, 40):
        s = rc.cached_row(cache, key, wide, len(wide), _fill_index_sum, data)
        np.testing.assert_array_equal(cache.buf[s, :len(wide)], key * 1000.0 + wide)
