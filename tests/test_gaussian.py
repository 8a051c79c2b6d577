"""The Gaussian mechanism's calibration (dpsk/mechanisms/_noise.py)."""

import math

import numpy as np
import pytest
from scipy import integrate, stats

from dpsk.mechanisms._noise import (
    analytic_gaussian_sigma,
    classical_gaussian_sigma,
    gaussian_delta,
    gaussian_noise,
)
from dpsk.mechanisms._random import NoiseSource


def _delta_by_privacy_loss(sigma, epsilon, sensitivity):
    """delta(epsilon) from the privacy-loss random variable, written independently.

    For a Gaussian shift by ``s`` the privacy loss L is N(mu, 2 mu) with
    ``mu = s^2 / (2 sigma^2)``; the tight delta is E[(1 - exp(epsilon - L))_+].
    Computed by numerical integration, not by the closed form under test.
    """
    mu = sensitivity**2 / (2 * sigma**2)
    law = stats.norm(loc=mu, scale=math.sqrt(2 * mu))
    value, _ = integrate.quad(
        lambda loss: (1 - math.exp(epsilon - loss)) * law.pdf(loss),
        epsilon, mu + 40 * math.sqrt(2 * mu), epsabs=1e-14, limit=200)
    return value


@pytest.mark.parametrize("epsilon, sigma", [(0.1, 20.0), (1.0, 3.0), (2.0, 1.5), (5.0, 0.4)])
def test_delta_formula_matches_the_privacy_loss_integral(epsilon, sigma):
    expected = _delta_by_privacy_loss(sigma, epsilon, 1.0)
    assert gaussian_delta(sigma, epsilon, 1.0) == pytest.approx(expected, rel=1e-6, abs=1e-15)


@pytest.mark.parametrize("epsilon", [0.05, 0.1, 0.5, 1.0, 2.0, 8.0])
@pytest.mark.parametrize("delta", [1e-9, 1e-6, 1e-3])
@pytest.mark.parametrize("sensitivity", [1e-3, 1.0, 50.0])
def test_analytic_sigma_is_the_smallest_valid_scale(epsilon, delta, sensitivity):
    sigma = analytic_gaussian_sigma(epsilon, delta, sensitivity)
    assert gaussian_delta(sigma, epsilon, sensitivity) <= delta
    # 0.1% less noise already breaks the guarantee: the calibration is tight.
    assert gaussian_delta(sigma * 0.999, epsilon, sensitivity) > delta
    # Noise 10% too small is far outside (the ten-percent rule of the test plan).
    assert gaussian_delta(sigma * 0.9, epsilon, sensitivity) > 1.2 * delta
    # Scale equivariance: sigma is proportional to the sensitivity.
    assert sigma / sensitivity == pytest.approx(analytic_gaussian_sigma(epsilon, delta, 1.0),
                                                rel=1e-9)
    if epsilon < 1:
        assert sigma < classical_gaussian_sigma(epsilon, delta, sensitivity)


def test_known_value():
    # A value quoted in Balle and Wang (2018)'s setting: epsilon 1, delta 1e-5.
    assert analytic_gaussian_sigma(1.0, 1e-5, 1.0) == pytest.approx(3.7306, rel=1e-4)


@pytest.mark.parametrize("bad", [
    dict(epsilon=0.0, delta=1e-5, sensitivity=1.0),
    dict(epsilon=1.0, delta=0.0, sensitivity=1.0),
    dict(epsilon=1.0, delta=1.0, sensitivity=1.0),
    dict(epsilon=1.0, delta=1e-5, sensitivity=0.0),
    dict(epsilon=np.inf, delta=1e-5, sensitivity=1.0),
])
def test_bad_arguments(bad):
    with pytest.raises(ValueError):
        analytic_gaussian_sigma(**bad)


