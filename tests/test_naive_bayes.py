"""DPGaussianNB and DPCategoricalNB: scikit-learn's checks, the fit protocol (one charge,
free refusals quoting nothing), weights, pickles, pipelines with the schema encoder and
private bounds, and the post-processing that keeps the model at the majority class
when the noise swamps the data."""

import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
from _sklearn_checks import WEIGHT_XFAILS, parametrize_with_checks
from sklearn.base import clone
from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder

import dpsk.naive_bayes._gaussian as gaussian_module
from dpsk import (
    ApproxDPEvent,
    BudgetAccountant,
    ClassesFromDataWarning,
    DPCategoricalNB,
    DPGaussianNB,
    PrivateFitError,
    PureDPEvent,
    check_pipeline,
)
from dpsk.mechanisms._random import NoiseSource
from dpsk.naive_bayes._estimates import pooled_variance, shrunk_class_means
from dpsk.pipeline import make_private_pipeline
from dpsk.preprocessing import PrivateBoundsScaler, make_table_encoder

CHECKED = [
    DPGaussianNB(bounds=(-3.0, 3.0)),
    DPGaussianNB(bounds=(-3.0, 3.0), delta=1e-5, budget_split=(1, 1, 1)),
    # Tagged categorical: the checks hand it small non-negative integer codes.
    DPCategoricalNB(n_categories=100),
    DPCategoricalNB(n_categories=100, delta=1e-5),
]


def _expected_failures(estimator):
    # Dense input only: the sparse variant of the weight check does not run.
    expected = {name: why for name, why in WEIGHT_XFAILS.items() if "sparse" not in name}
    if isinstance(estimator, DPCategoricalNB):
        expected["check_classifiers_one_label_sample_weights"] = (
            "fits on uniform reals in [0, 1] whatever the tags say: not category codes, so "
            "refused for free (by column, quoting no value)")
    return expected


@pytest.mark.filterwarnings("ignore::dpsk.ClassesFromDataWarning")
@parametrize_with_checks(CHECKED, expected_failed_checks=_expected_failures)
def test_sklearn_compatible(estimator, check):
    check(estimator)


def _gaussian_data(n=3000, d=4, seed=0, shift=0.2):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, size=n)
    X = np.clip(0.4 + shift * y[:, None] + 0.1 * rng.normal(size=(n, d)), 0, 1)
    return X, y


def _categorical_data(n=3000, d=4, seed=0, levels=3):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, size=n)
    X = np.where(rng.random((n, d)) < 0.8, y[:, None], rng.integers(0, levels, (n, d)))
    return X, y


def _gnb(**params):
    return DPGaussianNB(**{"bounds": (0, 1), "classes": [0, 1],
                           "accountant": BudgetAccountant(), **params})


def _cnb(**params):
    return DPCategoricalNB(**{"n_categories": 3, "classes": [0, 1],
                              "accountant": BudgetAccountant(), **params})


# -- what a fit releases and spends -----------------------------------------------------------


@pytest.mark.parametrize("make, data", [(_gnb, _gaussian_data), (_cnb, _categorical_data)])
@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_one_charge_and_an_accurate_model(make, data, delta):
    X, y = data()
    ledger = BudgetAccountant()
    model = make(epsilon=0.7, delta=delta, accountant=ledger, random_state=0).fit(X, y)
    assert ledger.spends == [(0.7, delta)]
    assert model.privacy_spent_ == (0.7, delta)
    assert model.privacy_event_ == (PureDPEvent(0.7) if delta == 0 else ApproxDPEvent(0.7, delta))
    assert list(model.classes_) == [0, 1]
    assert model.score(X, y) > 0.9
    proba = model.predict_proba(X[:50])
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_array_equal(model.classes_[proba.argmax(axis=1)], model.predict(X[:50]))
    np.testing.assert_allclose(np.exp(model.predict_log_proba(X[:50])), proba)


