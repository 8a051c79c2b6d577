"""make_table_encoder: a schema-driven encoder that learns nothing from the data."""

import pickle
import sys
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer

from dpsk import DPLogisticRegression, check_pipeline
from dpsk.datasets import load_adult, preprocess_adult
from dpsk.datasets._adult import CATEGORIES, NUMERIC_MAX_ABS
from dpsk.pipeline._private import make_private_pipeline
from dpsk.preprocessing import make_table_encoder, table_norm_bound

NUMERIC = {"age": (17, 90), "hours": (1, 99)}
CATEGORICAL = {"job": ["clerk", "farmer", "nurse"], "sex": ["F", "M"]}


def _frame(seed, n=60):
    """A mixed frame with missing entries, out-of-range numbers and undeclared categories."""
    rng = np.random.default_rng(seed)
    age = rng.uniform(0, 130, n)
    hours = rng.uniform(-20, 150, n)
    age[rng.random(n) < 0.2] = np.nan
    hours[:3] = np.nan  # also a column missing in some rows
    job = rng.choice(["clerk", "farmer", "nurse", "pilot"], n).astype(object)
    job[rng.random(n) < 0.2] = None
    sex = rng.choice(["F", "M"], n).astype(object)
    sex[rng.random(n) < 0.1] = np.nan
    return pd.DataFrame({"age": age, "hours": hours, "job": job, "sex": sex,
                         "extra": rng.normal(size=n)})


@pytest.mark.parametrize("fill_categorical", ["__missing__", None])
@pytest.mark.parametrize("fill_numeric", ["midpoint", 40.0])
def test_check_pipeline_accepts_it(fill_numeric, fill_categorical):
    enc = make_table_encoder(NUMERIC, CATEGORICAL, fill_numeric=fill_numeric,
                             fill_categorical=fill_categorical)
    assert isinstance(enc, ColumnTransformer)
    assert enc.sparse_threshold == 0 and enc.remainder == "drop"
    assert check_pipeline(make_private_pipeline(enc, DPLogisticRegression())) == []


def test_error_mode_also_accepted():
    enc = make_table_encoder(NUMERIC, CATEGORICAL, handle_unknown="error")
    assert check_pipeline(make_private_pipeline(enc, DPLogisticRegression())) == []


@pytest.mark.parametrize("fill_categorical", ["__missing__", None])
def test_row_norms_within_bound(fill_categorical):
    enc = make_table_encoder(NUMERIC, CATEGORICAL, fill_categorical=fill_categorical)
    bound = table_norm_bound(NUMERIC, CATEGORICAL)
    assert bound == pytest.approx(2.0)
    for seed in range(5):
        with warnings.catch_warnings():
            # undeclared values and missing entries must not make anything warn
            warnings.simplefilter("error")
            Xt = enc.fit_transform(_frame(seed))
        assert isinstance(Xt, np.ndarray) and np.all(np.isfinite(Xt))
        assert np.all((Xt >= 0) & (Xt <= 1))
        assert np.all(np.linalg.norm(Xt, axis=1) <= bound + 1e-12)
    # 2 numeric + (3 + missing) job + (2 + missing) sex, or without the missing columns.
    assert Xt.shape[1] == (9 if fill_categorical is not None else 7)


def test_encoding_values():
    enc = make_table_encoder(NUMERIC, CATEGORICAL)
    frame = pd.DataFrame({"age": [17.0, np.nan, 200.0], "hours": [50.0, 1.0, -5.0],
                          "job": ["nurse", None, "pilot"], "sex": ["F", "M", np.nan]})
    Xt = enc.fit_transform(frame)
    np.testing.assert_allclose(Xt[:, 0], [0.0, 0.5, 1.0])  # midpoint fill, clipping
    np.testing.assert_allclose(Xt[:, 1], [49 / 98, 0.0, 0.0])
    np.testing.assert_array_equal(Xt[:, 2:6], [[0, 0, 1, 0], [0, 0, 0, 1], [0, 0, 0, 0]])
    np.testing.assert_array_equal(Xt[:, 6:], [[1, 0, 0], [0, 1, 0], [0, 0, 1]])
    assert list(enc.get_feature_names_out()[:3]) == ["age", "hours", "job_clerk"]


# Missing entries in every form pandas (1.5 to 3) can hold them. SimpleImputer alone
# sees only NaN: an object column keeps None on pandas < 3 and pandas.NA breaks it.
_MISSING_FORMS = {
    "object-None": lambda: pd.Series(["F", None, "M", "pilot"], dtype=object),
    "object-NA": lambda: pd.Series(["F", pd.NA, "M", "pilot"], dtype=object),
    "object-NaN": lambda: pd.Series(["F", np.nan, "M", "pilot"], dtype=object),
    "string": lambda: pd.Series(["F", None, "M", "pilot"], dtype="string"),
    "category": lambda: pd.Series(["F", None, "M", "pilot"], dtype="category"),
}
_NUMERIC_FORMS = {
    "float": lambda: pd.Series([17.0, np.nan, 90.0, 200.0]),
    "Float64": lambda: pd.Series([17.0, None, 90.0, 200.0], dtype="Float64"),
    "Int64": lambda: pd.Series([17, None, 90, 200], dtype="Int64"),
    "object-None": lambda: pd.Series([17.0, None, 90.0, 200.0], dtype=object),
}


