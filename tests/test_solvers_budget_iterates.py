"""The budgeted solvers' iterates against a record of the code before the model kept its
columns (the dot products by Z^T, a vectorised exponential): the same support vectors,
coefficients, dual variables and merges.

tests/data/budget_iterates.npz holds `fitted` of every case, written by `record` with the code
before the change (``python tests/test_solvers_budget_iterates.py DATA_DIR``, the LIBSVM folder as
DATA_DIR). The kernel sums now add the same terms in another order and the exponential may
differ from numpy's by one ulp, so every discrete outcome is the same (which steps merge, with
which partner) and every value agrees to 1e-12 relative to its own scale: points, merge
positions and kappa elementwise; alpha and the coefficients to 1e-12 C (alpha_i is a running
sum clipped to [0, C], a new term's coefficient y_i (alpha_i' - alpha_i) a difference of two
such sums: their small values carry the rounding of the large ones); a merge's WD to
1e-12 (beta_m^2 + beta_n^2), the terms it is a difference of.
"""

import sys
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import load_svmlight_file

from svmlab.solvers.budget import BSCA, BSGD

RECORD = Path(__file__).parent / "data" / "budget_iterates.npz"
SOLVERS = {"bsca": BSCA, "bsgd": BSGD}
CASES = {  # name: (dataset, solver, parameters)
    "a1a_bsca_golden": ("a1a", "bsca", {"budget": 50, "partner_search": "golden"}),
    "a1a_bsca_table": ("a1a", "bsca", {"budget": 50, "partner_search": "table"}),
    "a1a_bsgd": ("a1a", "bsgd", {"budget": 50}),
    "ionosphere_bsca": (
        "ionosphere_scale",
        "bsca",
        {"budget": 20, "C": 10.0, "epochs": 5, "gamma": "scale"},
    ),
}
FITTED = ("alpha_", "support_vectors_", "dual_coef_")


def fitted(data_dir: Path, name: str) -> dict[str, np.ndarray]:
    """The fitted arrays and the merge log of one case."""
    dataset, solver, params = CASES[name]
    X, y = load_svmlight_file(str(data_dir / dataset / dataset))
    params = {"C": 1.0, "gamma": 2.0**-7, "epochs": 2, "random_state": 0} | params
    model = SOLVERS[solver](**params).fit(X, y)
    arrays = {attr: np.asarray(getattr(model, attr)) for attr in FITTED}
    arrays |= {f"merges_{column}": values for column, values in model.merges_.items()}
    return arrays


def record(data_dir: Path) -> None:
    """Write every case's arrays to RECORD."""
    arrays = {
        f"{name}/{key}": value for name in CASES for key, value in fitted(data_dir, name).items()
    }
    np.savez_compressed(RECORD, **arrays)


@pytest.mark.parametrize("name", CASES)
def test_the_model_is_the_recorded_one(shared_libsvm, name):
    stored = np.load(RECORD)
    now = fitted(shared_libsvm, name)
    then = {key: stored[f"{name}/{key}"] for key in now}
    assert len(then["merges_partner"]) > 100
    for key in ("merges_iteration", "merges_partner"):
        np.testing.assert_array_equal(now[key], then[key], err_msg=key)
    for key in ("support_vectors_", "merges_h", "merges_kappa"):
        np.testing.assert_allclose(now[key], then[key], rtol=1e-12, atol=0.0, err_msg=key)
    C = CASES[name][2].get("C", 1.0)
    for key in ("alpha_", "dual_coef_", "merges_beta_m", "merges_beta_n"):
        np.testing.assert_allclose(now[key], then[key], rtol=0.0, atol=1e-12 * C, err_msg=key)
    np.testing.assert_array_equal(now["alpha_"] == 0.0, then["alpha_"] == 0.0)
    np.testing.assert_array_equal(now["alpha_"] == C, then["alpha_"] == C)
    scale = then["merges_beta_m"] ** 2 + then["merges_beta_n"] ** 2
    assert np.all(np.abs(now["merges_wd"] - then["merges_wd"]) <= 1e-12 * scale)


if __name__ == "__main__":
    record(Path(sys.argv[1]))
