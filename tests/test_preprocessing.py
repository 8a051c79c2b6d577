"""DP-safe preprocessing and the pipeline leak check."""

import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from _sklearn_checks import parametrize_with_checks
from sklearn.base import clone
from sklearn.compose import ColumnTransformer, make_column_transformer
from sklearn.decomposition import PCA
from sklearn.impute import MissingIndicator, SimpleImputer
from sklearn.model_selection import GridSearchCV, cross_validate
from sklearn.pipeline import FeatureUnion, Pipeline, make_pipeline
from sklearn.preprocessing import (
    FunctionTransformer,
    MinMaxScaler,
    Normalizer,
    OneHotEncoder,
    OrdinalEncoder,
    StandardScaler,
)

from dpsk import (
    BudgetAccountant,
    DPGridSearch,
    DPHuberSVM,
    DPLogisticRegression,
    DPPredictionEnsemble,
    LeakyPipelineWarning,
)
from dpsk.pipeline._check import check_pipeline, warn_if_pipeline_leaks
from dpsk.pipeline._private import PrivatePipeline, make_private_pipeline
from dpsk.preprocessing import BoundedScaler, RowNormClipper


@parametrize_with_checks([RowNormClipper(), BoundedScaler(), BoundedScaler(lower=-2.0, upper=3.0)])
def test_sklearn_compatible(estimator, check):
    check(estimator)


# -- RowNormClipper ----------------------------------------------------------------


def test_row_norm_clipper_clips_only_long_rows():
    X = np.array([[3.0, 4.0], [0.3, 0.4], [0.0, 0.0], [-6.0, 8.0]])
    Xt = RowNormClipper(data_norm=2.0).fit_transform(X)
    np.testing.assert_allclose(np.linalg.norm(Xt, axis=1), [2.0, 0.5, 0.0, 2.0])
    np.testing.assert_allclose(Xt[1], X[1])
    np.testing.assert_allclose(Xt[3] / np.linalg.norm(Xt[3]), X[3] / 10.0)
    assert Xt is not X and X[0, 0] == 3.0  # input untouched


@pytest.mark.parametrize("fmt", [sp.csr_matrix, sp.csr_array, sp.csc_matrix])
def test_row_norm_clipper_sparse(fmt):
    X = np.array([[3.0, 4.0, 0.0], [0.0, 0.1, 0.0]])
    Xt = RowNormClipper().fit_transform(fmt(X))
    assert sp.issparse(Xt) and Xt.format == "csr"
    np.testing.assert_allclose(Xt.toarray(), RowNormClipper().fit_transform(X))


def test_row_norm_clipper_is_stateless_and_row_wise():
    # The output for a row does not depend on the other rows, nor on what fit saw.
    rng = np.random.default_rng(0)
    X = rng.standard_normal((20, 3)) * 5
    full = RowNormClipper().fit(rng.standard_normal((7, 3))).transform(X)
    one_by_one = np.vstack([RowNormClipper().transform(X[i:i + 1]) for i in range(20)])
    np.testing.assert_allclose(full, one_by_one)


def test_row_norm_clipper_is_silent():
    # How many rows were clipped depends on the data: inside a private pipeline's
    # fit nothing may report it.
    X = [[3.0, 4.0], [0.1, 0.0]]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        RowNormClipper().fit_transform(X)


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf"), "1"])
def test_row_norm_clipper_rejects_bad_data_norm(bad):
    with pytest.raises(ValueError, match="data_norm"):
        RowNormClipper(data_norm=bad).fit([[1.0]])
    with pytest.raises(ValueError, match="data_norm"):
        RowNormClipper(data_norm=bad).transform([[1.0]])


# -- BoundedScaler -------------------------------------------------------------------


