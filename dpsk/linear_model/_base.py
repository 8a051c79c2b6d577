"""Shared shell of the private linear classifiers."""

from numbers import Integral, Real

import numpy as np
from joblib import Parallel, delayed
from scipy.special import expit, softmax
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from .._data._dask import DaskDesignRows, class_indices, is_dask_array, validate_dask_input
from .._data._design import INTERCEPT_SCALE, clip_rows, design_matrix, design_rows, unscale_coef
from .._data._validation import (
    binary_targets,
    check_class_weight_declared,
    check_declared_classes,
    check_not_datetime,
    check_sample_weight,
    class_weight_table,
    finite_rows_advised,
    resolve_classes,
    row_weights,
    values_withheld,
    warn_if_classes_undeclared,
    warn_if_column_vector,
)
from .._mixin import PrivacyAccountingMixin
from ..accounting._events import ApproxDPEvent, GaussianEvent, PureDPEvent
from ..accounting._ledger import BudgetAccountant
from ..mechanisms._alpha import auto_alpha, excess_risk_bound, resolve_alpha
from ..mechanisms._erm import private_erm
from ..mechanisms._noise import analytic_gaussian_sigma
from ..mechanisms._prior import (
    prior_budget,
    prior_logits,
    prior_share,
    release_class_counts,
    smoothed_prior,
)
from ..mechanisms._prior_check import check_share, prior_wins, release_prior_check
from ..mechanisms._random import noise_source, validate_random_state
from ..pipeline._norms import resolve_data_norm
from ._margin import training_margin

__all__ = ["BaseDPLinearClassifier", "fit_private_problems", "problem_count", "AUTO_DATA_NORM",
           "SKLEARN_ONLY", "as_input_dtype", "refuse_sklearn_only", "class_counts",
           "declared_prior"]

#: The constraint of ``data_norm`` for models whose default reads the pipeline's
#: bound (``dpsk.pipeline._norms``).
AUTO_DATA_NORM = [Interval(Real, 0, np.inf, closed="neither"), StrOptions({"auto"})]

_DASK_WEIGHTS_REFUSED = (
    "sample_weight and class_weight are not supported with Dask input: the weighted "
    "solvers need the design rows in memory. Fit on a NumPy array (or without weights). "
    "Nothing was spent."
)


def problem_count(loss, n_classes):
    """How many models one fit releases about the same rows (one-vs-rest beyond two classes)."""
    return 1 if loss.n_outputs > 1 or n_classes == 2 else int(n_classes)


