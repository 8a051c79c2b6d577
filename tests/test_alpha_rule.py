"""alpha="auto": the alpha rule (dpsk.mechanisms._alpha) and its use by every estimator."""

import math
import pickle
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.utils._param_validation import InvalidParameterError

import dpsk.mechanisms._erm as erm_module
from dpsk import (
    BudgetAccountant,
    DPHuberSVM,
    DPLogisticRegression,
    DPRobustLogisticRegression,
    DPTiltedLogisticRegression,
)
from dpsk._optimize._losses import HuberLoss, LogisticLoss, MultinomialLoss
from dpsk.kernel import DPKernelClassifier
from dpsk.mechanisms._alpha import (
    ALPHA_RANGE,
    PRIOR_EXPONENT,
    PRIOR_NORM,
    auto_alpha,
    excess_risk_bound,
    resolve_alpha,
)
from dpsk.mechanisms._beyond_erm import RobustLogisticConstants, TiltedLogisticConstants
from dpsk.mechanisms._gradient import noisy_gd_schedule
from dpsk.mechanisms._noise import ObjectiveCalibration

ESTIMATORS = [DPLogisticRegression, DPHuberSVM, DPRobustLogisticRegression,
              DPTiltedLogisticRegression, DPKernelClassifier]
MECHANISMS = [("objective", 0.0), ("objective", 1e-6), ("output", 0.0), ("output", 1e-6),
              ("gradient", 1e-6)]


def _data(n=300, d=4, n_classes=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, d)) / math.sqrt(d)
    y = np.digitize(X[:, 0], np.linspace(-0.3, 0.3, n_classes - 1)) if n_classes > 2 \
        else (X[:, 0] + 0.1 * rng.normal(size=n) > 0).astype(int)
    return X, y


def _model_epsilon(model, n, d, loss, n_classes=2, epsilon=1.0, delta=0.0):
    """The epsilon the rule sees: the whole budget, less the class counts' share."""
    budget = model._prior_budget(n, d, loss, n_classes, epsilon, delta)
    return epsilon if budget is None else budget.model_epsilon


