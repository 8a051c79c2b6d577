"""Choosing epsilon: utility curves and recommendations (Li et al.).

Public-data mode (:func:`utility_curve`, :func:`recommend_epsilon`) simulates
the mechanism on public data at no privacy cost; probe mode
(:func:`probe_curve`) extrapolates from one private fit, charged to its ledger.
:func:`learning_curve` answers how many rows a target needs, on public data.
See docs/choosing_epsilon.rst.
"""

from ._curve import Recommendation, UtilityCurve
from ._learning import LearningCurve, RowsNeeded, learning_curve
from ._probe import ProbeRangeWarning, perturbed_optimum_derivative, probe_curve
from ._public import curve_seeds, recommend_epsilon, utility_curve

__all__ = [
    "utility_curve",
    "recommend_epsilon",
    "probe_curve",
    "perturbed_optimum_derivative",
    "curve_seeds",
    "UtilityCurve",
    "Recommendation",
    "ProbeRangeWarning",
    "learning_curve",
    "LearningCurve",
    "RowsNeeded",
]
