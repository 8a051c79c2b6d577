"""Differentially private nonlinear classification through random Fourier features.

Algorithm 3 of Chaudhuri, Monteleoni and Sarwate (2011): draw random frequencies
independently of the data (Rahimi and Recht, 2007), map every input through the
resulting feature map, and run private linear ERM (Algorithm 1 or 2) on the
features. The frequencies are a public pre-filter; all the privacy comes from the
linear release, which goes through ``dpsk.mechanisms._erm.private_erm`` like every other
dpsk model.
"""

import math
from numbers import Integral, Real

import numpy as np
from sklearn.utils import gen_batches
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted, validate_data

from .._data._design import INTERCEPT_SCALE, clip_rows, unscale_coef
from .._data._validation import (
    check_not_datetime,
    finite_rows_advised,
    resolve_classes,
    values_withheld,
)
from .._optimize._losses import MultinomialLoss, make_loss
from ..linear_model._base import BaseDPLinearClassifier
from ..linear_model._logistic import _CLASS_WEIGHT_DOC, _CLASSES_AND_DELTA_DOC
from ..mechanisms._random import public_rng

__all__ = ["DPKernelClassifier", "sample_frequencies", "fourier_features"]

#: Memory budget (bytes) of the per-chunk temporaries: the features of a chunk of
#: rows plus their projections ``X W^T``. Prediction never holds more than this
#: (plus the inputs and the scores), whatever the number of rows.
_CHUNK_BYTES = 64 * 2**20


