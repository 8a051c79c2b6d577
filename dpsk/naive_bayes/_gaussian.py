"""Gaussian naive Bayes with differential privacy."""

from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from .._data._validation import finite_rows_advised
from ..accounting._ledger import BudgetAccountant
from ..mechanisms._moments import class_moments, moments_split
from ..mechanisms._random import noise_source
from ._base import BaseDPNaiveBayes
from ._estimates import check_priors, class_counts, pooled_variance, shrunk_class_means

__all__ = ["DPGaussianNB"]

_BOUNDS_REQUIRED = (
    "DPGaussianNB needs declared feature bounds: bounds=(lower, upper), scalars or one "
    "value per feature, from domain knowledge (a code book, a form's allowed range). "
    "After dpsk.preprocessing.BoundedScaler, PrivateBoundsScaler or make_table_encoder "
    "every feature lies in [0, 1]: use bounds=(0, 1). Bounds are never read from the "
    "data, which would leak its extremes. Nothing was spent."
)


class DPGaussianNB(BaseDPNaiveBayes):
    """Gaussian naive Bayes with differential privacy, from exact noisy counts and sums.

    ``fit`` clips every feature to its declared ``bounds`` and releases, with
    exact discrete noise, the class counts, the per-class sums of every feature
    and the sums of their squares over all rows (:func:`dpsk.mechanisms._moments.
    class_moments`). The model is then formed from the release alone: priors
    from the noisy counts, class means shrunk toward their common mean by how
    noisy each class's mean is (empirical Bayes), and one variance per feature
    shared by the classes, never below twice its own noise. When the noise
    swamps the differences between classes the model falls back on the priors,
    that is, on the majority class, instead of on noise.

    Privacy guarantee: the fitted parameters (``class_count_``,
    ``class_prior_``, ``theta_``, ``var_``) and every prediction made with them
    are ``epsilon``-differentially private (``delta = 0``) or ``(epsilon,
    delta)``-differentially private under replacing one training row. The
    release is three vectors of integers with discrete Laplace (Ghosh,
    Roughgarden and Sundararajan 2009) or discrete Gaussian (Canonne, Kamath and
    Steinke 2020, Theorem 14) noise calibrated to their sensitivities; the
    budget is split between them by a rule derived for accuracy (``budget_split``).
    Conditions, enforced: features clipped to the declared bounds, labels among
    the declared classes, weights in [0, 1], the number of rows public. This
    follows Vaidya, Shafiq, Basu and Hong (2013), "Differentially private naive
    Bayes classification", with exact noise, a shared variance and the split
    and shrinkage of ``docs/naive_bayes.rst``, which derives every bound.

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy parameter of one fit, > 0 and finite.
    delta : float, default=0.0
        In [0, 1). ``0`` gives pure epsilon-DP with discrete Laplace noise.
        ``delta > 0`` gives ``(epsilon, delta)``-DP with discrete Gaussian
        noise, whose size grows like ``sqrt(n_features)`` instead of
        ``n_features``: better for wide tables. Choose delta well below
        ``1 / n_samples``.
    bounds : tuple (lower, upper)
        Declared bounds of the features: two scalars, or two arrays of shape
        ``(n_features,)``, finite, ``lower < upper``. Values outside them are
        clipped, in ``fit`` and in prediction, silently. Required: with None
        (the default) ``fit`` refuses, for free, because bounds read from the
        data would leak its extremes. After
        :class:`~dpsk.preprocessing.BoundedScaler`,
        :class:`~dpsk.preprocessing.PrivateBoundsScaler` or
        :func:`~dpsk.preprocessing.make_table_encoder`, use ``bounds=(0, 1)``.
        Loose bounds cost accuracy (the noise is sized by the range), not
        privacy.
    classes : array-like of shape (n_classes,) or None, default=None
        The declared labels (at least two). They fix ``classes_`` whatever ``y``
        holds; labels outside them are refused before anything is spent, and a
        declared class absent from ``y`` still gets its (noise) statistics.
        None reads them from ``y`` and warns, every fit, that the fitted model
        then reveals which labels occur.
    priors : array-like of shape (n_classes,) or None, default=None
        Declared class probabilities (>= 0, summing to 1). None estimates them
        from the noisy class counts.
    var_smoothing : float, default=1e-9
        Portion of each feature's squared half-width (``((upper - lower) /
        2)^2``, public) added to its variance, for numerical stability. Unlike
        scikit-learn's, it does not read the largest variance of the data.
    budget_split : "auto" or tuple of 3 floats, default="auto"
        Shares of the budget for (class counts, class sums, squares), positive;
        a tuple is normalised to sum 1. ``"auto"`` derives them from ``n``,
        ``n_features``, the number of classes, ``epsilon`` and ``delta``
        (:func:`dpsk.mechanisms._moments.moments_split`): the split that
        minimises the expected excess log-loss to first order, with enough for
        the counts that the priors alone stay within 0.005 of the majority
        class. ``(1, 1, 1)`` is diffprivlib's even split.
    accountant : BudgetAccountant or None, default=None
        Ledger to charge. None means :func:`dpsk.default_accountant` at fit time.
    random_state : int or None, default=None
        None (the default) reads the noise from the operating system's secure
        generator, fresh at every fit. An int makes the noise reproducible, for
        tests and documentation only: a model whose seed is known is not private.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The declared classes, sorted (or those of ``y`` with ``classes=None``).
    class_count_ : ndarray of shape (n_classes,)
        Class counts estimated from the release (at least 1; summing to
        ``n_samples`` without weights).
    class_prior_ : ndarray of shape (n_classes,)
        ``priors``, or the estimated counts over their sum.
    theta_ : ndarray of shape (n_classes, n_features)
        Class means of the features (shrunk, see above).
    var_ : ndarray of shape (n_classes, n_features)
        Variances of the features: one per feature, the same for every class.
    bounds_ : tuple of ndarray of shape (n_features,)
        The declared bounds as arrays.
    budget_split_ : tuple of 3 floats
        The shares used for (counts, sums, squares).
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        When ``X`` has string column names.
    privacy_spent_ : tuple of (float, float)
        ``(epsilon, delta)``.
    privacy_event_ : dpsk.PrivacyEvent
        A ``PureDPEvent`` (``delta = 0``) or an ``ApproxDPEvent``.

    See Also
    --------
    DPCategoricalNB : naive Bayes for categorical columns.
    dpsk.preprocessing.make_table_encoder : a schema's table as features in [0, 1].

    Examples
    --------
    >>> import numpy as np
    >>> from dpsk import BudgetAccountant, DPGaussianNB
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, size=2000)
    >>> X = np.clip(0.4 + 0.2 * y[:, None] + 0.1 * rng.normal(size=(2000, 3)), 0, 1)
    >>> ledger = BudgetAccountant()
    >>> model = DPGaussianNB(epsilon=1.0, bounds=(0, 1), classes=[0, 1],
    ...                      accountant=ledger).fit(X, y)
    >>> bool(model.score(X, y) > 0.8)
    True
    >>> ledger.total()
    (1.0, 0.0)
    """

    _parameter_constraints = {
        "epsilon": [Interval(Real, 0, np.inf, closed="neither")],
        "delta": [Interval(Real, 0, 1, closed="left")],
        "bounds": [tuple, list, None],
        "classes": ["array-like", None],
        "priors": ["array-like", None],
        "var_smoothing": [Interval(Real, 0, np.inf, closed="left")],
        "budget_split": [StrOptions({"auto"}), tuple, list],
        "accountant": [BudgetAccountant, None],
        "random_state": [Interval(Integral, 0, None, closed="left"), None],
    }

    def __init__(self, epsilon=1.0, *, delta=0.0, bounds=None, classes=None, priors=None,
                 var_smoothing=1e-9, budget_split="auto", accountant=None, random_state=None):
        self.epsilon = epsilon
        self.delta = delta
        self.bounds = bounds
        self.classes = classes
        self.priors = priors
        self.var_smoothing = var_smoothing
        self.budget_split = budget_split
        self.accountant = accountant
        self.random_state = random_state

    # -- parameters (free) -----------------------------------------------------------------

    def _check_params_before_fit(self):
        if self.bounds is None:
            raise ValueError(_BOUNDS_REQUIRED)
        _bound_pair(self.bounds)
        _split_shares(self.budget_split)

    def _check_params_with_classes(self, n_classes):
        if self.priors is not None:
            check_priors(self.priors, n_classes)

    def _resolved_bounds(self, n_features):
        lower, upper = _bound_pair(self.bounds)
        try:
            lower = np.broadcast_to(lower, (n_features,)).astype(np.float64)
            upper = np.broadcast_to(upper, (n_features,)).astype(np.float64)
        except ValueError:
            raise ValueError(
                f"bounds must be scalars or have one value per feature ({n_features}); got "
                f"arrays of shapes {np.shape(lower)} and {np.shape(upper)}. Nothing was "
                "spent.") from None
        return lower, upper

    def _validate_X_and_y(self, X, y):
        X, y = validate_data(self, X, y, dtype=np.float64)
        self._resolved_bounds(X.shape[1])  # shapes are public: refused for free
        return X, y

    # -- the release (charged) -------------------------------------------------------------

    def _release(self, data, *, epsilon, delta):
        X, _, classes, index, weights = data
        n, d = X.shape
        K = len(classes)
        lower, upper = self._resolved_bounds(d)
        split = (moments_split(n, d, K, epsilon, delta) if _is_auto(self.budget_split)
                 else _split_shares(self.budget_split))
        moments, event = class_moments(X, index, K, lower, upper, epsilon,
                                       noise_source(self.random_state), delta=delta,
                                       split=split, sample_weight=weights)
        self._check_fitted_event(event)
        counts = class_counts(moments.counts, n if weights is None else None)
        total = counts.sum()
        raw = np.clip(moments.sums / counts[:, None], -1.0, 1.0)
        means = shrunk_class_means(raw, moments.sum_variance / counts**2)
        estimated = counts / total
        variance = pooled_variance(moments.squares, total, estimated, means,
                                   moments.square_variance)
        priors = estimated if self.priors is None else check_priors(self.priors, K)
        centre, half = 0.5 * lower + 0.5 * upper, 0.5 * upper - 0.5 * lower
        var = (variance + self.var_smoothing) * half**2
        return {
            "classes_": classes,
            "class_count_": counts,
            "class_prior_": priors,
            "theta_": centre + half * means,
            "var_": np.tile(var, (K, 1)),
            "bounds_": (lower, upper),
            "budget_split_": tuple(float(s) for s in split),
        }

    # -- prediction (post-processing) ------------------------------------------------------

    def _validate_X_predict(self, X):
        check_is_fitted(self)
        X = finite_rows_advised(validate_data, self, X, dtype=np.float64, reset=False)
        lower, upper = self.bounds_
        return np.clip(X, lower, upper)  # as in fit

    def _joint_log_likelihood(self, X):
        with np.errstate(divide="ignore"):
            log_prior = np.log(self.class_prior_)
        log_norm = -0.5 * np.log(2.0 * np.pi * self.var_).sum(axis=1)
        # sum_j (x_j - theta_kj)^2 / var_kj, by expanding the square (one matrix product).
        inv = 1.0 / self.var_
        quad = ((X**2) @ inv.T - 2.0 * X @ (self.theta_ * inv).T
                + (self.theta_**2 * inv).sum(axis=1))
        return log_prior + log_norm - 0.5 * quad

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False
        return tags


