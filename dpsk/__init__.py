"""dpsk: differentially private classifiers for scikit-learn.

Every estimator charges its privacy cost to a :class:`BudgetAccountant` (the one
passed as ``accountant``, else :func:`default_accountant`) once it has read the
data: a fit that fails after that point stays charged.

The package is grouped in wings by the job each serves, and imports run one
way (``docs/design.rst``): estimators (``linear_model``, ``kernel``,
``model_selection``, ``prediction``, ``utility``) -> the fit protocol
(``_mixin``) -> ``pipeline`` and ``preprocessing`` -> ``mechanisms`` ->
``accounting`` and ``_optimize`` -> ``_data``.
"""

from . import _compat  # noqa: F401  (old module paths, for pickles of 0.1.0.dev0)
from ._data._validation import ClassesFromDataWarning
from ._mixin import PrivacyAccountingMixin, PrivateFitError
from ._optimize._solver import SolverError
from .accounting import (
    ApproxDPEvent,
    BudgetAccountant,
    BudgetExceededError,
    ExponentialEvent,
    GaussianEvent,
    LedgerStoreError,
    LedgerUnreachableError,
    PrivacyBudgetWarning,
    PrivacyEvent,
    PureDPEvent,
    default_accountant,
)
from .ensemble import DPRandomForestClassifier
from .kernel import DPKernelClassifier
from .linear_model import (
    DPHuberSVM,
    DPLinearSVC,
    DPLogisticRegression,
    DPRobustLogisticRegression,
    DPTiltedLogisticRegression,
    robust_accuracy,
)
from .model_selection import DPGridSearch
from .naive_bayes import DPCategoricalNB, DPGaussianNB
from .pipeline import (
    DataNormWarning,
    LeakyPipelineWarning,
    NonPrivateSelectionWarning,
    PrivatePipeline,
    check_pipeline,
    make_private_pipeline,
    warn_if_pipeline_leaks,
)
from .prediction import DPPredictionEnsemble, DPStabilityPredictor
from .tree import DPDecisionTreeClassifier

# The one place the version is written: pyproject.toml reads it (tool.setuptools.dynamic).
__version__ = "0.1.0.dev0"

__all__ = [
    "BudgetAccountant",
    "BudgetExceededError",
    "LedgerUnreachableError",
    "LedgerStoreError",
    "PrivacyBudgetWarning",
    "PrivacyEvent",
    "PureDPEvent",
    "ApproxDPEvent",
    "GaussianEvent",
    "ExponentialEvent",
    "PrivacyAccountingMixin",
    "PrivateFitError",
    "default_accountant",
    "SolverError",
    "ClassesFromDataWarning",
    "LeakyPipelineWarning",
    "NonPrivateSelectionWarning",
    "check_pipeline",
    "warn_if_pipeline_leaks",
    "PrivatePipeline",
    "make_private_pipeline",
    "DPLogisticRegression",
    "DPHuberSVM",
    "DPLinearSVC",
    "DPRobustLogisticRegression",
    "DPTiltedLogisticRegression",
    "robust_accuracy",
    "DPKernelClassifier",
    "DPGridSearch",
    "DPPredictionEnsemble",
    "DPStabilityPredictor",
    "DataNormWarning",
    "DPGaussianNB",
    "DPCategoricalNB",
    "DPDecisionTreeClassifier",
    "DPRandomForestClassifier",
]
