"""DPGridSearch: Algorithm 4 of Chaudhuri, Monteleoni and Sarwate (2011)."""

import warnings

import numpy as np
import pytest
from _sklearn_checks import WEIGHT_XFAILS, parametrize_with_checks
from scipy import stats
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import FunctionTransformer, Normalizer, StandardScaler

from dpsk import BudgetAccountant, BudgetExceededError, DPHuberSVM, DPLogisticRegression
from dpsk.mechanisms._random import NoiseSource
from dpsk.model_selection import DPGridSearch, _search
from dpsk.model_selection._search import _select_candidate, _split_parts

# The searches here and scikit-learn's checks fit with undeclared classes on
# purpose.
pytestmark = [pytest.mark.filterwarnings("ignore::dpsk.ClassesFromDataWarning"),
              pytest.mark.filterwarnings(
                  "ignore::dpsk.model_selection._search.SearchCannotPayWarning")]

GRID = {"alpha": [1e-3, 1e-2, 1e-1]}


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((600, 5))
    X /= np.linalg.norm(X, axis=1, keepdims=True).max()
    y = (X[:, 0] + 0.1 * rng.standard_normal(600) > 0).astype(int)
    return X, y


def make_search(**kwargs):
    params = dict(estimator=DPLogisticRegression(), param_grid=GRID, epsilon=1.0,
                  random_state=0, method="disjoint")
    params.update(kwargs)
    return DPGridSearch(**params)


# -- the selection step ---------------------------------------------------------------
def test_selection_follows_exponential_mechanism():
    """Chi-square goodness of fit of the selection to exp(-eps z / 2), fixed z.

    ``_select_candidate`` is the function ``DPGridSearch.fit`` selects with (see
    ``test_fit_selects_through_select_candidate``). With N = 20000 draws and
    p-value threshold 1e-3, a correct sampler fails this test with probability
    1e-3 per fresh seed; the seed is fixed, so the test is deterministic.
    """
    z = np.array([10, 11, 12, 14, 10, 17])
    epsilon = 0.8
    rng = NoiseSource.seeded(12345)
    n_draws = 20000
    draws = np.array([_select_candidate(z, epsilon, rng) for _ in range(n_draws)])
    expected_p = np.exp(-epsilon * z / 2.0)
    expected_p /= expected_p.sum()
    observed = np.bincount(draws, minlength=z.size)
    result = stats.chisquare(observed, n_draws * expected_p)
    assert result.pvalue > 1e-3, (observed, n_draws * expected_p)
    # And not uniform: the test has power against ignoring the counts.
    assert stats.chisquare(observed).pvalue < 1e-6


def test_selection_is_exact_for_large_gaps():
    rng = NoiseSource.seeded(0)
    picks = {_select_candidate([0, 10_000, 10_000], 1.0, rng) for _ in range(50)}
    assert picks == {0}


@pytest.mark.parametrize("refit", [False, True])
def test_fit_selects_through_select_candidate(data, monkeypatch, refit):
    X, y = data
    seen = {}

    def fake_select(mistakes, epsilon, rng):
        seen["z"], seen["epsilon"] = list(mistakes), epsilon
        return 2

    monkeypatch.setattr(_search, "_select_candidate", fake_select)
    search = make_search(epsilon=0.7, refit=refit).fit(X, y)
    assert seen["epsilon"] == 0.7  # the selection runs at epsilon, also with refit=True
    assert len(seen["z"]) == 3
    n_hold = len(_split_parts(len(y), 4, np.random.default_rng(0))[-1])
    assert all(isinstance(z, int) and 0 <= z <= n_hold for z in seen["z"])
    assert search.best_index_ == 2
    assert search.best_params_ == {"alpha": 1e-1}


# -- the split ------------------------------------------------------------------------
@pytest.mark.parametrize("n, k", [(10, 3), (600, 4), (7, 7), (1001, 6)])
def test_split_parts_disjoint_cover_public_sizes(n, k):
    parts = _split_parts(n, k, np.random.default_rng(1))
    assert len(parts) == k
    joined = np.concatenate(parts)
    assert np.array_equal(np.sort(joined), np.arange(n))  # disjoint and covering
    sizes = [len(p) for p in parts]
    # Sizes depend only on n and k, never on the permutation.
    assert sizes == [len(p) for p in _split_parts(n, k, np.random.default_rng(2))]
    assert max(sizes) - min(sizes) <= 1


