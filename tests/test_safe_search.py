"""The safe search (``DPGridSearch(method="safe")``, the default): select on a share of
the budget with the untuned default ahead, refit on all rows with the rest.

Law and sensitivity of the selection with its public head start, the public rules
(the share, the head start, whether a search can pay) against their derivations in
``docs/grid_search.rst``, the cost (one ledger event, the parts and the refit
within it), the candidates (the default always among them, alphas as multiples of
the rule), the warning before the spend and the opt-in fit of the default, and the
refusals, free.
"""

import math
import warnings
from itertools import product

import numpy as np
import pytest
from scipy import stats
from sklearn.pipeline import Pipeline
from sklearn.utils._param_validation import InvalidParameterError
from test_search_default_grid import _data

from dpsk import (
    ApproxDPEvent,
    BudgetAccountant,
    DPHuberSVM,
    DPKernelClassifier,
    DPLogisticRegression,
    PureDPEvent,
)
from dpsk.mechanisms._noise import exponential_mechanism
from dpsk.mechanisms._random import NoiseSource
from dpsk.model_selection import DPGridSearch, SearchCannotPayWarning, _safe, _search
from dpsk.model_selection._repeat import rule_alpha, rule_bound
from dpsk.model_selection._safe import (
    FIT_NOISE_CAP,
    OTHER_SHARE,
    SAFE_MULTIPLIERS,
    SHARE_RANGE,
    SWITCH_PROBABILITY,
    default_bonus,
    plan_safe,
    resolution,
    select_with_bonus,
    selection_share,
)

pytestmark = pytest.mark.filterwarnings(
    "ignore::dpsk.model_selection._search.SearchCannotPayWarning")


def _probabilities(mistakes, default, bonus, epsilon):
    """The exact law of :func:`select_with_bonus` (the exponential mechanism's)."""
    utilities = -np.asarray(mistakes, dtype=float)
    utilities[default] += bonus
    return exponential_mechanism(utilities, epsilon, 1.0, NoiseSource.seeded(0))[1]


def _bound(final, n_features=4, n_classes=2):
    def bound(rows, epsilon, delta, alpha):
        return rule_bound(final, rows, n_features, n_classes, epsilon, delta, alpha)
    return bound


# -- the selection and its head start --------------------------------------------------
@pytest.mark.parametrize("m, epsilon", [(2, 0.05), (3, 0.5), (6, 2.0), (10, 0.01)])
def test_bonus_keeps_the_default_among_equals(m, epsilon):
    """Every candidate as good as the default: another is chosen with probability at
    most SWITCH_PROBABILITY (and about that: the bonus is not larger than needed)."""
    bonus = default_bonus(m, epsilon, n_validation=100)
    p = _probabilities([50] * m, 0, bonus, epsilon)
    assert 1.0 - p[0] <= SWITCH_PROBABILITY * (1 + 1e-9)
    assert 1.0 - p[0] >= SWITCH_PROBABILITY * 0.99
    # Exact in floating point: a multiple of 1/1024.
    assert bonus * 1024 == int(bonus * 1024)


@pytest.mark.parametrize("alpha_only", [True, False])
def test_bonus_adds_the_selection_fits_bound(alpha_only):
    plain = default_bonus(3, 0.5, 1000)
    cap = FIT_NOISE_CAP["alpha" if alpha_only else "other"]
    for select_bound in (0.01, 0.3, 5.0):
        bonus = default_bonus(3, 0.5, 1000, select_bound, alpha_only)
        assert bonus == pytest.approx(plain + 1000 * min(select_bound, cap), abs=1e-3)


def test_vacuous_selection_fits_keep_the_default_of_an_alpha_grid():
    """A vacuous bound at the selection fits: even a default wrong on every validation
    row and candidates right on all of them leave it at most SWITCH_PROBABILITY."""
    n_val, epsilon = 300, 0.05
    bonus = default_bonus(3, epsilon, n_val, select_bound=2.0, alpha_only=True)
    p = _probabilities([n_val, 0, 0], 0, bonus, epsilon)
    assert 1.0 - p[0] <= SWITCH_PROBABILITY * (1 + 1e-9)


def test_resolution_is_where_a_better_candidate_wins_half_the_time():
    m, epsilon, n_val = 4, 0.3, 2000
    bonus = default_bonus(m, epsilon, n_val, select_bound=0.02)
    advantage = resolution(m, epsilon, bonus, n_val) * n_val
    p = _probabilities([500, 500 - advantage, 500, 500], 0, bonus, epsilon)
    assert p[1] == pytest.approx(0.5, abs=1e-9)