def _is_auto(value):
    return isinstance(value, str) and value == "auto"


def _bound_pair(bounds):
    """``bounds`` as two float arrays (scalars or 1-d), finite, ``lower < upper``: free."""
    try:
        lower, upper = bounds
        lower = np.asarray(lower, dtype=np.float64)
        upper = np.asarray(upper, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"bounds must be a pair (lower, upper) of numbers or arrays, got "
                         f"{bounds!r}. Nothing was spent.") from None
    if lower.ndim > 1 or upper.ndim > 1:
        raise ValueError("bounds must hold scalars or 1-d arrays. Nothing was spent.")
    try:
        ok = bool(np.all(np.isfinite(lower)) and np.all(np.isfinite(upper))
                  and np.all(lower < upper))
    except ValueError:  # shapes that do not broadcast
        ok = False
    if not ok:
        raise ValueError(f"bounds must be finite with lower < upper for every feature, got "
                         f"{bounds!r}. Nothing was spent.")
    return lower, upper


def _split_shares(split):
    """``budget_split`` as a tuple of three positive shares summing to 1 (or "auto"): free."""
    if _is_auto(split):
        return split
    try:
        values = np.asarray(split, dtype=np.float64)
    except (TypeError, ValueError):
        values = np.zeros(0)
    if values.shape != (3,) or not np.all(np.isfinite(values)) or not np.all(values > 0):
        raise ValueError(f"budget_split must be 'auto' or three positive numbers (counts, "
                         f"sums, squares), got {split!r}.")
    return tuple(float(v) for v in values / values.sum())
