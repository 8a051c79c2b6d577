"""End-to-end noise calibration: recover the noise from releases and test its law.

``tests/test_mechanisms.py`` checks each formula; these tests check what the
released models actually carry. Every mechanism path goes through the library's
own entry point (``private_erm``, the estimator, ``_select_candidate``), the
noise is recovered from the releases, and its law is compared with the
calibrated one:

* output perturbation (logistic, Huber): noise = release - exact minimiser;
* objective perturbation, normal branch (logistic) and Delta branch (Huber with
  small n * alpha): the first-order condition of the perturbed objective gives
  ``b = -n grad(J_0 + Delta/2 ||.||^2)(w)`` at the release ``w``;
* the solver-residual noise: its sampler at the residual rate, the rate
  private_erm asks for, and the residual recovered end to end by replaying the
  seeded draw of ``b`` and the (deterministic) solve;
* one-vs-rest through ``DPLogisticRegression`` with three declared classes, at
  ``epsilon / 3`` per class;
* DPGridSearch's selection (the exponential mechanism): chi-square of the
  selection frequencies.

The norm of a Gamma-norm noise vector follows Gamma(d, scale=1/beta). Each test
also runs the same statistic against the law of noise 10% too small (scale
0.9/beta): it must reject at p < 1e-3 while the calibrated law passes at
p > 1e-3. Each path has a mutation test that makes the library's calibration
return a beta 1/0.9 times too large and checks that the test then fails.

Seeds are fixed, so the outcome is deterministic. Over seeds, a correct library
fails a law test with probability 1e-3 (the threshold); the power checks are
sized so that the 10%-smaller law is rejected with probability above 99% at
these sample sizes (KS distance of Gamma(d) vs 0.9 x Gamma(d) is about 0.07-0.08
for d = 3-4, against a critical value of 1.95/sqrt(N) = 0.044-0.050).
"""

import dataclasses

import numpy as np
import pytest
from scipy import stats

import dpsk.mechanisms._erm as erm_module
import dpsk.model_selection._search as search_module
from dpsk import BudgetAccountant, DPLogisticRegression
from dpsk._data._design import design_matrix
from dpsk._data._validation import binary_targets
from dpsk._optimize._binary import minimize_regularized_loss
from dpsk._optimize._losses import HuberLoss, LogisticLoss
from dpsk.mechanisms._erm import SOLVER_EPSILON_SHARE, private_erm
from dpsk.mechanisms._noise import (
    float_input_radius,
    gamma_norm_noise,
    noise_norm_bound,
    objective_perturbation_calibration,
    output_perturbation_beta,
    release_grid,
    rounding_radius,
    solver_residual_beta,
)
from dpsk.mechanisms._random import NoiseSource

P_THRESHOLD = 1e-3


def _rounding(n, strong_convexity, d, lipschitz=1.0):
    """How far the release grid private_erm uses can move a point (a public number)."""
    return rounding_radius(release_grid(2.0 * lipschitz / (n * strong_convexity), d), d)


def _residual_margin(loss, n, d, alpha):
    """The residual's margin: the grid's, plus the float64 rounding of b for the solver."""
    calibration = _objective_calibration(loss, n, alpha)
    strong = alpha + calibration.extra_alpha
    return _rounding(n, strong, d) + float_input_radius(
        noise_norm_bound(d, beta=calibration.beta), n, strong, d)


SMALLER = 0.9  # "noise 10% too small": every norm scaled by 0.9, i.e. beta / 0.9
EPSILON = 1.0
TOL = 1e-10
EXACT_TOL = 1e-13


def _problem(n, d, seed):
    """Design rows of norm <= 1 (some strictly inside the ball) and +-1 labels."""
    rng = np.random.default_rng(seed)
    Z = rng.normal(size=(n, d))
    Z /= np.linalg.norm(Z, axis=1, keepdims=True) * rng.uniform(1.0, 2.0, size=(n, 1))
    y = np.where(Z[:, 0] + 0.5 * rng.normal(size=n) > 0, 1.0, -1.0)
    return Z, y