def test_bounded_scaler_maps_and_clips():
    X = np.array([[17.0, 40.0], [90.0, 99.0], [45.0, 120.0], [0.0, -5.0]])
    scaler = BoundedScaler(lower=[17, 0], upper=[90, 99]).fit(X)
    Xt = scaler.transform(X)
    np.testing.assert_allclose(Xt[:, 0], [0.0, 1.0, 28 / 73, 0.0])
    np.testing.assert_allclose(Xt[:, 1], [40 / 99, 1.0, 1.0, 0.0])
    assert Xt.min() >= 0 and Xt.max() <= 1
    # Inside the bounds, inverse_transform undoes transform.
    np.testing.assert_allclose(scaler.inverse_transform(Xt[:2]), X[:2])


def test_bounded_scaler_scalar_bounds_and_float32():
    X = np.array([[-1.0, 0.0, 1.0]], dtype=np.float32)
    Xt = BoundedScaler(lower=-1, upper=1).fit_transform(X)
    assert Xt.dtype == np.float32
    np.testing.assert_allclose(Xt, [[0.0, 0.5, 1.0]])


def test_bounded_scaler_fit_learns_nothing():
    # Fitting on wildly different data gives the same transform: fit never reads values.
    rng = np.random.default_rng(0)
    X = rng.standard_normal((10, 2))
    a = BoundedScaler(-2, 2).fit(rng.standard_normal((5, 2)) * 1e6).transform(X)
    b = BoundedScaler(-2, 2).fit(np.zeros((1, 2))).transform(X)
    c = BoundedScaler(-2, 2).transform(X)  # stateless: no fit needed
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, c)


@pytest.mark.parametrize(
    "lower, upper, match",
    [
        (1.0, 1.0, "lower must be < upper"),
        ([0, 2], [1, 1], r"feature\(s\) \[1\]"),
        ([0, 0, 0], 1.0, "lower has 3 values but X has 2"),
        (0.0, [1.0], "upper has 1 values but X has 2"),
        (float("nan"), 1.0, "lower must be finite"),
        (0.0, float("inf"), "upper must be finite"),
        ([[0, 0]], 1.0, "lower must be a number or a 1-d array"),
        (["a", "b"], 1.0, "lower must be a number or an array"),
        ("a", 1.0, "lower"),
    ],
)
def test_bounded_scaler_rejects_bad_bounds(lower, upper, match):
    with pytest.raises(ValueError, match=match):
        BoundedScaler(lower, upper).fit([[0.5, 0.5]])
    with pytest.raises(ValueError, match=match):
        BoundedScaler(lower, upper).transform([[0.5, 0.5]])


def test_bounded_scaler_rejects_sparse():
    with pytest.raises(TypeError, match="dense data is required"):
        BoundedScaler().fit(sp.csr_matrix([[1.0]]))


def test_feature_names_out():
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"age": [20.0, 60.0], "hours": [10.0, 50.0]})
    for step in (RowNormClipper(100.0), BoundedScaler([17, 0], [90, 99])):
        step.fit(df)
        np.testing.assert_array_equal(step.get_feature_names_out(), ["age", "hours"])


def test_safe_pipeline_fits_and_charges_once():
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 100, size=(200, 3))
    y = (X[:, 0] > 50).astype(int)
    acc = BudgetAccountant(epsilon=1.0)
    pipe = make_pipeline(
        BoundedScaler(0, 100), RowNormClipper(np.sqrt(3)),
        DPLogisticRegression(epsilon=0.5, data_norm=np.sqrt(3), accountant=acc, random_state=0,
                             classes=[0, 1]),
    )
    pipe.fit(X, y)
    assert acc.spends == [(0.5, 0.0)]
    assert check_pipeline(pipe) == []
    assert pipe.predict(X).shape == (200,)