def test_selection_follows_its_law():
    """Chi-square goodness of fit of the draws to the exact law; power: the same
    draws reject the law of a 10% larger epsilon (noise 10% too small)."""
    mistakes, default, bonus, epsilon = [40, 30, 34, 45], 0, 8.0, 0.5
    rng = NoiseSource.seeded(2024)
    n_draws = 20000
    draws = np.array([select_with_bonus(mistakes, default, bonus, epsilon, rng)
                      for _ in range(n_draws)])
    observed = np.bincount(draws, minlength=len(mistakes))
    expected = _probabilities(mistakes, default, bonus, epsilon)
    assert stats.chisquare(observed, n_draws * expected).pvalue > 1e-3
    too_small = _probabilities(mistakes, default, bonus, 1.1 * epsilon)
    assert stats.chisquare(observed, n_draws * too_small).pvalue < 1e-6


def test_selection_is_private_on_neighbours():
    """Neighbours move each count by at most one (either way): every probability moves
    by at most exp(epsilon), and the bound is reached (the sensitivity is not less)."""
    epsilon, bonus = 0.7, 6.5
    # A candidate far behind the others: its probability's ratio nears exp(epsilon).
    mistakes = np.array([60, 17, 20])
    worst = 0.0
    for shift in product((-1, 0, 1), repeat=3):
        p = _probabilities(mistakes, 1, bonus, epsilon)
        q = _probabilities(mistakes + np.array(shift), 1, bonus, epsilon)
        worst = max(worst, float(np.max(np.log(p / q))))
    assert worst <= epsilon * (1 + 1e-9)
    assert worst >= epsilon * 0.99


# -- the public rules ------------------------------------------------------------------
@pytest.mark.parametrize("n, epsilon, delta", [(2_000, 0.5, 0.0), (20_000, 1.0, 0.0),
                                                (20_000, 1.0, 1e-6), (200_000, 2.0, 0.0)])
def test_share_keeps_the_refits_bound_within_its_tolerance(n, epsilon, delta):
    final = DPLogisticRegression(delta=delta)
    bound = _bound(final)
    share = selection_share(bound, n, epsilon, delta)
    alpha, best = bound(n, epsilon, delta, None)
    tolerance = max(_safe.REFIT_TOLERANCE, _safe.REFIT_RELATIVE_TOLERANCE * best)

    def loss(s):
        return bound(n, (1 - s) * epsilon, (1 - s) * delta, alpha / (1 - s))[1] - best

    assert SHARE_RANGE[0] <= share <= SHARE_RANGE[1]
    assert loss(share) <= tolerance * (1 + 1e-9)
    if share < SHARE_RANGE[1]:
        assert loss(share + 0.005) > tolerance
    # The refit's promise, by the bound at its own alpha, is within the same tolerance.
    assert bound(n, (1 - share) * epsilon, (1 - share) * delta, None)[1] - best <= tolerance
    if delta == 0:
        # Pure objective perturbation: U(s) is about B s / (1 - s) (both main terms of
        # the bound scale by 1 / (1 - s); the solver's residual term does not).
        assert loss(share) == pytest.approx(best * share / (1 - share), rel=0.25)


def test_plan_takes_the_smallest_share_when_it_cannot_pay():
    final = DPLogisticRegression()
    plan = plan_safe(500, 3, 1, 1.0, 0.0, _bound(final), alpha_only=True)
    assert not plan.pays and plan.share == SHARE_RANGE[0]
    assert plan.refit_epsilon == pytest.approx(1.0 - SHARE_RANGE[0])
    big = plan_safe(2_000_000, 3, 1, 2.0, 0.0, _bound(final), alpha_only=True)
    assert big.pays and big.share > SHARE_RANGE[0]
    other = plan_safe(50_000, 3, 1, 1.0, 0.0, _bound(final), alpha_only=False)
    assert other.pays and other.share >= OTHER_SHARE


def test_plan_sizes_are_those_of_the_split():
    plan = plan_safe(1001, 4, 0, 1.0, 0.0, _bound(DPLogisticRegression()), True)
    parts = _search._split_parts(1001, 5, np.random.default_rng(0))
    assert plan.part_sizes == tuple(len(p) for p in parts)