def test_gaussian_attributes_in_the_users_units():
    X, y = _gaussian_data()
    X = 10.0 + 50.0 * X  # declared bounds [10, 60]
    model = _gnb(bounds=(10.0, 60.0), epsilon=2.0, random_state=1).fit(X, y)
    assert model.theta_.shape == model.var_.shape == (2, 4)
    assert np.all((model.theta_ >= 10.0) & (model.theta_ <= 60.0))
    np.testing.assert_allclose(model.theta_[1] - model.theta_[0], 10.0, atol=1.5)
    # One variance per feature, shared by the classes: about (50 * 0.1)^2 = 25.
    np.testing.assert_array_equal(model.var_[0], model.var_[1])
    assert np.all((model.var_ > 10.0) & (model.var_ < 60.0))
    assert model.class_count_.sum() == pytest.approx(3000.0)
    assert model.class_prior_.sum() == pytest.approx(1.0)
    lower, upper = model.bounds_
    np.testing.assert_array_equal(lower, [10.0] * 4)
    assert sum(model.budget_split_) == pytest.approx(1.0)


def test_per_feature_bounds_and_clipping_in_prediction():
    X, y = _gaussian_data(d=2)
    model = _gnb(bounds=([0.0, -1.0], [1.0, 2.0]), random_state=0).fit(X, y)
    far = np.array([[5.0, 0.5], [1.0, 0.5]])  # 5 is clipped to 1 as in fit
    np.testing.assert_allclose(model.predict_joint_log_proba(far[:1]),
                               model.predict_joint_log_proba(far[1:]))


def test_priors_and_budget_split_parameters():
    X, y = _gaussian_data()
    model = _gnb(priors=[0.9, 0.1], budget_split=(1, 2, 1), random_state=0).fit(X, y)
    np.testing.assert_allclose(model.class_prior_, [0.9, 0.1])
    np.testing.assert_allclose(model.budget_split_, [0.25, 0.5, 0.25])
    cat = _cnb(class_prior=[0.2, 0.8], random_state=0).fit(*_categorical_data())
    np.testing.assert_allclose(np.exp(cat.class_log_prior_), [0.2, 0.8])
    flat = _cnb(fit_prior=False, random_state=0).fit(*_categorical_data())
    np.testing.assert_allclose(np.exp(flat.class_log_prior_), [0.5, 0.5])


def test_seed_reproduces_and_fresh_noise_differs():
    X, y = _gaussian_data()
    a, b = (_gnb(random_state=3).fit(X, y) for _ in range(2))
    np.testing.assert_array_equal(a.theta_, b.theta_)
    c, d = (_gnb().fit(X, y) for _ in range(2))
    assert not np.array_equal(c.theta_, d.theta_)


def test_declared_class_absent_from_y_still_gets_statistics():
    X, y = _gaussian_data()
    model = _gnb(classes=[0, 1, 2], random_state=0).fit(X, y)
    assert model.theta_.shape == (3, 4) and model.class_count_.shape == (3,)
    # Floored at MIN_COUNT = 1 row, then rescaled with the others to the public n: so
    # positive, but not necessarily 1 or more.
    assert model.class_count_[2] > 0.5
    assert model.class_prior_[2] < 0.05


def test_classes_from_data_warn_with_a_fixed_text():
    X, y = _gaussian_data()
    with pytest.warns(ClassesFromDataWarning):
        model = _gnb(classes=None).fit(X, y)
    assert list(model.classes_) == [0, 1]


# -- refused for free, quoting nothing --------------------------------------------------------


@pytest.mark.parametrize("params", [
    dict(bounds=None), dict(bounds=(1.0, 0.0)), dict(bounds=(0.0, np.inf)),
    dict(bounds="unit"), dict(bounds=([0.0, 0.0], [1.0, 1.0])),  # 4 features, 2 bounds
    dict(budget_split=(1, 0, 1)), dict(budget_split=(1, 2)), dict(priors=[0.5, 0.6]),
    dict(priors=[1.0]), dict(epsilon=0.0), dict(delta=1.0),
])
def test_gaussian_bad_parameters_refused_for_free(params):
    X, y = _gaussian_data()
    ledger = BudgetAccountant()
    with pytest.raises((ValueError, TypeError)):
        _gnb(accountant=ledger, **params).fit(X, y)
    assert ledger.spends == []