class RecordingDPLogisticRegression(DPLogisticRegression):
    """Records the rows every fit and predict sees (sequential runs only)."""

    log = []

    def fit(self, X, y):
        type(self).log.append(("fit", self.alpha, frozenset(map(float, X[:, -1]))))
        return super().fit(X, y)

    def predict(self, X):
        type(self).log.append(("predict", self.alpha, frozenset(map(float, X[:, -1]))))
        return super().predict(X)


def _with_row_ids(X):
    """Append a tiny unique id column so rows can be recognised."""
    ids = np.arange(len(X)) * 1e-6
    return np.column_stack([X * 0.99, ids])


def test_fit_uses_disjoint_parts_that_cover_the_data(data):
    X, y = data
    Xi = _with_row_ids(X)
    RecordingDPLogisticRegression.log = []
    make_search(estimator=RecordingDPLogisticRegression()).fit(Xi, y)
    log = RecordingDPLogisticRegression.log
    fits = [rows for kind, _, rows in log if kind == "fit"]
    predicts = {rows for kind, _, rows in log if kind == "predict"}
    assert len(fits) == 3 and len(predicts) == 1  # one held-out part for all
    held_out = predicts.pop()
    parts = fits + [held_out]
    assert sum(len(p) for p in parts) == len(y)
    assert frozenset().union(*parts) == frozenset(map(float, Xi[:, -1]))
    assert {len(p) for p in parts} == {150}
    # Each candidate got a different part.
    assert [a for kind, a, _ in log if kind == "fit"] == GRID["alpha"]


def test_refit_trains_chosen_candidate_on_all_rows(data):
    X, y = data
    Xi = _with_row_ids(X)
    RecordingDPLogisticRegression.log = []
    search = make_search(estimator=RecordingDPLogisticRegression(), refit=True).fit(Xi, y)
    fits = [(a, rows) for kind, a, rows in RecordingDPLogisticRegression.log if kind == "fit"]
    assert len(fits) == 4
    assert fits[-1][0] == search.best_params_["alpha"]
    assert len(fits[-1][1]) == len(y)


# -- accounting -----------------------------------------------------------------------
@pytest.mark.parametrize("refit, factor", [(False, 1.0), (True, 2.0)])
def test_accountant_charged_once(data, refit, factor):
    X, y = data
    acc = BudgetAccountant(epsilon=5.0)
    search = make_search(epsilon=0.5, refit=refit, accountant=acc).fit(X, y)
    assert acc.spends == [(0.5 * factor, 0.0)]
    assert search.privacy_spent_ == (0.5 * factor, 0.0)


def test_context_accountant_charged_once(data):
    X, y = data
    with BudgetAccountant(epsilon=1.0) as acc:
        make_search(epsilon=1.0).fit(X, y)
    assert acc.spends == [(1.0, 0.0)]


def test_budget_exceeded_raises_before_fitting(data):
    X, y = data
    RecordingDPLogisticRegression.log = []
    acc = BudgetAccountant(epsilon=1.5)
    search = make_search(estimator=RecordingDPLogisticRegression(), refit=True, accountant=acc)
    with pytest.raises(BudgetExceededError):
        search.fit(X, y)
    assert RecordingDPLogisticRegression.log == []
    assert acc.spends == []
    assert not hasattr(search, "best_estimator_")


def test_failed_fit_spends_nothing(data):
    X, y = data
    acc = BudgetAccountant()
    X_bad = X.copy()
    X_bad[3, 0] = np.nan
    with pytest.raises(ValueError):
        make_search(accountant=acc).fit(X_bad, y)
    assert acc.spends == []


def test_inner_settings_overridden(data):
    X, y = data
    user_acc, inner_acc = BudgetAccountant(), BudgetAccountant()
    inner = DPLogisticRegression(epsilon=7.0, accountant=inner_acc, random_state=3)
    search = make_search(estimator=inner, epsilon=0.3, accountant=user_acc).fit(X, y)
    assert search.best_estimator_.epsilon == 0.3
    assert search.best_estimator_.privacy_spent_ == (0.3, 0.0)
    assert inner_acc.spends == []  # the user's inner ledger is not charged
    assert user_acc.spends == [(0.3, 0.0)]
    # Refitting the released model charges the search's ledger, not a throwaway one.
    assert search.best_estimator_.accountant is user_acc
    assert inner.get_params()["epsilon"] == 7.0  # the user's object is untouched
    # The noise generator is not released with the model; the user's setting is back.
    assert search.best_estimator_.random_state == 3


