"""Differentially private logistic regression."""

import numpy as np
from sklearn.utils._param_validation import StrOptions

from .._optimize._losses import LogisticLoss, MultinomialLoss
from ._base import AUTO_DATA_NORM, BaseDPLinearClassifier

__all__ = ["DPLogisticRegression"]

_CLASSES_AND_DELTA_DOC = """    classes : array-like of shape (n_classes,) or None, default=None
        The declared labels (at least two). They fix ``classes_``, the number of
        one-vs-rest models and each model's share of epsilon, whatever ``y``
        holds; labels of ``y`` outside them are refused before anything is
        spent, and a declared class absent from ``y`` still gets its (mostly
        noise) model. None reads them from ``y`` and warns, every fit, that the
        fitted model then reveals which labels occur.
    delta : float, default=0.0
        In [0, 1). ``0`` (the default) gives pure epsilon-differential privacy
        with the Gamma-norm noise of Chaudhuri et al. (2011). ``delta > 0``
        gives ``(epsilon, delta)``-differential privacy with Gaussian noise,
        whose norm grows like ``sqrt(d)`` instead of ``d``: output perturbation
        uses the analytic Gaussian mechanism (Balle and Wang 2018), with
        one-vs-rest models released as one joint Gaussian mechanism; objective
        perturbation uses Gaussian noise in the objective with the accounting
        derived in ``dpsk.mechanisms._noise.gaussian_objective_delta``. Choose delta
        well below ``1 / n_samples``."""

_CLASS_WEIGHT_DOC = """    class_weight : dict or None, default=None
        ``{class: weight > 0}`` for declared classes (with ``classes=None``
        any dict is refused, for free); classes not listed get
        1, then every weight is divided by the largest, so row weights stay in
        [0, 1]. Each row's loss is multiplied by its class's weight (and by
        ``sample_weight``); the objective still divides by ``n_samples``, so
        the noise and the guarantee do not change (docs/privacy.rst,
        "Weights"). For imbalanced data, declare the weights from a known or
        public prevalence ``p`` of the positives, e.g. ``{0: p, 1: 1 - p}``.
        ``"balanced"`` is refused: it reads the class counts of ``y``, which
        are private.
    class_prior : "auto", array-like of shape (n_classes,) or None, default="auto"
        What the intercepts shrink towards. ``"auto"`` (with
        ``fit_intercept=True``): a small share of ``epsilon`` (a public
        function of ``n_samples``, the width, the number of classes and the
        budget, a few per cent at large ``n_samples * epsilon``) releases the
        class counts with exact discrete Laplace (or, for Gaussian output
        perturbation and noisy gradient descent, Gaussian) noise, and every
        model's regulariser is centred on the model that predicts this noisy
        prior (log-odds, or log-probabilities for the softmax) instead of on
        zero: a strongly regularised model predicts the majority class, not
        its intercept's noise. After the model, a last share (a public
        function of ``n_samples * epsilon``) releases how many more training
        rows the model classifies correctly than the prior model, with exact
        noise; where that noisy margin is negative the fit releases the prior
        model instead (``prior_fallback_``): a model whose signal cannot beat
        the noise at this budget is replaced by the best constant the counts
        show (docs/privacy.rst, "The prior check"). The total cost is still
        ``(epsilon, delta)``, one ledger event; the noisy prior is
        ``class_prior_``. An array: a
        public prior you know (one value > 0 per class in the order of
        ``classes_``), which costs nothing. None: centre on zero (the
        behaviour before this parameter). Ignored with
        ``fit_intercept=False`` (docs/privacy.rst, "The class prior")."""

