"""Losses for private ERM, each with the constants the privacy proofs need.

Most losses here are functions of the margin ``z = y * w.x`` with labels in
{-1, +1}; :class:`MultinomialLoss` is the softmax cross-entropy of a ``K x d``
weight matrix. The mechanisms of Chaudhuri, Monteleoni and Sarwate (2011) need
three facts about a loss, and each loss object states them as attributes:

* ``lipschitz``: a bound on the norm of one row's loss gradient per unit of
  row norm (``|l'(z)|`` for a margin loss; both algorithms need it, and the
  sensitivities scale with it);
* ``curvature``: a bound ``c`` on the largest eigenvalue of one row's loss
  Hessian per unit of squared row norm (``l''(z)`` for a margin loss);
* ``hessian_rank``: the rank of that Hessian (1 for a margin loss, ``K - 1``
  for the softmax). Objective perturbation spends ``hessian_rank * log(1 +
  c/(n*alpha))`` of epsilon on the change of variables (the paper's Algorithm 2
  spends ``log(1 + 2c/(n*alpha) + c^2/(n*alpha)^2)``, twice that, for margin
  losses; see ``dpsk.mechanisms._noise``).

The objects are stateless and shared by every model, mechanism and solver, so a
constant is written down exactly once.
"""

import numpy as np
from scipy.special import expit, softmax

__all__ = ["LogisticLoss", "HuberLoss", "MultinomialLoss", "make_loss"]


class _MarginLoss:
    """What every margin loss shares: one weight vector, and its mean gradient."""

    #: The loss scores one output per row (a weight vector, not a matrix).
    n_outputs = 1
    #: Rank of one row's Hessian in the weights (``l'' x x^T``): the exponent of
    #: the change-of-variables term in objective perturbation.
    hessian_rank = 1

    def value_at_zero(self):
        """The loss of the all-zero model, ``l(0)``."""
        return float(np.asarray(self.value(np.zeros(1))).ravel()[0])

    def gradient_sum(self, Z, y, w, sample_weight=None):
        """``Z^T (y * s * l'(y * Z w))``: O(n + d) memory beyond ``Z``, dense or CSR.

        ``s`` are row weights in [0, 1] (None: all ones, computed without them).
        """
        margins = y * np.asarray(Z @ w).ravel()
        derivative = self.derivative(margins)
        if sample_weight is not None:
            derivative = sample_weight * derivative
        return np.asarray(Z.T @ (y * derivative)).ravel()

    def mean_gradient(self, Z, y, w, sample_weight=None):
        """``gradient_sum / n``, the gradient of the average (weighted) loss; n, not sum(s)."""
        return self.gradient_sum(Z, y, w, sample_weight) / Z.shape[0]


class LogisticLoss(_MarginLoss):
    """Logistic loss ``l(z) = log(1 + exp(-z))``.

    ``|l'(z)| < 1`` and ``0 < l''(z) <= 1/4`` for every z, so the loss meets the
    conditions of Theorems 1 and 2 of Chaudhuri et al. (2011) with ``c = 1/4``
    (their Corollary 2).
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


class HuberLoss(_MarginLoss):
    """Huber-smoothed hinge loss of Chaudhuri et al. (2011), their Eq. (35).

    ``l(z) = 0`` for ``z > 1 + h``; ``(1 + h - z)^2 / (4h)`` for ``|1 - z| <= h``;
    ``1 - z`` for ``z < 1 - h``. Convex, differentiable, ``|l'| <= 1`` and
    piecewise twice differentiable with ``l'' <= c = 1/(2h)``; Corollary 4 of the
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


class MultinomialLoss:
    """Softmax cross-entropy of a ``K x d`` weight matrix, ``K >= 2`` classes.

    For a row ``x`` with class index ``y`` in ``{0, ..., K-1}`` and scores ``s
    = W x``, the loss is ``logsumexp(s) - s_y``. The constants the privacy
    proofs need, derived for rows of norm <= 1:

    * ``lipschitz = sqrt(2)``: the gradient in ``W`` is ``(p - e_y) x^T`` with
      ``p = softmax(s)``, of Frobenius norm ``||p - e_y|| ||x||``, and
      ``||p - e_y||^2 = (1 - p_y)^2 + sum_{k != y} p_k^2 <= 2 (1 - p_y)^2 <= 2``
      (the sum of squares of non-negative numbers is at most the square of
      their sum, ``1 - p_y``).
    * ``curvature = 1/2``: the Hessian in ``vec(W)`` is ``(diag(p) - p p^T)
      ⊗ x x^T``, whose eigenvalues are products of the two factors' ones.
      ``v^T (diag(p) - p p^T) v`` is the variance of ``v_k`` under ``k ~ p``,
      at most ``(max v - min v)^2 / 4 <= (sqrt(2) ||v||)^2 / 4 = ||v||^2 / 2``,
      and ``x x^T`` has the single non-zero eigenvalue ``||x||^2 <= 1``.
    * ``hessian_rank = K - 1``: ``diag(p) - p p^T`` annihilates the all-ones
      vector, so it has rank at most ``K - 1``, and so has the Kronecker
      product with the rank-one ``x x^T``.

    Parameters
    ----------
    n_classes : int
        ``K >= 2``.
    """

    name = "multinomial"
    lipschitz = float(np.sqrt(2.0))
    curvature = 0.5
    smooth = True

    def __init__(self, n_classes):
        n_classes = int(n_classes)
        if n_classes < 2:
            raise ValueError(f"The multinomial loss needs at least 2 classes, got {n_classes}.")
        self.n_classes = n_classes

    @property
    def n_outputs(self):
        return self.n_classes

    @property
    def hessian_rank(self):
        return self.n_classes - 1

    def value_at_zero(self):
        """The loss of the all-zero model, ``log K``."""
        return float(np.log(self.n_classes))

    def gradient_sum(self, Z, y, W, sample_weight=None):
        """``(S (P - Y))^T Z`` for the ``K x d`` weights ``W``; ``y`` holds class indices.

        ``S`` is the diagonal of row weights in [0, 1] (None: the identity,
        computed without it). O(n K) memory beyond ``Z`` (dense or CSR).
        """
        scores = np.asarray(Z @ W.T)
        residual = softmax(scores, axis=1)
        residual[np.arange(Z.shape[0]), np.asarray(y, dtype=np.intp)] -= 1.0
        if sample_weight is not None:
            residual *= sample_weight[:, None]
        return np.asarray(Z.T @ residual).T

    def mean_gradient(self, Z, y, W, sample_weight=None):
        """``gradient_sum / n``, the gradient of the average (weighted) loss; n, not sum(s)."""
        return self.gradient_sum(Z, y, W, sample_weight) / Z.shape[0]

    def __repr__(self):
        return f"MultinomialLoss(n_classes={self.n_classes})"


def make_loss(name, h=0.5):
    """Return the loss object called ``name`` (``"logistic"`` or ``"huber"``)."""
    if name == "logistic":
        return LogisticLoss()
    if name == "huber":
        return HuberLoss(h)
    raise ValueError(f"Unknown loss {name!r}; expected 'logistic' or 'huber'.")
