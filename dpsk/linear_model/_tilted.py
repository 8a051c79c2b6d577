"""Differentially private tilted logistic regression (tilted ERM)."""

from numbers import Real

import numpy as np
from sklearn.utils._param_validation import Interval

from ..mechanisms._beyond_erm import TiltedLogisticConstants, private_tilted_erm
from ._logistic import _SHARED_ATTRS_DOC
from ._output_only import _OUTPUT_ONLY_PARAMS_DOC, _OutputOnlyClassifier

__all__ = ["DPTiltedLogisticRegression"]


class DPTiltedLogisticRegression(_OutputOnlyClassifier):
    __doc__ = f"""Tilted logistic regression, for the worst-off rows, with differential privacy.

    Minimises the tilted empirical risk (Li, Beirami, Sanjabi and Smith 2021)
    ``(1/t) log((1/n) sum_i exp(t f_i(w)))`` with ``f_i(w) = l(y_i w.x_i) +
    (alpha/2) ||w||^2`` the regularised logistic loss of row ``i``. ``t -> 0``
    is ordinary logistic regression; larger ``t`` gives the rows with the
    largest losses (often a minority group) more weight. Then noise is added to
    the minimiser (output perturbation, Algorithm 1 of Chaudhuri, Monteleoni
    and Sarwate 2011, as Lowy and Razaviyayn, Section 5.1, apply it to tilted
    ERM).

    Privacy guarantee: ``coef_`` and ``intercept_`` are ``epsilon``-DP
    (``delta = 0``, Gamma-norm noise) or ``(epsilon, delta)``-DP (``delta >
    0``, analytic Gaussian mechanism) with respect to replacing one row. The
    noise is calibrated to the sensitivity ``2 q / alpha`` of the exact
    minimiser, ``q = e^(t L) / (e^(t L) + n - 1)``, ``L = log(1 + e^B)``, ``B =
    min(1/alpha, sqrt(2 log 2 / alpha))`` (derived in
    ``dpsk.mechanisms._beyond_erm.tilted_sensitivity`` and ``docs/beyond_erm.rst``), plus
    the certified solver's distance and the release-grid rounding. Unlike
    ERM's ``2 / (n alpha)`` it falls like ``1/n`` only once ``n`` is well
    above ``e^(t L)``: keep ``t`` small or ``alpha`` large, or the noise is
    that of a model trained on one row. Conditions, all enforced: rows clipped
    to ``data_norm``; labels mapped to {{-1, +1}}; ``t > 0``; ``n_samples``
    public.

    Parameters
    ----------
    tilt : float, default=0.1
        The tilt ``t > 0`` (in units of the inverse loss).
{_OUTPUT_ONLY_PARAMS_DOC}

    Attributes
    ----------{_SHARED_ATTRS_DOC}

    See Also
    --------
    DPLogisticRegression : the ordinary (untilted) private model.

    Examples
    --------
    >>> import numpy as np
    >>> from dpsk import BudgetAccountant, DPTiltedLogisticRegression
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(500, 3)) / 3
    >>> y = (X[:, 0] > 0).astype(int)
    >>> clf = DPTiltedLogisticRegression(tilt=0.1, alpha=0.1, classes=[0, 1],
    ...                                  accountant=BudgetAccountant(), random_state=0)
    >>> clf.fit(X, y).privacy_spent_
    (1.0, 0.0)
    """

    _parameter_constraints = {
        **_OutputOnlyClassifier._parameter_constraints,
        "tilt": [Interval(Real, 0, np.inf, closed="neither")],
    }

    def __init__(self, tilt=0.1, epsilon=1.0, alpha="auto", fit_intercept=True, data_norm=1.0,
                 tol=1e-10, accountant=None, random_state=None, classes=None, delta=0.0):
        self.tilt = tilt
        super().__init__(epsilon=epsilon, alpha=alpha, fit_intercept=fit_intercept,
                         data_norm=data_norm, tol=tol, accountant=accountant,
                         random_state=random_state, classes=classes, delta=delta)

    def _check_params_before_fit(self):
        super()._check_params_before_fit()
        if not np.isfinite(self.tilt):
            raise ValueError("tilt must be a finite number > 0.")

    def _constants(self, n, n_features):
        # The tilted sensitivity depends on alpha, so the rule rebuilds the constants.
        def loss_at(alpha):
            return TiltedLogisticConstants(float(self.tilt), n, float(alpha))
        return loss_at(1.0), loss_at

    _no_weights_reason = (
        "{name}.fit does not support sample_weight: the tilted risk is a log of a sum of "
        "exponentials, not a sum of per-row losses, so the per-row argument that lets "
        "weights in [0, 1] keep the unweighted noise (docs/privacy.rst, \"Weights\") does "
        "not apply, and no weighted sensitivity bound has been derived. Nothing was spent."
    )

    def _release_one(self, Z, t, n_features, epsilon, delta, alpha, rng, n_problems):
        return private_tilted_erm(Z, t, self.tilt, epsilon, alpha, rng, tol=self.tol,
                                  delta=delta, n_problems=n_problems)