def _chunk_rows(n_columns):
    """Rows per chunk so that ``n_columns`` float64 values per row fit ``_CHUNK_BYTES``."""
    return max(1, int(_CHUNK_BYTES // (8 * max(int(n_columns), 1))))


def sample_frequencies(kernel, gamma, n_frequencies, n_features, rng):
    """Draw the random frequencies of a shift-invariant kernel (Rahimi and Recht, 2007).

    For ``k(x, x') = E_w[cos(w.(x - x'))]`` (Bochner's theorem), ``w`` is drawn
    from the kernel's spectral density:

    * ``"rbf"``, ``exp(-gamma ||x - x'||_2^2)``: ``w ~ N(0, 2 gamma I)``;
    * ``"laplacian"``, ``exp(-gamma ||x - x'||_1)``: independent Cauchy
      coordinates with location 0 and scale ``gamma``.

    The draw uses only ``rng`` and the public shape, never the data.

    Parameters
    ----------
    kernel : {"rbf", "laplacian"}
    gamma : float
        Kernel parameter, finite and > 0.
    n_frequencies : int
        Number of frequencies (rows of the result), >= 1.
    n_features : int
        Input dimension, >= 1.
    rng : numpy.random.Generator

    Returns
    -------
    random_weights : ndarray of shape (n_frequencies, n_features)
    """
    size = (int(n_frequencies), int(n_features))
    if kernel == "rbf":
        return rng.normal(scale=np.sqrt(2.0 * gamma), size=size)
    if kernel == "laplacian":
        return gamma * rng.standard_cauchy(size=size)
    raise ValueError(f"Unknown kernel {kernel!r}; expected 'rbf' or 'laplacian'.")


def _fill_features(X, random_weights, n_sines, out, scale):
    """Write ``scale * [cos(X W^T), sin(X W_s^T)]`` into ``out`` (no chunking).

    ``W_s`` is the first ``n_sines`` rows of ``W``.
    """
    m = random_weights.shape[0]
    proj = X @ random_weights.T
    np.cos(proj, out=out[:, :m])
    np.sin(proj[:, :n_sines], out=out[:, m:m + n_sines])
    out[:, :m + n_sines] *= scale
    return out


def fourier_features(X, random_weights, *, n_components=None, fit_intercept=False, out=None):
    """The feature map ``phi(x) = [cos(W x), sin(W x)] / sqrt(m)``.

    ``m = random_weights.shape[0]`` frequencies give ``n_components = 2 m``
    features, and ``||phi(x)||_2 = 1`` for every ``x`` (``cos^2 + sin^2 = 1``),
    exactly up to floating-point rounding, whatever the norm of ``x``.
    ``phi(x).phi(x')`` is the average of ``cos(w_j.(x - x'))``, an unbiased
    estimate of the kernel ``k(x, x')`` whose frequencies ``W`` were drawn from
    (see :func:`sample_frequencies`).

    An odd ``n_components = 2 m - 1`` drops the sine of the last frequency: the
    norm is then ``sqrt((m - 1 + cos^2(w_m.x)) / m) <= 1`` (the privacy
    condition still holds) and the kernel estimate has an ``O(1/m)`` bias.

    With ``fit_intercept=True`` each row is ``[phi(x), 1] / sqrt(2)`` (norm <= 1,
    exactly 1 for even ``n_components``), the design rows the private solver sees
    when an intercept is fitted.

    The rows are computed in chunks, so the only temporaries are bounded by
    ``_CHUNK_BYTES``.

    Parameters
    ----------
    X : ndarray of shape (n, d)
    random_weights : ndarray of shape (m, d)
    n_components : int or None, default=None
        ``2 m`` or ``2 m - 1``; None means ``2 m``.
    fit_intercept : bool, default=False
        Append the scaled constant column.
    out : ndarray of shape (n, n_components + fit_intercept) or None
        Preallocated float64 output.

    Returns
    -------
    features : ndarray of shape (n, n_components + fit_intercept)
    """
    n = X.shape[0]
    m = random_weights.shape[0]
    if n_components is None:
        n_components = 2 * m
    if n_components not in (2 * m, 2 * m - 1):
        raise ValueError(
            f"n_components={n_components} does not match {m} frequencies "
            f"(expected {2 * m - 1} or {2 * m})."
        )
    n_columns = n_components + int(bool(fit_intercept))
    if out is None:
        out = np.empty((n, n_columns))
    elif out.shape != (n, n_columns):
        raise ValueError(f"out has shape {out.shape}, expected {(n, n_columns)}.")
    scale = (INTERCEPT_SCALE if fit_intercept else 1.0) / np.sqrt(m)
    for rows in gen_batches(n, _chunk_rows(m)):
        _fill_features(X[rows], random_weights, n_components - m, out[rows], scale)
    if fit_intercept:
        out[:, -1] = INTERCEPT_SCALE
    return out


def _logistic_only(estimator):
    if estimator.loss != "logistic":
        raise AttributeError(
            f"predict_proba is only available with loss='logistic', not loss={estimator.loss!r}."
        )
    return True


class DPKernelClassifier(BaseDPLinearClassifier):
    """Nonlinear classifier with epsilon-differential privacy (random Fourier features).

    Algorithm 3 of Chaudhuri, Monteleoni and Sarwate (2011), "Differentially
    private empirical risk minimization", JMLR 12, Section 5: draw
    ``m = n_components / 2`` random frequencies ``W`` from the spectral density
    of a shift-invariant kernel, independently of the data (Rahimi and Recht,
    2007, "Random features for large-scale kernel machines"), map each (clipped)
    input to ``phi(x) = [cos(W x), sin(W x)] / sqrt(m)`` and fit a
    private L2-regularised linear classifier on ``phi(x)``. The decision function
    is ``phi(clip(x)) @ coef_.T + intercept_``, which approximates a kernel
    machine for ``k(x, x')``.

    Privacy guarantee: the released model (``coef_``, ``intercept_`` and
    ``random_weights_``, and so every prediction made with it) is
    ``epsilon``-differentially private with respect to replacing one training
    row. This is Theorem 5 of the paper: the frequencies are drawn independently
    of the data, so the features are a fixed, public map, and the linear release
    on them is private by Theorem 1 (``perturbation="output"``) or Theorem 2
    (``"objective"``; Corollary 4 for the Huber loss). Conditions, all enforced
    here: every feature row has L2 norm <= 1 (``||phi(x)|| = 1`` for every input,
    by construction; with an intercept the design row is ``[phi(x), 1] / sqrt(2)``,
    again of norm 1); labels are mapped to {-1, +1}; the loss has ``|l'| <= 1`` and
    ``l'' <= c`` (``c = 1/4`` logistic, ``c = 1/(2h)`` Huber); the number of rows
    is treated as public; the solver's residual is covered by extra noise (see
    ``tol``). Weighted fits
    (``sample_weight`` in [0, 1], ``class_weight``) have the same guarantee and
    noise, a row's weight being part of the row (docs/privacy.rst, "Weights").
    With more than two classes and the logistic loss the default is
    one multinomial (softmax) release at the whole epsilon (constants in
    ``dpsk._optimize._losses.MultinomialLoss``); one-vs-rest models (``multi_class="ovr"``,
    and the Huber loss) get ``epsilon / n_classes`` each (sequential
    composition).

    Erratum: the paper's map ``sqrt(2/D) cos(w.x + b)`` has norm up to
    ``sqrt(2)``, not 1, which breaks the ``||x|| <= 1`` condition of Algorithms 1
    and 2. dpsk uses the ``[cos, sin]`` pairing, whose norm is exactly 1 (it is
    also the lower-variance estimator of the kernel).

    The released model contains no training rows: unlike a kernel SVM (whose
    support vectors are training points) it consists of ``n_components`` (+1)
    noisy weights on random features and the data-independent frequencies.

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy parameter of one fit, > 0 and finite. With more than two classes
        and one-vs-rest, each binary model gets ``epsilon / n_classes``.
    kernel : {"rbf", "laplacian"}, default="rbf"
        Kernel approximated by the random features: ``"rbf"`` is
        ``exp(-gamma ||x - x'||_2^2)`` (frequencies ``N(0, 2 gamma I)``),
        ``"laplacian"`` is ``exp(-gamma ||x - x'||_1)`` (independent Cauchy
        frequencies with scale ``gamma``).
    gamma : float, default=1.0
        Kernel parameter, finite and > 0, in the units of the clipped inputs
        (rows of norm <= ``data_norm``; inputs are not rescaled by
        ``data_norm`` before the map). Larger gamma means a narrower kernel.
        Choose it without looking at the private data (or with
        ``dpsk`` private tuning): a gamma tuned on the data leaks.
    n_components : int, default=100
        Number of random features ``D`` (the output dimension of the map, as in
        :class:`sklearn.kernel_approximation.RBFSampler`). ``D / 2``
        frequencies each give a cosine and a sine feature. Use an even number:
        an odd ``D`` draws ``(D + 1) / 2`` frequencies and drops the sine of the
        last one, which keeps the feature norm <= 1 (so privacy holds) but makes
        the kernel estimate slightly biased. The privacy noise grows with ``D``,
        so more features are not always better under privacy.
    alpha : float or "auto", default="auto"
        L2 regularisation: the objective is
        ``(1/n) sum_i loss(y_i, w.z_i) + (alpha/2) ||w||^2`` on the design rows
        ``z_i`` (the paper's Lambda). Larger alpha means less noise. ``"auto"``
        computes it by the alpha rule (``dpsk.mechanisms._alpha.auto_alpha``,
        ``docs/choosing_alpha.rst``) from public quantities only, with ``d =
        n_components`` (plus the intercept); the value used is ``alpha_``.
    loss : {"logistic", "huber"}, default="logistic"
        ``"logistic"``: logistic regression on the features (``c = 1/4``);
        ``"huber"``: the Huber-smoothed hinge loss of the paper, Eq. 35, a kernel
        SVM (``c = 1/(2h)``; no ``predict_proba``).
    h : float, default=0.5
        Width of the Huber zone, > 0; used only with ``loss="huber"``.
    multi_class : {"auto", "ovr", "multinomial"}, default="auto"
        More than two classes: ``"multinomial"`` (``loss="logistic"`` only)
        releases one softmax model over the features at the whole budget, as
        in :class:`~dpsk.DPLogisticRegression`; ``"ovr"`` fits one binary model
        per class at ``epsilon / n_classes`` each (pure epsilon); ``"auto"`` is
        multinomial for the logistic loss with more than two classes and
        one-vs-rest otherwise.
    perturbation : {"objective", "output", "gradient"}, default="objective"
        ``"objective"``: Algorithm 2 (noise in the objective, usually more
        accurate). ``"output"``: Algorithm 1 (noise added to the minimiser).
        ``"gradient"`` (needs ``delta > 0``): noisy gradient descent.
    fit_intercept : bool, default=True
        Fit an intercept as a regularised constant feature: each design row is
        ``[phi(x), 1] / sqrt(2)``, so its norm stays 1 and the objective stays
        strongly convex in every coordinate.
    data_norm : float, default=1.0
        Declared bound on the L2 norm of an input row. Rows above it are scaled
        down to it, silently, in ``fit`` and in prediction,
        before the map. The privacy guarantee does not depend on it (the features
        have norm 1 for any input); it fixes the input domain the kernel and
        ``gamma`` refer to. Choose it from domain knowledge, never from the data.
    tol : float, default=1e-10
        Bound on the gradient norm the solver must certify; the privacy noise
        accounts for it. The solver always returns a point within ``tol / alpha``
        of the exact minimiser (a slower fallback with a proven rate takes over
        when the fast path cannot certify), so a fit does not fail on valid input.
    accountant : BudgetAccountant or None, default=None
        Ledger to charge. None means :func:`dpsk.default_accountant` at fit time.
        Cloning the estimator keeps the same ledger.
    n_jobs : int or None, default=None
        Workers for the one-vs-rest models (joblib).
    random_state : int or None, default=None
        None (the default): the noise is read from the operating system's
        cryptographically secure generator, and the public frequencies come from
        a separate generator with its own fresh entropy, so publishing
        ``random_weights_`` reveals nothing about the noise. An int makes both
        reproducible, for tests and documentation only: a model whose seed is
        known is not private (the noise can be recomputed). Generators,
        ``RandomState`` and ``SeedSequence`` objects are refused, because the
        saved model would carry them.
%(classes_and_delta)s

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    random_weights_ : ndarray of shape ((n_components + 1) // 2, `n_features_in_`)
        The random frequencies ``W``, drawn independently of the data. Public:
        they are part of the released model, and predictions need them.
    coef_ : ndarray of shape (1, n_components) or (n_classes, n_components)
        Weights on the features ``phi(x)`` (cosines first, then sines).
    intercept_ : ndarray of shape (1,) or (n_classes,)
        Intercepts (zeros when ``fit_intercept=False``).
    alpha_ : float
        The L2 strength this fit used (``alpha``, or the alpha rule's value).
    n_features_in_ : int
        Number of input features seen in fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Feature names, when X has string column names.
    privacy_spent_ : tuple of (float, float)
        The (epsilon, delta) this fit spent: ``(epsilon, delta)``.
    class_prior_ : ndarray of shape (n_classes,) or None
        The prior the intercepts shrink towards (as in
        :class:`~dpsk.DPLogisticRegression`).
    prior_fallback_ : bool or None
        Whether the prior check released the prior model instead of the
        model (as in :class:`~dpsk.DPLogisticRegression`).
    privacy_event_ : dpsk.PrivacyEvent
        The ledger's record of this fit (see :class:`~dpsk.DPLogisticRegression`).

    Notes
    -----
    ``fit`` builds the ``n x (n_components + 1)`` float64 design matrix once
    (memory ``O(n D)``); prediction works through chunks of rows whose
    temporaries stay under 64 MB, so it never materialises the features of all
    rows. Sparse input is not supported.

    See Also
    --------
    DPLogisticRegression : the private linear model on the raw features.
    sklearn.kernel_approximation.RBFSampler : the non-private random features.

    Examples
    --------
    >>> from sklearn.datasets import make_circles
    >>> from dpsk import BudgetAccountant
    >>> from dpsk.kernel import DPKernelClassifier
    >>> X, y = make_circles(n_samples=5000, noise=0.05, factor=0.5, random_state=0)
    >>> acc = BudgetAccountant(epsilon=1.0)
    >>> clf = DPKernelClassifier(epsilon=1.0, gamma=3.0, classes=[0, 1], accountant=acc)
    >>> clf = clf.fit(X / 1.5, y)
    >>> acc.total()
    (1.0, 0.0)
    """

    _parameter_constraints = {
        **BaseDPLinearClassifier._parameter_constraints,
        "kernel": [StrOptions({"rbf", "laplacian"})],
        "gamma": [Interval(Real, 0, np.inf, closed="neither")],
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "loss": [StrOptions({"logistic", "huber"})],
        "h": [Interval(Real, 0, np.inf, closed="neither")],
        "multi_class": [StrOptions({"auto", "ovr", "multinomial"})],
    }

    def __init__(self, epsilon=1.0, kernel="rbf", gamma=1.0, n_components=100, alpha="auto",
                 loss="logistic", h=0.5, perturbation="objective", fit_intercept=True,
                 data_norm=1.0, tol=1e-10, accountant=None, n_jobs=None,
                 random_state=None, classes=None, delta=0.0, multi_class="auto",
                 class_weight=None,
                 class_prior="auto"):
        self.epsilon = epsilon
        self.kernel = kernel
        self.gamma = gamma
        self.n_components = n_components
        self.alpha = alpha
        self.loss = loss
        self.h = h
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
        if self.loss == "logistic" and (
                self.multi_class == "multinomial"
                or (self.multi_class == "auto" and n_classes > 2)):
            return MultinomialLoss(n_classes)
        return make_loss(self.loss, self.h)

    def _check_params_before_fit(self):
        """Refuse kernel scales whose projections ``W x`` could overflow (free).

        ``|w.x| <= ||w|| data_norm`` for a clipped row; an infinite projection
        would make the fit fail on a data set with a row at the bound and not on
        its neighbour. The frequencies' size is ``sqrt(2 gamma)`` times a normal
        (rbf) or ``gamma`` times a Cauchy variable (laplacian), which numpy's
        samplers keep below ``1e20`` per coordinate; the check uses that margin
        and depends on the parameters alone.
        """
        super()._check_params_before_fit()
        if self.multi_class == "multinomial" and self.loss != "logistic":
            raise ValueError(
                "multi_class='multinomial' is the softmax model of loss='logistic'; with "
                "loss='huber' use multi_class='ovr' (or 'auto')."
            )
        scale = math.sqrt(2.0 * self.gamma) if self.kernel == "rbf" else self.gamma
        if scale * self.data_norm > 1e250:
            raise ValueError(
                f"gamma={self.gamma!r} with data_norm={self.data_norm!r} puts the random "
                "projections beyond the floating-point range; rescale the inputs so that "
                "data_norm is of order 1 and gamma is moderate."
            )

    def _validate_input(self, X, y):
        check_not_datetime(X)
        X, y = values_withheld(validate_data, self, X, y, dtype=np.float64)
        return X, y, resolve_classes(y, self.classes)

    def _release(self, data, *, epsilon, delta):
        X, y, classes, weights = data
        # The frequencies are published in random_weights_, so they come from a
        # public generator with its own entropy, never from the noise source.
        random_weights = sample_frequencies(
            self.kernel, self.gamma, (self.n_components + 1) // 2, X.shape[1],
            public_rng(self.random_state),
        )
        X = clip_rows(X, self.data_norm)
        Z = fourier_features(X, random_weights, n_components=self.n_components,
                             fit_intercept=self.fit_intercept)
        del X
        loss = self._make_loss(len(classes))
        # d is the number of random features (plus the intercept column).
        W, alpha, prior, fallback = self._fit_linear(Z, y, classes, loss, weights, epsilon,
                                                     delta)
        # The design rows are [phi, 1]/sqrt(2): map the weights back to phi and 1.
        coef, intercept = unscale_coef(W, 1.0, self.fit_intercept)
        return {
            "classes_": classes,
            "random_weights_": random_weights,
            "coef_": coef,
            "intercept_": intercept,
            "alpha_": alpha,
            "class_prior_": prior,
            "prior_fallback_": fallback,
        }

    def decision_function(self, X):
        """Signed scores ``phi(clip(X)) @ coef_.T + intercept_``, computed in chunks.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        scores : ndarray of shape (n_samples,) or (n_samples, n_classes)
            For two classes, positive scores mean ``classes_[1]``.
        """
        check_is_fitted(self)
        check_not_datetime(X)
        X = finite_rows_advised(validate_data, self, X, dtype=np.float64, reset=False)
        n = X.shape[0]
        n_models, n_columns = self.coef_.shape
        m = self.random_weights_.shape[0]
        scores = np.empty((n, n_models))
        # Per row of a chunk: the features, the projections and the scores.
        for rows in gen_batches(n, _chunk_rows(n_columns + m + n_models)):
            X_chunk = clip_rows(X[rows], self.data_norm)
            features = fourier_features(X_chunk, self.random_weights_, n_components=n_columns)
            np.matmul(features, self.coef_.T, out=scores[rows])
        scores += self.intercept_
        return scores.ravel() if n_models == 1 else scores

    @available_if(_logistic_only)
    def predict_proba(self, X):
        """Class probabilities: the logistic of the score for two classes, else the
        softmax of the one-vs-rest scores (which always agrees with predict).

        Only with ``loss="logistic"``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
        """
        return self._sigmoid_proba(X)

    @available_if(_logistic_only)
    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba` (only with ``loss="logistic"``)."""
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False  # the feature map needs dense rows
        return tags


# The classes and delta parameters mean the same in every model: one text.
DPKernelClassifier.__doc__ = DPKernelClassifier.__doc__.replace(
    "%(classes_and_delta)s", _CLASSES_AND_DELTA_DOC.rstrip() + "\n" + _CLASS_WEIGHT_DOC.rstrip()
)
