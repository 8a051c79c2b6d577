"""Loss objects: derivatives and the constants the privacy proofs rely on."""

import numpy as np
import pytest

from dpsk._optimize._losses import HuberLoss, LogisticLoss, make_loss

LOSSES = [LogisticLoss(), HuberLoss(0.5), HuberLoss(0.1), HuberLoss(2.0)]
Z = np.linspace(-40, 40, 40001)


@pytest.mark.parametrize("loss", LOSSES, ids=repr)
def test_derivative_matches_finite_differences(loss):
    z = np.linspace(-5, 5, 1001) + 1e-3  # off the Huber kinks
    h = 1e-6
    fd = (loss.value(z + h) - loss.value(z - h)) / (2 * h)
    np.testing.assert_allclose(loss.derivative(z), fd, atol=1e-6)


@pytest.mark.parametrize("loss", LOSSES, ids=repr)
def test_second_derivative_matches_finite_differences(loss):
    z = np.linspace(-5, 5, 997)
    if isinstance(loss, HuberLoss):  # l'' jumps at 1 +- h: stay away from the kinks
        z = z[np.minimum(np.abs(z - 1 - loss.h), np.abs(z - 1 + loss.h)) > 1e-3]
    h = 1e-6
    fd = (loss.derivative(z + h) - loss.derivative(z - h)) / (2 * h)
    np.testing.assert_allclose(loss.second_derivative(z), fd, atol=1e-5)


@pytest.mark.parametrize("loss", LOSSES, ids=repr)
def test_constants_bound_the_derivatives(loss):
    assert np.all(np.abs(loss.derivative(Z)) <= loss.lipschitz)
    assert np.all(loss.second_derivative(Z) <= loss.curvature + 1e-15)
    assert np.all(loss.second_derivative(Z) >= 0)  # convex
    # The bounds are tight: a looser constant would overstate the noise needed.
    assert loss.second_derivative(Z).max() == pytest.approx(loss.curvature, rel=1e-6)
    assert np.abs(loss.derivative(Z)).max() == pytest.approx(1.0, rel=1e-6)


def test_paper_constants():
    assert LogisticLoss().curvature == 0.25
    assert HuberLoss(0.5).curvature == 1.0
    assert HuberLoss(0.25).curvature == 2.0


def test_huber_definition():
    loss = HuberLoss(0.5)
    np.testing.assert_allclose(loss.value(np.array([2.0, 1.5, 1.0, 0.5, -1.0])),
                               [0.0, 0.0, 0.5**2 / 2.0, 0.0 + 1.0**2 / 2.0, 2.0])


def test_logistic_is_stable_for_large_margins():
    loss = LogisticLoss()
    assert np.isfinite(loss.value(np.array([-1e4, 1e4]))).all()
    assert loss.value(np.array([1e4]))[0] == 0.0
    assert loss.value(np.array([-1e4]))[0] == pytest.approx(1e4)


@pytest.mark.parametrize("h", [0, -1, np.nan, np.inf])
def test_huber_rejects_bad_width(h):
    with pytest.raises(ValueError, match="h must be"):
        HuberLoss(h)


def test_make_loss():
    assert isinstance(make_loss("logistic"), LogisticLoss)
    assert make_loss("huber", 0.3).h == 0.3
    with pytest.raises(ValueError, match="Unknown loss"):
        make_loss("hinge")