# -- check_pipeline ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "steps, expected",
    [
        ([StandardScaler(), DPLogisticRegression()], ["standardscaler"]),
        ([MinMaxScaler(), PCA(1), DPHuberSVM()], ["minmaxscaler", "pca"]),
        ([RowNormClipper(), BoundedScaler(), DPLogisticRegression()], []),
        ([FunctionTransformer(np.tanh), Normalizer(), DPLogisticRegression()], []),
        # Its fit round-trips rows through the inverse and warns from their values.
        ([FunctionTransformer(np.tanh, inverse_func=np.arctanh), DPLogisticRegression()],
         ["functiontransformer"]),
        ([FunctionTransformer(np.tanh, inverse_func=np.arctanh, check_inverse=False),
          DPLogisticRegression()], []),
        (["passthrough", DPLogisticRegression()], []),
        ([DPLogisticRegression()], []),
        ([BoundedScaler(), StandardScaler(), RowNormClipper(), DPLogisticRegression()],
         ["standardscaler"]),
    ],
)
def test_check_pipeline(steps, expected):
    assert check_pipeline(make_pipeline(*steps)) == expected


def test_check_pipeline_nested():
    inner = Pipeline([("clip", RowNormClipper()), ("std", StandardScaler())])
    ct = ColumnTransformer(
        [("num", BoundedScaler(), [0]), ("cat", OneHotEncoder(), [1]), ("pca", PCA(1), [2, 3])],
        remainder=MinMaxScaler(),
    )
    union = FeatureUnion([("a", FunctionTransformer()), ("b", StandardScaler())])
    pipe = Pipeline([("inner", inner), ("ct", ct), ("u", union), ("noop", None),
                     ("clf", DPLogisticRegression())])
    assert check_pipeline(pipe) == [
        "inner__std", "ct__cat", "ct__pca", "ct__remainder", "ct (sparse_threshold > 0)",
        "u__b",
    ]
    # A column transformer is safe only if it cannot choose sparse output from
    # the data's density (sparse_output_ is a fitted, data-dependent bit).
    safe_ct = make_column_transformer((BoundedScaler(), [0]), ("drop", [1]),
                                      remainder="passthrough", sparse_threshold=0)
    assert check_pipeline(make_pipeline(safe_ct, DPLogisticRegression())) == []
    dense_choice = make_column_transformer((BoundedScaler(), [0]), remainder="passthrough")
    assert check_pipeline(make_pipeline(dense_choice, DPLogisticRegression())) == [
        "columntransformer (sparse_threshold > 0)"]


@pytest.mark.filterwarnings("ignore:.*data_norm:UserWarning")
def test_check_pipeline_works_on_fitted_pipelines():
    rng = np.random.default_rng(0)
    X, y = rng.uniform(0, 0.5, size=(60, 2)), np.repeat([0, 1], 30)
    pipe = make_pipeline(StandardScaler(), DPLogisticRegression(random_state=0, classes=[0, 1]))
    with pytest.warns(LeakyPipelineWarning):
        pipe.fit(X, y)
    assert check_pipeline(pipe) == ["standardscaler"]


def test_check_pipeline_rejects_non_pipelines_and_non_private_ones():
    with pytest.raises(TypeError, match="Pipeline"):
        check_pipeline(DPLogisticRegression())
    with pytest.raises(ValueError, match="no dpsk estimator"):
        check_pipeline(make_pipeline(StandardScaler(), PCA()))


def test_check_pipeline_treats_unknown_objects_as_learning():
    class Custom:
        def fit(self, X, y=None):
            return self

        def transform(self, X):
            return X

    pipe = Pipeline([("custom", Custom()), ("clf", DPLogisticRegression())])
    assert check_pipeline(pipe) == ["custom"]


def test_warn_if_pipeline_leaks():
    leaky = make_pipeline(StandardScaler(), PCA(1), DPLogisticRegression())
    with pytest.warns(UserWarning, match=r"\['standardscaler', 'pca'\]") as record:
        assert warn_if_pipeline_leaks(leaky) == ["standardscaler", "pca"]
    assert record[0].filename == __file__  # points at the caller
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert warn_if_pipeline_leaks(make_pipeline(RowNormClipper(), DPHuberSVM())) == []


# -- declared-parameter scikit-learn steps (real tables) ----------------------------------

_CATS = [["a", "b", "c"], ["x", "y"]]

