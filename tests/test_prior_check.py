"""The prior check (docs/privacy.rst, "The prior check"): its law, its sensitivity, its
share of the budget, and the estimators that release the prior model when it wins.

* law tests of the noisy margin (Laplace and Gaussian, on the grid), each with power
  against noise 10% too small, and mutation tests of the calibration;
* the margin's sensitivity on neighbouring data sets (2, with and without weights), its
  exactness, and the same margin from a stored design, design blocks and Dask blocks;
* the budget split with a check: pure shares add up, Gaussian ones compose within the
  fit's Gaussian-DP parameter; the share is public;
* the estimators: the prior model released where the model cannot beat it, not where
  the signal is strong, one ledger event, nothing when ``class_prior=None``.
"""

import math

import numpy as np
import pytest
from scipy import stats
from test_multinomial import check_normal_law

import dpsk.mechanisms._prior_check as check_module
from dpsk import BudgetAccountant, DPKernelClassifier, DPLogisticRegression
from dpsk._data._design import DesignRows, design_matrix
from dpsk.linear_model._margin import predicted_indices, training_margin
from dpsk.mechanisms._noise import analytic_gaussian_sigma
from dpsk.mechanisms._prior import prior_budget
from dpsk.mechanisms._prior_check import (
    CHECK_GRID,
    CHECK_SHARE_RANGE,
    WEIGHT_BITS,
    check_share,
    prior_wins,
    release_prior_check,
)
from dpsk.mechanisms._random import NoiseSource

# The rows have norm below 1: the fits declare nothing else.
pytestmark = pytest.mark.filterwarnings("ignore:data_norm='auto'")

SMALLER = 0.9  # "noise 10% too small"
P_THRESHOLD = 1e-3
MARGIN = 37.25


def _noise(budget, n_releases, seed):
    return np.array([release_prior_check(MARGIN, budget, NoiseSource.seeded([seed, k])) - MARGIN
                     for k in range(n_releases)])


def check_laplace_margin(sample, epsilon):
    """KS against Laplace of scale 2 / epsilon, and power against 10% less noise."""
    assert np.all(sample / CHECK_GRID == np.rint(sample / CHECK_GRID)), "on the grid"
    scale = 2.0 / epsilon
    p_right = stats.kstest(sample, stats.laplace(scale=scale).cdf).pvalue
    assert p_right > P_THRESHOLD, f"calibrated law rejected: p={p_right:.2e}"
    # The scale's maximum-likelihood statistic: sum |x| / scale is Gamma(n, 1).
    def scale_p(s):
        tail = stats.gamma(a=sample.size)
        t = np.abs(sample).sum() / s
        return 2 * min(tail.cdf(t), tail.sf(t))

    assert scale_p(scale) > P_THRESHOLD, "calibrated law rejected (scale)"
    assert scale_p(SMALLER * scale) < 1e-6, "no power against 10% less noise"


def test_pure_check_law_and_power():
    budget = prior_budget(0.05, 1.0, 0.0, gaussian=False, check=0.1)
    check_laplace_margin(_noise(budget, 2000, 1), budget.check_epsilon)


def test_pure_check_mutation_is_caught(monkeypatch):
    original = check_module.gamma_norm_noise
    monkeypatch.setattr(check_module, "gamma_norm_noise",
                        lambda d, beta, rng: original(d, beta / SMALLER, rng))
    budget = prior_budget(0.05, 1.0, 0.0, gaussian=False, check=0.1)
    with pytest.raises(AssertionError, match="calibrated law rejected"):
        check_laplace_margin(_noise(budget, 2000, 1), budget.check_epsilon)


def test_gaussian_check_law_and_power():
    budget = prior_budget(0.05, 1.0, 1e-6, gaussian=True, check=0.1)
    sample = _noise(budget, 2000, 2)
    assert np.all(sample / CHECK_GRID == np.rint(sample / CHECK_GRID))
    check_normal_law(sample, budget.check_sigma)


def test_gaussian_check_mutation_is_caught(monkeypatch):
    original = check_module.gaussian_noise
    monkeypatch.setattr(check_module, "gaussian_noise",
                        lambda d, sigma, rng: original(d, sigma * SMALLER, rng))
    budget = prior_budget(0.05, 1.0, 1e-6, gaussian=True, check=0.1)
    with pytest.raises(AssertionError, match="calibrated law rejected"):
        check_normal_law(_noise(budget, 2000, 2), budget.check_sigma)


def test_a_budget_without_a_check_refuses_to_release():
    with pytest.raises(ValueError, match="no share"):
        release_prior_check(1.0, prior_budget(0.1, 1.0, 0.0, gaussian=False),
                            NoiseSource.seeded(0))


