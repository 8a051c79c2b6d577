import gzip
import sys

import numpy as np
import pytest
from sklearn.utils import Bunch

from dpsk.datasets import _adult, load_adult, preprocess_adult

N_RAW = 48842
N_COMPLETE = 45222
N_FEATURES = 105


@pytest.fixture
def fresh_cache():
    # Tests that tamper with the file reader must neither see nor leave
    # behind a cached parse.
    _adult._load_raw_arrays.cache_clear()
    yield
    _adult._load_raw_arrays.cache_clear()


def test_raw_shapes_and_types():
    bunch = load_adult()
    assert isinstance(bunch, Bunch)
    X, y = bunch.data, bunch.target
    assert X.shape == (N_RAW, 14)
    assert X.dtype == object
    assert y.shape == (N_RAW,)
    assert set(y) == {"<=50K", ">50K"}
    assert bunch.feature_names == list(_adult.ATTRIBUTE_NAMES)
    assert list(bunch.target_names) == ["<=50K", ">50K"]
    assert bunch.frame is None
    assert "CC BY 4.0" in bunch.DESCR
    assert "10.24432/C5XW20" in bunch.DESCR
    # First record of adult.data, then first record of adult.test.
    assert list(X[0, :4]) == [39.0, "State-gov", 77516.0, "Bachelors"]
    assert list(X[32561, :4]) == [25.0, "Private", 226802.0, "11th"]
    assert y[32561] == "<=50K"


def test_raw_missing_values():
    X, _ = load_adult(return_X_y=True)
    workclass = X[:, _adult.ATTRIBUTE_NAMES.index("workclass")]
    assert sum(v is None for v in workclass) == 2799
    assert not any(v == "?" for v in X.ravel())
    incomplete = np.array([any(v is None for v in row) for row in X])
    assert int((~incomplete).sum()) == N_COMPLETE


def test_preprocessed_shapes_norms_and_labels():
    bunch = load_adult(preprocess=True)
    X, y = bunch.data, bunch.target
    assert X.shape == (N_COMPLETE, N_FEATURES)
    assert X.dtype == np.float64
    assert np.all(np.isfinite(X))
    assert np.all(np.linalg.norm(X, axis=1) <= 1 + 1e-12)
    assert y.dtype.kind == "i"
    assert set(np.unique(y)) == {0, 1}
    assert y.mean() == pytest.approx(0.248, abs=0.001)
    assert len(bunch.feature_names) == X.shape[1]
    assert list(bunch.target_names) == ["<=50K", ">50K"]


def test_preprocessed_column_layout_is_fixed():
    names = load_adult(preprocess=True).feature_names
    assert names == list(_adult.PREPROCESSED_FEATURE_NAMES)
    assert len(set(names)) == len(names)
    assert names[0] == "age"
    assert names[1:9] == [f"workclass={v}" for v in _adult.CATEGORIES["workclass"]]
    assert "workclass=Private" in names
    assert names[-1] == "native-country=Yugoslavia"
    for values in _adult.CATEGORIES.values():
        assert list(values) == sorted(values)
    # A subset that lacks some categories must still get every column.
    X_raw, _ = load_adult(return_X_y=True)
    X_small, mask = preprocess_adult(X_raw[:50])
    assert X_small.shape == (mask.sum(), N_FEATURES)
    X_full = load_adult(preprocess=True).data
    np.testing.assert_array_equal(X_small, X_full[: mask.sum()])


def test_preprocessing_matches_paper_recipe():
    X_raw, _ = load_adult(return_X_y=True)
    X, mask = preprocess_adult(X_raw)
    kept = X_raw[mask]
    # Rebuild row 0 by hand: scaled numerics and one indicator per attribute.
    row = np.zeros(N_FEATURES)
    for attr, value in zip(_adult.ATTRIBUTE_NAMES, kept[0]):
        if attr in _adult.NUMERIC_MAX_ABS:
            row[_adult.PREPROCESSED_FEATURE_NAMES.index(attr)] = (
                value / _adult.NUMERIC_MAX_ABS[attr]
            )
        else:
            row[_adult.PREPROCESSED_FEATURE_NAMES.index(f"{attr}={value}")] = 1.0
    np.testing.assert_allclose(X[0], row / np.linalg.norm(row), rtol=1e-12)
    # Each categorical block is one-hot (up to the common row scale).
    for attr in _adult.CATEGORIES:
        block = X[:, _adult._BLOCKS[attr]]
        assert np.all((block > 0).sum(axis=1) == 1)


def test_numeric_maxima_match_data():
    X_raw, _ = load_adult(return_X_y=True)
    for j, attr in enumerate(_adult.ATTRIBUTE_NAMES):
        if attr in _adult.NUMERIC_MAX_ABS:
            column = X_raw[:, j].astype(float)
            assert np.nanmax(np.abs(column)) == _adult.NUMERIC_MAX_ABS[attr]
        else:
            observed = {v for v in X_raw[:, j] if v is not None}
            assert observed == set(_adult.CATEGORIES[attr])


def test_return_X_y():
    X, y = load_adult(return_X_y=True, preprocess=True)
    assert X.shape == (N_COMPLETE, N_FEATURES)
    assert y.shape == (N_COMPLETE,)
    X, y = load_adult(return_X_y=True)
    assert X.shape == (N_RAW, 14)


