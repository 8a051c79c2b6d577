"""Bad input to every public dpsk estimator: a clear error, and no budget spent.

Property-based (hypothesis): for a randomly drawn valid problem, one thing is
broken (NaN or infinity in X, no rows, no features, one class, strings or
objects in X, complex numbers, lengths that do not match, labels that are not
classes, a bad epsilon or delta or other parameter, a spent budget, ...). Each
must raise a ``ValueError`` (scikit-learn's ``InvalidParameterError`` is one) or
``dpsk.BudgetExceededError`` whose message names the culprit, and afterwards the
ledger must hold exactly the spends it held before and a previously fitted model
must be untouched.

Valid but extreme input (one feature, one row per class, huge or tiny values)
must fit and charge exactly once.

The number of cases hypothesis tried is printed at the end of the module
(``pytest -s tests/test_bad_input.py``).
"""

import collections
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from dpsk import BudgetAccountant, BudgetExceededError, DPHuberSVM, DPLogisticRegression
from dpsk._data._design import clip_rows

# The refusal tests fit with undeclared classes; the warning itself is tested
# in test_fit_protocol.py.
pytestmark = pytest.mark.filterwarnings("ignore::dpsk.ClassesFromDataWarning")


def _estimator_factories():
    """Every public estimator, with small settings so fits are quick."""
    factories = {
        "DPLogisticRegression": lambda **kw: DPLogisticRegression(**kw),
        "DPHuberSVM": lambda **kw: DPHuberSVM(**kw),
    }
    # Written concurrently by others: include them only once they import.
    try:
        from dpsk.kernel import DPKernelClassifier
    except ImportError:  # pragma: no cover - depends on the state of the tree
        pass
    else:
        factories["DPKernelClassifier"] = lambda **kw: DPKernelClassifier(n_components=8, **kw)
    try:
        from dpsk.model_selection import DPGridSearch
    except ImportError:  # pragma: no cover
        pass
    else:
        factories["DPGridSearch"] = lambda **kw: DPGridSearch(
            DPLogisticRegression(), {"alpha": [0.1, 1.0]}, **kw
        )
    return factories


FACTORIES = _estimator_factories()
NAMES = sorted(FACTORIES)
CASES_TRIED = collections.Counter()


@pytest.fixture(autouse=True, scope="module")
def _report_cases_tried():
    # (BLAS threads are limited for the whole session in conftest.py.)
    yield
    print("\n[bad input] hypothesis cases tried:", dict(sorted(CASES_TRIED.items())),
          "total", sum(CASES_TRIED.values()))


def _make(name, accountant, **params):
    return FACTORIES[name](accountant=accountant, random_state=0, **params)


def _valid_problem():
    """A valid problem: 40 rows (balanced, so DPGridSearch's parts all hold both
    classes), 1 to 4 features, bounded values."""
    return st.integers(1, 4).flatmap(
        lambda d: hnp.arrays(
            np.float64, (40, d), elements=st.floats(-3, 3, allow_nan=False, allow_subnormal=False)
        )
    )


Y_VALID = np.array([0, 1] * 20)

# No digits and none of the letters of "nan", "inf" or "e": float() rejects all of these.
_NOT_A_NUMBER = st.text(alphabet="abcxyz?%# -", min_size=1, max_size=5)


# Each corruption returns (X, y, params, spent_budget, expected_errors, message_regex).
def _nan_in_x(data, X, y):
    X = X.copy()
    X[data.draw(st.integers(0, len(X) - 1)), data.draw(st.integers(0, X.shape[1] - 1))] = np.nan
    return X, y, {}, False, ValueError, r"Input X contains NaN"


def _inf_in_x(data, X, y):
    X = X.copy()
    X[data.draw(st.integers(0, len(X) - 1)), 0] = data.draw(st.sampled_from([np.inf, -np.inf]))
    return X, y, {}, False, ValueError, r"Input X contains NaN or infinity"


def _no_rows(data, X, y):
    return X[:0], y[:0], {}, False, ValueError, r"0 sample\(s\)"


def _no_features(data, X, y):
    return X[:, :0], y, {}, False, ValueError, r"0 feature\(s\)"


def _one_class(data, X, y):
    label = data.draw(st.sampled_from([0, 1, -1, 7, "a"]))
    n = data.draw(st.integers(1, len(X)))
    return X[:n], np.full(n, label, dtype=object if label == "a" else int), {}, False, (
        ValueError), r"only one class"


def _string_in_x(data, X, y):
    X = X.astype(object)
    X[data.draw(st.integers(0, len(X) - 1)), 0] = data.draw(_NOT_A_NUMBER)
    # A fixed message: numpy's own ("could not convert string to float: '<cell>'")
    # quotes the training data.
    return X, y, {}, False, ValueError, r"not a real number.*value is not shown"


def _complex_x(data, X, y):
    return X + 1j * data.draw(st.floats(0.5, 2)), y, {}, False, ValueError, r"Complex data"


