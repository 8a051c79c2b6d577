"""DPRobustLogisticRegression: solver, sensitivity, noise calibration, robust accuracy."""

import dataclasses

import numpy as np
import pytest
from _sklearn_checks import WEIGHT_XFAILS, parametrize_with_checks
from scipy import stats
from scipy.optimize import minimize

import dpsk.mechanisms._beyond_erm as robust_erm_module
from dpsk import (
    BudgetAccountant,
    DPRobustLogisticRegression,
    GaussianEvent,
    PureDPEvent,
    robust_accuracy,
)
from dpsk._optimize._robust_solver import (
    _RobustLinfObjective,
    _RobustObjective,
    minimize_robust_logistic,
    minimize_robust_logistic_linf,
)
from dpsk.mechanisms._beyond_erm import (
    private_robust_erm,
    private_robust_linf_erm,
    robust_linf_sensitivity,
    robust_sensitivity,
)
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


EXACT_TOL = 1e-13
TOL = 1e-10
SMALLER = 0.9
P_THRESHOLD = 1e-3


def _problem(n, d, seed):
    """Rows of norm <= 1 (last column a constant intercept feature) and +-1 labels."""
    rng = np.random.default_rng(seed)
    Z = rng.normal(size=(n, d))
    Z[:, -1] = 1.0
    Z /= np.linalg.norm(Z, axis=1, keepdims=True) * rng.uniform(1.0, 1.5, size=(n, 1))
    y = np.where(Z[:, 0] + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
    return Z, y


def _exact(Z, y, alpha, r):
    return minimize_robust_logistic(Z, y, alpha, r, Z.shape[1] - 1, tol=EXACT_TOL).w


# -- solver ------------------------------------------------------------------------------------

@pytest.mark.parametrize("r", [0.0, 0.1, 0.5])
def test_solver_matches_bfgs_and_certifies(r):
    Z, y = _problem(200, 5, 1)
    res = minimize_robust_logistic(Z, y, 0.01, r, 4, tol=1e-10)
    obj = _RobustObjective(Z, y, 0.01, r, 4)
    g, err = obj.certificate(res.w)
    assert g + err <= 1e-10
    ref = minimize(lambda w: obj.value_and_grad(w)[0], np.zeros(5), jac=obj.grad,
                   method="BFGS", options={"gtol": 1e-12}).x
    assert np.linalg.norm(ref - res.w) < 1e-7


def test_fallback_reaches_the_radius():
    """Force the fallback (no fast path) and compare with the certified point."""
    Z, y = _problem(100, 4, 2)
    obj = _RobustObjective(Z, y, 0.05, 0.2, 3)
    from dpsk._optimize._solver import _accelerated_gradient
    w, _ = _accelerated_gradient(obj, np.zeros(4), obj.gradient_bound_at_zero(), 1e-8)
    exact = _exact(Z, y, 0.05, 0.2)
    assert np.linalg.norm(w - exact) <= 1e-8 / 0.05


def test_worst_case_margin_is_attained():
    """``y w.x - r ||w_feat||`` is the smallest margin over ``||e|| <= r`` (smoothing 0)."""
    rng = np.random.default_rng(3)
    w, x, r = rng.normal(size=4), rng.normal(size=4), 0.3
    worst = w @ x - r * np.linalg.norm(w[:3])
    e = np.zeros(4)
    e[:3] = -r * w[:3] / np.linalg.norm(w[:3])
    assert np.isclose(w @ (x + e), worst)
    for _ in range(200):
        e = np.zeros(4)
        e[:3] = rng.normal(size=3)
        e *= r * rng.uniform() / np.linalg.norm(e)
        assert w @ (x + e) >= worst - 1e-12


# -- sensitivity --------------------------------------------------------------------------------

def random_neighbour_ratios(exact, bound, seed, n=40, d=4, trials=15):
    """``||w(D') - w(D)|| / bound`` for random data sets and one random replaced row."""
    rng = np.random.default_rng(seed)
    ratios = []
    for trial in range(trials):
        Z, y = _problem(n, d, 100 * seed + trial)
        Z2, y2 = Z.copy(), y.copy()
        i = rng.integers(n)
        Z2[i] = rng.normal(size=d)
        Z2[i] /= np.linalg.norm(Z2[i])
        y2[i] = rng.choice([-1.0, 1.0])
        ratios.append(np.linalg.norm(exact(Z2, y2) - exact(Z, y)) / bound)
    return np.array(ratios)


def adversarial_ratios(exact, bound, seed, n=30, d=4):
    """The same for rows replaced by an outlier: margin ``-||w||``, gradient along ``w``.

    Its loss derivative is near its largest, and for the robust loss its
    gradient points along the perturbation direction, where the two terms add.
    """
    Z, y = _problem(n, d, seed)
    w = exact(Z, y)
    ratios = []
    for i in range(0, n, 3):
        Z2, y2 = Z.copy(), y.copy()
        Z2[i] = w / np.linalg.norm(w)
        y2[i] = -1.0
        ratios.append(np.linalg.norm(exact(Z2, y2) - w) / bound)
    return np.array(ratios)


@pytest.mark.parametrize("r", [0.0, 0.2, 1.0])
def test_sensitivity_on_random_neighbours(r):
    ratios = random_neighbour_ratios(lambda Z, y: _exact(Z, y, 0.05, r),
                                     robust_sensitivity(40, 0.05, r), seed=1)
    assert ratios.max() <= 1.0 + 1e-9


@pytest.mark.parametrize("r", [0.2, 1.0])
def test_sensitivity_on_adversarial_rows(r):
    ratios = adversarial_ratios(lambda Z, y: _exact(Z, y, 0.05, r),
                                robust_sensitivity(30, 0.05, r), seed=7)
    assert ratios.max() <= 1.0 + 1e-9
    # Not vacuous: strong convexity alpha is a worst case, the Hessian is larger.
    assert ratios.max() > 0.05


# -- noise calibration --------------------------------------------------------------------------

N, D, ALPHA, R, EPSILON = 30, 3, 0.1, 0.5, 1.0
N_RELEASES = 1500


def _scale_of(n, d, alpha, r):
    grid = release_grid(2.0 * (1.0 + r) / (n * alpha), d)
    return rounding_radius(grid, d)


def _expected_beta():
    """Derived independently: Algorithm 1's beta at Lipschitz constant 1 + r."""
    return output_perturbation_beta(EPSILON, N, ALPHA, 1.0 + R, solver_tol=TOL,
                                    rounding=_scale_of(N, D, ALPHA, R))


def _expected_sigma(delta):
    sens = output_perturbation_sensitivity(N, ALPHA, 1.0 + R, solver_tol=TOL,
                                           rounding=_scale_of(N, D, ALPHA, R))
    return analytic_gaussian_sigma(EPSILON, delta, sens)


def _noise(delta, seed):
    Z, y = _problem(N, D, seed)
    exact = _exact(Z, y, ALPHA, R)
    releases = np.array([
        private_robust_erm(Z, y, R, D - 1, EPSILON, ALPHA, NoiseSource.seeded([seed, k]),
                           tol=TOL, delta=delta)
        for k in range(N_RELEASES)
    ])
    return releases - exact


def check_gamma_noise(noise, beta):
    """KS test of the noise norms against Gamma(d, 1/beta) (passes) and 0.9 times it (fails)."""
    d, norms = noise.shape[1], np.linalg.norm(noise, axis=1)
    p_right = stats.kstest(norms, stats.gamma(a=d, scale=1.0 / beta).cdf).pvalue
    p_small = stats.kstest(norms, stats.gamma(a=d, scale=SMALLER / beta).cdf).pvalue
    assert p_right > P_THRESHOLD, f"calibrated law rejected: p={p_right:.2e}"
    assert p_small < P_THRESHOLD, f"no power against 10% less noise: p={p_small:.2e}"


def check_normal_noise(noise, sigma):
    """Chi-square test of the sum of squares: N(0, sigma^2) passes, 0.9 sigma fails.

    The sum over all coordinates is chi-square with ``noise.size`` degrees of
    freedom under the calibrated law (far more power than a KS test on scale).
    """
    draws = noise.ravel()
    law = stats.chi2(df=draws.size)
    ss = float(draws @ draws)
    p_right = 2 * min(law.cdf(ss / sigma**2), law.sf(ss / sigma**2))
    p_small = 2 * min(law.cdf(ss / (SMALLER * sigma) ** 2), law.sf(ss / (SMALLER * sigma) ** 2))
    assert p_right > P_THRESHOLD, f"calibrated law rejected: p={p_right:.2e}"
    assert p_small < P_THRESHOLD, f"no power against 10% less noise: p={p_small:.2e}"


def shrink_plan(monkeypatch):
    """Make the release's calibration 10% too small (beta / 0.9, sigma * 0.9)."""
    original = robust_erm_module._noise_plan

    def mutated(*args, **kwargs):
        plan = original(*args, **kwargs)
        if plan.beta is not None:
            return dataclasses.replace(plan, beta=plan.beta / SMALLER)
        return dataclasses.replace(plan, sigma=plan.sigma * SMALLER)

    monkeypatch.setattr(robust_erm_module, "_noise_plan", mutated)


def _forget_radius(monkeypatch):
    """The plausible bug: calibrating at the plain logistic constant 1, not 1 + r."""
    monkeypatch.setattr(robust_erm_module.RobustLogisticConstants, "lipschitz",
                        property(lambda self: 1.0))


# -- estimator ----------------------------------------------------------------------------------

def _data(n=300, seed=0, n_classes=2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3)) / 2
    y = (X[:, 0] > 0).astype(int) + (n_classes > 2) * (X[:, 1] > 0.3)
    return X, y


