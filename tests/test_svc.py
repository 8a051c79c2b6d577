"""DPLinearSVC: the duality-gap certificate, sensitivity, noise calibration, estimator."""

import math
from fractions import Fraction

import numpy as np
import pytest
import test_robust as robust
from _sklearn_checks import WEIGHT_XFAILS, parametrize_with_checks

import dpsk._optimize._hinge_solver as hinge_module
from dpsk import BudgetAccountant, DPLinearSVC
from dpsk._optimize._hinge_solver import (
    _dual_from_primal,
    _polish,
    _primal_point,
    certified_gap,
    minimize_hinge,
)
from dpsk.mechanisms._beyond_erm import hinge_solver_distance, private_hinge_erm
from dpsk.mechanisms._noise import (
    analytic_gaussian_sigma,
    output_perturbation_beta,
    output_perturbation_sensitivity,
    release_grid,
    rounding_radius,
)
from dpsk.mechanisms._random import NoiseSource

# scikit-learn's estimator checks and these fits leave classes undeclared on
# purpose; the warning itself is tested in test_fit_protocol.py.
pytestmark = pytest.mark.filterwarnings("ignore::dpsk.ClassesFromDataWarning")


GAP = 1e-10
REFERENCE_GAP = 1e-13


def _reference(Z, y, alpha):
    """A high-precision minimiser: the pair with the smallest certified gap (below 1e-13)."""
    w0 = _primal_point(Z, y, alpha, 100000)
    best = (math.inf, w0)
    for width in (1e-9, 1e-7, 1e-5, 1e-3):
        beta = _dual_from_primal(Z, y, alpha, w0, width)
        if beta is not None:
            best = min(best, (certified_gap(Z, y, alpha, w0, beta), w0), key=lambda p: p[0])
        polished = _polish(Z, y, alpha, w0, width)
        if polished is not None:
            best = min(best, (certified_gap(Z, y, alpha, *polished), polished[0]),
                       key=lambda p: p[0])
    assert best[0] <= REFERENCE_GAP, best[0]
    return best[1]


def _exact_gap(Z, y, alpha, w, beta):
    """``F(w) - D(beta)`` in exact rational arithmetic (the float inputs taken as exact)."""
    n, d = Z.shape
    Zf = [[Fraction(float(v)) for v in row] for row in Z]
    wf = [Fraction(float(v)) for v in w]
    bf = [Fraction(float(v)) for v in beta]
    yf = [Fraction(float(v)) for v in y]
    a = Fraction(float(alpha))
    margins = [yf[i] * sum(Zf[i][j] * wf[j] for j in range(d)) for i in range(n)]
    primal = sum(max(Fraction(0), 1 - m) for m in margins) / n + a / 2 * sum(v * v for v in wf)
    v = [sum(bf[i] * yf[i] * Zf[i][j] for i in range(n)) / n for j in range(d)]
    dual = sum(bf) / n - sum(x * x for x in v) / (2 * a)
    return primal - dual


# -- solver and certificate ---------------------------------------------------------------------

@pytest.mark.parametrize("seed", [0, 1, 2])
def test_certified_gap_bounds_the_exact_gap(seed):
    Z, y = robust._problem(25, 3, seed)
    rng = np.random.default_rng(seed)
    alpha = 0.05
    w_ref = _reference(Z, y, alpha)
    cases = [(w_ref + 1e-6 * rng.normal(size=3), _dual_from_primal(Z, y, alpha, w_ref, 1e-5)),
             (rng.normal(size=3), rng.uniform(size=25))]
    for w, beta in cases:
        exact = _exact_gap(Z, y, alpha, w, beta)
        assert exact >= 0
        assert certified_gap(Z, y, alpha, w, beta) >= float(exact)
    # The decomposition is an identity: the bound is the exact gap times _BOUND_SAFETY = 1.01.
    w, beta = cases[1]
    assert certified_gap(Z, y, alpha, w, beta) == pytest.approx(float(_exact_gap(
        Z, y, alpha, w, beta)), rel=0.011)


@pytest.mark.parametrize("alpha", [1.0, 0.05, 1e-3])
def test_claimed_distance_bounds_the_true_distance(alpha):
    Z, y = robust._problem(60, 4, 3)
    w_ref = _reference(Z, y, alpha)
    for gap in (1e-6, GAP):
        result = minimize_hinge(Z, y, alpha, gap=gap)
        assert result._path == "dual" and result._gap <= gap
        slack = hinge_solver_distance(REFERENCE_GAP, alpha)
        assert np.linalg.norm(result.w - w_ref) <= hinge_solver_distance(result._gap, alpha) + slack


def test_fallback_reaches_the_distance(monkeypatch):
    """With the dual path broken, the Huber fallback still lands within sqrt(2 gap / alpha)."""
    Z, y = robust._problem(40, 3, 4)
    alpha, gap = 0.1, 1e-6
    w_ref = _reference(Z, y, alpha)
    monkeypatch.setattr(hinge_module, "_primal_point", lambda *a: np.full(3, 5.0))
    result = minimize_hinge(Z, y, alpha, gap=gap)
    assert np.linalg.norm(result.w - w_ref) <= hinge_solver_distance(gap, alpha)


def test_one_label_problem_is_certified():
    Z, _ = robust._problem(30, 3, 5)
    result = minimize_hinge(Z, -np.ones(30), 0.1, gap=GAP)
    assert result._path == "dual"


