"""One-vs-one (OVO) multiclass classification with any svmlab binary solver, as LIBSVM does it.

svmlab solvers are binary. `OneVsOneClassifier` trains one of them per pair of classes, on the
points of those two classes only, and predicts by max-wins voting. It follows LIBSVM's scheme
so that multiclass results (accuracy, training time, subproblem sizes) compare with LIBSVM and
with papers that report LIBSVM-style OVO:

* pairs (i, j), i < j, in sorted class order: (0, 1), (0, 2), ..., (0, K-1), (1, 2), ...;
* every pair shares the same parameters; a data-dependent gamma (a rule such as 'scale') is
  resolved once on the whole training set, as LIBSVM and scikit-learn's SVC do, not per pair;
* ties in the vote go to the first class, in sorted class order, with the maximum count;
* the training time is the sum of the binary models' fit times.
"""

from typing import ClassVar

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.utils._param_validation import HasMethods
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from svmlab.errors import DataError
from svmlab.estimator.kernel_names import GAMMA_RULES
from svmlab.estimator.kernels import resolve_gamma
from svmlab.estimator.validation import finite_csr_int32, listed

__all__ = ["OneVsOneClassifier"]


class OneVsOneClassifier(ClassifierMixin, BaseEstimator):
    """One-vs-one multiclass meta-estimator over a binary svmlab solver (LIBSVM's OVO).

    Parameters: estimator, an unfitted binary classifier (e.g. `ModifiedFrankWolfe(C=10)` or
    `Libsvm(kernel='rbf')`), cloned once per pair of classes. If it has a `gamma` parameter set to
    a rule ('scale', 'auto', 'avg_sq_dist'), the numeric value is computed on the whole training
    set and given to every clone, so that all binary models use the same kernel (as in LIBSVM);
    it is stored in gamma_.

    For K classes, fit trains K(K-1)/2 clones: pair (i, j), i < j, on the rows labelled
    classes_[i] or classes_[j], with their original labels. predict lets each binary model vote
    for the class it predicts and returns the class with the most votes; ties go to the first such
    class in classes_ order (LIBSVM's rule). With K = 2 there is one model and the prediction is
    its prediction. The vote counts are available from `votes(X)`; there is no decision_function,
    because counts are not a signed score and scikit-learn expects shape (n,) for two classes.

    Fitted attributes: classes_ (sorted labels), pairs_ (list of (i, j) index pairs),
    estimators_ (the fitted binary models, in pairs_ order), pair_sizes_ (training rows of each
    pair), fit_times_s_ (each binary fit's solver time, its fit_time_s_), fit_time_s_ (their
    sum: the training time of the multiclass model), gamma_ (the shared numeric gamma,
    or None if the estimator has no gamma) and n_features_in_.
    """

    _parameter_constraints: ClassVar[dict] = {"estimator": [HasMethods(["fit", "predict"])]}

    def __init__(self, estimator):
        self.estimator = estimator

    def fit(self, X, y):
        """Train one clone of estimator per pair of classes; raise DataError for < 2 classes."""
        self._validate_params()
        X, y = validate_data(
            self, X, y, accept_sparse="csr", dtype=np.float64, ensure_all_finite=False
        )
        X = finite_csr_int32(X)
        check_classification_targets(y)
        self.classes_, y_index = np.unique(y, return_inverse=True)
        n_classes = len(self.classes_)
        if n_classes < 2:
            raise DataError(
                f"y has {n_classes} class (values found: {listed(self.classes_)}); "
                "one-vs-one classification needs samples of at least two classes"
            )
        template = clone(self.estimator)
        self.gamma_ = None
        if "gamma" in template.get_params(deep=False):
            gamma = template.get_params(deep=False)["gamma"]
            if isinstance(gamma, str) and gamma in GAMMA_RULES:
                template.set_params(gamma=resolve_gamma(gamma, X, template.kernel))
            self.gamma_ = template.get_params(deep=False)["gamma"]
        self.pairs_, self.estimators_, self.pair_sizes_, self.fit_times_s_ = [], [], [], []
        for i in range(n_classes):
            for j in range(i + 1, n_classes):
                rows = np.flatnonzero((y_index == i) | (y_index == j))
                model = clone(template).fit(X[rows], y[rows])
                self.fit_times_s_.append(model.fit_time_s_)
                self.pairs_.append((i, j))
                self.estimators_.append(model)
                self.pair_sizes_.append(len(rows))
        self.fit_time_s_ = float(sum(self.fit_times_s_))
        return self

    def votes(self, X) -> np.ndarray:
        """Votes of the binary models for each class: int array of shape (n_samples, K)."""
        check_is_fitted(self)
        X = finite_csr_int32(
            validate_data(
                self, X, accept_sparse="csr", dtype=np.float64, reset=False, ensure_all_finite=False
            )
        )
        counts = np.zeros((X.shape[0], len(self.classes_)), dtype=np.int64)
        for (i, j), model in zip(self.pairs_, self.estimators_, strict=True):
            for_j = model.predict(X) == self.classes_[j]
            counts[:, j] += for_j
            counts[:, i] += ~for_j
        return counts

    def predict(self, X) -> np.ndarray:
        """The class with the most votes; ties go to the first one in classes_ (LIBSVM's rule)."""
        counts = self.votes(X)
        return self.classes_[np.argmax(counts, axis=1)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = True
        tags.input_tags.sparse = True
        return tags
