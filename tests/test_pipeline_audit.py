"""Issue 24, break 6 and the pipeline items: what a pipeline or meta-estimator may reveal.

* ``FunctionTransformer(func, inverse_func)`` with ``check_inverse=True`` warns from
  the data: flagged by ``check_pipeline``, refused by ``PrivatePipeline(strict=True)``;
* ``check_pipeline`` finds the private model at any depth and classifies every
  scikit-learn transformer (declared safe only if two fits on different data of the
  same shape store the same bytes and warn about nothing);
* refusals of steps before the private model quote no training value (PrivatePipeline,
  DPGridSearch), and the fit-time warning finds a pipeline at any depth;
* bagging with replacement is refused for free (group privacy); searches, calibrators
  and cross-validation around a dpsk fit get a ``NonPrivateSelectionWarning``.
"""

import pickle
import warnings

import numpy as np
import pytest
from joblib import parallel_backend
from sklearn.base import clone
from sklearn.calibration import CalibratedClassifierCV
from sklearn.compose import ColumnTransformer
from sklearn.ensemble import BaggingClassifier, StackingClassifier, VotingClassifier
from sklearn.feature_selection import RFE, RFECV, SelectFromModel, SequentialFeatureSelector
from sklearn.kernel_approximation import RBFSampler
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import FeatureUnion, make_pipeline
from sklearn.preprocessing import (
    FunctionTransformer,
    MinMaxScaler,
    Normalizer,
    OneHotEncoder,
    OrdinalEncoder,
    SplineTransformer,
    StandardScaler,
)
from sklearn.utils import all_estimators

from dpsk import (
    BudgetAccountant,
    BudgetExceededError,
    DPGridSearch,
    DPLogisticRegression,
    LeakyPipelineWarning,
    NonPrivateSelectionWarning,
    check_pipeline,
)
from dpsk.pipeline import PrivatePipeline, make_private_pipeline

SECRET_NUMBER = 123456.789
SECRET_CATEGORY = "zzz_secret_category"


def _model(acc=None, **kwargs):
    return DPLogisticRegression(classes=[0, 1], data_norm=2.0, accountant=acc, **kwargs)


def _blobs(seed, n=120):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, 2))
    return X, (X[:, 0] > 0).astype(int)


