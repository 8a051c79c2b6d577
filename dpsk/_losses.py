"""Margin losses for private ERM, each with the constants the privacy proofs need.

Every loss here is a function of the margin ``z = y * w.x`` with labels in
{-1, +1}. The mechanisms of Chaudhuri, Monteleoni and Sarwate (2011) need two
facts about a loss, and each loss object states them as attributes:

* ``lipschitz``: a bound on ``|l'(z)|`` (both algorithms need it to be <= 1);
* ``curvature``: a bound ``c`` on ``l''(z)`` (objective perturbation,
  Algorithm 2, spends ``log(1 + 2c/(n*alpha) + c^2/(n*alpha)^2)`` of epsilon on it).

The objects are stateless and shared by every model, mechanism and solver, so a
constant is written down exactly once.
"""

import numpy as np
from scipy.special import expit

__all__ = ["LogisticLoss", "HuberLoss", "make_loss"]


class LogisticLoss:
    """Logistic loss ``l(z) = log(1 + exp(-z))``.

    ``|l'(z)| < 1`` and ``0 < l''(z) <= 1/4`` for every z, so the loss meets the
    conditions of Theorems 1 and 2 of Chaudhuri et al. (2011) with ``c = 1/4``
    (their Corollary 8).
    """

    name = "logistic"
    lipschitz = 1.0
    curvature = 0.25
    #: Whether the loss is twice differentiable everywhere (Newton steps exact).
    smooth = True

    def value(self, z):
        """Loss at margins ``z`` (numerically stable for large ``|z|``)."""
        return np.logaddexp(0.0, -z)

    def derivative(self, z):
        """First derivative ``l'(z) = -1 / (1 + exp(z))``."""
        return -expit(-z)

    def second_derivative(self, z):
        """Second derivative ``l''(z) = s(z) (1 - s(z))`` with ``s`` the sigmoid."""
        s = expit(z)
        return s * (1.0 - s)

    def __repr__(self):
        return "LogisticLoss()"


class HuberLoss:
    """Huber-smoothed hinge loss of Chaudhuri et al. (2011), their Eq. (35).

    ``l(z) = 0`` for ``z > 1 + h``; ``(1 + h - z)^2 / (4h)`` for ``|1 - z| <= h``;
    ``1 - z`` for ``z < 1 - h``. Convex, differentiable, ``|l'| <= 1`` and
    piecewise twice differentiable with ``l'' <= c = 1/(2h)``; Theorem 7 of the
    paper shows Algorithm 2 stays private with that ``c`` despite the two kinks of
    ``l'``.

    Parameters
    ----------
    h : float
        Width of the quadratic zone around the hinge, ``h > 0``. Smaller ``h`` is
        closer to the hinge loss but raises ``c`` and so the privacy slack of
        objective perturbation.
    """

    name = "huber"
    lipschitz = 1.0
    smooth = False

    def __init__(self, h=0.5):
        h = float(h)
        if not np.isfinite(h) or h <= 0:
            raise ValueError(f"The Huber width h must be a finite number > 0, got {h!r}.")
        self.h = h

    @property
    def curvature(self):
        return 1.0 / (2.0 * self.h)

    def value(self, z):
        h = self.h
        z = np.asarray(z, dtype=float)
        out = np.where(z < 1 - h, 1.0 - z, 0.0)
        mid = np.abs(1.0 - z) <= h
        out[mid] = (1.0 + h - z[mid]) ** 2 / (4.0 * h)
        return out

    def derivative(self, z):
        h = self.h
        return np.clip(-(1.0 + h - np.asarray(z, dtype=float)) / (2.0 * h), -1.0, 0.0)

    def second_derivative(self, z):
        h = self.h
        z = np.asarray(z, dtype=float)
        return np.where(np.abs(1.0 - z) <= h, 1.0 / (2.0 * h), 0.0)

    def __repr__(self):
        return f"HuberLoss(h={self.h!r})"


def make_loss(name, h=0.5):
    """Return the loss object called ``name`` (``"logistic"`` or ``"huber"``)."""
    if name == "logistic":
        return LogisticLoss()
    if name == "huber":
        return HuberLoss(h)
    raise ValueError(f"Unknown loss {name!r}; expected 'logistic' or 'huber'.")
