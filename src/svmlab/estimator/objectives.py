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

from svmlab.estimator.formulations import L1, L2, Formulation, Hinge, Squared, SquaredHinge

# the formulations whose objectives every solver reports (the l1 ones for linear models)
COMMON = tuple(
    Formulation(loss, penalty) for loss in (Hinge(), SquaredHinge()) for penalty in (L2(), L1())
)
LEAST_SQUARES = Formulation(Squared(), L2())


def primal_objectives(
    margins: np.ndarray, squared_l2_norm: float, l1_norm: float | None, C: float
) -> dict[str, float]:
    """Every objective of the module docstring that is defined for the given norms.

    The l1 objectives are left out when `l1_norm` is None (kernel models).
    """
    return {
        form.metric("objective"): _objective(form, margins, squared_l2_norm, l1_norm, C)
        for form in COMMON
        if l1_norm is not None or not isinstance(form.penalty, L1)
    }


def least_squares_objectives(
    margins: np.ndarray, squared_l2_norm: float, C: float
) -> dict[str, float]:
    """The LS-SVM objective of the module docstring."""
    return {
        LEAST_SQUARES.metric("objective"): _objective(
            LEAST_SQUARES, margins, squared_l2_norm, None, C
        )
    }


def _objective(form: Formulation, margins, squared_l2_norm, l1_norm, C) -> float:
    """P of ``form`` with the bias unpenalised."""
    return form.primal(margins, form.regulariser(squared_l2_norm, l1_norm, 0.0), C)
