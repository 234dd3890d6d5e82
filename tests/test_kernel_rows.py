"""The kernel-row module: K~ values against scikit-learn's kernels (dense and CSR), the LRU row
cache (budget, eviction order, prefix extension, counters) and its remapping and growth."""

import numpy as np
import pytest
import scipy.sparse as sp

from svmlab.numerics import kernel_rows as kr
from test_frank_wolfe import ktilde, problem

KERNELS = [("linear", 1.0, 3, 0.0), ("rbf", 0.7, 3, 0.0), ("poly", 0.3, 3, 1.0),
           ("poly", 0.5, 2, 0.0)]


def sparse_problem():
    X, y = problem(m=40, n_features=6)
    X[np.abs(X) < 0.7] = 0.0
    return X, y


@pytest.mark.parametrize("kernel, gamma, degree, coef0", KERNELS)
@pytest.mark.parametrize("layout", ["dense", "csr"])
def test_rows_equal_the_modified_kernel_of_scikit_learn(kernel, gamma, degree, coef0, layout):
    X, y = sparse_problem()
    data = sp.csr_matrix(X) if layout == "csr" else X
    kx = kr.kernel_data(data, y, kernel, gamma, degree, coef0, 2.5)
    Q = ktilde(X, y, 2.5, kernel=kernel, gamma=gamma, degree=degree, coef0=coef0)
    cols = np.array([3, 0, 7, 3, 39])
    out = np.empty(len(cols))
    for i in (0, 3, 39):
        assert kr.fill_row(kx, i, cols, 0, len(cols), out) == len(cols)
        np.testing.assert_allclose(out, Q[i, cols], rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(kr.diagonal(kx), Q.diagonal(), rtol=1e-13)


@pytest.mark.parametrize("kernel, gamma, degree, coef0", KERNELS)
@pytest.mark.parametrize("layout", ["dense", "csr"])
def test_long_rows_equal_the_modified_kernel_of_scikit_learn(kernel, gamma, degree, coef0,
                                                             layout):
    """Rows of at least VECTOR_EXP_FROM values take the vectorised path (numpy's exp for rbf);
    the sparse row 17, with one nonzero, is computed by columns (one column of about 150
    nonzeros instead of the 300 rows' 900)."""
    X, y = problem(m=300, n_features=6, seed=3)
    X[np.abs(X) < 0.7] = 0.0
    X[17] = [0.0, 1.3, 0.0, 0.0, 0.0, 0.0]
    data = sp.csr_matrix(X) if layout == "csr" else X
    kx = kr.kernel_data(data, y, kernel, gamma, degree, coef0, 2.5)
    Q = ktilde(X, y, 2.5, kernel=kernel, gamma=gamma, degree=degree, coef0=coef0)
    cols = np.random.default_rng(0).permutation(300)
    out = np.full(300, np.nan)
    assert kr.fill_row(kx, 17, cols, 10, 10 + kr.VECTOR_EXP_FROM, out) == kr.VECTOR_EXP_FROM
    assert np.isnan(out[:10]).all() and np.isnan(out[10 + kr.VECTOR_EXP_FROM:]).all()
    span = slice(10, 10 + kr.VECTOR_EXP_FROM)
    np.testing.assert_allclose(out[span], Q[17, cols[span]], rtol=1e-13, atol=1e-14)
    kr.fill_row(kx, 17, cols, 0, 300, out)
    np.testing.assert_allclose(out, Q[17, cols], rtol=1e-13, atol=1e-14)


def test_csr_input_is_read_as_dense_rows_from_a_quarter_of_nonzeros():
    X = np.zeros((8, 4))
    X[:, 0] = 1.0                                          # 8 of 32 entries: a quarter
    dense = kr.rows_layout(sp.csr_matrix(X))
    assert isinstance(dense, np.ndarray)
    np.testing.assert_array_equal(dense, X)
    X[0, 0] = 0.0                                          # 7 of 32: stays CSR
    assert sp.issparse(kr.rows_layout(sp.csr_matrix(X)))
    assert kr.rows_layout(X) is X


def test_cache_of_full_width_rows_fits_the_budget():
    X, y = sparse_problem()
    kx = kr.kernel_data(X, y, "rbf", 0.7, 3, 0.0, 2.5)
    buf, lru = kr.new_cache(40, 3 * 40 * 8 / 2**20, width=40)   # room for 3 rows of 40
    assert buf.shape == (3, 40)
    points = np.arange(40)
    for i in (4, 5, 6, 7):
        s = kr.cache_row(buf, lru, kx, i, points, 40)
    np.testing.assert_allclose(buf[s], ktilde(X, y, 2.5, gamma=0.7)[7], rtol=1e-13)
    assert lru[2][4] == -1 and tuple(lru[6]) == (160, 0)


def cache_for(m, cache_mb):
    X, y = sparse_problem()
    kx = kr.kernel_data(X[:m], y[:m], "rbf", 0.7, 3, 0.0, 2.5)
    buf, lru = kr.new_cache(m, cache_mb)
    return kx, buf, lru, ktilde(X[:m], y[:m], 2.5, gamma=0.7)


def test_cache_serves_prefixes_and_counts_evaluations():
    kx, buf, lru, Q = cache_for(40, 1.0)
    core = np.array([5, 1, 9, 30, 2, 11])
    s = kr.cache_row(buf, lru, kx, 7, core, 3)
    np.testing.assert_allclose(buf[s, :3], Q[7, core[:3]], rtol=1e-13)
    assert tuple(lru[6]) == (3, 0)
    s = kr.cache_row(buf, lru, kx, 7, core, 6)  # extends the prefix: only 3 new values
    np.testing.assert_allclose(buf[s, :6], Q[7, core], rtol=1e-13)
    assert tuple(lru[6]) == (6, 3)
    kr.cache_row(buf, lru, kx, 7, core, 6)
    assert tuple(lru[6]) == (6, 9)


def test_budget_bounds_the_rows_and_the_least_recently_used_row_is_evicted():
    kx, buf, lru, _ = cache_for(40, 5 * kr.FIRST_WIDTH * 8 / 2**20)  # room for 5 rows
    assert buf.shape == (5, kr.FIRST_WIDTH) and buf.nbytes <= 5 * kr.FIRST_WIDTH * 8
    core = np.arange(4)
    for i in range(5):
        kr.cache_row(buf, lru, kx, i, core, 4)
    kr.cache_row(buf, lru, kx, 0, core, 4)   # 0 becomes the most recent; 1 is now the oldest
    kr.cache_row(buf, lru, kx, 20, core, 4)  # evicts 1
    slot_of = lru[2]
    assert slot_of[1] == -1 and all(slot_of[i] >= 0 for i in (0, 2, 3, 4, 20))
    evals = lru[6][0]
    kr.cache_row(buf, lru, kx, 1, core, 4)   # a miss again
    assert lru[6][0] == evals + 4


def test_a_budget_below_two_rows_still_holds_two():
    buf = cache_for(40, 1e-9)[1]
    assert buf.shape[0] == 2


def test_removing_a_core_slot_remaps_every_cached_row():
    kx, buf, lru, Q = cache_for(40, 1.0)
    core = np.array([5, 1, 9, 30, 2])
    full = kr.cache_row(buf, lru, kx, 7, core, 5)
    partial = kr.cache_row(buf, lru, kx, 8, core, 3)
    short = kr.cache_row(buf, lru, kx, 12, core, 1)
    kr.remove_core_slot(buf, lru, 1, 5)        # slot 4 moves into slot 1
    core = np.array([5, 2, 9, 30])
    length = lru[0]
    assert (length[full], length[partial], length[short]) == (4, 1, 1)
    np.testing.assert_allclose(buf[full, :4], Q[7, core], rtol=1e-13)
    s = kr.cache_row(buf, lru, kx, 8, core, 4)
    np.testing.assert_allclose(buf[s, :4], Q[8, core], rtol=1e-13)


def test_growing_keeps_the_most_recent_rows_within_the_budget():
    kx, buf, lru, Q = cache_for(40, 4 * kr.FIRST_WIDTH * 8 / 2**20)  # 4 rows of FIRST_WIDTH
    core = np.arange(3)
    for i in (10, 11, 12, 13):
        kr.cache_row(buf, lru, kx, i, core, 3)
    buf = kr.grow_cache(buf, lru, kr.FIRST_WIDTH + 1)
    assert buf.shape == (2, 2 * kr.FIRST_WIDTH)
    slot_of = lru[2]
    assert slot_of[13] >= 0 and slot_of[12] >= 0 and slot_of[11] == -1 and slot_of[10] == -1
    np.testing.assert_allclose(buf[slot_of[13], :3], Q[13, :3], rtol=1e-13)
    served = lru[6][1]
    kr.cache_row(buf, lru, kx, 12, core, 3)
    assert lru[6][1] == served + 3
