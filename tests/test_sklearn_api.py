"""scikit-learn's own estimator checks over every public dpsk estimator."""

import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks
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



#: scikit-learn's sample-weight checks that a private fit fails on purpose
#: (docs/privacy.rst, "Weights"). They apply to estimators whose fit takes
#: ``sample_weight``; the others refuse it and pass the checks for that.
_WEIGHT_XFAILS = {
    "check_sample_weights_list":
        "weights of 3: dpsk's weights lie in [0, 1] (the privacy proof's domain); "
        "larger ones are refused for free",
    "check_sample_weights_not_overwritten":
        "uses a weight of 10, outside [0, 1]: refused for free",
    "check_all_zero_sample_weights_error":
        "all-zero weights are inside dpsk's domain: the fit releases the noise-only "
        "model and is charged, instead of raising",
    "check_sample_weight_equivalence_on_dense_data":
        "integer weights equal repeated rows only if weights may exceed 1 and the "
        "objective divides by sum(w); dpsk divides by the public n, and its noise is random",
    "check_sample_weight_equivalence_on_sparse_data":
        "as on dense data: dpsk divides by the public n, not by sum(w), and adds noise",
}


def _expected_failures(estimator):
    if isinstance(estimator, DPStabilityPredictor):
        # Every call answers with fresh noise (and is charged): decision_function
        # and predict_proba are two releases, so their orders need not agree.
        return {"check_decision_proba_consistency":
                "two separately charged noisy releases of the same rows"}
    if has_fit_parameter(estimator, "sample_weight"):
        return dict(_WEIGHT_XFAILS)
    return {}


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=_expected_failures)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)
