"""Differentially private linear classifiers."""

from ._huber import DPHuberSVM
from ._logistic import DPLogisticRegression

__all__ = ["DPLogisticRegression", "DPHuberSVM"]