_SHARED_PARAMS_DOC = f"""
    epsilon : float, default=1.0
        Privacy parameter of one fit, > 0 and finite (with ``delta``, see
        below). With more than two classes the default (``multi_class="auto"``)
        is one multinomial release at the whole ``epsilon``; with
        ``multi_class="ovr"`` and ``delta = 0`` each one-vs-rest model gets
        ``epsilon / n_classes``.
    alpha : float or "auto", default="auto"
        L2 regularisation: the objective is
        ``(1/n) sum_i loss(y_i, w.x_i) + (alpha/2) ||w||^2`` on the rescaled
        rows (the paper's Lambda, scikit-learn's ``SGDClassifier`` alpha).
        scikit-learn's ``C`` corresponds to ``1 / (n_samples * alpha)``. Larger
        alpha means less noise and more bias. ``"auto"`` (the default) needs
        no tuning: the alpha rule (``dpsk.mechanisms._alpha.auto_alpha``)
        minimises a bound on the excess risk of this mechanism, computed from
        public quantities only (``n_samples``, ``n_features`` and the
        intercept, the number of classes, ``epsilon``, ``delta``,
        ``perturbation`` and the loss's constants; never the values of ``X``
        or ``y``). The derivation and calibration are in
        ``docs/choosing_alpha.rst``; the value used is stored as ``alpha_``.
    perturbation : {"objective", "output", "gradient"}, default="objective"
        ``"objective"``: Algorithm 2 of Chaudhuri et al. (2011), noise added to the
        objective (usually more accurate). ``"output"``: Algorithm 1, noise added
        to the exact minimiser, calibrated to its sensitivity ``2/(n alpha)``.
        ``"gradient"`` (needs ``delta > 0``): full-batch noisy gradient descent
        with a data-independent schedule (``dpsk.mechanisms._gradient``), no solver.
    fit_intercept : bool, default=True
        Fit an intercept as a regularised constant feature: each row becomes
        ``[x / data_norm, 1] / sqrt(2)`` so that its norm stays <= 1 and the
        objective stays strongly convex in every coordinate.
    data_norm : float or "auto", default="auto"
        Bound on the L2 norm of a row. Rows above it are scaled down to it, in
        ``fit`` and in prediction, silently (a count of clipped rows would be
        a noise-free statistic of the data). ``"auto"`` (the default) takes
        the bound the step before the model in its pipeline publishes, known
        before any data is read: ``sqrt(p + c)`` after
        :func:`~dpsk.preprocessing.make_table_encoder`, ``sqrt(d)`` after
        :class:`~dpsk.preprocessing.PrivateBoundsScaler` or
        :class:`~dpsk.preprocessing.BoundedScaler`, the clipper's norm after
        :class:`~dpsk.preprocessing.RowNormClipper` (see
        :func:`dpsk.pipeline.published_row_bound`). Without such a step (the
        model fitted on its own) it is 1, and ``fit`` warns
        (:class:`~dpsk.pipeline.DataNormWarning`, a fixed text): raw features
        clipped to norm 1 keep only their direction, and the model can end up
        predicting one class. A number declares the bound from domain
        knowledge: it is never derived from the data, which would leak. The
        value used is ``data_norm_``.
    tol : float, default=1e-10
        Bound on the gradient norm the solver must certify. The privacy noise
        accounts for it (output perturbation adds ``2 tol / alpha`` to the
        sensitivity; objective perturbation spends 1% of epsilon to cover it).
        The solver always returns a point within ``tol / alpha`` of the exact
        minimiser (a slower fallback with a proven rate takes over when the fast
        path cannot certify), so a fit does not fail on valid input.
    accountant : BudgetAccountant or None, default=None
        Ledger to charge. None means :func:`dpsk.default_accountant` at fit time.
        Cloning the estimator keeps the same ledger.
    n_jobs : int or None, default=None
        Workers for the one-vs-rest models (joblib).
    random_state : int or None, default=None
        None (the default) reads the noise from the operating system's
        cryptographically secure generator, fresh at every fit, and keeps
        nothing that could regenerate it. An int makes the noise reproducible,
        for tests and documentation only: a model whose seed is known is not
        private. Generators, ``RandomState`` and ``SeedSequence`` objects are
        refused, because the saved model would carry them.
{_CLASSES_AND_DELTA_DOC}
{_CLASS_WEIGHT_DOC}"""

_SHARED_ATTRS_DOC = """
    classes_ : ndarray of shape (n_classes,)
        The declared classes, sorted (or those of ``y`` with ``classes=None``).
    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
        Weights on the user's features (rows are clipped to ``data_norm``).
    intercept_ : ndarray of shape (1,) or (n_classes,)
        Intercepts (zeros when ``fit_intercept=False``).
    alpha_ : float
        The L2 strength this fit used: ``alpha``, or the alpha rule's value
        for ``alpha="auto"`` (a function of public quantities only).
    data_norm_ : float
        The row bound this fit used: ``data_norm``, or for ``"auto"`` the
        bound the preceding pipeline step publishes (else 1). Prediction clips
        rows to it too.
    n_features_in_ : int
        Number of features seen in fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Feature names, when X has string column names.
    privacy_spent_ : tuple of (float, float)
        The (epsilon, delta) this fit spent: ``(epsilon, delta)``.
    class_prior_ : ndarray of shape (n_classes,) or None
        The prior the intercepts shrink towards: the noisy, smoothed class
        prior released by the fit (``class_prior="auto"``), the declared one,
        or None (no intercept or ``class_prior=None``).
    prior_fallback_ : bool or None
        True when the prior check found the prior model at least as accurate
        on the training rows (a noisy, private comparison) and the fit
        released it instead of the model: ``coef_`` is then zero and every
        prediction is the noisy majority class. False when the model was
        kept; None when no check ran (``class_prior`` not ``"auto"`` or no
        intercept).
    privacy_event_ : dpsk.PrivacyEvent
        The ledger's record of this fit: a ``PureDPEvent`` (``delta = 0``), a
        ``GaussianEvent`` (Gaussian output perturbation) or an
        ``ApproxDPEvent`` (Gaussian objective perturbation)."""


