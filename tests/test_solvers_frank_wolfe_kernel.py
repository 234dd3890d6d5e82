"""The L2-SVM's modified kernel K~ as rows of the shared LRU cache: values against
scikit-learn's kernels (dense and CSR, short and vectorised rows), the dense-rows layout, and
cached rows through budget, eviction, prefix extension, remapping and growth."""

import numpy as np
import pytest
import scipy.sparse as sp

from svmlab.numerics.kernels import VECTOR_EXP_FROM, rows_layout
from svmlab.solvers.frank_wolfe import row_cache as rc
from svmlab.solvers.frank_wolfe.kernel import diagonal, modified_kernel, modified_row
from svmlab.solvers.frank_wolfe.loops import row_of
from test_solvers_frank_wolfe import ktilde, problem

KERNELS = [
    ("linear", 1.0, 3, 0.0),
    ("rbf", 0.7, 3, 0.0),
    ("poly", 0.3, 3, 1.0),
    ("poly", 0.5, 2, 0.0),
]


def sparse_problem():
    X, y = problem(m=40, n_features=6)
    X[np.abs(X) < 0.7] = 0.0
    return X, y


@pytest.mark.parametrize("kernel, gamma, degree, coef0", KERNELS)
@pytest.mark.parametrize("layout", ["dense", "csr"])
def test_rows_equal_the_modified_kernel_of_scikit_learn(kernel, gamma, degree, coef0, layout):
    X, y = sparse_problem()
    data = sp.csr_matrix(X) if layout == "csr" else X
    mk = modified_kernel(data, y, kernel, gamma, degree, coef0, 2.5)
    Q = ktilde(X, y, 2.5, kernel=kernel, gamma=gamma, degree=degree, coef0=coef0)
    cols = np.array([3, 0, 7, 3, 39])
    out = np.empty(len(cols))
    for i in (0, 3, 39):
        assert modified_row(mk, i, cols, 0, len(cols), out) == len(cols)
        np.testing.assert_allclose(out, Q[i, cols], rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(diagonal(mk), Q.diagonal(), rtol=1e-13)


@pytest.mark.parametrize("kernel, gamma, degree, coef0", KERNELS)
@pytest.mark.parametrize("layout", ["dense", "csr"])
def test_long_rows_equal_the_modified_kernel_of_scikit_learn(kernel, gamma, degree, coef0, layout):
    """Rows of at least VECTOR_EXP_FROM values take the vectorised path (numpy's exp for rbf);
    the sparse row 17, with one nonzero, is computed by columns."""
    X, y = problem(m=300, n_features=6, seed=3)
    X[np.abs(X) < 0.7] = 0.0
    X[17] = [0.0, 1.3, 0.0, 0.0, 0.0, 0.0]
    data = sp.csr_matrix(X) if layout == "csr" else X
    mk = modified_kernel(data, y, kernel, gamma, degree, coef0, 2.5)
    Q = ktilde(X, y, 2.5, kernel=kernel, gamma=gamma, degree=degree, coef0=coef0)
    cols = np.random.default_rng(0).permutation(300)
    out = np.full(300, np.nan)
    assert modified_row(mk, 17, cols, 10, 10 + VECTOR_EXP_FROM, out) == VECTOR_EXP_FROM
    assert np.isnan(out[:10]).all() and np.isnan(out[10 + VECTOR_EXP_FROM :]).all()
    span = slice(10, 10 + VECTOR_EXP_FROM)
    np.testing.assert_allclose(out[span], Q[17, cols[span]], rtol=1e-13, atol=1e-14)
    modified_row(mk, 17, cols, 0, 300, out)
    np.testing.assert_allclose(out, Q[17, cols], rtol=1e-13, atol=1e-14)


def test_input_is_read_as_dense_rows_from_a_quarter_of_nonzeros_else_as_csr_in_both_formats():
    """Dense input and its CSR copy are read in the same layout, so their kernel values agree
    bit for bit."""
    X = np.zeros((8, 4))
    X[:, 0] = 1.0  # 8 of 32 entries: a quarter
    dense = rows_layout(sp.csr_matrix(X))
    assert isinstance(dense, np.ndarray)
    np.testing.assert_array_equal(dense, X)
    assert rows_layout(X) is X
    X[0, 0] = 0.0  # 7 of 32: CSR, from either format
    from_csr, from_dense = rows_layout(sp.csr_matrix(X)), rows_layout(X)
    assert sp.issparse(from_csr) and sp.issparse(from_dense)
    for part in ("data", "indices", "indptr"):
        np.testing.assert_array_equal(getattr(from_dense, part), getattr(from_csr, part))


def cache_for(m, cache_mb, width=rc.FIRST_WIDTH):
    X, y = sparse_problem()
    mk = modified_kernel(X[:m], y[:m], "rbf", 0.7, 3, 0.0, 2.5)
    return mk, rc.new_cache(m, cache_mb, width), ktilde(X[:m], y[:m], 2.5, gamma=0.7)


def test_cached_rows_are_exact_and_counted():
    mk, cache, Q = cache_for(40, 1.0)
    core = np.array([5, 1, 9, 30, 2, 11])
    np.testing.assert_allclose(row_of(cache, mk, 7, core, 3)[:3], Q[7, core[:3]], rtol=1e-13)
    assert tuple(cache.stats) == (3, 0)
    row = row_of(cache, mk, 7, core, 6)  # extends the prefix: only 3 new values
    np.testing.assert_allclose(row[:6], Q[7, core], rtol=1e-13)
    assert tuple(cache.stats) == (6, 3)


def test_cache_of_full_width_rows_fits_the_budget():
    mk, cache, Q = cache_for(40, 3 * 40 * 8 / 2**20, width=40)  # room for 3 rows of 40
    assert cache.buf.shape == (3, 40)
    points = np.arange(40)
    for i in (4, 5, 6, 7):
        row = row_of(cache, mk, i, points, 40)
    np.testing.assert_allclose(row, Q[7], rtol=1e-13)
    assert cache.slot_of[4] == -1 and tuple(cache.stats) == (160, 0)


def test_removing_a_core_slot_remaps_every_cached_row():
    mk, cache, Q = cache_for(40, 1.0)
    core = np.array([5, 1, 9, 30, 2])
    for i, q in ((7, 5), (8, 3), (12, 1)):  # a full row, a partial one and a short one
        row_of(cache, mk, i, core, q)
    full, partial, short = cache.slot_of[[7, 8, 12]]
    rc.move_column(cache, 1, 5)  # slot 4 moves into slot 1
    core = np.array([5, 2, 9, 30])
    assert (cache.length[full], cache.length[partial], cache.length[short]) == (4, 1, 1)
    np.testing.assert_allclose(cache.buf[full, :4], Q[7, core], rtol=1e-13)
    np.testing.assert_allclose(row_of(cache, mk, 8, core, 4)[:4], Q[8, core], rtol=1e-13)


def test_growing_keeps_the_most_recent_rows_within_the_budget():
    mk, cache, Q = cache_for(40, 4 * rc.FIRST_WIDTH * 8 / 2**20)  # 4 rows of FIRST_WIDTH
    core = np.arange(3)
    for i in (10, 11, 12, 13):
        row_of(cache, mk, i, core, 3)
    cache = rc.grow(cache, rc.FIRST_WIDTH + 1)
    assert cache.buf.shape == (2, 2 * rc.FIRST_WIDTH)
    slot_of = cache.slot_of
    assert slot_of[13] >= 0 and slot_of[12] >= 0 and slot_of[11] == -1 and slot_of[10] == -1
    np.testing.assert_allclose(cache.buf[slot_of[13], :3], Q[13, :3], rtol=1e-13)
    served = cache.stats[rc.SERVED]
    row_of(cache, mk, 12, core, 3)
    assert cache.stats[rc.SERVED] == served + 3
