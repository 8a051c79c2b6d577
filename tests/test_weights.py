"""Sample weights in [0, 1] and class weights (issue 26; docs/privacy.rst, "Weights").

The objective with weights is ``(1/n) sum_i s_i l_i + (alpha/2) ||w||^2`` with
the public ``n``; each weight is part of its row. These tests check:

* all-one weights give the bits of an unweighted fit; 0/1 weights equal
  dropping rows from the loss (same solved minimiser);
* neighbouring data sets whose changed row also changes its weight: the
  noiseless minimiser moves by at most ``2 L / (n alpha)``; objective
  perturbation's change of variables (``b`` and the Jacobian determinant) stays
  within the unweighted bounds;
* the noise law of weighted releases is the unweighted one (and 10% less noise
  is rejected by the same statistic);
* bad weights and bad ``class_weight`` are refused for free with messages that
  quote no value; class weights are normalised by their maximum;
* routing through ``PrivatePipeline`` and scikit-learn's ``Pipeline``.
"""

import warnings

import numpy as np
import pytest
from scipy import stats
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer
from test_noise_calibration import (
    EPSILON,
    EXACT_TOL,
    TOL,
    _objective_calibration,
    _rounding,
    check_gamma_law,
)

import dpsk.mechanisms._gradient as gradient_module
from dpsk import (
    BudgetAccountant,
    DPGridSearch,
    DPHuberSVM,
    DPKernelClassifier,
    DPLinearSVC,
    DPLogisticRegression,
    DPRobustLogisticRegression,
)
from dpsk._data._validation import class_weight_table
from dpsk._optimize._binary import minimize_regularized_loss
from dpsk._optimize._hinge_solver import minimize_hinge
from dpsk._optimize._losses import HuberLoss, LogisticLoss, MultinomialLoss
from dpsk._optimize._multinomial_solver import minimize_multinomial_loss
from dpsk._optimize._robust_solver import (
    minimize_robust_logistic,
    minimize_robust_logistic_linf,
)
from dpsk._optimize._solver import SolverError
from dpsk.mechanisms._beyond_erm import robust_linf_sensitivity, robust_sensitivity
from dpsk.mechanisms._erm import private_erm
from dpsk.mechanisms._gradient import noisy_gd_schedule
from dpsk.mechanisms._noise import output_perturbation_beta
from dpsk.mechanisms._random import NoiseSource
from dpsk.pipeline import make_private_pipeline

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _data(n=120, n_classes=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3))
    X /= np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1.0)
    score = X[:, 0] + 0.3 * rng.standard_normal(n)
    y = np.digitize(score, np.quantile(score, np.linspace(0, 1, n_classes + 1)[1:-1]))
    return X, y


def _rows(n, d, seed):
    """Design rows of norm <= 1 and +-1 labels."""
    rng = np.random.default_rng(seed)
    Z = rng.normal(size=(n, d))
    Z /= np.linalg.norm(Z, axis=1, keepdims=True) * rng.uniform(1.0, 2.0, size=(n, 1))
    y = np.where(Z[:, 0] + 0.5 * rng.normal(size=n) > 0, 1.0, -1.0)
    return Z, y