def test_returned_arrays_do_not_alias_cache():
    X, y = load_adult(return_X_y=True)
    X[0, 0] = -1.0
    y[0] = "tampered"
    X2, y2 = load_adult(return_X_y=True)
    assert X2[0, 0] == 39.0
    assert y2[0] == "<=50K"


def test_as_frame_raw():
    pd = pytest.importorskip("pandas")
    bunch = load_adult(as_frame=True)
    assert isinstance(bunch.data, pd.DataFrame)
    assert isinstance(bunch.target, pd.Series)
    assert bunch.target.name == "income"
    assert list(bunch.data.columns) == list(_adult.ATTRIBUTE_NAMES)
    assert bunch.data.shape == (N_RAW, 14)
    assert bunch.data["age"].dtype == np.float64
    assert bunch.data["workclass"].isna().sum() == 2799
    assert list(bunch.frame.columns) == list(_adult.ATTRIBUTE_NAMES) + ["income"]
    # The frame round-trips through preprocess_adult, extra target column
    # and all, to the same matrix as the array path.
    X, mask = preprocess_adult(bunch.frame)
    np.testing.assert_array_equal(X, load_adult(preprocess=True).data)
    assert mask.sum() == N_COMPLETE


def test_as_frame_preprocessed():
    pd = pytest.importorskip("pandas")
    X, y = load_adult(as_frame=True, preprocess=True, return_X_y=True)
    assert isinstance(X, pd.DataFrame)
    assert X.shape == (N_COMPLETE, N_FEATURES)
    assert "workclass=Private" in X.columns
    assert y.name == "income"
    assert set(y.unique()) == {0, 1}
    bunch = load_adult(as_frame=True, preprocess=True)
    assert bunch.frame.shape == (N_COMPLETE, N_FEATURES + 1)


def test_as_frame_without_pandas(monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ImportError, match="requires pandas"):
        load_adult(as_frame=True)
    # The array path must not need pandas at all.
    X, y = load_adult(return_X_y=True, preprocess=True)
    assert X.shape == (N_COMPLETE, N_FEATURES)


def test_checksum_mismatch_raises(monkeypatch, fresh_cache):
    original = _adult._read_packaged_file

    def corrupted(filename):
        content = bytearray(gzip.decompress(original(filename)))
        content[100] ^= 0x01
        return gzip.compress(bytes(content))

    monkeypatch.setattr(_adult, "_read_packaged_file", corrupted)
    with pytest.raises(OSError, match="sha256 checksum mismatch"):
        load_adult()


def test_invalid_gzip_raises(monkeypatch, fresh_cache):
    monkeypatch.setattr(_adult, "_read_packaged_file", lambda name: b"not gzip")
    with pytest.raises(OSError, match="not a valid gzip"):
        load_adult(preprocess=True)


@pytest.mark.parametrize("name", ["return_X_y", "as_frame", "preprocess"])
@pytest.mark.parametrize(
    "value, error", [("yes", TypeError), (None, TypeError), (0.5, TypeError), (2, ValueError)]
)
def test_bad_arguments(name, value, error):
    with pytest.raises(error, match=name):
        load_adult(**{name: value})


def test_positional_arguments_rejected():
    with pytest.raises(TypeError):
        load_adult(True)


def test_bool_like_arguments_accepted():
    X, _ = load_adult(return_X_y=np.bool_(True), preprocess=1)
    assert X.shape == (N_COMPLETE, N_FEATURES)


def test_preprocess_adult_handles_uci_style_input():
    # Rows as read straight from a UCI file with read_csv(sep=","): padded
    # strings and "?" for missing values.
    rows = np.array(
        [
            [39, " State-gov", 77516, " Bachelors", 13, " Never-married",
             " Adm-clerical", " Not-in-family", " White", " Male", 2174, 0, 40,
             " United-States"],
            [50, " ?", 83311, " Bachelors", 13, " Married-civ-spouse",
             " Exec-managerial", " Husband", " White", " Male", 0, 0, 13,
             " United-States"],
        ],
        dtype=object,
    )
    X, mask = preprocess_adult(rows)
    np.testing.assert_array_equal(mask, [True, False])
    X_ref, _ = load_adult(return_X_y=True, preprocess=True)
    np.testing.assert_allclose(X[0], X_ref[0], rtol=1e-15)


def test_preprocess_adult_rejects_bad_input():
    X_raw, _ = load_adult(return_X_y=True)
    with pytest.raises(ValueError, match="14 Adult attributes"):
        preprocess_adult(X_raw[:, :13])
    bad = X_raw[:3].copy()
    bad[0, _adult.ATTRIBUTE_NAMES.index("race")] = "Martian"
    with pytest.raises(ValueError, match="Martian"):
        preprocess_adult(bad)
    bad = X_raw[:3].copy()
    bad[0, 0] = "old"
    with pytest.raises(ValueError, match="'age' must be numeric"):
        preprocess_adult(bad)
    # An unknown value in a row that is dropped anyway is not an error.
    bad = X_raw[:3].copy()
    bad[0, _adult.ATTRIBUTE_NAMES.index("race")] = "Martian"
    bad[0, 0] = np.nan
    X, mask = preprocess_adult(bad)
    assert X.shape == (2, N_FEATURES) and not mask[0]


def test_preprocess_adult_dataframe_missing_column():
    pytest.importorskip("pandas")
    frame = load_adult(as_frame=True).data.drop(columns="sex")
    with pytest.raises(ValueError, match="sex"):
        preprocess_adult(frame)