def _mismatched_lengths(data, X, y):
    k = data.draw(st.integers(1, 5))
    y = y[:-k] if data.draw(st.booleans()) else np.concatenate([y, y[:k]])
    return X, y, {}, False, ValueError, r"inconsistent numbers of samples"


def _nan_in_y(data, X, y):
    y = y.astype(float)
    y[data.draw(st.integers(0, len(y) - 1))] = data.draw(st.sampled_from([np.nan, np.inf]))
    return X, y, {}, False, ValueError, r"Input y contains (NaN|infinity)"


def _continuous_y(data, X, y):
    y = np.linspace(0, 1, len(X)) + data.draw(st.floats(0.01, 0.99)) / len(X)
    return X, y, {}, False, ValueError, r"Unknown label type"


def _wrong_dimensions(data, X, y):
    if data.draw(st.booleans()):
        return X[:, 0], y, {}, False, ValueError, r"Expected 2D array"
    return X[:, :, None], y, {}, False, ValueError, r"dim 3"


_BAD_EPSILONS = st.one_of(
    st.floats(max_value=0.0, allow_nan=False),
    st.sampled_from([np.nan, np.inf, -np.inf, "1.0", None, [1.0]]),
)


def _bad_epsilon(data, X, y):
    return X, y, {"epsilon": data.draw(_BAD_EPSILONS)}, False, ValueError, r"epsilon"


def _bad_delta(data, X, y, name=None):
    bad = data.draw(st.one_of(st.floats(max_value=-1e-300), st.floats(min_value=1.0),
                              st.sampled_from([np.nan, "0"])))
    return X, y, {"delta": bad}, False, ValueError, r"delta"


def _bad_other_parameter(data, X, y):
    name, bad = data.draw(st.sampled_from([
        ("alpha", 0.0), ("alpha", -1.0), ("alpha", np.nan), ("data_norm", 0.0),
        ("data_norm", np.inf), ("tol", -1e-3), ("perturbation", "input"),
        ("accountant", "ledger"), ("random_state", "seed"),
    ]))
    return X, y, {name: bad}, False, ValueError, name


def _spent_budget(data, X, y):
    epsilon = data.draw(st.floats(1e-3, 10))
    return X, y, {"epsilon": epsilon}, True, BudgetExceededError, r"epsilon"