@pytest.mark.parametrize("refit", [False, True])
def test_released_model_carries_no_noise_generator(data, refit):
    X, y = data
    search = make_search(refit=refit).fit(X, y)
    params = search.best_estimator_.get_params(deep=True)
    assert params["random_state"] is None
    assert not any(isinstance(v, (np.random.Generator, np.random.SeedSequence))
                   for v in params.values())


# -- outputs --------------------------------------------------------------------------
def test_fitted_attributes_expose_no_scores(data):
    X, y = data
    search = make_search().fit(X, y)
    public = {k for k in vars(search) if k.endswith("_") and not k.startswith("_")}
    assert public == {"best_estimator_", "best_index_", "best_params_", "candidate_params_",
                      "classes_", "n_features_in_", "privacy_spent_", "privacy_event_",
                      "alpha_multipliers_", "best_alpha_multiplier_"}
    # An explicit grid has no multipliers of the rule's alpha.
    assert search.alpha_multipliers_ is None and search.best_alpha_multiplier_ is None
    assert not any(k.startswith("_") and k not in ("_sklearn_version",)
                   for k in vars(search)), vars(search).keys()
    assert search.candidate_params_ == [{"alpha": a} for a in GRID["alpha"]]
    assert search.best_params_ == search.candidate_params_[search.best_index_]
    assert np.array_equal(search.classes_, [0, 1])
    assert search.n_features_in_ == X.shape[1]


def test_delegation(data):
    X, y = data
    search = make_search().fit(X, y)
    best = search.best_estimator_
    assert np.array_equal(search.predict(X), best.predict(X))
    assert np.allclose(search.predict_proba(X), best.predict_proba(X))
    assert np.allclose(search.decision_function(X), best.decision_function(X))
    assert search.score(X, y) == best.score(X, y)
    assert search.score(X, y) > 0.6  # 150 rows per part at epsilon=1
    huber = make_search(estimator=DPHuberSVM()).fit(X, y)
    assert not hasattr(huber, "predict_proba")
    assert hasattr(huber, "decision_function")


def test_reproducible_and_independent_of_n_jobs(data):
    X, y = data
    a = make_search(n_jobs=1).fit(X, y)
    b = make_search(n_jobs=2).fit(X, y)
    c = make_search(n_jobs=None).fit(X, y)
    assert a.best_index_ == b.best_index_ == c.best_index_
    assert np.allclose(a.best_estimator_.coef_, b.best_estimator_.coef_, rtol=1e-8, atol=1e-10)
    assert np.array_equal(a.best_estimator_.coef_, c.best_estimator_.coef_)


def test_candidates_get_independent_noise(data, monkeypatch):
    X, y = data
    # The same alpha twice: different parts and different noise, so different models.
    coefs = []
    for index in (0, 1):
        monkeypatch.setattr(_search, "_select_candidate", lambda z, e, r, i=index: i)
        search = make_search(param_grid={"alpha": [1e-2, 1e-2]}).fit(X, y)
        coefs.append(search.best_estimator_.coef_)
    assert not np.allclose(coefs[0], coefs[1])


# -- pipelines and sklearn conventions ------------------------------------------------
def test_pipeline_inner_estimator(data):
    X, y = data
    acc = BudgetAccountant()
    pipe = Pipeline([("norm", Normalizer()), ("clf", DPLogisticRegression(classes=[0, 1]))])
    search = DPGridSearch(pipe, {"clf__alpha": [1e-2, 1e-1]}, epsilon=0.5, accountant=acc,
                          random_state=0, method="disjoint")
    with warnings.catch_warnings():
        # Normalizer is data-independent and the classes are declared: no warning.
        warnings.simplefilter("error")
        search.fit(X, y)
    assert acc.spends == [(0.5, 0.0)]
    assert isinstance(search.best_estimator_, Pipeline)
    final = search.best_estimator_[-1]
    assert final.epsilon == 0.5 and final.accountant is acc
    assert search.predict(X).shape == y.shape


def test_pipeline_grid_can_swap_the_private_step(data):
    X, y = data
    pipe = Pipeline([("f", FunctionTransformer()), ("clf", DPLogisticRegression())])
    grid = {"clf": [DPLogisticRegression(), DPHuberSVM()]}
    search = DPGridSearch(pipe, grid, epsilon=1.0, random_state=0, method="disjoint").fit(X, y)
    assert search.best_estimator_[-1].epsilon == 1.0


