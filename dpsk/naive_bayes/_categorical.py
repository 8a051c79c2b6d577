"""Categorical naive Bayes with differential privacy."""

from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from .._data._validation import finite_rows_advised
from ..accounting._ledger import BudgetAccountant
from ..mechanisms._counts import count_variance, noisy_histogram
from ..mechanisms._random import noise_source
from ._base import BaseDPNaiveBayes
from ._estimates import check_priors, class_counts

__all__ = ["DPCategoricalNB"]

_CATEGORIES_REQUIRED = (
    "DPCategoricalNB needs the declared number of categories of every column: "
    "n_categories=c (the same for all) or one count per column, from the schema (a "
    "code book, the category lists given to OrdinalEncoder or make_table_encoder). "
    "They are never read from the data, which would reveal which values occur. "
    "Nothing was spent."
)

_CODES_OUTSIDE = (
    "Column {column} of X holds a value that is not one of its declared categories "
    "(encoding='ordinal': an integer code in [0, n_categories); encoding='onehot': a "
    "block of 0/1 values with at most one 1). Negative values in data, fractions and "
    "codes beyond the declared ones are outside the domain. The value is not shown. "
    "Nothing was spent."
)


class DPCategoricalNB(BaseDPNaiveBayes):
    """Categorical naive Bayes with differential privacy, from one noisy histogram.

    Every column is categorical with a declared number of categories. ``fit``
    releases, with exact discrete noise, one histogram: the number of rows of
    each class with each category in each column. Everything else is
    post-processing of that release: the class counts (each column's counts
    add up to them; their inverse-variance weighted average is used), and
    each class's category probabilities, smoothed additively (``alpha``) and
    pulled toward the categories' distribution over all classes by as many
    pseudo-rows as the noise is large (so that a class whose counts are mostly
    noise looks like every other class, and the priors decide).

    Two encodings of ``X``:

    * ``encoding="ordinal"`` (default): one column per attribute holding the
      integer code of its category, ``0 <= code < n_categories[j]``, as
      :class:`sklearn.preprocessing.OrdinalEncoder` with declared
      ``categories`` gives (map unknown values to a declared extra code with
      ``handle_unknown="use_encoded_value"``);
    * ``encoding="onehot"``: blocks of 0/1 columns, ``n_categories[j]`` per
      attribute, each row with at most one 1 per block, as
      :func:`dpsk.preprocessing.make_table_encoder` (categorical columns only)
      or ``OneHotEncoder(categories=...)`` gives. An all-zero block (an
      undeclared value, ignored by the encoder) is a category of its own, the
      last one: the fitted arrays have ``n_categories[j] + 1`` entries.

    Values outside the declared categories are refused before anything is
    spent (the message names the column, not the value).

    Privacy guarantee: ``class_count_``, ``category_count_``,
    ``feature_log_prob_``, ``class_log_prior_`` and every prediction are
    ``epsilon``-DP (``delta = 0``: discrete Laplace of scale ``2 d / epsilon``
    per cell, Ghosh, Roughgarden and Sundararajan 2009) or ``(epsilon,
    delta)``-DP (discrete Gaussian, ``rho``-zCDP by Canonne, Kamath and
    Steinke 2020, Theorem 14) under replacing one row: a row adds one unit to
    one cell of each of the ``d`` columns' blocks, so two neighbouring
    histograms differ by at most ``2 d`` in L1 and ``sqrt(2 d)`` in L2
    (:func:`dpsk.mechanisms._counts.noisy_histogram`; ``docs/naive_bayes.rst``).

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy parameter of one fit, > 0 and finite.
    delta : float, default=0.0
        In [0, 1). ``delta > 0``: discrete Gaussian noise, whose size grows like
        ``sqrt(n_columns)`` instead of ``n_columns``.
    n_categories : int or array-like of int
        The declared number of categories of each column (>= 1; an int applies
        to every column). Required: with None (the default) ``fit`` refuses,
        for free.
    encoding : {"ordinal", "onehot"}, default="ordinal"
        How ``X`` encodes the categories (see above).
    alpha : float, default=1.0
        Additive (Laplace) smoothing, > 0 (scikit-learn's ``alpha``).
    classes : array-like of shape (n_classes,) or None, default=None
        The declared labels; None reads them from ``y`` and warns.
    fit_prior : bool, default=True
        Estimate the class priors from the noisy counts; False uses uniform
        priors (or ``class_prior``).
    class_prior : array-like of shape (n_classes,) or None, default=None
        Declared priors (>= 0, summing to 1); used instead of the estimate.
    accountant : BudgetAccountant or None, default=None
    random_state : int or None, default=None
        None (the default): fresh secure noise. An int: reproducible noise, for
        tests and documentation only.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    class_count_ : ndarray of shape (n_classes,)
        Class counts estimated from the release (at least 1).
    class_log_prior_ : ndarray of shape (n_classes,)
    category_count_ : list of ndarray of shape (n_classes, levels_j)
        The released counts (noisy, possibly negative) per column.
    feature_log_prob_ : list of ndarray of shape (n_classes, levels_j)
        ``log P(category | class)`` per column.
    n_categories_ : ndarray of shape (n_columns,)
        Categories per column as fitted (``levels_j``: the declared number,
        plus one with ``encoding="onehot"``).
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
    privacy_spent_ : tuple of (float, float)
    privacy_event_ : dpsk.PrivacyEvent

    See Also
    --------
    DPGaussianNB : naive Bayes for bounded numeric columns.

    Examples
    --------
    >>> import numpy as np
    >>> from dpsk import BudgetAccountant, DPCategoricalNB
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, size=3000)
    >>> X = np.where(rng.random((3000, 4)) < 0.8, y[:, None], rng.integers(0, 3, (3000, 4)))
    >>> model = DPCategoricalNB(epsilon=1.0, n_categories=3, classes=[0, 1],
    ...                         accountant=BudgetAccountant()).fit(X, y)
    >>> bool(model.score(X, y) > 0.9)
    True
    """

    _parameter_constraints = {
        "epsilon": [Interval(Real, 0, np.inf, closed="neither")],
        "delta": [Interval(Real, 0, 1, closed="left")],
        "n_categories": [Interval(Integral, 1, None, closed="left"), "array-like", None],
        "encoding": [StrOptions({"ordinal", "onehot"})],
        "alpha": [Interval(Real, 0, np.inf, closed="neither")],
        "classes": ["array-like", None],
        "fit_prior": ["boolean"],
        "class_prior": ["array-like", None],
        "accountant": [BudgetAccountant, None],
        "random_state": [Interval(Integral, 0, None, closed="left"), None],
    }

    def __init__(self, epsilon=1.0, *, delta=0.0, n_categories=None, encoding="ordinal",
                 alpha=1.0, classes=None, fit_prior=True, class_prior=None, accountant=None,
                 random_state=None):
        self.epsilon = epsilon
        self.delta = delta
        self.n_categories = n_categories
        self.encoding = encoding
        self.alpha = alpha
        self.classes = classes
        self.fit_prior = fit_prior
        self.class_prior = class_prior
        self.accountant = accountant
        self.random_state = random_state

    # -- parameters and domain (free) ------------------------------------------------------

    def _check_params_before_fit(self):
        if self.n_categories is None:
            raise ValueError(_CATEGORIES_REQUIRED)
        _declared_counts(self.n_categories)

    def _check_params_with_classes(self, n_classes):
        if self.class_prior is not None:
            check_priors(self.class_prior, n_classes)

    def _declared(self, n_input_columns):
        """Declared categories per attribute, and the number of attributes, from X's width."""
        declared = _declared_counts(self.n_categories)
        if self.encoding == "onehot":
            if declared.ndim == 0:
                if n_input_columns % int(declared):
                    raise ValueError(_width_message(n_input_columns, self.n_categories))
                declared = np.full(n_input_columns // int(declared), int(declared))
            elif declared.sum() != n_input_columns:
                raise ValueError(_width_message(n_input_columns, self.n_categories))
        elif declared.ndim == 0:
            declared = np.full(n_input_columns, int(declared))
        elif declared.shape[0] != n_input_columns:
            raise ValueError(_width_message(n_input_columns, self.n_categories))
        return declared.astype(np.int64)

    def _levels(self, declared):
        """Categories per attribute as fitted: one more for "none" with one-hot input."""
        return declared + 1 if self.encoding == "onehot" else declared

    def _validate_X_and_y(self, X, y):
        X, y = validate_data(self, X, y, dtype=np.float64)
        return _codes(X, self._declared(X.shape[1]), self.encoding), y

    # -- the release (charged) -------------------------------------------------------------

    def _release(self, data, *, epsilon, delta):
        codes, _, classes, index, weights = data
        n, d = codes.shape
        K = len(classes)
        levels = self._levels(self._declared(self.n_features_in_))
        block_codes = index[:, None] * levels[None, :] + codes
        released, noise, event = noisy_histogram(
            block_codes, K * levels, epsilon, noise_source(self.random_state), delta=delta,
            sample_weight=weights)
        self._check_fitted_event(event)
        cell_variance = count_variance(noise, weights is not None)
        blocks = np.split(released, np.cumsum(K * levels)[:-1])
        tables = [block.reshape(K, c) for block, c in zip(blocks, levels)]
        counts = class_counts(_class_totals(tables, levels), n if weights is None else None)
        log_probs = [self._log_probabilities(t, cell_variance) for t in tables]
        if self.class_prior is not None:
            prior = check_priors(self.class_prior, K)
        elif self.fit_prior:
            prior = counts / counts.sum()
        else:
            prior = np.full(K, 1.0 / K)
        with np.errstate(divide="ignore"):
            log_prior = np.log(prior)
        return {"classes_": classes, "class_count_": counts, "class_log_prior_": log_prior,
                "category_count_": tables, "feature_log_prob_": log_probs,
                "n_categories_": levels}

    def _log_probabilities(self, table, cell_variance):
        """``log P(level | class)`` for one column: smoothed, shrunk toward all classes.

        ``(max(N_kv, 0) + alpha + lam p_v) / sum_v (...)`` with ``p`` the
        smoothed distribution of the levels over all classes and ``lam = c
        sqrt(V)``: as many pseudo-rows, spread as ``p``, as one noise standard
        deviation per level (``docs/naive_bayes.rst``).
        """
        positive = np.maximum(table, 0.0)
        pooled = positive.sum(axis=0) + self.alpha
        pooled /= pooled.sum()
        strength = table.shape[1] * np.sqrt(cell_variance)
        smoothed = positive + self.alpha + strength * pooled
        return np.log(smoothed / smoothed.sum(axis=1, keepdims=True))

    # -- prediction (post-processing) ------------------------------------------------------

    def _validate_X_predict(self, X):
        check_is_fitted(self)
        X = finite_rows_advised(validate_data, self, X, dtype=np.float64, reset=False)
        return _codes(X, self._declared(X.shape[1]), self.encoding)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.categorical = True
        tags.input_tags.positive_only = True
        return tags

    def _joint_log_likelihood(self, codes):
        jll = np.tile(self.class_log_prior_, (codes.shape[0], 1))
        for j, log_prob in enumerate(self.feature_log_prob_):
            jll += log_prob[:, codes[:, j]].T
        return jll


def _declared_counts(n_categories):
    """``n_categories`` as an int array (0-d or 1-d), every entry >= 1: free."""
    values = np.asarray(n_categories)
    if (values.ndim > 1 or values.size == 0 or values.dtype.kind not in "iu"
            or np.any(values < 1)):
        raise ValueError(f"n_categories must be an int >= 1 or a 1-d list of them, got "
                         f"{n_categories!r}. Nothing was spent.")
    return values


def _width_message(width, n_categories):
    return (f"X has {width} columns, which does not match n_categories={n_categories!r} "
            "for this encoding. Nothing was spent.")


def _codes(X, declared, encoding):
    """Integer codes, one column per attribute; refuse (free, no value quoted) anything else."""
    if encoding == "onehot":
        blocks = np.split(X, np.cumsum(declared)[:-1], axis=1)
        codes = np.empty((X.shape[0], len(blocks)), dtype=np.int64)
        for j, block in enumerate(blocks):
            if not (np.all((block == 0.0) | (block == 1.0)) and np.all(block.sum(axis=1) <= 1)):
                raise ValueError(_CODES_OUTSIDE.format(column=f"block {j}"))
            # The one 1's position, or the extra last code for an all-zero block.
            codes[:, j] = np.where(block.sum(axis=1) == 1, block.argmax(axis=1), block.shape[1])
        return codes
    for j in range(X.shape[1]):
        column = X[:, j]
        if not np.all((column == np.floor(column)) & (column >= 0) & (column < declared[j])):
            raise ValueError(_CODES_OUTSIDE.format(column=j))
    return X.astype(np.int64)


def _class_totals(tables, levels):
    """Class counts from the histogram: each column's counts add up to them.

    Column ``j``'s sum over its ``c_j`` levels has noise variance ``c_j V``;
    the inverse-variance weighted average over the columns is the best
    linear unbiased combination.
    """
    weights = 1.0 / levels.astype(np.float64)
    totals = np.array([t.sum(axis=1) for t in tables])
    return (weights[:, None] * totals).sum(axis=0) / weights.sum()
