"""Checks and metrics shared by the public and the probe modes."""

from numbers import Integral, Real

import numpy as np
from scipy.special import log_softmax
from sklearn.pipeline import Pipeline

from ..linear_model._base import BaseDPLinearClassifier
from ..pipeline._budget import private_steps

__all__ = []

DEFAULT_EPSILONS = np.logspace(-2, 1, 12)


def check_estimator(estimator, pipelines=True):
    """Refuse anything but a dpsk estimator with a noise model, or a pipeline ending in one.

    A pipeline (``pipelines=True``: the public-data modes) may hold other
    private steps (private bounds): its curve is against the total epsilon of
    one fit, shared among its private steps as their declared epsilons are.
    """
    if isinstance(estimator, BaseDPLinearClassifier):
        return
    if pipelines and isinstance(estimator, Pipeline):
        if isinstance(estimator._final_estimator, BaseDPLinearClassifier):
            pipeline_shares(estimator)  # every private step must have an epsilon
            return
        raise TypeError(
            "dpsk.utility needs a pipeline whose last step is a dpsk model with a noise "
            "model (DPLogisticRegression, DPHuberSVM, DPKernelClassifier or a subclass), got "
            f"a pipeline ending in {type(estimator._final_estimator).__name__}.")
    if isinstance(estimator, Pipeline):
        raise TypeError(
            "Probe mode extrapolates the release of one private model fitted on the private "
            "data; it does not take a pipeline. For a pipeline (private bounds and a model, "
            "say) use the public mode: dpsk.utility.utility_curve or recommend_epsilon("
            "mode='public') on public data like yours.")
    what = ("a dpsk estimator with a noise model (DPLogisticRegression, DPHuberSVM, "
            "DPKernelClassifier or a subclass)")
    if pipelines:
        what += ", or a pipeline ending in one"
    raise TypeError(f"dpsk.utility needs {what}, got {type(estimator).__name__}.")


def pipeline_shares(pipeline):
    """``[(path, share)]``: each private step's part of a fit's total epsilon.

    Its declared ``epsilon`` over the sum of the private steps' (public
    parameters): a curve at total epsilon ``e`` fits every step at ``share *
    e``, the split the user chose.
    """
    steps = [(path, step.get_params(deep=False).get("epsilon")) for path, step
             in private_steps(pipeline)]
    if any(not isinstance(eps, Real) or isinstance(eps, bool) or not eps > 0
           for _, eps in steps):
        raise ValueError("dpsk.utility needs every private step of the pipeline to declare "
                         "a numeric epsilon > 0 (their ratio splits each curve's total).")
    total = sum(eps for _, eps in steps)
    return [(path, eps / total) for path, eps in steps]


def final_model(fitted):
    """The private model of a fitted estimator or pipeline."""
    return fitted._final_estimator if isinstance(fitted, Pipeline) else fitted


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
    """A one-line description of what a curve measures, for titles and reports."""
    return f"{_model_text(estimator)}, {mode} mode"


def _model_text(estimator):
    if isinstance(estimator, Pipeline):
        shares = ", ".join(f"{path} {share:.2g}" for path, share in pipeline_shares(estimator))
        return (f"{type(estimator).__name__}({_model_text(estimator._final_estimator)}; "
                f"shares of epsilon: {shares})")
    params = estimator.get_params(deep=False)
    delta = params.get("delta", 0.0)
    law = "pure" if delta == 0 else f"delta={delta:g}"
    return (f"{type(estimator).__name__}(alpha={params.get('alpha')!r}, "
            f"perturbation={params.get('perturbation')!r}, {law})")


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
    model = final_model(fitted)
    if scores.ndim == 1:
        pred = model.classes_[(scores > 0).astype(int)]
    else:
        pred = model.classes_[np.argmax(scores, axis=1)]
    hits = pred == y
    losses = row_losses(model._make_loss(len(model.classes_)), model.classes_, scores, y)
    return hits.mean(), losses.mean(), hits.var(), losses.var()
