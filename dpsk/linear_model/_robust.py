"""Differentially private logistic regression trained against L2 or L-infinity perturbations."""

import math
from numbers import Real

import numpy as np
from sklearn.utils._param_validation import Interval, Options, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from .._data._design import INTERCEPT_SCALE, clip_rows
from .._data._validation import check_not_datetime
from ..mechanisms._beyond_erm import (
    RobustLinfConstants,
    RobustLogisticConstants,
    private_robust_erm,
    private_robust_linf_erm,
)
from ._base import BaseDPLinearClassifier
from ._logistic import _SHARED_ATTRS_DOC
from ._output_only import _OUTPUT_ONLY_PARAMS_DOC, _OutputOnlyClassifier

__all__ = ["DPRobustLogisticRegression", "robust_accuracy"]


def _check_norm(norm):
    """``2`` or ``"inf"`` (refused without reading any data)."""
    if isinstance(norm, str):
        if norm == "inf":
            return "inf"
    elif isinstance(norm, Real) and not isinstance(norm, bool) and norm == 2:
        return 2
    raise ValueError("norm must be 2 or 'inf'.")


def _pair_ok(gap, diff, radius, norm):
    """``gap > radius ||diff||_*`` row-wise, with the dual norm of ``norm`` (L2 or L1)."""
    ord_ = 1 if norm == "inf" else 2
    return gap > radius * np.linalg.norm(np.atleast_2d(diff), ord=ord_, axis=-1)


def _robust_rows(X, y, W, b, classes, radius, norm):
    """Rows whose prediction is ``y`` under every perturbation in the ``norm`` ball."""
    scores = np.asarray(X @ W.T) + b
    if W.shape[0] == 1:
        sign = np.where(y == classes[1], 1.0, -1.0)
        known = np.isin(y, classes)
        return known & _pair_ok(sign * scores[:, 0], W[:1], radius, norm)
    index = np.searchsorted(classes, y).clip(0, len(classes) - 1)
    known = classes[index] == y
    own = scores[np.arange(len(y)), index]
    ok = known.copy()
    for k in range(W.shape[0]):
        ok &= (index == k) | _pair_ok(own - scores[:, k], W[index] - W[k], radius, norm)
    return ok


def robust_accuracy(model, X, y, radius, norm=2):
    """Accuracy of a fitted linear classifier under the worst perturbation of each row.

    A row counts as correct only if *every* input within distance ``radius``
    of it (L2 for ``norm=2``, L-infinity for ``norm="inf"``, in the units of
    ``X``) is classified as ``y``. For a
    linear model this is exact and needs no search: with scores ``s_k(x) =
    w_k.x + b_k``, the prediction at ``x + e`` stays ``y`` for all ``||e|| <=
    radius`` iff ``(w_y - w_k).x + b_y - b_k > radius ||w_y - w_k||`` for
    every other class ``k`` (the worst ``e`` against class ``k`` is ``-radius
    (w_y - w_k) / ||w_y - w_k||``). Two classes: ``y' (w.x + b) > radius
    ||w||`` with ``y' = +-1``. One-vs-rest argmax decisions are covered by the
    same pairwise condition.

    Convention for ``data_norm``: dpsk models clip inputs to ``data_norm``
    before scoring; the condition is evaluated at the *clipped* row. Clipping
    is the projection on a ball, which is 1-Lipschitz, so a perturbation of
    size ``radius`` of the raw input moves the clipped input by at most
    ``radius``: the count is a lower bound on the model's true robust
    accuracy, and exact for rows with norm at most ``data_norm - radius``.
    Ties (a score difference exactly equal to the bound) count as errors.

    L-infinity (``norm="inf"``): the worst perturbation subtracts ``radius
    ||w||_1`` (Hoelder; ``||w_y - w_k||_1`` between classes), at ``e = -radius
    sign(w)``. Clipping to an L2 ball is 1-Lipschitz in L2 but not in
    L-infinity, so: a row with ``||x|| + radius sqrt(d) <= data_norm`` is never
    clipped within its box (the box lies in the L2 ball of radius ``radius
    sqrt(d)``), and the exact L-infinity condition is used; any other row is
    counted only if it is robust to every L2 perturbation of size ``radius
    sqrt(d)`` of its clipped row (the box lies in that ball, and clipping does
    not enlarge L2 distances). A lower bound, exact for rows far enough
    inside the ball.

    Parameters
    ----------
    model : fitted classifier with ``coef_``, ``intercept_``, ``classes_``
        ``data_norm`` is read if present (dpsk's linear models).
    X : array-like of shape (n_samples, n_features)
    y : array-like of shape (n_samples,)
    radius : float
        ``>= 0``, in the units of ``X``.
    norm : {2, "inf"}, default=2
        The norm of the perturbation ball.

    Returns
    -------
    accuracy : float
    """
    check_is_fitted(model)
    radius = float(radius)
    if not (np.isfinite(radius) and radius >= 0):
        raise ValueError("radius must be a finite number >= 0.")
    norm = _check_norm(norm)
    X = validate_data(model, X, accept_sparse="csr", dtype=np.float64, reset=False)
    y = np.asarray(y)
    W, b = np.atleast_2d(model.coef_), np.ravel(model.intercept_)
    data_norm = (model._row_norm() if hasattr(model, "_row_norm")
                 else getattr(model, "data_norm", None))
    if data_norm is None:
        return float(np.mean(_robust_rows(X, y, W, b, model.classes_, radius, norm)))
    clipped = clip_rows(X, data_norm)
    if norm == 2:
        return float(np.mean(_robust_rows(clipped, y, W, b, model.classes_, radius, 2)))
    row_norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel() if hasattr(X, "multiply")
                        else np.einsum("ij,ij->i", X, X))
    inside = row_norms + radius * math.sqrt(X.shape[1]) <= data_norm
    exact = _robust_rows(X, y, W, b, model.classes_, radius, "inf")
    safe = _robust_rows(clipped, y, W, b, model.classes_, radius * math.sqrt(X.shape[1]), 2)
    return float(np.mean(np.where(inside, exact, safe)))