# Every mechanism of the ERM estimators, pure and Gaussian, binary/ovr/multinomial.
CONFIGS = {
    "logreg-objective": (lambda: DPLogisticRegression(alpha=0.1), 2),
    "logreg-output": (lambda: DPLogisticRegression(alpha=0.1, perturbation="output"), 2),
    "logreg-gauss-objective": (lambda: DPLogisticRegression(alpha=0.1, delta=1e-5), 2),
    "logreg-gauss-output": (
        lambda: DPLogisticRegression(alpha=0.1, perturbation="output", delta=1e-5), 2),
    "logreg-gradient": (
        lambda: DPLogisticRegression(alpha=0.1, perturbation="gradient", delta=1e-5), 2),
    "logreg-multinomial": (lambda: DPLogisticRegression(alpha=0.1), 3),
    "logreg-multinomial-output": (
        lambda: DPLogisticRegression(alpha=0.1, perturbation="output", delta=1e-5), 3),
    "logreg-multinomial-gradient": (
        lambda: DPLogisticRegression(alpha=0.1, perturbation="gradient", delta=1e-5), 3),
    "logreg-ovr": (lambda: DPLogisticRegression(alpha=0.1, multi_class="ovr"), 3),
    "huber-objective": (lambda: DPHuberSVM(alpha=0.1), 2),
    "huber-output": (lambda: DPHuberSVM(alpha=0.1, perturbation="output"), 2),
    "kernel": (lambda: DPKernelClassifier(n_components=10, alpha=0.1), 2),
    "kernel-multinomial": (lambda: DPKernelClassifier(n_components=10, alpha=0.1), 3),
    "robust-l2": (lambda: DPRobustLogisticRegression(alpha=0.1, radius=0.2), 2),
    "robust-linf-ovr": (
        lambda: DPRobustLogisticRegression(alpha=0.1, radius=0.1, norm="inf", delta=1e-5), 3),
    "svc": (lambda: DPLinearSVC(alpha=0.1), 2),
    "svc-gauss-ovr": (lambda: DPLinearSVC(alpha=0.1, delta=1e-5), 3),
}


def _fit(name, seed, **fit_params):
    make, n_classes = CONFIGS[name]
    X, y = _data(n_classes=n_classes)
    est = make().set_params(classes=list(range(n_classes)), random_state=seed,
                            accountant=BudgetAccountant())
    cw = fit_params.pop("class_weight", None)
    if cw is not None:
        est.set_params(class_weight=cw)
    est.fit(X, y, **fit_params)
    return est


def _bits(est):
    return est.coef_.tobytes() + est.intercept_.tobytes()


# -- all ones, 0/1 weights ---------------------------------------------------------------


@pytest.mark.parametrize("name", CONFIGS)
def test_all_one_weights_give_the_unweighted_bits(name):
    plain = _fit(name, 3)
    n = len(_data(n_classes=CONFIGS[name][1])[1])
    assert _bits(_fit(name, 3, sample_weight=np.ones(n))) == _bits(plain)
    assert _bits(_fit(name, 3, sample_weight=1.0)) == _bits(plain)
    # Equal class weights normalise to all ones.
    equal = {c: 2.5 for c in range(CONFIGS[name][1])}
    assert _bits(_fit(name, 3, class_weight=equal)) == _bits(plain)
    # Other weights change the release (same noise seed), unless the prior check released
    # the same prior model for both (weak models on these small data sets).
    half = _fit(name, 3, sample_weight=np.full(n, 0.5))
    assert _bits(half) != _bits(plain) or (half.prior_fallback_ and plain.prior_fallback_)


@pytest.mark.parametrize("loss", [LogisticLoss(), HuberLoss(0.5)], ids=repr)
@pytest.mark.parametrize("with_linear", [False, True])
def test_zero_one_weights_drop_rows_from_the_loss(loss, with_linear):
    # (1/n) sum_{kept} l + (lam/2)||w||^2 + b.w  =  (m/n) [(1/m) sum_{kept} l
    #   + (n lam / m)/2 ||w||^2 + (n/m) b.w]: the same minimiser.
    n, d, lam = 80, 4, 0.05
    Z, y = _rows(n, d, seed=1)
    keep = np.random.default_rng(2).uniform(size=n) < 0.6
    m = int(keep.sum())
    linear = np.random.default_rng(3).normal(size=d) * 0.1 if with_linear else None
    weighted = minimize_regularized_loss(loss, Z, y, lam, linear=linear, tol=EXACT_TOL,
                                         sample_weight=keep.astype(float)).w
    dropped = minimize_regularized_loss(
        loss, Z[keep], y[keep], n * lam / m, tol=EXACT_TOL,
        linear=None if linear is None else n * linear / m).w
    np.testing.assert_allclose(weighted, dropped, atol=1e-9)


