"""The class prior (docs/privacy.rst, "The class prior"): noisy counts, their law, their
sensitivity, the budget split, and the models centred on the prior model.

* law tests of the count release (discrete Laplace and Gaussian on the grid), each
  with power against noise 10% too small, and a mutation test of the calibration;
* the histogram's sensitivity on neighbouring data sets (2 in L1, sqrt(2) in L2);
* the Gaussian split composes to at most the fit's Gaussian-DP parameter;
* the estimators: one ledger event, the model at the model's share, the prior model
  reached at large alpha for every model and mechanism, ``fit_intercept=False`` and
  ``class_prior=None`` unchanged, a declared prior refused for free when it does not fit.
"""

import math

import numpy as np
import pytest
from scipy import stats
from test_multinomial import check_normal_law

import dpsk.mechanisms._prior as prior_module
from dpsk import BudgetAccountant, DPHuberSVM, DPKernelClassifier, DPLogisticRegression
from dpsk.linear_model._base import class_counts
from dpsk.mechanisms._alpha import (
    floor_alpha,
    score_noise_sd,
    zero_signal_excess,
)
from dpsk.mechanisms._noise import analytic_gaussian_sigma
from dpsk.mechanisms._prior import (
    COUNT_GRID,
    PriorBudget,
    prior_budget,
    prior_logits,
    prior_share,
    release_class_counts,
    smoothed_prior,
)
from dpsk.mechanisms._random import NoiseSource

SMALLER = 0.9  # "noise 10% too small"
P_THRESHOLD = 1e-3
COUNTS = np.array([40, 7, 0, 13])


def _noise(budget, n_releases, seed):
    draws = [release_class_counts(COUNTS, budget, NoiseSource.seeded([seed, k])) - COUNTS
             for k in range(n_releases)]
    return np.concatenate(draws)


def _laplace_pmf(values, scale):
    a = math.exp(-1.0 / scale)
    return (1 - a) / (1 + a) * a ** np.abs(values)


def _laplace_p(sample, scale):
    """Chi-square goodness of fit of integer ``sample`` to discrete Laplace of ``scale``."""
    edges = np.arange(-12, 13)
    observed = np.array([np.sum(sample <= edges[0])]
                        + [np.sum(sample == v) for v in edges[1:-1]]
                        + [np.sum(sample >= edges[-1])])
    pmf = _laplace_pmf(edges[1:-1], scale)
    tail = (1.0 - pmf.sum()) / 2
    expected = len(sample) * np.concatenate([[tail], pmf, [tail]])
    return stats.chisquare(observed, expected).pvalue


def check_laplace_counts(sample, epsilon):
    scale = 2.0 / epsilon
    assert np.all(sample == np.rint(sample)), "pure counts stay integers"
    p_right = _laplace_p(sample, scale)
    assert p_right > P_THRESHOLD, f"calibrated law rejected: p={p_right:.2e}"
    p_small = _laplace_p(sample, SMALLER * scale)
    assert p_small < P_THRESHOLD, f"no power against 10% less noise: p={p_small:.2e}"


def test_pure_counts_law_and_power():
    check_laplace_counts(_noise(PriorBudget(0.1, 0.9, count_epsilon=1.0), 1500, 1), 1.0)


def test_pure_counts_mutation_is_caught(monkeypatch):
    original = prior_module.discrete_laplace
    monkeypatch.setattr(prior_module, "discrete_laplace",
                        lambda scale, rng: original(scale * SMALLER, rng))
    with pytest.raises(AssertionError, match="calibrated law rejected"):
        check_laplace_counts(_noise(PriorBudget(0.1, 0.9, count_epsilon=1.0), 1500, 1), 1.0)


def check_gaussian_counts(sample, sigma):
    assert np.all(sample / COUNT_GRID == np.rint(sample / COUNT_GRID)), "on the grid"
    check_normal_law(sample, sigma)  # KS, the chi-square scale test and its power


def test_gaussian_counts_law_and_power():
    budget = prior_budget(0.05, 1.0, 1e-6, gaussian=True)
    check_gaussian_counts(_noise(budget, 600, 2), budget.count_sigma)


