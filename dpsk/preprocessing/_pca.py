"""Private principal components: a projection step learned from a noisy second moment.

The derivation is in ``docs/privacy.rst`` (section "Private PCA"); the
mechanism is :func:`dpsk.mechanisms._second_moment.noisy_second_moment`.
"""

import math
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import FLOAT_DTYPES, check_is_fitted, validate_data

from .._data._design import clip_rows
from .._data._validation import check_not_datetime, finite_rows_advised, values_withheld
from .._mixin import PrivacyAccountingMixin
from ..accounting._ledger import BudgetAccountant
from ..mechanisms._random import noise_source, validate_random_state
from ..mechanisms._second_moment import (
    check_row_count,
    noise_spectral_norm,
    noisy_second_moment,
)
from ..pipeline._norms import resolve_data_norm

__all__ = ["DPPCA", "above_noise", "auto_n_components"]


def auto_n_components(n_samples, n_features, epsilon, delta=0.0):
    """The most components ``n_components="auto"`` can keep: public numbers only.

    Every row has norm at most ``R``, so the second moment ``A`` has trace at
    most ``R^2`` and at most ``R^2 / tau`` eigenvalues above any ``tau``.
    With ``tau`` the noise matrix's spectral norm (about ``2 sqrt(d) s``,
    ``s`` the standard deviation of one noisy entry,
    :func:`~dpsk.mechanisms._second_moment.noise_spectral_norm`), a direction
    whose eigenvalue is below ``tau`` is lost in the noise, so at most
    ``floor(R^2 / tau)`` directions can stand out (``docs/privacy.rst``,
    "Private PCA"); at least one, at most ``d``. ``R`` cancels: the cap reads
    ``n``, ``d``, ``epsilon`` and ``delta`` only. ``"auto"`` keeps the
    noisy eigenvalues above ``tau``, up to this many.

    Parameters
    ----------
    n_samples, n_features : int
        ``n >= 1`` and ``d >= 1`` (public metadata).
    epsilon : float
    delta : float, default=0.0

    Returns
    -------
    k : int

    Examples
    --------
    >>> from dpsk.preprocessing import auto_n_components
    >>> auto_n_components(1437, 64, 1.0, 1e-5)
    15
    >>> auto_n_components(1437, 64, 1.0)
    1
    """
    tau = noise_spectral_norm(int(n_samples), int(n_features), 1.0, epsilon, delta)
    return int(min(n_features, max(1, math.floor(1.0 / tau))))


def above_noise(eigenvalues, tau, cap):
    """How many noisy eigenvalues stand above the noise edge ``tau``: in ``[1, cap]``.

    Post-processing of the release (it reads the noisy eigenvalues and public
    numbers only). A direction of eigenvalue ``lambda`` shows in the noisy
    spectrum above the edge only if ``lambda`` is above about ``tau / 2``
    (``docs/privacy.rst``, "Private PCA"); below the edge lie noise directions.
    """
    return int(min(cap, max(1, int(np.sum(np.asarray(eigenvalues) > tau)))))