@pytest.mark.parametrize("solver", [minimize_robust_logistic, minimize_robust_logistic_linf])
def test_zero_one_weights_drop_rows_robust(solver):
    n, d, lam, radius = 80, 4, 0.05, 0.2
    Z, y = _rows(n, d, seed=8)
    keep = np.random.default_rng(9).uniform(size=n) < 0.6
    m = int(keep.sum())
    weighted = solver(Z, y, lam, radius, tol=EXACT_TOL, sample_weight=keep.astype(float)).w
    dropped = solver(Z[keep], y[keep], n * lam / m, radius, tol=EXACT_TOL).w
    np.testing.assert_allclose(weighted, dropped, atol=1e-9)


def test_zero_one_weights_drop_rows_hinge():
    n, d, lam = 80, 4, 0.05
    Z, y = _rows(n, d, seed=10)
    keep = np.random.default_rng(11).uniform(size=n) < 0.6
    m = int(keep.sum())
    weighted = minimize_hinge(Z, y, lam, gap=1e-13, sample_weight=keep.astype(float))
    dropped = minimize_hinge(Z[keep], y[keep], n * lam / m, gap=1e-13)
    # Both within sqrt(2 gap / lam) of the one exact minimiser.
    np.testing.assert_allclose(weighted.w, dropped.w, atol=2 * np.sqrt(2e-13 / lam))


def test_zero_one_weights_drop_rows_multinomial():
    n, d, K, lam = 90, 3, 3, 0.05
    Z, _ = _rows(n, d, seed=4)
    labels = np.random.default_rng(5).integers(0, K, size=n)
    keep = np.random.default_rng(6).uniform(size=n) < 0.5
    m = int(keep.sum())
    weighted = minimize_multinomial_loss(Z, labels, K, lam, tol=EXACT_TOL,
                                         sample_weight=keep.astype(float)).w
    dropped = minimize_multinomial_loss(Z[keep], labels[keep], K, n * lam / m,
                                        tol=EXACT_TOL).w
    np.testing.assert_allclose(weighted, dropped, atol=1e-9)


def test_zero_one_weights_drop_rows_from_the_gradient():
    Z, y = _rows(50, 3, seed=7)
    keep = np.arange(50) % 3 != 0
    w = np.array([0.3, -0.2, 0.5])
    for loss, labels in ((LogisticLoss(), y), (MultinomialLoss(3), (np.arange(50) % 3))):
        point = w if loss.n_outputs == 1 else np.outer([1.0, -1.0, 0.5], w)
        weighted = loss.mean_gradient(Z, labels, point, keep.astype(float))
        dropped = loss.mean_gradient(Z[keep], labels[keep], point) * keep.sum() / 50
        np.testing.assert_allclose(weighted, dropped, atol=1e-14)


def test_all_zero_weights_release_the_noise_only_model_and_charge():
    acc = BudgetAccountant()
    X, y = _data()
    est = DPLogisticRegression(classes=[0, 1], alpha=0.1, accountant=acc, random_state=0)
    est.fit(X, y, sample_weight=np.zeros(len(y)))
    assert acc.total() == (1.0, 0.0)
    # The weighted objective is (alpha/2)||w||^2 + b.w/n: w = -b/(n Lambda), whatever X, y.
    other = DPLogisticRegression(classes=[0, 1], alpha=0.1, random_state=0,
                                 accountant=BudgetAccountant())
    X2, y2 = _data(seed=9)
    other.fit(X2, y2, sample_weight=np.zeros(len(y2)))
    np.testing.assert_array_equal(est.coef_, other.coef_)


# -- sensitivity on neighbours that change a row and its weight ----------------------------


def _weighted_neighbours(n, d, seed, n_pairs):
    """Pairs of (Z, y, s) that differ in one row, its label and its weight."""
    rng = np.random.default_rng(seed)
    Z, y = _rows(n, d, seed)
    s = rng.uniform(size=n)
    s[rng.uniform(size=n) < 0.2] = 0.0
    for _ in range(n_pairs):
        i = rng.integers(n)
        Z2, y2, s2 = Z.copy(), y.copy(), s.copy()
        direction = rng.normal(size=d)
        Z2[i] = direction / np.linalg.norm(direction) * rng.uniform(0.5, 1.0)
        y2[i] = rng.choice([-1.0, 1.0])
        s2[i] = rng.choice([0.0, 1.0, rng.uniform()])
        yield (Z, y, s), (Z2, y2, s2)