def test_bounds_required_message_says_what_to_do():
    X, y = _gaussian_data()
    with pytest.raises(ValueError, match=r"bounds=\(0, 1\)"):
        DPGaussianNB(classes=[0, 1]).fit(X, y)


@pytest.mark.parametrize("params", [
    dict(n_categories=None), dict(n_categories=0), dict(n_categories=[3, 3]),
    dict(n_categories=[[3]]), dict(n_categories=2.5), dict(alpha=0.0),
    dict(encoding="binary"),
])
def test_categorical_bad_parameters_refused_for_free(params):
    X, y = _categorical_data()
    ledger = BudgetAccountant()
    with pytest.raises((ValueError, TypeError)):
        _cnb(accountant=ledger, **params).fit(X, y)
    assert ledger.spends == []


def _defects(seed):
    X, y = _gaussian_data(n=200, seed=seed)
    row = 7 + seed
    out = {}
    for name, value in (("nan", np.nan), ("inf", np.inf)):
        bad = X.copy()
        bad[row, 1] = value
        out[name] = (bad, y)
    label = y.copy()
    label[row] = 5
    out["undeclared-label"] = (X, label)
    out["short-y"] = (X, y[:-1])
    strings = X.astype(object)
    strings[row, 2] = f"patient-{seed}"
    out["string-cell"] = (strings, y)
    return out


@pytest.mark.parametrize("defect", ["nan", "inf", "undeclared-label", "short-y", "string-cell"])
def test_out_of_domain_refused_alike_for_free(defect):
    seen = []
    for seed in (0, 1):
        X, y = _defects(seed)[defect]
        ledger = BudgetAccountant()
        with pytest.raises((ValueError, TypeError)) as info:
            _gnb(accountant=ledger).fit(X, y)
        assert ledger.spends == []
        assert "patient" not in str(info.value)
        seen.append((type(info.value), str(info.value)))
    assert seen[0] == seen[1]


@pytest.mark.parametrize("bad", ["negative", "too-large", "fraction", "nan"])
def test_categorical_codes_outside_refused_for_free_by_column(bad):
    X, y = _categorical_data()
    X = X.astype(float)
    X[11, 2] = {"negative": -1, "too-large": 3, "fraction": 1.5, "nan": np.nan}[bad]
    ledger = BudgetAccountant()
    with pytest.raises(ValueError) as info:
        _cnb(accountant=ledger).fit(X, y)
    assert ledger.spends == []
    assert "1.5" not in str(info.value) and "-1" not in str(info.value)
    if bad != "nan":
        assert "Column 2" in str(info.value)


def test_onehot_blocks_outside_refused_for_free():
    X, y = _categorical_data()
    onehot = OneHotEncoder(categories=[[0, 1, 2]] * 4, sparse_output=False).fit_transform(X)
    for bad in (0.5, 2.0):
        broken = onehot.copy()
        broken[3, 0] = bad
        ledger = BudgetAccountant()
        with pytest.raises(ValueError, match="block 0"):
            _cnb(encoding="onehot", accountant=ledger).fit(broken, y)
        assert ledger.spends == []
    two = onehot.copy()
    two[3, :3] = 1.0  # two ones in a block
    with pytest.raises(ValueError, match="block 0"):
        _cnb(encoding="onehot").fit(two, y)
    with pytest.raises(ValueError, match="columns"):
        _cnb(encoding="onehot", n_categories=[3, 3, 3, 4]).fit(onehot, y)


def test_budget_refusal_is_free():
    X, y = _gaussian_data()
    ledger = BudgetAccountant(epsilon=0.5)
    with pytest.raises(Exception, match="budget"):
        _gnb(accountant=ledger, epsilon=1.0).fit(X, y)
    assert ledger.spends == []


def test_failure_after_reading_is_charged_and_opaque(monkeypatch):
    def failing(X, *args, **kwargs):
        raise ArithmeticError(f"secret {float(X[0, 0])!r}")

    monkeypatch.setattr(gaussian_module, "class_moments", failing)
    X, y = _gaussian_data()
    ledger = BudgetAccountant()
    with pytest.raises(PrivateFitError) as info:
        _gnb(accountant=ledger, epsilon=0.3).fit(X, y)
    assert "secret" not in str(info.value) and info.value.__context__ is None
    assert ledger.spends == [(0.3, 0.0)]


