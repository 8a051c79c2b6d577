"""Noisy full-batch gradient descent (dpsk/mechanisms/_gradient.py).

Calibration, noise law, sensitivity.
"""

import inspect
import math
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy import stats

import dpsk.mechanisms._gradient as gradient_module
from dpsk._optimize._binary import minimize_regularized_loss
from dpsk._optimize._losses import HuberLoss, LogisticLoss
from dpsk.mechanisms._gradient import MAX_STEPS, noisy_gd_schedule, noisy_gradient_descent
from dpsk.mechanisms._noise import (
    analytic_gaussian_sigma,
    gaussian_delta,
    gaussian_noise,
    release_grid,
)
from dpsk.mechanisms._random import NoiseSource

LOSSES = [LogisticLoss(), HuberLoss(0.5)]


def _ball_rows(rng, n, d):
    """Rows of norm <= 1: uniform directions, radii in [0, 1] with mass near 1."""
    x = rng.standard_normal((n, d))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x * rng.uniform(0.5, 1.0, size=(n, 1)) ** 0.5


def _problem(seed, n=40, d=4):
    rng = np.random.default_rng(seed)
    Z = _ball_rows(rng, n, d)
    y = np.where(Z @ rng.standard_normal(d) + 0.3 * rng.standard_normal(n) > 0, 1.0, -1.0)
    return Z, y


def _gradient_by_rows(Z, y, loss, w):
    """The average loss gradient summed row by row, written apart from the module."""
    total = np.zeros(Z.shape[1])
    for z, label in zip(Z, y):
        total += float(loss.derivative(np.array([label * (z @ w)]))[0]) * label * z
    return total / len(y)


# --- the schedule: calibration ---------------------------------------------------------

@pytest.mark.parametrize("epsilon", [0.1, 1.0, 5.0])
@pytest.mark.parametrize("delta", [1e-6, 1e-3])
@pytest.mark.parametrize("n_problems", [1, 4])
@pytest.mark.parametrize("loss", LOSSES, ids=["logistic", "huber"])
def test_schedule_meets_delta_and_is_tight(epsilon, delta, n_problems, loss):
    n, d, alpha = 500, 7, 0.01
    plan = noisy_gd_schedule(n, d, alpha, loss, epsilon, delta, n_problems=n_problems)
    steps = n_problems * plan.n_steps
    assert 1 <= plan.n_steps <= MAX_STEPS
    assert plan.step_size == 1.0 / (loss.curvature + alpha)
    grid = release_grid(2.0 * loss.lipschitz / n, d)
    assert plan.grid == grid
    assert plan.sensitivity == 2.0 * loss.lipschitz / n + math.sqrt(d) * grid
    # mu-GDP is (epsilon, delta)-DP iff the Gaussian profile at noise 1/mu is <= delta.
    assert gaussian_delta(1.0 / plan.mu, epsilon, 1.0) <= delta
    # The steps' GDP parameters add in quadrature to mu.
    assert math.sqrt(steps) * plan.sensitivity / plan.sigma == pytest.approx(plan.mu, rel=1e-12)
    # Composed Gaussians with sensitivity s are one Gaussian of sensitivity sqrt(steps) s.
    assert gaussian_delta(plan.sigma, epsilon, math.sqrt(steps) * plan.sensitivity) <= delta
    # Ten percent less noise per step breaks the guarantee.
    too_little = 0.9 * plan.sigma
    mu_broken = math.sqrt(steps) * plan.sensitivity / too_little
    assert gaussian_delta(1.0 / mu_broken, epsilon, 1.0) > delta
    assert gaussian_delta(too_little, epsilon, math.sqrt(steps) * plan.sensitivity) > delta


def test_schedule_mu_is_the_analytic_calibration_at_sensitivity_one():
    plan = noisy_gd_schedule(1000, 3, 0.1, LogisticLoss(), 1.0, 1e-5)
    assert plan.mu == 1.0 / analytic_gaussian_sigma(1.0, 1e-5, 1.0)
    assert plan.mu == pytest.approx(1.0 / 3.7306, rel=1e-4)


def test_schedule_is_a_rule_of_public_quantities():
    loss = LogisticLoss()
    plan = noisy_gd_schedule(1000, 10, 0.05, loss, 1.0, 1e-6)
    assert plan == noisy_gd_schedule(1000, 10, 0.05, loss, 1.0, 1e-6)
    with pytest.raises(AttributeError):
        plan.sigma = 1.0  # frozen
    # More regularisation, faster contraction: fewer steps.
    assert noisy_gd_schedule(1000, 10, 0.5, loss, 1.0, 1e-6).n_steps < plan.n_steps
    # Tiny alpha: the cap binds.
    assert noisy_gd_schedule(10**6, 10, 1e-6, loss, 1.0, 1e-6).n_steps == MAX_STEPS


