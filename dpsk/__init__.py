"""dpsk: differentially private classifiers for scikit-learn.

Every estimator charges its privacy cost to a :class:`BudgetAccountant` (the one
passed as ``accountant``, else :func:`default_accountant`) when, and only when,
its fit succeeds.
"""

from ._accounting import (
    BudgetAccountant,
    BudgetExceededError,
    LedgerUnreachableError,
    PrivacyBudgetWarning,
    default_accountant,
)
from ._events import (
    ApproxDPEvent,
    ExponentialEvent,
    GaussianEvent,
    PrivacyEvent,
    PureDPEvent,
)
from ._mixin import PrivacyAccountingMixin, PrivateFitError
from ._pipeline_check import LeakyPipelineWarning, check_pipeline, warn_if_pipeline_leaks
from ._solver import SolverError
from ._validation import ClassesFromDataWarning
from .kernel import DPKernelClassifier
from .linear_model import (
    DPHuberSVM,
    DPLogisticRegression,
    DPRobustLogisticRegression,
    DPTiltedLogisticRegression,
    robust_accuracy,
)
from .model_selection import DPGridSearch
from .pipeline import PrivatePipeline, make_private_pipeline
from .prediction import DPPredictionEnsemble

# The one place the version is written: pyproject.toml reads it (tool.setuptools.dynamic).
__version__ = "0.1.0.dev0"

__all__ = [
    "BudgetAccountant",
    "BudgetExceededError",
    "LedgerUnreachableError",
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
    "check_pipeline",
    "warn_if_pipeline_leaks",
    "PrivatePipeline",
    "make_private_pipeline",
    "DPLogisticRegression",
    "DPHuberSVM",
    "DPRobustLogisticRegression",
    "DPTiltedLogisticRegression",
    "robust_accuracy",
    "DPKernelClassifier",
    "DPGridSearch",
    "DPPredictionEnsemble",
]
