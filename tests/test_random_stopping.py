"""DPGridSearch(method="random-stopping"): Liu and Talwar (2019), random stopping.

The mechanisms (``dpsk.model_selection._stopping``): the law of the number of
runs and of the candidates, the discrete Laplace score noise (law test, power
against noise 10% too small, mutation test), then the search: budget split,
selection by the best noisy score, what is exposed, validation before spending,
and the theorem's bound checked exactly on a small discrete mechanism.
"""

import math
from fractions import Fraction

import joblib
import numpy as np
import pytest
from scipy import stats

from dpsk import BudgetAccountant, DPLogisticRegression
from dpsk.mechanisms._random import NoiseSource
from dpsk.model_selection import DPGridSearch, _search, _stopping
from dpsk.model_selection._stopping import (
    default_stop_probability,
    discrete_laplace_noise,
    noisy_count,
    random_stopping_plan,
)

P_THRESHOLD = 1e-3
GRID = {"alpha": [1e-3, 1e-2, 1e-1]}


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((400, 4))
    X /= np.linalg.norm(X, axis=1, keepdims=True).max()
    y = (X[:, 0] + 0.1 * rng.standard_normal(400) > 0).astype(int)
    return X, y


def make_search(**kwargs):
    params = dict(estimator=DPLogisticRegression(classes=[0, 1]), param_grid=GRID, epsilon=0.9,
                  method="random-stopping", stop_probability=0.2, random_state=0)
    params.update(kwargs)
    return DPGridSearch(**params)


# -- the number of runs and the candidates ----------------------------------------------
def _run_counts(gamma, n_draws, seed):
    rng = NoiseSource.seeded(seed)
    return np.array([len(random_stopping_plan(4, gamma, rng)) for _ in range(n_draws)])


def _geometric_pvalue(counts, gamma, k_max=40):
    """Chi-square of run counts against Geometric(gamma) on {1, ..., k_max - 1, >= k_max}."""
    k = np.arange(1, k_max)
    expected = np.append(gamma * (1 - gamma) ** (k - 1), (1 - gamma) ** (k_max - 1))
    observed = np.append([np.sum(counts == j) for j in k], np.sum(counts >= k_max))
    return stats.chisquare(observed, expected * counts.size).pvalue


def test_run_count_is_geometric_and_power_against_gamma_off_by_ten_percent():
    gamma = 0.1
    counts = _run_counts(gamma, 20000, seed=1)
    assert _geometric_pvalue(counts, gamma) > P_THRESHOLD
    # The test has power: a stopping probability 10% off either way is rejected.
    assert _geometric_pvalue(counts, gamma * 1.1) < P_THRESHOLD
    assert _geometric_pvalue(counts, gamma / 1.1) < P_THRESHOLD
    assert abs(counts.mean() - 1 / gamma) < 0.2  # E[K] = 1 / gamma


def test_mutation_gamma_ten_percent_too_large_is_caught(monkeypatch):
    real = _stopping.geometric
    monkeypatch.setattr(_stopping, "geometric", lambda p, rng: real(p * Fraction(11, 10), rng))
    counts = _run_counts(0.1, 20000, seed=1)
    assert _geometric_pvalue(counts, 0.1) < P_THRESHOLD


def test_candidates_are_uniform():
    rng = NoiseSource.seeded(2)
    picks = np.concatenate([random_stopping_plan(5, 0.05, rng) for _ in range(1000)])
    assert stats.chisquare(np.bincount(picks, minlength=5)).pvalue > P_THRESHOLD


def test_gamma_one_runs_once_and_default_rule():
    rng = NoiseSource.seeded(0)
    assert all(len(random_stopping_plan(3, 1.0, rng)) == 1 for _ in range(20))
    assert default_stop_probability(5) == pytest.approx(0.02)


@pytest.mark.parametrize("gamma", [0.0, -0.1, 1.5, float("nan")])
def test_plan_refuses_bad_gamma(gamma):
    with pytest.raises(ValueError):
        random_stopping_plan(3, gamma, NoiseSource.seeded(0))


def test_plan_refuses_numpy_generator():
    with pytest.raises(TypeError):
        random_stopping_plan(3, 0.5, np.random.default_rng(0))


def test_plan_is_drawn_from_the_noise_source_and_does_not_see_the_data(data, monkeypatch):
    """Same seed, different data: the same number of runs and the same candidates."""
    X, y = data
    plans, fits = [], []
    real_plan = _search.random_stopping_plan

    def recording_plan(m, gamma, rng):
        assert isinstance(rng, NoiseSource)
        plans.append(real_plan(m, gamma, rng))
        return plans[-1]

    real_fit = _search._fit_and_count

    def recording_fit(candidate, *args):
        fits.append(candidate.get_params()["alpha"])
        return real_fit(candidate, *args)

    monkeypatch.setattr(_search, "random_stopping_plan", recording_plan)
    monkeypatch.setattr(_search, "_fit_and_count", recording_fit)
    make_search().fit(X, y)
    n_first = len(fits)
    make_search().fit(X[::-1], 1 - y[::-1])
    assert np.array_equal(plans[0], plans[1])
    assert fits[:n_first] == fits[n_first:] == [GRID["alpha"][i] for i in plans[0]]


