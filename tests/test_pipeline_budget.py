"""A pipeline as one budgeted release (issue 36).

Refusals are free for the whole pipeline (the ledger's events identical before
and after), dpsk's own safe messages are shown at fit and predict while other
libraries' stay hidden, the model reads its pipeline's row bound
(``data_norm="auto"``), private bounds act on their public rule, and the
tools around the pipeline (search, utility) accept it.
"""

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer, Normalizer, OneHotEncoder

from dpsk import (
    BudgetAccountant,
    BudgetExceededError,
    DataNormWarning,
    DPHuberSVM,
    DPLogisticRegression,
    NonPrivateSelectionWarning,
)
from dpsk._data._validation import PublicRefusal
from dpsk.pipeline import (
    PrivatePipeline,
    check_before_fit,
    make_private_pipeline,
    pipeline_cost,
    private_steps,
    published_row_bound,
)
from dpsk.preprocessing import (
    BoundedScaler,
    PrivateBoundsScaler,
    PrivateBoundsWarning,
    RowNormClipper,
    bounds_epsilon_needed,
    make_table_encoder,
    table_norm_bound,
)

NUMERIC = ["age", "score", "income"]
CATEGORICAL = {"sex": ["F", "M"], "region": ["north", "south", "west"]}


def _table(seed, n=400):
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({
        "age": rng.integers(18, 90, n).astype(float),
        "score": rng.normal(50.0, 10.0, n),
        "income": rng.lognormal(10.0, 0.5, n),
        "sex": rng.choice(["F", "M"], n),
        "region": rng.choice(["north", "south", "west"], n),
    })
    y = (frame["score"] + rng.normal(0, 5, n) > 50).astype(int).to_numpy()
    return frame, y


def _quickstart(acc, bounds_epsilon=0.2, **model):
    settings = dict(epsilon=0.8, classes=[0, 1], accountant=acc)
    settings.update(model)
    encoder = make_table_encoder(dict.fromkeys(NUMERIC), CATEGORICAL,
                                 bounds_epsilon=bounds_epsilon, bounds_accountant=acc,
                                 handle_unknown="error")
    return make_private_pipeline(encoder, DPLogisticRegression(**settings), strict=True)


def _events_unchanged(fit, acc):
    """Run ``fit`` (which must raise) and return the exception; the events must not move."""
    before = acc.events
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(Exception) as info:
            fit()
    assert acc.events == before
    return info.value


# -- item 1: every refusal before the first private step spends ----------------------

def _refusals():
    X, y = _table(0)
    y_nan = y.astype(float)
    y_nan[5] = np.nan
    return {
        "undeclared label": (lambda acc: _quickstart(acc).fit(X, np.where(y == 1, 2, 0)),
                             ValueError, "declared classes"),
        "NaN in y": (lambda acc: _quickstart(acc).fit(X, y_nan), ValueError, "NaN"),
        "sample_weight=3": (lambda acc: _quickstart(acc).fit(X, y, sample_weight=3),
                            ValueError, r"\[0, 1\]"),
        "weights of the wrong length": (
            lambda acc: _quickstart(acc).fit(X, y, sample_weight=np.ones(3)), ValueError, ""),
        "alpha=-1": (lambda acc: _quickstart(acc, alpha=-1).fit(X, y), ValueError, "alpha"),
        "model epsilon over the budget": (
            lambda acc: _quickstart(acc, epsilon=0.9).fit(X, y), BudgetExceededError,
            "2 releases"),
        "bounds epsilon over the budget": (
            lambda acc: _quickstart(acc, bounds_epsilon=1.5).fit(X, y), BudgetExceededError,
            ""),
    }


@pytest.mark.parametrize("case", list(_refusals()))
def test_every_refusal_of_a_private_pipeline_is_free(case):
    fit, kind, match = _refusals()[case]
    acc = BudgetAccountant(epsilon=1.0)
    exc = _events_unchanged(lambda: fit(acc), acc)
    assert isinstance(exc, kind)
    assert match == "" or pd.Series([str(exc)]).str.contains(match).iloc[0], str(exc)
    assert acc.events == []


