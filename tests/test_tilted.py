"""DPTiltedLogisticRegression: solver, sensitivity in t and n, noise calibration."""

import numpy as np
import pytest
from scipy.optimize import minimize
from test_robust import (
    _problem,
    adversarial_ratios,
    check_events_and_spend,
    random_neighbour_ratios,
)

import dpsk.mechanisms._beyond_erm as beyond_module
from dpsk import BudgetAccountant, DPTiltedLogisticRegression
from dpsk._optimize._solver import _accelerated_gradient
from dpsk._optimize._tilted_solver import _TiltedObjective, minimize_tilted_logistic
from dpsk.mechanisms._beyond_erm import private_tilted_erm, tilted_sensitivity
from dpsk.mechanisms._noise import (
    analytic_gaussian_sigma,
    output_perturbation_beta,
    output_perturbation_sensitivity,
    release_grid,
    rounding_radius,
)
from dpsk.mechanisms._random import NoiseSource

EXACT_TOL = 1e-13
TOL = 1e-10


def _exact(Z, y, alpha, t):
    return minimize_tilted_logistic(Z, y, alpha, t, tol=EXACT_TOL).w


# -- solver ------------------------------------------------------------------------------------

@pytest.mark.parametrize("t", [0.01, 1.0, 10.0])
def test_solver_certifies_and_matches_bfgs(t):
    Z, y = _problem(200, 5, 1)
    w = minimize_tilted_logistic(Z, y, 0.01, t, tol=1e-10).w
    obj = _TiltedObjective(Z, y, 0.01, t)
    g, err = obj.certificate(w)
    assert g + err <= 1e-10
    ref = minimize(lambda v: obj.value_and_grad(v)[0], np.zeros(5), jac=obj.grad,
                   method="BFGS", options={"gtol": 1e-12}).x
    # BFGS stops on value precision: its point is near, not within 1e-8.
    assert np.linalg.norm(ref - w) < 1e-5


def test_fallback_reaches_the_radius():
    Z, y = _problem(100, 4, 2)
    obj = _TiltedObjective(Z, y, 0.05, 2.0)
    w, _ = _accelerated_gradient(obj, np.zeros(4), obj.gradient_bound_at_zero(), 1e-8)
    assert np.linalg.norm(w - _exact(Z, y, 0.05, 2.0)) <= 1e-8 / 0.05


def test_small_tilt_is_erm():
    from dpsk._optimize._binary import minimize_regularized_loss
    from dpsk._optimize._losses import LogisticLoss

    Z, y = _problem(100, 4, 3)
    erm = minimize_regularized_loss(LogisticLoss(), Z, y, 0.05, tol=EXACT_TOL).w
    assert np.linalg.norm(_exact(Z, y, 0.05, 1e-6) - erm) < 1e-5


def test_tilt_lowers_the_worst_loss():
    Z, y = _problem(300, 4, 4)
    y[:15] *= -1  # a small group the plain model gets wrong
    losses = [np.logaddexp(0, -y * (Z @ _exact(Z, y, 0.01, t))).max() for t in (1e-4, 1.0, 10.0)]
    assert losses[0] > losses[1] > losses[2]


# -- sensitivity --------------------------------------------------------------------------------

def test_sensitivity_limits_and_growth():
    """``2 q / alpha``: ERM's bound as t -> 0, 2 / alpha for large t, monotone in t and n."""
    n, alpha = 1000, 0.1
    assert tilted_sensitivity(n, alpha, 1e-9) == pytest.approx(2 / (n * alpha), rel=1e-6)
    assert tilted_sensitivity(n, alpha, 100.0) == pytest.approx(2 / alpha, rel=1e-6)
    ts = [0.01, 0.1, 0.5, 1.0, 2.0, 5.0]
    values = [tilted_sensitivity(n, alpha, t) for t in ts]
    assert all(a < b for a, b in zip(values, values[1:]))
    ns = [10, 100, 1000, 10**4, 10**5]
    values = [tilted_sensitivity(m, alpha, 1.0) for m in ns]
    assert all(a > b for a, b in zip(values, values[1:]))
    # Like 1/n only once n >> e^{tL}: with t = 5 (e^{tL} ~ 1e8) n = 1e5 is not enough.
    assert tilted_sensitivity(10**5, alpha, 5.0) > 0.99 * 2 / alpha


@pytest.mark.parametrize("t", [0.1, 1.0, 5.0])
def test_sensitivity_on_random_neighbours(t):
    ratios = random_neighbour_ratios(lambda Z, y: _exact(Z, y, 0.1, t),
                                     tilted_sensitivity(40, 0.1, t), seed=2)
    assert ratios.max() <= 1.0 + 1e-9


@pytest.mark.parametrize("t", [0.1, 1.0, 5.0])
def test_sensitivity_on_adversarial_rows(t):
    ratios = adversarial_ratios(lambda Z, y: _exact(Z, y, 0.1, t),
                                tilted_sensitivity(30, 0.1, t), seed=8)
    assert ratios.max() <= 1.0 + 1e-9
    assert ratios.max() > 0.01


# -- noise calibration --------------------------------------------------------------------------

N, D, ALPHA, T, EPSILON = 30, 3, 0.1, 1.0, 1.0
N_RELEASES = 1500


def _rounding():
    return rounding_radius(release_grid(tilted_sensitivity(N, ALPHA, T), D), D)


def _expected_beta():
    """Algorithm 1's beta at the derived sensitivity, written as a Lipschitz constant."""
    lipschitz = tilted_sensitivity(N, ALPHA, T) * N * ALPHA / 2
    return output_perturbation_beta(EPSILON, N, ALPHA, lipschitz, solver_tol=TOL,
                                    rounding=_rounding())


def _expected_sigma(delta):
    lipschitz = tilted_sensitivity(N, ALPHA, T) * N * ALPHA / 2
    sens = output_perturbation_sensitivity(N, ALPHA, lipschitz, solver_tol=TOL,
                                           rounding=_rounding())
    return analytic_gaussian_sigma(EPSILON, delta, sens)


def _noise(delta, seed):
    Z, y = _problem(N, D, seed)
    exact = _exact(Z, y, ALPHA, T)
    releases = np.array([
        private_tilted_erm(Z, y, T, EPSILON, ALPHA, NoiseSource.seeded([seed, k]), tol=TOL,
                           delta=delta)
        for k in range(N_RELEASES)
    ])
    return releases - exact


def _erm_sensitivity(monkeypatch):
    """The plausible bug: calibrating at ERM's 2 / (n alpha), as if tilting changed nothing."""
    monkeypatch.setattr(beyond_module.TiltedLogisticConstants, "lipschitz",
                        property(lambda self: 1.0))


# -- estimator ----------------------------------------------------------------------------------

def test_events_and_spend():
    check_events_and_spend(DPTiltedLogisticRegression, tilt=0.5, alpha=0.1)


def test_infinite_tilt_is_refused_before_spending():
    acc = BudgetAccountant()
    with pytest.raises(ValueError):
        DPTiltedLogisticRegression(tilt=np.inf, classes=[0, 1], accountant=acc).fit(
            np.zeros((4, 2)), [0, 1, 0, 1])
    assert acc.total() == (0.0, 0.0)