class DPRobustLogisticRegression(_OutputOnlyClassifier):
    __doc__ = f"""Logistic regression trained against L2 or L-infinity perturbations, privately.

    Minimises the adversarial (worst-case) logistic loss: each training row is
    scored at the worst feature perturbation of norm ``radius``, which for a
    linear model is the margin ``y w.x - radius ||w||`` (L2, ``norm=2``) or ``y
    w.x - radius ||w||_1`` (L-infinity, ``norm="inf"``); the intercept is not
    an input, so it is not perturbed. Then noise is added to the minimiser
    (output perturbation, Algorithm 1 of Chaudhuri, Monteleoni and Sarwate
    2011, as Lowy and Razaviyayn, Section 5.2, adapt it to robust training).

    Privacy guarantee: ``coef_`` and ``intercept_`` are ``epsilon``-DP
    (``delta = 0``, Gamma-norm noise) or ``(epsilon, delta)``-DP (``delta >
    0``, analytic Gaussian mechanism of Balle and Wang 2018) with respect to
    replacing one training row. The noise is calibrated to the sensitivity
    ``2 (1 + r) / (n alpha)`` of the exact minimiser (L2; ``max(2, 1 + r
    sqrt(k)) / (n alpha)`` for L-infinity, ``k`` features; ``r`` the radius on
    the rescaled rows, ``radius / data_norm`` times ``1/sqrt(2)`` with an
    intercept), derived in ``dpsk.mechanisms._beyond_erm`` and ``docs/beyond_erm.rst``,
    plus the certified solver's distance and the release-grid rounding.
    Conditions, all enforced: rows clipped to ``data_norm``; labels mapped to
    {{-1, +1}}; ``n_samples`` public. The solved objective replaces ``||w||``
    by ``sqrt(||w||^2 + s^2)``, ``s = 0.01`` on the rescaled weights (smooth,
    and the guarantee is about exactly that objective); it moves each margin
    by at most ``r s``. Weighted fits (``sample_weight`` in [0, 1],
    ``class_weight``) keep the guarantee and the noise: a weighted row's
    gradient keeps the bound the sensitivity uses (docs/privacy.rst, "Weights").

    Parameters
    ----------
    radius : float, default=0.1
        Radius of the perturbations trained against, in the units of the
        features (applied to rows after clipping to ``data_norm``). 0 gives
        plain logistic regression with output perturbation.
{_OUTPUT_ONLY_PARAMS_DOC}
    norm : {{2, "inf"}}, default=2
        The perturbation ball: L2 (margin ``y w.x - radius ||w||``) or
        L-infinity (margin ``y w.x - radius ||w||_1``, Lowy and Razaviyayn's
        adversarial training). With ``"inf"`` the sensitivity is ``max(2, 1 +
        r sqrt(k)) / (n alpha)`` (``k`` the number of features, ``r`` the
        rescaled radius): it grows with ``sqrt(k)``, the L2 norm of
        ``sign(w)`` (``dpsk.mechanisms._beyond_erm.robust_linf_sensitivity``).
        ``||w||_1`` is smoothed coordinatewise with ``s / k`` so that a margin
        still moves by at most ``r s``.
    class_weight : dict or None, default=None
        ``{{class: weight > 0}}``, normalised so the largest is 1 (missing
        classes get 1 first), multiplying ``sample_weight``; as in
        :class:`DPLogisticRegression`. ``"balanced"`` is refused (it reads the
        class counts, which are private).

    Attributes
    ----------{_SHARED_ATTRS_DOC}

    See Also
    --------
    robust_accuracy : accuracy under the worst perturbation, exact for linear models.
    DPLogisticRegression : the same model without the perturbation.

    Examples
    --------
    >>> import numpy as np
    >>> from dpsk import BudgetAccountant, DPRobustLogisticRegression
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(500, 3)) / 3
    >>> y = (X[:, 0] > 0).astype(int)
    >>> clf = DPRobustLogisticRegression(radius=0.05, epsilon=1.0, classes=[0, 1],
    ...                                  accountant=BudgetAccountant(), random_state=0)
    >>> clf.fit(X, y).privacy_spent_
    (1.0, 0.0)
    """

    _parameter_constraints = {
        **_OutputOnlyClassifier._parameter_constraints,
        "radius": [Interval(Real, 0, np.inf, closed="left")],
        "norm": [Options(object, {2, "inf"})],
        "class_weight": [dict, StrOptions({"balanced"}), None],
    }

    def __init__(self, radius=0.1, epsilon=1.0, alpha="auto", fit_intercept=True, data_norm=1.0,
                 tol=1e-10, accountant=None, random_state=None, classes=None, delta=0.0,
                 norm=2, class_weight=None):
        self.radius = radius
        self.norm = norm
        self.class_weight = class_weight
        super().__init__(epsilon=epsilon, alpha=alpha, fit_intercept=fit_intercept,
                         data_norm=data_norm, tol=tol, accountant=accountant,
                         random_state=random_state, classes=classes, delta=delta)

    def _scaled_radius(self):
        """The radius in the units of ``design_matrix`` rows (public)."""
        scale = (INTERCEPT_SCALE if self.fit_intercept else 1.0) / self.data_norm
        return float(self.radius) * scale

    def _constants(self, n, n_features):
        if _check_norm(self.norm) == "inf":
            return RobustLinfConstants(self._scaled_radius(), n_features), None
        return RobustLogisticConstants(self._scaled_radius()), None

    def fit(self, X, y, sample_weight=None):
        """Fit the private model and charge ``epsilon`` to the accountant.

        ``sample_weight``: row weights in [0, 1] (times the normalised
        ``class_weight``); the objective still divides by ``n_samples``, so
        the noise is that of the unweighted fit (docs/privacy.rst, "Weights").
        Bad weights are refused before anything is spent. See
        :meth:`DPLogisticRegression.fit` for the rest.
        """
        return BaseDPLinearClassifier.fit(self, X, y, sample_weight)

    def _release_one(self, Z, t, n_features, epsilon, delta, alpha, rng, n_problems,
                     sample_weight=None):
        release = private_robust_linf_erm if _check_norm(self.norm) == "inf" else private_robust_erm
        return release(Z, t, self._scaled_radius(), n_features, epsilon, alpha,
                       rng, tol=self.tol, delta=delta, n_problems=n_problems,
                       sample_weight=sample_weight)

    def robust_score(self, X, y):
        """:func:`robust_accuracy` at this model's own ``radius`` and ``norm``."""
        check_not_datetime(X)
        return robust_accuracy(self, X, y, self.radius, norm=self.norm)
