"""Shared shell of the private linear classifiers."""

from numbers import Integral, Real

import numpy as np
from joblib import Parallel, delayed
from scipy.special import expit, softmax
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from .._accounting import BudgetAccountant
from .._mixin import PrivacyAccountingMixin
from .._erm import private_erm
from .._validation import (
    binary_targets,
    check_classes,
    check_not_datetime,
    clip_rows,
    design_matrix,
    unscale_coef,
)

__all__ = ["BaseDPLinearClassifier", "fit_private_problems", "make_generator"]


def make_generator(random_state):
    """A ``numpy.random.Generator`` from a ``random_state`` parameter.

    ``None`` draws fresh entropy from the operating system on every call, so two
    fits never share noise. An int or SeedSequence gives reproducible noise, which
    is for tests and documentation only: a model released together with a seed
    known to an adversary is not private. A ``Generator`` is used as a source of
    child streams (each call spawns new ones, never replaying a draw); a legacy
    ``RandomState`` seeds a new Generator from its stream.
    """
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(0, 2**32, size=4, dtype=np.uint64))
    return np.random.default_rng(random_state)


def fit_private_problems(Z, y, classes, loss, epsilon, alpha, perturbation, rng, *, tol,
                         max_iter, n_jobs=None):
    """Fit the binary (or one-vs-rest) private models for ``classes``; total cost epsilon.

    One-vs-rest releases K models about the same rows; they compose sequentially,
    so each gets ``epsilon / K``. Each draws its noise from its own child of
    ``rng`` (spawned here, in the parent), so no two classes or joblib workers
    share a draw.

    Parameters
    ----------
    Z : ndarray or sparse matrix of shape (n, d)
        Rows of norm <= 1 (``dpsk._validation.design_matrix``).
    y : ndarray of shape (n,)
        Original labels.
    classes : ndarray of shape (K,)
        Sorted distinct labels, K >= 2.
    loss, epsilon, alpha, perturbation, tol, max_iter
        As in :func:`dpsk._erm.private_erm`.
    rng : numpy.random.Generator
        Parent generator; only its spawned children are used.
    n_jobs : int or None
        joblib workers over the binary problems.

    Returns
    -------
    W : ndarray of shape (1 or K, d)
    n_iter : ndarray of shape (1 or K,)
    """
    targets = binary_targets(y, classes)
    epsilon_each = epsilon / len(targets)
    generators = rng.spawn(len(targets))
    results = Parallel(n_jobs=n_jobs)(
        delayed(private_erm)(
            Z, t, loss, epsilon_each, alpha, perturbation, child, tol=tol, max_iter=max_iter
        )
        for t, child in zip(targets, generators)
    )
    W = np.vstack([w for w, _ in results])
    return W, np.array([n for _, n in results], dtype=np.int32)


class BaseDPLinearClassifier(PrivacyAccountingMixin, ClassifierMixin, BaseEstimator):
    """Common fit/predict of DP linear classifiers; subclasses choose the loss."""

    _parameter_constraints = {
        "epsilon": [Interval(Real, 0, np.inf, closed="neither")],
        "alpha": [Interval(Real, 0, np.inf, closed="neither")],
        "perturbation": [StrOptions({"objective", "output"})],
        "fit_intercept": ["boolean"],
        "data_norm": [Interval(Real, 0, np.inf, closed="neither")],
        "tol": [Interval(Real, 0, np.inf, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "accountant": [BudgetAccountant, None],
        "n_jobs": [Integral, None],
        "random_state": ["random_state", np.random.Generator, np.random.SeedSequence],
    }

    def _make_loss(self):
        raise NotImplementedError

    def fit(self, X, y):
        """Fit the private model and charge ``epsilon`` to the accountant.

        The budget is checked before the data is read and spent only if the fit
        succeeds.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training rows (the linear models also take a sparse matrix). Rows
            with L2 norm above ``data_norm`` are scaled down.
        y : array-like of shape (n_samples,)
            Class labels (any two or more values).

        Returns
        -------
        self : object
            Fitted estimator.
        """
        self._validate_params()
        return self._fit_with_budget(self._validate_input, self._release, X, y)

    def _validate_input(self, X, y):
        check_not_datetime(X)
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=np.float64)
        return X, y, check_classes(y)

    def _release(self, data, *, epsilon, delta):
        X, y, classes = data
        Z = design_matrix(X, self.data_norm, self.fit_intercept)
        W, n_iter = fit_private_problems(
            Z, y, classes, self._make_loss(), epsilon, self.alpha, self.perturbation,
            make_generator(self.random_state), tol=self.tol, max_iter=self.max_iter,
            n_jobs=self.n_jobs,
        )
        coef, intercept = unscale_coef(W, self.data_norm, self.fit_intercept)
        return {"classes_": classes, "coef_": coef, "intercept_": intercept, "n_iter_": n_iter}

    def decision_function(self, X):
        """Signed scores ``clip(X) @ coef_.T + intercept_``.

        Rows are clipped to ``data_norm`` as in ``fit``, so the model is applied
        to the same kind of input it was trained on.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        scores : ndarray of shape (n_samples,) or (n_samples, n_classes)
            For two classes, positive scores mean ``classes_[1]``.
        """
        check_is_fitted(self)
        check_not_datetime(X)
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        X = clip_rows(X, self.data_norm, warn=False)
        scores = np.asarray(X @ self.coef_.T) + self.intercept_
        return scores.ravel() if scores.shape[1] == 1 else scores

    def predict(self, X):
        """Predict class labels.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
        """
        scores = self.decision_function(X)
        if scores.ndim == 1:
            return self.classes_[(scores > 0).astype(int)]
        return self.classes_[np.argmax(scores, axis=1)]

    def _sigmoid_proba(self, X):
        scores = self.decision_function(X)
        if scores.ndim == 1:
            p = expit(scores)
            return np.column_stack([1.0 - p, p])
        # Normalising K saturated sigmoids ties at 1.0 once noisy scores are large,
        # so predict_proba could disagree with predict; the softmax of the
        # one-vs-rest scores keeps their order exactly.
        return softmax(scores, axis=1)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        # Noise calibrated for privacy can cost accuracy on tiny test problems.
        tags.classifier_tags.poor_score = True
        return tags