def test_gaussian_counts_mutation_is_caught(monkeypatch):
    budget = prior_budget(0.05, 1.0, 1e-6, gaussian=True)
    original = prior_module.gaussian_noise
    monkeypatch.setattr(prior_module, "gaussian_noise",
                        lambda d, sigma, rng: original(d, sigma * SMALLER, rng))
    with pytest.raises(AssertionError, match="calibrated law rejected"):
        check_gaussian_counts(_noise(budget, 600, 2), budget.count_sigma)


@pytest.mark.parametrize("share", [0.005, 0.05, 0.25])
@pytest.mark.parametrize("epsilon,delta", [(0.1, 1e-6), (1.0, 1e-5), (4.0, 1e-8)])
def test_gaussian_split_composes_within_the_fits_parameter(share, epsilon, delta):
    budget = prior_budget(share, epsilon, delta, gaussian=True)
    mu = 1.0 / analytic_gaussian_sigma(epsilon, delta, 1.0)
    mu_model = 1.0 / analytic_gaussian_sigma(budget.model_epsilon, delta, 1.0)
    mu_counts = math.sqrt(2.0) / budget.count_sigma
    # Two Gaussian mechanisms compose to one of sqrt(mu_c^2 + mu_m^2): at most mu, and
    # nearly all of it (the margin is a relative 1e-6).
    total = math.hypot(mu_counts, mu_model)
    assert total <= mu
    assert total >= mu * (1 - 1e-5)


def test_pure_split_adds_up():
    budget = prior_budget(0.1, 2.0, 0.0, gaussian=False)
    assert budget.count_epsilon + budget.model_epsilon == pytest.approx(2.0, rel=1e-15)
    with pytest.raises(ValueError):
        prior_budget(1.0, 2.0, 0.0, gaussian=False)


def test_histogram_sensitivity_on_neighbours():
    rng = np.random.default_rng(0)
    classes = np.array([0, 1, 2, 3])
    for _ in range(200):
        y = rng.integers(0, 3, size=30)  # class 3 absent from D
        y2 = y.copy()
        y2[rng.integers(30)] = rng.integers(0, 4)  # replace one row's label
        diff = class_counts(y, classes) - class_counts(y2, classes)
        assert np.abs(diff).sum() <= 2 and np.linalg.norm(diff) <= math.sqrt(2) + 1e-12


def test_share_is_public_and_in_range():
    small = prior_share(2.0, 700, 2, 0.1, 0.0, gaussian=False)
    large = prior_share(0.1, 36_000, 2, 1.0, 0.0, gaussian=False)
    lo, hi = prior_module.PRIOR_SHARE_RANGE
    assert lo <= large < small <= hi


def test_smoothed_prior_and_logits():
    prior = smoothed_prior([-5.0, 9.0, 19.0])
    np.testing.assert_allclose(prior, [1 / 31, 10 / 31, 20 / 31])
    assert prior_logits([0.25, 0.75], 1) == pytest.approx([math.log(3)])
    np.testing.assert_allclose(prior_logits(prior, 3).sum(), 0.0, atol=1e-12)
    np.testing.assert_allclose(prior_logits(prior, 1), np.log(prior / (1 - prior)))


# -- the estimators ------------------------------------------------------------------------


def _data(k=2, n=400, seed=0, shares=None):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3)) / 3
    shares = shares or [0.7, 0.3][:k] if k == 2 else shares or [0.6, 0.25, 0.15]
    y = rng.choice(k, size=n, p=shares)
    return X, y


@pytest.mark.parametrize("params", [
    dict(), dict(delta=1e-6), dict(perturbation="output"),
    dict(perturbation="output", delta=1e-6), dict(perturbation="gradient", delta=1e-6),
    dict(multi_class="ovr"), dict(multi_class="ovr", perturbation="output", delta=1e-6),
])
@pytest.mark.parametrize("k", [2, 3])
def test_strong_regularisation_gives_the_prior_model(params, k):
    """At a huge alpha every model is the prior model: it predicts the noisy majority."""
    X, y = _data(k)
    acc = BudgetAccountant()
    clf = DPLogisticRegression(epsilon=5.0, alpha=1e3, classes=list(range(k)), accountant=acc,
                               random_state=3, **params).fit(X, y)
    assert len(acc.spends) == 1 and acc.total()[0] == pytest.approx(5.0)
    prior = clf.class_prior_
    assert prior.shape == (k,) and prior.sum() == pytest.approx(1.0)
    scores = clf.decision_function(X)
    expected = prior_logits(prior, k if k > 2 and params.get("multi_class") != "ovr" else 1)
    if scores.ndim == 1:
        np.testing.assert_allclose(scores, expected[0], atol=0.05)
    else:
        np.testing.assert_allclose(scores - scores.mean(axis=1, keepdims=True)
                                   if params.get("multi_class") != "ovr" else scores,
                                   np.broadcast_to(expected, scores.shape), atol=0.05)
    assert np.all(clf.predict(X) == clf.classes_[np.argmax(prior)])


