"""A run's evaluation: the training decision values computed once and shared by the accuracy,
the objectives and the certificate; the certificate refined only when needed; compiled kernel
blocks that agree with scikit-learn's."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_classification
from sklearn.metrics.pairwise import pairwise_kernels
from sklearn.svm import SVC

from svmlab.data.dataset import Dataset
from svmlab.estimator.kernels import Kernel
from svmlab.recording.results import evaluate
from svmlab.solvers.baselines import Libsvm
from svmlab.solvers.nesvm import NESVM


def problem(sparse: bool, n: int = 160, seed: int = 0):
    X, y = make_classification(n, 8, n_informative=5, flip_y=0.1, random_state=seed)
    X = np.where(np.abs(X) < 0.5, 0.0, X)
    return (sp.csr_matrix(X) if sparse else X), np.where(y == 1, 1.0, -1.0)


def split(X, y) -> Dataset:
    half = X.shape[0] // 2
    return Dataset(
        name="toy",
        X_train=X[:half],
        y_train=y[:half],
        X_test=X[half:],
        y_test=y[half:],
        classes=(-1, 1),
        digest="0" * 64,
        source="test",
        params={},
    )


@pytest.mark.parametrize("name", ["linear", "rbf", "poly"])
@pytest.mark.parametrize("sparse", [False, True])
def test_compiled_kernel_blocks_match_scikit_learn(name, sparse):
    X, _ = problem(sparse)
    A, B = X[:37], X[50:120]
    kernel = Kernel(name, 0.3, 3, 0.5)
    reference = pairwise_kernels(
        A, B, metric=name, filter_params=True, gamma=0.3, degree=3, coef0=0.5
    )
    np.testing.assert_allclose(kernel.matrix(A, B), reference, rtol=1e-12, atol=1e-12)
    coef = np.linspace(-1.0, 2.0, B.shape[0])
    np.testing.assert_allclose(kernel.dot(A, B, coef), reference @ coef, rtol=1e-11, atol=1e-11)


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
@pytest.mark.parametrize("sparse", [False, True])
def test_shared_decision_values_give_the_metrics_of_an_independent_computation(kernel, sparse):
    """Accuracy, objectives and certificate of the run against scikit-learn's SVC, fitted alone
    with the same settings, and formulas written out here."""
    X, y = problem(sparse)
    data = split(X, y)
    model = Libsvm(C=2.0, kernel=kernel, gamma=0.2, tol=1e-6).fit(data.X_train, data.y_train)
    metrics = evaluate(model, data)
    svc = SVC(C=2.0, kernel=kernel, gamma=0.2, tol=1e-6).fit(data.X_train, data.y_train)
    f = svc.decision_function(data.X_train)
    y_pm = np.where(data.y_train == svc.classes_[1], 1.0, -1.0)
    sv = svc.support_vectors_
    K = pairwise_kernels(sv, sv, metric=kernel, filter_params=True, gamma=0.2)
    coef = np.asarray(svc.dual_coef_.todense() if sp.issparse(X) else svc.dual_coef_)[0]
    squared_norm = float(coef @ K @ coef)
    hinge = np.maximum(0.0, 1.0 - y_pm * f).sum()
    assert metrics["train_accuracy"] == np.mean(svc.predict(data.X_train) == data.y_train)
    assert metrics["test_accuracy"] == np.mean(svc.predict(data.X_test) == data.y_test)
    assert metrics["objective_hinge_l2"] == pytest.approx(
        0.5 * squared_norm + 2.0 * hinge, rel=1e-9
    )
    assert metrics["objective_squared_hinge_l2"] == pytest.approx(
        0.5 * squared_norm + 2.0 * np.square(np.maximum(0.0, 1.0 - y_pm * f)).sum(), rel=1e-9
    )
    assert metrics["primal_hinge_l2_bias"] == pytest.approx(
        metrics["objective_hinge_l2"], rel=1e-12
    )
    alpha = np.abs(coef)  # LIBSVM's own dual point, feasible: its value bounds
    dual = alpha.sum() - 0.5 * squared_norm
    assert (
        dual - 1e-9 * abs(dual) <= metrics["dual_hinge_l2_bias"] <= (metrics["objective_hinge_l2"])
    )
    assert metrics["certificate_time_s"] >= 0.0
    assert metrics["train_accuracy"] == model.score(data.X_train, data.y_train)
    assert model.train_objectives_ == model.objectives(data.X_train, data.y_train)
    assert not hasattr(model, "_fit_decision") or model._fit_decision is None  # not kept


def test_the_training_decision_values_are_computed_once_per_fit():
    X, y = problem(False)
    calls = []

    class Counted(Libsvm):
        def _decision_function(self, X):
            calls.append(X.shape[0])
            return super()._decision_function(X)

    model = Counted(kernel="rbf", gamma=0.2).fit(X, y)
    # the trace's row, the training accuracy, the objectives and the certificate share one
    assert calls == [X.shape[0]]
    assert (
        model.trace_.columns()["objective_hinge_l2"][-1]
        == (model.train_objectives_["objective_hinge_l2"])
    )


def test_the_certificate_is_refined_exactly_when_the_solver_dual_misses_the_tolerance():
    X, y = problem(False)
    loose = Libsvm(C=1.0, kernel="rbf", gamma=0.2, tol=1e-1).fit(X, y)  # a rough dual point

    class Asks(Libsvm):
        tolerance = 0.0

        def _certificate_tol(self):
            return self.tolerance

    unrefined = Asks(C=1.0, kernel="rbf", gamma=0.2, tol=1e-1)
    unrefined.tolerance = 1.0  # any dual point certifies a relative gap of 1
    unrefined.fit(X, y)
    assert not unrefined.certificate_.refined
    assert unrefined.certificate_.source == "solver"

    refined = Asks(C=1.0, kernel="rbf", gamma=0.2, tol=1e-1).fit(X, y)  # tolerance 0
    assert unrefined.certificate_.rel_gap > 0.0
    assert refined.certificate_.refined
    assert refined.certificate_.dual >= unrefined.certificate_.dual  # never a worse bound
    assert refined.certificate_.primal == unrefined.certificate_.primal
    assert loose.certificate_.refined == (unrefined.certificate_.rel_gap > loose._certificate_tol())


def test_a_solver_that_stops_on_a_certified_gap_is_not_refined_beyond_it():
    X, y = problem(False, n=300)
    model = NESVM(C=1.0, eps=1e-2).fit(X, y)
    assert model.converged_ and model._certificate_tol() == 1e-2
    assert model.certificate_.rel_gap <= 1e-2
    assert not model.certificate_.refined


def test_a_solver_that_counts_its_passes_over_the_data_reports_them():
    from svmlab.solvers.l1_newton import L1NewtonSVM

    dataset = split(*problem(sparse=False))
    model = L1NewtonSVM().fit(dataset.X_train, dataset.y_train)
    assert evaluate(model, dataset)["n_passes"] == model.n_passes_ > 0
    assert "n_passes" not in evaluate(
        Libsvm(kernel="linear").fit(dataset.X_train, dataset.y_train), dataset
    )
