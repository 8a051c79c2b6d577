"""The fit protocol (dpsk/_mixin.py) and declared classes.

Free refusals happen only for input outside the declared domain; once the data
has been read the budget is spent, and a failure is charged and reported with a
fixed message. Declared classes fix ``classes_`` and the number of models.
"""

import warnings

import numpy as np
import pytest

from dpsk import (
    BudgetAccountant,
    DPHuberSVM,
    DPKernelClassifier,
    DPLogisticRegression,
    PrivateFitError,
)
from dpsk._data._validation import ClassesFromDataWarning

ESTIMATORS = [DPLogisticRegression, DPHuberSVM, DPKernelClassifier]


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((120, 3)) / 3
    y = np.where(X[:, 0] > 0, "b", "a")
    return X, y


# -- failures after the spend ----------------------------------------------------------
@pytest.mark.parametrize("Est", ESTIMATORS)
def test_failure_after_reading_data_is_charged_and_says_nothing_else(Est, data, monkeypatch):
    X, y = data
    acc = BudgetAccountant(epsilon=2.0)
    clf = Est(epsilon=0.5, accountant=acc, classes=["a", "b"], random_state=0,
              data_norm=1.0).fit(X, y)
    before = clf.coef_.copy()

    def leaky_release(self, data, *, epsilon, delta):
        warnings.warn(f"row 17 has norm {np.linalg.norm(data[0][17]):.6f}")
        raise ArithmeticError(f"secret value {data[0][3, 0]!r}")

    monkeypatch.setattr(Est, "_release", leaky_release)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        with pytest.raises(PrivateFitError) as info:
            clf.fit(X, y)
    assert record == []  # the release's warning was dropped
    message = str(info.value)
    assert "charged" in message and "epsilon=0.5" in message
    assert "secret" not in message and repr(X[3, 0]) not in message
    # Not chained: the original exception object (and its text) is unreachable.
    assert info.value.__cause__ is None and info.value.__context__ is None
    assert acc.total() == (1.0, 0.0)  # both fits charged
    np.testing.assert_array_equal(clf.coef_, before)  # the earlier model stays


@pytest.mark.parametrize("Est", ESTIMATORS)
def test_out_of_domain_input_is_refused_free(Est, data):
    X, y = data
    acc = BudgetAccountant(epsilon=1.0)
    X_nan = X.copy()
    X_nan[5, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        Est(accountant=acc, classes=["a", "b"]).fit(X_nan, y)
    y_odd = y.astype(object)
    y_odd[7] = "HIV+"
    with pytest.raises(ValueError, match="not among the declared classes") as info:
        Est(accountant=acc, classes=["a", "b"]).fit(X, y_odd)
    assert "HIV+" not in str(info.value)  # the refusal does not name the label
    assert acc.spends == []


def test_keyboard_interrupt_propagates_and_restores(data, monkeypatch):
    X, y = data
    acc = BudgetAccountant()
    clf = DPLogisticRegression(accountant=acc, classes=["a", "b"])

    def interrupted(self, data, *, epsilon, delta):
        raise KeyboardInterrupt

    monkeypatch.setattr(DPLogisticRegression, "_release", interrupted)
    with pytest.raises(KeyboardInterrupt):
        clf.fit(X, y)
    assert not hasattr(clf, "coef_") and not hasattr(clf, "n_features_in_")
    assert acc.total() == (1.0, 0.0)  # the data had been read: charged


# -- declared classes ------------------------------------------------------------------
@pytest.mark.parametrize("Est", ESTIMATORS)
def test_declared_classes_fix_the_release_shape(Est, data):
    # The audit's attack 4: a new label in one row changed classes_ and coef_.
    X, y = data
    classes = ["HIV+", "a", "b"]
    y_new = y.astype(object)
    y_new[0] = "HIV+"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a = Est(classes=classes, random_state=0, data_norm=1.0).fit(X, y)
        b = Est(classes=classes, random_state=0, data_norm=1.0).fit(X, y_new)
    for model in (a, b):
        np.testing.assert_array_equal(model.classes_, classes)
        assert model.coef_.shape[0] == 3
        assert model.privacy_spent_ == (1.0, 0.0)


@pytest.mark.parametrize("Est", ESTIMATORS)
def test_single_class_y_fits_when_classes_are_declared(Est, data):
    X, _ = data
    clf = Est(classes=[0, 1], random_state=0).fit(X, np.ones(len(X), dtype=int))
    assert clf.coef_.shape[0] == 1
    assert set(clf.predict(X)) <= {0, 1}


@pytest.mark.parametrize("Est", ESTIMATORS)
def test_classes_none_warns_with_fixed_text(Est, data):
    X, y = data
    texts = []
    for labels in (y, np.where(y == "a", "x", "y")):
        with pytest.warns(ClassesFromDataWarning) as record:
            Est(random_state=0, data_norm=1.0).fit(X, labels)
        texts.append([str(w.message) for w in record])
    assert texts[0] == texts[1] and len(texts[0]) == 1


@pytest.mark.parametrize("bad", [["a"], ["a", "a", "b"], [["a", "b"]], ["a", 1], [0.0, np.nan]])
def test_bad_declared_classes(bad, data):
    X, y = data
    acc = BudgetAccountant()
    with pytest.raises(ValueError, match="classes"):
        DPLogisticRegression(classes=bad, accountant=acc).fit(X, y)
    assert acc.spends == []


def test_declared_classes_are_sorted_like_sklearn(data):
    X, y = data
    clf = DPLogisticRegression(classes=["b", "a"], random_state=0).fit(X, y)
    np.testing.assert_array_equal(clf.classes_, ["a", "b"])
    assert clf.get_params()["classes"] == ["b", "a"]  # the parameter is untouched
