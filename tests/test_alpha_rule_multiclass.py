"""The alpha rule for the softmax: the prior counts pairs of classes, the binary rule is unchanged.

Derivation in ``dpsk.mechanisms._alpha.prior_size`` and ``docs/choosing_alpha.rst``
("The prior for K classes"); the measurements in
``benchmarks/results/alpha_rule_summary_multiclass.csv``.
"""

import math

import numpy as np
import pytest

from dpsk import BudgetAccountant, DPKernelClassifier, DPLogisticRegression
from dpsk._optimize._losses import HuberLoss, LogisticLoss, MultinomialLoss
from dpsk.mechanisms._alpha import (
    ALPHA_RANGE,
    PRIOR_NORM,
    auto_alpha,
    excess_risk_bound,
    prior_size,
)
from dpsk.model_selection import DPGridSearch

MECHANISMS = [("objective", 0.0), ("objective", 1e-6), ("output", 0.0), ("output", 1e-6),
              ("gradient", 1e-6)]

#: ``alpha="auto"`` of margin losses (binary and one-vs-rest) before the softmax prior
#: changed (commit a156c21; noisy gradient descent's at its direct bound, commit
#: 08141be): these must keep their bits.
PINNED = [
    ((300, 6, 1.0, 0.0, "objective", 1), 0.010413647170920366),
    ((10000, 21, 0.5, 1e-6, "objective", 1), 0.0009325661054265659),
    ((5000, 11, 2.0, 0.0, "output", 1), 0.004579997461930633),
    ((20000, 51, 1.0, 1e-6, "output", 4), 0.0033489219356017935),
    ((3000, 31, 0.5, 0.0, "objective", 10), 0.04135535091182128),
    ((2000, 11, 1.0, 1e-6, "gradient", 1), 0.0015149854494028517),
    ((2000, 11, 1.0, 1e-6, "gradient", 3), 0.0019698229408480006),
]


@pytest.mark.parametrize("case, expected", PINNED)
def test_margin_loss_rule_keeps_its_bits(case, expected):
    n, d, epsilon, delta, perturbation, n_problems = case
    assert auto_alpha(n, d, epsilon, delta, loss=LogisticLoss(), perturbation=perturbation,
                      n_problems=n_problems) == expected


def test_prior_size_binary_and_softmax():
    r, p = 2.0, 1.0
    assert prior_size(21, 1, r, p) == r**2 * 21**p
    for k in (2, 3, 10, 20):
        assert prior_size(21, k, r, p) == pytest.approx(r**2 * 21 * (k - 1) / 2)
    # The two-class softmax (-w/2, w/2) of a logistic w has half its squared norm.
    assert prior_size(21, 2, r, p) == pytest.approx(prior_size(21, 1, r, p) / 2)


def test_centred_comparator_identity():
    # The identity behind the prior: for sum_k w_k = 0, the squared pair distances add
    # up to K ||W||^2, so pairs each at squared distance D give ||W||^2 = (K - 1) D / 2.
    rng = np.random.default_rng(0)
    for k in (2, 3, 7):
        W = rng.normal(size=(k, 5))
        W -= W.mean(axis=0)
        pairs = sum(np.sum((W[i] - W[j]) ** 2) for i in range(k) for j in range(i + 1, k))
        assert pairs == pytest.approx(k * np.sum(W**2))
    # A regular simplex of K unit-distance-squared pairs attains it exactly.
    k = 6
    simplex = (np.eye(k) - 1.0 / k) / math.sqrt(2.0)
    assert np.sum(simplex**2) == pytest.approx((k - 1) / 2)


@pytest.mark.parametrize("perturbation, delta", MECHANISMS)
def test_softmax_bias_is_pairs_of_binary_bias(perturbation, delta):
    # Same noise term; the bias of the K-class softmax is (K - 1) / 2 binary biases.
    loss = MultinomialLoss(5)
    r = PRIOR_NORM[perturbation]
    kwargs = dict(loss=loss, perturbation=perturbation)
    with_prior = excess_risk_bound(1e-2, 3000, 11, 1.0, delta, **kwargs)
    without = excess_risk_bound(1e-2, 3000, 11, 1.0, delta, prior_norm=0.0, **kwargs)
    bias = with_prior - without
    assert bias > 0
    if perturbation == "output":  # solved at alpha itself
        assert bias == pytest.approx(0.5 * 1e-2 * r**2 * 11 * 2.0)
    if perturbation == "gradient":  # noisy GD reads the prior in its optimisation term too
        assert bias > 0.5 * 1e-2 * r**2 * 11 * 2.0


