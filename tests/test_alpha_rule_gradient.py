"""The alpha rule's direct bound for noisy gradient descent (dpsk.mechanisms._alpha).

The bound on the released last iterate's excess risk is ``||w0||^2 / (2 eta T) +
H_T N + alpha ||w0||^2 / 2`` with ``N = (eta sigma^2 / 2) (size + eta trace(A))``
(docs/choosing_alpha.rst, "Noisy gradient descent"). These tests pin its pieces
to the schedule the mechanism runs, check its shape and the rule's answer, and
check on a small problem, by simulation of the mechanism's own loop, that it
bounds the expected excess objective of what is released.
"""

import math

import numpy as np
import pytest
from scipy.optimize import minimize

from dpsk._optimize._losses import LogisticLoss, MultinomialLoss
from dpsk.mechanisms._alpha import ALPHA_RANGE, PRIOR_NORM, auto_alpha, excess_risk_bound
from dpsk.mechanisms._gradient import _run, noisy_gd_schedule
from dpsk.mechanisms._random import NoiseSource

GRADIENT = dict(loss=LogisticLoss(), perturbation="gradient")


def _pieces(alpha, n, size, epsilon, delta, prior, loss=None, n_problems=1):
    """The optimisation, noise and bias terms, recomputed from the schedule."""
    loss = loss or LogisticLoss()
    schedule = noisy_gd_schedule(n, size, alpha, loss, epsilon, delta, n_problems=n_problems)
    eta, steps = schedule.step_size, schedule.n_steps
    trace = loss.curvature * loss.hessian_rank + alpha * size
    per_step = 0.5 * eta * schedule.sigma**2 * (size + eta * trace)
    harmonic = sum(1.0 / k for k in range(1, steps + 1))
    return prior / (2 * eta * steps), harmonic * per_step, 0.5 * alpha * prior


@pytest.mark.parametrize("alpha", [1e-8, 1e-5, 1e-3, 0.1, 10.0])
@pytest.mark.parametrize("n, size, epsilon", [(1000, 6, 0.1), (30_000, 201, 1.0)])
def test_bound_is_the_sum_of_its_three_pieces(alpha, n, size, epsilon):
    r = PRIOR_NORM["gradient"]
    pieces = _pieces(alpha, n, size, epsilon, 1e-6, r**2 * size)
    bound = excess_risk_bound(alpha, n, size, epsilon, 1e-6, **GRADIENT)
    assert all(math.isfinite(p) and p > 0 for p in pieces)
    assert bound == pytest.approx(sum(pieces), rel=1e-12)


def test_multinomial_bound_counts_all_weights_and_the_softmax_trace():
    # The noise counts all K d weights; the prior counts pairs of classes,
    # r^2 d (K - 1) / 2 (prior_size), as for the other mechanisms.
    loss = MultinomialLoss(4)
    bound = excess_risk_bound(1e-3, 5000, 11, 1.0, 1e-6, loss=loss, perturbation="gradient")
    size = 4 * 11
    prior = PRIOR_NORM["gradient"]**2 * 11 * (4 - 1) / 2
    pieces = _pieces(1e-3, 5000, size, 1.0, 1e-6, prior, loss=loss)
    assert bound == pytest.approx(sum(pieces), rel=1e-12)


