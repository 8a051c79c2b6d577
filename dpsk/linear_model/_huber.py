"""Differentially private linear SVM with the Huber-smoothed hinge loss."""

from numbers import Real

import numpy as np
from sklearn.utils._param_validation import Interval

from .._optimize._losses import HuberLoss
from ._base import AUTO_DATA_NORM, BaseDPLinearClassifier
from ._logistic import _SHARED_ATTRS_DOC, _SHARED_PARAMS_DOC

__all__ = ["DPHuberSVM"]


class DPHuberSVM(BaseDPLinearClassifier):
    __doc__ = f"""Linear SVM (Huber-smoothed hinge loss) with epsilon-differential privacy.

    The hinge loss is not differentiable, which the privacy proofs need, so the
    model uses the Huber loss of Chaudhuri, Monteleoni and Sarwate (2011), Eq. 35:
    ``0`` above ``1 + h``, ``(1 + h - z)^2 / (4h)`` within ``h`` of 1, ``1 - z``
    below ``1 - h``.

    Privacy guarantee: ``coef_`` and ``intercept_`` are
    ``epsilon``-differentially private with respect to replacing one training row
    (Theorem 1 for output perturbation; Corollary 4, which extends Theorem 2 to this
    piecewise twice-differentiable loss, for objective perturbation with
    ``c = 1/(2h)``). Conditions, enforced here: rows of norm <= 1 after clipping
    and rescaling, labels in {{-1, +1}}, ``|l'| <= 1``, public ``n``, solver residual
    covered by extra noise (see ``tol``). Weighted fits
    (``sample_weight`` in [0, 1], ``class_weight``) have the same guarantee and
    noise, a row's weight being part of the row (docs/privacy.rst, "Weights").

    Parameters
    ----------{_SHARED_PARAMS_DOC}
    h : float, default=0.5
        Width of the Huber zone, > 0. Smaller is closer to the hinge loss but
        raises ``c = 1/(2h)`` and with it the privacy slack of objective
        perturbation.

    Attributes
    ----------{_SHARED_ATTRS_DOC}

    Notes
    -----
    There is no ``predict_proba``: the Huber loss does not model probabilities.

    See Also
    --------
    DPLogisticRegression : the same mechanisms with the logistic loss.
    sklearn.linear_model.SGDClassifier : ``loss="modified_huber"`` is a related
        non-private model.

    Examples
    --------
    >>> from dpsk import DPHuberSVM
    >>> from dpsk.datasets import load_adult
    >>> X, y = load_adult(return_X_y=True, preprocess=True)
    >>> svm = DPHuberSVM(epsilon=0.5, alpha=1e-3, classes=[0, 1]).fit(X, y)
    >>> svm.privacy_spent_
    (0.5, 0.0)
    """

    _parameter_constraints = {
        **BaseDPLinearClassifier._parameter_constraints,
        "data_norm": AUTO_DATA_NORM,
        "h": [Interval(Real, 0, np.inf, closed="neither")],
    }

    def __init__(self, epsilon=1.0, alpha="auto", perturbation="objective", fit_intercept=True,
                 data_norm="auto", tol=1e-10, accountant=None, n_jobs=None,
                 random_state=None, h=0.5, classes=None, delta=0.0, class_weight=None):
        self.epsilon = epsilon
        self.alpha = alpha
        self.perturbation = perturbation
        self.fit_intercept = fit_intercept
        self.data_norm = data_norm
        self.tol = tol
        self.accountant = accountant
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.classes = classes
        self.delta = delta
        self.h = h
        self.class_weight = class_weight

    def _make_loss(self, n_classes=2):
        return HuberLoss(self.h)
