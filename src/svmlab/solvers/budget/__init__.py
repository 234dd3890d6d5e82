"""Budgeted kernel SVMs (Qaadan, Schueler, Glasmachers): BSCA and the BSGD baseline."""

from svmlab.solvers.budget.estimator import BSCA, BSGD, BudgetedSVMClassifier

__all__ = ["BSCA", "BSGD", "BudgetedSVMClassifier"]
