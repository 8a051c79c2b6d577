"""The budget ledger, the default ledger, and accounting through scikit-learn."""

import copy
import pickle
import threading

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

from dpsk import (
    BudgetAccountant,
    BudgetExceededError,
    DPHuberSVM,
    DPLogisticRegression,
    default_accountant,
)

# These ledger tests fit with undeclared classes for brevity; the warning
# itself is tested in test_fit_protocol.py.
pytestmark = pytest.mark.filterwarnings("ignore::dpsk.ClassesFromDataWarning")


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 4))
    X /= np.linalg.norm(X, axis=1, keepdims=True).max()
    y = (X[:, 0] + 0.2 * rng.standard_normal(300) > 0).astype(int)
    return X, y


# -- the ledger itself -----------------------------------------------------------
def test_spend_total_remaining():
    acc = BudgetAccountant(epsilon=1.0, delta=1e-5)
    assert acc.total() == (0.0, 0.0)
    acc.spend(0.25).spend(0.5, 1e-6)
    assert acc.total() == (0.75, 1e-6)
    assert acc.remaining() == pytest.approx((0.25, 9e-6))
    assert acc.spends == [(0.25, 0.0), (0.5, 1e-6)]
    acc.spends.append((9.0, 0.0))  # a copy: the ledger cannot be edited through it
    assert len(acc.spends) == 2


def test_budget_exceeded_records_nothing():
    acc = BudgetAccountant(epsilon=0.5)
    acc.spend(0.4)
    with pytest.raises(BudgetExceededError, match="budget exceeded"):
        acc.spend(0.2)
    with pytest.raises(BudgetExceededError):
        acc.check(0.2)
    assert acc.spends == [(0.4, 0.0)]
    assert acc.check(0.1) is True


def test_delta_budget_enforced():
    acc = BudgetAccountant(epsilon=10.0, delta=0.0)
    with pytest.raises(BudgetExceededError):
        acc.spend(0.1, 1e-9)


def test_float_sums_fit_their_budget():
    acc = BudgetAccountant(epsilon=1.0)
    for _ in range(10):
        acc.spend(0.1)  # 10 x 0.1 must fit although the float sum is not exactly 1
    with pytest.raises(BudgetExceededError):
        acc.spend(1e-6)


@pytest.mark.parametrize("eps", [-1.0, float("nan"), "a", None, True])
def test_bad_costs_rejected(eps):
    acc = BudgetAccountant()
    with pytest.raises(ValueError, match="epsilon"):
        acc.spend(eps)
    assert acc.spends == []


@pytest.mark.parametrize("kwargs", [{"epsilon": -1}, {"epsilon": float("nan")},
                                    {"delta": 1.5}, {"delta": 1.0}, {"delta": -0.1}])
def test_bad_budgets_rejected(kwargs):
    with pytest.raises(ValueError):
        BudgetAccountant(**kwargs)


def test_concurrent_spends_never_overspend():
    acc = BudgetAccountant(epsilon=1.0)
    errors = []

    def worker():
        for _ in range(50):
            try:
                acc.spend(0.01)
            except BudgetExceededError:
                errors.append(1)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(acc.spends) == 100
    assert len(errors) == 100
    assert acc.total()[0] == pytest.approx(1.0)


# -- identity under copying, pickling across processes ---------------------------
def test_copies_are_the_same_ledger():
    acc = BudgetAccountant(1.0)
    assert copy.copy(acc) is acc
    assert copy.deepcopy(acc) is acc
    assert clone(DPLogisticRegression(accountant=acc)).accountant is acc


def test_pickled_copy_spends_into_the_same_ledger():
    acc = BudgetAccountant(epsilon=1.0)
    acc.spend(0.3)
    twin = pickle.loads(pickle.dumps(acc))
    assert twin is not acc
    twin.spend(0.2)
    acc.spend(0.1)
    assert acc.total()[0] == pytest.approx(0.6)
    assert twin.total()[0] == pytest.approx(0.6)
    with pytest.raises(BudgetExceededError):
        twin.spend(0.5)


def test_copy_of_a_dead_ledger_refuses_to_spend():
    acc = BudgetAccountant(epsilon=1.0)
    payload = pickle.dumps(acc)
    twin = pickle.loads(payload)
    del acc
    import gc

    gc.collect()
    with pytest.raises(RuntimeError, match="no longer exists"):
        twin.spend(0.1)


# -- the default ledger ------------------------------------------------------------
def test_context_manager_sets_default(data):
    X, y = data
    outer_default = default_accountant()
    with BudgetAccountant(epsilon=1.0) as acc:
        assert default_accountant() is acc
        with BudgetAccountant(epsilon=0.5) as inner:
            assert default_accountant() is inner
            DPLogisticRegression(epsilon=0.2, random_state=0).fit(X, y)
        assert default_accountant() is acc
        DPLogisticRegression(epsilon=0.3, random_state=0).fit(X, y)
    assert default_accountant() is outer_default
    assert inner.total() == (0.2, 0.0)
    assert acc.total() == (0.3, 0.0)


def test_default_resolved_at_fit_not_init(data):
    X, y = data
    clf = DPLogisticRegression(epsilon=0.1, random_state=0)
    with BudgetAccountant(epsilon=1.0) as acc:
        clf.fit(X, y)
    assert acc.total() == (0.1, 0.0)
    assert clf.accountant is None