class DPLogisticRegression(BaseDPLinearClassifier):
    __doc__ = f"""Logistic regression with epsilon-differential privacy.

    Privacy guarantee: the fitted ``coef_`` and ``intercept_`` (and so every
    prediction made with them) are ``epsilon``-differentially private with respect
    to replacing one training row, by Theorems 1 and 2 and Corollary 2 of
    Chaudhuri, Monteleoni and Sarwate (2011), "Differentially private empirical
    risk minimization", JMLR 12. Conditions, all enforced here: rows have norm
    <= 1 after clipping to ``data_norm`` and rescaling; labels are mapped to
    {{-1, +1}}; the logistic loss has ``|l'| <= 1`` and ``l'' <= c = 1/4``; the
    number of rows is treated as public; the solver's residual is covered by
    extra noise (see ``tol``). The multinomial model (``multi_class``) meets
    the same theorems' conditions with the softmax loss's constants (gradient
    norm <= ``sqrt(2)``, Hessian eigenvalues <= 1/2 of rank ``n_classes - 1``;
    derivations in ``dpsk._optimize._losses.MultinomialLoss`` and
    ``dpsk.mechanisms._noise``). With ``delta > 0`` the guarantee is ``(epsilon,
    delta)``-DP (see ``delta``). Weighted fits
    (``sample_weight`` in [0, 1], ``class_weight``) have the same guarantee and
    noise, a row's weight being part of the row (docs/privacy.rst, "Weights").

    Parameters
    ----------{_SHARED_PARAMS_DOC}

    multi_class : {{"auto", "ovr", "multinomial"}}, default="auto"
        How more than two classes are fitted. ``"multinomial"``: one softmax
        model whose whole ``n_classes x n_features`` weight matrix is a single
        private release at the whole ``(epsilon, delta)`` (the loss constants
        are derived in ``dpsk._optimize._losses.MultinomialLoss``); with two classes it
        is reported as one row of weights, like scikit-learn's. ``"ovr"``:
        one binary model per class, sharing the budget (``epsilon /
        n_classes`` each with ``delta = 0``, one joint Gaussian release for
        Gaussian output perturbation). ``"auto"``: multinomial for more than
        two classes, the binary logistic model for two; the multiclass
        benchmark (``python -m benchmarks multiclass``) measured the
        multinomial model as the more accurate at equal budget.

    Attributes
    ----------{_SHARED_ATTRS_DOC}

    See Also
    --------
    DPHuberSVM : the same mechanisms with a Huber-smoothed hinge loss.
    sklearn.linear_model.LogisticRegression : the non-private model.

    Examples
    --------
    >>> from dpsk import BudgetAccountant, DPLogisticRegression
    >>> from dpsk.datasets import load_adult
    >>> X, y = load_adult(return_X_y=True, preprocess=True)
    >>> acc = BudgetAccountant(epsilon=1.0)
    >>> clf = DPLogisticRegression(epsilon=0.1, alpha=1e-3, classes=[0, 1],
    ...                            accountant=acc).fit(X, y)
    >>> acc.total()
    (0.1, 0.0)
    """

    _parameter_constraints = {
        **BaseDPLinearClassifier._parameter_constraints,
        "data_norm": AUTO_DATA_NORM,
        "multi_class": [StrOptions({"auto", "ovr", "multinomial"})],
    }

    def __init__(self, epsilon=1.0, alpha="auto", perturbation="objective", fit_intercept=True,
                 data_norm="auto", tol=1e-10, accountant=None, n_jobs=None,
                 random_state=None, classes=None, delta=0.0, multi_class="auto",
                 class_weight=None,
                 class_prior="auto"):
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
        self.multi_class = multi_class
        self.class_weight = class_weight
        self.class_prior = class_prior

    def _make_loss(self, n_classes=2):
        if self.multi_class == "multinomial" or (self.multi_class == "auto" and n_classes > 2):
            return MultinomialLoss(n_classes)
        return LogisticLoss()

    def predict_proba(self, X):
        """Class probabilities.

        Two classes: the logistic function of the decision score. More classes:
        the softmax of the one-vs-rest scores, which always agrees with
        :meth:`predict` (normalised one-vs-rest sigmoids tie once noisy scores
        saturate them).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
        """
        return self._sigmoid_proba(X)

    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`."""
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))