# -- weights -----------------------------------------------------------------------------


@pytest.mark.parametrize("make, data", [(_gnb, _gaussian_data), (_cnb, _categorical_data)])
def test_all_one_weights_are_the_unweighted_fit_bit_for_bit(make, data):
    X, y = data()
    plain = make(random_state=5).fit(X, y)
    ones = make(random_state=5).fit(X, y, sample_weight=np.ones(len(y)))
    for name in ("class_count_", "theta_", "var_", "class_log_prior_"):
        if hasattr(plain, name):
            np.testing.assert_array_equal(getattr(plain, name), getattr(ones, name))


@pytest.mark.parametrize("make, data", [(_gnb, _gaussian_data), (_cnb, _categorical_data)])
def test_weights_count_as_fractions_of_rows(make, data):
    X, y = data(n=20000)
    rng = np.random.default_rng(0)
    weights = np.where(y == 1, 0.25, 1.0) * (rng.random(len(y)) < 0.999)
    model = make(epsilon=5.0, random_state=0).fit(X, y, sample_weight=weights)
    expected = np.bincount(y, weights=weights)
    np.testing.assert_allclose(model.class_count_, expected, rtol=0.02)


@pytest.mark.parametrize("weights", [np.full(3000, 1.5), np.full(3000, -0.1), np.ones(5)])
def test_bad_weights_refused_for_free(weights):
    X, y = _gaussian_data()
    ledger = BudgetAccountant()
    with pytest.raises(ValueError):
        _gnb(accountant=ledger).fit(X, y, sample_weight=weights)
    assert ledger.spends == []


# -- the saved model ----------------------------------------------------------------------


@pytest.mark.parametrize("make, data", [(_gnb, _gaussian_data), (_cnb, _categorical_data)])
def test_pickle_round_trip_holds_no_noise_source(make, data):
    X, y = data()
    model = make(random_state=None).fit(X, y)
    blob = pickle.dumps(model)
    assert b"NoiseSource" not in blob and b"numpy.random" not in blob
    restored = pickle.loads(blob)
    np.testing.assert_array_equal(restored.predict_proba(X[:20]), model.predict_proba(X[:20]))
    assert restored.get_params()["random_state"] is None


# -- post-processing: the floor at the majority class ---------------------------------------


def test_noise_swamping_the_means_gives_the_majority_class():
    # 300 rows, 40 features, epsilon 0.05: the class sums carry only noise. The shrunk
    # model must predict from its priors, i.e. the majority class (70% of rows).
    rng = np.random.default_rng(0)
    y = (rng.random(300) < 0.3).astype(int)
    X = rng.random((300, 40))
    for seed in range(5):
        model = _gnb(epsilon=0.05, random_state=seed).fit(X, y)
        assert np.all(model.predict(X) == 0)


def test_shrunk_class_means_shrink_by_noise():
    means = np.array([[0.1, 0.5, -0.2], [0.3, 0.2, 0.4]])
    # No noise: unchanged. Huge noise: all equal to the grand mean.
    np.testing.assert_allclose(shrunk_class_means(means, np.array([1e-12, 1e-12])), means,
                               atol=1e-9)
    flat = shrunk_class_means(means, np.array([1e3, 1e3]))
    np.testing.assert_allclose(flat[0], flat[1], atol=1e-3)
    # The noisier class is pulled harder toward the common mean.
    shrunk = shrunk_class_means(means, np.array([0.001, 0.02]))
    moved = np.abs(shrunk - means).sum(axis=1)
    assert moved[1] > moved[0]


def test_pooled_variance_floor_and_cap():
    squares = np.array([0.0, 500.0, 5000.0])
    variance = pooled_variance(squares, 1000.0, np.array([0.5, 0.5]), np.zeros((2, 3)),
                               noise_variance=100.0)
    # floor: 2 * sqrt(100) / 1000 = 0.02; cap: 1.
    np.testing.assert_allclose(variance, [0.02, 0.5, 1.0])


# -- pipelines: the schema encoder and private bounds ----------------------------------------


