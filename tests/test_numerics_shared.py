"""The shared numba pieces: rows of dense/CSR data, kernel values between any two point sets,
the generic LRU row cache (checked against scikit-learn's pairwise kernels and a plain dict)."""

import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.metrics.pairwise import pairwise_kernels

from svmlab.numerics import row_cache as rc
from svmlab.numerics.kernels import (
    VECTOR_EXP_FROM,
    kernel_spec,
    kernel_values,
    point_set,
    self_kernel,
)
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


def _row(cache, key, cols, q, computed):
    """The cache's row for key over cols[:q], filling what it lacks with key * 1000 + column
    (the caller's part of the protocol); counts the computed values in ``computed``."""
    s, have = rc.claim_row(cache, key, q)
    cache.buf[s, have:q] = key * 1000.0 + cols[have:q]
    computed.append(q - have)
    return s


def test_row_cache_serves_prefixes_and_evicts_least_recent():
    cache = rc.new_cache(n_keys=10, cache_mb=0.0, width=4)  # budget: two rows of four
    cols = np.arange(4, dtype=np.int64)
    computed = []
    s = _row(cache, 3, cols, 2, computed)
    np.testing.assert_array_equal(cache.buf[s, :2], [3000.0, 3001.0])
    s = _row(cache, 3, cols, 4, computed)  # only the tail is computed
    np.testing.assert_array_equal(cache.buf[s, :4], 3000.0 + np.arange(4))
    assert computed == [2, 2] and cache.stats[rc.SERVED] == 2
    _row(cache, 5, cols, 4, computed)
    _row(cache, 3, cols, 4, computed)  # hit: 3 becomes most recent
    _row(cache, 7, cols, 4, computed)  # evicts 5, not 3
    assert computed[-2:] == [0, 4]
    assert cache.slot_of[5] == -1 and cache.slot_of[3] >= 0 and cache.slot_of[7] >= 0


@pytest.mark.parametrize("n_keys, keeps_3", [(32, True), (100, False)])
def test_rows_over_every_key_go_least_used_first_and_prefix_rows_least_recent(n_keys,
                                                                                keeps_3):
    """Key 3 is claimed three times, then 5, 6 and 7 once. Rows of 32 values over 32 keys: 7's
    miss evicts 5, the least used of the rows but the most recent (6), where LRU would evict 3;
    rows of 32 values over a prefix of 100 keys: 3, the least recent."""
    cache = rc.new_cache(n_keys=n_keys, cache_mb=3 * 32 * 8 / 2**20, width=32)  # three rows
    cols = np.arange(32, dtype=np.int64)
    computed = []
    for key in (3, 3, 3, 5, 6, 7):
        _row(cache, key, cols, 32, computed)
    assert (cache.slot_of[3] >= 0) == keeps_3 and (cache.slot_of[5] >= 0) != keeps_3
    assert cache.slot_of[6] >= 0 and cache.slot_of[7] >= 0 and cache.uses[3] == 3.0


def test_row_cache_never_evicts_the_row_claimed_last():
    """With two rows, a miss evicts the older one even when it is the more used: the caller
    may still be reading the row it claimed last (SMO holds two)."""
    cache = rc.new_cache(n_keys=10, cache_mb=0.0, width=32)  # budget: two rows
    cols = np.arange(32, dtype=np.int64)
    computed = []
    for key in (3, 5, 5, 5, 3, 7):
        _row(cache, key, cols, 32, computed)
    assert cache.slot_of[5] == -1 and cache.slot_of[3] >= 0 and cache.slot_of[7] >= 0


def test_row_cache_halves_every_use_count_after_age_every_claims_per_slot():
    cache = rc.new_cache(n_keys=10, cache_mb=0.0, width=32)  # two slots
    cols = np.arange(32, dtype=np.int64)
    computed = []
    _row(cache, 5, cols, 32, computed)
    for _ in range(2 * rc.AGE_EVERY - 2):
        _row(cache, 3, cols, 32, computed)
    assert (cache.uses[3], cache.uses[5]) == (2 * rc.AGE_EVERY - 2, 1.0)
    _row(cache, 3, cols, 32, computed)  # the 2 x AGE_EVERY-th claim
    assert (cache.uses[3], cache.uses[5]) == (rc.AGE_EVERY - 0.5, 0.5)
    assert cache.meta[rc.CLAIMS] == 0


def test_row_cache_move_column_and_grow_keep_rows_exact():
    rng = np.random.default_rng(0)
    cache = rc.new_cache(n_keys=50, cache_mb=0.01, width=8)
    cols = np.arange(8, dtype=np.int64)
    computed = []
    for key in rng.integers(0, 50, 40):
        _row(cache, key, cols, 8, computed)
    cols[2] = cols[7]  # remove column 2 by moving the last column into it
    rc.move_column(cache, 2, 8)
    wide = np.concatenate([cols[:7], np.arange(100, 120)])
    cache = rc.grow(cache, len(wide))
    assert cache.buf.shape[1] >= len(wide)
    for key in rng.integers(0, 50, 40):
        s = _row(cache, key, wide, len(wide), computed)
        np.testing.assert_array_equal(cache.buf[s, :len(wide)], key * 1000.0 + wide)


CACHE_PROBE = """
import warnings
from sklearn.datasets import make_classification
from svmlab.numerics.rows import loss_pass
from svmlab.solvers.frank_wolfe import ModifiedFrankWolfe, loops
from svmlab.solvers.nesvm import NESVM
warnings.simplefilter("ignore")
X, y = make_classification(100, 4, random_state=0)
NESVM(max_iter=5).fit(X, y)
NESVM(model="lssvm", max_iter=5).fit(X, y)
ModifiedFrankWolfe(max_iter=5).fit(X, y)
for f in (loss_pass, loops.run_frank_wolfe):
    print(f.__name__, sum(f.stats.cache_hits.values()), sum(f.stats.cache_misses.values()))
"""


def test_a_new_process_loads_the_loops_from_numbas_cache():
    """The losses and the row filler are chosen by type, not passed as function values (whose
    numba type changes in every process and would defeat the on-disk cache)."""
    for _ in range(2):  # the first run may compile and store; the second must only load
        out = subprocess.run([sys.executable, "-c", CACHE_PROBE], capture_output=True,
                             text=True, check=True).stdout
    counts = {name: (int(hits), int(misses)) for name, hits, misses in
              (line.split() for line in out.splitlines())}
    assert counts == {"loss_pass": (2, 0), "run_frank_wolfe": (1, 0)}