# -- the score noise: discrete Laplace --------------------------------------------------
def _discrete_laplace_pvalue(z, epsilon, z_max=12):
    p = math.exp(-epsilon)
    support = np.arange(-z_max, z_max + 1)
    pmf = (1 - p) / (1 + p) * p ** np.abs(support)
    tail = p ** (z_max + 1) / (1 + p)  # P[Z > z_max] = P[Z < -z_max]
    observed = [np.sum(z < -z_max), *[np.sum(z == s) for s in support], np.sum(z > z_max)]
    expected = np.array([tail, *pmf, tail]) * z.size
    return stats.chisquare(observed, expected).pvalue


def _draws(epsilon, n=20000, seed=3):
    return discrete_laplace_noise(epsilon, NoiseSource.seeded(seed), size=n)


def test_discrete_laplace_law_and_power_against_noise_ten_percent_too_small():
    epsilon = 0.5
    z = _draws(epsilon)
    assert _discrete_laplace_pvalue(z, epsilon) > P_THRESHOLD
    # Noise 10% too small: scale 0.9 / epsilon, i.e. epsilon / 0.9.
    assert _discrete_laplace_pvalue(z, epsilon / 0.9) < P_THRESHOLD


def test_mutation_noise_ten_percent_too_small_is_caught(monkeypatch):
    real = _stopping.discrete_laplace
    # The sampler's scale 1 / epsilon replaced by 0.9 / epsilon.
    monkeypatch.setattr(_stopping, "discrete_laplace",
                        lambda scale, rng: real(scale * Fraction(9, 10), rng))
    assert _discrete_laplace_pvalue(_draws(0.5), 0.5) < P_THRESHOLD


def test_noisy_count_is_count_plus_noise():
    assert noisy_count(100, 1.0, NoiseSource.seeded(4)) == 100 + discrete_laplace_noise(
        1.0, NoiseSource.seeded(4))
    assert isinstance(noisy_count(100, 1.0, NoiseSource.seeded(4)), int)


def test_noisy_count_ratio_on_neighbouring_counts():
    """Exact law: P[count + Z = r] / P[count + 1 + Z = r] <= exp(epsilon), and = at the edge."""
    epsilon = 0.7
    p = math.exp(-epsilon)
    r = np.arange(-20, 22)
    law_a = p ** np.abs(r - 0)
    law_b = p ** np.abs(r - 1)
    ratios = law_a / law_b
    assert ratios.max() == pytest.approx(math.exp(epsilon))
    assert ratios.min() == pytest.approx(math.exp(-epsilon))


# -- the search ---------------------------------------------------------------------------
def test_budget_split_and_single_charge(data, monkeypatch):
    """Each run trains at epsilon / 3 on the training part and scores at epsilon / 3."""
    X, y = data
    seen_fits, seen_scores = [], []
    real_fit, real_count = _search._fit_and_count, _search.noisy_count

    def recording_fit(candidate, X_train, y_train, X_val, y_val, fit_params=None):
        result = real_fit(candidate, X_train, y_train, X_val, y_val, fit_params)
        seen_fits.append((candidate.epsilon, candidate.privacy_spent_, len(y_train), len(y_val)))
        return result

    def recording_count(count, epsilon, rng):
        seen_scores.append(epsilon)
        return real_count(count, epsilon, rng)

    monkeypatch.setattr(_search, "_fit_and_count", recording_fit)
    monkeypatch.setattr(_search, "noisy_count", recording_count)
    user_acc, inner_acc = BudgetAccountant(), BudgetAccountant()
    inner = DPLogisticRegression(classes=[0, 1], accountant=inner_acc)
    search = make_search(estimator=inner, accountant=user_acc).fit(X, y)
    assert user_acc.spends == [(0.9, 0.0)]
    assert inner_acc.spends == []
    assert search.privacy_spent_ == (0.9, 0.0)
    assert len(seen_fits) == len(seen_scores) >= 1
    assert all(f[0] == pytest.approx(0.3) for f in seen_fits)
    assert all(f[1] == (pytest.approx(0.3), 0.0) for f in seen_fits)
    assert {f[2:] for f in seen_fits} == {(360, 40)}  # validation_fraction = 0.1 of 400
    assert seen_scores == [pytest.approx(0.3)] * len(seen_scores)
    assert search.best_estimator_.accountant is user_acc


def test_refit_charges_epsilon_more_and_trains_on_all_rows(data, monkeypatch):
    X, y = data
    acc = BudgetAccountant()
    search = make_search(refit=True, accountant=acc).fit(X, y)
    assert acc.spends == [(1.8, 0.0)]
    assert search.best_estimator_.epsilon == 0.9
    assert search.best_estimator_.privacy_spent_ == (0.9, 0.0)


