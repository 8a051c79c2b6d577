"""PrivateBoundsScaler: the law of the private quantile, its sensitivity, the fit
protocol, bad input refused for free, and its place in pipelines and the table encoder."""

import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
from _sklearn_checks import parametrize_with_checks
from scipy import stats
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline

from dpsk import (
    BudgetAccountant,
    BudgetExceededError,
    DPLogisticRegression,
    ExponentialEvent,
    check_pipeline,
)
from dpsk.mechanisms._random import NoiseSource
from dpsk.pipeline import make_private_pipeline
from dpsk.preprocessing import (
    PrivateBoundsScaler,
    PrivateBoundsWarning,
    bounds_grid,
    make_table_encoder,
    table_norm_bound,
)
from dpsk.preprocessing._bounds import private_quantile, quantile_utilities


@parametrize_with_checks([PrivateBoundsScaler(), PrivateBoundsScaler(missing="midpoint")])
def test_sklearn_compatible(estimator, check):
    check(estimator)


# -- the law of the private quantile ---------------------------------------------------

#: A small example: 11 candidates, values with ties and a spread of utilities.
GRID = bounds_grid((1.0, 4.0), 2)
VALUES = np.sort(np.array([-1.2, 0.0, 0.0, 1.0, 1.2, 1.6, 2.0, 2.0, 2.5, 3.5, 5.0]))


def _law(epsilon, q):
    u = quantile_utilities(VALUES, GRID, q)
    p = np.exp(epsilon * (u - u.max()) / 2.0)
    return p / p.sum()


def _draws(epsilon, q, n, seed):
    rng = NoiseSource.seeded(seed)
    return np.bincount([private_quantile(VALUES, GRID, q, epsilon, rng) for _ in range(n)],
                       minlength=GRID.size)


def _p_value(counts, law):
    keep = law * counts.sum() >= 5  # the chi-square approximation needs full cells
    expected = np.append(law[keep], law[~keep].sum()) * counts.sum()
    observed = np.append(counts[keep], counts[~keep].sum())
    if expected[-1] == 0:
        expected, observed = expected[:-1], observed[:-1]
    return stats.chisquare(observed, expected).pvalue


def test_utilities_of_the_small_example():
    # q n = 0.5 * 11 = 5.5. At 1.5: 5 values below and 5 at most, so 0.5 short;
    # at 2: 6 below (0.5 too many), 8 at most. At 4: 10 below, 4.5 too many.
    u = quantile_utilities(VALUES, GRID, 0.5)
    assert u[GRID == 1.5][0] == -0.5 and u[GRID == 2.0][0] == -0.5
    assert u[GRID == 4.0][0] == -4.5 and u.max() == -0.5
    # Ties: 0 is a 0.2-quantile (1 value below it, 3 at most, 0.2 * 11 = 2.2 between).
    assert quantile_utilities(VALUES, np.array([0.0]), 0.2)[0] == 0.0


def test_selected_cell_has_the_exponential_mechanism_law():
    epsilon, q, n = 1.0, 0.5, 10000  # power 0.999 against 1.1 epsilon (noncentrality 64)
    counts = _draws(epsilon, q, n, seed=1)
    assert _p_value(counts, _law(epsilon, q)) > 1e-3


def test_law_test_has_power_against_ten_percent_too_little_noise():
    # A mechanism drawing with 10% less noise (epsilon 1.1 where 1.0 is claimed)
    # must fail the same test.
    epsilon, q, n = 1.0, 0.5, 10000  # power 0.999 against 1.1 epsilon (noncentrality 64)
    counts = _draws(1.1 * epsilon, q, n, seed=2)
    assert _p_value(counts, _law(epsilon, q)) < 1e-3


# -- sensitivity on neighbouring data sets --------------------------------------------


def _neighbours(seed):
    """Pairs of columns that differ in one entry (replace one row), NaN = missing."""
    rng = np.random.default_rng(seed)
    base = np.round(rng.normal(3.0, 4.0, size=40), 1)
    base[:5] = 0.0  # ties
    pairs = []
    for value in (1e6, -1e6, 0.0, base[7], np.nan):
        other = base.copy()
        other[0] = value
        pairs.append((base, other))
    missing = base.copy()
    missing[3] = np.nan
    pairs.append((missing, base))
    return pairs


