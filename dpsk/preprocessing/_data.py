"""Transformers whose parameters are declared, never learned from the data."""

from numbers import Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import FLOAT_DTYPES, validate_data

from .._data._design import clip_rows

__all__ = ["RowNormClipper", "BoundedScaler"]


class RowNormClipper(OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    """Scale down every row whose L2 norm exceeds a declared bound.

    Each row is transformed on its own (``x -> x * min(1, data_norm / ||x||)``),
    so the output for one person never depends on anyone else's data: the step
    costs no privacy and can sit in front of any dpsk estimator. It makes the
    clipping the dpsk estimators already do explicit, for example to clip once
    and then fit several models, or to clip before another declared-bounds step.

    ``fit`` learns nothing: it only checks ``X`` and records ``n_features_in_``.

    Parameters
    ----------
    data_norm : float, default=1.0
        Declared bound on the L2 norm of a row, > 0. Choose it from domain
        knowledge; a bound read off the data (such as the largest row norm)
        would itself leak, which is why this transformer has no option to do so.

    Attributes
    ----------
    n_features_in_ : int
        Number of features seen in ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen in ``fit``, when ``X`` has string column names.
    row_norm_bound_ : float
        ``data_norm``: the bound on every output row's L2 norm, which a
        private model after it with ``data_norm="auto"`` reads.

    See Also
    --------
    BoundedScaler : declared per-feature bounds instead of a row-norm bound.
    sklearn.preprocessing.Normalizer : scales every row to norm 1 (also
        row-wise, so also DP-safe, but it changes rows that are within bounds).

    Notes
    -----
    The privacy argument of output and objective perturbation (Chaudhuri,
    Monteleoni and Sarwate, 2011) needs every row to have norm at most 1 after
    the estimator's own rescaling by its ``data_norm``; a dpsk estimator clips
    again anyway, so a mismatch between the two bounds cannot break privacy, only
    accuracy.

    Examples
    --------
    >>> from dpsk.preprocessing import RowNormClipper
    >>> RowNormClipper(data_norm=1.0).fit_transform([[3.0, 4.0], [0.3, 0.4]])
    array([[0.6, 0.8],
           [0.3, 0.4]])
    """

    #: Read by :func:`dpsk.check_pipeline`: every parameter is declared.
    _dpsk_declared_step = True

    _parameter_constraints = {
        "data_norm": [Interval(Real, 0, np.inf, closed="neither")],
    }

    def __init__(self, data_norm=1.0):
        self.data_norm = data_norm

    def fit(self, X, y=None):
        """Check ``X`` and record its number of features; nothing is learned.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Only its shape and validity are used.
        y : None
            Ignored.

        Returns
        -------
        self : object
        """
        self._validate_params()
        validate_data(self, X, accept_sparse="csr", dtype=FLOAT_DTYPES)
        self.row_norm_bound_ = float(self.data_norm)
        return self

    def transform(self, X):
        """Clip every row of ``X`` to L2 norm ``data_norm``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        X_clipped : {ndarray, sparse matrix} of shape (n_samples, n_features)
            A new array of the same kind (CSR for sparse input).
        """
        # transform works unfitted (the step is stateless), so validate here too.
        self._validate_params()
        X = validate_data(self, X, accept_sparse="csr", dtype=FLOAT_DTYPES, reset=False)
        clipped = clip_rows(X, self.data_norm)
        if clipped is X:  # nothing clipped: still hand out a new array, never an alias
            clipped = X.copy()
        if sp.issparse(X):
            clipped = type(X)(clipped)  # keep csr_array vs csr_matrix as given
        return clipped

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.requires_fit = False
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags


class BoundedScaler(OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    """Map declared per-feature bounds ``[lower, upper]`` to ``[0, 1]``, clipping outside.

    The DP-safe replacement for :class:`~sklearn.preprocessing.MinMaxScaler`:
    the same output range, but the bounds are declared by the user instead of
    being the minimum and maximum of the training data (which are exact values
    of single rows, released unprotected into the fitted pipeline). Values
    outside the bounds are clipped to them, so one person's row can never push
    the output outside ``[0, 1]``.

    ``fit`` learns nothing: it checks the bounds against the number of features
    and records ``n_features_in_``; it never reads the values of ``X`` beyond
    rejecting NaN and infinity.

    Parameters
    ----------
    lower : float or array-like of shape (n_features,), default=0.0
        Declared lower bound of every feature (a scalar applies to all).
    upper : float or array-like of shape (n_features,), default=1.0
        Declared upper bound; must be > ``lower`` for every feature.

    Attributes
    ----------
    n_features_in_ : int
        Number of features seen in ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen in ``fit``, when ``X`` has string column names.
    row_norm_bound_ : float
        ``sqrt(n_features_in_)``: the bound on every output row's L2 norm,
        which a private model after it with ``data_norm="auto"`` reads.

    See Also
    --------
    RowNormClipper : clip rows to a declared L2 norm.

    Notes
    -----
    Why ``[0, 1]``: it is the range of ``MinMaxScaler``'s default, so swapping
    one for the other does not change the model's inputs; and with ``lower=0``
    a zero (an absent category, a zero count) stays zero. With ``d`` features
    the rows have L2 norm at most ``sqrt(d)``: give the dpsk estimator
    ``data_norm=sqrt(d)`` (no row is then clipped) or a smaller bound.

    Examples
    --------
    >>> from dpsk.preprocessing import BoundedScaler
    >>> age_and_hours = [[17.0, 40.0], [90.0, 99.0], [45.0, 120.0]]
    >>> BoundedScaler(lower=[17, 0], upper=[90, 99]).fit_transform(age_and_hours)
    array([[0.        , 0.4040...],
           [1.        , 1.        ],
           [0.3835..., 1.        ]])
    """

    #: Read by :func:`dpsk.check_pipeline`: every parameter is declared.
    _dpsk_declared_step = True

    _parameter_constraints = {
        "lower": ["array-like", Real],
        "upper": ["array-like", Real],
    }

    def __init__(self, lower=0.0, upper=1.0):
        self.lower = lower
        self.upper = upper

    def _bounds(self, n_features, dtype):
        """The bounds as arrays of shape (n_features,), checked."""
        bounds = []
        for name, value in (("lower", self.lower), ("upper", self.upper)):
            try:
                b = np.asarray(value, dtype=np.float64)
            except (TypeError, ValueError):
                raise ValueError(f"{name} must be a number or an array of numbers, "
                                 f"got {value!r}.") from None
            if b.ndim > 1:
                raise ValueError(f"{name} must be a number or a 1-d array, got shape {b.shape}.")
            if b.ndim == 1 and b.shape[0] != n_features:
                raise ValueError(f"{name} has {b.shape[0]} values but X has {n_features} "
                                 "features.")
            if not np.all(np.isfinite(b)):
                raise ValueError(f"{name} must be finite, got {value!r}.")
            bounds.append(np.broadcast_to(b, (n_features,)).astype(dtype))
        lower, upper = bounds
        if np.any(lower >= upper):
            bad = np.flatnonzero(lower >= upper).tolist()
            raise ValueError(f"lower must be < upper for every feature; it is not for "
                             f"feature(s) {bad}.")
        return lower, upper

    def fit(self, X, y=None):
        """Check ``X`` and the bounds; nothing is learned from the values.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Only its shape and validity are used.
        y : None
            Ignored.

        Returns
        -------
        self : object
        """
        self._validate_params()
        X = validate_data(self, X, dtype=FLOAT_DTYPES)
        self._bounds(X.shape[1], X.dtype)
        self.row_norm_bound_ = float(np.sqrt(X.shape[1]))
        return self

    def transform(self, X):
        """Map ``[lower, upper]`` to ``[0, 1]`` feature-wise and clip.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        X_scaled : ndarray of shape (n_samples, n_features)
            Values in ``[0, 1]``.
        """
        self._validate_params()
        X = validate_data(self, X, dtype=FLOAT_DTYPES, reset=False)
        lower, upper = self._bounds(X.shape[1], X.dtype)
        X_scaled = (X - lower) / (upper - lower)
        return np.clip(X_scaled, 0.0, 1.0, out=X_scaled)

    def inverse_transform(self, X):
        """Map ``[0, 1]`` back to ``[lower, upper]`` (clipped values stay at the bounds).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        X_original : ndarray of shape (n_samples, n_features)
        """
        self._validate_params()
        X = validate_data(self, X, dtype=FLOAT_DTYPES, reset=False)
        lower, upper = self._bounds(X.shape[1], X.dtype)
        return X * (upper - lower) + lower

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.requires_fit = False
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags
