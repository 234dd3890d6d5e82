r"""Primal objective values, named by formulation, so that runs of different solvers compare.

Every solver reports the same quantities, evaluated at its own model, whatever it minimised.
With the decision function f(x) = w.phi(x) + b, margins m_i = y_i f(x_i) (y_i in {-1, +1}),
the estimator's C, and the bias b never regularised:

    objective_hinge_l2          = 1/2 ||w||_2^2 + C sum_i max(0, 1 - m_i)
    objective_squared_hinge_l2  = 1/2 ||w||_2^2 + C sum_i max(0, 1 - m_i)^2
    objective_hinge_l1          =     ||w||_1   + C sum_i max(0, 1 - m_i)      (linear models)
    objective_squared_hinge_l1  =     ||w||_1   + C sum_i max(0, 1 - m_i)^2    (linear models)

||w||_2^2 is the Euclidean norm for linear models and the RKHS norm
sum_ij (y_i a_i)(y_j a_j) K(x_i, x_j) for kernel models; ||w||_1 exists for linear models only.
The losses are sums, not means: this is the C-SVM scaling of LIBSVM and LIBLINEAR.

The LS-SVM objective (squared loss, which also penalises m_i > 1) is reported only by the
solvers that minimise it, through `least_squares_objectives`:

    objective_squared_l2        = 1/2 ||w||_2^2 + C sum_i (1 - m_i)^2
"""

import numpy as np

from svmlab.estimator.formulations import Hinge, Squared, SquaredHinge

LOSSES = (Hinge(), SquaredHinge())  # the losses every solver reports


def primal_objectives(
    margins: np.ndarray, squared_l2_norm: float, l1_norm: float | None, C: float
) -> dict[str, float]:
    """Every objective of the module docstring that is defined for the given norms.

    The l1 objectives are left out when `l1_norm` is None (kernel models).
    """
    values = {}
    for loss in LOSSES:
        data_term = C * loss.value(margins)
        values[f"objective_{loss.name}_l2"] = 0.5 * squared_l2_norm + data_term
        if l1_norm is not None:
            values[f"objective_{loss.name}_l1"] = l1_norm + data_term
    return values


def least_squares_objectives(margins: np.ndarray, squared_l2_norm: float,
                             C: float) -> dict[str, float]:
    """The LS-SVM objective of the module docstring."""
    return {"objective_squared_l2": 0.5 * squared_l2_norm + C * Squared().value(margins)}


def l2svm_objective(margins: np.ndarray, squared_l2_norm: float, bias: float, C: float) -> float:
    """objective_l2svm: the L2-SVM primal of the Frank-Wolfe/CVM solvers, at its best margin rho.

        min_rho  1/2 (||w||^2 + b^2 + C sum_i max(0, rho - m_i)^2) - rho

    Unlike the objectives above, the bias b is regularised and the margin rho is a variable
    (Lee and Mangasarian's form). The minimising rho solves C sum_i max(0, rho - m_i) = 1, found
    in closed form over the sorted margins. At the optimum the value equals -R/2, with
    R = alpha^T K~ alpha the minimum of the dual on the simplex.
    """
    m = np.sort(np.asarray(margins, dtype=np.float64))
    rho_k = (1.0 / C + np.cumsum(m)) / np.arange(1, len(m) + 1)
    k = int(np.argmax(rho_k <= np.append(m[1:], np.inf)))
    rho = rho_k[k]
    slack = np.maximum(0.0, rho - m)
    return float(0.5 * (squared_l2_norm + bias * bias + C * slack @ slack) - rho)