def test_gaussian_noise_law_and_power():
    sigma = 2.5
    draws = np.concatenate([gaussian_noise(5, sigma, NoiseSource.seeded(k)) for k in range(800)])
    assert stats.kstest(draws, stats.norm(scale=sigma).cdf).pvalue > 1e-3
    # The same test rejects noise 10% too small.
    assert stats.kstest(draws, stats.norm(scale=0.9 * sigma).cdf).pvalue < 1e-3
    with pytest.raises(TypeError, match="NoiseSource"):
        gaussian_noise(3, 1.0, np.random.default_rng(0))


# -- Gaussian objective perturbation: the bound against the exact profile ----------------
from dpsk._optimize._binary import minimize_regularized_loss  # noqa: E402
from dpsk._optimize._losses import HuberLoss, LogisticLoss  # noqa: E402
from dpsk.mechanisms._erm import SOLVER_EPSILON_SHARE, private_erm  # noqa: E402
from dpsk.mechanisms._noise import (  # noqa: E402
    gaussian_objective_calibration,
    gaussian_objective_delta,
    release_grid,
    rounding_radius,
)


def _exact_objective_profile(loss, x, y, lam, sigma, epsilon):
    """delta(epsilon) of 1-d Gaussian objective perturbation, computed exactly.

    In one dimension the release ``w`` determines the noise,
    ``b_D(w) = -sum_i l'(y_i w x_i) y_i x_i - n lam w``, so its density is
    ``phi_sigma(b_D(w)) |b_D'(w)|``; the hockey-stick divergence is integrated
    on a fine grid, in both directions, for the pair that differs in the last
    row (``x``, ``y`` hold both: the last two entries are the two versions).
    """
    n = len(x) - 1
    rows = [(x[:-1], y[:-1]), (np.append(x[:-2], x[-1]), np.append(y[:-2], y[-1]))]
    width = (14 * sigma + n) / (n * lam)
    w = np.linspace(-width, width, 400_001)
    densities = []
    for xs, ys in rows:
        m = ys * np.outer(w, xs)
        b = -(loss.derivative(m) * ys * xs).sum(axis=1) - n * lam * w
        jac = (loss.second_derivative(m) * xs**2).sum(axis=1) + n * lam
        densities.append(stats.norm.pdf(b, scale=sigma) * jac)
    p, q = densities
    step = w[1] - w[0]
    forward = np.sum(np.maximum(p - np.exp(epsilon) * q, 0)) * step
    backward = np.sum(np.maximum(q - np.exp(epsilon) * p, 0)) * step
    return max(forward, backward), np.sum(p) * step


@pytest.mark.parametrize("loss", [LogisticLoss(), HuberLoss(0.5)], ids=repr)
@pytest.mark.parametrize("sigma, epsilon", [(1.5, 0.5), (2.0, 1.0), (3.0, 0.3), (1.0, 2.0)])
def test_objective_bound_dominates_the_exact_profile(loss, sigma, epsilon):
    # Worst case of the derivation: one row flips its label at the largest norm.
    x = np.array([0.9, -0.4, 0.7, 1.0, 1.0])
    y = np.array([1.0, -1.0, 1.0, 1.0, -1.0])
    lam = 0.2
    exact, mass = _exact_objective_profile(loss, x, y, lam, sigma, epsilon)
    assert mass == pytest.approx(1.0, abs=1e-3)  # the grid covers the density
    jacobian = math.log1p(loss.curvature / ((len(x) - 1) * lam))
    bound = gaussian_objective_delta(sigma, epsilon, jacobian)
    # The integral's own error is ~1e-4 of the mass (Huber's l'' jumps).
    assert exact <= bound + 1e-4