@pytest.mark.parametrize("loss", [LogisticLoss(), HuberLoss(0.5)], ids=repr)
def test_weighted_minimiser_moves_at_most_2_over_n_alpha(loss):
    n, d, alpha = 20, 3, 0.05
    bound = 2.0 * loss.lipschitz / (n * alpha)
    worst = 0.0
    for (Z, y, s), (Z2, y2, s2) in _weighted_neighbours(n, d, 11, 30):
        w1 = minimize_regularized_loss(loss, Z, y, alpha, tol=EXACT_TOL, sample_weight=s).w
        w2 = minimize_regularized_loss(loss, Z2, y2, alpha, tol=EXACT_TOL, sample_weight=s2).w
        worst = max(worst, np.linalg.norm(w1 - w2))
    assert worst <= bound * (1 + 1e-9)
    assert worst > 0.05 * bound  # the pairs do move the minimiser


@pytest.mark.parametrize("norm", [2, "inf"])
def test_weighted_robust_minimiser_moves_at_most_its_sensitivity(norm):
    n, d, alpha, radius = 20, 3, 0.05, 0.3
    if norm == 2:
        solver, bound = minimize_robust_logistic, robust_sensitivity(n, alpha, radius)
    else:
        solver = minimize_robust_logistic_linf
        bound = robust_linf_sensitivity(n, alpha, radius, d)
    worst = 0.0
    for (Z, y, s), (Z2, y2, s2) in _weighted_neighbours(n, d, 14, 20):
        w1 = solver(Z, y, alpha, radius, tol=EXACT_TOL, sample_weight=s).w
        w2 = solver(Z2, y2, alpha, radius, tol=EXACT_TOL, sample_weight=s2).w
        worst = max(worst, np.linalg.norm(w1 - w2))
    assert 0.01 * bound < worst <= bound * (1 + 1e-9)  # the pairs do move it


def test_weighted_hinge_minimiser_moves_at_most_2_over_n_alpha():
    n, d, alpha = 20, 3, 0.05
    bound = 2.0 / (n * alpha)
    distance = 2 * np.sqrt(2 * 1e-13 / alpha)  # two solver points, each this close
    worst = 0.0
    for (Z, y, s), (Z2, y2, s2) in _weighted_neighbours(n, d, 15, 20):
        w1 = minimize_hinge(Z, y, alpha, gap=1e-13, sample_weight=s).w
        w2 = minimize_hinge(Z2, y2, alpha, gap=1e-13, sample_weight=s2).w
        worst = max(worst, np.linalg.norm(w1 - w2))
    assert 0.01 * bound < worst <= bound + distance


def test_weighted_multinomial_minimiser_moves_at_most_2_sqrt2_over_n_alpha():
    n, d, K, alpha = 20, 3, 3, 0.05
    loss = MultinomialLoss(K)
    bound = 2.0 * loss.lipschitz / (n * alpha)
    rng = np.random.default_rng(12)
    for (Z, _, s), (Z2, _, s2) in _weighted_neighbours(n, d, 12, 20):
        labels = rng.integers(0, K, size=n)
        labels2 = labels.copy()
        changed = np.flatnonzero(np.any(Z != Z2, axis=1))
        labels2[changed] = (labels[changed] + 1) % K
        W1 = minimize_multinomial_loss(Z, labels, K, alpha, tol=EXACT_TOL, sample_weight=s).w
        W2 = minimize_multinomial_loss(Z2, labels2, K, alpha, tol=EXACT_TOL,
                                       sample_weight=s2).w
        assert np.linalg.norm(W1 - W2) <= bound * (1 + 1e-9)


def _b_and_hessian(loss, Z, y, s, lam, w):
    """Objective perturbation's inverse map at output ``w``: ``b`` and ``d b / d w``.

    ``b = -(sum_i s_i y_i l'(y_i w.z_i) z_i + n lam w)`` makes ``w`` the minimiser;
    its Jacobian is ``-(sum_i s_i l''_i z_i z_i^T + n lam I)``.
    """
    n = len(y)
    margins = y * (Z @ w)
    b = -(Z.T @ (s * y * loss.derivative(margins)) + n * lam * w)
    H = (Z * (s * loss.second_derivative(margins))[:, None]).T @ Z + n * lam * np.eye(len(w))
    return b, H