@pytest.mark.parametrize("numeric_form", sorted(_NUMERIC_FORMS))
@pytest.mark.parametrize("categorical_form", sorted(_MISSING_FORMS))
def test_missing_entries_in_any_form_are_filled(categorical_form, numeric_form):
    frame = pd.DataFrame({"age": _NUMERIC_FORMS[numeric_form](),
                          "sex": _MISSING_FORMS[categorical_form]()})
    Xt = make_table_encoder({"age": (17, 90)}, {"sex": ["F", "M"]}).fit_transform(frame)
    np.testing.assert_array_equal(Xt, [[0.0, 1, 0, 0], [0.5, 0, 0, 1], [1.0, 0, 1, 0],
                                       [1.0, 0, 0, 0]])
    Xt = make_table_encoder({"age": (17, 90)}, {"sex": ["F", "M"]},
                            fill_categorical=None).fit_transform(frame)
    np.testing.assert_array_equal(Xt[:, 1:], [[1, 0], [0, 0], [0, 1], [0, 0]])


def test_missing_marking_without_pandas(monkeypatch):
    from dpsk.preprocessing import _table

    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas now fails
    X = np.array([["a", None], [np.nan, 1.0]], dtype=object)
    out = _table._missing_to_nan(X)
    assert out[0, 0] == "a" and out[1, 1] == 1.0
    assert np.isnan(out[0, 1]) and np.isnan(out[1, 0])
    assert X[0, 1] is None  # the input is not modified
    floats = np.array([[1.0, np.nan]])
    assert _table._missing_to_nan(floats) is floats


def test_integer_positions_and_numeric_categories():
    enc = make_table_encoder({0: (0, 10)}, {1: [3, 1, 2]}, fill_categorical=0)
    Xt = enc.fit_transform(np.array([[5.0, 1.0], [np.nan, np.nan], [20.0, 3.0]]))
    # numeric categories are sorted, the fill 0 is added as one more category
    np.testing.assert_array_equal(Xt, [[0.5, 0, 1, 0, 0], [0.5, 1, 0, 0, 0],
                                       [1.0, 0, 0, 0, 1]])


def test_handle_unknown_error_refuses_undeclared_values():
    enc = make_table_encoder(NUMERIC, CATEGORICAL, handle_unknown="error")
    with pytest.raises(ValueError):
        enc.fit(_frame(0))


def test_fitted_encoder_does_not_depend_on_the_data():
    enc = make_table_encoder(NUMERIC, CATEGORICAL)
    a, b = _frame(1), _frame(2)
    assert not a.equals(b)
    fitted_a = pickle.dumps(enc.fit(a))
    fitted_b = pickle.dumps(make_table_encoder(NUMERIC, CATEGORICAL).fit(b))
    assert fitted_a == fitted_b


def test_end_to_end_with_private_model():
    frame = _frame(3, n=200)
    y = (frame["sex"] == "M").to_numpy().astype(int)
    enc = make_table_encoder(NUMERIC, CATEGORICAL)
    pipe = make_private_pipeline(
        enc,
        DPLogisticRegression(epsilon=1.0, data_norm=table_norm_bound(NUMERIC, CATEGORICAL),
                             classes=[0, 1], random_state=0),
        strict=True,
    )
    pipe.fit(frame, y)
    assert pipe.predict(frame).shape == (200,)


def test_adult_schema_matches_preprocess_adult_shape():
    X, y = load_adult(return_X_y=True, as_frame=True)
    X, y = X.iloc[:500], y.iloc[:500]
    numeric = {attr: (0.0, bound) for attr, bound in NUMERIC_MAX_ABS.items()}
    enc = make_table_encoder(numeric, CATEGORIES, fill_categorical=None)
    Xt = enc.fit_transform(X)
    n_columns = len(NUMERIC_MAX_ABS) + sum(len(v) for v in CATEGORIES.values())
    assert Xt.shape == (500, n_columns)
    assert preprocess_adult(load_adult(return_X_y=True)[0][:50])[0].shape[1] == n_columns
    bound = table_norm_bound(numeric, CATEGORIES)
    assert bound == pytest.approx(np.sqrt(14))
    assert np.all(np.linalg.norm(Xt, axis=1) <= bound + 1e-12)
    pipe = make_private_pipeline(
        enc, DPLogisticRegression(epsilon=1.0, data_norm=bound, random_state=0,
                                  classes=["<=50K", ">50K"]),
        strict=True)
    pipe.fit(X, y)


