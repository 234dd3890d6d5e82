"""The shared numba pieces: rows of dense/CSR data and kernel values between any two point sets
(checked against scikit-learn's pairwise kernels)."""

import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.metrics.pairwise import pairwise_kernels

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
    np.testing.assert_allclose(sq_norm, (X**2).sum(axis=1), rtol=1e-13)


KERNELS = [
    ("linear", {}),
    ("rbf", {"gamma": 0.3}),
    ("poly", {"gamma": 0.5, "degree": 3, "coef0": 1.0}),
]


@pytest.mark.parametrize("name,params", KERNELS)
@pytest.mark.parametrize(
    "a_sparse,b_sparse", [(False, False), (False, True), (True, False), (True, True)]
)
@pytest.mark.parametrize("n_b", [5, 3 * VECTOR_EXP_FROM])  # scalar and vectorised paths
def test_kernel_values_between_two_point_sets(name, params, a_sparse, b_sparse, n_b):
    A, B = _data(6, 11, 1), _data(n_b, 11, 2, density=0.5)
    pa = point_set(sp.csr_matrix(A) if a_sparse else A)
    pb = point_set(sp.csr_matrix(B) if b_sparse else B)
    spec = kernel_spec(
        name, params.get("gamma", 1.0), params.get("degree", 3), params.get("coef0", 0.0)
    )
    expected = pairwise_kernels(A, B, metric=name, **params)
    cols = np.random.default_rng(3).permutation(n_b).astype(np.int64)
    out = np.full(n_b, np.nan)
    for i in range(len(A)):
        assert kernel_values(spec, pa, i, pb, cols, 2, n_b, out) == n_b - 2
        np.testing.assert_allclose(out[2:], expected[i, cols[2:]], rtol=1e-12, atol=1e-14)
        assert np.isnan(out[:2]).all()  # values outside [start, stop) are not touched
    np.testing.assert_allclose(
        self_kernel(spec, pa), np.diag(pairwise_kernels(A, metric=name, **params)), rtol=1e-12
    )


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
        out = subprocess.run(
            [sys.executable, "-c", CACHE_PROBE], capture_output=True, text=True, check=True
        ).stdout
    counts = {
        name: (int(hits), int(misses))
        for name, hits, misses in (line.split() for line in out.splitlines())
    }
    assert counts == {"loss_pass": (2, 0), "run_frank_wolfe": (1, 0)}
