"""The sensitivity bound output perturbation relies on, checked on the real input path.

Algorithm 1 of Chaudhuri, Monteleoni and Sarwate (2011) adds noise calibrated to
the L2-sensitivity of the exact minimiser, ``2 / (n alpha)`` (their Corollary
1), which holds only if every row the solver sees has norm <= 1 and the loss has
``|l'| <= 1``. dpsk establishes the row-norm condition in
``dpsk._data._validation.design_matrix`` (clipping to ``data_norm``, rescaling, and the
intercept as a regularised constant feature). These tests feed neighbouring raw
data sets through that path and measure how far the noise-free minimisers move.

The minimisers come from ``minimize_regularized_loss`` with ``tol=1e-12``; each is
within ``tol / alpha`` of the exact one, so the measured distance may exceed the
bound by at most ``2 tol / alpha`` (plus rounding).
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from dpsk._data._design import design_matrix
from dpsk._optimize._binary import minimize_regularized_loss
from dpsk._optimize._losses import HuberLoss, LogisticLoss

TOL = 1e-12


LOSSES = [LogisticLoss(), HuberLoss(0.5), HuberLoss(0.05)]


def _minimiser(loss, Z, y, alpha):
    return minimize_regularized_loss(loss, Z, y, alpha, tol=TOL, max_iter=5000).w


def _bound(n, alpha):
    # Corollary 1 of Chaudhuri et al. (2011), plus the certified solver slack.
    return 2.0 / (n * alpha) + 2.0 * TOL / alpha + 1e-12


def _raw_data(rng, n, d, data_norm):
    # Rows of very different norms: some far above data_norm, so clipping matters.
    X = rng.standard_normal((n, d)) * rng.choice([0.1, 1.0, 10.0], size=(n, 1)) * data_norm
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    return X, y


def _neighbours(rng, X, y, w, data_norm):
    """Neighbouring data sets of (X, y): one row replaced, several ways."""
    n, d = X.shape
    out = []
    for _ in range(4):
        i = rng.integers(n)
        # A random row, possibly far above data_norm.
        X2, y2 = X.copy(), y.copy()
        X2[i] = rng.standard_normal(d) * data_norm * rng.choice([0.5, 50.0])
        y2[i] = rng.choice([-1.0, 1.0])
        out.append((X2, y2))
        # The same row flipped to the opposite extreme point, label flipped too.
        direction = X[i] / max(np.linalg.norm(X[i]), 1e-300)
        X2, y2 = X.copy(), y.copy()
        X2[i] = -1e6 * data_norm * direction
        y2[i] = -y[i]
        out.append((X2, y2))
        # An extreme row aligned with the current weights, labelled against them:
        # the row with the largest possible loss gradient.
        wx = w[:d]
        if np.linalg.norm(wx) > 0:
            X2, y2 = X.copy(), y.copy()
            X2[i] = 1e3 * data_norm * wx / np.linalg.norm(wx)
            y2[i] = -1.0
            out.append((X2, y2))
    return out


@pytest.mark.parametrize("loss", LOSSES, ids=repr)
@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("data_norm", [1.0, 4.0])
@pytest.mark.parametrize("n, d, alpha", [(5, 1, 1.0), (20, 3, 0.1), (50, 5, 1e-2)])
def test_minimiser_moves_at_most_2_over_n_alpha(loss, fit_intercept, data_norm, n, d, alpha):
    rng = np.random.default_rng([n, d, int(data_norm), int(fit_intercept)])
    worst = 0.0
    for _ in range(3):
        X, y = _raw_data(rng, n, d, data_norm)
        Z = design_matrix(X, data_norm, fit_intercept)
        assert np.all(np.linalg.norm(Z, axis=1) <= 1 + 1e-12)
        w = _minimiser(loss, Z, y, alpha)
        for X2, y2 in _neighbours(rng, X, y, w, data_norm):
            Z2 = design_matrix(X2, data_norm, fit_intercept)
            w2 = _minimiser(loss, Z2, y2, alpha)
            distance = np.linalg.norm(w - w2)
            assert distance <= _bound(n, alpha), (distance, 2 / (n * alpha))
            worst = max(worst, distance * n * alpha / 2)
    # The neighbours must actually probe the bound, or the test proves little.
    assert worst > 0.1


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_bound_is_attained_so_the_check_is_sharp(fit_intercept):
    # With a Huber loss and strong regularisation every margin stays in the
    # linear zone (|l'| = 1), and flipping the label of a row of norm data_norm
    # moves the minimiser by exactly 2/(n alpha). A bound off by any factor < 1
    # in the library (e.g. 1/(n alpha)) would be caught by the test above on
    # this kind of data.
    n, alpha, data_norm = 10, 1.0, 3.0
    X = np.tile([[data_norm, 0.0]], (n, 1))
    y = np.array([1.0, -1.0] * (n // 2))
    X2, y2 = X.copy(), y.copy()
    y2[0] = -1.0
    Z = design_matrix(X, data_norm, fit_intercept)
    Z2 = design_matrix(X2, data_norm, fit_intercept)
    loss = HuberLoss(0.5)
    distance = np.linalg.norm(_minimiser(loss, Z, y, alpha) - _minimiser(loss, Z2, y2, alpha))
    assert distance == pytest.approx(2 / (n * alpha), rel=1e-9)


def test_unclipped_rows_break_the_bound():
    # The check has teeth: without clipping, a row of norm 5 moves the minimiser
    # by more than 2/(n alpha). This is the bug a missing clip would be.
    n, alpha = 10, 1.0
    X = np.tile([[1.0]], (n, 1))
    y = np.array([1.0, -1.0] * (n // 2))
    X2, y2 = X.copy(), y.copy()
    X2[0], y2[0] = [5.0], -1.0
    loss = HuberLoss(0.5)
    raw_distance = np.linalg.norm(_minimiser(loss, X, y, alpha) - _minimiser(loss, X2, y2, alpha))
    assert raw_distance > 2 / (n * alpha)
    clipped = np.linalg.norm(
        _minimiser(loss, design_matrix(X, 1.0, False), y, alpha)
        - _minimiser(loss, design_matrix(X2, 1.0, False), y2, alpha)
    )
    assert clipped <= _bound(n, alpha)


def test_unscaled_intercept_column_breaks_the_bound():
    # Appending a raw constant 1 to rows of norm 1 gives norm sqrt(2): the
    # sensitivity grows beyond 2/(n alpha). design_matrix's [x, 1]/sqrt(2) does not.
    n, alpha = 10, 1.0
    X = np.tile([[1.0]], (n, 1))
    y = np.array([1.0, -1.0] * (n // 2))
    y2 = y.copy()
    y2[0] = -1.0
    loss = HuberLoss(0.5)
    naive = np.hstack([X, np.ones((n, 1))])
    w, w2 = _minimiser(loss, naive, y, alpha), _minimiser(loss, naive, y2, alpha)
    distance = np.linalg.norm(w - w2)
    assert distance > 2 / (n * alpha)
    Z = design_matrix(X, 1.0, True)
    distance = np.linalg.norm(_minimiser(loss, Z, y, alpha) - _minimiser(loss, Z, y2, alpha))
    assert distance <= _bound(n, alpha)


@settings(max_examples=200, deadline=None)
@given(
    X=hnp.arrays(
        np.float64,
        st.tuples(st.integers(2, 12), st.integers(1, 3)),
        elements=st.floats(-1e4, 1e4, allow_nan=False, allow_infinity=False),
    ),
    data=st.data(),
    loss=st.sampled_from(LOSSES),
    fit_intercept=st.booleans(),
    alpha=st.sampled_from([1e-2, 0.3, 3.0]),
    data_norm=st.sampled_from([0.5, 1.0, 10.0]),
)
def test_sensitivity_property(X, data, loss, fit_intercept, alpha, data_norm):
    # Hypothesis searches for data sets and replacement rows (including exact
    # zeros, duplicates and huge values) that would move the minimiser too far.
    n, d = X.shape
    y = np.asarray(data.draw(st.lists(st.sampled_from([-1.0, 1.0]), min_size=n, max_size=n)))
    i = data.draw(st.integers(0, n - 1))
    new_row = data.draw(
        hnp.arrays(np.float64, d, elements=st.floats(-1e6, 1e6, allow_nan=False))
    )
    X2, y2 = X.copy(), y.copy()
    X2[i], y2[i] = new_row, data.draw(st.sampled_from([-1.0, 1.0]))
    Z = design_matrix(X, data_norm, fit_intercept)
    Z2 = design_matrix(X2, data_norm, fit_intercept)
    distance = np.linalg.norm(_minimiser(loss, Z, y, alpha) - _minimiser(loss, Z2, y2, alpha))
    assert distance <= _bound(n, alpha)
