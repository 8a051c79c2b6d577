"""Messages a user reads: each says what went wrong and what to do, and quotes no data."""

import warnings

import numpy as np
import pytest

from dpsk import BudgetAccountant, BudgetExceededError, DPKernelClassifier, DPLogisticRegression
from dpsk.utility import recommend_epsilon


def _data(seed=0):
    rng = np.random.RandomState(seed)
    X = rng.uniform(-0.5, 0.5, size=(400, 3))
    return X, (X[:, 0] > 0).astype(int)


@pytest.mark.parametrize("make", [
    lambda: DPLogisticRegression(classes=[0, 1], accountant=BudgetAccountant()),
    lambda: DPKernelClassifier(classes=[0, 1], accountant=BudgetAccountant()),
])
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_predicting_on_non_finite_rows_says_what_to_do(make, bad):
    X, y = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = make().fit(X, y)
    with pytest.raises(ValueError, match="Input X contains NaN or infinity") as info:
        model.predict(np.array([[bad, 0.0, 0.0]]))
    text = str(info.value)
    assert "HistGradientBoosting" not in text and "SimpleImputer(strategy='constant'" in text


def test_probe_mode_without_a_probe_asks_for_one():
    X, y = _data()
    with pytest.raises(ValueError, match="pass X_private= and y_private="):
        recommend_epsilon(DPLogisticRegression(classes=[0, 1]), X, y, target_accuracy=0.6,
                          mode="probe")


def test_a_probe_recommendation_has_no_interval():
    from dpsk.utility import Recommendation

    common = dict(metric="accuracy", target=0.8, epsilon=0.274, low=0.274, high=0.274,
                  single_fit=float("nan"), below_grid=False, above_grid=False)
    probe = str(Recommendation(confidence=0.0, mode="probe", **common))
    assert "no confidence interval" in probe and "confidence 0" not in probe
    public = str(Recommendation(confidence=0.9, mode="public", **common))
    assert "interval [0.274, 0.274]" in public


def test_an_exhausted_ensemble_does_not_ask_one_row_to_shrink():
    from sklearn.linear_model import LogisticRegression

    from dpsk import DPPredictionEnsemble

    X, y = _data()
    acc = BudgetAccountant(epsilon=0.3)
    ens = DPPredictionEnsemble(LogisticRegression(), epsilon=0.25, n_teachers=4,
                               classes=[0, 1], accountant=acc).fit(X, y)
    ens.predict(X[:1])
    with pytest.raises(BudgetExceededError, match="cannot pay for another answer") as info:
        ens.predict(X[1:2])
    assert "fewer rows" not in str(info.value)
    with pytest.raises(BudgetExceededError, match="Send fewer rows"):
        ens.predict(X[1:3])