@pytest.mark.parametrize("q", [0.01, 0.05, 0.5, 0.95])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_utilities_move_by_at_most_one(q, seed):
    grid = bounds_grid((2.0**-4, 2.0**24), 4)
    for a, b in _neighbours(seed):
        ua = quantile_utilities(np.sort(a[~np.isnan(a)]), grid, q)
        ub = quantile_utilities(np.sort(b[~np.isnan(b)]), grid, q)
        assert np.max(np.abs(ua - ub)) <= 1.0 + 1e-12


def test_selection_probabilities_within_e_epsilon_on_neighbours():
    grid = bounds_grid((2.0**-4, 2.0**24), 4)
    epsilon = 0.7
    for a, b in _neighbours(3):
        laws = []
        for col in (a, b):
            u = quantile_utilities(np.sort(col[~np.isnan(col)]), grid, 0.05)
            p = np.exp(epsilon * (u - u.max()) / 2.0)
            laws.append(p / p.sum())
        assert np.max(np.abs(np.log(laws[0] / laws[1]))) <= epsilon + 1e-9


def _observe(X, seed=None):
    ledger = BudgetAccountant()
    scaler = PrivateBoundsScaler(epsilon=0.5, missing="midpoint", accountant=ledger,
                                 random_state=seed)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scaler.fit(X)
    public = {k: (np.shape(v), np.asarray(v).dtype.str) if k in ("lower_", "upper_") else repr(v)
              for k, v in vars(scaler).items() if k != "accountant"}
    return public, [(w.category, str(w.message)) for w in caught], ledger.spends, scaler


def test_neighbours_look_the_same_but_for_the_release():
    for a, b in _neighbours(4):
        seen = [_observe(col.reshape(-1, 1))[:3] for col in (a, b)]
        assert seen[0] == seen[1]
        # Only the rule's warning, from public numbers (40 rows, 1 column, epsilon).
        assert [kind for kind, _ in seen[0][1]] == [PrivateBoundsWarning]
        assert seen[0][2] == [(0.5, 0.0)]


def test_fresh_noise_and_seeded_reproducible():
    X = np.random.default_rng(0).normal(0, 1, size=(50, 2))
    assert len({_observe(X)[3].lower_.tobytes() + _observe(X)[3].upper_.tobytes()
                for _ in range(8)}) > 1
    first, second = _observe(X, seed=3)[3], _observe(X, seed=3)[3]
    assert np.array_equal(first.lower_, second.lower_)


# -- the fit protocol ------------------------------------------------------------------


def test_bounds_are_near_the_quantiles_and_rows_bounded():
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.normal(100, 10, 5000), rng.exponential(1e5, 5000)])
    ledger = BudgetAccountant()
    scaler = PrivateBoundsScaler(epsilon=1.0, accountant=ledger).fit(X)
    for j in range(2):
        rank_low = np.mean(X[:, j] < scaler.lower_[j])
        rank_high = np.mean(X[:, j] <= scaler.upper_[j])
        assert 0.0 <= rank_low < 0.12 and 0.88 < rank_high <= 1.0, (j, rank_low, rank_high)
    out = scaler.transform(X)
    assert out.min() >= 0.0 and out.max() <= 1.0
    assert np.all(np.linalg.norm(out, axis=1) <= scaler.row_norm_bound_ + 1e-12)
    assert scaler.row_norm_bound_ == pytest.approx(np.sqrt(2))
    assert ledger.spends == [(1.0, 0.0)]
    assert scaler.privacy_event_ == ExponentialEvent(1.0)
    assert np.all(scaler.lower_ < scaler.upper_)
    assert set(scaler.lower_) <= set(bounds_grid())


def test_feature_range_and_missing_midpoint():
    X = np.array([[1.0], [np.nan], [3.0]] * 200)
    scaler = PrivateBoundsScaler(feature_range=(-1.0, 1.0), missing="midpoint",
                                 accountant=BudgetAccountant(), random_state=0).fit(X)
    out = scaler.transform(X)
    assert out[1, 0] == 0.0 and out.min() >= -1.0 and out.max() <= 1.0
    assert scaler.row_norm_bound_ == 1.0


@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan, "text"])
def test_bad_input_refused_for_free_without_quoting(bad):
    ledger = BudgetAccountant()
    X = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], dtype=object)
    X[1, 1] = bad
    with pytest.raises(ValueError) as info:
        PrivateBoundsScaler(accountant=ledger).fit(X)
    assert ledger.spends == []
    assert "text" not in str(info.value) and "4.0" not in str(info.value)
    if isinstance(bad, float) and np.isinf(bad):  # inf is refused even with midpoint
        with pytest.raises(ValueError):
            PrivateBoundsScaler(accountant=ledger, missing="midpoint").fit(X.astype(float))
        assert ledger.spends == []


