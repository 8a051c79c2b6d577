"""What the private naive Bayes classifiers share: the fit protocol's plumbing and prediction.

A naive Bayes model predicts from a joint log-likelihood ``log pi_k + sum_j log
p(x_j | k)``; the subclasses compute it from their released parameters
(post-processing), this class turns it into classes and probabilities as
scikit-learn's naive Bayes classifiers do.
"""

import numpy as np
from scipy.special import logsumexp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from .._data._validation import (
    check_not_datetime,
    check_sample_weight,
    resolve_classes,
    values_withheld,
    warn_if_classes_undeclared,
    warn_if_column_vector,
)
from .._mixin import PrivacyAccountingMixin
from ..mechanisms._random import validate_random_state

__all__ = ["BaseDPNaiveBayes"]


class BaseDPNaiveBayes(PrivacyAccountingMixin, ClassifierMixin, BaseEstimator):
    """Fit plumbing and predictions of the private naive Bayes classifiers.

    Subclasses define ``_check_params_before_fit()`` (parameter checks, free),
    ``_check_params_with_classes(n_classes)`` (those needing the classes, free),
    ``_validate_X(X)`` (the domain of the features, free; returns the prepared
    array), ``_release(data, epsilon=..., delta=...)`` and
    ``_joint_log_likelihood(X)``.
    """

    def fit(self, X, y, sample_weight=None):
        """Release the model's noisy statistics and charge ``(epsilon, delta)`` to the ledger.

        The budget is checked before the data is read, input outside the
        declared domain is refused before anything is spent, and a fit that
        fails after reading the data stays charged
        (:class:`~dpsk.PrivateFitError`).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training rows.
        y : array-like of shape (n_samples,)
            Labels, among the declared ``classes``.
        sample_weight : float or array-like of shape (n_samples,), default=None
            Row weights in [0, 1] (a row's weight is part of the row:
            ``docs/naive_bayes.rst``, "Weights"). Weights outside [0, 1], NaN
            or of the wrong shape are refused before anything is spent.

        Returns
        -------
        self : object
        """
        validate_random_state(self.random_state)
        self._validate_params()
        self._check_params_before_fit()
        warn_if_classes_undeclared(self.classes)
        warn_if_column_vector(y)
        return self._fit_with_budget(self._validate_input, self._release, X, y, sample_weight)

    def _validate_input(self, X, y, sample_weight):
        """Refuse input outside the domain (free): ``(X, y, classes, class_index, weights)``."""
        check_not_datetime(X)
        X, y = values_withheld(self._validate_X_and_y, X, y)
        classes = resolve_classes(y, self.classes)
        self._check_params_with_classes(len(classes))
        weights = check_sample_weight(sample_weight, X.shape[0])
        if weights is not None and np.all(weights == 1.0):
            weights = None  # the unweighted release, bit for bit
        return X, y, classes, np.searchsorted(classes, y), weights

    def _check_params_with_classes(self, n_classes):
        """Checks of parameters whose shape follows the classes (free; none by default)."""

    def _check_fitted_event(self, event):
        """The mechanism's own event must be the one the ledger records (a safety net)."""
        if event != self._privacy_event():
            raise RuntimeError("The release spent another event than the one recorded.")

    def predict_joint_log_proba(self, X):
        """Joint log-probabilities ``log P(x, y = k)`` of every class.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            Columns in the order of ``classes_``.
        """
        check_is_fitted(self)
        return self._joint_log_likelihood(self._validate_X_predict(X))

    def predict(self, X):
        """The most probable class of each row.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        jll = self.predict_joint_log_proba(X)
        return self.classes_[np.argmax(jll, axis=1)]

    def predict_log_proba(self, X):
        """Log-probabilities of the classes.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
        """
        jll = self.predict_joint_log_proba(X)
        return jll - logsumexp(jll, axis=1, keepdims=True)

    def predict_proba(self, X):
        """Probabilities of the classes.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
        """
        return np.exp(self.predict_log_proba(X))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # Noise calibrated for privacy can cost accuracy on tiny test problems.
        tags.classifier_tags.poor_score = True
        return tags