def check_gamma_law(norms, d, beta):
    """KS test of ``norms`` against Gamma(d, 1/beta) and against the 10%-smaller law.

    Returns the two p-values; asserts the calibrated law passes and the smaller
    one is rejected (the power check).
    """
    p_right = stats.kstest(norms, stats.gamma(a=d, scale=1.0 / beta).cdf).pvalue
    p_small = stats.kstest(norms, stats.gamma(a=d, scale=SMALLER / beta).cdf).pvalue
    assert p_right > P_THRESHOLD, f"calibrated law rejected: p={p_right:.2e}"
    assert p_small < P_THRESHOLD, f"no power against 10% less noise: p={p_small:.2e}"
    return p_right, p_small


def _seed(case):
    # Distinct data and noise streams per case, so no two cases test one sample.
    return sum(map(ord, case))


def _shrink_beta(module, name, monkeypatch):
    """Make ``module.name`` return a rate 1/0.9 times too large (noise 10% too small)."""
    original = getattr(module, name)

    def mutated(*args, **kwargs):
        result = original(*args, **kwargs)
        if dataclasses.is_dataclass(result):
            return dataclasses.replace(result, beta=result.beta / SMALLER)
        return result / SMALLER

    monkeypatch.setattr(module, name, mutated)


# -- output perturbation -------------------------------------------------------------------

OUTPUT_CASES = {
    "logistic": (LogisticLoss(), 30, 3, 0.1, 2000),
    "huber": (HuberLoss(0.5), 30, 3, 0.1, 2000),
}


def _output_noise_norms(loss, n, d, alpha, n_releases, seed=0):
    Z, y = _problem(n, d, seed)
    exact = minimize_regularized_loss(loss, Z, y, alpha, tol=EXACT_TOL).w
    releases = np.array([
        private_erm(Z, y, loss, EPSILON, alpha, "output", NoiseSource.seeded([seed, k]), tol=TOL)
        for k in range(n_releases)
    ])
    return np.linalg.norm(releases - exact, axis=1)


@pytest.mark.parametrize("case", OUTPUT_CASES)
def test_output_perturbation_noise_law(case):
    loss, n, d, alpha, n_releases = OUTPUT_CASES[case]
    norms = _output_noise_norms(loss, n, d, alpha, n_releases, seed=_seed(case))
    beta = output_perturbation_beta(EPSILON, n, alpha, loss.lipschitz, solver_tol=TOL,
                                    rounding=_rounding(n, alpha, d))
    check_gamma_law(norms, d, beta)


@pytest.mark.parametrize("case", OUTPUT_CASES)
def test_output_perturbation_mutation_is_caught(case, monkeypatch):
    loss, n, d, alpha, n_releases = OUTPUT_CASES[case]
    beta = output_perturbation_beta(EPSILON, n, alpha, loss.lipschitz, solver_tol=TOL,
                                    rounding=_rounding(n, alpha, d))
    _shrink_beta(erm_module, "output_perturbation_beta", monkeypatch)
    norms = _output_noise_norms(loss, n, d, alpha, n_releases, seed=_seed(case))
    with pytest.raises(AssertionError, match="calibrated law rejected"):
        check_gamma_law(norms, d, beta)


# -- objective perturbation ----------------------------------------------------------------

# (loss, n, d, alpha, releases, expected branch). Logistic, n alpha = 3: the slack
# log(1 + c/(n a)) = 0.08 is below eps/2, no Delta. Huber h=0.5 (c = 1), n alpha =
# 0.3: the slack log(1 + 10/3) = 1.47 exceeds eps/2, so Delta > 0 and eps' = eps/2.
OBJECTIVE_CASES = {
    "logistic-normal": (LogisticLoss(), 30, 4, 0.1, 1500, "normal"),
    "huber-delta": (HuberLoss(0.5), 30, 4, 0.01, 1500, "delta"),
}