def test_selects_the_first_best_noisy_score(data, monkeypatch):
    X, y = data
    plan = np.array([0, 2, 1, 2, 0])
    scores = iter([5, 30, 7, 30, 1])  # the maximum is tied: the earlier run wins
    monkeypatch.setattr(_search, "random_stopping_plan", lambda m, g, rng: plan)
    monkeypatch.setattr(_search, "noisy_count", lambda count, eps, rng: next(scores))
    search = make_search().fit(X, y)
    assert search.best_index_ == 2
    assert search.best_params_ == {"alpha": 1e-1}
    assert search.best_score_ == 30 / 40


def test_exposes_only_private_outputs(data):
    X, y = data
    search = make_search().fit(X, y)
    public = {k for k in vars(search) if k.endswith("_") and not k.startswith("_")}
    assert public == {"best_estimator_", "best_index_", "best_params_", "best_score_",
                      "candidate_params_", "classes_", "n_features_in_", "privacy_spent_",
                      "privacy_event_", "alpha_multipliers_", "best_alpha_multiplier_"}
    assert not any(k.startswith("_") and k != "_sklearn_version" for k in vars(search))
    assert isinstance(search.best_score_, float)
    assert search.best_estimator_.get_params()["random_state"] is None


def test_reproducible_and_independent_of_n_jobs(data):
    X, y = data
    a = make_search().fit(X, y)
    with joblib.parallel_config(backend="threading"):  # the same ordering logic, no spawn
        b = make_search(n_jobs=2).fit(X, y)
    assert a.best_index_ == b.best_index_ and a.best_score_ == b.best_score_
    assert np.array_equal(a.best_estimator_.coef_, b.best_estimator_.coef_)


@pytest.mark.parametrize("bad", [
    dict(method="median"), dict(stop_probability=0.0), dict(stop_probability=1.5),
    dict(validation_fraction=0.0), dict(validation_fraction=1.0),
    dict(estimator=DPLogisticRegression(classes=[0, 1], delta=1e-6)),
])
def test_bad_parameters_refused_before_spending(data, monkeypatch, bad):
    X, y = data
    monkeypatch.setattr(_search, "_fit_and_count", lambda *a: pytest.fail("fitted"))
    acc = BudgetAccountant()
    with pytest.raises(ValueError):
        make_search(accountant=acc, **bad).fit(X, y)
    assert acc.spends == []


def test_random_stopping_is_the_default_with_refit():
    # "auto" picks the safe search, which refits within its epsilon; with
    # refit=True it keeps random stopping, the earlier default.
    assert DPGridSearch(DPLogisticRegression(), GRID).method == "auto"
    assert DPGridSearch(DPLogisticRegression(), GRID)._method() == "safe"
    assert DPGridSearch(DPLogisticRegression(), GRID, refit=True)._method() == "random-stopping"


def test_single_candidate_trains_on_all_rows(data):
    X, y = data
    acc = BudgetAccountant()
    with pytest.warns(UserWarning, match="single candidate"):
        search = make_search(param_grid={"alpha": [0.1]}, accountant=acc).fit(X, y)
    assert acc.spends == [(0.9, 0.0)]
    assert not hasattr(search, "best_score_")


# -- the theorem, checked exactly on a small mechanism -----------------------------------
def _stopping_law(q, score, gamma):
    """Exact output law of random stopping over i.i.d. runs with law ``q`` on outputs
    ``0..len(q)-1`` of scores ``score`` (ties to the earliest run), by summing over K."""
    q = np.asarray(q, float)
    law = np.zeros_like(q)
    for k in range(1, 3000):
        weight = gamma * (1 - gamma) ** (k - 1)
        if weight < 1e-18:
            break
        for y in range(q.size):
            below = q[score < score[y]].sum()
            tied = q[score == score[y]].sum()
            # First run attaining the best score is y: sum over its position j.
            law[y] += weight * sum(below ** (j - 1) * q[y] * (below + tied) ** (k - j)
                                   for j in range(1, k + 1)) if k < 60 else 0.0
        if k >= 60:  # closed form of the same sum for long runs
            for y in range(q.size):
                below = q[score < score[y]].sum()
                tied = q[score == score[y]].sum()
                law[y] += weight * q[y] / tied * ((below + tied) ** k - below ** k)
    return law


def test_three_epsilon_bound_on_a_discrete_mechanism():
    """Two neighbouring laws with ratio <= e^eps: the stopped outputs have ratio <= e^{3 eps}."""
    epsilon = 0.3
    score = np.array([0, 0, 1, 1, 2])  # ties included
    rng = np.random.default_rng(0)
    for _ in range(5):
        base = rng.uniform(0.2, 1.0, 5)
        shift = np.exp(rng.uniform(-epsilon, epsilon, 5) / 2)  # ratios within e^eps after
        q = base / base.sum()
        q2 = base * shift / (base * shift).sum()
        assert np.all(np.abs(np.log(q / q2)) <= epsilon + 1e-12)
        for gamma in (0.05, 0.3, 1.0):
            a, b = _stopping_law(q, score, gamma), _stopping_law(q2, score, gamma)
            assert a.sum() == pytest.approx(1.0) and b.sum() == pytest.approx(1.0)
            assert np.max(np.abs(np.log(a / b))) <= 3 * epsilon + 1e-9
