"""Differentially private linear classifiers."""

from ._huber import DPHuberSVM
from ._logistic import DPLogisticRegression
from ._robust import DPRobustLogisticRegression, robust_accuracy
from ._svc import DPLinearSVC
from ._tilted import DPTiltedLogisticRegression

__all__ = ["DPLogisticRegression", "DPHuberSVM", "DPRobustLogisticRegression", "robust_accuracy",
           "DPTiltedLogisticRegression", "DPLinearSVC"]