@pytest.mark.parametrize("n_classes", [3, 10, 20])
def test_softmax_rule_regularises_more_than_the_weight_count_prior(n_classes):
    # The pair prior is 2K / (K - 1) times smaller than the former r^2 K d. Were the
    # noise term ~ 1 / alpha, alpha would grow by its square root; the calibration's
    # slack (K - 1) log(1 + c / (n alpha)) also falls as alpha grows, so the gain is less.
    loss = MultinomialLoss(n_classes)
    factor = math.sqrt(2.0 * n_classes / (n_classes - 1))
    for perturbation, delta in MECHANISMS:
        # The bound's own minimisers (corrected=False: without SOFTMAX_ALPHA_FACTOR).
        new = auto_alpha(10**5, 21, 1.0, delta, loss=loss, perturbation=perturbation,
                         corrected=False)
        old = auto_alpha(10**5, 21, 1.0, delta, loss=loss, perturbation=perturbation,
                         prior_norm=PRIOR_NORM[perturbation] * factor, corrected=False)
        if perturbation == "gradient" and new == old:
            # noisy GD's rule sits at the bottom of ALPHA_RANGE for both priors here
            # (the number of steps regularises): nothing to compare.
            assert new == pytest.approx(ALPHA_RANGE[0])
            continue
        assert 1.05 < new / old <= factor * 1.01


def _data(n=300, n_classes=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    X /= np.linalg.norm(X, axis=1, keepdims=True).max()
    return X, np.argmax(X[:, :n_classes] + 0.3 * rng.normal(size=(n, n_classes)), axis=1)


@pytest.mark.parametrize("multi_class, n_problems, loss", [
    ("ovr", 4, LogisticLoss()), ("multinomial", 1, MultinomialLoss(4))])
def test_estimators_pass_the_classes(multi_class, n_problems, loss):
    X, y = _data()
    # Without the class prior the model's budget is the whole epsilon (the share is
    # tested in tests/test_class_prior.py).
    model = DPLogisticRegression(classes=[0, 1, 2, 3], multi_class=multi_class, random_state=0,
                                 accountant=BudgetAccountant(), class_prior=None).fit(X, y)
    assert model.alpha_ == auto_alpha(300, 5, 1.0, loss=loss, perturbation="objective",
                                      n_problems=n_problems)
    kernel = DPKernelClassifier(classes=[0, 1, 2, 3], multi_class=multi_class, n_components=20,
                                random_state=0, accountant=BudgetAccountant(),
                                class_prior=None).fit(X, y)
    assert kernel.alpha_ == auto_alpha(300, 21, 1.0, loss=loss, perturbation="objective",
                                       n_problems=n_problems)


def test_huber_and_binary_ignore_the_class_factor():
    # Margin losses have one output: the class factor never applies to them.
    for loss in (LogisticLoss(), HuberLoss(0.1)):
        bound = excess_risk_bound(1e-2, 500, 6, 1.0, loss=loss, perturbation="output")
        zero = excess_risk_bound(1e-2, 500, 6, 1.0, loss=loss, perturbation="output",
                                 prior_norm=0.0)
        assert bound - zero == pytest.approx(0.5 * 1e-2 * PRIOR_NORM["output"] ** 2 * 6)


def test_default_grid_search_runs_around_the_softmax_rule():
    X, y = _data(n=900, n_classes=3)
    search = DPGridSearch(DPLogisticRegression(classes=[0, 1, 2], class_prior=None),
                          epsilon=1.0, random_state=0, method="disjoint",
                          accountant=BudgetAccountant()).fit(X, y)
    alphas = [c["alpha"] for c in search.candidate_params_]
    assert search.alpha_multipliers_ == (1 / 3, 1.0, 3.0)
    assert alphas[0] == pytest.approx(alphas[1] / 3) and alphas[2] == pytest.approx(3 * alphas[1])
    # The middle candidate is the multinomial rule's alpha for one part's rows.
    rule = {auto_alpha(n, 5, 1.0, loss=MultinomialLoss(3), perturbation="objective")
            for n in range(100, 901)}
    assert alphas[1] in rule


def test_softmax_factor_falls_with_n_epsilon():
    # F at the pivot, F (N0 / (n eps))^s elsewhere: larger below the pivot, smaller above.
    from dpsk.mechanisms._alpha import (
        SOFTMAX_ALPHA_FACTOR,
        SOFTMAX_ALPHA_SLOPE,
        SOFTMAX_PIVOT,
        softmax_factor,
    )

    assert softmax_factor(SOFTMAX_PIVOT, 1.0) == pytest.approx(SOFTMAX_ALPHA_FACTOR)
    assert softmax_factor(2 * SOFTMAX_PIVOT, 0.5) == pytest.approx(SOFTMAX_ALPHA_FACTOR)
    assert softmax_factor(10 * SOFTMAX_PIVOT, 1.0) == pytest.approx(
        SOFTMAX_ALPHA_FACTOR * 10.0 ** -SOFTMAX_ALPHA_SLOPE)
    assert softmax_factor(100, 1.0) > SOFTMAX_ALPHA_FACTOR > softmax_factor(10**5, 1.0)
    loss = MultinomialLoss(5)
    for n, eps, delta in ((1000, 0.1, 0.0), (43000, 2.0, 1e-6)):
        kwargs = dict(loss=loss, perturbation="objective")
        ratio = (auto_alpha(n, 21, eps, delta, **kwargs)
                 / auto_alpha(n, 21, eps, delta, corrected=False, **kwargs))
        assert ratio == pytest.approx(softmax_factor(n, eps))
