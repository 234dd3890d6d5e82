"""Frank-Wolfe's kernel row cache: prefixes, its eviction rules, moved columns and growth."""

import numpy as np
import pytest

from svmlab.solvers.frank_wolfe import row_cache as rc


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
def test_rows_over_every_key_go_least_used_first_and_prefix_rows_least_recent(n_keys, keeps_3):
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
        np.testing.assert_array_equal(cache.buf[s, : len(wide)], key * 1000.0 + wide)