def fit_private_problems(Z, y, classes, loss, epsilon, alpha, perturbation, rng, *, tol,
                         delta=0.0, n_jobs=None, sample_weight=None, prior=None):
    """Fit the binary, one-vs-rest or multinomial private model for ``classes``; total
    cost ``(epsilon, delta)``.

    A multinomial ``loss`` (``loss.n_outputs == len(classes)``) is one release
    of the whole ``K x d`` weight matrix at the whole budget. For two classes
    it is reported as the one row ``W[1] - W[0]``, which gives the same
    decisions and probabilities (post-processing).

    One-vs-rest releases K models about the same rows. How the budget is shared
    between them depends on the mechanism (:func:`dpsk.mechanisms._erm.private_erm`:
    ``epsilon / K`` each for the pure mechanisms, one joint Gaussian release
    for Gaussian output perturbation). K is ``len(classes)``, which is declared
    (or, with ``classes=None``, public by choice), never the number of labels
    that happen to occur. Each problem draws its noise from its own source
    (spawned here, in the parent), so no two classes or joblib workers share a
    draw.

    Parameters
    ----------
    Z : ndarray or sparse matrix of shape (n, d)
        Rows of norm <= 1 (``dpsk._data._validation.design_matrix``).
    y : ndarray of shape (n,)
        Original labels.
    classes : ndarray of shape (K,)
        Sorted distinct labels, K >= 2. A class absent from ``y`` still gets its
        model (trained on all-negative labels: mostly noise).
    loss, epsilon, alpha, perturbation, tol, delta
        As in :func:`dpsk.mechanisms._erm.private_erm` (``epsilon`` and ``delta`` are the
        budget of all K models together).
    rng : NoiseSource
        Parent noise source; only its spawned children are used.
    n_jobs : int or None
        joblib workers over the binary problems.
    sample_weight : ndarray of shape (n,) or None
        Row weights in [0, 1] (docs/privacy.rst, "Weights"), the same for every
        one-vs-rest problem; needs a stored ``Z``.
    prior : ndarray of shape (K,) or None
        A public class prior (the noisy one, or the user's): every model's
        regulariser is centred on the prior model, whose only non-zero weight
        is the intercept column's (the last column of ``Z``, of value
        ``INTERCEPT_SCALE``), set so that its scores are
        :func:`dpsk.mechanisms._prior.prior_logits`. None centres on zero.

    Returns
    -------
    W : ndarray of shape (1 or K, d)
    """
    centers = _prior_centers(prior, loss, Z.shape[1], len(classes))
    if loss.n_outputs > 1:
        if loss.n_outputs != len(classes):
            raise ValueError("The multinomial loss must have one output per class.")
        indices = class_indices(classes, y) if is_dask_array(y) else np.searchsorted(classes, y)
        W = private_erm(Z, indices, loss, epsilon, alpha, perturbation,
                        rng, tol=tol, delta=delta, sample_weight=sample_weight,
                        center=centers)
        return W[1:] - W[:1] if len(classes) == 2 else W
    targets = binary_targets(y, classes)
    generators = rng.spawn(len(targets))
    if centers is None:
        centers = [None] * len(targets)
    results = Parallel(n_jobs=n_jobs)(
        delayed(private_erm)(
            Z, t, loss, epsilon, alpha, perturbation, child, tol=tol, delta=delta,
            n_problems=len(targets), sample_weight=sample_weight, center=center,
        )
        for t, child, center in zip(targets, generators, centers)
    )
    return np.vstack(results)


def as_input_dtype(X, *arrays):
    """``arrays`` in float32 when ``X`` is float32 (as scikit-learn's models keep it).

    The release is drawn in float64 on its grid; rounding it to float32 is
    post-processing, so it costs nothing.
    """
    if getattr(X, "dtype", None) == np.float32:
        return tuple(a.astype(np.float32) for a in arrays)
    return arrays


#: scikit-learn ``LogisticRegression`` parameters a dpsk linear model does not take,
#: with what to do instead (for a user who swaps one for the other).
SKLEARN_ONLY = {
    "C": "scikit-learn's C is 1 / (n_samples * alpha) here: pass alpha (or keep "
         "alpha='auto', chosen from public quantities)",
    "penalty": "the privacy proofs cover the L2 penalty only, whose strength is alpha",
    "max_iter": "the solver runs until it certifies the gradient norm tol, which the "
                "privacy noise covers, so there is no iteration cap: set tol instead",
    "verbose": "a private fit prints nothing: what a solver prints can depend on the data",
    "solver": "the solver is fixed: a certified Newton method with a fallback that always "
              "reaches tol",
    "l1_ratio": "the privacy proofs cover the L2 penalty only (alpha)",
    "dual": "the solver is fixed (a certified primal Newton method)",
    "intercept_scaling": "the intercept is a regularised constant feature, scaled so that "
                         "rows keep norm <= 1",
    "warm_start": "every private fit starts afresh (a warm start would carry the last "
                  "model's data into the next release)",
}


def refuse_sklearn_only(estimator_name, unsupported):
    """Raise a TypeError that says what to use instead of scikit-learn-only parameters."""
    if not unsupported:
        return
    lines = [f"{name!r}: {SKLEARN_ONLY[name]}" for name in unsupported if name in SKLEARN_ONLY]
    unknown = sorted(name for name in unsupported if name not in SKLEARN_ONLY)
    if unknown:
        lines.append(f"{unknown}: not parameters of {estimator_name}")
    raise TypeError(f"{estimator_name} got parameters it does not take. " + "; ".join(lines)
                    + ".")