DECLARED = [
    OneHotEncoder(categories=_CATS, handle_unknown="ignore"),
    OneHotEncoder(categories=_CATS, handle_unknown="infrequent_if_exist"),
    OneHotEncoder(categories=_CATS, handle_unknown="error", drop="first"),
    OneHotEncoder(categories=_CATS, handle_unknown="error", drop="if_binary"),
    OrdinalEncoder(categories=_CATS),
    OrdinalEncoder(categories=_CATS, handle_unknown="use_encoded_value", unknown_value=-1),
    SimpleImputer(strategy="constant", fill_value="a", keep_empty_features=True),
    MissingIndicator(features="all"),
]

LEARNING = [
    OneHotEncoder(),
    OneHotEncoder(categories=_CATS, handle_unknown="infrequent_if_exist", min_frequency=2),
    OneHotEncoder(categories=_CATS, handle_unknown="infrequent_if_exist", max_categories=2),
    OneHotEncoder(categories=_CATS, handle_unknown="warn"),
    OneHotEncoder(categories=_CATS, handle_unknown="ignore", drop="first"),
    OrdinalEncoder(),
    OrdinalEncoder(categories=_CATS, min_frequency=2),
    SimpleImputer(),
    SimpleImputer(strategy="most_frequent", keep_empty_features=True),
    SimpleImputer(strategy="constant", fill_value="a"),
    SimpleImputer(strategy="constant", fill_value="a", keep_empty_features=True,
                  add_indicator=True),
    MissingIndicator(),
]


def _cat_data(seed):
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.choice(["a", "b", "c"], 30), rng.choice(["x", "y"], 30)])
    X = X.astype(object)
    X[rng.random(30) < 0.2, 0] = np.nan
    X[:, 1] = np.nan if seed == 1 else X[:, 1]  # a column missing in every row
    return X


@pytest.mark.parametrize("step", DECLARED, ids=repr)
def test_declared_sklearn_steps_pass_and_learn_nothing(step):
    assert check_pipeline(make_pipeline(step, DPLogisticRegression())) == []
    if isinstance(step, (OneHotEncoder, OrdinalEncoder)) and step.handle_unknown == "error":
        return  # NaN is undeclared: the fit refuses it (free, before the private model)
    # Fitted on two different data sets of the same shape, everything stored is equal.
    states = []
    for seed in (0, 1):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            fitted = clone(step).fit(_cat_data(seed))
        states.append(pickle.dumps(fitted))
    assert states[0] == states[1]


@pytest.mark.parametrize("step", LEARNING, ids=repr)
def test_learning_sklearn_steps_are_flagged(step):
    assert check_pipeline(make_pipeline(step, DPLogisticRegression())) == [
        type(step).__name__.lower()]


def test_undeclared_category_is_refused_before_anything_is_charged():
    acc = BudgetAccountant(epsilon=1.0)
    # A plain Pipeline: scikit-learn's message (which quotes the cell) reaches the
    # caller, because the encoder fails before any dpsk code runs.
    pipe = make_pipeline(OneHotEncoder(categories=[["a", "b"]], sparse_output=False),
                         DPLogisticRegression(accountant=acc, classes=[0, 1]))
    with pytest.raises(ValueError, match="unknown categor"):
        pipe.fit(np.array([["a"], ["z"]], dtype=object), [0, 1])
    # A PrivatePipeline replaces it with a fixed message naming the step only.
    private = PrivatePipeline(pipe.steps)
    with pytest.raises(ValueError, match="'onehotencoder'") as info:
        private.fit(np.array([["a"], ["z"]], dtype=object), [0, 1])
    assert "'z'" not in str(info.value) and info.value.__context__ is None
    assert acc.spends == []


def _mixed_frame():
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    n = 200
    frame = pd.DataFrame({
        "age": rng.uniform(17, 90, n),
        "hours": rng.uniform(0, 99, n),
        "job": rng.choice(["clerk", "farmer", "nurse"], n).astype(object),
        "sex": rng.choice(["F", "M"], n).astype(object),
    })
    frame.loc[rng.random(n) < 0.1, "age"] = np.nan
    frame.loc[rng.random(n) < 0.1, "job"] = None
    y = (frame["hours"] > 40).astype(int).to_numpy()
    return frame, y