# -- the mixin protocol ----------------------------------------------------------------
@pytest.mark.parametrize("Est", [DPLogisticRegression, DPHuberSVM])
def test_fit_spends_exactly_epsilon(Est, data):
    X, y = data
    acc = BudgetAccountant(epsilon=1.0)
    clf = Est(epsilon=0.1, alpha=1e-3, accountant=acc, random_state=0).fit(X, y)
    assert acc.total() == (0.1, 0.0)
    assert clf.privacy_spent_ == (0.1, 0.0)


def test_exhausted_budget_raises_before_touching_data():
    acc = BudgetAccountant(epsilon=0.05)
    # X=None would fail validation: BudgetExceededError first proves the order.
    with pytest.raises(BudgetExceededError):
        DPLogisticRegression(epsilon=0.1, accountant=acc).fit(None, None)
    assert acc.spends == []


@pytest.mark.parametrize(
    "X_bad",
    [np.full((20, 3), np.nan), np.full((20, 3), np.inf), np.array([["a", "b"]] * 20)],
)
def test_failed_fit_spends_nothing(X_bad):
    acc = BudgetAccountant(epsilon=1.0)
    y = np.arange(20) % 2
    with pytest.raises(ValueError):
        DPLogisticRegression(epsilon=0.1, accountant=acc).fit(X_bad, y)
    assert acc.spends == []


def test_failed_refit_keeps_previous_model(data):
    X, y = data
    acc = BudgetAccountant(epsilon=1.0)
    clf = DPLogisticRegression(epsilon=0.1, accountant=acc, random_state=0).fit(X, y)
    coef = clf.coef_.copy()
    with pytest.raises(ValueError):
        clf.fit(np.zeros((10, 7)), np.zeros(10))  # one class
    np.testing.assert_array_equal(clf.coef_, coef)
    assert clf.n_features_in_ == X.shape[1]
    assert acc.total() == (0.1, 0.0)


def test_wrong_accountant_type(data):
    X, y = data
    with pytest.raises(ValueError, match="accountant"):
        DPLogisticRegression(accountant="budget").fit(X, y)


# -- accounting through scikit-learn ----------------------------------------------------
@pytest.mark.filterwarnings("ignore::dpsk.NonPrivateSelectionWarning")
@pytest.mark.parametrize("n_jobs", [1, 2])
def test_grid_search_cv_charges_every_fit(n_jobs, data):
    X, y = data
    acc = BudgetAccountant(epsilon=1.0)
    search = GridSearchCV(
        DPLogisticRegression(epsilon=0.1, accountant=acc),
        {"alpha": [1e-3, 1e-2]},
        cv=3,
        n_jobs=n_jobs,
    ).fit(X, y)
    # 2 candidates x 3 folds + the refit = 7 fits of 0.1 each.
    assert acc.total()[0] == pytest.approx(0.7, rel=1e-12)
    assert len(acc.spends) == 7
    assert search.best_estimator_.accountant is acc


@pytest.mark.filterwarnings("ignore::dpsk.NonPrivateSelectionWarning")
@pytest.mark.parametrize("n_jobs", [1, 2])
def test_cross_val_score_charges_every_fold(n_jobs, data):
    X, y = data
    acc = BudgetAccountant(epsilon=1.0)
    cross_val_score(DPHuberSVM(epsilon=0.1, accountant=acc), X, y, cv=4, n_jobs=n_jobs)
    assert acc.total()[0] == pytest.approx(0.4, rel=1e-12)


def test_context_ledger_reaches_worker_processes(data):
    X, y = data
    with BudgetAccountant(epsilon=1.0) as acc:
        cross_val_score(DPLogisticRegression(epsilon=0.1), X, y, cv=3, n_jobs=2)
    assert acc.total()[0] == pytest.approx(0.3, rel=1e-12)


@pytest.mark.filterwarnings("ignore::dpsk.NonPrivateSelectionWarning")
def test_budget_exceeded_inside_grid_search(data):
    X, y = data
    acc = BudgetAccountant(epsilon=0.25)
    with pytest.raises((BudgetExceededError, ValueError)):
        GridSearchCV(
            DPLogisticRegression(epsilon=0.1, accountant=acc), {"alpha": [1e-3, 1e-2]},
            cv=3, error_score="raise",
        ).fit(X, y)
    assert acc.total()[0] == pytest.approx(0.2)


def test_pipeline_charges_once(data):
    X, y = data
    acc = BudgetAccountant(epsilon=1.0)
    pipe = make_pipeline(FunctionTransformer(), DPLogisticRegression(epsilon=0.3, accountant=acc))
    pipe.fit(X, y)
    clone(pipe).fit(X, y)
    assert acc.total()[0] == pytest.approx(0.6)


def test_spend_all_records_the_whole_batch_or_nothing():
    acc = BudgetAccountant(epsilon=1.0)
    acc.spend_all([(0.25, 0.0), (0.25, 0.0)])
    assert acc.total() == (0.5, 0.0) and len(acc.events) == 2
    with pytest.raises(BudgetExceededError, match="Nothing in the batch"):
        acc.spend_all([(0.25, 0.0), (0.25, 0.0), (0.25, 0.0)])
    assert acc.total() == (0.5, 0.0) and len(acc.events) == 2
    acc.spend_all([])
    assert len(acc.events) == 2