@pytest.mark.parametrize("share,check", [(0.005, 0.002), (0.05, 0.1), (0.25, 0.2)])
@pytest.mark.parametrize("epsilon,delta", [(0.1, 1e-6), (1.0, 1e-5), (4.0, 1e-8)])
def test_gaussian_split_with_the_check_composes_within_the_fits_parameter(
        share, check, epsilon, delta):
    budget = prior_budget(share, epsilon, delta, gaussian=True, check=check)
    mu = 1.0 / analytic_gaussian_sigma(epsilon, delta, 1.0)
    mu_model = 1.0 / analytic_gaussian_sigma(budget.model_epsilon, delta, 1.0)
    mu_counts = math.sqrt(2.0) / budget.count_sigma
    mu_check = 2.0 / budget.check_sigma
    total = math.sqrt(mu_counts**2 + mu_check**2 + mu_model**2)
    assert total <= mu
    assert total >= mu * (1 - 1e-5)
    # The counts and the check share what the model leaves in the ratio share : check.
    assert mu_counts**2 / mu_check**2 == pytest.approx(share / check, rel=1e-9)


def test_pure_split_with_the_check_adds_up():
    budget = prior_budget(0.1, 2.0, 0.0, gaussian=False, check=0.15)
    assert (budget.count_epsilon + budget.check_epsilon + budget.model_epsilon
            == pytest.approx(2.0, rel=1e-15))
    assert budget.pure_side_epsilon == pytest.approx(0.5, rel=1e-15)
    for bad in (-0.1, 0.9, 1.0):
        with pytest.raises(ValueError):
            prior_budget(0.1, 2.0, 0.0, gaussian=False, check=bad)


def test_share_is_public_and_in_range():
    lo, hi = CHECK_SHARE_RANGE
    assert check_share(300, 0.1) == hi
    assert check_share(10**8, 2.0) == lo
    assert lo < check_share(5_000, 1.0) < hi
    assert check_share(5_000, 1.0) == pytest.approx(check_module.CHECK_ROWS / 5_000)
    with pytest.raises(ValueError):
        check_share(0, 1.0)


def test_prior_wins_only_on_a_negative_margin():
    assert prior_wins(-CHECK_GRID) and not prior_wins(0.0) and not prior_wins(5.0)
    assert not prior_wins(float("nan"))


# -- the margin ----------------------------------------------------------------------------


def _design(n=300, d=4, seed=0, k=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) / 2
    y = rng.integers(0, k, size=n)
    return X, y


def _margin_by_hand(Z, y, W, constant, weights=None):
    predicted = predicted_indices(Z @ np.atleast_2d(W).T)
    terms = (predicted == y).astype(float) - (y == constant)
    s = np.ones(len(y)) if weights is None else np.floor(weights * 2**WEIGHT_BITS) / 2**WEIGHT_BITS
    return float(np.sum(terms * s))


@pytest.mark.parametrize("k,rows", [(2, 1), (3, 3)])
def test_margin_is_exact_and_the_same_from_every_design(k, rows):
    X, y = _design(k=k)
    classes = np.arange(k)
    W = np.random.default_rng(1).normal(size=(rows, X.shape[1] + 1))
    Z = design_matrix(X, 1.0, True)
    expected = _margin_by_hand(Z, y, W, 0)
    assert training_margin(Z, y, W, classes, 0) == expected
    assert training_margin(DesignRows(X, 1.0, True, block=64), y, W, classes, 0) == expected
    weights = np.random.default_rng(2).uniform(size=len(y))
    margin = training_margin(Z, y, W, classes, 0, weights)
    assert margin == _margin_by_hand(Z, y, W, 0, weights)
    assert margin * 2**WEIGHT_BITS == np.rint(margin * 2**WEIGHT_BITS)


def test_margin_from_dask_blocks_is_the_same():
    da = pytest.importorskip("dask.array")
    X, y = _design(k=3)
    W = np.random.default_rng(1).normal(size=(3, X.shape[1] + 1))
    from dpsk._data._dask import DaskDesignRows

    expected = training_margin(design_matrix(X, 1.0, True), y, W, np.arange(3), 1)
    Z = DaskDesignRows(da.from_array(X, chunks=(70, X.shape[1])), 1.0, True)
    assert training_margin(Z, da.from_array(y, chunks=70), W, np.arange(3), 1) == expected


