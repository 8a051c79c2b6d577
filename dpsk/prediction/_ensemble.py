"""DPPredictionEnsemble: private answers from a model that stays secret."""

import warnings
from numbers import Integral, Real

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import BaseEstimator, ClassifierMixin, MetaEstimatorMixin, clone
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from .._data._validation import (
    check_not_datetime,
    finite_rows_advised,
    refuse_fit_params,
    resolve_classes,
    values_withheld,
    warn_if_classes_undeclared,
    warn_if_column_vector,
)
from .._mixin import PrivacyAccountingMixin
from .._silence import silenced
from ..accounting._events import ExponentialEvent
from ..accounting._ledger import BudgetAccountant
from ..mechanisms._random import public_rng, validate_random_state
from ..model_selection._search import _split_parts
from ..pipeline._check import warn_from_calling_pipeline
from ._secret import SecretStateMixin
from ._stability import spend_per_row
from ._vote import (
    averaged_answers,
    averaging_n_teachers,
    noisy_vote_shares,
    paper_n_teachers,
    private_vote,
    vote_counts,
)

__all__ = ["DPPredictionEnsemble", "TeachersInPickleWarning"]

_WEIGHTS_REFUSED = (
    "DPPredictionEnsemble.fit does not support sample_weight: its privacy argument "
    "counts each teacher's vote once, whatever the weights of its rows, so weights "
    "would not change the released labels as a user expects. Use DPLogisticRegression "
    "with sample_weight in [0, 1] instead. Nothing was spent."
)


class TeachersInPickleWarning(UserWarning):
    """A fitted :class:`DPPredictionEnsemble` was pickled: the file holds its teachers.

    The teachers are ordinary, non-private models of the training data. Keep
    the file as secret as the data; publishing it voids the guarantee.
    """


_PICKLE_MESSAGE = (
    "Pickling a fitted DPPredictionEnsemble saves its teachers, which are non-private "
    "models of the training data. Keep the file as secret as the data itself: publishing "
    "the fitted object or its pickle voids the privacy guarantee of the answers."
)


class _ConstantTeacher:
    """The teacher of a part whose rows all carry one label: it votes for that label.

    Fitting a classifier on one class fails for most scikit-learn estimators;
    whether a part has one class depends on the data, so that failure must not
    surface. This teacher is what any sensible classifier would learn there.
    """

    def __init__(self, label):
        self.label = label

    def predict(self, X):
        return np.full(X.shape[0], self.label)


def _fit_teacher(estimator, X, y):
    """Fit one teacher on its part; a failing fit gives an abstaining teacher (None).

    Runs silenced (also inside joblib workers, where the parent's filters do not
    apply): a convergence warning would describe the part.
    """
    with silenced():
        labels = np.unique(y)
        if labels.shape[0] == 1:
            return _ConstantTeacher(labels[0])
        try:
            estimator.fit(X, y)
        except Exception:  # noqa: BLE001 - the failure is private; the teacher abstains
            return None
    return estimator