def _objective_calibration(loss, n, alpha):
    return objective_perturbation_calibration(
        (1.0 - SOLVER_EPSILON_SHARE) * EPSILON, n, alpha, loss.curvature)


def _recovered_b(loss, Z, y, alpha, extra_alpha, w):
    """``-n grad(J_0 + extra/2 ||.||^2)(w)``: the linear term that makes w stationary."""
    n = Z.shape[0]
    margins = y * (Z @ w)
    grad = Z.T @ (y * loss.derivative(margins)) / n + (alpha + extra_alpha) * w
    return -n * grad


def _objective_noise_norms(loss, n, d, alpha, n_releases, seed=0):
    Z, y = _problem(n, d, seed)
    calibration = _objective_calibration(loss, n, alpha)
    norms = np.empty(n_releases)
    for k in range(n_releases):
        w = private_erm(Z, y, loss, EPSILON, alpha, "objective", NoiseSource.seeded([seed, k]),
                        tol=TOL)
        norms[k] = np.linalg.norm(_recovered_b(loss, Z, y, alpha, calibration.extra_alpha, w))
    return norms


def _recovery_error_bound(loss, n, d, alpha):
    """A bound on ``| ||b_recovered|| - ||b|| |`` that holds with probability 1 - 1e-12.

    Two parts: the solver stops at gradient norm <= tol (error n * tol), and the
    release carries the residual noise r (error <= n * (c + alpha + Delta) * ||r||).
    """
    calibration = _objective_calibration(loss, n, alpha)
    strong = alpha + calibration.extra_alpha
    beta_res = solver_residual_beta(SOLVER_EPSILON_SHARE * EPSILON, strong, TOL,
                                    rounding=_residual_margin(loss, n, d, alpha))
    r_max = stats.gamma(a=d, scale=1.0 / beta_res).isf(1e-12)
    # Rounding to the release grid moves the point by at most the rounding radius.
    r_max += 2 * _rounding(n, strong, d)
    return n * TOL + n * (loss.curvature + strong) * r_max


@pytest.mark.parametrize("case", OBJECTIVE_CASES)
def test_objective_perturbation_noise_law(case):
    loss, n, d, alpha, n_releases, branch = OBJECTIVE_CASES[case]
    calibration = _objective_calibration(loss, n, alpha)
    assert (calibration.extra_alpha > 0) == (branch == "delta")
    norms = _objective_noise_norms(loss, n, d, alpha, n_releases, seed=_seed(case))
    # The recovery is exact up to an error (~2e-4 here, almost all of it the
    # residual noise) a hundred times below what KS resolves at this sample size
    # (1/sqrt(N) of the spread of ||b||).
    error = _recovery_error_bound(loss, n, d, alpha)
    assert error < 1e-2 * (np.sqrt(d) / calibration.beta) / np.sqrt(n_releases)
    check_gamma_law(norms, d, calibration.beta)


@pytest.mark.parametrize("case", OBJECTIVE_CASES)
def test_objective_perturbation_mutation_is_caught(case, monkeypatch):
    loss, n, d, alpha, n_releases, _ = OBJECTIVE_CASES[case]
    beta = _objective_calibration(loss, n, alpha).beta
    _shrink_beta(erm_module, "objective_perturbation_calibration", monkeypatch)
    norms = _objective_noise_norms(loss, n, d, alpha, n_releases, seed=_seed(case))
    with pytest.raises(AssertionError, match="calibrated law rejected"):
        check_gamma_law(norms, d, beta)


# -- the solver-residual noise -------------------------------------------------------------

RESIDUAL_CASE = (HuberLoss(0.5), 30, 3, 0.01, 1500)