@pytest.mark.parametrize("epsilon, delta", [(0.1, 1e-6), (0.5, 1e-5), (1.0, 1e-6), (4.0, 1e-8)])
@pytest.mark.parametrize("n, alpha", [(1000, 1e-3), (50, 1e-3)])  # second: extra regulariser
def test_objective_calibration_is_valid_and_tight(epsilon, delta, n, alpha):
    cal = gaussian_objective_calibration(epsilon, delta, n, alpha, 0.25)
    lam = alpha + cal.extra_alpha
    assert cal.epsilon_jacobian == pytest.approx(math.log1p(0.25 / (n * lam)), rel=1e-12)
    assert cal.epsilon_jacobian <= epsilon / 2 * (1 + 1e-9)
    assert gaussian_objective_delta(cal.sigma, epsilon, cal.epsilon_jacobian) <= delta
    # Noise 10% too small breaks the bound.
    assert gaussian_objective_delta(0.9 * cal.sigma, epsilon, cal.epsilon_jacobian) > delta


def test_objective_delta_decreases_in_sigma():
    sigmas = np.geomspace(0.1, 100, 60)
    deltas = [gaussian_objective_delta(s, 1.0, 0.01) for s in sigmas]
    assert all(a >= b for a, b in zip(deltas, deltas[1:]))


# -- end to end: the noise each Gaussian path adds ----------------------------------------
def _rows(n, d, seed):
    rng = np.random.default_rng(seed)
    Z = rng.standard_normal((n, d))
    Z /= np.maximum(np.linalg.norm(Z, axis=1, keepdims=True), 1.0)
    return Z, np.where(rng.random(n) < 0.5, -1.0, 1.0)


def _check_normal_scale(sample, sigma):
    """The sample is N(0, sigma^2) and the test tells noise 10% too small apart.

    KS checks the shape; the scale is checked by the exact chi-square law of
    ``sum x^2 / sigma^2`` (mean known), which is far more powerful for a scale
    error than KS. Two-sided p-values; each test fails a correct sampler with
    probability 1e-3 for a fresh seed (the seeds here are fixed).
    """
    def scale_p(s):
        t = np.sum(sample**2) / s**2
        tail = stats.chi2(df=sample.size)
        return 2 * min(tail.cdf(t), tail.sf(t))

    assert stats.kstest(sample, stats.norm(scale=sigma).cdf).pvalue > 1e-3
    assert scale_p(sigma) > 1e-3
    assert scale_p(0.9 * sigma) < 1e-6


def _rounding(n, lam, d):
    return rounding_radius(release_grid(2.0 / (n * lam), d), d)


@pytest.mark.parametrize("n_problems", [1, 3])
def test_gaussian_output_noise_law(n_problems):
    # One release of n_problems models: each gets N(0, sigma^2) with sigma for the
    # joint sensitivity sqrt(n_problems) * Delta. Noise 10% too small is rejected.
    loss, n, d, lam, eps, delta, tol = LogisticLoss(), 40, 3, 0.05, 0.7, 1e-5, 1e-10
    Z, y = _rows(n, d, 1)
    exact = minimize_regularized_loss(loss, Z, y, lam, tol=1e-13).w
    sens = 2 / (n * lam) + 2 * tol / lam + 2 * _rounding(n, lam, d)
    sigma = analytic_gaussian_sigma(eps, delta, math.sqrt(n_problems) * sens)
    noise = np.concatenate([
        private_erm(Z, y, loss, eps, lam, "output", NoiseSource.seeded(k), tol=tol,
                    delta=delta, n_problems=n_problems) - exact
        for k in range(700)])
    _check_normal_scale(noise, sigma)


@pytest.mark.parametrize("loss", [LogisticLoss(), HuberLoss(0.5)], ids=repr)
def test_gaussian_objective_noise_law(loss):
    # The noise b of the objective is recovered from the release through the
    # first-order condition; its coordinates are N(0, sigma^2).
    n, d, lam, eps, delta = 40, 3, 0.05, 0.8, 1e-5
    Z, y = _rows(n, d, 2)
    cal = gaussian_objective_calibration((1 - SOLVER_EPSILON_SHARE) * eps, delta, n, lam,
                                         loss.curvature)
    strong = lam + cal.extra_alpha
    recovered = []
    for k in range(700):
        w = private_erm(Z, y, loss, eps, lam, "objective", NoiseSource.seeded(k), delta=delta)
        grad = Z.T @ (y * loss.derivative(y * (Z @ w))) / n + strong * w
        recovered.append(-n * grad)  # the residual noise moves this by ~1e-6 sigma
    _check_normal_scale(np.concatenate(recovered), cal.sigma)