def test_solver_refuses_out_of_domain():
    Z, y = robust._problem(10, 3, 0)
    with pytest.raises(hinge_module.SolverError):
        minimize_hinge(Z, y * 2, 0.1)
    with pytest.raises(hinge_module.SolverError):
        minimize_hinge(Z, y, 0.0)


# -- sensitivity ----------------------------------------------------------------------------------

def test_sensitivity_on_random_neighbours():
    alpha = 0.05
    bound = 2.0 / (40 * alpha) + 2 * hinge_solver_distance(REFERENCE_GAP, alpha)
    ratios = robust.random_neighbour_ratios(lambda Z, y: _reference(Z, y, alpha), bound, seed=1)
    assert ratios.max() <= 1.0


def test_sensitivity_on_adversarial_rows():
    alpha = 0.05
    bound = 2.0 / (30 * alpha) + 2 * hinge_solver_distance(REFERENCE_GAP, alpha)
    ratios = robust.adversarial_ratios(lambda Z, y: _reference(Z, y, alpha), bound, seed=7)
    assert ratios.max() <= 1.0
    # Not vacuous: the outlier row moves the minimiser a good part of the bound.
    assert ratios.max() > 0.3


# -- noise calibration ----------------------------------------------------------------------------

N, D, ALPHA, EPSILON = 30, 3, 0.1, 1.0
N_RELEASES = 1500


def _rounding():
    grid = release_grid(2.0 / (N * ALPHA), D)
    return rounding_radius(grid, D)


def _solver_tol():
    """Derived independently: the distance sqrt(2 gap / alpha) in the plan's units."""
    return ALPHA * math.sqrt(2.0 * GAP / ALPHA)


def _expected_beta():
    return output_perturbation_beta(EPSILON, N, ALPHA, 1.0, solver_tol=_solver_tol(),
                                    rounding=_rounding())


def _expected_sigma(delta):
    sens = output_perturbation_sensitivity(N, ALPHA, 1.0, solver_tol=_solver_tol(),
                                           rounding=_rounding())
    return analytic_gaussian_sigma(EPSILON, delta, sens)


def _noise(delta, seed):
    Z, y = robust._problem(N, D, seed)
    exact = _reference(Z, y, ALPHA)
    releases = np.array([
        private_hinge_erm(Z, y, EPSILON, ALPHA, NoiseSource.seeded([seed, k]), gap=GAP,
                          delta=delta)
        for k in range(N_RELEASES)
    ])
    return releases - exact


@pytest.mark.parametrize("delta", [0.0, 1e-5])
def test_noise_law(delta):
    noise = _noise(delta, 41 if delta == 0 else 42)
    if delta == 0:
        robust.check_gamma_noise(noise, _expected_beta())
    else:
        robust.check_normal_noise(noise, _expected_sigma(delta))


@pytest.mark.slow
@pytest.mark.parametrize("delta", [0.0, 1e-5])
def test_shrunk_noise_is_caught(delta, monkeypatch):
    robust.shrink_plan(monkeypatch)
    with pytest.raises(AssertionError, match="calibrated law rejected"):
        test_noise_law(delta)


# -- estimator ------------------------------------------------------------------------------------


@parametrize_with_checks([DPLinearSVC(), DPLinearSVC(delta=1e-5, fit_intercept=False)],
                         expected_failed_checks=lambda estimator: WEIGHT_XFAILS)
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_events_and_spend():
    robust.check_events_and_spend(DPLinearSVC, alpha=0.01)


def test_no_probabilities():
    X, y = robust._data()
    clf = DPLinearSVC(classes=[0, 1], accountant=BudgetAccountant(), random_state=0).fit(X, y)
    assert not hasattr(clf, "predict_proba") and not hasattr(clf, "predict_log_proba")
    assert clf.score(X, y) > 0.5


def test_out_of_domain_input_is_refused_free():
    X, y = robust._data()
    acc = BudgetAccountant(epsilon=1.0)
    X_nan = X.copy()
    X_nan[5, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        DPLinearSVC(accountant=acc, classes=[0, 1]).fit(X_nan, y)
    y_odd = y.copy()
    y_odd[7] = 5
    with pytest.raises(ValueError, match="not among the declared classes"):
        DPLinearSVC(accountant=acc, classes=[0, 1]).fit(X, y_odd)
    with pytest.raises(ValueError):
        DPLinearSVC(tol=0.0, accountant=acc, classes=[0, 1]).fit(X, y)
    assert acc.spends == []


@pytest.mark.filterwarnings("ignore::dpsk.PrivacyBudgetWarning")
def test_estimator_solves_the_rescaled_problem():
    """Noise-free limit: at a huge epsilon the release is the hinge minimiser, unscaled."""
    from dpsk._data._design import design_matrix, unscale_coef
    X, y = robust._data(n=200)
    clf = DPLinearSVC(epsilon=1e9, alpha=0.01, data_norm=2.0, classes=[0, 1],
                      accountant=BudgetAccountant(), random_state=0).fit(X, y)
    Z = design_matrix(X, 2.0, True)
    w = _reference(Z, np.where(y == 1, 1.0, -1.0), 0.01)
    coef, intercept = unscale_coef(w[None, :], 2.0, True)
    np.testing.assert_allclose(clf.coef_, coef, atol=1e-6)
    np.testing.assert_allclose(clf.intercept_, intercept, atol=1e-6)