CORRUPTIONS = {
    f.__name__.lstrip("_"): f
    for f in (_nan_in_x, _inf_in_x, _no_rows, _no_features, _one_class, _string_in_x,
              _complex_x, _mismatched_lengths, _nan_in_y, _continuous_y, _wrong_dimensions,
              _bad_epsilon, _bad_delta, _bad_other_parameter, _spent_budget)
}


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from(NAMES),
    corruption=st.sampled_from(sorted(CORRUPTIONS)),
    X=_valid_problem(),
    prefit=st.booleans(),
    data=st.data(),
)
def test_bad_input_gives_clear_error_and_spends_nothing(name, corruption, X, prefit, data):
    probe = _make(name, None)
    if corruption == "bad_delta" and "delta" not in probe.get_params(deep=False):
        corruption = "bad_epsilon"  # no delta to break: break epsilon instead
    if corruption == "bad_other_parameter":
        X2, y2, params, spent, error, match = _bad_other_parameter(data, X, Y_VALID)
        if next(iter(params)) not in probe.get_params(deep=False):
            return
    else:
        X2, y2, params, spent, error, match = CORRUPTIONS[corruption](data, X, Y_VALID)
    CASES_TRIED[corruption] += 1

    accountant = BudgetAccountant(epsilon=3.0)
    accountant.spend(0.125)  # an earlier release the failure must not disturb
    estimator = _make(name, accountant, epsilon=0.5)
    if prefit:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # clipping warnings: not the point here
            estimator.fit(X, Y_VALID)
    fitted_before = {k: v for k, v in vars(estimator).items() if k.endswith("_")}
    if spent:
        accountant.spend(accountant.remaining()[0])  # use up what is left
    spends_before = accountant.spends
    if "accountant" in params:
        estimator.set_params(**{k: v for k, v in params.items() if k != "accountant"})
        estimator.accountant = params["accountant"]
    else:
        estimator.set_params(**params)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(error, match=match):
            estimator.fit(X2, y2)

    assert accountant.spends == spends_before
    fitted_after = {k: v for k, v in vars(estimator).items() if k.endswith("_")}
    assert fitted_after.keys() == fitted_before.keys()
    for key, value in fitted_before.items():
        after = fitted_after[key]
        if isinstance(value, np.ndarray):
            np.testing.assert_array_equal(after, value)
        else:
            assert after == value


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from(NAMES),
    X=_valid_problem(),
    scale=st.sampled_from([1e-300, 1e-8, 1.0, 1e8, 1e150]),
    n_features=st.integers(1, 3),
)
def test_extreme_but_valid_input_fits_and_charges_once(name, X, scale, n_features):
    # One feature, huge or tiny (finite) values: rows are clipped, nothing overflows.
    CASES_TRIED["extreme_valid"] += 1
    X = X[:, :n_features] * scale
    accountant = BudgetAccountant(epsilon=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        estimator = _make(name, accountant, epsilon=0.5).fit(X, Y_VALID)
        predictions = estimator.predict(X)
    assert accountant.spends == [(0.5, 0.0)]
    assert set(np.unique(predictions)) <= {0, 1}
    for attr in ("coef_", "intercept_"):
        if hasattr(estimator, attr):
            assert np.all(np.isfinite(getattr(estimator, attr)))


@pytest.mark.parametrize("name", NAMES)
def test_two_rows_one_per_class_fit(name):
    if name == "DPGridSearch":
        pytest.skip("needs enough rows for its disjoint parts")
    accountant = BudgetAccountant()
    _make(name, accountant).fit([[0.1, 0.2], [-0.3, 0.1]], ["no", "yes"])
    assert accountant.spends == [(1.0, 0.0)]


@pytest.mark.parametrize("name", NAMES)
def test_sparse_input_with_nan(name):
    X = sp.csr_matrix(np.where(np.eye(40, 3) > 0, np.nan, 0.1))
    accountant = BudgetAccountant()
    estimator = _make(name, accountant)
    if estimator.__sklearn_tags__().input_tags.sparse:
        with pytest.raises(ValueError, match="Input X contains NaN"):
            estimator.fit(X, Y_VALID)
    else:
        # scikit-learn's convention for estimators without sparse support.
        with pytest.raises(TypeError, match="Sparse data was passed for X"):
            estimator.fit(X, Y_VALID)
    assert accountant.spends == []


@pytest.mark.parametrize("name", NAMES)
def test_predict_with_bad_input(name):
    rng = np.random.default_rng(0)
    X = rng.uniform(-0.5, 0.5, (40, 3))
    accountant = BudgetAccountant()
    estimator = _make(name, accountant)
    with pytest.raises(ValueError, match="not fitted"):
        estimator.predict(X)
    estimator.fit(X, Y_VALID)
    for bad, match in [(X[:, :2], "features"), (np.full((2, 3), np.nan), "NaN"),
                       (X[:0], r"0 sample\(s\)")]:
        with pytest.raises(ValueError, match=match):
            estimator.predict(bad)
    assert accountant.spends == [(1.0, 0.0)]  # prediction never spends


@pytest.mark.parametrize("name", NAMES)
def test_object_cell_in_x(name):
    # A TypeError, as scikit-learn's estimator checks require for a dict cell, with
    # a fixed message: the cell itself is training data and is not quoted.
    X = np.full((40, 2), 0.1, dtype=object)
    X[3, 1] = {"age": 3}
    accountant = BudgetAccountant()
    with pytest.raises(TypeError, match="not a real number") as info:
        _make(name, accountant).fit(X, Y_VALID)
    assert "age" not in str(info.value)
    assert info.value.__context__ is None  # the original message is not attached
    assert accountant.spends == []


@pytest.mark.parametrize("name", NAMES)
def test_mixed_type_labels(name):
    y = np.array(["a", 1] * 20, dtype=object)
    accountant = BudgetAccountant()
    with pytest.raises(ValueError, match="y mixes label types"):
        _make(name, accountant).fit(np.full((40, 2), 0.1), y)
    assert accountant.spends == []


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("name", NAMES)
def test_datetime_x(name):
    X = (np.arange(80).reshape(40, 2) * 86400).astype("datetime64[s]")
    accountant = BudgetAccountant()
    with pytest.raises(ValueError, match="datetime"):
        _make(name, accountant).fit(X, Y_VALID)
    assert accountant.spends == []


@pytest.mark.parametrize("name", NAMES)
def test_datetime_column_in_frame(name):
    pd = pytest.importorskip("pandas")
    X = pd.DataFrame({"x": np.linspace(0, 0.5, 40),
                      "when": pd.date_range("2020-01-01", periods=40, freq="D")})
    accountant = BudgetAccountant()
    with pytest.raises(ValueError, match="datetime"):
        _make(name, accountant).fit(X, Y_VALID)
    assert accountant.spends == []


# Regression: squared norms overflowed and zeroed rows above ~1e154.
def test_clip_rows_keeps_the_direction_of_huge_rows():
    clipped = clip_rows(np.array([[1e200, 0.0], [3e160, 4e160]]), 1.0)
    np.testing.assert_allclose(clipped, [[1.0, 0.0], [0.6, 0.8]])


def test_huge_rows_still_learn():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((400, 2))
    y = (X[:, 0] > 0).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = DPLogisticRegression(epsilon=50.0, random_state=0).fit(X * 1e200, y)
    assert model.score(X * 1e200, y) > 0.9