def test_residual_sampler_law():
    # The sampler itself at the residual rate (a rate of ~1e6-1e7).
    loss, n, d, alpha, n_draws = RESIDUAL_CASE
    strong = alpha + _objective_calibration(loss, n, alpha).extra_alpha
    beta = solver_residual_beta(SOLVER_EPSILON_SHARE * EPSILON, strong, TOL,
                                rounding=_residual_margin(loss, n, d, alpha))
    source = NoiseSource.seeded(99)
    norms = np.array([np.linalg.norm(gamma_norm_noise(d, beta, source)) for _ in range(n_draws)])
    check_gamma_law(norms, d, beta)


def _recorded_rates(loss, n, d, alpha, monkeypatch):
    Z, y = _problem(n, d, 0)
    rates = []
    original = erm_module.gamma_norm_noise

    def recording(d_, beta, rng):
        rates.append(beta)
        return original(d_, beta, rng)

    monkeypatch.setattr(erm_module, "gamma_norm_noise", recording)
    private_erm(Z, y, loss, EPSILON, alpha, "objective", NoiseSource.seeded(1), tol=TOL)
    return rates


def _expected_rates(loss, n, d, alpha):
    calibration = _objective_calibration(loss, n, alpha)
    strong = alpha + calibration.extra_alpha
    return [calibration.beta, solver_residual_beta(SOLVER_EPSILON_SHARE * EPSILON, strong, TOL,
                                                   rounding=_residual_margin(loss, n, d,
                                                                             alpha))]


def test_private_erm_draws_the_residual_rate(monkeypatch):
    loss, n, d, alpha, _ = RESIDUAL_CASE
    assert _recorded_rates(loss, n, d, alpha, monkeypatch) == _expected_rates(loss, n, d, alpha)


def _residual_norms(loss, n, d, alpha, n_releases, seed=0):
    """End to end: replay the seeded draw of b and the deterministic solve, and take
    the release minus the solver's point. This relies on private_erm drawing b
    first, then the residual, from one source (checked by the rate recorder)."""
    Z, y = _problem(n, d, seed)
    calibration = _objective_calibration(loss, n, alpha)
    strong = alpha + calibration.extra_alpha
    norms = np.empty(n_releases)
    for k in range(n_releases):
        w = private_erm(Z, y, loss, EPSILON, alpha, "objective", NoiseSource.seeded([seed, k]),
                        tol=TOL)
        b = gamma_norm_noise(d, calibration.beta, NoiseSource.seeded([seed, k]))
        point = minimize_regularized_loss(loss, Z, y, strong, linear=b / n, tol=TOL).w
        norms[k] = np.linalg.norm(w - point)
    return norms


def test_residual_noise_law_end_to_end():
    loss, n, d, alpha, n_releases = RESIDUAL_CASE
    norms = _residual_norms(loss, n, d, alpha, n_releases)
    check_gamma_law(norms, d, _expected_rates(loss, n, d, alpha)[1])


def test_residual_mutation_is_caught(monkeypatch):
    loss, n, d, alpha, n_releases = RESIDUAL_CASE
    beta = _expected_rates(loss, n, d, alpha)[1]
    _shrink_beta(erm_module, "solver_residual_beta", monkeypatch)
    assert _recorded_rates(loss, n, d, alpha, monkeypatch)[1] != beta
    monkeypatch.setattr(erm_module, "gamma_norm_noise", gamma_norm_noise)
    norms = _residual_norms(loss, n, d, alpha, n_releases)
    with pytest.raises(AssertionError, match="calibrated law rejected"):
        check_gamma_law(norms, d, beta)


# -- one-vs-rest through the estimator ----------------------------------------------------

OVR = dict(n=30, d=3, alpha=0.1, data_norm=2.0, n_fits=700)  # 3 x 700 = 2100 norms