def test_budget_refusal_after_earlier_spends_is_free():
    X, y = _table(1)
    acc = BudgetAccountant(epsilon=1.0)
    acc.spend(0.1)
    exc = _events_unchanged(lambda: _quickstart(acc).fit(X, y), acc)
    assert isinstance(exc, BudgetExceededError)
    assert len(acc.events) == 1


@pytest.mark.parametrize("composition", ["advanced", "rdp"])
def test_budget_refusal_under_a_filter_is_free(composition):
    # The sum of both releases is checked under the ledger's own filter first.
    X, y = _table(2)
    acc = BudgetAccountant(epsilon=1.0, delta=1e-6, composition=composition)
    acc.spend(0.5)
    exc = _events_unchanged(lambda: _quickstart(acc, epsilon=0.45).fit(X, y), acc)
    assert isinstance(exc, BudgetExceededError)


def test_two_ledgers_are_each_checked():
    X, y = _table(3)
    bounds_ledger, model_ledger = BudgetAccountant(epsilon=1.0), BudgetAccountant(epsilon=0.5)
    encoder = make_table_encoder(dict.fromkeys(NUMERIC), CATEGORICAL, bounds_epsilon=0.2,
                                 bounds_accountant=bounds_ledger)
    pipe = make_private_pipeline(encoder, DPLogisticRegression(
        epsilon=0.8, classes=[0, 1], accountant=model_ledger))
    with pytest.raises(BudgetExceededError):
        pipe.fit(X, y)
    assert bounds_ledger.events == [] and model_ledger.events == []


def _stored(path, epsilon=1.0, **budget):
    return BudgetAccountant.open(str(path), epsilon=epsilon, **budget)