def check_events_and_spend(cls, **params):
    """A pure fit records a PureDPEvent, a delta > 0 fit a GaussianEvent; both are charged."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3)) / 2
    y = (X[:, 0] > 0).astype(int)
    acc = BudgetAccountant()
    pure = cls(epsilon=0.5, classes=[0, 1], accountant=acc, random_state=0, **params).fit(X, y)
    assert isinstance(pure.privacy_event_, PureDPEvent)
    gauss = cls(epsilon=0.5, delta=1e-6, classes=[0, 1], accountant=acc, random_state=0,
                **params).fit(X, y)
    assert isinstance(gauss.privacy_event_, GaussianEvent)
    assert acc.total()[0] == pytest.approx(1.0)


def test_events_and_spend():
    check_events_and_spend(DPRobustLogisticRegression, radius=0.1)


def test_radius_in_user_units():
    """The solved radius is radius / data_norm on unit rows (times 1/sqrt 2 with intercept)."""
    clf = DPRobustLogisticRegression(radius=0.3, data_norm=2.0, fit_intercept=False)
    assert clf._scaled_radius() == pytest.approx(0.15)
    clf.set_params(fit_intercept=True)
    assert clf._scaled_radius() == pytest.approx(0.15 / np.sqrt(2))


def test_estimator_solves_the_rescaled_problem():
    """At a huge epsilon the release is the solver's point on design rows at radius r s / D."""
    from dpsk._data._design import design_matrix, unscale_coef
    X, y = _data(500, 1)
    clf = DPRobustLogisticRegression(radius=0.2, data_norm=2.0, epsilon=1e9, alpha=1e-2,
                                     classes=[0, 1], accountant=BudgetAccountant(),
                                     random_state=0)
    with pytest.warns(Warning):
        clf.fit(X, y)
    Z = design_matrix(X, 2.0, True)
    w = minimize_robust_logistic(Z, np.where(y == 1, 1.0, -1.0), 1e-2, 0.2 / 2.0 / np.sqrt(2),
                                 3, tol=EXACT_TOL).w
    coef, intercept = unscale_coef(w[None], 2.0, True)
    np.testing.assert_allclose(clf.coef_, coef, atol=1e-6)
    np.testing.assert_allclose(clf.intercept_, intercept, atol=1e-6)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_robust_accuracy_is_exact(n_classes):
    """Against a brute-force attack: the certified rows survive, the others are broken."""
    X, y = _data(200, 2, n_classes)
    clf = DPRobustLogisticRegression(radius=0.1, epsilon=10.0, alpha=1e-2,
                                     classes=list(range(n_classes)), data_norm=10.0,
                                     accountant=BudgetAccountant(), random_state=0).fit(X, y)
    radius = 0.15
    assert robust_accuracy(clf, X, y, 0.0) == pytest.approx(clf.score(X, y))
    W = np.atleast_2d(clf.coef_)
    broken = np.zeros(len(y), dtype=bool)
    for i in range(len(y)):
        for k in range(len(clf.classes_)):
            if W.shape[0] == 1:
                direction = W[0] * (1.0 if y[i] == clf.classes_[1] else -1.0)
            else:
                direction = W[y[i]] - W[k]
            if not np.any(direction):
                continue
            e = -radius * direction / np.linalg.norm(direction)
            broken[i] |= clf.predict((X[i] + e)[None])[0] != y[i]
    assert robust_accuracy(clf, X, y, radius) == pytest.approx(np.mean(~broken))