def test_objective_perturbation_change_of_variables_bounds_hold_with_weights():
    # The proof (docs/privacy.rst, "Weights"): ||b - b'|| <= 2 lipschitz and the
    # Jacobian determinants differ by a factor at most 1 + c/(n lam) (rank-one rows).
    loss, n, d, lam = LogisticLoss(), 15, 3, 0.02
    rng = np.random.default_rng(13)
    worst_ratio = 0.0
    for (Z, y, s), (Z2, y2, s2) in _weighted_neighbours(n, d, 13, 40):
        w = rng.normal(size=d) * 3.0
        b1, H1 = _b_and_hessian(loss, Z, y, s, lam, w)
        b2, H2 = _b_and_hessian(loss, Z2, y2, s2, lam, w)
        assert np.linalg.norm(b1 - b2) <= 2.0 * loss.lipschitz * (1 + 1e-12)
        ratio = abs(np.log(np.linalg.det(H1) / np.linalg.det(H2)))
        worst_ratio = max(worst_ratio, ratio)
    assert worst_ratio <= np.log1p(loss.curvature / (n * lam)) * (1 + 1e-9)


# -- the noise law is the unweighted one --------------------------------------------------

LAW_N, LAW_D, LAW_ALPHA, LAW_RELEASES = 30, 3, 0.1, 1500


def _law_problem(seed):
    Z, y = _rows(LAW_N, LAW_D, seed)
    s = np.random.default_rng(seed + 1).uniform(size=LAW_N)
    s[:5] = 0.0
    return Z, y, s


def test_weighted_output_perturbation_noise_law():
    loss = LogisticLoss()
    Z, y, s = _law_problem(21)
    exact = minimize_regularized_loss(loss, Z, y, LAW_ALPHA, tol=EXACT_TOL, sample_weight=s).w
    releases = np.array([
        private_erm(Z, y, loss, EPSILON, LAW_ALPHA, "output", NoiseSource.seeded([21, k]),
                    tol=TOL, sample_weight=s)
        for k in range(LAW_RELEASES)
    ])
    beta = output_perturbation_beta(EPSILON, LAW_N, LAW_ALPHA, loss.lipschitz, solver_tol=TOL,
                                    rounding=_rounding(LAW_N, LAW_ALPHA, LAW_D))
    # Calibrated law passes; the law of 10% less noise is rejected.
    check_gamma_law(np.linalg.norm(releases - exact, axis=1), LAW_D, beta)


def test_weighted_objective_perturbation_noise_law():
    loss = LogisticLoss()
    Z, y, s = _law_problem(22)
    calibration = _objective_calibration(loss, LAW_N, LAW_ALPHA)
    lam = LAW_ALPHA + calibration.extra_alpha
    norms = np.empty(LAW_RELEASES)
    for k in range(LAW_RELEASES):
        w = private_erm(Z, y, loss, EPSILON, LAW_ALPHA, "objective",
                        NoiseSource.seeded([22, k]), tol=TOL, sample_weight=s)
        norms[k] = np.linalg.norm(_b_and_hessian(loss, Z, y, s, lam, w)[0])
    check_gamma_law(norms, LAW_D, calibration.beta)


def test_weighted_gradient_descent_noise_law():
    loss, alpha, eps, delta = LogisticLoss(), 0.01, 1.0, 1e-6
    Z, y = _rows(200, 8, seed=23)
    s = np.random.default_rng(24).uniform(size=200)
    plan = noisy_gd_schedule(*Z.shape, alpha, loss, eps, delta)
    draws = []
    for seed in range(60):
        record = []
        gradient_module._run(Z, y, loss, eps, delta, alpha, NoiseSource.seeded(seed), 1,
                             record=record, sample_weight=s)
        for w, released in record:
            exact = (s * loss.derivative(y * (Z @ w)) * y) @ Z / len(y)
            draws.append(released - exact)
    draws = np.concatenate(draws)
    assert draws.size >= 6000
    assert stats.kstest(draws, stats.norm(scale=plan.sigma).cdf).pvalue > 1e-3
    assert stats.kstest(draws, stats.norm(scale=0.9 * plan.sigma).cdf).pvalue < 1e-3