@pytest.mark.parametrize("composition", ["basic", "rdp"])
def test_stored_ledger_refuses_an_over_budget_model_before_the_bounds_spend(
        tmp_path, composition):
    # The dry run reads the store's state (no charge, no write): the store's
    # total and its history are what they were, seen from another object too.
    X, y = _table(5)
    budget = {} if composition == "basic" else {"delta": 1e-6, "composition": composition}
    acc = _stored(tmp_path / "team.sqlite", **budget)
    acc.spend(0.1)
    before = (acc.total(), len(acc.history(as_frame=False)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(BudgetExceededError, match="2 releases"):
            _quickstart(acc, epsilon=0.8).fit(X, y)
    again = _stored(tmp_path / "team.sqlite", **budget)
    assert (again.total(), len(again.history(as_frame=False))) == before
    assert len(again.events) == 1


def test_two_objects_on_one_store_are_checked_as_one_ledger(tmp_path):
    # Bounds and model charge the same store through different objects: their
    # releases are checked together, not each against the whole budget.
    X, y = _table(6)
    bounds_ledger = _stored(tmp_path / "team.sqlite", epsilon=0.9)
    model_ledger = _stored(tmp_path / "team.sqlite", epsilon=0.9)
    encoder = make_table_encoder(dict.fromkeys(NUMERIC), CATEGORICAL, bounds_epsilon=0.2,
                                 bounds_accountant=bounds_ledger)
    pipe = make_private_pipeline(encoder, DPLogisticRegression(
        epsilon=0.8, classes=[0, 1], accountant=model_ledger))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(BudgetExceededError):
            pipe.fit(X, y)
    assert bounds_ledger.events == [] and model_ledger.events == []


def test_a_fit_on_a_stored_ledger_records_both_releases(tmp_path):
    X, y = _table(7)
    acc = _stored(tmp_path / "team.sqlite")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _quickstart(acc).fit(X, y)
    again = _stored(tmp_path / "team.sqlite")
    assert len(again.events) == 2
    assert again.total()[0] == pytest.approx(1.0)


def _bad_tables():
    X, y = _table(4)
    inf = X.copy()
    inf.loc[7, "income"] = np.inf
    text = X.copy().astype({"score": object})
    text.loc[9, "score"] = "secret-123"
    category = X.copy()
    category.loc[3, "region"] = "secret-east"
    return {
        "an infinite value": (inf, y, "'income'"),
        "a string in a numeric column": (text, y, "'score'"),
        "a missing column": (X.drop(columns=["income"]), y, "'income'"),
        "an empty frame": (X.iloc[:0], y[:0], "no rows"),
        "an undeclared category": (category, y, "'region'"),
    }


@pytest.mark.parametrize("case", list(_bad_tables()))
def test_encoder_refusals_are_free_and_name_the_column(case):
    X, y, column = _bad_tables()[case]
    acc = BudgetAccountant(epsilon=1.0)
    exc = _events_unchanged(lambda: _quickstart(acc).fit(X, y), acc)
    assert isinstance(exc, PublicRefusal)
    assert column in str(exc)
    assert "secret" not in str(exc)
    assert exc.__context__ is None and exc.__cause__ is None


@pytest.mark.parametrize("case", ["an infinite value", "a string in a numeric column",
                                  "a missing column", "an undeclared category"])
def test_the_same_messages_at_predict(case):
    X, y = _table(5)
    pipe = _quickstart(BudgetAccountant()).fit(X, y)
    bad, _, column = _bad_tables()[case]
    with pytest.raises(PublicRefusal, match=column) as info:
        pipe.predict(bad)
    assert "secret" not in str(info.value)


def test_other_libraries_messages_stay_hidden_at_fit_and_predict():
    rng = np.random.default_rng(6)
    X = pd.DataFrame({"c": rng.choice(["a", "b"], 60)})
    y = (X["c"] == "a").astype(int).to_numpy()
    pipe = PrivatePipeline([
        ("enc", OneHotEncoder(categories=[["a", "b"]], sparse_output=False)),
        ("clf", DPLogisticRegression(classes=[0, 1], accountant=BudgetAccountant()))])
    pipe.fit(X, y)
    with pytest.raises(ValueError, match="not shown") as info:
        pipe.predict(pd.DataFrame({"c": ["secret-value"]}))
    assert "secret" not in str(info.value) and info.value.__context__ is None
    with pytest.raises(ValueError, match="not shown"):
        pipe.decision_function(pd.DataFrame({"c": ["secret-value"]}))


def test_a_fit_that_passes_spends_both_releases():
    X, y = _table(7)
    acc = BudgetAccountant(epsilon=1.0)
    _quickstart(acc).fit(X, y)
    assert acc.total() == pytest.approx((1.0, 0.0))
    assert [type(e).__name__ for e in acc.events] == ["ExponentialEvent", "PureDPEvent"]


def test_check_before_fit_and_pipeline_cost():
    X, y = _table(8)
    acc = BudgetAccountant(epsilon=2.0)
    pipe = _quickstart(acc)
    cost = check_before_fit(pipe, X, y)
    assert [path for path, _, _ in cost.releases] == [
        "tableencoder__numeric_private__bounds", "dplogisticregression"]
    assert cost.epsilon == pytest.approx(1.0) and cost.delta == 0.0
    assert all(ledger is acc for _, ledger, _ in cost.releases)
    assert acc.events == [] and not hasattr(pipe[-1], "coef_")
    static = pipeline_cost(pipe)
    assert [e.epsilon for e in static.events] == [e.epsilon for e in cost.events]
    assert [p for p, _ in private_steps(pipe)] == [p for p, _, _ in static.releases]
    with pytest.raises(ValueError, match="no dpsk estimator"):
        pipeline_cost(make_pipeline(Normalizer()))


def test_a_pipeline_with_one_private_step_skips_the_dry_run(monkeypatch):
    import dpsk.pipeline._private as private

    calls = []
    monkeypatch.setattr(private, "run_dry", lambda *a, **k: calls.append(1))
    X, y = _table(9)
    make_private_pipeline(BoundedScaler(0, 100), DPLogisticRegression(
        classes=[0, 1], accountant=BudgetAccountant())).fit(X[NUMERIC], y)
    assert calls == []


def test_memory_is_not_used_by_the_dry_run(tmp_path):
    # A cached stand-in must never be reused by the real fit.
    X, y = _table(10)
    acc = BudgetAccountant()
    pipe = _quickstart(acc).set_params(memory=str(tmp_path))
    pipe.fit(X, y)
    bounds = pipe[0].named_transformers_["numeric_private"]["bounds"]
    assert not (np.all(bounds.lower_ == 0.0) and np.all(bounds.upper_ == 1.0))  # the stand-in


# -- item 3: the model reads its pipeline's row bound ----------------------------------

def _fit_quietly(pipe, X, y):
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        pipe.fit(X, y)
    return [w for w in record if w.category is DataNormWarning]


@pytest.mark.parametrize("first, columns, expected", [
    (lambda: PrivateBoundsScaler(epsilon=0.5, accountant=BudgetAccountant()), NUMERIC,
     np.sqrt(3)),
    (lambda: BoundedScaler(0, 100), NUMERIC, np.sqrt(3)),
    (lambda: RowNormClipper(data_norm=7.0), NUMERIC, 7.0),
    (lambda: Normalizer(), NUMERIC, 1.0),
    (lambda: make_table_encoder({c: (0, 1e6) for c in NUMERIC}, CATEGORICAL),
     NUMERIC + list(CATEGORICAL), table_norm_bound(dict.fromkeys(NUMERIC), CATEGORICAL)),
])
@pytest.mark.parametrize("kind", [make_pipeline, make_private_pipeline])
def test_data_norm_auto_reads_the_preceding_step(first, columns, expected, kind):
    X, y = _table(11)
    pipe = kind(first(), DPLogisticRegression(classes=[0, 1], accountant=BudgetAccountant()))
    assert _fit_quietly(pipe, X[columns], y) == []
    assert pipe[-1].data_norm_ == pytest.approx(expected)


def test_data_norm_auto_through_passthrough_and_nested_pipelines():
    X, y = _table(12)
    inner = make_pipeline("passthrough", DPHuberSVM(classes=[0, 1],
                                                    accountant=BudgetAccountant()))
    pipe = make_pipeline(BoundedScaler(0, 100), inner)
    assert _fit_quietly(pipe, X[NUMERIC], y) == []
    assert inner[-1].data_norm_ == pytest.approx(np.sqrt(3))


def test_bare_model_and_unknown_bound_warn_with_a_fixed_text():
    X, y = _table(13)
    texts = set()
    for fit in (lambda X_, y_: DPLogisticRegression(classes=[0, 1]).fit(X_, y_),
                lambda X_, y_: make_pipeline(FunctionTransformer(), DPLogisticRegression(
                    classes=[0, 1])).fit(X_, y_),
                lambda X_, y_: make_pipeline(ColumnTransformer([("n", "passthrough", [0])]),
                                             DPLogisticRegression(classes=[0, 1])).fit(X_, y_)):
        for Xi, yi in ((X[NUMERIC], y), (X[NUMERIC] * 1e6, 1 - y)):  # any data
            with warnings.catch_warnings(record=True) as record:
                warnings.simplefilter("always")
                with BudgetAccountant():
                    model = fit(Xi, yi)
            found = [w for w in record if w.category is DataNormWarning]
            assert len(found) == 1 and found[0].filename == __file__
            texts.add(str(found[0].message))
            final = model[-1] if hasattr(model, "steps") else model
            assert final.data_norm_ == 1.0
    assert len(texts) == 1 and "norm 1" in texts.pop()


def test_declared_data_norm_is_used_without_warning():
    X, y = _table(14)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataNormWarning)
        model = DPLogisticRegression(classes=[0, 1], data_norm=3.0,
                                     accountant=BudgetAccountant()).fit(X[NUMERIC], y)
    assert model.data_norm_ == 3.0 and model.get_params()["data_norm"] == 3.0


def test_published_row_bound_is_none_when_a_part_is_unknown():
    X, _ = _table(15)
    ct = ColumnTransformer([("a", BoundedScaler(0, 100), ["age"]),
                            ("b", "passthrough", ["score"])]).fit(X)
    assert published_row_bound(ct) is None
    ct = ColumnTransformer([("a", BoundedScaler(0, 100), ["age", "score"])]).fit(X)
    assert published_row_bound(ct) == pytest.approx(np.sqrt(2))


# -- item 2: private bounds act on their public rule ----------------------------------

def test_bounds_method_follows_the_rule():
    rng = np.random.default_rng(16)
    big = rng.normal(40.0, 10.0, size=(40_000, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivateBoundsWarning)
        scaler = PrivateBoundsScaler(epsilon=0.5, accountant=BudgetAccountant()).fit(big)
    assert scaler.method_ == "quantiles"
    small = big[:1500]
    with pytest.warns(PrivateBoundsWarning, match="one private median") as record:
        scaler = PrivateBoundsScaler(epsilon=0.2, random_state=0,
                                     accountant=BudgetAccountant()).fit(small)
    assert scaler.method_ == "median" and len(record) == 1
    assert f"{bounds_epsilon_needed(1500, 2, method='quantiles'):.3g}" in str(record[0].message)
    with warnings.catch_warnings():  # chosen knowingly, and its rule holds: no warning
        warnings.simplefilter("error", PrivateBoundsWarning)
        PrivateBoundsScaler(epsilon=0.2, method="median", accountant=BudgetAccountant()).fit(
            small)
    # [0, 1.5 m] around a median near 40: the bulk of the data lands inside.
    assert np.all(scaler.lower_ == 0.0) and np.all((scaler.upper_ > 40) & (scaler.upper_ < 90))


def test_bounds_warn_before_anything_is_spent():
    X = np.random.default_rng(17).normal(size=(300, 12))
    ledger = BudgetAccountant()
    scaler = PrivateBoundsScaler(epsilon=0.05, accountant=ledger)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivateBoundsWarning)
        with pytest.raises(PrivateBoundsWarning, match="epsilon >= ") as info:
            scaler.fit(X)
    assert ledger.events == []
    needed = bounds_epsilon_needed(300, 12)
    assert f"{needed:.3g}" in str(info.value)
    # The text is the same on other data of the same shape (public numbers only).
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        PrivateBoundsScaler(epsilon=0.05, accountant=BudgetAccountant()).fit(X * 1e4 + 7)
    assert [str(w.message) for w in record if w.category is PrivateBoundsWarning] == [
        str(info.value)]


def test_median_bounds_cases():
    from dpsk.mechanisms._random import noise_source
    from dpsk.preprocessing._bounds import median_bounds

    grid = np.array([-8.0, -4.0, 0.0, 4.0, 8.0])
    big = 1e6  # the median candidate wins outright
    assert median_bounds(np.sort(np.full(9, 4.0)), grid, big, noise_source(0)) == (0.0, 6.0)
    assert median_bounds(np.sort(np.full(9, -8.0)), grid, big, noise_source(0)) == (-12.0, 0.0)
    assert median_bounds(np.zeros(9), grid, big, noise_source(0)) == (-1.0, 1.0)


def test_method_choice_is_the_same_on_neighbours():
    X = np.random.default_rng(18).normal(size=(2000, 3))
    other = X.copy()
    other[0] = 1e9
    methods = {PrivateBoundsScaler(epsilon=0.3, accountant=BudgetAccountant(),
                                   random_state=0).fit(Z).method_ for Z in (X, other)}
    assert len(methods) == 1


# -- the tools accept the pipeline ------------------------------------------------------

def test_utility_curve_of_a_pipeline_charges_nothing():
    from dpsk.utility import probe_curve, recommend_epsilon, utility_curve

    X, y = _table(19, n=600)
    acc = BudgetAccountant(epsilon=1.0)
    pipe = _quickstart(acc)
    curve = utility_curve(pipe, X, y, epsilons=[0.5, 4.0], n_draws=2, random_state=0)
    assert acc.events == []
    assert curve.accuracy.shape == (2, 2)
    text = str(curve)
    assert "shares of epsilon" in text and "0.2" in text and "[" in text
    assert len(text.splitlines()) == 5 and "array(" not in repr(curve)
    rec = recommend_epsilon(pipe, X, y, target_accuracy=0.55, epsilons=[0.5, 4.0],
                            n_draws=2, random_state=0)
    assert rec.epsilon > 0
    with pytest.raises(TypeError, match="public mode"):
        probe_curve(pipe, X, y)


# -- item 7 -------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["C", "max_iter", "penalty", "verbose", "solver"])
def test_scikit_learn_parameters_say_what_to_use(name):
    with pytest.raises(TypeError, match=f"'{name}'"):
        DPLogisticRegression(**{name: 1})
    with pytest.raises(TypeError, match=f"'{name}'"):
        DPLogisticRegression().set_params(**{name: 1})
    with pytest.raises(TypeError, match="'C'"):
        DPHuberSVM(C=1)
    with pytest.raises(TypeError, match="bogus"):  # anything else: Python's own message
        DPHuberSVM(bogus=1)


def test_coef_keeps_float32():
    X, y = _table(20)
    X32 = X[NUMERIC].to_numpy(np.float32)
    model = DPLogisticRegression(classes=[0, 1], data_norm=200.0,
                                 accountant=BudgetAccountant()).fit(X32, y)
    assert model.coef_.dtype == np.float32 and model.intercept_.dtype == np.float32
    model.fit(X32.astype(np.float64), y)
    assert model.coef_.dtype == np.float64


@pytest.mark.parametrize("fit, name", [
    (lambda m, X, y: cross_val_score(m, X, y, cv=5), "cross_val_score"),
    (lambda m, X, y: GridSearchCV(m, {"alpha": [0.1, 0.01, 0.001]}, cv=2).fit(X, y),
     "GridSearchCV"),
])
def test_selection_warning_once_per_outer_call(fit, name):
    X, y = _table(21)
    for _ in range(2):  # each call warns once, not once per fold
        model = DPLogisticRegression(classes=[0, 1], data_norm=200.0,
                                     accountant=BudgetAccountant())
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            fit(model, X[NUMERIC].to_numpy(), y)
        found = [w for w in record if w.category is NonPrivateSelectionWarning]
        assert len(found) == 1 and found[0].filename == __file__


def test_worker_warnings_point_at_scikit_learn_not_the_pool():
    from joblib import parallel_backend

    X, y = _table(22)
    model = DPLogisticRegression(classes=[0, 1], data_norm=200.0,
                                 accountant=BudgetAccountant())
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        with parallel_backend("threading", n_jobs=2):
            cross_val_score(model, X[NUMERIC].to_numpy(), y, cv=2, n_jobs=2)
    found = [w for w in record if w.category is NonPrivateSelectionWarning]
    assert found
    assert all("multiprocessing" not in w.filename and "threading" not in w.filename
               and "concurrent" not in w.filename for w in found)
    assert all("sklearn" in w.filename or w.filename == __file__ for w in found)


def test_boolean_columns_can_be_declared_categorical():
    frame = pd.DataFrame({"flag": pd.array([True, False, None, True], dtype="boolean"),
                          "plain": np.array([True, False, False, True])})
    encoder = make_table_encoder(None, {"flag": [False, True], "plain": [False, True]})
    Xt = encoder.fit_transform(frame)
    # Each column: False, True and the missing entries' own indicator.
    np.testing.assert_array_equal(Xt, [[0, 1, 0, 0, 1, 0], [1, 0, 0, 1, 0, 0],
                                       [0, 0, 1, 1, 0, 0], [0, 1, 0, 0, 1, 0]])
    assert list(encoder.get_feature_names_out()[:2]) == ["flag_False", "flag_True"]
