"""A bounded cache of rows (kernel rows, transformed kernel rows, ...), filled by the caller.

A cached row is keyed by an integer (a point's index) and holds the prefix row[0:length] over
the caller's current column list (for example the solver's active points, in slot order, or all
points). ``claim_row(cache, key, q)`` returns the row's slot and how much of its prefix of q
values is cached; the caller computes only the missing tail into ``cache.buf[slot]`` (the cache
never calls back into the caller: compiled code that takes functions as values cannot be cached
reliably by numba). Rows live in one buffer of shape (n_slots, width) whose size is bounded by
the budget: when the column list outgrows ``width``, ``grow`` doubles the width and keeps only
the most recently used rows that still fit. When the caller removes column p by moving its last
column into p, ``move_column`` does the same in every cached row. No n x n matrix is ever formed.

Which row a miss evicts depends on what the rows span. Rows over every key (a solver's rows over
all points, few of them within the budget) follow the use of each key: the least used row goes,
by a count of claims per key that is halved after AGE_EVERY x n_slots claims and kept while the
row is out of the cache (ties: the least recent). Rows over a prefix (a core list, many short
rows) go least recently used first. Never the row claimed last, which the caller may still hold
beside the new one (SMO's pair of rows). Measured on the Frank-Wolfe solvers: MFW with full
rows claims the rows of the few points it keeps moving far more often than the others (ijcnn1
at C = 32, gamma = 2: 137,828 claims of 4,406 points, 524 rows of 50,000 values in 200 MB), and
plain LRU serves 38 % of the claims, the count 48 %, and no rule more than 66 % (Belady's, which
knows the future); on a 20,000-row subset (1,310 rows held) LRU 89.8 %, the count 90.6 % (a
slower aging, every 16 x n_slots claims, did better on the first, 51 %, and worse than LRU on
the second, 88 %). CVM's prefix rows (a seeded 10,000-row a9a subset) were served better by
LRU (3.56e8 kernel values computed against 3.67e8 by the count among the least recent rows),
since the rows of recently sampled candidates are the ones it claims again.
"""

from typing import NamedTuple

import numpy as np
from numba import njit

FIRST_WIDTH = 256
AGE_EVERY = 4  # claims, per slot, between two halvings of the use counts
# meta entries
HEAD, TAIL, N_USED, N_SLOTS, WIDTH, BUDGET, CLAIMS = range(7)
# stats entries: values computed, values served from the cache
EVALS, SERVED = range(2)


class RowCache(NamedTuple):
    buf: np.ndarray  # (n_slots, width) float64
    length: np.ndarray  # cached prefix length, per slot
    key: np.ndarray  # key held by each slot, or -1
    slot_of: np.ndarray  # slot of each key, or -1
    prev: np.ndarray  # previous slot (towards most recent)
    nxt: np.ndarray  # next slot (towards least recent)
    meta: np.ndarray  # HEAD, TAIL, N_USED, N_SLOTS, WIDTH, BUDGET, CLAIMS (since halving)
    stats: np.ndarray  # EVALS, SERVED
    uses: np.ndarray  # aged count of claims, per key