@pytest.mark.parametrize("numeric, categorical, match", [
    (None, None, "no columns"),
    ({}, {}, "no columns"),
    ({"a": (1, 1)}, None, "low < high"),
    ({"a": (2, 1)}, None, "low < high"),
    ({"a": (0, np.inf)}, None, "finite"),
    ({"a": (0, np.nan)}, None, "finite"),
    ({"a": (0, 1, 2)}, None, "pair"),
    ({"a": "01"}, None, "pair"),
    ({"a": (0, "1")}, None, "pair"),
    (None, {"c": []}, "no categories"),
    (None, {"c": "ab"}, "list of categories"),
    (None, {"c": ["x", "x"]}, "more than once"),
    (None, {"c": ["x", None]}, "missing value"),
    (None, {"c": [1.0, np.nan]}, "missing value"),
    (None, {"c": [["x"], ["y"]]}, "unhashable"),
    (None, {"c": ["x", 1]}, "only strings, only numbers or only booleans"),
    (None, {"c": [True, 2]}, "only strings, only numbers or only booleans"),
    (None, {"c": [1, "2"]}, "only strings, only numbers"),
    ({"a": (0, 1)}, {"a": ["x"]}, "both numeric and categorical"),
    ({"a": (0, 1)}, {0: ["x"]}, "all strings"),
])
def test_schema_errors(numeric, categorical, match):
    with pytest.raises(ValueError, match=match):
        make_table_encoder(numeric, categorical)


def test_parameter_errors():
    with pytest.raises(TypeError, match="mapping"):
        make_table_encoder([("a", (0, 1))])
    with pytest.raises(ValueError, match="fill_numeric"):
        make_table_encoder(NUMERIC, fill_numeric="mean")
    with pytest.raises(ValueError, match="fill_numeric"):
        make_table_encoder(NUMERIC, fill_numeric=np.nan)
    with pytest.raises(ValueError, match="handle_unknown"):
        make_table_encoder(NUMERIC, handle_unknown="warn")
    with pytest.raises(ValueError, match="fill_categorical"):
        make_table_encoder(None, CATEGORICAL, fill_categorical=["x"])
    with pytest.raises(ValueError, match="no columns"):
        table_norm_bound()


def test_refusals_name_the_column_never_the_value():
    # The refused value may be personal data: the message must not carry it.
    pd = pytest.importorskip("pandas")
    secret = "Zelda-Smith-1972"
    enc = make_table_encoder({"age": (17, 90)}, {"sex": ["F", "M"]}, handle_unknown="error")
    with pytest.raises(ValueError, match="'sex'") as info:
        enc.fit(pd.DataFrame({"age": [20.0, 30.0], "sex": ["M", secret]}))
    assert secret not in str(info.value) and info.value.__cause__ is None
    enc = make_table_encoder({"age": (17, 90)}, {"sex": ["F", "M"]})
    with pytest.raises(ValueError, match="not a number") as info:
        enc.fit(pd.DataFrame({"age": [20, "secret-77"], "sex": ["M", "F"]}))
    assert "secret-77" not in str(info.value)


def test_declared_missing_entries_pass_the_unknown_check():
    pd = pytest.importorskip("pandas")
    enc = make_table_encoder({"age": (17, 90)}, {"sex": ["F", "M"]}, handle_unknown="error")
    Xt = enc.fit_transform(pd.DataFrame({"age": [20.0, None], "sex": [None, "F"]}))
    assert Xt.shape == (2, 4)


@pytest.mark.parametrize("fill", ["__missing__", None])
def test_string_column_that_is_entirely_missing_as_float_nan(fill):
    # pandas stores an all-NaN column as float64: a CV fold or a small batch can be one.
    pd = pytest.importorskip("pandas")
    enc = make_table_encoder({"age": (17, 90)}, {"sex": ["F", "M"]}, fill_categorical=fill)
    frame = pd.DataFrame({"age": [20.0, 30.0], "sex": [np.nan, np.nan]})
    Xt = enc.fit_transform(frame)
    expected_missing = [1.0, 1.0] if fill is not None else [0.0, 0.0]
    np.testing.assert_array_equal(Xt[:, -1] if fill is not None else Xt[:, 1:].sum(axis=1),
                                  expected_missing)


def test_numeric_codes_with_the_default_fill():
    # The quickstart's schema with 0/1 codes (found re-running it on Ecdat tables).
    pd = pytest.importorskip("pandas")
    enc = make_table_encoder(None, {"flag": [0, 1], "size": [1, 2.5]})
    frame = pd.DataFrame({"flag": [1, 0, None, 7], "size": [2.5, 1.0, 1.0, None]})
    Xt = enc.fit_transform(frame)
    np.testing.assert_array_equal(Xt, [[0, 1, 0, 0, 1, 0], [1, 0, 0, 1, 0, 0],
                                       [0, 0, 1, 1, 0, 0], [0, 0, 0, 0, 0, 1]])
    assert list(enc.get_feature_names_out()) == [
        "flag_0", "flag_1", "flag___missing__", "size_1", "size_2.5", "size___missing__"]
    with pytest.raises(ValueError, match="'flag'"):
        make_table_encoder(None, {"flag": [0, 1]}, handle_unknown="error").fit(frame)
    # A numeric fill keeps numeric categories numeric.
    enc = make_table_encoder(None, {"flag": [0, 1]}, fill_categorical=-1)
    assert enc.fit_transform(pd.DataFrame({"flag": [1, None]})).shape == (2, 3)