class DPPredictionEnsemble(SecretStateMixin, PrivacyAccountingMixin, MetaEstimatorMixin,
                           ClassifierMixin, BaseEstimator):
    """Private prediction by subsample and aggregate (Dwork and Feldman, 2018).

    ``fit`` splits the rows at random into ``r`` disjoint parts and trains a
    clone of ``estimator`` on each (the *teachers*). The teachers are never
    released. ``predict`` answers each query row by a private vote among them
    and charges ``epsilon`` per distinct row to the accountant, before
    answering.

    Privacy guarantee: every answer is ``epsilon``-differentially private with
    respect to the replacement of one training row (Dwork and Feldman 2018,
    "Privacy-preserving prediction", COLT, Theorem 4.1, corrected as in
    ``docs/prediction.rst``; for more than two classes the exponential
    mechanism of McSherry and Talwar 2007). Why: the split comes from public
    randomness and its part sizes from ``n`` and ``r`` alone, so a replaced row
    changes one part and one teacher; that teacher's vote moves from one class
    to another, so every vote count ``c_k`` moves by at most 1; the answer is
    class ``k`` with probability proportional to ``exp(epsilon c_k / 2)``, the
    exponential mechanism with sensitivity 1. For two classes this is the
    paper's "answer 1 with probability ``e^{eps v/2} / (1 + e^{eps v/2})``",
    ``v = c_1 - c_0`` (the paper's prose formula ``exp(eps c_b)`` is off by a
    factor 2 and would only be ``2 epsilon``-DP). ``k`` answered rows cost
    ``k epsilon`` by sequential composition; the ledger records one
    :class:`~dpsk.ExponentialEvent` per answered row, so
    ``accountant.total("advanced" | "pld" | "rdp", delta=...)`` and
    ``BudgetAccountant(composition=...)`` give tighter totals for long streams.

    Conditions, enforced: the split never looks at the data; the teachers see
    only their own part; ``classes`` are declared (or read from ``y`` with a
    :class:`~dpsk.ClassesFromDataWarning`); a teacher whose part has one label
    votes for it, and one whose fit raises, or that predicts a label outside
    ``classes``, abstains, so nothing about a part surfaces as an error.

    What is *not* covered: the fitted object itself. ``fit`` releases nothing
    and spends nothing, but the teachers are non-private models kept in private
    attributes, which the pickle contains (pickling warns with
    :class:`TeachersInPickleWarning`). Publishing the object or its pickle
    voids the guarantee; serve answers from it, keep it as secret as the data.

    Parameters
    ----------
    estimator : classifier
        Any scikit-learn classifier (with ``fit`` and ``predict``), cloned for
        each teacher. It needs no privacy of its own.
    epsilon : float, default=1.0
        Privacy parameter of each answered row, > 0.
    n_teachers : int or None, default=None
        The number ``r`` of teachers. None: the paper's rule
        ``ceil(6 ln(4 (K - 1) / target_error) / epsilon)`` (see
        :func:`dpsk.prediction._vote.paper_n_teachers`), capped at
        ``n_samples // min_samples_per_teacher`` (at least 1). An explicit value
        is capped at ``n_samples``. Both caps depend on public values only.
    target_error : float, default=0.05
        The ``alpha`` of the paper's rule, in (0, 1): where at least two thirds
        of the teachers agree, the answer differs from their label with
        probability at most ``target_error / 4``.
    min_samples_per_teacher : int, default=100
        Smallest part size the default rule accepts.
    classes : array-like or None, default=None
        Declared class labels. None reads them from ``y`` and warns that they
        become public.
    accountant : BudgetAccountant or None, default=None
        Ledger charged by ``predict``; None means :func:`dpsk.default_accountant`
        at query time.
    n_jobs : int or None, default=None
        joblib workers for the teacher fits.
    random_state : int or None, default=None
        None: the split comes from fresh public entropy and every answer from
        the operating system's secure generator. An int makes the split and
        the answers reproducible (each row's answer is then a function of the
        seed and the row): for tests and documentation only, not private.
    aggregation : {"vote", "average"}, default="vote"
        "vote": the exponential mechanism on the vote counts (Theorem 4.1).
        "average": the agnostic averaging of Corollary 4.7, two classes only:
        the votes for ``classes[1]`` plus discrete Laplace noise of scale
        ``1 / epsilon``, clipped to ``[0, r]``, divided by ``r``, and the answer
        drawn with that probability (``epsilon``-DP per row, charged as a
        :class:`~dpsk.PureDPEvent`; see :func:`dpsk.prediction._vote.averaged_answers`).
        Its default ``r`` is ``ceil(1 / (target_error epsilon))``, capped like
        the vote's.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    n_teachers_ : int
        The number of teachers (a function of the parameters and ``n_samples``).
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Defined when ``X`` has string column names.

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> from dpsk import BudgetAccountant, DPPredictionEnsemble
    >>> from dpsk.datasets import load_adult
    >>> X, y = load_adult(return_X_y=True, preprocess=True)
    >>> acc = BudgetAccountant(epsilon=10.0)
    >>> ens = DPPredictionEnsemble(LogisticRegression(), epsilon=0.5, accountant=acc,
    ...                            classes=[0, 1], random_state=0).fit(X[:40000], y[:40000])
    >>> ens.n_teachers_
    53
    >>> answers = ens.predict(X[40000:40010])   # ten rows at 0.5 each
    >>> acc.total()
    (5.0, 0.0)
    """

    _parameter_constraints = {
        "estimator": [HasMethods(["fit", "predict"])],
        "epsilon": [Interval(Real, 0, np.inf, closed="neither")],
        "n_teachers": [Interval(Integral, 1, None, closed="left"), None],
        "target_error": [Interval(Real, 0, 1, closed="neither")],
        "min_samples_per_teacher": [Interval(Integral, 1, None, closed="left")],
        "classes": ["array-like", None],
        "accountant": [BudgetAccountant, None],
        "n_jobs": [Integral, None],
        "random_state": [Interval(Integral, 0, None, closed="left"), None],
        "aggregation": [StrOptions({"vote", "average"})],
    }

    _secret_attribute = "_teachers"
    _pickle_warning = TeachersInPickleWarning
    _pickle_message = _PICKLE_MESSAGE

    def __init__(self, estimator, *, epsilon=1.0, n_teachers=None, target_error=0.05,
                 min_samples_per_teacher=100, classes=None, accountant=None, n_jobs=None,
                 random_state=None, aggregation="vote"):
        self.estimator = estimator
        self.epsilon = epsilon
        self.n_teachers = n_teachers
        self.target_error = target_error
        self.min_samples_per_teacher = min_samples_per_teacher
        self.classes = classes
        self.accountant = accountant
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.aggregation = aggregation

    def _resolve_n_teachers(self, n_samples, n_classes):
        """``r`` from the parameters and ``n_samples`` (public); warns when capped."""
        if self.n_teachers is not None:
            wanted, cap = self.n_teachers, n_samples
            why = f"there are only {n_samples} rows"
        else:
            if self.aggregation == "average":
                wanted = averaging_n_teachers(self.epsilon, self.target_error)
            else:
                wanted = paper_n_teachers(self.epsilon, self.target_error, n_classes)
            cap = max(1, n_samples // self.min_samples_per_teacher)
            why = (f"{n_samples} rows allow {cap} parts of at least "
                   f"min_samples_per_teacher={self.min_samples_per_teacher}")
        if wanted > cap:
            warnings.warn(
                f"DPPredictionEnsemble uses {cap} teachers instead of {wanted}: {why}. "
                "Answers stay epsilon-DP, but the vote is noisier than target_error asks.",
                UserWarning,
                stacklevel=3,
            )
        return min(wanted, cap)

    def fit(self, X, y, **fit_params):
        """Train the teachers on disjoint random parts. Spends nothing.

        Nothing is released: the fitted attributes are functions of the
        parameters and public metadata (``classes_``, ``n_teachers_``,
        ``n_features_in_``); the teachers stay in private attributes.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training rows; each teacher sees only its own part.
        y : array-like of shape (n_samples,)
            Labels, among the declared ``classes``.

        **fit_params : dict
            Only ``sample_weight=None``: weights are refused for free
            (``TypeError``) with the reason.

        Returns
        -------
        self : object
            The fitted ensemble (nothing charged).

        Raises
        ------
        ValueError, TypeError
            For bad parameters and input outside the domain (non-finite
            features, wrong shapes, labels outside the declared ``classes``).
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
        if self.aggregation == "average" and classes.shape[0] != 2:
            raise ValueError(
                "Only binary classification is supported with aggregation='average' "
                f"(Corollary 4.7); got {classes.shape[0]} classes. Use aggregation='vote'."
            )
        n_teachers = self._resolve_n_teachers(y.shape[0], classes.shape[0])
        # Public randomness, its own generator: the parts never depend on the data.
        parts = _split_parts(y.shape[0], n_teachers, public_rng(self.random_state))
        teachers = Parallel(n_jobs=self.n_jobs)(
            delayed(_fit_teacher)(clone(self.estimator), X[part], y[part]) for part in parts
        )
        self.classes_ = classes
        self.n_teachers_ = n_teachers
        self._teachers = teachers
        return self

    def predict(self, X):
        """Answer each row by a private vote; charges ``epsilon`` per distinct row first.

        Identical rows of one batch get one answer and are charged once (the
        copies are post-processing). The whole batch is charged before any
        teacher is asked, or refused with nothing spent and nothing answered.

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)
            The query rows (the querier's own; not training data).

        Returns
        -------
        y_pred : ndarray of shape (n_queries,)
            One private answer per row, among ``classes_``.

        Raises
        ------
        ValueError, TypeError
            For input outside the domain, before anything is spent.
        dpsk.BudgetExceededError
            When the ledger cannot afford the whole batch; nothing is spent.
        """
        epsilon, distinct, inverse = self._distinct_queries(X)
        if self.aggregation == "average":
            spend_per_row(self._resolve_accountant(), epsilon, distinct.shape[0],
                          source=self)
            counts = vote_counts(self._teachers, distinct, self.classes_)
            answers = averaged_answers(counts, self.n_teachers_, epsilon, distinct,
                                       self.random_state)
            return self.classes_[answers[np.ravel(inverse)]]
        spend_per_row(self._resolve_accountant(), epsilon, distinct.shape[0],
                      event=ExponentialEvent, source=self)
        counts = vote_counts(self._teachers, distinct, self.classes_)
        answers = private_vote(counts, epsilon, distinct, self.random_state)
        return self.classes_[answers[np.ravel(inverse)]]

    def predict_proba(self, X):
        """Noisy vote shares; charges ``epsilon`` per distinct row first, like ``predict``.

        Each class's vote count gets independent exact discrete Laplace noise
        of scale ``2 / epsilon`` (one replaced training row moves the count
        vector by at most 2 in L1); the noisy counts, clipped at 0, are
        normalised (uniform if all are 0). Each distinct row costs ``epsilon``
        (a :class:`~dpsk.PureDPEvent`), on top of any ``predict`` of the same
        row: the two are separate releases, and need not agree.

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)

        Returns
        -------
        proba : ndarray of shape (n_queries, n_classes)

        Raises
        ------
        ValueError, TypeError
            For input outside the domain, before anything is spent.
        dpsk.BudgetExceededError
            When the ledger cannot afford the whole batch; nothing is spent.
        """
        epsilon, distinct, inverse = self._distinct_queries(X)
        spend_per_row(self._resolve_accountant(), epsilon, distinct.shape[0],
                      "Estimating probabilities for", source=self)
        counts = vote_counts(self._teachers, distinct, self.classes_)
        shares = noisy_vote_shares(counts, epsilon, distinct, self.random_state)
        return shares[np.ravel(inverse)]

    def _distinct_queries(self, X):
        """``(epsilon per row, distinct rows, inverse)`` of a batch; free refusals first."""
        check_is_fitted(self)
        epsilon, _ = self._privacy_cost()
        check_not_datetime(X)
        # The query rows are the querier's own: refusals may quote them.
        X = finite_rows_advised(validate_data, self, X, dtype=np.float64, reset=False)
        # The distinct rows and their order are functions of the query, not the data.
        distinct, inverse = np.unique(X, axis=0, return_inverse=True)
        return epsilon, distinct, inverse

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # A noisy vote among teachers trained on small parts can lose accuracy
        # on tiny test problems.
        tags.classifier_tags.poor_score = True
        return tags