# -- L-infinity robustness (norm="inf") ---------------------------------------------------------

def _exact_linf(Z, y, alpha, r):
    return minimize_robust_logistic_linf(Z, y, alpha, r, Z.shape[1] - 1, tol=EXACT_TOL).w


@pytest.mark.parametrize("r", [0.0, 0.1, 0.5])
def test_linf_solver_matches_bfgs_and_certifies(r):
    Z, y = _problem(200, 5, 1)
    res = minimize_robust_logistic_linf(Z, y, 0.01, r, 4, tol=1e-10)
    obj = _RobustLinfObjective(Z, y, 0.01, r, 4)
    g, err = obj.certificate(res.w)
    assert g + err <= 1e-10
    ref = minimize(lambda w: obj.value_and_grad(w)[0], np.zeros(5), jac=obj.grad,
                   method="BFGS", options={"gtol": 1e-12}).x
    assert np.linalg.norm(ref - res.w) < 1e-7
    # The Hessian (used by Newton) is the gradient's derivative.
    w, eye, h = res.w + 0.05, np.eye(5), 1e-6
    numeric = np.array([(obj.grad(w + h * eye[j]) - obj.grad(w - h * eye[j])) / (2 * h)
                        for j in range(5)])
    np.testing.assert_allclose(obj.hessian_at(w), numeric, atol=1e-6)
    np.testing.assert_allclose(obj.hessp_at(w)(np.ones(5)), obj.hessian_at(w).sum(axis=1),
                               atol=1e-12)


