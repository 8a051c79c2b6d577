"""sample_weight where it is not supported: refused clearly and for free (issue 13).

Since issue 26 the ERM classifiers (DPLogisticRegression, DPHuberSVM,
DPKernelClassifier, DPRobustLogisticRegression, DPLinearSVC) and DPGridSearch
take weights in [0, 1] (tests/test_weights.py). DPTiltedLogisticRegression,
whose objective is not a sum of per-row losses, refuses weights before
anything is spent, with a message that says why, and keeps ``sample_weight``
out of its signature so that scikit-learn treats it as an estimator without
sample-weight support. So do the private predictors (DPStabilityPredictor,
DPPredictionEnsemble), whose arguments count rows, not weights.
"""

import numpy as np
import pytest
from sklearn.ensemble import BaggingClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer
from sklearn.utils.estimator_checks import check_classifiers_one_label_sample_weights
from sklearn.utils.validation import has_fit_parameter

from dpsk import (
    BudgetAccountant,
    DPLogisticRegression,
    DPPredictionEnsemble,
    DPStabilityPredictor,
    DPTiltedLogisticRegression,
)


def _estimators(accountant):
    return [
        DPTiltedLogisticRegression(classes=[0, 1], accountant=accountant, random_state=0),
        DPStabilityPredictor(classes=[0, 1], accountant=accountant, random_state=0),
        DPPredictionEnsemble(DPLogisticRegression(classes=[0, 1]), classes=[0, 1],
                             n_teachers=5, min_samples_per_teacher=20, accountant=accountant,
                             random_state=0),
    ]


IDS = ["tilted", "stability", "ensemble"]


def _data(n=200, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3))
    X /= np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1.0)
    return X, (X[:, 0] > 0).astype(int)


@pytest.mark.parametrize("index", range(len(IDS)), ids=IDS)
def test_sample_weight_is_refused_before_anything_is_spent(index):
    acc = BudgetAccountant()
    est = _estimators(acc)[index]
    X, y = _data()
    for weights in (np.ones(len(y)), np.full(len(y), 0.5), list(range(len(y)))):
        with pytest.raises(TypeError, match=r"sample_weight.*\n?.*(privacy|proof)") as info:
            est.fit(X, y, sample_weight=weights)
        assert "Nothing was spent" in str(info.value)
        assert not hasattr(est, "privacy_spent_")
    assert acc.total() == (0.0, 0.0)
    # The message is fixed text: it cannot depend on the weights or the data.
    with pytest.raises(TypeError) as other:
        est.fit(X[:50], y[:50], sample_weight=np.arange(50.0))
    assert str(other.value) == str(info.value)


@pytest.mark.parametrize("index", range(len(IDS)), ids=IDS)
def test_sample_weight_none_is_an_ordinary_fit(index):
    acc = BudgetAccountant()
    est = _estimators(acc)[index]
    X, y = _data()
    est.fit(X, y, sample_weight=None)
    # The predictors spend when they answer, the models when they fit.
    assert est.predict(X[:5]).shape == (5,)
    assert acc.total()[0] > 0


@pytest.mark.parametrize("index", range(len(IDS)), ids=IDS)
def test_unknown_fit_keyword_is_a_clear_type_error(index):
    acc = BudgetAccountant()
    est = _estimators(acc)[index]
    X, y = _data()
    with pytest.raises(TypeError, match=r"unexpected keyword argument\(s\) 'classes'"):
        est.fit(X, y, classes=[0, 1])
    assert acc.total() == (0.0, 0.0)


@pytest.mark.parametrize("index", range(len(IDS)), ids=IDS)
def test_scikit_learn_sees_no_sample_weight_support(index):
    est = _estimators(BudgetAccountant())[index]
    # Meta-estimators (BaggingClassifier, AdaBoostClassifier, RANSAC, metadata
    # routing) decide from the signature whether to pass weights.
    assert not has_fit_parameter(est, "sample_weight")
    # scikit-learn's check for estimators without sample weights: a TypeError or
    # ValueError that names sample_weight.
    check_classifiers_one_label_sample_weights(type(est).__name__, est)


def test_bagging_samples_rows_instead_of_passing_weights():
    # With sample_weight in fit's signature, BaggingClassifier would implement its
    # bootstrap as integer weights, which a private fit must refuse.
    # Without replacement (bootstrap=True is refused: a row drawn k times costs k epsilon).
    acc = BudgetAccountant()
    X, y = _data()
    bag = BaggingClassifier(DPLogisticRegression(classes=[0, 1], accountant=acc),
                            n_estimators=3, bootstrap=False, max_samples=0.5,
                            random_state=0).fit(X, y)
    assert bag.predict(X).shape == y.shape
    assert acc.total()[0] == pytest.approx(3.0)


def test_pipeline_step_weights_get_the_explanation():
    X, y = _data()
    pipe = make_pipeline(FunctionTransformer(),
                         DPTiltedLogisticRegression(classes=[0, 1],
                                                    accountant=BudgetAccountant()))
    with pytest.raises(TypeError, match="does not support sample_weight"):
        pipe.fit(X, y, dptiltedlogisticregression__sample_weight=np.ones(len(y)))


def test_tilted_refusal_says_why():
    X, y = _data()
    with pytest.raises(TypeError, match="not a sum of per-row losses"):
        DPTiltedLogisticRegression(classes=[0, 1]).fit(X, y, sample_weight=np.ones(len(y)))