def test_margin_sensitivity_on_neighbours():
    """Replacing one row (features, label and weight) moves the margin by at most 2."""
    rng = np.random.default_rng(0)
    classes = np.arange(3)
    worst = 0.0
    for trial in range(300):
        X, y = _design(n=40, seed=trial)
        W = rng.normal(size=(3, X.shape[1] + 1))
        weights = rng.uniform(size=40) if trial % 2 else None
        X2, y2 = X.copy(), y.copy()
        i = rng.integers(40)
        X2[i] = rng.normal(size=X.shape[1]) * rng.choice([0.1, 10.0])
        y2[i] = rng.integers(3)
        weights2 = None
        if weights is not None:
            weights2 = weights.copy()
            weights2[i] = rng.uniform()
        constant = int(rng.integers(3))
        a = training_margin(design_matrix(X, 1.0, True), y, W, classes, constant, weights)
        b = training_margin(design_matrix(X2, 1.0, True), y2, W, classes, constant, weights2)
        worst = max(worst, abs(a - b))
    assert 1.0 < worst <= check_module.CHECK_SENSITIVITY


# -- the estimators ------------------------------------------------------------------------


def _noise_labels(n=2000, seed=0, shares=(0.7, 0.3)):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 20)) / 5
    y = rng.choice(len(shares), size=n, p=shares)
    return X, y


@pytest.mark.parametrize("params", [dict(), dict(delta=1e-6), dict(perturbation="output"),
                                    dict(perturbation="gradient", delta=1e-6)])
def test_labels_without_signal_give_the_prior_model(params):
    """Labels independent of the rows at a small budget: the prior model wins the check."""
    X, y = _noise_labels()
    wins = 0
    for seed in range(6):
        acc = BudgetAccountant()
        clf = DPLogisticRegression(epsilon=0.2, classes=[0, 1], accountant=acc,
                                   random_state=seed, **params).fit(X, y)
        assert len(acc.spends) == 1 and acc.total()[0] == pytest.approx(0.2)
        if clf.prior_fallback_:
            wins += 1
            assert np.all(clf.coef_ == 0)
            assert np.all(clf.predict(X) == np.argmax(clf.class_prior_))
    assert wins >= 4


def test_the_prior_model_of_three_classes_predicts_the_noisy_majority():
    X, y = _noise_labels(n=4000, shares=(0.2, 0.5, 0.3))
    for multi_class in ("multinomial", "ovr"):
        fitted = [DPLogisticRegression(epsilon=0.3, classes=[0, 1, 2], multi_class=multi_class,
                                       random_state=seed).fit(X, y) for seed in range(4)]
        fell_back = [clf for clf in fitted if clf.prior_fallback_]
        assert fell_back
        for clf in fell_back:
            assert np.all(clf.predict(X) == np.argmax(clf.class_prior_))


def test_strong_signal_keeps_the_model():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 5)) / 3
    y = (X[:, 0] > 0).astype(int)
    for seed in range(4):
        clf = DPLogisticRegression(epsilon=0.5, classes=[0, 1], random_state=seed).fit(X, y)
        assert clf.prior_fallback_ is False
        assert np.mean(clf.predict(X) == y) > 0.85


def test_kernel_classifier_runs_the_check():
    X, y = _noise_labels(n=600)
    clf = DPKernelClassifier(epsilon=0.2, n_components=16, classes=[0, 1],
                             random_state=0).fit(X, y)
    assert clf.prior_fallback_ in (True, False)


def test_no_prior_no_check():
    X, y = _noise_labels(n=300)
    for params in (dict(class_prior=None), dict(class_prior=[0.5, 0.5]),
                   dict(fit_intercept=False)):
        clf = DPLogisticRegression(classes=[0, 1], random_state=0, **params).fit(X, y)
        assert clf.prior_fallback_ is None


def test_weighted_fits_run_the_check_on_their_weights():
    X, y = _noise_labels(n=1000)
    clf = DPLogisticRegression(epsilon=0.2, classes=[0, 1], class_weight={0: 1.0, 1: 2.0},
                               random_state=0).fit(X, y, sample_weight=np.full(1000, 0.5))
    assert clf.prior_fallback_ in (True, False)


def test_the_check_runs_at_its_share(monkeypatch):
    import dpsk.linear_model._base as base

    seen = []
    original = base.release_prior_check
    monkeypatch.setattr(base, "release_prior_check",
                        lambda margin, budget, rng: seen.append(budget)
                        or original(margin, budget, rng))
    X, y = _noise_labels(n=500)
    clf = DPLogisticRegression(epsilon=1.0, classes=[0, 1], random_state=0).fit(X, y)
    expected = clf._prior_budget(500, X.shape[1] + 1, clf._make_loss(2), 2, 1.0, 0.0)
    assert seen == [expected]
    assert expected.check_share == check_share(500, 1.0)