def test_linf_fallback_reaches_the_radius():
    Z, y = _problem(100, 4, 2)
    obj = _RobustLinfObjective(Z, y, 0.05, 0.2, 3)
    from dpsk._optimize._solver import _accelerated_gradient
    w, _ = _accelerated_gradient(obj, np.zeros(4), obj.gradient_bound_at_zero(), 1e-8)
    assert np.linalg.norm(w - _exact_linf(Z, y, 0.05, 0.2)) <= 1e-8 / 0.05


def test_linf_worst_case_margin_is_attained():
    """``y w.x - r ||w_feat||_1`` is the smallest margin over ``||e||_inf <= r``."""
    rng = np.random.default_rng(3)
    w, x, r = rng.normal(size=4), rng.normal(size=4), 0.3
    worst = w @ x - r * np.abs(w[:3]).sum()
    e = np.zeros(4)
    e[:3] = -r * np.sign(w[:3])
    assert np.isclose(w @ (x + e), worst)
    for _ in range(200):
        e = np.zeros(4)
        e[:3] = rng.uniform(-r, r, size=3)
        assert w @ (x + e) >= worst - 1e-12


@pytest.mark.parametrize("r", [0.0, 0.3, 1.5])
def test_linf_sensitivity_on_random_neighbours(r):
    ratios = random_neighbour_ratios(lambda Z, y: _exact_linf(Z, y, 0.05, r),
                                     robust_linf_sensitivity(40, 0.05, r, 3), seed=1)
    assert ratios.max() <= 1.0 + 1e-9


@pytest.mark.parametrize("r", [0.3, 1.5])
def test_linf_sensitivity_on_adversarial_rows(r):
    """Outliers along ``w`` and along ``sign(w)`` (the direction of the adversary's term)."""
    alpha, n, d = 0.05, 30, 4
    bound = robust_linf_sensitivity(n, alpha, r, d - 1)
    ratios = adversarial_ratios(lambda Z, y: _exact_linf(Z, y, alpha, r), bound, seed=7)
    Z, y = _problem(n, d, 7)
    w = _exact_linf(Z, y, alpha, r)
    for i in range(0, n, 3):
        Z2, y2 = Z.copy(), y.copy()
        Z2[i] = 0.0
        Z2[i, :d - 1] = np.sign(w[:d - 1]) / np.sqrt(d - 1)
        y2[i] = -1.0
        ratios = np.append(ratios, np.linalg.norm(_exact_linf(Z2, y2, alpha, r) - w) / bound)
    assert ratios.max() <= 1.0 + 1e-9
    assert ratios.max() > 0.05


def test_linf_sensitivity_grows_with_sqrt_k():
    assert robust_linf_sensitivity(10, 1.0, 0.1, 4) == pytest.approx(0.2)  # 1 + 0.2 < 2
    assert robust_linf_sensitivity(10, 1.0, 0.5, 100) == pytest.approx(0.6)  # 1 + 5


LINF_R = 1.5


def _linf_rounding():
    constants = robust_erm_module.RobustLinfConstants(LINF_R, D - 1)
    grid = release_grid(2.0 * constants.lipschitz / (N * ALPHA), D)
    return rounding_radius(grid, D)


def _linf_lipschitz():
    """Derived independently: (n alpha / 2) times max(2, 1 + r sqrt(k)) / (n alpha)."""
    return max(2.0, 1.0 + LINF_R * np.sqrt(D - 1)) / 2.0