def test_step_rule_minimises_its_bound():
    loss, n, d, alpha, eps, delta = LogisticLoss(), 2000, 20, 0.01, 1.0, 1e-6
    plan = noisy_gd_schedule(n, d, alpha, loss, eps, delta)
    L = loss.curvature + alpha
    q = 1 - alpha / L
    R = min(1 / alpha, math.sqrt(2 * math.log(2) / alpha))

    def bound(T):
        sigma = math.sqrt(T) * plan.sensitivity / plan.mu
        noise = sum(q ** (2 * j) for j in range(T)) * (sigma / L) ** 2 * d
        return q ** (2 * T) * R**2 + noise

    best = bound(plan.n_steps)
    for T in [1, plan.n_steps // 2, plan.n_steps - 1, plan.n_steps + 1, 2 * plan.n_steps]:
        assert bound(T) >= best * (1 - 1e-9)


@pytest.mark.parametrize("bad", [
    dict(epsilon=0.0), dict(delta=0.0), dict(delta=1.0), dict(alpha=0.0), dict(n_problems=0),
])
def test_schedule_refuses_bad_parameters(bad):
    args = dict(n=100, d=3, alpha=0.1, loss=LogisticLoss(), epsilon=1.0, delta=1e-6)
    n_problems = bad.pop("n_problems", 1)
    args.update(bad)
    with pytest.raises(ValueError):
        noisy_gd_schedule(**args, n_problems=n_problems)


# --- the noise the mechanism draws -------------------------------------------------------

def _record_draws(monkeypatch, scale=1.0):
    calls = []

    def recording(d, sigma, rng):
        calls.append((d, sigma))
        return gaussian_noise(d, scale * sigma, rng)

    monkeypatch.setattr(gradient_module, "gaussian_noise", recording)
    return calls


@pytest.mark.parametrize("n_problems", [1, 3])
def test_mechanism_draws_the_calibrated_noise(monkeypatch, n_problems):
    Z, y = _problem(0)
    loss, alpha, eps, delta = LogisticLoss(), 0.02, 1.0, 1e-6
    calls = _record_draws(monkeypatch)
    noisy_gradient_descent(Z, y, loss, eps, delta, alpha, NoiseSource.seeded(0),
                           n_problems=n_problems)
    plan = noisy_gd_schedule(*Z.shape, alpha, loss, eps, delta, n_problems=n_problems)
    # sigma from the test's own formula: K T composed steps of sensitivity s at mu.
    mu = 1.0 / analytic_gaussian_sigma(eps, delta, 1.0)
    s = 2.0 / len(y) + math.sqrt(Z.shape[1]) * release_grid(2.0 / len(y), Z.shape[1])
    expected_sigma = math.sqrt(n_problems * plan.n_steps) * s / mu
    assert len(calls) == plan.n_steps
    assert all(d == Z.shape[1] for d, _ in calls)
    assert all(sigma == pytest.approx(expected_sigma, rel=1e-12) for _, sigma in calls)


def test_one_vs_rest_calibrates_k_times_t_steps():
    loss, n, d, alpha, eps, delta = LogisticLoss(), 300, 5, 0.01, 1.0, 1e-6
    single = noisy_gd_schedule(n, d, alpha, loss, eps, delta)
    joint = noisy_gd_schedule(n, d, alpha, loss, eps, delta, n_problems=5)
    assert joint.mu == single.mu  # one joint budget, not split
    assert joint.sigma == pytest.approx(
        math.sqrt(5 * joint.n_steps) * joint.sensitivity / joint.mu, rel=1e-12)
    # Each step is noisier than in a single run of the same length.
    assert joint.sigma > math.sqrt(joint.n_steps) * single.sensitivity / single.mu
    for function in (noisy_gd_schedule, noisy_gradient_descent):
        assert inspect.signature(function).parameters["n_problems"].default == 1


def _trajectory(Z, y, loss, eps, delta, alpha, seed):
    record = []
    gradient_module._run(Z, y, loss, eps, delta, alpha, NoiseSource.seeded(seed), 1,
                         record=record)
    return record


def _recovered_noise(Z, y, loss, eps, delta, alpha, seeds):
    """Each step's noise, as the released gradient minus the exact one at that iterate."""
    noise = []
    for seed in seeds:
        for w, released in _trajectory(Z, y, loss, eps, delta, alpha, seed):
            exact = (loss.derivative(y * (Z @ w)) * y) @ Z / len(y)
            noise.append(released - exact)
    return np.concatenate(noise)


# A problem where the schedule takes 16 steps of 8 coordinates, so 100 runs give
# 12800 draws: enough for the KS test to tell sigma from 0.9 sigma.
NOISE_CASE = dict(eps=1.0, delta=1e-6, alpha=0.01)


def test_end_to_end_noise_law():
    Z, y = _problem(1, n=200, d=8)
    loss = LogisticLoss()
    plan = noisy_gd_schedule(*Z.shape, NOISE_CASE["alpha"], loss, NOISE_CASE["eps"],
                             NOISE_CASE["delta"])
    draws = _recovered_noise(Z, y, loss, **NOISE_CASE, seeds=range(100))
    assert draws.size == 100 * plan.n_steps * Z.shape[1] >= 10000
    # Fixed seeds; at level 1e-3 a correct sampler fails one run in a thousand.
    assert stats.kstest(draws, stats.norm(scale=plan.sigma).cdf).pvalue > 1e-3
    assert stats.kstest(draws, stats.norm(scale=0.9 * plan.sigma).cdf).pvalue < 1e-3


def test_end_to_end_noise_law_catches_ten_percent_too_little(monkeypatch):
    Z, y = _problem(1, n=200, d=8)
    loss = LogisticLoss()
    plan = noisy_gd_schedule(*Z.shape, NOISE_CASE["alpha"], loss, NOISE_CASE["eps"],
                             NOISE_CASE["delta"])
    _record_draws(monkeypatch, scale=0.9)
    draws = _recovered_noise(Z, y, loss, **NOISE_CASE, seeds=range(100))
    assert stats.kstest(draws, stats.norm(scale=plan.sigma).cdf).pvalue < 1e-3


def test_trajectory_steps_are_post_processing():
    Z, y = _problem(2)
    loss, alpha = HuberLoss(0.5), 0.05
    record = _trajectory(Z, y, loss, 1.0, 1e-6, alpha, seed=3)
    plan = noisy_gd_schedule(*Z.shape, alpha, loss, 1.0, 1e-6)
    assert np.all(record[0][0] == 0.0)
    for (w, g), (w_next, _) in zip(record, record[1:]):
        np.testing.assert_array_equal(w_next, w - plan.step_size * (g + alpha * w))
        # Every release is a grid point.
        np.testing.assert_array_equal(g / plan.grid, np.rint(g / plan.grid))


# --- sensitivity -----------------------------------------------------------------------

@pytest.mark.parametrize("loss", LOSSES, ids=["logistic", "huber"])
def test_gradient_sensitivity_on_random_neighbours(loss):
    rng = np.random.default_rng(5)
    worst = 0.0
    for _ in range(300):
        n, d = int(rng.integers(2, 30)), int(rng.integers(1, 6))
        Z = _ball_rows(rng, n, d)
        y = rng.choice([-1.0, 1.0], size=n)
        Z2, y2 = Z.copy(), y.copy()
        i = int(rng.integers(n))
        Z2[i], y2[i] = _ball_rows(rng, 1, d)[0], rng.choice([-1.0, 1.0])
        w = rng.standard_normal(d) * rng.choice([0.1, 1.0, 10.0, 100.0])
        diff = np.linalg.norm(loss.mean_gradient(Z, y, w)
                              - loss.mean_gradient(Z2, y2, w))
        worst = max(worst, diff * n / (2 * loss.lipschitz))
    assert worst <= 1.0 + 1e-12


def _worst_neighbours(n, d, w, c):
    """Two rows at margin ``-c ||w||`` with opposite components orthogonal to ``w``."""
    u = w / np.linalg.norm(w)
    v = np.zeros_like(w)
    v[1] = 1.0
    v -= (v @ u) * u
    v /= np.linalg.norm(v)
    a = -c * u + math.sqrt(1 - c * c) * v
    b = -c * u - math.sqrt(1 - c * c) * v
    Z = np.tile(0.3 * u, (n, 1))
    y = np.ones(n)
    Z2 = Z.copy()
    Z[0], Z2[0] = a, b
    return Z, y, Z2, y.copy()


def test_gradient_sensitivity_is_attained():
    n, d = 10, 3
    w = np.array([1e4, 0.0, 0.0])
    # Logistic: both rows deep in the linear part, |l'| = sigmoid(10) > 0.9999,
    # nearly antipodal: the difference comes within 1% of 2/n.
    Z, y, Z2, y2 = _worst_neighbours(n, d, w, c=1e-3)
    loss = LogisticLoss()
    diff = np.linalg.norm(loss.mean_gradient(Z, y, w)
                          - loss.mean_gradient(Z2, y2, w))
    assert 0.99 * 2 / n <= diff <= 2 / n
    # Huber with h <= 1 has l' = -1 at margin 0: antipodal rows orthogonal to w
    # attain 2/n exactly.
    Z, y, Z2, y2 = _worst_neighbours(n, d, w, c=0.0)
    loss = HuberLoss(0.5)
    diff = np.linalg.norm(loss.mean_gradient(Z, y, w)
                          - loss.mean_gradient(Z2, y2, w))
    assert diff == pytest.approx(2 / n, rel=1e-12)


def test_vectorised_gradient_matches_rows():
    Z, y = _problem(4, n=25, d=5)
    w = np.random.default_rng(0).standard_normal(5)
    for loss in LOSSES:
        np.testing.assert_allclose(loss.mean_gradient(Z, y, w),
                                   _gradient_by_rows(Z, y, loss, w), rtol=1e-12, atol=1e-15)


# --- the release -----------------------------------------------------------------------

def test_reproducible_with_a_seed_and_fresh_otherwise():
    Z, y = _problem(6)
    loss = LogisticLoss()
    a = noisy_gradient_descent(Z, y, loss, 1.0, 1e-6, 0.05, NoiseSource.seeded(7))
    b = noisy_gradient_descent(Z, y, loss, 1.0, 1e-6, 0.05, NoiseSource.seeded(7))
    c = noisy_gradient_descent(Z, y, loss, 1.0, 1e-6, 0.05, NoiseSource.seeded(8))
    d = noisy_gradient_descent(Z, y, loss, 1.0, 1e-6, 0.05, NoiseSource.secure())
    np.testing.assert_array_equal(a, b)
    assert a.shape == (Z.shape[1],) and a.dtype == np.float64
    assert not np.array_equal(a, c) and not np.array_equal(a, d)


def test_noise_only_from_a_noise_source():
    Z, y = _problem(6)
    with pytest.raises(TypeError, match="NoiseSource"):
        noisy_gradient_descent(Z, y, LogisticLoss(), 1.0, 1e-6, 0.05,
                               np.random.default_rng(0))


def test_sparse_csr_equals_dense():
    Z, y = _problem(7, n=60, d=6)
    Z[np.abs(Z) < 0.3] = 0.0
    loss = LogisticLoss()
    dense = noisy_gradient_descent(Z, y, loss, 1.0, 1e-6, 0.02, NoiseSource.seeded(1))
    sparse = noisy_gradient_descent(sp.csr_matrix(Z), y, loss, 1.0, 1e-6, 0.02,
                                    NoiseSource.seeded(1))
    # Both gradients are rounded to the same grid, so summation order can only
    # move a coordinate by one grid step on a tie.
    np.testing.assert_allclose(sparse, dense, rtol=0, atol=1e-12)


class _NoisyLoss(LogisticLoss):
    """A loss whose derivative warns and overflows, as data-dependent numerics might."""

    def derivative(self, z):
        warnings.warn("data-dependent message", RuntimeWarning)
        np.exp(np.full(1, 1e4))  # overflow warning from numpy
        return super().derivative(z)


def test_no_warning_leaves():
    Z, y = _problem(8)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        w = noisy_gradient_descent(Z, y, _NoisyLoss(), 1.0, 1e-6, 0.05, NoiseSource.seeded(2))
    assert np.all(np.isfinite(w))


# --- accuracy --------------------------------------------------------------------------

def _adult():
    from dpsk.datasets import load_adult

    X, y = load_adult(return_X_y=True, preprocess=True)
    # Rows come out with norm 1 up to one rounding; keep them <= 1 exactly.
    X = X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1.0)
    return X, np.where(y == 1, 1.0, -1.0)


def _error(Z, y, w):
    return float(np.mean(np.sign(Z @ w) != y))


@pytest.mark.parametrize("alpha", [
    0.01, pytest.param(0.001, marks=pytest.mark.slow),
])
def test_accuracy_close_to_non_private_on_adult(alpha):
    Z, y = _adult()
    loss = LogisticLoss()
    exact = minimize_regularized_loss(loss, Z, y, alpha).w
    w = noisy_gradient_descent(Z, y, loss, 1.0, 1e-6, alpha, NoiseSource.seeded(0))
    assert _error(Z, y, w) <= _error(Z, y, exact) + 0.02
    # And far from the trivial classifier that predicts the majority class.
    assert _error(Z, y, w) < min(np.mean(y == 1), np.mean(y == -1)) - 0.01
