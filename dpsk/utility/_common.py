"""Checks and metrics shared by the public and the probe modes."""

from numbers import Integral, Real

import numpy as np
from scipy.special import log_softmax

from ..linear_model._base import BaseDPLinearClassifier

__all__ = []

DEFAULT_EPSILONS = np.logspace(-2, 1, 12)


def check_estimator(estimator):
    """Refuse anything but a dpsk estimator with a noise model (a DP linear or kernel model)."""
    if not isinstance(estimator, BaseDPLinearClassifier):
        raise TypeError(
            "dpsk.utility needs a dpsk estimator with a noise model (DPLogisticRegression, "
            f"DPHuberSVM, DPKernelClassifier or a subclass), got {type(estimator).__name__}."
        )


def check_epsilons(epsilons):
    """A sorted 1-D array of distinct finite epsilons > 0 (at least two)."""
    if epsilons is None:
        return DEFAULT_EPSILONS.copy()
    try:
        eps = np.asarray(epsilons, dtype=float)
    except (TypeError, ValueError):
        raise ValueError("epsilons must be a 1-D sequence of numbers.") from None
    if eps.ndim != 1 or eps.size < 2:
        raise ValueError("epsilons must be a 1-D sequence of at least two values.")
    if not (np.all(np.isfinite(eps)) and np.all(eps > 0)):
        raise ValueError("epsilons must be finite and > 0.")
    eps = np.unique(eps)
    if eps.size < 2:
        raise ValueError("epsilons must hold at least two distinct values.")
    return eps


def check_fraction(value, name, closed_right=False):
    ok = isinstance(value, Real) and not isinstance(value, bool) and 0 < value and (
        value <= 1 if closed_right else value < 1)
    if not ok:
        raise ValueError(f"{name} must be a number in (0, 1{']' if closed_right else ')'}, "
                         f"got {value!r}.")
    return float(value)


def check_count(value, name, minimum):
    if not (isinstance(value, Integral) and not isinstance(value, bool) and value >= minimum):
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}.")
    return int(value)


def describe(estimator, mode):
    params = estimator.get_params(deep=False)
    delta = params.get("delta", 0.0)
    law = "pure" if delta == 0 else f"delta={delta:g}"
    return (f"{type(estimator).__name__}(alpha={params.get('alpha')!r}, "
            f"perturbation={params.get('perturbation')!r}, {law}), {mode} mode")


def row_losses(loss, classes, scores, y):
    """Per-row held-out loss of the model's own training loss.

    Binary: the margin loss at ``y_pm * score`` (what the model minimised).
    More classes: the cross-entropy of the softmax of the scores.
    """
    if scores.ndim == 1:
        y_pm = np.where(y == classes[1], 1.0, -1.0)
        if loss.n_outputs > 1:  # a two-class softmax is the logistic loss of W[1] - W[0]
            return np.logaddexp(0.0, -y_pm * scores)
        return loss.value(y_pm * scores)
    index = np.searchsorted(classes, y)
    return -log_softmax(scores, axis=1)[np.arange(len(y)), index]


def held_out_metrics(fitted, X, y):
    """``(accuracy, loss, per-row accuracy variance, per-row loss variance)`` on ``(X, y)``."""
    scores = fitted.decision_function(X)
    if scores.ndim == 1:
        pred = fitted.classes_[(scores > 0).astype(int)]
    else:
        pred = fitted.classes_[np.argmax(scores, axis=1)]
    hits = pred == y
    losses = row_losses(fitted._make_loss(len(fitted.classes_)), fitted.classes_, scores, y)
    return hits.mean(), losses.mean(), hits.var(), losses.var()