def _linf_noise(delta, seed):
    Z, y = _problem(N, D, seed)
    exact = _exact_linf(Z, y, ALPHA, LINF_R)
    releases = np.array([
        private_robust_linf_erm(Z, y, LINF_R, D - 1, EPSILON, ALPHA,
                                NoiseSource.seeded([seed, k]), tol=TOL, delta=delta)
        for k in range(N_RELEASES)
    ])
    return releases - exact


@pytest.mark.parametrize("delta", [0.0, 1e-5])
def test_linf_noise_law(delta):
    noise = _linf_noise(delta, 51 if delta == 0 else 52)
    if delta == 0:
        check_gamma_noise(noise, output_perturbation_beta(
            EPSILON, N, ALPHA, _linf_lipschitz(), solver_tol=TOL, rounding=_linf_rounding()))
    else:
        sens = output_perturbation_sensitivity(N, ALPHA, _linf_lipschitz(), solver_tol=TOL,
                                               rounding=_linf_rounding())
        check_normal_noise(noise, analytic_gaussian_sigma(EPSILON, delta, sens))


@pytest.mark.slow
@pytest.mark.parametrize("mutation", ["shrink", "l2-constant"])
def test_linf_mutation_is_caught(mutation, monkeypatch):
    if mutation == "shrink":
        shrink_plan(monkeypatch)
    else:  # the plausible bug: the L2 model's 1 + r, without sqrt(k)
        monkeypatch.setattr(robust_erm_module.RobustLinfConstants, "lipschitz",
                            property(lambda self: 1.0 + self.radius / 2))
    with pytest.raises(AssertionError, match="calibrated law rejected"):
        test_linf_noise_law(0.0)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_linf_robust_accuracy_is_exact(n_classes):
    """Unclipped rows: the corner attack ``-radius sign(direction)`` breaks exactly the others."""
    X, y = _data(200, 2, n_classes)
    clf = DPRobustLogisticRegression(radius=0.1, norm="inf", epsilon=10.0, alpha=1e-2,
                                     classes=list(range(n_classes)), data_norm=10.0,
                                     accountant=BudgetAccountant(), random_state=0).fit(X, y)
    radius = 0.15
    W = np.atleast_2d(clf.coef_)
    broken = np.zeros(len(y), dtype=bool)
    for i in range(len(y)):
        for k in range(len(clf.classes_)):
            if W.shape[0] == 1:
                direction = W[0] * (1.0 if y[i] == clf.classes_[1] else -1.0)
            else:
                direction = W[y[i]] - W[k]
            broken[i] |= clf.predict((X[i] - radius * np.sign(direction))[None])[0] != y[i]
    assert robust_accuracy(clf, X, y, radius, norm="inf") == pytest.approx(np.mean(~broken))
    assert clf.robust_score(X, y) == robust_accuracy(clf, X, y, 0.1, norm="inf")


def test_linf_robust_accuracy_is_a_lower_bound_when_clipping():
    """Rows near the clipping sphere: every certified row survives random box attacks."""
    X, y = _data(200, 3)
    clf = DPRobustLogisticRegression(radius=0.1, norm="inf", epsilon=10.0, alpha=1e-2,
                                     classes=[0, 1], data_norm=0.6,
                                     accountant=BudgetAccountant(), random_state=0).fit(X, y)
    radius = 0.1
    rng = np.random.default_rng(0)
    attacks = np.vstack([rng.choice([-1.0, 1.0], size=(64, 3)), rng.uniform(-1, 1, (64, 3))])
    survived = np.array([np.all(clf.predict(X[i] + radius * attacks) == y[i])
                         for i in range(len(y))])
    assert robust_accuracy(clf, X, y, radius, norm="inf") <= survived.mean()


def test_linf_bad_norm_is_refused_free():
    X, y = _data()
    acc = BudgetAccountant()
    for bad in (1, "l1", 3.0):
        with pytest.raises(ValueError):
            DPRobustLogisticRegression(norm=bad, classes=[0, 1], accountant=acc).fit(X, y)
    assert acc.spends == []
    clf = DPRobustLogisticRegression(classes=[0, 1], accountant=acc, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="norm"):
        robust_accuracy(clf, X, y, 0.1, norm=1)


def test_linf_events_and_spend():
    check_events_and_spend(DPRobustLogisticRegression, radius=0.1, norm="inf")


@parametrize_with_checks([DPRobustLogisticRegression(norm="inf"),
                          DPRobustLogisticRegression(norm="inf", delta=1e-5)],
                         expected_failed_checks=lambda estimator: WEIGHT_XFAILS)
def test_linf_sklearn_compatible(estimator, check):
    check(estimator)
