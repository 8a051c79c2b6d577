"""DPStabilityPredictor: private answers from one stable model that stays secret.

The second route of Dwork and Feldman (2018), Section 4.4: a strongly convex
regularised logistic regression trained on every row has a score whose change
under the replacement of one row is bounded (uniform prediction stability);
each answer is that score plus Laplace noise at the bound over epsilon.
Derivations in ``docs/prediction.rst``.
"""

from numbers import Integral, Real

import numpy as np
from scipy.special import expit
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted, validate_data

from .._data._design import design_matrix, row_norms
from .._data._validation import (
    binary_targets,
    check_not_datetime,
    finite_rows_advised,
    refuse_fit_params,
    resolve_classes,
    values_withheld,
    warn_if_classes_undeclared,
    warn_if_column_vector,
)
from .._mixin import PrivacyAccountingMixin
from .._optimize._binary import minimize_regularized_loss
from .._optimize._losses import LogisticLoss
from .._optimize._solver import tolerance_floor
from .._silence import silenced
from ..accounting._events import PureDPEvent
from ..accounting._ledger import BudgetAccountant, BudgetExceededError
from ..mechanisms._random import validate_random_state
from ..pipeline._check import warn_from_calling_pipeline
from ._laplace import GRID_STEPS, grid_sensitivity, laplace_on_grid
from ._secret import SecretStateMixin
from ._vote import _row_sources

__all__ = ["DPStabilityPredictor", "ModelInPickleWarning", "score_sensitivity",
           "spend_per_row"]

#: Unit roundoff of float64.
_U = 2.0**-53

# Separates the per-row noise streams of a seeded predictor from every other stream.
_STABILITY_TAG = 0x73746162  # "stab"

_WEIGHTS_REFUSED = (
    "DPStabilityPredictor.fit does not support sample_weight: its privacy argument "
    "bounds how far one unweighted row moves the secret model, and no weighted "
    "version is derived. Use DPLogisticRegression with sample_weight in [0, 1] "
    "instead. Nothing was spent."
)


class ModelInPickleWarning(UserWarning):
    """A fitted :class:`DPStabilityPredictor` was pickled: the file holds its weights.

    The weights are a non-private model of the training data. Keep the file as
    secret as the data; publishing it voids the guarantee.
    """


_PICKLE_MESSAGE = (
    "Pickling a fitted DPStabilityPredictor saves its weights, a non-private model of the "
    "training data. Keep the file as secret as the data itself: publishing the fitted "
    "object or its pickle voids the privacy guarantee of the answers."
)


def _gamma(k):
    """Higham's ``gamma_k = k u / (1 - k u)``: relative error bound of a k-term sum."""
    return k * _U / (1.0 - k * _U)


def score_sensitivity(n_samples, n_columns, alpha, tol):
    """Bound on ``|fl(w_D . z) - fl(w_D' . z)|`` per unit of ``||z||``, for neighbours.

    ``w_D`` is the solver's point for ``F_D(w) = (1/n) sum_i l(y_i w.z_i) +
    (alpha/2) ||w||^2`` (logistic loss, rows ``||z_i|| <= 1``); ``D'`` replaces one
    row. Three terms (``docs/prediction.rst``, "The stability route"):

    * exact minimisers: ``||w*_D - w*_D'|| <= 2 / (n alpha)`` (strong convexity
      against a gradient change of at most ``2 / n``);
    * the certified solver: each point is within ``tol / alpha`` of its
      minimiser, so ``2 tol / alpha`` more;
    * floating point of the dot product of ``n_columns`` terms: each computed
      score is within ``gamma_d ||w|| ||z||`` of the exact one, with ``||w|| <=
      (1 + tol) / alpha``, twice.

    Parameters
    ----------
    n_samples, n_columns : int
        Public: rows, and design columns (features plus the intercept column).
    alpha : float
        Regularisation strength (strong convexity), > 0.
    tol : float
        The solver's tolerance actually used (at least its floor).

    Returns
    -------
    float
    """
    exact = 2.0 / (n_samples * alpha)
    solver = 2.0 * tol / alpha
    rounding = 2.0 * _gamma(n_columns) * (1.0 + tol) / alpha
    return exact + solver + rounding


