"""The shared estimator contract: labels, input validation, model checks, the subclass hooks."""

import pickle
from numbers import Real
from typing import ClassVar

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.datasets import load_breast_cancer
from sklearn.preprocessing import StandardScaler
from sklearn.utils._param_validation import Interval

from svmlab.errors import DataError, TrainingError
from svmlab.estimator.formulations import L2, Formulation, Hinge
from svmlab.estimator.models import LinearSVMClassifier
from svmlab.solvers.baselines import Liblinear, Libsvm


class MeanDifference(LinearSVMClassifier):
    """w = scale (mean of class +1 - mean of class -1), b = 0: a solver that writes only _fit."""

    _parameter_constraints: ClassVar[dict] = {
        "C": [Interval(Real, 0, None, closed="neither")],
        "scale": [Real],
        "record": ["boolean"],
    }

    def __init__(self, C=1.0, scale=1.0, record=True):
        self.C = C
        self.scale = scale
        self.record = record

    def _fit(self, X, y, trace):
        means = [np.asarray(X[y == label].mean(axis=0)).ravel() for label in (1.0, -1.0)]
        self.coef_ = self.scale * (means[0] - means[1])[None, :]
        self.intercept_ = np.zeros(1)
        self.converged_ = True
        if self.record:
            trace.append(1)

    def _stopping_rule(self):
        return "one step"

    def _formulation(self):
        return Formulation(Hinge(), L2())


@pytest.fixture(scope="module")
def data():
    X, y = load_breast_cancer(return_X_y=True)
    return StandardScaler().fit_transform(X)[::3], y[::3]


SOLVERS = [Liblinear(random_state=0), Libsvm(kernel="rbf"), MeanDifference()]


@pytest.mark.parametrize("solver", SOLVERS, ids=lambda s: type(s).__name__)
@pytest.mark.parametrize("labels", [(0, 1), (1, 2), (2, 4), (-1, 1), ("a", "b")], ids=str)
def test_any_two_labels_map_to_minus_plus_one(data, solver, labels):
    X, y01 = data
    y = np.array(labels)[y01]
    reference = clone(solver).fit(X, np.where(y01 == 1, 1.0, -1.0)).decision_function(X)
    model = clone(solver).fit(X, y)
    np.testing.assert_array_equal(model.classes_, sorted(labels))
    decision = model.decision_function(X)
    np.testing.assert_array_equal(decision, reference)
    predicted = model.predict(X)
    assert set(predicted) <= set(labels)
    np.testing.assert_array_equal(predicted == model.classes_[1], decision > 0)
    assert model.score(X, y) > 0.9


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("sparse", [False, True])
def test_nan_or_inf_in_X_is_refused_at_fit_and_predict(data, bad, sparse):
    X, y = data
    X_bad = X.copy()
    X_bad[3, 2] = bad
    X_bad = sp.csr_matrix(X_bad) if sparse else X_bad
    message = "1 NaN and 0 inf" if np.isnan(bad) else "0 NaN and 1 inf"
    with pytest.raises(DataError, match=f"X contains {message} values.*finite"):
        Liblinear().fit(X_bad, y)
    model = Libsvm().fit(X, y)
    with pytest.raises(DataError, match="finite"):
        model.predict(X_bad)


@pytest.mark.parametrize("solver", [Liblinear(), Libsvm()], ids=lambda s: type(s).__name__)
def test_one_class_or_three_classes_are_refused_listing_the_values(data, solver):
    X, _ = data
    with pytest.raises(ValueError, match=r"y has 1 class \(values found: \[7\]\)"):
        solver.fit(X, np.full(len(X), 7))
    with pytest.raises(ValueError, match=r"binary.*3 classes \(values found: \['a', 'b', 'c'\]\)"):
        solver.fit(X, np.array(["a", "b", "c"])[np.arange(len(X)) % 3])
    with pytest.raises(ValueError, match="Unknown label type"):
        solver.fit(X, np.linspace(0, 1, len(X)))


def test_objectives_map_labels_like_fit_and_refuse_unseen_labels(data):
    X, y01 = data
    y = np.array(["neg", "pos"])[y01]
    model = Liblinear(random_state=0).fit(X, y)
    assert model.objectives(X, y) == {
        key: col[-1] for key, col in model.trace_.columns().items() if key.startswith("objective_")
    }
    with pytest.raises(DataError, match=r"labels \['other'\] the model was not trained on"):
        model.objectives(X, np.where(y01 == 1, "pos", "other"))