# -- the search ------------------------------------------------------------------------
def _spy(monkeypatch):
    """Record every fit of a candidate on a part (its estimator and rows) and the refit."""
    seen = {"parts": [], "refit": []}
    fit_and_count = _search._fit_and_count

    def part(candidate, X_train, *args, **kwargs):
        seen["parts"].append((candidate, len(X_train)))
        return fit_and_count(candidate, X_train, *args, **kwargs)

    fit_in_one_process = _search._fit_in_one_process

    def refit(estimator, X, y, weights):
        seen["refit"].append((estimator, len(y)))
        return fit_in_one_process(estimator, X, y, weights)

    monkeypatch.setattr(_search, "_fit_and_count", part)
    monkeypatch.setattr(_search, "_fit_in_one_process", refit)
    return seen


@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_default_grid_cost_parts_and_refit(monkeypatch, delta):
    X, y = _data(n=600)
    seen = _spy(monkeypatch)
    acc = BudgetAccountant()
    base = DPLogisticRegression(classes=[0, 1], delta=delta)
    search = DPGridSearch(base, epsilon=1.0, selection_share=0.3, accountant=acc,
                          random_state=0).fit(X, y)
    s = search.selection_share_
    assert s == 0.3
    # One event, the whole budget; the inner fits spent within it.
    assert acc.events == [PureDPEvent(1.0) if delta == 0 else ApproxDPEvent(1.0, delta)]
    assert search.privacy_spent_ == (1.0, delta)
    assert len(seen["parts"]) == 3 and len(seen["refit"]) == 1
    rows = len(y) // 4
    for (candidate, n_rows), c in zip(seen["parts"], SAFE_MULTIPLIERS):
        assert n_rows in (rows, rows + 1)
        assert candidate.privacy_spent_ == (0.3, 0.3 * delta)
        # The multiple of the rule for the parts' size at the selection's budget.
        expected = rule_alpha(base, rows, 4, 2, 0.3, 0.3 * delta, c)
        assert candidate.alpha_ == pytest.approx(expected, rel=1e-12)
    refit, n_rows = seen["refit"][0]
    assert n_rows == len(y)
    assert refit.privacy_spent_ == pytest.approx((0.7, 0.7 * delta))
    c = search.best_alpha_multiplier_
    assert search.best_estimator_.alpha == pytest.approx(
        rule_alpha(base, len(y), 4, 2, 0.7, 0.7 * delta, c), rel=1e-12)
    assert search.alpha_multipliers_ == SAFE_MULTIPLIERS
    assert search.default_index_ == SAFE_MULTIPLIERS.index(1.0)


def test_explicit_alphas_transfer_as_multiples_of_the_rule(monkeypatch):
    X, y = _data(n=600)
    seen = _spy(monkeypatch)
    base = DPLogisticRegression(classes=[0, 1])
    search = DPGridSearch(base, {"alpha": [1e-1, 1e-3]}, epsilon=1.0, selection_share=0.2,
                          accountant=BudgetAccountant(), random_state=0).fit(X, y)
    # The default is always a candidate: the estimator as given, first.
    assert search.candidate_params_ == [{}, {"alpha": 1e-1}, {"alpha": 1e-3}]
    assert search.default_index_ == 0
    rows, refit_rule = len(y) // 4, rule_alpha(base, len(y), 4, 2, 0.8, 0.0)
    part_rule = rule_alpha(base, rows, 4, 2, 0.2, 0.0)
    alphas = [candidate.alpha_ for candidate, _ in seen["parts"]]
    assert alphas[0] == pytest.approx(part_rule, rel=1e-12)  # alpha="auto": the rule
    for got, given in zip(alphas[1:], (1e-1, 1e-3)):
        assert got == pytest.approx(given / refit_rule * part_rule, rel=1e-12)
    # The refit runs at the grid's own value.
    refit = seen["refit"][0][0]
    assert refit.alpha == search.best_params_.get("alpha", "auto")


def test_a_grid_holding_the_default_adds_nothing():
    X, y = _data()
    search = DPGridSearch(DPLogisticRegression(classes=[0, 1], alpha=1e-2),
                          {"alpha": [1e-3, 1e-2]}, epsilon=1.0,
                          accountant=BudgetAccountant(), random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SearchCannotPayWarning)
        search.fit(X, y)
    assert search.candidate_params_ == [{"alpha": 1e-3}, {"alpha": 1e-2}]
    assert search.default_index_ == 1