def test_pipeline_with_learned_step_is_refused_before_spending(data):
    X, y = data
    acc = BudgetAccountant()
    pipe = make_pipeline(StandardScaler(), DPLogisticRegression())
    search = DPGridSearch(pipe, {"dplogisticregression__alpha": [1e-2, 1e-1]},
                          accountant=acc, random_state=0)
    with pytest.raises(ValueError, match=r"learn from the data.*\['standardscaler'\]"):
        search.fit(X, y)
    assert acc.spends == [] and not hasattr(search, "best_estimator_")
    # The user may waive the guarantee for that step explicitly.
    search.set_params(allow_learned_steps=True).fit(X, y)
    assert acc.total() == (1.0, 0.0)


def test_every_candidate_is_checked_for_learned_steps(data):
    # The audit's case: the first candidate is harmless, a later one leaks.
    X, y = data
    acc = BudgetAccountant()
    pipe = Pipeline([("pre", FunctionTransformer()), ("clf", DPLogisticRegression())])
    search = DPGridSearch(pipe, {"pre": [FunctionTransformer(), StandardScaler()]},
                          accountant=acc)
    with pytest.raises(ValueError, match=r"Candidate 1 .*\['pre'\]"):
        search.fit(X, y)
    assert acc.spends == []


def test_nested_pipeline_learned_step_is_found(data):
    X, y = data
    inner = make_pipeline(StandardScaler(), DPLogisticRegression())
    pipe = Pipeline([("norm", Normalizer()), ("model", inner)])
    with pytest.raises(ValueError, match="model__standardscaler"):
        DPGridSearch(pipe, {"model__dplogisticregression__alpha": [0.1, 1.0]}).fit(X, y)


def test_search_inside_pipeline(data):
    X, y = data
    acc = BudgetAccountant()
    pipe = make_pipeline(Normalizer(), make_search(accountant=acc))
    pipe.fit(X, y)
    assert acc.spends == [(1.0, 0.0)]
    assert pipe.predict(X).shape == y.shape


def test_get_set_params_and_clone():
    acc = BudgetAccountant()
    search = make_search(accountant=acc)
    params = search.get_params(deep=True)
    assert params["estimator__alpha"] == "auto"  # the estimator's default
    assert params["epsilon"] == 1.0 and params["accountant"] is acc
    search.set_params(estimator__alpha=0.5, epsilon=0.2)
    assert search.estimator.alpha == 0.5 and search.epsilon == 0.2
    copy = clone(search)
    assert copy is not search and copy.estimator is not search.estimator
    assert copy.get_params()["estimator__alpha"] == 0.5
    assert copy.accountant is acc  # the ledger is shared, not copied


# -- bad input ------------------------------------------------------------------------
def test_single_candidate_trains_on_all_rows(data):
    X, y = data
    Xi = _with_row_ids(X)
    acc = BudgetAccountant()
    RecordingDPLogisticRegression.log = []
    search = make_search(estimator=RecordingDPLogisticRegression(),
                         param_grid={"alpha": [0.1]}, refit=True, accountant=acc)
    with pytest.warns(UserWarning, match="single candidate"):
        search.fit(Xi, y)
    fits = [rows for kind, _, rows in RecordingDPLogisticRegression.log if kind == "fit"]
    assert len(fits) == 1 and len(fits[0]) == len(y)
    assert acc.spends == [(1.0, 0.0)]  # cost epsilon even with refit=True
    assert search.best_index_ == 0


def test_too_many_candidates_for_rows(data):
    X, y = data
    acc = BudgetAccountant()
    with pytest.raises(ValueError, match="at least 11 rows"):
        make_search(param_grid={"alpha": list(np.logspace(-3, 0, 10))}, accountant=acc).fit(
            X[:8], y[:8])
    assert acc.spends == []


@pytest.mark.parametrize("n_rare", [0, 1, 2])
def test_rare_or_absent_class_fits_with_declared_classes(data, n_rare):
    # The old per-part "every class present" check succeeded or failed depending
    # on the labels, for free: a noise-free bit. With declared classes every
    # candidate fits whatever its part holds, and the search always spends.
    X, y = data
    acc = BudgetAccountant()
    y_rare = np.zeros_like(y)
    y_rare[:n_rare] = 1
    search = make_search(estimator=DPLogisticRegression(classes=[0, 1]), accountant=acc)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        search.fit(X, y_rare)
    assert acc.spends == [(1.0, 0.0)]
    np.testing.assert_array_equal(search.classes_, [0, 1])
    assert search.best_estimator_.coef_.shape == (1, X.shape[1])