def test_pieces_move_the_way_the_derivation_says():
    # Along alpha: T never grows, so the noise (sigma^2 grows with T, and H_T) never
    # grows either (eta (size + eta trace) falls with alpha too); the optimisation
    # error ||w0||^2 (c + alpha) / (2 T) grows; the bias grows linearly.
    alphas = np.logspace(-9, 2, 45)
    steps = [noisy_gd_schedule(10_000, 21, a, LogisticLoss(), 1.0, 1e-6).n_steps
             for a in alphas]
    pieces = np.array([_pieces(a, 10_000, 21, 1.0, 1e-6, 100.0) for a in alphas])
    assert all(t1 >= t2 for t1, t2 in zip(steps, steps[1:]))
    assert steps[0] > 10 * steps[-1]
    assert np.all(np.diff(pieces[:, 0]) > 0)
    assert np.all(np.diff(pieces[:, 1]) <= 1e-12 * pieces[1:, 1])
    assert pieces[0, 1] > 10 * pieces[-1, 1]
    np.testing.assert_allclose(pieces[:, 2], 50.0 * alphas)
    # Less budget or fewer rows: more noise at the same alpha.
    base = _pieces(1e-3, 10_000, 21, 1.0, 1e-6, 100.0)[1]
    assert _pieces(1e-3, 10_000, 21, 0.5, 1e-6, 100.0)[1] > base
    assert _pieces(1e-3, 5_000, 21, 1.0, 1e-6, 100.0)[1] > base


@pytest.mark.parametrize("n, d, epsilon", [(1000, 6, 0.1), (1000, 6, 1.0), (10_000, 21, 0.1),
                                           (10_000, 21, 1.0), (3000, 501, 1.0)])
def test_rule_is_in_range_deterministic_and_minimises_the_bound(n, d, epsilon):
    alpha = auto_alpha(n, d, epsilon, 1e-6, **GRADIENT)
    assert ALPHA_RANGE[0] <= alpha <= ALPHA_RANGE[1]
    assert auto_alpha(n, d, epsilon, 1e-6, **GRADIENT) == alpha
    best = excess_risk_bound(alpha, n, d, epsilon, 1e-6, **GRADIENT)
    for other in np.logspace(-9, 2, 67):
        assert best <= excess_risk_bound(other, n, d, epsilon, 1e-6, **GRADIENT) * (1 + 1e-6)


def test_larger_prior_asks_for_more_steps():
    # A farther comparator needs more optimisation: the rule's alpha falls and T grows.
    def steps(r):
        alpha = auto_alpha(10_000, 21, 0.1, 1e-6, prior_norm=r, **GRADIENT)
        return noisy_gd_schedule(10_000, 21, alpha, LogisticLoss(), 0.1, 1e-6).n_steps

    assert steps(1.0) < steps(3.0) < steps(10.0)


def _objective(w, Z, y, alpha):
    margins = y * (Z @ w)
    return float(np.mean(np.logaddexp(0.0, -margins)) + 0.5 * alpha * w @ w)


@pytest.mark.parametrize("alpha", [1e-4, 1e-2])
def test_bound_holds_for_the_mechanisms_own_loop(alpha):
    # E[J(w_T)] - J(w0) <= ||w0||^2 / (2 eta T) + H_T N for the released last iterate,
    # with w0 the regularised minimiser (any comparator may be used). Small n and
    # epsilon make the noise term large enough to be checked; the mean of 40 runs of
    # the mechanism's loop must stay below the bound (without its bias term).
    rng = np.random.default_rng(0)
    n, d, epsilon, delta = 200, 3, 2.0, 1e-6
    Z = rng.normal(size=(n, d))
    Z /= np.maximum(np.linalg.norm(Z, axis=1), 1.0)[:, None]
    y = np.where(Z @ np.array([3.0, -2.0, 1.0]) + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
    w0 = minimize(_objective, np.zeros(d), args=(Z, y, alpha), method="BFGS",
                  options={"gtol": 1e-10}).x
    prior = float(w0 @ w0)
    optimisation, noise, _ = _pieces(alpha, n, d, epsilon, delta, prior)
    excess = [_objective(_run(Z, y, LogisticLoss(), epsilon, delta, alpha, NoiseSource(), 1),
                         Z, y, alpha) - _objective(w0, Z, y, alpha) for _ in range(40)]
    assert np.mean(excess) <= optimisation + noise
    # And it is not vacuous here (measured: 10 to 25 times what happens).
    assert optimisation + noise <= 100 * np.mean(excess)