def test_grid_estimators_are_not_changed_by_the_search():
    X, y = _data()
    kernel = DPKernelClassifier(gamma=10.0, classes=[0, 1])
    before = kernel.get_params()
    pipe = Pipeline([("clf", DPLogisticRegression(classes=[0, 1]))])
    search = DPGridSearch(pipe, {"clf": [DPLogisticRegression(classes=[0, 1]), kernel]},
                          epsilon=1.0, accountant=BudgetAccountant(), random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SearchCannotPayWarning)
        search.fit(X, y)
    assert kernel.get_params() == before and not hasattr(kernel, "coef_")
    assert search.default_index_ == 0  # an equal copy of the pipeline's own step


def test_cannot_pay_warns_before_spending_with_public_text(monkeypatch):
    acc = BudgetAccountant()
    spend = acc.spend
    warned_at_spend = []

    def recording_spend(event, **kwargs):
        warned_at_spend.append([w.category for w in caught])
        return spend(event, **kwargs)

    monkeypatch.setattr(acc, "spend", recording_spend)
    texts = []
    for seed in (0, 1):
        X, y = _data(n=300, seed=seed)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            DPGridSearch(DPLogisticRegression(classes=[0, 1]), epsilon=0.5, accountant=acc,
                         random_state=0).fit(X, y)
        assert warned_at_spend[-1] == [SearchCannotPayWarning]  # said before the spend
        found = [w for w in caught if w.category is SearchCannotPayWarning]
        assert len(found) == 1 and found[0].filename == __file__
        texts.append(str(found[0].message))
    assert texts[0] == texts[1]  # the same public sizes, the same text
    assert "cannot_pay='fit-default'" in texts[0]


@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_fit_default_instead(delta):
    X, y = _data(n=300)
    acc = BudgetAccountant()
    base = DPLogisticRegression(classes=[0, 1], delta=delta)
    with pytest.warns(SearchCannotPayWarning, match="fits the untuned default"):
        search = DPGridSearch(base, epsilon=0.5, cannot_pay="fit-default", accountant=acc,
                              random_state=0).fit(X, y)
    assert search.selection_share_ == 0.0
    assert search.best_index_ == search.default_index_
    best = search.best_estimator_
    assert best.epsilon == 0.5 and best.alpha == pytest.approx(
        rule_alpha(base, len(y), 4, 2, 0.5, delta), rel=1e-12)
    assert acc.events == [best.privacy_event_] and search.privacy_spent_ == (0.5, delta)


def test_auto_is_safe_without_refit():
    assert DPGridSearch(DPLogisticRegression())._method() == "safe"
    assert DPGridSearch(DPLogisticRegression(), refit=True)._method() == "random-stopping"


@pytest.mark.parametrize("case", ["refit", "pure-total", "share", "cannot-pay"])
def test_refused_for_free(case):
    X, y = _data()
    acc = BudgetAccountant()
    base = DPLogisticRegression(classes=[0, 1])
    if case == "refit":
        search, error = DPGridSearch(base, method="safe", refit=True, accountant=acc), \
            ValueError
    elif case == "pure-total":
        search = DPGridSearch(base, {"delta": [0.0, 1e-6]}, delta=0.0, accountant=acc)
        error = ValueError
    elif case == "share":
        search, error = DPGridSearch(base, selection_share=1.0, accountant=acc), \
            InvalidParameterError
    else:
        search, error = DPGridSearch(base, cannot_pay="never", accountant=acc), \
            InvalidParameterError
    with pytest.raises(error):
        search.fit(X, y)
    assert acc.events == []


def test_mixed_grid_shares_the_delta():
    """Pure and Gaussian candidates: the Gaussian ones run at their share of the
    search's delta, the pure ones stay pure; one (epsilon, delta) event."""
    X, y = _data(n=800)
    acc = BudgetAccountant()
    search = DPGridSearch(DPHuberSVM(classes=[0, 1]),
                          {"delta": [0.0, 1e-6], "perturbation": ["objective", "output"]},
                          epsilon=2.0, selection_share=0.25, accountant=acc,
                          random_state=0).fit(X, y)
    assert acc.events == [ApproxDPEvent(2.0, 1e-6)]
    best = search.best_estimator_
    assert best.epsilon == 1.5
    assert best.delta in (0.0, pytest.approx(0.75e-6))


def test_the_share_of_a_search_with_no_rule_is_the_smallest():
    assert selection_share(lambda *args: None, 1000, 1.0) == SHARE_RANGE[0]
    assert math.isclose(resolution(1, 0.1, 0.0, 10), 0.0)
