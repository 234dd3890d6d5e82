"""Frank-Wolfe SVMs (Frandi et al.): FW, MFW and the CVM baseline on the L2-SVM / MEB dual."""

from svmlab.solvers.frank_wolfe.cvm import CoreVectorMachine
from svmlab.solvers.frank_wolfe.estimator import FrankWolfe, MEBSVMClassifier, ModifiedFrankWolfe

__all__ = ["CoreVectorMachine", "FrankWolfe", "MEBSVMClassifier", "ModifiedFrankWolfe"]