def _fit(estimator, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return estimator.set_params(accountant=BudgetAccountant()).fit(X, y)


# -- the rule --------------------------------------------------------------------------


@pytest.mark.parametrize("perturbation, delta", MECHANISMS)
def test_rule_minimises_its_bound(perturbation, delta):
    kwargs = dict(loss=LogisticLoss(), perturbation=perturbation)
    alpha = auto_alpha(5000, 21, 0.5, delta, **kwargs)
    assert ALPHA_RANGE[0] <= alpha <= ALPHA_RANGE[1]
    best = excess_risk_bound(alpha, 5000, 21, 0.5, delta, **kwargs)
    for other in np.logspace(-8, 1, 91):
        assert best <= excess_risk_bound(other, 5000, 21, 0.5, delta, **kwargs) * (1 + 1e-6)


@pytest.mark.parametrize("perturbation, delta", MECHANISMS)
def test_rule_shrinks_with_more_rows_and_more_budget(perturbation, delta):
    def rule(n, epsilon):
        return auto_alpha(n, 11, epsilon, delta, loss=LogisticLoss(), perturbation=perturbation)

    def shrinks(*alphas):
        # Noisy GD: where the step cap binds, its bound only grows with alpha (the bias)
        # and the rule returns the smallest alpha searched; strictly smaller elsewhere.
        floor = ALPHA_RANGE[0] * (1 + 1e-9) if perturbation == "gradient" else 0.0
        return all(a < b or b <= floor for a, b in zip(alphas, alphas[1:]))

    assert shrinks(rule(100_000, 1.0), rule(10_000, 1.0), rule(1_000, 1.0))
    assert shrinks(rule(10_000, 2.0), rule(10_000, 0.5), rule(10_000, 0.1))


def test_pure_objective_rule_has_the_closed_form_shape():
    # Without the Delta branch the bound is 2 s (s + 1) / (eps'^2 n^2 L) + L r^2 s^p / 2,
    # whose minimiser is 2 sqrt(s (s + 1)) / (eps' n r s^(p/2)): about 2 s^(1 - p/2) /
    # (r eps n), once eps' barely depends on alpha (c / (n alpha) small: large s).
    n, d, epsilon = 100_000, 2001, 1.0
    alpha = auto_alpha(n, d, epsilon, loss=LogisticLoss(), perturbation="objective")
    eps_prime = 0.99 * epsilon - math.log1p(2 * 0.25 / (n * alpha) + (0.25 / (n * alpha))**2)
    closed = 2 * math.sqrt(d * (d + 1)) / (eps_prime * n * PRIOR_NORM["objective"]
                                            * d ** (PRIOR_EXPONENT["objective"] / 2))
    # The solver-residual term (ignored by the closed form) moves it up by a few percent.
    assert closed <= alpha <= 1.05 * closed


def test_prior_grows_with_the_width_as_calibrated():
    # The bias term is Lambda r^2 size^p / 2, p from PRIOR_EXPONENT: doubling the width at
    # fixed Lambda multiplies it by 2^p, whatever the noise term does.
    kwargs = dict(loss=LogisticLoss(), perturbation="output", tol=1e-10)
    for perturbation in ("objective", "output", "gradient"):
        kwargs["perturbation"] = perturbation
        r, p = PRIOR_NORM[perturbation], PRIOR_EXPONENT[perturbation]
        for size in (10, 200):
            without = excess_risk_bound(1e-3, 5000, size, 1.0, 1e-6, prior_norm=0.0, **kwargs)
            bound = excess_risk_bound(1e-3, 5000, size, 1.0, 1e-6, **kwargs)
            strength = bound - without
            assert strength > 0
            if perturbation == "gradient":
                # The direct bound reads the prior twice: the bias alpha ||w0||^2 / 2 and
                # the optimisation error ||w0||^2 / (2 eta T) of T steps from 0.
                schedule = noisy_gd_schedule(5000, size, 1e-3, LogisticLoss(), 1.0, 1e-6)
                optimisation = 1.0 / (2.0 * schedule.step_size * schedule.n_steps)
                assert strength == pytest.approx((0.5 * 1e-3 + optimisation) * r**2 * size**p)
        assert 0 < p <= 1


def test_prior_exponent_moves_the_rule_the_right_way():
    # A prior that grows more slowly with the width regularises wide designs more.
    def rule(d, p):
        return auto_alpha(20_000, d, 1.0, loss=LogisticLoss(), perturbation="objective",
                          prior_norm=2.0, prior_exponent=p)

    assert rule(201, 0.25) > 4 * rule(201, 1.0)
    # At width 2 the two priors differ by 2^(3/4) only: alpha by its square root.
    assert rule(2, 0.25) == pytest.approx(2 ** 0.375 * rule(2, 1.0), rel=0.05)


def test_rule_reads_the_mechanisms_calibration(monkeypatch):
    # Half the noise rate (twice the noise) from the calibration must raise alpha:
    # the rule calls the calibration functions instead of re-deriving them.
    before = auto_alpha(10_000, 11, 1.0, loss=LogisticLoss(), perturbation="objective")
    original = erm_module.objective_perturbation_calibration

    def noisier(*args, **kwargs):
        c = original(*args, **kwargs)
        return ObjectiveCalibration(c.beta / 2, c.extra_alpha, c.epsilon_prime)

    monkeypatch.setattr(erm_module, "objective_perturbation_calibration", noisier)
    after = auto_alpha(10_000, 11, 1.0, loss=LogisticLoss(), perturbation="objective")
    assert 1.5 * before < after < 2 * before


def test_rule_does_not_fight_objective_perturbations_floor():
    # Tiny n eps: the mechanism's own extra regularisation takes over; every alpha below
    # the floor gives the same solved objective, so the rule returns the largest of them
    # (up to the grid) or one above, never a much smaller one.
    n, epsilon, c = 200, 0.05, 0.25
    floor = c / (n * math.expm1(epsilon / 4))
    alpha = auto_alpha(n, 3, epsilon, loss=LogisticLoss(), perturbation="objective")
    assert alpha >= floor / 2


def test_resolve_alpha_keeps_numbers_and_refuses_other_strings():
    assert resolve_alpha(0.25) == 0.25
    with pytest.raises(ValueError, match="'auto'"):
        resolve_alpha("big")
    with pytest.raises(ValueError):
        auto_alpha(100, 3, 1.0, loss=LogisticLoss(), perturbation="laplace")


# -- the estimators --------------------------------------------------------------------


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_auto_is_the_default_and_alpha_is_recorded(cls):
    assert cls().get_params()["alpha"] == "auto"
    X, y = _data()
    model = _fit(cls(classes=[0, 1], random_state=0), X, y)
    assert model.get_params()["alpha"] == "auto"
    assert isinstance(model.alpha_, float) and model.alpha_ > 0
    assert clone(model).get_params()["alpha"] == "auto"
    assert pickle.loads(pickle.dumps(model)).alpha_ == model.alpha_


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_numeric_alpha_is_used_exactly(cls):
    X, y = _data()
    auto = _fit(cls(classes=[0, 1], random_state=3), X, y)
    fixed = _fit(cls(classes=[0, 1], random_state=3, alpha=auto.alpha_), X, y)
    assert fixed.alpha_ == auto.alpha_
    np.testing.assert_array_equal(fixed.coef_, auto.coef_)
    np.testing.assert_array_equal(fixed.intercept_, auto.intercept_)
    assert _fit(cls(classes=[0, 1], alpha=0.3), X, y).alpha_ == 0.3


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_bad_alpha_is_refused_before_spending(cls):
    X, y = _data()
    accountant = BudgetAccountant()
    with pytest.raises(InvalidParameterError):
        cls(alpha="large", classes=[0, 1], accountant=accountant).fit(X, y)
    assert accountant.spends == []


@pytest.mark.parametrize("perturbation, delta", MECHANISMS)
def test_alpha_depends_on_shapes_not_values(perturbation, delta):
    X1, y1 = _data(seed=1)
    X2, y2 = _data(seed=2)
    X2[0] *= 1e6  # a row far outside the bound: clipped, must not move alpha
    y2 = 1 - y2
    models = [_fit(DPLogisticRegression(classes=[0, 1], perturbation=perturbation,
                                        delta=delta), X, y)
              for X, y in ((X1, y1), (X2, y2))]
    assert models[0].alpha_ == models[1].alpha_
    # With the class prior (the default) the rule sees the model's share of epsilon, a
    # public function of the shape too; without it, the whole epsilon.
    epsilon = _model_epsilon(models[0], 300, 5, LogisticLoss(), delta=delta)
    assert epsilon < 1.0
    expected = auto_alpha(300, 5, epsilon, delta, loss=LogisticLoss(), perturbation=perturbation)
    assert models[0].alpha_ == expected
    bare = _fit(DPLogisticRegression(classes=[0, 1], perturbation=perturbation, delta=delta,
                                     class_prior=None), X1, y1)
    assert bare.alpha_ == auto_alpha(300, 5, 1.0, delta, loss=LogisticLoss(),
                                     perturbation=perturbation)


@pytest.mark.parametrize("multi_class, n_problems, loss", [
    ("ovr", 3, LogisticLoss()), ("multinomial", 1, MultinomialLoss(3))])
def test_multiclass_rule_counts_the_classes(multi_class, n_problems, loss):
    X, y = _data(n_classes=3)
    model = _fit(DPLogisticRegression(classes=[0, 1, 2], multi_class=multi_class), X, y)
    epsilon = _model_epsilon(model, 300, 5, loss, n_classes=3)
    assert model.alpha_ == auto_alpha(300, 5, epsilon, loss=loss, perturbation="objective",
                                      n_problems=n_problems)


def test_huber_uses_its_curvature():
    X, y = _data()
    model = _fit(DPHuberSVM(classes=[0, 1], h=0.1), X, y)
    epsilon = _model_epsilon(model, 300, 5, HuberLoss(0.1))
    assert model.alpha_ == auto_alpha(300, 5, epsilon, loss=HuberLoss(0.1),
                                      perturbation="objective")


def test_kernel_rule_counts_random_features():
    X, y = _data()
    model = _fit(DPKernelClassifier(classes=[0, 1], n_components=40, delta=1e-6,
                                    perturbation="output"), X, y)
    epsilon = _model_epsilon(model, 300, 41, LogisticLoss(), delta=1e-6)
    assert model.alpha_ == auto_alpha(300, 41, epsilon, 1e-6, loss=LogisticLoss(),
                                      perturbation="output")


def test_robust_and_tilted_use_their_constants():
    X, y = _data()
    robust = _fit(DPRobustLogisticRegression(classes=[0, 1], radius=0.2), X, y)
    radius = 0.2 / math.sqrt(2.0)
    assert robust.alpha_ == auto_alpha(300, 5, 1.0, loss=RobustLogisticConstants(radius),
                                       perturbation="output")
    tilted = _fit(DPTiltedLogisticRegression(classes=[0, 1], tilt=0.5), X, y)
    expected = auto_alpha(300, 5, 1.0, loss=TiltedLogisticConstants(0.5, 300, 1.0),
                          perturbation="output",
                          loss_at=lambda a: TiltedLogisticConstants(0.5, 300, a))
    assert tilted.alpha_ == expected
    # The tilted sensitivity stays near 2 / alpha until n >> e^(tL): the rule must
    # regularise more than for plain ERM on the same shape.
    assert tilted.alpha_ > auto_alpha(300, 5, 1.0, loss=LogisticLoss(), perturbation="output")


# -- the utility helpers ---------------------------------------------------------------


def test_probe_with_auto_holds_the_fitted_alpha():
    # probe_curve reads alpha as a number: with "auto" it uses the probe fit's alpha_,
    # and the curve equals that of the same fit made with the numeric alpha.
    from dpsk.utility import probe_curve, utility_curve

    X, y = _data(n=400)
    auto = DPLogisticRegression(perturbation="output", epsilon=1.0, random_state=4,
                                classes=[0, 1], accountant=BudgetAccountant())
    curve = probe_curve(auto, X[:200], y[:200], X_private=X[200:], y_private=y[200:],
                        epsilons=[0.5, 2.0])
    fixed = DPLogisticRegression(**{**auto.get_params(), "alpha": auto.alpha_})
    again = probe_curve(fixed, X[:200], y[:200], X_private=X[200:], y_private=y[200:],
                        epsilons=[0.5, 2.0])
    np.testing.assert_array_equal(curve.loss, again.loss)
    public = utility_curve(DPLogisticRegression(), X, y, epsilons=[0.5, 2.0], n_draws=2,
                           random_state=0)
    assert public.accuracy.shape[0] == 2