# -- refusals: free, and quoting nothing --------------------------------------------------

BAD_WEIGHTS = {
    "negative": lambda n: np.r_[-0.5, np.ones(n - 1)],
    "above-one": lambda n: np.r_[1.7, np.ones(n - 1)],
    "nan": lambda n: np.r_[np.nan, np.ones(n - 1)],
    "inf": lambda n: np.r_[np.inf, np.ones(n - 1)],
    "short": lambda n: np.full(n - 1, 0.5),
    "two-d": lambda n: np.full((n, 1), 0.5),
    "strings": lambda n: np.array(["0.5"] * n),
    "scalar-above-one": lambda n: 3.25,
}


@pytest.mark.parametrize("kind", BAD_WEIGHTS)
@pytest.mark.parametrize("make", [
    lambda acc: DPLogisticRegression(classes=[0, 1], accountant=acc),
    lambda acc: DPHuberSVM(classes=[0, 1], accountant=acc, perturbation="output"),
    lambda acc: DPKernelClassifier(classes=[0, 1], accountant=acc, n_components=10),
], ids=["logistic", "huber", "kernel"])
def test_bad_weights_are_refused_for_free_without_quoting(kind, make):
    acc = BudgetAccountant()
    X, y = _data()
    weights = BAD_WEIGHTS[kind](len(y))
    with pytest.raises(ValueError) as info:
        make(acc).fit(X, y, sample_weight=weights)
    assert acc.total() == (0.0, 0.0) and acc.spends == []
    message = str(info.value)
    assert "Nothing was spent" in message
    for quoted in ("-0.5", "1.7", "3.25", str(len(y)), str(len(y) - 1)):
        assert quoted not in message, (kind, quoted)
    # One fixed text for every kind of bad weights: it cannot depend on them.
    with pytest.raises(ValueError) as other:
        make(acc).fit(X, y, sample_weight=BAD_WEIGHTS["negative"](len(y)))
    assert str(other.value) == message


def test_balanced_class_weight_is_refused_with_its_reason():
    acc = BudgetAccountant()
    X, y = _data()
    with pytest.raises(ValueError, match="counts are private") as info:
        DPLogisticRegression(classes=[0, 1], class_weight="balanced",
                             accountant=acc).fit(X, y)
    assert "prevalence" in str(info.value)
    assert acc.total() == (0.0, 0.0)


@pytest.mark.parametrize("class_weight", [{2: 1.0}, {"0": 1.0}, {0: 0.0}, {0: -1.0},
                                          {0: float("nan")}, {1: float("inf")}])
def test_bad_class_weight_is_refused_for_free(class_weight):
    acc = BudgetAccountant()
    X, y = _data()
    with pytest.raises(ValueError, match="Nothing was spent"):
        DPLogisticRegression(classes=[0, 1], class_weight=class_weight,
                             accountant=acc).fit(X, y)
    assert acc.total() == (0.0, 0.0)


def test_class_weight_is_normalised_by_its_maximum():
    np.testing.assert_array_equal(class_weight_table({0: 0.05, 1: 0.95}, np.array([0, 1])),
                                  [0.05 / 0.95, 1.0])
    # A missing class gets 1 before normalising (scikit-learn's convention).
    np.testing.assert_array_equal(class_weight_table({"b": 4.0}, np.array(["a", "b", "c"])),
                                  [0.25, 1.0, 0.25])
    np.testing.assert_array_equal(class_weight_table({0: 0.5}, np.array([0, 1])), [0.5, 1.0])
    assert class_weight_table(None, np.array([0, 1])) is None


def test_class_weight_multiplies_sample_weight():
    X, y = _data()
    s = np.random.default_rng(0).uniform(size=len(y))
    table = np.array([0.25, 1.0])
    by_class = _fit("logreg-objective", 5, class_weight={0: 1.0, 1: 4.0}, sample_weight=s)
    by_rows = _fit("logreg-objective", 5, sample_weight=s * table[y])
    assert _bits(by_class) == _bits(by_rows)