@pytest.mark.parametrize("params", [
    {"quantiles": (0.9, 0.1)}, {"quantiles": (0.0, 0.5)}, {"feature_range": (1, 1)},
    {"magnitude_range": (3.0, 8.0)}, {"magnitude_range": (8.0, 2.0)}, {"epsilon": 0},
    {"feature_range": (0, np.inf)},
])
def test_bad_parameters_refused_for_free(params):
    ledger = BudgetAccountant()
    with pytest.raises(ValueError):
        PrivateBoundsScaler(accountant=ledger, **params).fit(np.ones((5, 1)))
    assert ledger.spends == []


def test_budget_refusal_is_free():
    ledger = BudgetAccountant(epsilon=0.5)
    with pytest.raises(Exception, match="budget|Budget"):
        PrivateBoundsScaler(epsilon=1.0, accountant=ledger).fit(np.ones((5, 1)))
    assert ledger.spends == []


def test_pickle_holds_no_noise_source():
    scaler = PrivateBoundsScaler(accountant=BudgetAccountant()).fit(np.ones((20, 1)))
    data = pickle.dumps(scaler)
    assert b"NoiseSource" not in data and b"Generator" not in data


# -- pipelines ---------------------------------------------------------------------------


def test_check_pipeline_accepts_it_before_a_private_model_only():
    private = make_pipeline(PrivateBoundsScaler(), DPLogisticRegression())
    assert check_pipeline(private) == []
    with pytest.raises(ValueError, match="no dpsk estimator"):
        check_pipeline(make_pipeline(PrivateBoundsScaler(), LogisticRegression()))


def test_private_pipeline_counts_both_on_one_ledger():
    rng = np.random.default_rng(0)
    X = rng.normal(50, 10, size=(400, 2))
    y = (X[:, 0] > 50).astype(int)
    ledger = BudgetAccountant(epsilon=1.0)
    pipe = make_private_pipeline(
        PrivateBoundsScaler(epsilon=0.3, method="median", accountant=ledger),
        DPLogisticRegression(epsilon=0.7, data_norm=np.sqrt(2), accountant=ledger,
                             classes=[0, 1]), strict=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pipe.fit(X, y)
    assert ledger.total() == pytest.approx((1.0, 0.0))
    assert ledger.spends == [(0.3, 0.0), (0.7, 0.0)]


def test_default_ledger_is_shared():
    X = np.random.default_rng(0).normal(size=(100, 1))
    y = (X[:, 0] > 0).astype(int)
    with BudgetAccountant() as ledger:
        make_private_pipeline(PrivateBoundsScaler(epsilon=0.25),
                              DPLogisticRegression(epsilon=0.5, classes=[0, 1])).fit(X, y)
    assert ledger.total() == pytest.approx((0.75, 0.0))


# -- the table encoder -----------------------------------------------------------------


def _frame(n=600, seed=0):
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"age": rng.integers(17, 90, n).astype(float),
                          "weight": rng.exponential(1e5, n),
                          "sex": rng.choice(["F", "M"], n)})
    frame.loc[3, "weight"] = np.nan
    return frame


def test_encoder_learns_undeclared_bounds_privately():
    frame = _frame()
    ledger = BudgetAccountant()
    numeric = {"age": (17, 90), "weight": None}
    encoder = make_table_encoder(numeric, {"sex": ["F", "M"]}, bounds_epsilon=0.5,
                                 bounds_accountant=ledger)
    out = encoder.fit_transform(frame)
    assert out.shape == (600, 5)  # the missing-category indicator of "sex" too
    assert ledger.spends == [(0.5, 0.0)]
    assert out[3, 1] == 0.5  # a missing weight sits at the midpoint of the learned bounds
    assert np.all(np.linalg.norm(out, axis=1) <= table_norm_bound(numeric, {"sex": ["F", "M"]}))
    assert encoder.get_feature_names_out().tolist()[:4] == ["age", "weight", "sex_F", "sex_M"]