def _ovr_data():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(OVR["n"], OVR["d"]))
    X *= 1.5 / np.linalg.norm(X, axis=1, keepdims=True)
    X[:3] *= 3.0  # a few rows above data_norm: clipped before the solve
    y = np.arange(OVR["n"]) % 3
    return X, y


def _ovr_noise_norms():
    X, y = _ovr_data()
    loss, classes = LogisticLoss(), np.array([0, 1, 2])
    Z = design_matrix(X, OVR["data_norm"], False)
    exact = np.array([minimize_regularized_loss(loss, Z, t, OVR["alpha"], tol=EXACT_TOL).w
                      for t in binary_targets(y, classes)])
    norms = []
    for k in range(OVR["n_fits"]):
        model = DPLogisticRegression(
            classes=[0, 1, 2], perturbation="output", fit_intercept=False, random_state=k,
            multi_class="ovr",
            alpha=OVR["alpha"], data_norm=OVR["data_norm"], epsilon=EPSILON,
            accountant=BudgetAccountant(),
        ).fit(X, y)
        W = model.coef_ * OVR["data_norm"]  # undo unscale_coef
        norms.append(np.linalg.norm(W - exact, axis=1))
    return np.array(norms)


def test_one_vs_rest_noise_law():
    norms = _ovr_noise_norms()
    beta = output_perturbation_beta(EPSILON / 3, OVR["n"], OVR["alpha"], 1.0, solver_tol=1e-10,
                                    rounding=_rounding(OVR["n"], OVR["alpha"], OVR["d"]))
    check_gamma_law(norms.ravel(), OVR["d"], beta)
    # The three classes draw independent noise (no shared draw across classes).
    assert np.all(np.abs(np.corrcoef(norms.T)[np.triu_indices(3, 1)]) < 0.15)


def test_one_vs_rest_mutation_is_caught(monkeypatch):
    beta = output_perturbation_beta(EPSILON / 3, OVR["n"], OVR["alpha"], 1.0, solver_tol=1e-10,
                                    rounding=_rounding(OVR["n"], OVR["alpha"], OVR["d"]))
    _shrink_beta(erm_module, "output_perturbation_beta", monkeypatch)
    norms = _ovr_noise_norms()
    with pytest.raises(AssertionError, match="calibrated law rejected"):
        check_gamma_law(norms.ravel(), OVR["d"], beta)


# -- DPGridSearch's selection -------------------------------------------------------------

MISTAKES = np.array([0, 2, 4, 6])
N_SELECTIONS = 20000


def _selection_counts(seed=0):
    source = NoiseSource.seeded(seed)
    picks = [search_module._select_candidate(MISTAKES, EPSILON, source)
             for _ in range(N_SELECTIONS)]
    return np.bincount(picks, minlength=MISTAKES.size)


def _selection_law(epsilon):
    p = np.exp(-epsilon * MISTAKES / 2.0)
    return p / p.sum()


def check_selection_law(counts):
    """Chi-square of the counts against exp(-eps z/2) and against the law with 10% less
    noise (as if epsilon were eps/0.9)."""
    p_right = stats.chisquare(counts, N_SELECTIONS * _selection_law(EPSILON)).pvalue
    p_small = stats.chisquare(counts, N_SELECTIONS * _selection_law(EPSILON / SMALLER)).pvalue
    assert p_right > P_THRESHOLD, f"calibrated law rejected: p={p_right:.2e}"
    assert p_small < P_THRESHOLD, f"no power against 10% less noise: p={p_small:.2e}"
    return p_right, p_small


def test_selection_law():
    check_selection_law(_selection_counts())


def test_selection_mutation_is_caught(monkeypatch):
    original = search_module.exponential_mechanism

    def sharper(utilities, epsilon, sensitivity, rng):
        return original(utilities, epsilon, sensitivity * SMALLER, rng)

    monkeypatch.setattr(search_module, "exponential_mechanism", sharper)
    with pytest.raises(AssertionError, match="calibrated law rejected"):
        check_selection_law(_selection_counts())