def test_weights_leave_no_trace_in_the_fitted_model():
    X, y = _data()
    est = _fit("logreg-objective", 1, class_weight={0: 0.1},
               sample_weight=np.random.default_rng(1).uniform(size=len(y)))
    plain = _fit("logreg-objective", 1)
    assert set(vars(est)) == set(vars(plain))
    assert est.get_params()["class_weight"] == {0: 0.1}  # the parameter, as given


def test_dask_input_refuses_weights_for_free():
    da = pytest.importorskip("dask.array")
    acc = BudgetAccountant()
    X, y = _data()
    est = DPLogisticRegression(classes=[0, 1], accountant=acc)
    with pytest.raises(ValueError, match="not supported with Dask"):
        est.fit(da.from_array(X, chunks=40), y, sample_weight=np.ones(len(y)) * 0.5)
    with pytest.raises(ValueError, match="not supported with Dask"):
        est.set_params(class_weight={0: 0.5}).fit(da.from_array(X, chunks=40), y)
    assert acc.total() == (0.0, 0.0)


def test_solvers_refuse_weights_outside_the_domain():
    Z, y = _rows(10, 2, 0)
    with pytest.raises(SolverError, match="one weight in"):
        minimize_regularized_loss(LogisticLoss(), Z, y, 0.1, sample_weight=np.full(10, 2.0))
    with pytest.raises(SolverError, match="one weight in"):
        minimize_multinomial_loss(Z, np.zeros(10, dtype=int), 2, 0.1,
                                  sample_weight=np.full(9, 0.5))
    with pytest.raises(ValueError, match="one weight in"):
        private_erm(Z, y, LogisticLoss(), 1.0, 0.1, "output", NoiseSource.seeded(0),
                    sample_weight=np.full(10, -1.0))


# -- routing ------------------------------------------------------------------------------


def test_private_pipeline_routes_sample_weight_to_the_private_step():
    X, y = _data()
    s = np.random.default_rng(2).uniform(size=len(y))
    direct = _fit("logreg-objective", 4, sample_weight=s)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pipe = make_private_pipeline(
            FunctionTransformer(),
            DPLogisticRegression(alpha=0.1, classes=[0, 1], random_state=4,
                                 accountant=BudgetAccountant()))
        pipe.fit(X, y, sample_weight=s)
        assert _bits(pipe[-1]) == _bits(direct)
        # scikit-learn's own spelling works too.
        plain = make_pipeline(
            FunctionTransformer(),
            DPLogisticRegression(alpha=0.1, classes=[0, 1], random_state=4,
                                 accountant=BudgetAccountant()))
        plain.fit(X, y, dplogisticregression__sample_weight=s)
        assert _bits(plain[-1]) == _bits(direct)


SEARCHES = {
    "disjoint": dict(method="disjoint"),
    "disjoint-refit": dict(method="disjoint", refit=True),
    "random-stopping": dict(method="random-stopping", stop_probability=0.5),
    "repeat": dict(method="repeat", delta=1e-5),
    "safe": dict(method="safe", selection_share=0.3),
}


def _search(method, acc, pipeline=False, **grid):
    inner = DPLogisticRegression(classes=[0, 1])
    if pipeline:
        inner = make_pipeline(FunctionTransformer(), inner)
    key = "dplogisticregression__alpha" if pipeline else "alpha"
    return DPGridSearch(inner, grid or {key: [0.01, 0.1]}, epsilon=1.0, accountant=acc,
                        random_state=0, **SEARCHES[method])


@pytest.mark.parametrize("pipeline", [False, True])
@pytest.mark.parametrize("method", SEARCHES)
def test_grid_search_passes_weights_split_with_the_rows(method, pipeline):
    X, y = _data(n=200)
    plain = _search(method, BudgetAccountant(), pipeline).fit(X, y)
    ones = _search(method, BudgetAccountant(), pipeline).fit(X, y, sample_weight=np.ones(200))
    assert _bits(ones.best_estimator_[-1] if pipeline else ones.best_estimator_) == _bits(
        plain.best_estimator_[-1] if pipeline else plain.best_estimator_)
    acc = BudgetAccountant()
    s = np.random.default_rng(3).uniform(size=200)
    weighted = _search(method, acc, pipeline).fit(X, y, sample_weight=s)
    final = weighted.best_estimator_[-1] if pipeline else weighted.best_estimator_
    assert _bits(final) != _bits(plain.best_estimator_[-1] if pipeline
                                 else plain.best_estimator_)
    assert acc.total() == plain.privacy_spent_