def test_no_intercept_ignores_the_prior_bit_for_bit():
    X, y = _data()
    a = DPLogisticRegression(fit_intercept=False, classes=[0, 1], random_state=1).fit(X, y)
    b = DPLogisticRegression(fit_intercept=False, classes=[0, 1], random_state=1,
                             class_prior=None).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert a.class_prior_ is None and a.privacy_event_ == b.privacy_event_


def test_declared_prior_costs_nothing_and_bad_ones_are_refused_for_free():
    X, y = _data(3)
    acc = BudgetAccountant()
    clf = DPLogisticRegression(classes=[0, 1, 2], class_prior=[2, 1, 1], accountant=acc,
                               random_state=0).fit(X, y)
    np.testing.assert_allclose(clf.class_prior_, [0.5, 0.25, 0.25])
    assert clf.privacy_event_.mechanism == "gamma-norm"  # no counts released
    for bad in ([0.5, 0.5], [1.0, 0.0, 1.0], [1.0, np.nan, 1.0]):
        with pytest.raises(ValueError, match="class_prior"):
            DPLogisticRegression(classes=[0, 1, 2], class_prior=bad, accountant=acc).fit(X, y)
    assert len(acc.spends) == 1


@pytest.mark.parametrize("make", [
    lambda: DPHuberSVM(epsilon=5.0, alpha=1e3, classes=[0, 1], random_state=0),
    lambda: DPKernelClassifier(epsilon=5.0, alpha=1e3, n_components=8, classes=[0, 1],
                               random_state=0),
])
def test_other_linear_shells_take_the_prior(make):
    X, y = _data()
    clf = make().fit(X, y)
    assert clf.class_prior_.shape == (2,)
    assert np.all(clf.predict(X) == np.argmax(clf.class_prior_))


def test_model_runs_at_the_models_share(monkeypatch):
    import dpsk.linear_model._base as base

    seen = []
    original = base.private_erm

    def spy(*args, **kwargs):
        seen.append(args[3])
        return original(*args, **kwargs)

    monkeypatch.setattr(base, "private_erm", spy)
    X, y = _data()
    clf = DPLogisticRegression(epsilon=1.0, classes=[0, 1], random_state=0).fit(X, y)
    budget = clf._prior_budget(X.shape[0], 4, clf._make_loss(2), 2, 1.0, 0.0)
    assert seen == [budget.model_epsilon] and 0 < budget.share < 0.3
    assert clf.alpha_ == clf._rule_alpha(X.shape[0], 4, clf._make_loss(2), 2,
                                         budget.model_epsilon, 0.0)


# -- the zero-signal floor's pieces (docs/choosing_alpha.rst) ------------------------------


def test_zero_signal_excess_is_exact_for_one_binary_score():
    from scipy.special import ndtr

    assert zero_signal_excess([0.7, 0.3], 1.0, 1, 1) == pytest.approx(
        0.4 * ndtr(-math.log(7 / 3)))
    assert zero_signal_excess([0.7, 0.3], 0.0, 1, 1) == 0.0
    values = [zero_signal_excess([0.5, 0.3, 0.2], sd, 3, 1) for sd in (0.1, 0.5, 2.0)]
    assert values == sorted(values)


def test_floor_alpha_meets_its_excess():
    from dpsk._optimize._losses import LogisticLoss

    loss = LogisticLoss()
    alpha = floor_alpha([0.7, 0.3], 4000, 20, 0.5, loss=loss, perturbation="objective")
    sd = score_noise_sd(alpha, 4000, 20, 0.5, loss=loss, perturbation="objective")
    assert zero_signal_excess([0.7, 0.3], sd, 1, 1) <= 0.005
    below = score_noise_sd(alpha / 1.2, 4000, 20, 0.5, loss=loss, perturbation="objective")
    assert zero_signal_excess([0.7, 0.3], below, 1, 1) > 0.005
