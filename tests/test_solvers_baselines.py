"""Liblinear and Libsvm: equality with the estimators they wrap, sparse input, parameter
errors and their one-row trace (scikit-learn conformance and configs: test_estimator_conformance.py)."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_breast_cancer
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC, LinearSVC

from svmlab.errors import ConfigError
from svmlab.solvers.baselines import Liblinear, Libsvm

LIBLINEAR_SUPPORTED = [
    {"penalty": "l2", "loss": "squared_hinge", "dual": True},
    {"penalty": "l2", "loss": "squared_hinge", "dual": False},
    {"penalty": "l2", "loss": "hinge", "dual": True},
    {"penalty": "l1", "loss": "squared_hinge", "dual": False},
]


@pytest.fixture(scope="module")
def data():
    """Standardised breast cancer with small entries zeroed, so that its CSR form is sparse."""
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    X[np.abs(X) < 0.5] = 0.0
    return X, y


def csr_int64(X):
    X = sp.csr_matrix(X)
    X.indices, X.indptr = X.indices.astype(np.int64), X.indptr.astype(np.int64)
    return X


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # equal regardless
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("params", LIBLINEAR_SUPPORTED, ids=str)
def test_liblinear_equals_linearsvc(data, params, fit_intercept):
    X, y = data
    reference = LinearSVC(fit_intercept=fit_intercept, random_state=0, **params).fit(X, y)
    for X_fit in (X, sp.csr_matrix(X), csr_int64(X)):
        model = Liblinear(fit_intercept=fit_intercept, random_state=0, **params).fit(X_fit, y)
        np.testing.assert_array_equal(model.coef_, reference.coef_)
        np.testing.assert_array_equal(model.intercept_, np.atleast_1d(reference.intercept_))
        np.testing.assert_array_equal(model.decision_function(X), reference.decision_function(X))
        np.testing.assert_array_equal(model.predict(X_fit), reference.predict(X))
        assert model.n_iter_ == reference.n_iter_


@pytest.mark.parametrize("kernel", ["linear", "rbf", "poly"])
def test_libsvm_equals_svc(data, kernel):
    X, y = data
    X_csr = sp.csr_matrix(X)
    for X_fit, X_reference in ((X, X), (X_csr, X_csr), (csr_int64(X), X_csr)):
        reference = SVC(kernel=kernel, coef0=0.5).fit(X_reference, y)
        model = Libsvm(kernel=kernel, coef0=0.5).fit(X_fit, y)
        assert model._gamma == reference._gamma
        np.testing.assert_array_equal(model.support_, reference.support_)
        dual_coef = reference.dual_coef_
        np.testing.assert_array_equal(
            model.dual_coef_, dual_coef.toarray() if sp.issparse(dual_coef) else dual_coef
        )
        np.testing.assert_array_equal(model.intercept_, reference.intercept_)
        assert model.n_support_ == reference.n_support_.sum()
        assert model.n_iter_ == reference.n_iter_[0]
        np.testing.assert_allclose(
            model.decision_function(X), reference.decision_function(X), rtol=1e-12, atol=1e-12
        )
        np.testing.assert_array_equal(model.predict(X_fit), reference.predict(X))
        assert sp.issparse(model.support_vectors_) == sp.issparse(X_fit)
    assert hasattr(model, "coef_") == (kernel == "linear")


@pytest.mark.parametrize("kernel", ["linear", "rbf", "poly"])
def test_libsvm_dense_and_csr_agree(data, kernel):
    X, y = data
    dense = Libsvm(kernel=kernel).fit(X, y)
    sparse = Libsvm(kernel=kernel).fit(csr_int64(X), y)
    assert sparse.support_vectors_.indices.dtype == np.int32
    np.testing.assert_array_equal(dense.support_, sparse.support_)
    np.testing.assert_allclose(dense.dual_coef_, sparse.dual_coef_, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(
        dense.decision_function(X), sparse.decision_function(X), rtol=1e-10, atol=1e-10
    )
    dense_objectives, sparse_objectives = dense.objectives(X, y), sparse.objectives(X, y)
    for name, value in dense_objectives.items():
        assert sparse_objectives[name] == pytest.approx(value, rel=1e-10)


def test_csr_input_is_not_modified(data):
    X, y = data
    X_csr = csr_int64(X)
    Liblinear().fit(X_csr, y)
    assert X_csr.indices.dtype == np.int64 and X_csr.indptr.dtype == np.int64


@pytest.mark.parametrize(
    "params",
    [
        {"penalty": "l1", "loss": "hinge"},
        {"penalty": "l1", "loss": "hinge", "dual": False},
        {"penalty": "l1", "dual": True},
        {"loss": "hinge", "dual": False},
    ],
    ids=str,
)
def test_liblinear_refuses_unsupported_combinations(data, params):
    X, y = data
    with pytest.raises(
        ConfigError,
        match=r"LIBLINEAR has no solver.*Supported combinations: "
        r"penalty='l2', loss='squared_hinge', dual in \[True, False, 'auto'\]",
    ):
        Liblinear(**params).fit(X, y)


@pytest.mark.parametrize(
    "estimator, message",
    [
        (
            Liblinear(C=0.0),
            "'C' parameter of Liblinear must be a float in the range \\(0.0, inf\\)",
        ),
        (Libsvm(C=-1.0), "'C' parameter of Libsvm must be a float in the range \\(0.0, inf\\)"),
        (Liblinear(loss="log"), "'loss' parameter of Liblinear must be a str among"),
        (Liblinear(penalty="elasticnet"), "'penalty' parameter of Liblinear must be a str among"),
        (
            Libsvm(kernel="sigmoid"),
            (
                r"'kernel' parameter of Libsvm must be a str among "
                r"\{('linear'|'poly'|'rbf'|, )+\}"
            ),
        ),
        (Libsvm(gamma=0.0), "'gamma' parameter of Libsvm must be a str among .* or a float in"),
    ],
)
def test_invalid_parameters_name_the_allowed_values(data, estimator, message):
    X, y = data
    with pytest.raises(ValueError, match=message):
        estimator.fit(X, y)


@pytest.mark.parametrize(
    "estimator, objectives",
    [
        (
            Liblinear(),
            {
                "objective_hinge_l2",
                "objective_squared_hinge_l2",
                "objective_hinge_l1",
                "objective_squared_hinge_l1",
            },
        ),
        (Libsvm(), {"objective_hinge_l2", "objective_squared_hinge_l2"}),
    ],
    ids=["Liblinear", "Libsvm"],
)
def test_trace_has_one_row_passed_once_to_the_callback(data, estimator, objectives):
    X, y = data
    rows = []
    model = estimator.fit(X, y, callback=rows.append)
    assert len(model.trace_) == 1 and len(rows) == 1
    assert set(rows[0]) == {"iteration", "time_s"} | objectives
    assert rows[0] == {k: v[0].item() for k, v in model.trace_.columns().items()}
    assert rows[0]["iteration"] == model.n_iter_ > 0
    assert 0.0 < rows[0]["time_s"] < 10.0
    assert {name: rows[0][name] for name in objectives} == model.objectives(X, y)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_a_tolerance_path_records_one_row_per_fit_and_keeps_the_last_model(data):
    X, y = data
    path = [1e-1, 1e-3]
    model = Liblinear(loss="hinge", dual=True, tol=1e-6, tol_path=path, random_state=0).fit(X, y)
    rows = model.trace_.columns()
    assert len(rows["time_s"]) == 3 and np.all(np.diff(rows["iteration"]) >= 0)
    for k, tol in enumerate([*path, 1e-6]):  # each row: that tolerance's own fit and objective
        alone = Liblinear(loss="hinge", dual=True, tol=tol, random_state=0).fit(X, y)
        assert rows["objective_hinge_l2"][k] == pytest.approx(
            alone.objectives(X, y)["objective_hinge_l2"], rel=1e-12
        )
        assert 0.0 < rows["time_s"][k] <= model.fit_time_s_
    gaps = rows["rel_gap_hinge_l2_penalised_bias"]  # each fit's certified gap, tightening
    assert gaps[-1] <= gaps[0] and gaps[-1] == pytest.approx(model.certificate_.rel_gap, abs=1e-6)
    np.testing.assert_array_equal(model.coef_, alone.coef_)
    assert model.fit_time_s_ >= rows["time_s"].sum() * 0.99
    with pytest.raises(ConfigError, match="tol_path must list positive tolerances"):
        Liblinear(tol_path=[0.1, -1.0]).fit(X, y)


@pytest.mark.parametrize(
    "estimator",
    [Libsvm(kernel="linear", max_iter=5), Liblinear(loss="hinge", max_iter=2, tol=1e-12)],
)
def test_a_fit_stopped_by_its_iteration_cap_names_the_cap_as_its_stop_reason(data, estimator):
    """The claims take the time of such a run as censored (more than its own), not a finish."""
    with pytest.warns(ConvergenceWarning):
        estimator.fit(*data)
    assert not estimator.converged_
    assert estimator.stop_reason_ == f"max_iter={estimator.max_iter} iterations"
    estimator.set_params(max_iter=100_000, tol=1e-3).fit(*data)
    assert estimator.converged_ and estimator.stop_reason_ is None
