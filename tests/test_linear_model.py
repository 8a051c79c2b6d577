"""Behaviour of DPLogisticRegression and DPHuberSVM."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import dpsk.linear_model._base as base
import dpsk.mechanisms._erm
from dpsk import BudgetAccountant, DPHuberSVM, DPLogisticRegression
from dpsk._data._design import INTERCEPT_SCALE, design_matrix, row_norms

# These fits leave classes undeclared for brevity; the warning itself is
# tested in test_fit_protocol.py.
pytestmark = pytest.mark.filterwarnings("ignore::dpsk.ClassesFromDataWarning")

ESTIMATORS = [DPLogisticRegression, DPHuberSVM]


def _blobs(n=600, d=5, k=2, seed=0):
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((k, d))
    y = rng.integers(0, k, n)
    X = centers[y] + 0.3 * rng.standard_normal((n, d))
    return X / np.linalg.norm(X, axis=1).max(), y


@pytest.fixture
def record_erm(monkeypatch):
    """Record every call of the private ERM path: its epsilon and its noise."""
    calls = []
    real = dpsk.mechanisms._erm.private_erm

    def spy(Z, y, loss, epsilon, alpha, perturbation, rng, **kw):
        w = real(Z, y, loss, epsilon, alpha, perturbation, rng, **kw)
        calls.append({"epsilon": epsilon, "rng": rng, "w": w, "alpha": alpha,
                      "n_problems": kw.get("n_problems", 1), "delta": kw.get("delta", 0.0)})
        return w

    monkeypatch.setattr(base, "private_erm", spy)
    return calls


@pytest.mark.parametrize("Est", ESTIMATORS)
def test_string_labels_and_classes(Est):
    X, y = _blobs()
    labels = np.array(["no", "yes"])[y]
    clf = Est(epsilon=5.0, random_state=0).fit(X, labels)
    assert list(clf.classes_) == ["no", "yes"]
    assert set(clf.predict(X)) <= {"no", "yes"}
    assert clf.coef_.shape == (1, X.shape[1]) and clf.intercept_.shape == (1,)
    assert clf.decision_function(X).shape == (X.shape[0],)
    assert clf.score(X, labels) > 0.9


def test_predict_proba_is_consistent():
    X, y = _blobs()
    clf = DPLogisticRegression(epsilon=5.0, random_state=0).fit(X, y)
    p = clf.predict_proba(X)
    np.testing.assert_allclose(p.sum(axis=1), 1.0)
    np.testing.assert_array_equal(clf.classes_[p.argmax(axis=1)], clf.predict(X))
    np.testing.assert_allclose(np.exp(clf.predict_log_proba(X)), p)
    assert not hasattr(DPHuberSVM(), "predict_proba")


@pytest.mark.parametrize("Est", ESTIMATORS)
def test_multiclass_one_vs_rest_splits_epsilon_and_noise(Est, record_erm):
    X, y = _blobs(k=4)
    acc = BudgetAccountant()
    ovr = {"multi_class": "ovr"} if "multi_class" in Est().get_params() else {}
    clf = Est(epsilon=2.0, accountant=acc, random_state=0, **ovr).fit(X, y)
    assert clf.coef_.shape == (4, X.shape[1]) and clf.intercept_.shape == (4,)
    # Each call gets the budget of the whole release and its share: epsilon / 4.
    assert [c["epsilon"] / c["n_problems"] for c in record_erm] == [0.5] * 4
    assert acc.total() == (2.0, 0.0)
    # Each class draws from its own stream: no two share a source or a draw.
    assert len({id(c["rng"]) for c in record_erm}) == 4
    first_draws = [c["rng"].spawn(1)[0].random() for c in record_erm]
    assert len(set(first_draws)) == 4
    proba_or_dec = clf.decision_function(X)
    assert proba_or_dec.shape == (X.shape[0], 4)
    assert clf.score(X, y) > 0.5


def test_multiclass_proba_sums_to_one():
    X, y = _blobs(k=3)
    p = DPLogisticRegression(epsilon=3.0, random_state=0).fit(X, y).predict_proba(X)
    np.testing.assert_allclose(p.sum(axis=1), 1.0)


def test_one_vs_rest_parallel_equals_sequential():
    X, y = _blobs(k=3)
    a = DPLogisticRegression(epsilon=1.0, random_state=3, n_jobs=1, multi_class="ovr").fit(X, y)
    b = DPLogisticRegression(epsilon=1.0, random_state=3, n_jobs=2, multi_class="ovr").fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    # ... and the parallel workers did not replay one draw for several classes.
    assert len({tuple(np.round(row, 12)) for row in b.coef_}) == 3


@pytest.mark.parametrize("perturbation", ["objective", "output"])
def test_random_state(perturbation):
    X, y = _blobs()
    kw = dict(epsilon=0.5, perturbation=perturbation)
    fixed = [DPLogisticRegression(random_state=7, **kw).fit(X, y).coef_ for _ in range(2)]
    np.testing.assert_array_equal(*fixed)
    fresh = [DPLogisticRegression(random_state=None, **kw).fit(X, y).coef_ for _ in range(2)]
    assert not np.allclose(*fresh)
    # Objects that carry a generator state would travel in get_params() and the
    # pickle, and let the holder of a saved model redraw the noise: refused.
    for bad in (np.random.default_rng(0), np.random.RandomState(0), np.random.SeedSequence(0)):
        with pytest.raises(TypeError, match="redraw the noise"):
            DPLogisticRegression(random_state=bad, **kw).fit(X, y)


@pytest.mark.filterwarnings("ignore::dpsk.PrivacyBudgetWarning")
def test_intercept_is_a_regularised_constant_feature():
    X, y = _blobs()
    Z = design_matrix(X * 3, data_norm=1.0, fit_intercept=True)
    assert np.all(row_norms(Z) <= 1 + 1e-12)
    np.testing.assert_allclose(Z[:, -1], INTERCEPT_SCALE)
    # Shifted data needs the intercept to be classified well.
    X_shift = X * 0.5
    y_shift = (X_shift[:, 0] > np.median(X_shift[:, 0])).astype(int)
    with_b = DPLogisticRegression(epsilon=50, alpha=1e-4, random_state=0).fit(X_shift, y_shift)
    assert with_b.intercept_[0] != 0
    no_b = DPLogisticRegression(epsilon=50, alpha=1e-4, fit_intercept=False,
                                random_state=0).fit(X_shift, y_shift)
    np.testing.assert_array_equal(no_b.intercept_, [0.0])


def test_data_norm_is_a_change_of_units():
    X, y = _blobs()
    R = 7.0
    a = DPLogisticRegression(epsilon=1.0, random_state=0, data_norm=1.0).fit(X, y)
    b = DPLogisticRegression(epsilon=1.0, random_state=0, data_norm=R).fit(X * R, y)
    np.testing.assert_allclose(a.coef_, b.coef_ * R, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(a.decision_function(X), b.decision_function(X * R), atol=1e-8)


def test_rows_above_data_norm_are_clipped_silently():
    X, y = _blobs()
    X_big = X * 10
    # How many rows were clipped depends on the data: nothing may report it.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        big = DPLogisticRegression(epsilon=1.0, random_state=0, classes=[0, 1],
                                   data_norm=1.0).fit(X_big, y)
    # Clipping rescales only the rows above the bound, to norm 1.
    X_clip = X_big / np.maximum(row_norms(X_big), 1.0)[:, None]
    clip = DPLogisticRegression(epsilon=1.0, random_state=0).fit(X_clip, y)
    np.testing.assert_allclose(big.coef_, clip.coef_, atol=1e-9)
    np.testing.assert_array_equal(big.predict(X_big), clip.predict(X_clip))


def test_sparse_input_matches_dense():
    X, y = _blobs()
    X[np.abs(X) < 0.1] = 0
    dense = DPLogisticRegression(epsilon=1.0, random_state=0).fit(X, y)
    sparse = DPLogisticRegression(epsilon=1.0, random_state=0).fit(sp.csr_matrix(X), y)
    np.testing.assert_allclose(dense.coef_, sparse.coef_, atol=1e-8)
    np.testing.assert_allclose(dense.decision_function(X),
                               sparse.decision_function(sp.csr_matrix(X)), atol=1e-8)


@pytest.mark.filterwarnings("ignore::dpsk.PrivacyBudgetWarning")
@pytest.mark.parametrize("Est", ESTIMATORS)
def test_objective_perturbation_noise_shrinks_with_epsilon(Est):
    X, y = _blobs(n=2000)
    exact = Est(epsilon=1e6, random_state=0).fit(X, y).coef_

    def mean_distance(eps):
        fits = [Est(epsilon=eps, random_state=s).fit(X, y).coef_ for s in range(5)]
        return np.mean([np.linalg.norm(coef - exact) for coef in fits])

    dist = {eps: mean_distance(eps) for eps in (0.5, 5.0)}
    assert dist[5.0] < dist[0.5]


@pytest.mark.parametrize(
    "params, match",
    [
        ({"epsilon": 0}, "epsilon"),
        ({"epsilon": -1.0}, "epsilon"),
        ({"epsilon": float("nan")}, "epsilon"),
        ({"epsilon": float("inf")}, "epsilon"),
        ({"alpha": 0}, "alpha"),
        ({"alpha": float("inf")}, "alpha"),
        ({"data_norm": float("inf")}, "data_norm"),
        ({"perturbation": "input"}, "perturbation"),
        ({"data_norm": -1}, "data_norm"),
        ({"tol": 0}, "tol"),
        ({"random_state": "seed"}, "random_state"),
    ],
)
@pytest.mark.parametrize("Est", ESTIMATORS)
def test_bad_parameters(Est, params, match):
    X, y = _blobs()
    acc = BudgetAccountant()
    with pytest.raises(ValueError, match=match):
        Est(accountant=acc, **params).fit(X, y)
    assert acc.spends == []


def test_bad_huber_width():
    X, y = _blobs()
    with pytest.raises(ValueError, match="h"):
        DPHuberSVM(h=0).fit(X, y)


@pytest.mark.parametrize("Est", ESTIMATORS)
def test_bad_data(Est):
    X, y = _blobs(n=50)
    acc = BudgetAccountant()
    est = Est(accountant=acc)
    with pytest.raises(ValueError, match="one class"):
        est.fit(X, np.zeros(50))
    with pytest.raises(ValueError, match="NaN"):
        est.fit(np.where(X > 0.5, np.nan, X), y)
    with pytest.raises(ValueError):
        est.fit(X, y[:-1])
    with pytest.raises(ValueError, match="Unknown label type"):
        est.fit(X, np.linspace(0, 1, 50))
    assert acc.spends == []


def test_adult_smoke():
    from dpsk.datasets import load_adult

    X, y = load_adult(return_X_y=True, preprocess=True)
    clf = DPLogisticRegression(epsilon=1.0, alpha=1e-3, random_state=0).fit(X, y)
    assert clf.score(X, y) > 0.78  # the majority class alone gives 0.752


# -- multinomial: one release of the K x d weights -----------------------------------------


@pytest.mark.parametrize("perturbation,delta", [("objective", 0.0), ("output", 0.0),
                                                ("objective", 1e-6), ("output", 1e-6),
                                                ("gradient", 1e-6)])
def test_multinomial_is_one_release_at_the_whole_budget(record_erm, perturbation, delta):
    X, y = _blobs(k=4)
    acc = BudgetAccountant()
    clf = DPLogisticRegression(epsilon=2.0, delta=delta, perturbation=perturbation, alpha=0.05,
                               multi_class="multinomial", classes=[0, 1, 2, 3],
                               accountant=acc, random_state=0).fit(X, y)
    # One call of the private ERM path, with the whole budget and the softmax loss.
    assert len(record_erm) == 1
    call = record_erm[0]
    assert (call["epsilon"], call["n_problems"], call["delta"]) == (2.0, 1, delta)
    assert call["w"].shape == (4, X.shape[1] + 1)
    assert acc.total() == (2.0, delta)
    assert clf.privacy_spent_ == (2.0, delta)
    assert clf.coef_.shape == (4, X.shape[1]) and clf.intercept_.shape == (4,)
    assert clf.score(X, y) > 0.5


def test_multinomial_probabilities_are_the_softmax_of_the_scores():
    X, y = _blobs(k=3)
    clf = DPLogisticRegression(epsilon=5.0, multi_class="multinomial", classes=[0, 1, 2],
                               random_state=0).fit(X, y)
    scores = clf.decision_function(X)
    expected = np.exp(scores - scores.max(axis=1, keepdims=True))
    np.testing.assert_allclose(clf.predict_proba(X), expected / expected.sum(axis=1,
                                                                              keepdims=True))
    np.testing.assert_array_equal(clf.predict(X), clf.classes_[scores.argmax(axis=1)])


def test_multinomial_with_two_classes_reports_one_row(record_erm):
    X, y = _blobs(k=2)
    clf = DPLogisticRegression(epsilon=5.0, multi_class="multinomial", classes=[0, 1],
                               random_state=0).fit(X, y)
    W = record_erm[0]["w"]
    assert W.shape == (2, X.shape[1] + 1)
    assert clf.coef_.shape == (1, X.shape[1]) and clf.intercept_.shape == (1,)
    # The reported row is W[1] - W[0]: the same decisions and probabilities.
    Z = design_matrix(X, clf.data_norm_, True)
    np.testing.assert_allclose(clf.decision_function(X), Z @ (W[1] - W[0]), atol=1e-10)
    p = clf.predict_proba(X)
    softmax = np.exp(Z @ W.T)
    np.testing.assert_allclose(p, softmax / softmax.sum(axis=1, keepdims=True), atol=1e-10)


def test_auto_is_multinomial_for_more_than_two_classes_only(record_erm):
    X2, y2 = _blobs(k=2)
    DPLogisticRegression(classes=[0, 1], random_state=0).fit(X2, y2)
    X3, y3 = _blobs(k=3)
    DPLogisticRegression(classes=[0, 1, 2], random_state=0).fit(X3, y3)
    DPLogisticRegression(classes=[0, 1, 2], random_state=0, multi_class="ovr").fit(X3, y3)
    shapes = [c["w"].shape for c in record_erm]
    assert shapes == [(6,), (3, 6), (6,), (6,), (6,)]


def test_multi_class_is_validated_before_anything_is_spent():
    X, y = _blobs(k=3)
    acc = BudgetAccountant(epsilon=1.0)
    with pytest.raises(ValueError, match="multi_class"):
        DPLogisticRegression(multi_class="softmax", accountant=acc).fit(X, y)
    assert acc.total() == (0.0, 0.0)
    assert "multi_class" not in DPHuberSVM().get_params()