# -- estimators: the event and the ledger -------------------------------------------------
def test_gaussian_estimators_record_their_event():
    from dpsk import (
        ApproxDPEvent,
        BudgetAccountant,
        DPLogisticRegression,
        GaussianEvent,
    )

    Z, y = _rows(200, 4, 3)
    acc = BudgetAccountant(epsilon=10, delta=1e-4)
    out = DPLogisticRegression(epsilon=1.0, delta=1e-6, perturbation="output",
                               classes=[-1, 1], accountant=acc).fit(Z, y)
    obj = DPLogisticRegression(epsilon=1.0, delta=1e-6, classes=[-1, 1], accountant=acc).fit(Z, y)
    assert isinstance(out.privacy_event_, GaussianEvent)
    assert out.privacy_event_.epsilon == 1.0 and out.privacy_spent_ == (1.0, 1e-6)
    assert out.privacy_event_.noise_multiplier == pytest.approx(
        analytic_gaussian_sigma(1.0, 1e-6, 1.0))
    assert isinstance(obj.privacy_event_, ApproxDPEvent)
    assert acc.total() == (2.0, 2e-6)
    with pytest.raises(ValueError, match="delta"):
        DPLogisticRegression(delta=1.0).fit(Z, y)


def test_gaussian_output_beats_pure_output_in_high_dimension():
    # The point of delta > 0: the noise norm grows like sqrt(d), not d.
    from dpsk import DPLogisticRegression

    rng = np.random.default_rng(0)
    d = 200
    X = rng.standard_normal((5000, d)) / np.sqrt(d)
    y = (X[:, 0] > 0).astype(int)
    kw = dict(epsilon=1.0, alpha=1e-2, perturbation="output", classes=[0, 1],
              fit_intercept=False)
    exact = minimize_regularized_loss(LogisticLoss(), X, np.where(y == 1, 1.0, -1.0), 1e-2,
                                      tol=1e-12).w
    pure = [np.linalg.norm(DPLogisticRegression(random_state=k, **kw).fit(X, y).coef_[0] - exact)
            for k in range(5)]
    gauss = [np.linalg.norm(DPLogisticRegression(random_state=k, delta=1e-6, **kw)
                            .fit(X, y).coef_[0] - exact) for k in range(5)]
    assert np.mean(gauss) < 0.5 * np.mean(pure)


def test_gradient_perturbation_needs_delta_and_records_a_gaussian_event():
    from dpsk import BudgetAccountant, DPLogisticRegression, GaussianEvent
    from dpsk.mechanisms._gradient import noisy_gd_schedule

    Z, y = _rows(300, 4, 5)
    acc = BudgetAccountant()
    with pytest.raises(ValueError, match="needs delta > 0"):
        DPLogisticRegression(perturbation="gradient", accountant=acc).fit(Z, y)
    assert acc.spends == []
    clf = DPLogisticRegression(perturbation="gradient", delta=1e-6, classes=[-1, 1],
                               accountant=acc, alpha=0.01).fit(Z, y)
    event = clf.privacy_event_
    assert isinstance(event, GaussianEvent) and event.epsilon == 1.0
    schedule = noisy_gd_schedule(300, 5, 0.01, LogisticLoss(), 1.0, 1e-6)
    assert event.noise_multiplier == pytest.approx(1 / schedule.mu, rel=1e-9)
    assert acc.total() == (1.0, 1e-6)
