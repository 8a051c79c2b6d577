"""Differentially private linear SVM with the exact hinge loss (output perturbation)."""

from sklearn.utils._param_validation import StrOptions

from ..mechanisms._beyond_erm import HingeConstants, private_hinge_erm
from ._base import BaseDPLinearClassifier
from ._logistic import _SHARED_ATTRS_DOC
from ._output_only import _OUTPUT_ONLY_PARAMS_DOC, _OutputOnlyClassifier

__all__ = ["DPLinearSVC"]

#: The smallest alpha that ``alpha="auto"`` gives the hinge model.
HINGE_AUTO_ALPHA_FLOOR = 1e-4

# The shared parameters, with ``tol`` read as a duality gap rather than a gradient norm.
_SVC_PARAMS_DOC = _OUTPUT_ONLY_PARAMS_DOC.replace(
    """    tol : float, default=1e-10
        Gradient norm the solver certifies; the noise covers ``tol / alpha``.""",
    """    tol : float, default=1e-10
        Duality gap the solver certifies (in the units of the objective); the
        noise covers the distance ``sqrt(2 tol / alpha)`` it implies.""") + """
    class_weight : dict or None, default=None
        ``{class: weight > 0}``, normalised so the largest is 1 (missing
        classes get 1 first), multiplying ``sample_weight``; as in
        ``DPLogisticRegression``. ``"balanced"`` is refused (it reads the
        class counts, which are private)."""


class DPLinearSVC(_OutputOnlyClassifier):
    __doc__ = f"""Linear SVM (hinge loss) with differential privacy, by output perturbation.

    Minimises ``(1/n) sum_i max(0, 1 - y_i w.x_i) + (alpha/2) ||w||^2`` on the
    clipped, rescaled rows (the intercept is a column of the design, so it is
    regularised too), then adds noise to the minimiser (Algorithm 1 of
    Chaudhuri, Monteleoni and Sarwate 2011, which Lowy and Razaviyayn extend
    to non-smooth losses). Unlike :class:`DPHuberSVM` the loss is not
    smoothed: output perturbation needs no derivative, only strong convexity
    and a Lipschitz loss.

    Privacy guarantee: ``coef_`` and ``intercept_`` are ``epsilon``-DP
    (``delta = 0``, Gamma-norm noise) or ``(epsilon, delta)``-DP (``delta >
    0``, analytic Gaussian mechanism of Balle and Wang 2018) with respect to
    replacing one training row. The noise covers the sensitivity ``2 / (n
    alpha)`` of the exact minimiser (derived with subgradients in
    ``dpsk.mechanisms._beyond_erm.private_hinge_erm`` and ``docs/beyond_erm.rst``), the
    solver's certified distance ``sqrt(2 tol / alpha)`` (a duality gap ``g``
    gives ``||w - w*|| <= sqrt(2 g / alpha)``) and the release-grid rounding.
    Conditions, all enforced: rows clipped to ``data_norm``; labels mapped to
    {{-1, +1}}; ``n_samples`` public; the gap target ``tol`` fixed before the data.
    Weighted fits (``sample_weight`` in [0, 1], ``class_weight``) keep the
    guarantee and the noise (docs/privacy.rst, "Weights").

    Parameters
    ----------
{_SVC_PARAMS_DOC}

    Attributes
    ----------{_SHARED_ATTRS_DOC}

    Notes
    -----
    There is no ``predict_proba``: the hinge loss does not model probabilities.
    The solver is liblinear's dual coordinate descent (through scikit-learn)
    followed by a duality-gap certificate with a rigorous rounding bound
    (``dpsk._optimize._hinge_solver``).

    See Also
    --------
    DPHuberSVM : the Huber-smoothed SVM, which also offers objective perturbation.
    sklearn.svm.LinearSVC : the non-private model (``loss="hinge"``).

    Examples
    --------
    >>> import numpy as np
    >>> from dpsk import BudgetAccountant, DPLinearSVC
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(500, 3)) / 3
    >>> y = (X[:, 0] > 0).astype(int)
    >>> clf = DPLinearSVC(epsilon=1.0, alpha=0.01, classes=[0, 1],
    ...                   accountant=BudgetAccountant(), random_state=0)
    >>> clf.fit(X, y).privacy_spent_
    (1.0, 0.0)
    """

    _parameter_constraints = {
        **_OutputOnlyClassifier._parameter_constraints,
        "class_weight": [dict, StrOptions({"balanced"}), None],
    }

    def __init__(self, epsilon=1.0, alpha="auto", fit_intercept=True, data_norm=1.0, tol=1e-10,
                 accountant=None, random_state=None, classes=None, delta=0.0,
                 class_weight=None):
        super().__init__(epsilon=epsilon, alpha=alpha, fit_intercept=fit_intercept,
                         data_norm=data_norm, tol=tol, accountant=accountant,
                         random_state=random_state, classes=classes, delta=delta)
        self.class_weight = class_weight

    def fit(self, X, y, sample_weight=None):
        """Fit the private SVM and charge ``epsilon`` to the accountant.

        ``sample_weight``: row weights in [0, 1] (times the normalised
        ``class_weight``); the objective still divides by ``n_samples``, so
        the noise is that of the unweighted fit (docs/privacy.rst, "Weights").
        Bad weights are refused before anything is spent.
        """
        return BaseDPLinearClassifier.fit(self, X, y, sample_weight)

    def _constants(self, n, n_features):
        return HingeConstants(), None

    def _resolve_alpha(self, n, d, loss, n_classes, epsilon, delta, loss_at=None):
        alpha = super()._resolve_alpha(n, d, loss, n_classes, epsilon, delta, loss_at)
        if isinstance(self.alpha, str):
            # Below this the solver may need its slow certified fallback (minutes on
            # Adult, docs/beyond_erm.rst); a public floor, like the rule's own range.
            alpha = max(alpha, HINGE_AUTO_ALPHA_FLOOR)
        return alpha

    def _release_one(self, Z, t, n_features, epsilon, delta, alpha, rng, n_problems,
                     sample_weight=None):
        return private_hinge_erm(Z, t, epsilon, alpha, rng, gap=self.tol, delta=delta,
                                 n_problems=n_problems, sample_weight=sample_weight)

    @property
    def predict_proba(self):
        """Not available: the hinge loss does not model probabilities."""
        raise AttributeError("DPLinearSVC has no predict_proba: the hinge loss does not "
                             "model probabilities.")

    @property
    def predict_log_proba(self):
        """Not available: the hinge loss does not model probabilities."""
        raise AttributeError("DPLinearSVC has no predict_log_proba: the hinge loss does not "
                             "model probabilities.")