def _table_pipeline(acc, **kwargs):
    numeric = make_pipeline(
        SimpleImputer(strategy="constant", fill_value=40.0, keep_empty_features=True),
        BoundedScaler(lower=[17, 0], upper=[90, 99]),
    )
    categorical = make_pipeline(
        SimpleImputer(strategy="constant", fill_value="unknown", keep_empty_features=True),
        OneHotEncoder(categories=[["clerk", "farmer", "nurse", "unknown"], ["F", "M"]],
                      handle_unknown="ignore"),
    )
    columns = make_column_transformer(
        (numeric, ["age", "hours"]), (categorical, ["job", "sex"]), sparse_threshold=0)
    # Rows: two values in [0, 1] plus one active indicator per categorical column.
    return make_private_pipeline(
        columns, DPLogisticRegression(epsilon=1.0, data_norm=2.0, classes=[0, 1],
                                      accountant=acc, random_state=0), **kwargs)


def test_mixed_table_pipeline_fits_end_to_end_without_warnings():
    X, y = _mixed_frame()
    acc = BudgetAccountant(epsilon=2.0)
    pipe = _table_pipeline(acc, strict=True)
    assert check_pipeline(pipe) == []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pipe.fit(X, y)
    assert acc.spends == [(1.0, 0.0)]
    assert pipe.predict(X).shape == (200,)
    assert pipe[:-1].transform(X).shape == (200, 2 + 4 + 2)


# -- the warning from a plain Pipeline ---------------------------------------------------


def _leak_warnings(fit, *args):
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        fit(*args)
    return [w for w in record if issubclass(w.category, LeakyPipelineWarning)]


def _blobs(seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(120, 3))
    return X, (X[:, 0] > 0).astype(int)


@pytest.mark.parametrize("model", [
    DPLogisticRegression(classes=[0, 1], random_state=0),
    DPHuberSVM(classes=[0, 1], random_state=0),
    DPPredictionEnsemble(DPLogisticRegression(), classes=[0, 1], n_teachers=2, random_state=0),
    DPGridSearch(DPLogisticRegression(classes=[0, 1]), {"alpha": [1e-2, 1e-3]},
                 random_state=0),
])
def test_plain_pipeline_warns_once_at_fit_naming_the_leaky_steps(model):
    pipe = make_pipeline(StandardScaler(), clone(model))
    leaks = _leak_warnings(pipe.fit, *_blobs(0))
    assert len(leaks) == 1
    assert "['standardscaler']" in str(leaks[0].message)
    assert leaks[0].filename == __file__  # points at the user's call, not the library


def test_plain_pipeline_warning_says_nothing_of_the_data():
    # Neighbouring data sets and a very different one: the same warning, word for word.
    X, y = _blobs(1)
    texts = set()
    for Xi, yi in ((X, y), (X[1:], y[1:]), (X * 1e6, 1 - y)):
        pipe = make_pipeline(StandardScaler(), DPLogisticRegression(classes=[0, 1]))
        texts |= {str(w.message) for w in _leak_warnings(pipe.fit, Xi, yi)}
    assert len(texts) == 1


def test_no_pipeline_warning_for_safe_pipelines_standalone_fits_or_private_pipelines():
    X, y = _blobs(2)
    model = DPLogisticRegression(classes=[0, 1], random_state=0)
    assert _leak_warnings(make_pipeline(RowNormClipper(), clone(model)).fit, X, y) == []
    assert _leak_warnings(clone(model).fit, X, y) == []
    # PrivatePipeline checked before fitting its steps: one warning, not two.
    private = make_private_pipeline(StandardScaler(), clone(model))
    assert len(_leak_warnings(private.fit, X, y)) == 1