def _prior_centers(prior, loss, d, n_classes):
    """The centres of the regulariser for ``prior``: ``(K, d)`` for the softmax, one
    ``(d,)`` vector per binary problem otherwise; None without a prior."""
    if prior is None:
        return None
    logits = prior_logits(prior, loss.n_outputs)
    centers = np.zeros((len(logits), d))
    # The intercept column holds INTERCEPT_SCALE in every row (dpsk._data._design).
    centers[:, -1] = logits / INTERCEPT_SCALE
    return centers if loss.n_outputs > 1 else list(centers)


def prior_model_weights(prior, loss, d, n_classes):
    """The prior model in the shape :func:`fit_private_problems` returns: ``(1 or K, d)``.

    Its only non-zero weights are the intercept column's, set to the centres
    of the regulariser (:func:`_prior_centers`), so it predicts the class of
    largest ``prior`` for every row. Post-processing of the released prior.
    """
    centers = np.atleast_2d(np.asarray(_prior_centers(prior, loss, d, n_classes)))
    if loss.n_outputs > 1 and n_classes == 2:
        return centers[1:] - centers[:1]
    return centers


def class_counts(y, classes):
    """How many rows of ``y`` hold each of ``classes`` (a NumPy or Dask ``y``)."""
    if is_dask_array(y):
        import dask.array as da

        return np.asarray(da.bincount(class_indices(classes, y),
                                      minlength=len(classes)).compute())[:len(classes)]
    return np.bincount(np.searchsorted(classes, y), minlength=len(classes))


def declared_prior(prior, n_classes):
    """A user's ``class_prior`` (public) as probabilities: K finite values > 0, normalised.

    Refused for free when it does not fit the classes: it is a parameter, not data.
    """
    values = np.asarray(prior, dtype=float).ravel()
    if values.shape != (n_classes,) or not np.all(np.isfinite(values) & (values > 0)):
        raise ValueError(
            f"class_prior must be 'auto', None or {n_classes} finite numbers > 0, one per "
            "class in the order of classes_. Nothing was spent.")
    return values / values.sum()