def new_cache(n_keys: int, cache_mb: float, width: int = FIRST_WIDTH) -> RowCache:
    """An empty cache for keys 0..n_keys-1 within cache_mb megabytes (at least two rows), with
    rows of ``width`` columns to start with."""
    budget = max(int(cache_mb * 2**20) // 8, 2 * width)
    n_slots = min(max(budget // width, 2), n_keys)
    return RowCache(
        np.empty((n_slots, width)),
        np.zeros(n_keys, np.int64),
        np.full(n_keys, -1, np.int64),
        np.full(n_keys, -1, np.int64),
        np.full(n_keys, -1, np.int64),
        np.full(n_keys, -1, np.int64),
        np.array([-1, -1, 0, n_slots, width, budget, 0], np.int64),
        np.zeros(2, np.int64),
        np.zeros(n_keys),
    )


@njit(cache=True)
def _unlink(cache, s):
    prev, nxt, meta = cache.prev, cache.nxt, cache.meta
    if prev[s] >= 0:
        nxt[prev[s]] = nxt[s]
    else:
        meta[HEAD] = nxt[s]
    if nxt[s] >= 0:
        prev[nxt[s]] = prev[s]
    else:
        meta[TAIL] = prev[s]
    prev[s] = -1
    nxt[s] = -1


@njit(cache=True)
def _push_front(cache, s):
    prev, nxt, meta = cache.prev, cache.nxt, cache.meta
    prev[s] = -1
    nxt[s] = meta[HEAD]
    if meta[HEAD] >= 0:
        prev[meta[HEAD]] = s
    meta[HEAD] = s
    if meta[TAIL] < 0:
        meta[TAIL] = s


@njit(cache=True)
def _count_use(cache, key):
    """One more claim of key; every count is halved after AGE_EVERY x n_slots claims."""
    meta, uses = cache.meta, cache.uses
    uses[key] += 1.0
    meta[CLAIMS] += 1
    if meta[CLAIMS] >= AGE_EVERY * meta[N_SLOTS]:
        uses *= 0.5
        meta[CLAIMS] = 0


@njit(cache=True)
def _victim(cache):
    """The slot to evict (module docstring): rows over every key, the least used but the most
    recent; rows over a prefix, the least recent."""
    uses, key, prev, meta = cache.uses, cache.key, cache.prev, cache.meta
    s = best = meta[TAIL]
    for _ in range(meta[N_SLOTS] if meta[WIDTH] >= cache.slot_of.shape[0] else 1):
        if s < 0 or s == meta[HEAD]:
            break
        if uses[key[s]] < uses[key[best]]:
            best = s
        s = prev[s]
    return best


@njit(cache=True)
def claim_row(cache, key, q):
    """(s, have): the slot of key's row, now the most recently used (a miss evicts the row
    `_victim` picks), and how many of its first q values are cached. The caller must compute
    cache.buf[s, have:q] (and count them in stats[EVALS]); the row then holds q values."""
    length, keys, slot_of, meta, stats = (
        cache.length,
        cache.key,
        cache.slot_of,
        cache.meta,
        cache.stats,
    )
    _count_use(cache, key)
    s = slot_of[key]
    if s >= 0:
        _unlink(cache, s)
    elif meta[N_USED] < meta[N_SLOTS]:
        s = meta[N_USED]
        meta[N_USED] += 1
    else:
        s = _victim(cache)
        _unlink(cache, s)
        slot_of[keys[s]] = -1
        length[s] = 0
    if keys[s] != key:
        keys[s] = key
        slot_of[key] = s
        length[s] = 0
    _push_front(cache, s)
    have = min(length[s], q)
    stats[SERVED] += have
    length[s] = max(length[s], q)
    return s, have


@njit(cache=True)
def move_column(cache, p, q_old):
    """Column p was removed by moving column q_old - 1 into it: do the same in every row."""
    length, buf = cache.length, cache.buf
    last = q_old - 1
    for s in range(cache.meta[N_USED]):
        if length[s] > p:
            if length[s] == q_old:
                buf[s, p] = buf[s, last]
                length[s] = last
            else:
                length[s] = p


@njit(cache=True)
def clear(cache):
    """Forget every cached value (the column list was rebuilt from scratch)."""
    for s in range(cache.meta[N_USED]):
        cache.length[s] = 0


@njit(cache=True)
def grow(cache, width):
    """The cache with rows of at least ``width`` columns within the budget, keeping the most
    recently used rows that fit."""
    length, key, slot_of, prev, nxt, meta = (
        cache.length,
        cache.key,
        cache.slot_of,
        cache.prev,
        cache.nxt,
        cache.meta,
    )
    new_width = meta[WIDTH]
    while new_width < width:
        new_width *= 2
    n_slots = min(max(meta[BUDGET] // new_width, 2), slot_of.shape[0])
    new_buf = np.empty((n_slots, new_width))
    new_length = np.zeros(n_slots, np.int64)
    new_key = np.full(n_slots, -1, np.int64)
    s, kept = meta[HEAD], 0
    while s >= 0:
        nxt_s = nxt[s]
        if kept < n_slots:
            new_buf[kept, : length[s]] = cache.buf[s, : length[s]]
            new_length[kept] = length[s]
            new_key[kept] = key[s]
            slot_of[key[s]] = kept
            kept += 1
        else:
            slot_of[key[s]] = -1
        s = nxt_s
    length[:] = 0
    key[:] = -1
    prev[:] = -1
    nxt[:] = -1
    length[:n_slots] = new_length
    key[:n_slots] = new_key
    for t in range(kept):
        prev[t] = t - 1
        nxt[t] = t + 1 if t + 1 < kept else -1
    meta[HEAD] = 0 if kept else -1
    meta[TAIL] = kept - 1
    meta[N_USED] = kept
    meta[N_SLOTS] = n_slots
    meta[WIDTH] = new_width
    return RowCache(new_buf, length, key, slot_of, prev, nxt, meta, cache.stats, cache.uses)