def test_encoder_declared_bounds_unchanged_and_free():
    frame = _frame()
    ledger = BudgetAccountant()
    with ledger:
        out = make_table_encoder({"age": (17, 90), "weight": (0, 1e6)}).fit_transform(frame)
    assert ledger.spends == []
    assert out[0, 0] == (frame["age"][0] - 17) / 73


def test_encoder_bounds_epsilon_rules():
    with pytest.raises(ValueError, match="bounds_epsilon"):
        make_table_encoder({"age": None})
    with pytest.raises(ValueError, match="nothing would be learned"):
        make_table_encoder({"age": (0, 1)}, bounds_epsilon=1.0)
    with pytest.raises(ValueError, match="bounds_epsilon"):
        make_table_encoder({"age": None}, bounds_epsilon=-1.0)


def test_encoder_in_a_private_pipeline_is_not_flagged():
    encoder = make_table_encoder({"age": None, "weight": None}, {"sex": ["F", "M"]},
                                 bounds_epsilon=0.2)
    pipe = make_private_pipeline(encoder, DPLogisticRegression(), strict=True)
    assert check_pipeline(pipe) == []


def test_failure_after_reading_is_charged_and_opaque(monkeypatch):
    import dpsk.preprocessing._bounds as bounds_module
    from dpsk import PrivateFitError

    def broken(sorted_values, *args):
        raise RuntimeError(f"secret {sorted_values[0]}")

    monkeypatch.setattr(bounds_module, "private_bounds", broken)
    ledger = BudgetAccountant()
    scaler = PrivateBoundsScaler(epsilon=0.3, method="quantiles", accountant=ledger)
    with pytest.raises(PrivateFitError) as info:
        scaler.fit(np.full((10, 1), 123.0))
    assert "secret" not in str(info.value) and "123" not in str(info.value)
    assert info.value.__cause__ is None and info.value.__context__ is None
    assert ledger.spends == [(0.3, 0.0)]
    assert not hasattr(scaler, "lower_")


@pytest.mark.parametrize("method, refit, expected", [
    ("disjoint", False, 0.8 + 0.2),             # disjoint parts: one part's bounds
    ("disjoint", True, 2 * 0.8 + 2 * 0.2),       # and the refit's
    ("random-stopping", False, 0.8 + 3 * 0.2),   # a run is (eps0 + b)-DP, tripled
    ("repeat", False, 2 * (0.4 + 0.2)),          # pure runs: (2 + eta) (eps0 + b), eta = 0
])
def test_dp_grid_search_accepts_private_bounds_and_charges_every_run(method, refit, expected):
    # Each run refits the bounds on its own rows: the search's one event covers them
    # (never one charge per run, which would count the secret number of runs).
    from dpsk import DPGridSearch

    X = np.random.default_rng(0).normal(size=(200, 2))
    y = (X[:, 0] > 0).astype(int)
    ledger = BudgetAccountant()
    pipe = make_pipeline(PrivateBoundsScaler(epsilon=0.2, accountant=ledger),
                         DPLogisticRegression(classes=[0, 1]))
    search = DPGridSearch(pipe, {"dplogisticregression__alpha": [0.01, 0.1]}, epsilon=0.8,
                          accountant=ledger, method=method, refit=refit, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search.fit(X, y)
    assert len(ledger.events) == 1
    assert ledger.total()[0] == pytest.approx(expected)
    assert search.privacy_spent_[0] == pytest.approx(expected)
    released = search.best_estimator_[0]
    assert released.accountant is ledger and released.random_state is None
    assert hasattr(released, "lower_")


def test_dp_grid_search_refusals_with_private_bounds_are_free():
    from dpsk import DPGridSearch

    X = np.random.default_rng(1).normal(size=(100, 2))
    y = (X[:, 0] > 0).astype(int)
    ledger = BudgetAccountant(epsilon=1.0)
    pipe = make_pipeline(PrivateBoundsScaler(epsilon=0.2, accountant=ledger),
                         DPLogisticRegression(classes=[0, 1]))
    bad = X.copy()
    bad[3, 1] = np.inf
    search = DPGridSearch(pipe, {"dplogisticregression__alpha": [0.01, 0.1]}, epsilon=0.5,
                          accountant=ledger, method="disjoint")
    with pytest.raises(ValueError, match="nothing was spent"):
        search.fit(bad, y)
    with pytest.raises(BudgetExceededError):  # 0.9 + 0.2 > 1
        search.set_params(epsilon=0.9).fit(X, y)
    assert ledger.events == []