def test_plain_pipeline_warning_sees_through_nested_pipelines():
    X, y = _blobs(4)
    model = DPLogisticRegression(classes=[0, 1], random_state=0)
    outer_leaks = Pipeline([("sc", StandardScaler()),
                            ("inner", make_pipeline(RowNormClipper(1.0), clone(model)))])
    inner_leaks = Pipeline([("clip", RowNormClipper()),
                            ("inner", make_pipeline(StandardScaler(), clone(model)))])
    # A PrivatePipeline inside checked its own steps; the outer ones are still checked.
    private_inside = Pipeline([("sc", StandardScaler()),
                               ("inner", make_private_pipeline(RowNormClipper(1.0),
                                                               clone(model)))])
    for pipe, names in ((outer_leaks, "['sc']"), (inner_leaks, "['inner__standardscaler']"),
                        (private_inside, "['sc']")):
        leaks = _leak_warnings(pipe.fit, X, y)
        assert len(leaks) == 1 and names in str(leaks[0].message)


def test_looking_for_the_pipeline_keeps_no_caller_locals_alive():
    # Python 3.11 snapshots f_locals when it is read: only fit frames may be read.
    import gc
    import weakref

    class Payload:
        pass

    X, y = _blobs(5)

    def caller():
        payload = Payload()
        ref = weakref.ref(payload)
        DPLogisticRegression(classes=[0, 1], random_state=0).fit(X, y)
        del payload
        gc.collect()
        return ref() is None

    assert caller()


@pytest.mark.filterwarnings("ignore::dpsk.LeakyPipelineWarning")
@pytest.mark.filterwarnings("ignore::dpsk.NonPrivateSelectionWarning")
def test_plain_pipeline_warns_through_model_selection():
    X, y = _blobs(3)
    pipe = make_pipeline(StandardScaler(), DPLogisticRegression(classes=[0, 1], random_state=0))
    leaks = _leak_warnings(
        lambda: GridSearchCV(pipe, {"dplogisticregression__alpha": [1e-2]}, cv=2).fit(X, y))
    assert len(leaks) == 1  # once per call of the search, not per fold and refit
    result = cross_validate(pipe, X, y, cv=2, return_estimator=True)
    assert len(result["estimator"]) == 2


# -- PrivatePipeline ---------------------------------------------------------------------


def test_private_pipeline_warns_at_fit_for_leaky_steps_only():
    X, y = _mixed_frame()
    leaky = make_private_pipeline(
        make_column_transformer((StandardScaler(), ["age", "hours"]),
                                (OneHotEncoder(), ["job", "sex"]), sparse_threshold=0),
        SimpleImputer(), DPLogisticRegression(classes=[0, 1], random_state=0))
    with pytest.warns(UserWarning, match="learn from the training data") as record:
        leaky.fit(X, y)
    leak = [w for w in record if "learn from the training data" in str(w.message)]
    assert len(leak) == 1 and leak[0].filename == __file__
    assert "['columntransformer__standardscaler', 'columntransformer__onehotencoder', " \
           "'simpleimputer']" in str(leak[0].message)
    assert "categories=[" in str(leak[0].message)  # advice that fits categorical steps


def test_private_pipeline_strict_refuses_before_fitting_or_charging():
    X, y = _mixed_frame()
    acc = BudgetAccountant(epsilon=1.0)
    pipe = make_private_pipeline(StandardScaler(), DPLogisticRegression(accountant=acc),
                                 strict=True)
    for fit in (pipe.fit, pipe.fit_predict):
        with pytest.raises(ValueError, match=r"\['standardscaler'\]"):
            fit(X[["age", "hours"]].to_numpy(), y)
    assert acc.spends == []
    assert not hasattr(pipe[0], "mean_")


def test_private_pipeline_clones_and_needs_a_private_step():
    pipe = PrivatePipeline([("clip", RowNormClipper()), ("clf", DPHuberSVM())], strict=True)
    assert clone(pipe).get_params()["strict"] is True
    with pytest.raises(ValueError, match="no dpsk estimator"):
        make_private_pipeline(StandardScaler(), PCA()).fit(np.ones((4, 2)))