def test_grid_search_weights_reach_each_part(monkeypatch):
    # Each candidate's fit gets exactly the weights of its own rows.
    import dpsk.model_selection._search as search_module

    X, y = _data(n=90)
    s = np.arange(90) / 100.0
    seen = []
    original = search_module._fit_and_count

    def spy(candidate, X_train, y_train, X_hold, y_hold, fit_params=None):
        seen.append((X_train.copy(), fit_params["sample_weight"].copy()))
        return original(candidate, X_train, y_train, X_hold, y_hold, fit_params)

    monkeypatch.setattr(search_module, "_fit_and_count", spy)
    search = _search("disjoint", BudgetAccountant())
    search.n_jobs = None
    search.fit(X, y, sample_weight=s)
    assert len(seen) == 2
    for X_part, w_part in seen:
        rows = [int(np.flatnonzero(np.all(X == x, axis=1))[0]) for x in X_part]
        np.testing.assert_array_equal(w_part, s[rows])


def test_grid_search_refuses_weights_it_cannot_pass_for_free():
    from dpsk import DPTiltedLogisticRegression

    acc = BudgetAccountant()
    X, y = _data()
    with pytest.raises(ValueError, match="Nothing was spent"):
        _search("disjoint", acc).fit(X, y, sample_weight=np.full(len(y), 2.0))
    tilted = DPGridSearch(DPTiltedLogisticRegression(classes=[0, 1]), {"alpha": [0.01, 0.1]},
                          accountant=acc)
    with pytest.raises(TypeError, match="takes no weights"):
        tilted.fit(X, y, sample_weight=np.ones(len(y)))
    assert acc.total() == (0.0, 0.0)


def test_grid_search_over_class_weight():
    acc = BudgetAccountant()
    X, y = _data()
    search = _search("disjoint", acc, class_weight=[None, {0: 0.2}])
    search.fit(X, y)
    assert acc.total()[0] == pytest.approx(1.0)


# -- class_weight without declared classes (issue 34, finding 2) ---------------------------
@pytest.mark.parametrize("make", [
    lambda **kw: DPLogisticRegression(**kw),
    lambda **kw: DPHuberSVM(**kw),
    lambda **kw: DPLinearSVC(**kw),
    lambda **kw: DPRobustLogisticRegression(**kw),
    lambda **kw: DPKernelClassifier(n_components=8, **kw),
    lambda **kw: DPGridSearch(DPLogisticRegression(**kw), {"alpha": [0.1, 1.0]}),
], ids=["logistic", "huber", "svc", "robust", "kernel", "search"])
def test_class_weight_without_declared_classes_is_refused_whatever_the_labels(make):
    # With classes=None, a key missing from y was refused for free and a key present
    # fitted and was charged: a noise-free bit about the data set. Now every dict is
    # refused the same way, before the labels are read.
    rng = np.random.default_rng(0)
    X = rng.uniform(-0.5, 0.5, size=(60, 2))
    outcomes = set()
    for labels in ([0, 1], [0, 2], [0, 1, 2]):
        y = np.resize(labels, 60)
        acc = BudgetAccountant()
        estimator = make(class_weight={2: 0.5})
        estimator.set_params(accountant=acc)
        with pytest.raises(ValueError, match="class_weight needs declared classes") as info:
            estimator.fit(X, y)
        assert acc.events == []
        outcomes.add(str(info.value))
    assert len(outcomes) == 1
    # Declared classes: the same weights fit.
    acc = BudgetAccountant()
    DPLogisticRegression(classes=[0, 1, 2], class_weight={2: 0.5}, accountant=acc).fit(
        X, np.resize([0, 1, 2], 60))
    assert len(acc.events) == 1