class DPPCA(PrivacyAccountingMixin, ClassNamePrefixFeaturesOutMixin, TransformerMixin,
            BaseEstimator):
    """Project onto principal directions learned privately from a noisy second moment.

    The private counterpart of :class:`~sklearn.decomposition.PCA` for a
    pipeline: ``fit`` clips every row to L2 norm ``R`` (``data_norm``),
    releases the matrix ``A = X^T X / n`` with symmetric noise, and keeps the
    top ``n_components`` eigenvectors of the noisy matrix as
    ``components_``. ``transform`` clips rows to ``R`` again and returns
    ``X @ components_.T``. The rows are **not centred**: a private mean
    would cost budget of its own, and a linear model after the step has an
    intercept; the first component then follows the mean's direction. Every
    output row has norm at most ``R`` (a projection onto orthonormal
    directions cannot lengthen a row), published as ``row_norm_bound_`` for a
    private model after the step (``data_norm="auto"``).

    Guarantee: ``components_`` and ``explained_variance_`` are
    ``epsilon``-DP (``delta = 0``) or ``(epsilon, delta)``-DP (``delta >
    0``) under replace-one neighbours, ``n_samples`` public. The noisy
    matrix is released by Analyze Gauss (Dwork, Talwar, Thakurta and Zhang
    2014, "Analyze Gauss: optimal bounds for privacy-preserving principal
    component analysis", STOC, Algorithm 1), here with exact discrete
    Gaussian noise on an integer grid; the guarantee rests on Canonne, Kamath
    and Steinke 2020, Theorem 14 (discrete Gaussian noise is zCDP) with the
    sensitivity derived in the docs, or, for ``delta = 0``, discrete Laplace noise on the
    L1 sensitivity (the geometric mechanism, Ghosh, Roughgarden and
    Sundararajan 2009); the eigenvectors, the choice of ``k`` and the
    projection are post-processing. ``docs/privacy.rst`` ("Private PCA")
    derives the sensitivities ``(d + 1) G^2`` (L1) and ``sqrt(2) G^2`` (L2)
    of the integer matrix. Conditions, enforced: finite values (NaN and
    infinity refused for free), rows clipped to the declared or published
    ``R`` (public), noise calibrated from ``d``, ``epsilon`` and ``delta``
    only. One fit records one event on the ledger.

    Parameters
    ----------
    n_components : int or "auto", default="auto"
        Number of components kept. ``"auto"``: the noisy eigenvalues above
        the noise's spectral edge ``tau`` (public: from ``n_samples``,
        ``n_features``, ``epsilon``, ``delta`` and ``data_norm``), at least
        one and at most :func:`auto_n_components` (post-processing of the
        release). An int must be at most ``n_features`` (refused for free
        otherwise).
    epsilon : float, default=1.0
        Privacy parameter of the fit, > 0.
    delta : float, default=0.0
        0 for pure DP (discrete Laplace: its noise grows with ``d``, so it
        finds only a direction or two on wide tables), or in ``(0, 1)`` for
        the Gaussian mechanism (far less noise on wide tables).
    data_norm : float or "auto", default="auto"
        ``R``, the bound rows are clipped to. ``"auto"``: the bound the step
        before publishes (``BoundedScaler``, ``PrivateBoundsScaler``, the
        table encoder, ``RowNormClipper``, ``Normalizer``); else 1, with a
        :class:`~dpsk.DataNormWarning`.
    accountant : BudgetAccountant or None, default=None
        The ledger to charge (None: the default ledger).
    random_state : int or None, default=None
        None draws from the operating system's secure source. An int seeds the
        draws, for tests and documentation only: seeded draws are not private.

    Attributes
    ----------
    components_ : ndarray of shape (`n_components_`, `n_features_in_`)
        Orthonormal directions, by decreasing noisy eigenvalue (the release).
    explained_variance_ : ndarray of shape (`n_components_`,)
        The noisy eigenvalues of the kept directions (second moments, not
        centred; may be negative).
    n_components_ : int
        The number of components kept.
    data_norm_ : float
        ``R``, resolved.
    row_norm_bound_ : float
        ``R``: a bound on every output row's L2 norm.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        When ``X`` has string column names.
    privacy_spent_ : (float, float)
    privacy_event_ : PrivacyEvent

    See Also
    --------
    sklearn.decomposition.PCA : the non-private version (reported as a leak
        by :func:`dpsk.check_pipeline`).

    Examples
    --------
    >>> import numpy as np
    >>> from dpsk import BudgetAccountant
    >>> from dpsk.preprocessing import DPPCA
    >>> X = np.random.default_rng(0).normal(size=(2000, 5)) * [3, 1, 0.1, 0.1, 0.1]
    >>> ledger = BudgetAccountant()
    >>> pca = DPPCA(n_components=2, epsilon=1.0, delta=1e-5, data_norm=10.0,
    ...             accountant=ledger).fit(X)
    >>> pca.transform(X).shape
    (2000, 2)
    >>> ledger.total()
    (1.0, 1e-05)
    """

    #: Read by :func:`dpsk.check_pipeline`: a private step that may precede the
    #: private model, not the private model itself.
    _dpsk_private_preprocessing = True

    _parameter_constraints = {
        "n_components": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "epsilon": [Interval(Real, 0, np.inf, closed="neither")],
        "delta": [Interval(Real, 0, 1, closed="left")],
        "data_norm": [Interval(Real, 0, np.inf, closed="neither"), StrOptions({"auto"})],
        "accountant": [BudgetAccountant, None],
        "random_state": [Interval(Integral, 0, None, closed="left"), None],
    }

    def __init__(self, n_components="auto", *, epsilon=1.0, delta=0.0, data_norm="auto",
                 accountant=None, random_state=None):
        self.n_components = n_components
        self.epsilon = epsilon
        self.delta = delta
        self.data_norm = data_norm
        self.accountant = accountant
        self.random_state = random_state

    def fit(self, X, y=None):
        """Release the noisy second moment, keep its top eigenvectors; charge the ledger.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : None
            Ignored.

        Returns
        -------
        self : object

        Raises
        ------
        ValueError, TypeError
            Before anything is spent: bad parameters, non-numeric, NaN or
            infinite values, ``n_components > n_features``. Messages quote no value.
        dpsk.BudgetExceededError
            Before anything is spent.
        """
        validate_random_state(self.random_state)
        self._validate_params()
        data_norm = resolve_data_norm(self)  # the pipeline's steps only: public

        def validate(X):
            return self._validate_input(X), data_norm

        def release(data, *, epsilon, delta):
            return self._release(*data, epsilon, delta)

        return self._fit_with_budget(validate, release, X)

    def _validate_input(self, X):
        check_not_datetime(X)
        X = values_withheld(validate_data, self, X, dtype=FLOAT_DTYPES)
        self._n_components(*X.shape)  # refuses an int above n_features, for free
        check_row_count(X.shape[0])  # public n: refused before the spend
        return X

    def _n_components(self, n, d):
        if self.n_components == "auto":
            epsilon, delta = self._privacy_cost()
            return auto_n_components(n, d, epsilon, delta)
        if self.n_components > d:
            raise ValueError(f"n_components={self.n_components} must be at most "
                             f"n_features={d}. Nothing was spent.")
        return int(self.n_components)

    def _release(self, X, data_norm, epsilon, delta):
        n, d = X.shape
        k = self._n_components(n, d)
        A, _, _ = noisy_second_moment(X, data_norm, epsilon, noise_source(self.random_state),
                                      delta=delta)
        values, vectors = np.linalg.eigh(A)
        if self.n_components == "auto":  # post-processing: the noisy spectrum, public tau
            k = above_noise(values, noise_spectral_norm(n, d, data_norm, epsilon, delta), k)
        order = np.argsort(values)[::-1][:k]
        components = vectors[:, order].T
        # A fixed sign per direction (largest entry positive), as scikit-learn's PCA.
        signs = np.sign(components[np.arange(k), np.argmax(np.abs(components), axis=1)])
        components *= np.where(signs == 0, 1.0, signs)[:, None]
        return self._fitted(components, values[order], data_norm)

    def _fitted(self, components, values, data_norm):
        return {"components_": components, "explained_variance_": values,
                "n_components_": components.shape[0], "data_norm_": float(data_norm),
                "row_norm_bound_": float(data_norm)}

    def _stand_in(self, data):
        """Public stand-ins for a dry run (``dpsk.pipeline._dry``): the first ``k`` axes.

        ``k`` is the declared number, or for ``"auto"`` the public cap
        :func:`auto_n_components` (the real fit keeps at most that many): the
        steps after see rows of that width and the real row bound. Nothing is
        drawn or spent.
        """
        X, data_norm = data
        k = self._n_components(*X.shape)
        return self._fitted(np.eye(k, X.shape[1]), np.zeros(k), data_norm)

    @property
    def _n_features_out(self):
        return self.n_components_

    def transform(self, X):
        """Clip rows to ``data_norm_`` and project them onto ``components_``.

        Row by row with the release only: post-processing, no charge.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        X_new : ndarray of shape (n_samples, `n_components_`)
            Rows of L2 norm at most ``row_norm_bound_``.
        """
        check_is_fitted(self, "components_")
        check_not_datetime(X)
        X = finite_rows_advised(validate_data, self, X, reset=False, dtype=FLOAT_DTYPES)
        return clip_rows(np.asarray(X, dtype=np.float64), self.data_norm_) @ self.components_.T

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64"]
        tags.non_deterministic = True  # noisy directions, not the exact PCA
        return tags
