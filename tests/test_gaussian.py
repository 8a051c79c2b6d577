"""The Gaussian mechanism's calibration (dpsk/_mechanisms.py)."""

import math

import numpy as np
import pytest
from scipy import integrate, stats

from dpsk._mechanisms import (
    analytic_gaussian_sigma,
    classical_gaussian_sigma,
    gaussian_delta,
    gaussian_noise,
)
from dpsk._random import NoiseSource


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
