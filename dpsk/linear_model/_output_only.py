"""Shared shell of the linear classifiers released by output perturbation only."""

import numpy as np

from .._data._design import design_matrix, unscale_coef
from .._data._validation import binary_targets, refuse_fit_params
from ..mechanisms._random import noise_source
from ._base import BaseDPLinearClassifier, as_input_dtype
from ._logistic import DPLogisticRegression

__all__ = []

#: Parameters every output-only model shares (numpydoc, indented for a class docstring).
_OUTPUT_ONLY_PARAMS_DOC = """    epsilon : float, default=1.0
        Privacy parameter of one fit, > 0. With more than two classes and
        ``delta = 0`` each one-vs-rest model gets ``epsilon / n_classes``.
    alpha : float or "auto", default="auto"
        L2 regularisation ``(alpha/2) ||w||^2`` on the rescaled weights.
        ``"auto"`` computes it from public quantities only (``n_samples``,
        ``n_features``, the classes, the budget and the objective's constants)
        by the alpha rule, ``dpsk.mechanisms._alpha.auto_alpha``
        (``docs/choosing_alpha.rst``); the value used is ``alpha_``.
    fit_intercept : bool, default=True
    data_norm : float, default=1.0
        Declared bound on a row's L2 norm; longer rows are scaled down.
    tol : float, default=1e-10
        Gradient norm the solver certifies; the noise covers ``tol / alpha``.
    accountant : BudgetAccountant or None, default=None
    random_state : int or None, default=None
        None reads fresh noise from the OS; an int is for tests and docs only.
    classes : array-like or None, default=None
        Declared labels (see ``DPLogisticRegression``).
    delta : float, default=0.0
        In [0, 1); ``> 0`` switches to Gaussian noise."""


class _OutputOnlyClassifier(BaseDPLinearClassifier):
    """A private linear classifier whose objective is not plain ERM (robust, tilted).

    Output perturbation is the only mechanism: objective perturbation's
    change-of-variables slack and noisy gradient descent's step sensitivity
    would need their own derivations for these objectives. One binary problem
    per class pair as in ``fit_private_problems`` (one-vs-rest beyond two
    classes, each from its own spawned noise source); the subclass releases one
    problem in :meth:`_release_one`.
    """

    #: Read by ``BaseDPLinearClassifier._privacy_event`` (pure: Gamma-norm;
    #: delta > 0: one Gaussian mechanism).
    perturbation = "output"

    _parameter_constraints = {
        key: value for key, value in BaseDPLinearClassifier._parameter_constraints.items()
        if key not in ("perturbation", "n_jobs", "class_weight")
    }

    #: Why ``fit`` refuses ``sample_weight`` (a fixed text; subclasses refine it).
    _no_weights_reason = (
        "{name}.fit does not support sample_weight yet: the weighted objective of this "
        "model has no certified solver in dpsk (the privacy argument of docs/privacy.rst, "
        "\"Weights\", would carry over). Use DPLogisticRegression, DPHuberSVM, "
        "DPRobustLogisticRegression or DPLinearSVC, which take sample_weight and "
        "class_weight. Nothing was spent."
    )

    def __init__(self, epsilon=1.0, alpha="auto", fit_intercept=True, data_norm=1.0, tol=1e-10,
                 accountant=None, random_state=None, classes=None, delta=0.0):
        self.epsilon = epsilon
        self.alpha = alpha
        self.fit_intercept = fit_intercept
        self.data_norm = data_norm
        self.tol = tol
        self.accountant = accountant
        self.random_state = random_state
        self.classes = classes
        self.delta = delta

    def fit(self, X, y, **fit_params):
        """Fit the private model and charge ``epsilon`` to the accountant.

        ``**fit_params`` takes only ``sample_weight=None``: weights are refused
        (``TypeError``, nothing spent; the reason is in the message), and
        ``fit`` keeps ``sample_weight`` out of its signature so scikit-learn
        treats the model as one without weights. See
        :meth:`BaseDPLinearClassifier.fit` for the rest.
        """
        refuse_fit_params(self, fit_params,
                          self._no_weights_reason.format(name=type(self).__name__))
        return super().fit(X, y)

    def _release_one(self, Z, t, n_features, epsilon, delta, alpha, rng, n_problems):
        raise NotImplementedError

    def _constants(self, n, n_features):
        """``(loss, loss_at)`` for the alpha rule: the objective's public constants.

        ``n`` rows and ``n_features`` columns of the user's ``X`` (both public).
        """
        raise NotImplementedError

    def _release(self, data, *, epsilon, delta):
        X, y, classes, weights = data  # None unless the subclass takes weights
        Z = design_matrix(X, self._row_norm(), self.fit_intercept)
        targets = binary_targets(y, classes)
        loss, loss_at = self._constants(Z.shape[0], X.shape[1])
        alpha = self._resolve_alpha(*Z.shape, loss, len(classes), epsilon, delta, loss_at)
        children = noise_source(self.random_state).spawn(len(targets))
        # Only a subclass whose fit takes weights gets them (DPRobustLogisticRegression).
        weighted = {} if weights is None else {"sample_weight": weights}
        W = np.vstack([
            self._release_one(Z, t, X.shape[1], epsilon, delta, alpha, child, len(targets),
                              **weighted)
            for t, child in zip(targets, children)
        ])
        coef, intercept = as_input_dtype(X, *unscale_coef(W, self._row_norm(),
                                                           self.fit_intercept))
        return {"classes_": classes, "coef_": coef, "intercept_": intercept, "alpha_": alpha}

    # The same probabilities as DPLogisticRegression (post-processing of the scores).
    predict_proba = DPLogisticRegression.predict_proba
    predict_log_proba = DPLogisticRegression.predict_log_proba
