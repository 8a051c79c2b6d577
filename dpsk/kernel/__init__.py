"""Differentially private kernel classifiers (random Fourier features)."""

from ._random_features import DPKernelClassifier

__all__ = ["DPKernelClassifier"]