class BaseDPLinearClassifier(PrivacyAccountingMixin, ClassifierMixin, BaseEstimator):
    """Common fit/predict of DP linear classifiers; subclasses choose the loss."""

    #: What ``get_params`` reads for a model pickled before ``class_weight``
    #: existed (every ``__init__`` that takes it stores it on the instance).
    class_weight = None
    #: The same for ``class_prior``: models fitted before it existed had no
    #: prior, and the output-only models (robust, tilted, hinge) take none.
    class_prior = None

    _parameter_constraints = {
        "epsilon": [Interval(Real, 0, np.inf, closed="neither")],
        "alpha": [Interval(Real, 0, np.inf, closed="neither"), StrOptions({"auto"})],
        "perturbation": [StrOptions({"objective", "output", "gradient"})],
        "fit_intercept": ["boolean"],
        "data_norm": [Interval(Real, 0, np.inf, closed="neither")],
        "tol": [Interval(Real, 0, np.inf, closed="neither")],
        "accountant": [BudgetAccountant, None],
        "n_jobs": [Integral, None],
        "random_state": [Interval(Integral, 0, None, closed="left"), None],
        "classes": ["array-like", None],
        "delta": [Interval(Real, 0, 1, closed="left")],
        # "balanced" is accepted here only to be refused with its reason (it reads
        # the class counts): class_weight_table.
        "class_weight": [dict, StrOptions({"balanced"}), None],
        "class_prior": [StrOptions({"auto"}), "array-like", None],
    }

    def _make_loss(self, n_classes=2):
        """The loss of the release for ``n_classes`` (declared) classes."""
        raise NotImplementedError

    def __new__(cls, *args, **kwargs):
        # Before __init__ refuses them with a bare "unexpected keyword argument":
        # say what to use instead of LogisticRegression's own parameters. (Not in
        # __init__, whose signature scikit-learn reads as the list of parameters.)
        refuse_sklearn_only(cls.__name__, [name for name in kwargs if name in SKLEARN_ONLY
                                           and name not in cls._get_param_names()])
        return super().__new__(cls)

    def set_params(self, **params):
        """As scikit-learn's, with a hint for ``LogisticRegression``'s own parameters."""
        refuse_sklearn_only(type(self).__name__,
                            [name for name in params if name in SKLEARN_ONLY
                             and name not in self.get_params(deep=False)])
        return super().set_params(**params)

    def _privacy_event(self):
        """The ledger event of one fit: what the mechanism is, not just its pair.

        ``delta = 0``: a pure epsilon release with Gamma-norm noise.
        ``delta > 0`` with output perturbation or noisy gradient descent: one
        Gaussian mechanism (for gradient descent, the exact composition of its
        steps) whose noise is ``analytic_gaussian_sigma(epsilon, delta, 1)``
        times its L2 sensitivity (the scale is equivariant, so this ratio is
        public), which composes exactly under PLD/RDP accounting. Gaussian
        objective perturbation is recorded by its ``(epsilon, delta)`` pair.
        """
        epsilon, delta = self._privacy_cost()
        if delta == 0:
            # With the noisy class counts the fit is two pure releases: still one
            # epsilon-DP event (sequential composition), of no single named law.
            mechanism = "generic" if self._spends_on_prior() else "gamma-norm"
            return PureDPEvent(epsilon, mechanism=mechanism)
        if self.perturbation in ("output", "gradient"):
            return GaussianEvent(noise_multiplier=analytic_gaussian_sigma(epsilon, delta, 1.0),
                                 delta=delta, claimed_epsilon=epsilon)
        return ApproxDPEvent(epsilon, delta)

    def fit(self, X, y, sample_weight=None):
        """Fit the private model and charge ``epsilon`` to the accountant.

        The budget is checked before the data is read (a refusal then costs
        nothing) and spent once the data is read: a fit that fails after that
        point stays charged, and says so (:class:`~dpsk.PrivateFitError`).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training rows (the linear models also take a sparse matrix). Rows
            with L2 norm above ``data_norm`` are scaled down.
        y : array-like of shape (n_samples,)
            Class labels (any two or more values).
        sample_weight : float or array-like of shape (n_samples,), default=None
            Row weights in [0, 1], multiplied by the normalised ``class_weight``.
            The objective is ``(1/n) sum_i s_i loss_i + (alpha/2) ||w||^2``
            with ``n = n_samples`` (public), not the sum of the weights, so the
            noise and the guarantee are those of the unweighted fit, for
            neighbours that change a row and its weight together
            (docs/privacy.rst, "Weights"). Weights outside [0, 1], NaN or of
            the wrong shape are refused before anything is spent. All-zero
            weights are allowed (a noise-only model, charged). Not for Dask
            input. Weighted fits build the design rows in memory.

        Returns
        -------
        self : object
            Fitted estimator.

        Raises
        ------
        ValueError, TypeError
            Before anything is spent, for bad parameters and for input outside
            the domain (non-finite or non-numeric features, wrong shapes, labels
            outside the declared ``classes``).
        dpsk.BudgetExceededError
            Before anything is spent, when the ledger cannot afford the fit.
        dpsk.PrivateFitError
            If the release fails after the data was read; the budget is then
            charged. The mechanisms are built not to fail on valid input.
        """
        validate_random_state(self.random_state)
        self._validate_params()
        self._check_params_before_fit()
        warn_if_classes_undeclared(self.classes)
        warn_if_column_vector(y)
        return self._fit_with_budget(self._validate_at_norm(resolve_data_norm(self)),
                                     self._release, X, y, sample_weight)

    def _validate_at_norm(self, data_norm):
        """The domain checks, recording the fit's ``data_norm_`` (public) as they start.

        Set inside the fit protocol, so that a refused fit leaves the
        estimator as it was.
        """
        def validate(*args):
            self.data_norm_ = data_norm
            return self._validate_weighted_input(*args)

        return validate

    def _row_norm(self):
        """The row bound of this fit: ``data_norm_`` (set by ``fit``), else ``data_norm``.

        A model saved before ``data_norm_`` existed has a numeric ``data_norm``.
        """
        fitted = self.__dict__.get("data_norm_")
        return float(self.data_norm) if fitted is None else fitted

    def _resolve_alpha(self, n, d, loss, n_classes, epsilon, delta, loss_at=None):
        """The L2 strength of this fit: ``alpha``, or the alpha rule's for ``"auto"``.

        Reads public quantities only: ``n`` and ``d`` (the design's shape,
        after the intercept column and any feature map), the declared number
        of classes, the budget, the mechanism and the loss
        (``dpsk.mechanisms._alpha.auto_alpha``). ``(epsilon, delta)`` is the
        whole fit's; when a share goes to the class counts the rule sees the
        model's own budget (:meth:`_prior_budget`). The result is stored as
        ``alpha_``.
        """
        budget = self._prior_budget(n, d, loss, n_classes, epsilon, delta, loss_at)
        if budget is not None:
            epsilon = budget.model_epsilon
        return self._rule_alpha(n, d, loss, n_classes, epsilon, delta, loss_at)

    def _rule_alpha(self, n, d, loss, n_classes, epsilon, delta, loss_at=None):
        """``alpha``, or the rule's alpha for a model released at ``(epsilon, delta)``."""
        return resolve_alpha(self.alpha, n=n, d=d, epsilon=epsilon, delta=delta, loss=loss,
                             perturbation=self.perturbation,
                             n_problems=problem_count(loss, n_classes), tol=self.tol,
                             loss_at=loss_at)

    def _spends_on_prior(self):
        """Whether a fit releases noisy class counts: an intercept and ``class_prior="auto"``."""
        prior = getattr(self, "class_prior", None)
        return bool(self.fit_intercept) and isinstance(prior, str) and prior == "auto"

    def _prior_budget(self, n, d, loss, n_classes, epsilon, delta, loss_at=None):
        """How the fit's ``(epsilon, delta)`` is shared with the class counts, or None.

        A function of public quantities only (``dpsk.mechanisms._prior``): the
        share balances the model's excess-risk bound at the whole budget (at
        the rule's alpha there, whatever ``alpha`` is, so that a search's
        candidates at multiples of the rule share their budget alike) against
        the noisy prior's. Gaussian
        output perturbation and noisy gradient descent, recorded as one
        Gaussian mechanism, give the counts Gaussian noise; every other fit
        gives them discrete Laplace noise.
        """
        if not self._spends_on_prior():
            return None
        gaussian = delta > 0 and self.perturbation in ("output", "gradient")
        problems = problem_count(loss, n_classes)
        alpha = auto_alpha(n, d, epsilon, delta, loss=loss, perturbation=self.perturbation,
                           n_problems=problems, tol=self.tol, loss_at=loss_at, corrected=False)
        bound = excess_risk_bound(alpha, n, d, epsilon, delta, loss=loss,
                                  perturbation=self.perturbation,
                                  n_problems=problems, tol=self.tol, loss_at=loss_at)
        share = prior_share(bound, n, n_classes, epsilon, delta, gaussian)
        return prior_budget(share, epsilon, delta, gaussian, check=check_share(n, epsilon))

    def _class_prior(self, y, classes, budget, rng):
        """The prior the models are centred on: noisy (released here), declared, or None."""
        prior = getattr(self, "class_prior", None)
        if not self.fit_intercept or prior is None:
            return None
        if budget is not None:
            return smoothed_prior(release_class_counts(class_counts(y, classes), budget, rng))
        return declared_prior(prior, len(classes))

    def _fit_linear(self, Z, y, classes, loss, weights, epsilon, delta):
        """The one private fit every linear shell runs on its design ``Z``.

        With the noisy class prior the fit makes three releases: the class
        counts, the model (centred on the prior model) and the prior check,
        which releases the prior model instead of the model when the noisy
        check says the prior model classifies more training rows correctly
        (:mod:`dpsk.mechanisms._prior_check`). Returns ``(W, alpha, prior,
        fallback)``: the released weights on ``Z``'s columns, the L2 strength,
        the prior the models were centred on (None if none) and whether the
        prior model was released (None when no check ran).
        """
        n, d = Z.shape
        budget = self._prior_budget(n, d, loss, len(classes), epsilon, delta)
        alpha = self._resolve_alpha(n, d, loss, len(classes), epsilon, delta)
        rng = noise_source(self.random_state)
        if budget is None:
            prior = self._class_prior(y, classes, None, None)
            W = fit_private_problems(
                Z, y, classes, loss, epsilon, alpha, self.perturbation, rng, tol=self.tol,
                delta=delta, n_jobs=self.n_jobs, sample_weight=weights, prior=prior)
            return W, alpha, prior, None
        count_rng, rng, check_rng = rng.spawn(3)
        prior = self._class_prior(y, classes, budget, count_rng)
        W = fit_private_problems(
            Z, y, classes, loss, budget.model_epsilon, alpha, self.perturbation, rng,
            tol=self.tol, delta=delta, n_jobs=self.n_jobs, sample_weight=weights, prior=prior)
        constant = int(np.argmax(prior))
        noisy = release_prior_check(training_margin(Z, y, W, classes, constant, weights),
                                    budget, check_rng)
        if prior_wins(noisy):
            return prior_model_weights(prior, loss, d, len(classes)), alpha, prior, True
        return W, alpha, prior, False

    def _check_params_before_fit(self):
        """Parameter checks beyond the constraints (subclasses add theirs)."""
        class_weight = self.class_weight
        if isinstance(class_weight, str):
            class_weight_table(class_weight, [])  # "balanced": refused with its reason
        check_class_weight_declared(class_weight, self.classes)
        if class_weight is not None:
            class_weight_table(class_weight, check_declared_classes(self.classes))
        if self.perturbation == "gradient" and self.delta == 0:
            raise ValueError(
                "perturbation='gradient' (noisy gradient descent) adds Gaussian noise and "
                "needs delta > 0, e.g. delta=1e-6; with delta=0 use 'objective' or 'output'."
            )

    def _validate_input(self, X, y):
        """Refuse input outside the domain (free); return ``(X, y, classes_)``."""
        check_not_datetime(X)
        if is_dask_array(X):
            return validate_dask_input(self, X, y)
        # float32 stays float32: the design rows are built from it block by block
        # in float64 (dpsk._data._design), so no float64 copy of X is ever made.
        X, y = values_withheld(validate_data, self, X, y, accept_sparse="csr",
                               dtype=[np.float64, np.float32])
        return X, y, resolve_classes(y, self.classes)

    def _validate_weighted_input(self, X, y, sample_weight):
        """:meth:`_validate_input`, then the row weights (free); ``(X, y, classes_, weights)``.

        ``weights`` is None without ``sample_weight`` and ``class_weight``.
        """
        class_weight = self.class_weight
        if (sample_weight is not None or class_weight is not None) and is_dask_array(X):
            raise ValueError(_DASK_WEIGHTS_REFUSED)
        X, y, classes = self._validate_input(X, y)
        prior = getattr(self, "class_prior", None)
        if prior is not None and not isinstance(prior, str):
            declared_prior(prior, len(classes))  # a parameter that does not fit: free
        weights = check_sample_weight(sample_weight, X.shape[0])
        table = class_weight_table(class_weight, classes)
        return X, y, classes, row_weights(weights, table, y, classes)

    def _release(self, data, *, epsilon, delta):
        X, y, classes, weights = data
        data_norm = self._row_norm()
        if is_dask_array(X):
            Z = DaskDesignRows(X, data_norm, self.fit_intercept)
        elif weights is not None:
            # The weighted solvers take a stored design (dense or CSR).
            Z = design_matrix(X, data_norm, self.fit_intercept)
        else:
            Z = design_rows(X, data_norm, self.fit_intercept)
        loss = self._make_loss(len(classes))
        W, alpha, prior, fallback = self._fit_linear(Z, y, classes, loss, weights, epsilon,
                                                     delta)
        coef, intercept = unscale_coef(W, data_norm, self.fit_intercept)
        coef, intercept = as_input_dtype(X, coef, intercept)
        return {"classes_": classes, "coef_": coef, "intercept_": intercept, "alpha_": alpha,
                "class_prior_": prior, "prior_fallback_": fallback}

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
        X = finite_rows_advised(validate_data, self, X, accept_sparse="csr", dtype=np.float64,
                                reset=False)
        X = clip_rows(X, self._row_norm())
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