def test_classes_none_is_read_once_and_declared_to_every_candidate(data):
    from dpsk._data._validation import ClassesFromDataWarning

    X, y = data
    y3 = np.where(np.arange(len(y)) < 3, 2, y)  # class 2 is in three rows only
    with pytest.warns(ClassesFromDataWarning) as record:
        search = make_search().fit(X, y3)
    assert len([w for w in record if w.category is ClassesFromDataWarning]) == 1
    np.testing.assert_array_equal(search.classes_, [0, 1, 2])
    # The released model keeps the user's own setting.
    assert search.best_estimator_.classes is None


@pytest.mark.parametrize("epsilon", [0.0, -1.0, np.nan, np.inf, "1"])
def test_bad_epsilon(data, epsilon):
    X, y = data
    acc = BudgetAccountant()
    with pytest.raises(ValueError):
        make_search(epsilon=epsilon, accountant=acc).fit(X, y)
    assert acc.spends == []


def test_non_dpsk_inner_estimator(data):
    X, y = data
    with pytest.raises(TypeError, match="dpsk estimator"):
        DPGridSearch(LogisticRegression(), {"C": [1.0, 2.0]}).fit(X, y)
    with pytest.raises(TypeError, match="dpsk estimator"):
        DPGridSearch(make_pipeline(Normalizer(), LogisticRegression()),
                     {"logisticregression__C": [1.0, 2.0]}).fit(X, y)


@pytest.mark.parametrize("grid", [
    {"alpha": [0.1], "epsilon": [0.5, 1.0]},
    [{"alpha": [0.1]}, {"accountant": [BudgetAccountant()]}],
    {"random_state": [0, 1]},
])
def test_grid_may_not_set_reserved_params(data, grid):
    X, y = data
    acc = BudgetAccountant()
    with pytest.raises(ValueError, match="must not set"):
        make_search(param_grid=grid, accountant=acc).fit(X, y)
    assert acc.spends == []


def test_pipeline_grid_may_not_set_reserved_params(data):
    X, y = data
    pipe = make_pipeline(Normalizer(), DPLogisticRegression())
    with pytest.raises(ValueError, match="must not set"):
        DPGridSearch(pipe, {"dplogisticregression__epsilon": [0.5, 1.0]}).fit(X, y)


# -- scikit-learn's estimator checks --------------------------------------------------
# Expected sample-weight failures: tests/_sklearn_checks.py.
@parametrize_with_checks(
    [DPGridSearch(DPLogisticRegression(), {"alpha": [1e-2, 1e-1]}, random_state=0,
                  method="disjoint"),
     DPGridSearch(DPLogisticRegression(), {"alpha": [1e-2, 1e-1]}, random_state=0,
                  stop_probability=0.5, method="random-stopping"),
     DPGridSearch(DPLogisticRegression(), {"alpha": [1e-2, 1e-1]}, random_state=0,
                  method="repeat", delta=1e-6),
     DPGridSearch(DPLogisticRegression(), {"alpha": [1e-2, 1e-1]}, random_state=0),
     DPGridSearch(DPLogisticRegression(), random_state=0, cannot_pay="fit-default")],
    expected_failed_checks=lambda estimator: WEIGHT_XFAILS,
)
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_dataframe_input_keeps_feature_names(data):
    pd = pytest.importorskip("pandas")
    X, y = data
    df = pd.DataFrame(X, columns=[f"f{i}" for i in range(X.shape[1])])
    search = make_search().fit(df, pd.Series(y))
    assert list(search.feature_names_in_) == list(df.columns)
    assert search.predict(df).shape == y.shape


def test_inner_generator_random_state_is_refused(data):
    # best_estimator_ gets the inner estimator's random_state back: a Generator
    # there would ride along in the released model's pickle.
    X, y = data
    acc = BudgetAccountant()
    inner = DPLogisticRegression(random_state=np.random.default_rng(0))
    with pytest.raises(TypeError, match="inner estimator's random_state"):
        make_search(estimator=inner, accountant=acc).fit(X, y)
    assert acc.spends == []