def _frame(n=4000, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, size=n)
    frame = pd.DataFrame({
        "age": np.clip(30 + 15 * y + 8 * rng.normal(size=n), 17, 90),
        "hours": np.clip(35 + 10 * y + 5 * rng.normal(size=n), 0, 99),
        "job": np.where(rng.random(n) < 0.7, np.where(y == 1, "nurse", "clerk"), "farmer"),
    })
    frame.loc[::17, "job"] = None
    return frame, np.where(y == 1, "yes", "no")


def test_gaussian_nb_on_the_schema_encoders_output():
    frame, y = _frame()
    numeric = {"age": (17, 90), "hours": (0, 99)}
    categorical = {"job": ["clerk", "farmer", "nurse"]}
    ledger = BudgetAccountant()
    pipe = make_private_pipeline(
        make_table_encoder(numeric, categorical),
        DPGaussianNB(epsilon=1.0, bounds=(0, 1), classes=["no", "yes"], accountant=ledger,
                     random_state=0),
        strict=True)
    assert check_pipeline(pipe) == []
    pipe.fit(frame, y)
    assert ledger.spends == [(1.0, 0.0)]
    assert pipe.score(frame, y) > 0.85


def test_categorical_nb_on_the_schema_encoders_one_hot_blocks_and_on_codes():
    frame, y = _frame()
    lists = {"job": ["clerk", "farmer", "nurse"]}
    onehot = make_private_pipeline(
        make_table_encoder(None, lists),  # fill "__missing__" adds a fourth column
        DPCategoricalNB(epsilon=1.0, n_categories=[4], encoding="onehot",
                        classes=["no", "yes"], accountant=BudgetAccountant(), random_state=0),
        strict=True)
    assert check_pipeline(onehot) == []
    onehot.fit(frame, y)
    ordinal = make_private_pipeline(
        OrdinalEncoder(categories=[["clerk", "farmer", "nurse", "__missing__"]]),
        DPCategoricalNB(epsilon=1.0, n_categories=[4], classes=["no", "yes"],
                        accountant=BudgetAccountant(), random_state=0),
        strict=True)
    assert check_pipeline(ordinal) == []
    filled = frame[["job"]].fillna("__missing__")
    ordinal.fit(filled, y)
    assert onehot.score(frame, y) > 0.75 and ordinal.score(filled, y) > 0.75
    # The one-hot model has a fifth, never-seen level: "no declared category".
    assert onehot[-1].feature_log_prob_[0].shape == (2, 5)


def test_gaussian_nb_after_private_bounds_one_ledger():
    frame, y = _frame()
    ledger = BudgetAccountant()
    pipe = make_private_pipeline(
        # 2 columns, 4000 rows: each end needs epsilon / 4 >= 0.12 (docs/privacy.rst).
        PrivateBoundsScaler(epsilon=1.0, accountant=ledger, random_state=0),
        DPGaussianNB(epsilon=1.0, bounds=(0, 1), classes=["no", "yes"], accountant=ledger,
                     random_state=0),
        strict=True)
    assert check_pipeline(pipe) == []
    numbers = frame[["age", "hours"]]
    pipe.fit(numbers, y)
    assert ledger.spends == [(1.0, 0.0), (1.0, 0.0)]
    assert pipe.score(numbers, y) > 0.85


def test_clone_keeps_the_ledger_and_parameters():
    model = _gnb(epsilon=0.3)
    twin = clone(model)
    assert twin.accountant is model.accountant
    assert twin.get_params()["bounds"] == (0, 1)


def test_no_warning_from_a_declared_fit():
    X, y = _gaussian_data()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _gnb(random_state=0).fit(X, y).predict(X)
        _cnb(random_state=0).fit(*_categorical_data()).predict(_categorical_data()[0])


def test_noise_source_is_the_only_randomness(monkeypatch):
    # Every draw goes through a NoiseSource: with numpy's generators made to fail, a
    # fit still works.
    def refuse(*args, **kwargs):
        raise AssertionError("numpy randomness used")

    X, y = _gaussian_data()
    monkeypatch.setattr(np.random, "default_rng", refuse)
    _gnb().fit(X, y)
    assert isinstance(NoiseSource.secure(), NoiseSource)
