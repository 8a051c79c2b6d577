"""Naive Bayes classifiers with differential privacy: noisy counts and moments.

:class:`DPGaussianNB` releases class counts, class sums and pooled squares of
bounded features; :class:`DPCategoricalNB` one histogram of (class, column,
level) counts. Both draw exact discrete noise (:mod:`dpsk.mechanisms._counts`)
and form the model from the release alone (``_estimates``).
"""

from ._categorical import DPCategoricalNB
from ._gaussian import DPGaussianNB

__all__ = ["DPGaussianNB", "DPCategoricalNB"]