def _record(fit, *args, **kwargs):
    """Run ``fit``; return (exception or None, warnings)."""
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        try:
            fit(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - the test inspects it
            return exc, list(record)
    return None, list(record)


def _quotes_nothing(text):
    return SECRET_CATEGORY not in text and "123456" not in text


# -- break 6: FunctionTransformer's inverse check -----------------------------------------


def _tanh(check_inverse=True):
    return FunctionTransformer(np.tanh, inverse_func=np.arctanh, check_inverse=check_inverse)


def test_scikit_learns_inverse_check_warns_from_row_zero():
    # Why it is flagged: D and D' differ in row 0 only, and only D' warns.
    X, _ = _blobs(0, n=300)
    X_prime = X.copy()
    X_prime[0, 0] = 20.0  # tanh(20) rounds to 1.0: arctanh gives inf
    warned = []
    for data in (X, X_prime):
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            with np.errstate(all="ignore"):
                _tanh().fit(data)
        warned.append(len(record) > 0)
    assert warned == [False, True]


@pytest.mark.parametrize("step, expected", [
    (_tanh(), ["functiontransformer"]),
    (_tanh(check_inverse=False), []),
    (FunctionTransformer(np.tanh), []),  # no inverse: nothing is checked
    (FunctionTransformer(None, inverse_func=np.arctanh), []),  # scikit-learn skips it too
])
def test_check_pipeline_flags_function_transformer_with_inverse_check(step, expected):
    assert check_pipeline(make_pipeline(step, _model())) == expected


def test_strict_private_pipeline_refuses_the_inverse_check_on_both_neighbours():
    X, y = _blobs(1, n=300)
    X_prime = X.copy()
    X_prime[0, 0] = 20.0
    acc = BudgetAccountant(epsilon=1.0)
    outcomes = []
    for data in (X, X_prime):
        pipe = make_private_pipeline(_tanh(), _model(acc), strict=True)
        exc, record = _record(pipe.fit, data, y)
        outcomes.append((type(exc), str(exc), [str(w.message) for w in record]))
    assert outcomes[0] == outcomes[1]
    assert outcomes[0][0] is ValueError and "functiontransformer" in outcomes[0][1]
    assert outcomes[0][2] == []  # refused before the transformer saw a row
    assert acc.spends == []


def test_plain_pipeline_warns_for_the_inverse_check():
    X, y = _blobs(2)
    exc, record = _record(make_pipeline(_tanh(), _model()).fit, X, y)
    assert exc is None
    leaks = [w for w in record if w.category is LeakyPipelineWarning]
    assert len(leaks) == 1 and "['functiontransformer']" in str(leaks[0].message)


# -- check_pipeline at any depth ------------------------------------------------------


def _nest(step, depth, first=None):
    for _ in range(depth):
        step = make_pipeline(first, step) if first is not None else make_pipeline(step)
        first = None
    return step


def test_check_pipeline_finds_the_private_model_at_any_depth():
    inner = make_pipeline(StandardScaler(), _model())
    deep = make_pipeline(MinMaxScaler(), _nest(inner, 4))
    assert check_pipeline(deep) == [
        "minmaxscaler", "pipeline__" * 5 + "standardscaler"]
    assert check_pipeline(make_pipeline(Normalizer(), _nest(make_pipeline(_model()), 5))) == []


@pytest.mark.parametrize("wrapper, name", [
    (lambda m: CalibratedClassifierCV(m), "calibratedclassifiercv"),
    (lambda m: GridSearchCV(m, {"alpha": [0.1]}), "gridsearchcv"),
    (lambda m: BaggingClassifier(m, bootstrap=False), "baggingclassifier"),
])
def test_check_pipeline_reports_meta_estimators_around_the_private_model(wrapper, name):
    pipe = make_pipeline(Normalizer(), wrapper(make_pipeline(StandardScaler(), _model())))
    found = check_pipeline(pipe)
    assert found[0] == name
    assert found[1].startswith(name + "__") and found[1].endswith("standardscaler")


def test_dpgridsearch_answers_for_what_it_wraps():
    search = DPGridSearch(make_pipeline(Normalizer(), _model()), {"dplogisticregression__alpha":
                                                                 [0.1, 0.01]})
    assert check_pipeline(make_pipeline(Normalizer(), search)) == []


# -- every scikit-learn transformer is classified -------------------------------------

#: Default-constructed (or with the arguments in _ARGS): does the fit learn nothing?
VERDICTS = {
    # stateless (requires_fit=False) and read nothing
    "AdditiveChi2Sampler": True, "Binarizer": True, "FeatureHasher": True,
    "FunctionTransformer": True, "HashingVectorizer": True, "Normalizer": True,
    "PatchExtractor": True, "SparseCoder": True,
    # read the shape and dtype only
    "GaussianRandomProjection": True, "SparseRandomProjection": True,
    "PolynomialFeatures": True, "PolynomialCountSketch": True, "SkewedChi2Sampler": True,
    "RBFSampler": True,  # gamma=1.0; gamma="scale" reads the variance
    "FeatureUnion": True,  # of Normalizer only (see _ARGS)
    # safe only when declared (tested with declared parameters elsewhere)
    "OneHotEncoder": False, "OrdinalEncoder": False, "SimpleImputer": False,
    "MissingIndicator": False, "SplineTransformer": False,
    "ColumnTransformer": False,  # sparse_threshold=0.3 chooses the output from the data
    # learn from the data
    **{name: False for name in [
        "BernoulliRBM", "Birch", "BisectingKMeans", "CCA", "DictVectorizer",
        "DictionaryLearning", "FactorAnalysis", "FastICA", "FeatureAgglomeration",
        "GenericUnivariateSelect", "IncrementalPCA", "Isomap", "IsotonicRegression",
        "KBinsDiscretizer", "KMeans", "KNNImputer", "KNeighborsTransformer",
        "KernelCenterer", "KernelPCA", "LabelBinarizer", "LabelEncoder",
        "LatentDirichletAllocation", "LinearDiscriminantAnalysis",
        "LocallyLinearEmbedding", "MaxAbsScaler", "MinMaxScaler",
        "MiniBatchDictionaryLearning", "MiniBatchKMeans", "MiniBatchNMF",
        "MiniBatchSparsePCA", "MultiLabelBinarizer", "NMF",
        "NeighborhoodComponentsAnalysis", "Nystroem", "PCA", "PLSCanonical",
        "PLSRegression", "PLSSVD", "PowerTransformer", "QuantileTransformer", "RFE",
        "RFECV", "RadiusNeighborsTransformer", "RandomTreesEmbedding", "RobustScaler",
        "SelectFdr", "SelectFpr", "SelectFromModel", "SelectFwe", "SelectKBest",
        "SelectPercentile", "SequentialFeatureSelector", "SparsePCA", "StackingClassifier",
        "StackingRegressor", "StandardScaler", "TSNE", "TargetEncoder", "TfidfTransformer",
        "TruncatedSVD", "VarianceThreshold", "VotingClassifier", "VotingRegressor"]},
}

_ARGS = {
    "ColumnTransformer": lambda: ColumnTransformer([("n", Normalizer(), [0])]),
    "FeatureUnion": lambda: FeatureUnion([("n", Normalizer())]),
    "SparseCoder": lambda: __import__("sklearn.decomposition").decomposition.SparseCoder(
        np.eye(3)),
    "RFE": lambda: RFE(LogisticRegression()),
    "RFECV": lambda: RFECV(LogisticRegression()),
    "SelectFromModel": lambda: SelectFromModel(LogisticRegression()),
    "SequentialFeatureSelector": lambda: SequentialFeatureSelector(LogisticRegression()),
    "StackingClassifier": lambda: StackingClassifier([("lr", LogisticRegression())]),
    "StackingRegressor": lambda: __import__("sklearn.ensemble").ensemble.StackingRegressor(
        [("lr", __import__("sklearn.linear_model").linear_model.Ridge())]),
    "VotingClassifier": lambda: VotingClassifier([("lr", LogisticRegression())]),
    "VotingRegressor": lambda: __import__("sklearn.ensemble").ensemble.VotingRegressor(
        [("lr", __import__("sklearn.linear_model").linear_model.Ridge())]),
}

TRANSFORMERS = dict(all_estimators(type_filter="transformer"))


def _make(name):
    return _ARGS[name]() if name in _ARGS else TRANSFORMERS[name]()


def test_every_scikit_learn_transformer_is_classified():
    # A transformer added to scikit-learn fails here until it is read and classified.
    assert sorted(TRANSFORMERS) == sorted(VERDICTS)


@pytest.mark.parametrize("name", sorted(VERDICTS))
def test_check_pipeline_verdict_matches_the_table(name):
    found = check_pipeline(make_pipeline(_make(name), _model()))
    assert (found == []) is VERDICTS[name], found


def _inputs(step, seed):
    """A data set the step accepts; two seeds give two different ones of the same shape."""
    rng = np.random.default_rng(seed)
    name = type(step).__name__
    if name == "HashingVectorizer":
        return [f"word{i} other{rng.integers(100)}" for i in range(20)]
    if name == "FeatureHasher":
        return [{f"k{rng.integers(5)}": float(rng.uniform())} for _ in range(20)]
    if name == "PatchExtractor":
        return rng.uniform(size=(2, 20, 20))
    return rng.uniform(0, 1, size=(40, 3)) * (1 + 10 * seed)


SAFE_CONFIGS = [_make(name) for name in sorted(VERDICTS) if VERDICTS[name]] + [
    _tanh(check_inverse=False),
    RBFSampler(gamma=0.5),
    SplineTransformer(knots=np.array([[0.0] * 3, [5.0] * 3, [20.0] * 3])),
]


@pytest.mark.parametrize("step", SAFE_CONFIGS, ids=lambda s: type(s).__name__)
def test_declared_safe_transformers_learn_nothing(step):
    assert check_pipeline(make_pipeline(step, _model())) == []
    if "random_state" in step.get_params():
        step = clone(step).set_params(random_state=0)
    if step.get_params().get("n_components") == "auto":  # reads n_samples: too many for 3
        step = clone(step).set_params(n_components=2)
    states = []
    for seed in (0, 1):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            fitted = clone(step).fit(_inputs(step, seed))
        states.append(pickle.dumps(fitted))
    assert states[0] == states[1]


@pytest.mark.parametrize("step", [RBFSampler(gamma="scale"), SplineTransformer(),
                                  SplineTransformer(knots="quantile")], ids=repr)
def test_shape_only_transformers_that_read_the_data_when_told_to(step):
    assert check_pipeline(make_pipeline(step, _model())) == [type(step).__name__.lower()]


# -- refusals quote no training value -----------------------------------------------------


def _secret_tables(seed):
    """Two tables with a declared-outside value in different rows (same defect)."""
    rng = np.random.default_rng(seed)
    cats = rng.choice(["a", "b"], 30).astype(object)
    nums = rng.choice([1.0, 2.0], 30)
    row = int(rng.integers(30))
    cats[row], nums[row] = SECRET_CATEGORY, SECRET_NUMBER
    return cats.reshape(-1, 1), nums.reshape(-1, 1), (np.arange(30) % 2)


ENCODERS = [
    ("cat", lambda: OneHotEncoder(categories=[["a", "b"]], handle_unknown="error")),
    ("cat", lambda: OrdinalEncoder(categories=[["a", "b"]])),
    ("num", lambda: OneHotEncoder(categories=[[1.0, 2.0]])),
    ("num", lambda: OrdinalEncoder(categories=[[1.0, 2.0]])),
]


def test_scikit_learn_encoders_quote_the_cell():
    # Why PrivatePipeline and DPGridSearch replace the message.
    cats, nums, _ = _secret_tables(0)
    with pytest.raises(ValueError, match=SECRET_CATEGORY):
        OneHotEncoder(categories=[["a", "b"]]).fit(cats)
    with pytest.raises(ValueError, match="123456"):
        OrdinalEncoder(categories=[[1.0, 2.0]]).fit(nums)


def _private_fit(encoder, acc):
    return make_private_pipeline(encoder(), _model(acc)).fit


def _search_fit(encoder, acc):
    search = DPGridSearch(make_pipeline(encoder(), _model()),
                          {"dplogisticregression__alpha": [0.1, 0.01]}, accountant=acc)
    return search.fit


@pytest.mark.parametrize("fitter", [_private_fit, _search_fit])
@pytest.mark.parametrize("column, encoder", ENCODERS)
def test_encoder_refusals_quote_no_value_and_charge_nothing(fitter, column, encoder):
    acc = BudgetAccountant(epsilon=1.0)
    seen = set()
    for seed in (0, 1):  # two data sets with the defect in different rows
        cats, nums, y = _secret_tables(seed)
        exc, record = _record(fitter(encoder, acc), cats if column == "cat" else nums, y)
        assert isinstance(exc, ValueError)
        assert exc.__context__ is None and exc.__cause__ is None
        texts = [str(exc)] + [str(w.message) for w in record]
        assert all(_quotes_nothing(text) for text in texts)
        seen.add(str(exc))
    assert len(seen) == 1  # the same words for both
    assert acc.spends == []


def test_private_pipeline_names_the_step_and_says_nothing_was_charged():
    cats, _, y = _secret_tables(2)
    pipe = PrivatePipeline([("enc", OneHotEncoder(categories=[["a", "b"]])),
                            ("clf", _model(BudgetAccountant(epsilon=1.0)))])
    with pytest.raises(ValueError, match="Step 'enc'.*nothing was charged"):
        pipe.fit(cats, y)


def test_private_pipeline_lets_the_private_models_own_errors_through():
    X, y = _blobs(3)
    acc = BudgetAccountant(epsilon=0.5)
    pipe = make_private_pipeline(Normalizer(), _model(acc, epsilon=1.0))
    with pytest.raises(BudgetExceededError):
        pipe.fit(X, y)
    with pytest.raises(ValueError, match="alpha"):  # parameters: quoted as usual
        make_private_pipeline(Normalizer(), _model(alpha=-1.0)).fit(X, y)


# -- the fit-time warning at any depth ------------------------------------------------


def test_plain_pipeline_nested_five_deep_warns_once_from_the_users_line():
    X, y = _blobs(4)
    pipe = _nest(make_pipeline(StandardScaler(), _model()), 5)
    exc, record = _record(pipe.fit, X, y)
    leaks = [w for w in record if w.category is LeakyPipelineWarning]
    assert exc is None and len(leaks) == 1
    assert "pipeline__" * 5 + "standardscaler" in str(leaks[0].message)
    assert leaks[0].filename == __file__


# -- bagging with replacement; searches and calibrators -----------------------------


def test_bootstrap_bagging_is_refused_before_any_charge():
    X, y = _blobs(5)
    acc = BudgetAccountant(epsilon=5.0)
    bag = BaggingClassifier(_model(acc), n_estimators=3, random_state=0)
    with pytest.raises(ValueError, match="group privacy") as info:
        bag.fit(X, y)
    assert "bootstrap=False" in str(info.value)
    assert acc.spends == []
    with parallel_backend("threading", n_jobs=2):  # the worker sees only its own frames
        with pytest.raises(ValueError, match="group privacy"):
            clone(bag).set_params(n_jobs=2).fit(X, y)
    assert acc.spends == []


def test_bagging_without_replacement_charges_every_fit():
    X, y = _blobs(6)
    acc = BudgetAccountant(epsilon=5.0)
    bag = BaggingClassifier(_model(acc), n_estimators=3, bootstrap=False, max_samples=0.5,
                            random_state=0)
    exc, record = _record(bag.fit, X, y)
    assert exc is None and acc.spends == [(1.0, 0.0)] * 3
    assert not [w for w in record if w.category is NonPrivateSelectionWarning]


@pytest.mark.parametrize("fit, name", [
    (lambda m, X, y: CalibratedClassifierCV(m, cv=2).fit(X, y), "CalibratedClassifierCV"),
    (lambda m, X, y: GridSearchCV(m, {"alpha": [0.1, 0.01]}, cv=2).fit(X, y), "GridSearchCV"),
    (lambda m, X, y: cross_val_score(m, X, y, cv=2), "cross_val_score"),
    (lambda m, X, y: GridSearchCV(make_pipeline(Normalizer(), m), {}, cv=2).fit(X, y),
     "GridSearchCV"),
])
def test_selectors_and_calibrators_warn_naming_what_is_outside(fit, name):
    X, y = _blobs(7)
    exc, record = _record(fit, _model(BudgetAccountant(epsilon=10.0)), X, y)
    selection = [w for w in record if w.category is NonPrivateSelectionWarning]
    assert exc is None and selection
    assert all(name in str(w.message) and "outside" in str(w.message) for w in selection)
    assert all(w.filename == __file__ for w in selection)


def test_no_selection_warning_for_plain_fits_or_dp_search():
    X, y = _blobs(8)
    for fit in (_model().fit, make_pipeline(Normalizer(), _model()).fit,
                DPGridSearch(_model(), {"alpha": [0.1, 0.01]}).fit):
        exc, record = _record(fit, X, y)
        assert exc is None
        assert not [w for w in record if w.category is NonPrivateSelectionWarning]


def test_selection_warning_is_the_same_on_neighbours():
    X, y = _blobs(9)
    texts = set()
    for Xi, yi in ((X, y), (X[1:], y[1:]), (X * 1e3, 1 - y)):
        _, record = _record(lambda: CalibratedClassifierCV(_model(), cv=2).fit(Xi, yi))
        texts |= {str(w.message) for w in record if w.category is NonPrivateSelectionWarning}
    assert len(texts) == 1
