"""scikit-learn's own estimator checks over every public dpsk estimator."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from dpsk import (
    DPHuberSVM,
    DPLogisticRegression,
    DPRobustLogisticRegression,
    DPTiltedLogisticRegression,
)

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
]


@parametrize_with_checks(ESTIMATORS)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)