def spend_per_row(accountant, epsilon, n_answers, what="Answering", event=PureDPEvent,
                  source=None):
    """Record ``n_answers`` events ``event(epsilon)``, all or none.

    :meth:`BudgetAccountant.spend_all` checks and writes the whole batch under
    the ledger's lock, so a concurrent spender cannot split it. The default
    events are ``PureDPEvent(epsilon)`` of the generic mechanism: the noise is
    *discrete* Laplace, whose privacy loss distribution is not the continuous
    Laplace one the ledger's ``"laplace"`` events are composed with. The
    ensemble's vote records :class:`~dpsk.ExponentialEvent` instead.
    ``source`` (the predictor) goes into the ledger's history.
    """
    try:
        accountant.spend_all([event(epsilon)] * n_answers, source=source)
    except BudgetExceededError as exc:
        advice = ("The budget cannot pay for another answer." if n_answers == 1
                  else "Send fewer rows (a single row may still fit).")
        raise BudgetExceededError(
            f"{what} {n_answers} distinct query row{'s' if n_answers > 1 else ''} at "
            f"epsilon={epsilon:g} each does not fit: {exc} Nothing was answered. {advice}"
        ) from None


class DPStabilityPredictor(SecretStateMixin, PrivacyAccountingMixin, ClassifierMixin,
                           BaseEstimator):
    """Private prediction from one stable model (Dwork and Feldman 2018, Section 4.4).

    ``fit`` trains an L2-regularised logistic regression on all rows, with the
    certified solver, and keeps the weights secret. Each answered query row
    costs ``epsilon``: its score ``w . z(x)`` is released as a multiple of a
    grid step plus exact discrete Laplace noise scaled to the score's
    sensitivity over ``epsilon``; the label is the sign of that noisy score.

    Privacy guarantee: every answer is ``epsilon``-differentially private with
    respect to the replacement of one training row (Dwork and Feldman 2018,
    "Privacy-preserving prediction", COLT, Lemma 4.5 with Theorem 4.9, i.e.
    Corollary 4.10; the Laplace scale of the lemma's proof is ``gamma /
    epsilon``, not ``epsilon / gamma``). Why: the design rows ``z`` (clipped
    to ``data_norm``, scaled, with a regularised constant column for the
    intercept) have norm <= 1, the logistic loss is 1-Lipschitz and the
    objective ``alpha``-strongly convex, so exact minimisers of neighbouring
    data sets are within ``2 / (n alpha)``; the solver's points are within
    ``tol / alpha`` of them; the score of a query moves by at most ``||z(x)||``
    times that plus floating-point slack (:func:`score_sensitivity`). The
    score is rounded to a grid of ``GRID_STEPS`` cells per unit of the bound
    (one more cell for the rounding) and discrete Laplace noise of that many
    cells over ``epsilon`` is added (:func:`~dpsk.prediction._laplace.laplace_on_grid`).
    ``q`` answered rows cost ``q epsilon`` by composition; the ledger records
    one :class:`~dpsk.PureDPEvent` per distinct answered row.

    Conditions, enforced: two classes (declared, or read from ``y`` with a
    :class:`~dpsk.ClassesFromDataWarning`); rows clipped to ``data_norm``; the
    solver's tolerance raised to its data-independent floor; every batch
    charged, all or nothing, before any score is computed.

    What is *not* covered: the fitted object. ``fit`` releases and spends
    nothing, but the weights are a non-private model kept in a private
    attribute; pickling warns with :class:`ModelInPickleWarning`. Serve
    answers from it; keep it as secret as the data. No ``coef_`` is exposed.

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy parameter of each answered row, > 0.
    alpha : float, default=1e-2
        L2 regularisation strength (the strong convexity of the objective), > 0.
        The noise scale is about ``2 / (n alpha epsilon)``; larger ``alpha``
        means less noise and more bias.
    fit_intercept : bool, default=True
        Fit an intercept as a regularised constant column (design rows
        ``[x / data_norm, 1] / sqrt(2)``).
    data_norm : float, default=1.0
        Declared bound on the L2 norm of rows; longer rows (training and query)
        are clipped to it.
    tol : float, default=1e-10
        Solver tolerance; its distance ``tol / alpha`` to the exact minimiser
        is part of the sensitivity.
    classes : array-like of shape (2,) or None, default=None
        Declared class labels. None reads them from ``y`` and warns.
    accountant : BudgetAccountant or None, default=None
        Ledger charged by ``predict``, ``decision_function`` and
        ``predict_proba``; None means :func:`dpsk.default_accountant` at query
        time.
    random_state : int or None, default=None
        None: noise from the operating system's secure generator. An int makes
        each row's answer a function of the seed and the row: for tests only,
        not private.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
    n_features_in_ : int
    feature_names_in_ : ndarray of shape ``(n_features_in_,)``
        Defined when ``X`` has string column names.
    grid_ : float
        The release grid step (a function of ``n_samples``, the shape and the
        parameters).

    Examples
    --------
    >>> from dpsk import BudgetAccountant, DPStabilityPredictor
    >>> from dpsk.datasets import load_adult
    >>> X, y = load_adult(return_X_y=True, preprocess=True)
    >>> acc = BudgetAccountant(epsilon=1.0)
    >>> model = DPStabilityPredictor(epsilon=0.1, classes=[0, 1], accountant=acc,
    ...                              random_state=0).fit(X[:40000], y[:40000])
    >>> answers = model.predict(X[40000:40010])   # ten rows at 0.1 each
    >>> acc.total()
    (1.0, 0.0)
    """

    _parameter_constraints = {
        "epsilon": [Interval(Real, 0, np.inf, closed="neither")],
        "alpha": [Interval(Real, 0, np.inf, closed="neither")],
        "fit_intercept": ["boolean"],
        "data_norm": [Interval(Real, 0, np.inf, closed="neither")],
        "tol": [Interval(Real, 0, np.inf, closed="neither")],
        "classes": ["array-like", None],
        "accountant": [BudgetAccountant, None],
        "random_state": [Interval(Integral, 0, None, closed="left"), None],
    }

    _secret_attribute = "_weights"
    _pickle_warning = ModelInPickleWarning
    _pickle_message = _PICKLE_MESSAGE

    def __init__(self, *, epsilon=1.0, alpha=1e-2, fit_intercept=True, data_norm=1.0,
                 tol=1e-10, classes=None, accountant=None, random_state=None):
        self.epsilon = epsilon
        self.alpha = alpha
        self.fit_intercept = fit_intercept
        self.data_norm = data_norm
        self.tol = tol
        self.classes = classes
        self.accountant = accountant
        self.random_state = random_state

    def fit(self, X, y, **fit_params):
        """Train the secret model on all rows. Spends nothing.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Labels, among the two declared ``classes``.

        **fit_params : dict
            Only ``sample_weight=None``: weights are refused for free
            (``TypeError``) with the reason.

        Returns
        -------
        self : object

        Raises
        ------
        ValueError, TypeError
            For bad parameters and input outside the domain (non-finite
            features, wrong shapes, labels outside the declared ``classes``,
            more than two classes), before the data is used.
        """
        refuse_fit_params(self, fit_params, reason=_WEIGHTS_REFUSED)
        validate_random_state(self.random_state)
        self._validate_params()
        warn_from_calling_pipeline(self)
        warn_if_classes_undeclared(self.classes)
        warn_if_column_vector(y)
        with silenced():
            check_not_datetime(X)
            X, y = values_withheld(validate_data, self, X, y, dtype=np.float64)
            classes = resolve_classes(y, self.classes)
        if classes.shape[0] != 2:
            raise ValueError(
                "Only binary classification is supported. DPStabilityPredictor got "
                f"{classes.shape[0]} classes; use DPPredictionEnsemble for more."
            )
        n, d = X.shape[0], X.shape[1] + int(self.fit_intercept)
        loss = LogisticLoss()
        tol = max(float(self.tol), tolerance_floor(d, loss.curvature, float(self.alpha)))
        sensitivity = score_sensitivity(n, d, float(self.alpha), tol)
        # The certified solver is total on this domain: it returns a point and
        # never raises, so nothing about the data surfaces here.
        with silenced():
            Z = design_matrix(X, float(self.data_norm), self.fit_intercept)
            w = minimize_regularized_loss(loss, Z, binary_targets(y, classes)[0],
                                          float(self.alpha), tol=tol).w
        self.classes_ = classes
        self.grid_ = sensitivity / GRID_STEPS
        self._sensitivity = sensitivity
        self._score_bound = (1.0 + tol) / float(self.alpha)
        self._weights = w
        return self

    def _query_rows(self, X):
        """Validate the query (the querier's own rows: messages may quote them)."""
        check_is_fitted(self)
        check_not_datetime(X)
        return finite_rows_advised(validate_data, self, X, dtype=np.float64, reset=False)

    def _row_sensitivities(self, Z):
        """Integer sensitivity of each gridded score (``docs/prediction.rst``).

        ``||z||`` is computed in floating point with relative error at most
        ``gamma_{d+2}``; the division by the grid adds at most ``u |score| /
        grid`` on each side, ``|score| <= (1 + tol) / alpha`` times ``||z||``.
        """
        norms = row_norms(Z) * (1.0 + _gamma(Z.shape[1] + 2))
        # Rounding of the division by the grid, on both sides, in cells; the
        # relative roundings of the bound and of the grid step (a few u) are
        # covered by the fixed 1e-6 cells, which exceed them by far.
        rounding_cells = 2.0 * _U * self._score_bound * norms / self.grid_
        return grid_sensitivity(norms, rounding_cells + 1e-6)

    def _noisy_scores(self, X, what):
        """Charge ``epsilon`` per distinct row, then release each distinct row's score."""
        epsilon, _ = self._privacy_cost()
        X = self._query_rows(X)
        # The distinct rows and their order are functions of the query, not the data.
        distinct, inverse = np.unique(X, axis=0, return_inverse=True)
        spend_per_row(self._resolve_accountant(), epsilon, distinct.shape[0], what,
                      source=self)
        Z = design_matrix(distinct, float(self.data_norm), self.fit_intercept)
        scores = Z @ self._weights
        sources = _row_sources(distinct, self.random_state, tag=_STABILITY_TAG)
        released, _ = laplace_on_grid(scores, self._row_sensitivities(Z), self.grid_,
                                      epsilon, sources)
        return released[np.ravel(inverse)]

    def decision_function(self, X):
        """Noisy scores; charges ``epsilon`` per distinct row, before computing any.

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)

        Returns
        -------
        scores : ndarray of shape (n_queries,)
            Positive means ``classes_[1]``. Multiples of ``grid_``.

        Raises
        ------
        dpsk.BudgetExceededError
            When the ledger cannot afford the whole batch; nothing is spent.
        """
        return self._noisy_scores(X, "Scoring")

    def predict(self, X):
        """Private labels (the sign of the noisy score); ``epsilon`` per distinct row.

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)

        Returns
        -------
        y_pred : ndarray of shape (n_queries,)
        """
        scores = self._noisy_scores(X, "Answering")
        return self.classes_[(scores > 0).astype(int)]

    def predict_proba(self, X):
        """The sigmoid of the noisy score (post-processing); ``epsilon`` per distinct row.

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)

        Returns
        -------
        proba : ndarray of shape (n_queries, 2)
        """
        p = expit(self._noisy_scores(X, "Answering"))
        return np.column_stack([1.0 - p, p])

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        # Noisy answers on tiny test problems can lose accuracy.
        tags.classifier_tags.poor_score = True
        return tags

