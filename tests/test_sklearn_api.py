"""scikit-learn's own estimator checks over every public dpsk estimator."""

import pytest
from _sklearn_checks import WEIGHT_XFAILS, parametrize_with_checks
from sklearn.utils.validation import has_fit_parameter

from dpsk import (
    DPHuberSVM,
    DPLogisticRegression,
    DPRobustLogisticRegression,
    DPStabilityPredictor,
    DPTiltedLogisticRegression,
)

# scikit-learn's estimator checks fit on labels they choose, so classes stay
# undeclared on purpose.
pytestmark = pytest.mark.filterwarnings("ignore::dpsk.ClassesFromDataWarning")

ESTIMATORS = [
    DPLogisticRegression(),
    DPRobustLogisticRegression(),
    DPRobustLogisticRegression(delta=1e-5, fit_intercept=False),
    DPTiltedLogisticRegression(),
    DPTiltedLogisticRegression(tilt=2.0, delta=1e-5),
    DPLogisticRegression(perturbation="output", fit_intercept=False),
    DPHuberSVM(),
    DPLogisticRegression(delta=1e-5, perturbation="output"),
    DPHuberSVM(delta=1e-5),
    DPLogisticRegression(delta=1e-5, perturbation="gradient"),
    DPLogisticRegression(multi_class="multinomial"),
    DPLogisticRegression(multi_class="multinomial", delta=1e-5, perturbation="output"),
    DPLogisticRegression(multi_class="ovr", delta=1e-5, perturbation="gradient"),
    DPStabilityPredictor(),
    DPStabilityPredictor(fit_intercept=False, alpha=0.1),
]


def _expected_failures(estimator):
    if isinstance(estimator, DPStabilityPredictor):
        # Every call answers with fresh noise (and is charged): decision_function
        # and predict_proba are two releases, so their orders need not agree.
        return {"check_decision_proba_consistency":
                "two separately charged noisy releases of the same rows"}
    if has_fit_parameter(estimator, "sample_weight"):
        return dict(WEIGHT_XFAILS)
    return {}


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=_expected_failures)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)