def test_a_subclass_provides_only_fit(data):
    X, y = data
    model = MeanDifference().fit(sp.csr_matrix(X), y)
    assert model.n_iter_ == 1 and len(model.trace_) == 1
    w = X[y == 1].mean(axis=0) - X[y == 0].mean(axis=0)
    np.testing.assert_allclose(model.decision_function(X), X @ w, rtol=1e-12, atol=1e-12)
    m = np.where(y == 1, 1.0, -1.0) * (X @ w)
    expected_hinge = 0.5 * w @ w + np.maximum(0, 1 - m).sum()
    objectives = model.objectives(X, y)
    assert set(objectives) == {
        "objective_hinge_l2",
        "objective_squared_hinge_l2",
        "objective_hinge_l1",
        "objective_squared_hinge_l1",
    }
    np.testing.assert_allclose(objectives["objective_hinge_l2"], expected_hinge, rtol=1e-12)


def test_optional_features_default_to_off_and_an_untraced_eval_set_is_refused(data):
    X, y = data
    model = MeanDifference().fit(X, y)
    assert not model.traces_eval_set and model.records_ == {}
    assert (model.n_support_, model.n_passes_, model.gamma_, model.stop_reason_) == (None,) * 4
    with pytest.raises(TypeError, match="traces no eval_set"):
        MeanDifference().fit(X, y, eval_set=(X, y))
    assert not hasattr(model, "_eval_set")


def test_non_finite_model_or_empty_trace_is_a_training_error(data):
    X, y = data
    with pytest.raises(TrainingError, match="non-finite values in coef_"):
        MeanDifference(scale=np.nan).fit(X, y)
    with pytest.raises(TrainingError, match="recorded no iteration"):
        MeanDifference(record=False).fit(X, y)


def test_fitted_model_pickles_without_the_callback(data):
    X, y = data
    rows = []
    model = Libsvm().fit(X, y, callback=rows.append)
    restored = pickle.loads(pickle.dumps(model))
    assert restored.trace_.callback is None
    np.testing.assert_array_equal(restored.decision_function(X), model.decision_function(X))


class WarmedUp(MeanDifference):
    """MeanDifference with a warm-up fit (at scale 0.5); `scales` records every fit's scale."""

    _warm_up: ClassVar[dict] = {"scale": 0.5}
    scales: ClassVar[list] = []

    def _fit(self, X, y, trace):
        WarmedUp.scales.append(self.scale)
        super()._fit(X, y, trace)


def test_the_warm_up_runs_once_per_class_parameters_and_input_format(data):
    """A later fit of the same class, parameters and input format runs the code the first one
    loaded: no warm-up, compile_time_s_ = 0. Other parameters or CSR input warm up again."""
    X, y = data
    start = len(WarmedUp.scales)
    first = WarmedUp(C=2.0).fit(X, y)
    again = WarmedUp(C=2.0).fit(X, y)
    WarmedUp(C=2.0).fit(sp.csr_matrix(X), y)
    WarmedUp(C=3.0).fit(X, y)
    assert WarmedUp.scales[start:] == [0.5, 1.0, 1.0, 0.5, 1.0, 0.5, 1.0]
    assert first.compile_time_s_ > 0.0 and again.compile_time_s_ == 0.0


def test_a_warm_up_run_before_the_fit_is_the_only_one(data):
    """`warm_up` runs the warm-up a fit starts with, ahead of it (a caller holds a lock around
    it): neither a second call nor the fit runs another, and the estimator stays unfitted."""
    X, y = data
    model, start = WarmedUp(C=7.0), len(WarmedUp.scales)
    assert model.warm_up(X, y) > 0.0 and "classes_" not in vars(model)
    assert model.warm_up(X, y) == 0.0
    assert model.fit(X, y).compile_time_s_ == 0.0
    assert WarmedUp.scales[start:] == [0.5, 1.0]


def test_fortran_ordered_or_read_only_input_reaches_the_solver_c_ordered_and_writeable(data):
    """numba compiles once per array layout and read-only flag: the solver sees one kind."""
    X, y = data
    seen = []

    class Recording(MeanDifference):
        def _fit(self, X, y, trace):
            seen.append((X.flags.c_contiguous, X.flags.writeable))
            super()._fit(X, y, trace)

    read_only = X.copy()
    read_only.setflags(write=False)
    for variant in (np.asfortranarray(X), read_only):
        Recording().fit(variant, y)
    assert seen == [(True, True), (True, True)]
