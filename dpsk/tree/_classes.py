"""Private decision trees whose structure reads no data: the shared shell and the single tree.

:class:`BaseRandomTreesClassifier` is the shell of both tree models: it checks
the declared bounds and classes (free), asks the public rule for the size of
the trees (:func:`~dpsk.mechanisms._forest_rule.forest_plan`), and hands the
rows to :func:`~dpsk.mechanisms._forest.forest_release`, whose one event the
fit records. :class:`DPDecisionTreeClassifier` is one tree;
:class:`~dpsk.DPRandomForestClassifier` (``dpsk.ensemble``) many.
"""

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from .._data._validation import (
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
from ..accounting._ledger import BudgetAccountant
from ..mechanisms._forest import forest_proba, forest_release
from ..mechanisms._forest_rule import forest_plan
from ..mechanisms._random import noise_source, public_rng, validate_random_state

__all__ = ["BaseRandomTreesClassifier", "DPDecisionTreeClassifier", "declared_bounds"]

_BOUNDS_MISSING = (
    "{name} needs declared feature bounds: bounds=(low, high), each a number or one value "
    "per feature, e.g. bounds=(0, 1) after a dpsk.preprocessing.BoundedScaler. The trees "
    "draw their split points inside these bounds, and dpsk never reads them from the data "
    "(a minimum or maximum is one row's exact value). Nothing was spent."
)


def declared_bounds(bounds, n_features, name="the estimator"):
    """The declared ``bounds=(low, high)`` as two float arrays of shape (n_features,).

    Depends on the parameter and the number of features only, so a refusal is
    free. Each end is a number or a 1-d array of ``n_features`` values; both
    finite, ``low < high`` for every feature.

    Raises
    ------
    ValueError
        For missing or malformed bounds.
    """
    if bounds is None:
        raise ValueError(_BOUNDS_MISSING.format(name=name))
    try:
        low, high = bounds
        low = np.asarray(low, dtype=np.float64)
        high = np.asarray(high, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError("bounds must be a pair (low, high) of numbers or of 1-d arrays with "
                         "one value per feature. Nothing was spent.") from None
    ends = []
    for label, end in (("low", low), ("high", high)):
        if end.ndim > 1 or (end.ndim == 1 and end.shape[0] != n_features):
            raise ValueError(f"bounds: {label} must be a number or have one value per feature "
                             f"({n_features}). Nothing was spent.")
        ends.append(np.broadcast_to(end, (n_features,)).copy())
    low, high = ends
    if not (np.all(np.isfinite(low)) and np.all(np.isfinite(high))):
        raise ValueError("bounds must be finite. Nothing was spent.")
    if not np.all(low < high):
        raise ValueError("bounds must have low < high for every feature. Nothing was spent.")
    return low, high


class BaseRandomTreesClassifier(PrivacyAccountingMixin, ClassifierMixin, BaseEstimator):
    """Shared shell of the tree models (not for direct use).

    Subclasses set :attr:`_single_tree` and the parameters they expose; the
    rest (validation, the plan, the release, prediction) lives here.
    """

    _single_tree = True

    _parameter_constraints = {
        "epsilon": [Interval(Real, 0, None, closed="neither")],
        "max_depth": [Interval(Integral, 0, 20, closed="both"), StrOptions({"auto"})],
        "bounds": [tuple, list, None],
        "classes": ["array-like", None],
        "split_share": [Interval(Real, 0, 0.9, closed="both"), StrOptions({"auto"})],
        "class_weight": [dict, StrOptions({"balanced"}), None],
        "accountant": [BudgetAccountant, None],
        "random_state": [Interval(Integral, 0, None, closed="left"), None],
    }

    def _forest_parameters(self):
        """``(n_estimators, partition)`` as the subclass exposes them."""
        return 1, "shared"

    def fit(self, X, y, sample_weight=None):
        """Grow the trees and release their noisy counts; charge ``epsilon``.

        The budget is checked before the data is read, and spent once it is:
        a fit that fails after that point stays charged
        (:class:`~dpsk.PrivateFitError`).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Values outside the declared ``bounds`` are clipped to them.
        y : array-like of shape (n_samples,)
            Class labels, among the declared ``classes``.
        sample_weight : float or array-like of shape (n_samples,), default=None
            Row weights in [0, 1]: a row adds its weight (rounded to a
            multiple of ``2^-10``) to its counts, so one row still moves the
            counts by at most what the noise is calibrated for (``docs/trees.rst``,
            "Weights"), multiplied by the normalised ``class_weight``. Outside
            [0, 1], NaN or of the wrong shape: refused for free.

        Returns
        -------
        self : object

        Raises
        ------
        ValueError, TypeError
            Before anything is spent: bad parameters, missing bounds, input
            outside the domain (non-finite or non-numeric values, wrong shapes,
            labels outside the declared classes). Messages quote no value.
        dpsk.BudgetExceededError
            Before anything is spent.
        dpsk.PrivateFitError
            If the release fails after the data was read (charged).
        """
        validate_random_state(self.random_state)
        self._validate_params()
        if self.bounds is None:
            raise ValueError(_BOUNDS_MISSING.format(name=type(self).__name__))
        if isinstance(self.class_weight, str):
            class_weight_table(self.class_weight, [])  # "balanced": refused with its reason
        check_class_weight_declared(self.class_weight, self.classes)
        if self.class_weight is not None:
            class_weight_table(self.class_weight, check_declared_classes(self.classes))
        warn_if_classes_undeclared(self.classes)
        warn_if_column_vector(y)
        return self._fit_with_budget(self._validate_input, self._release, X, y, sample_weight)

    def _validate_input(self, X, y, sample_weight):
        """Refuse input outside the domain (free); return the prepared data."""
        check_not_datetime(X)
        X, y = values_withheld(validate_data, self, X, y, dtype=np.float64)
        low, high = declared_bounds(self.bounds, X.shape[1], type(self).__name__)
        classes = resolve_classes(y, self.classes)
        weights = row_weights(check_sample_weight(sample_weight, X.shape[0]),
                              class_weight_table(self.class_weight, classes), y, classes)
        return X, np.searchsorted(classes, y), classes, low, high, weights

    def _release(self, data, *, epsilon, delta):
        X, codes, classes, low, high, weights = data
        n_estimators, partition = self._forest_parameters()
        plan = forest_plan(X.shape[0], X.shape[1], len(classes), epsilon,
                           n_estimators=n_estimators, max_depth=self.max_depth,
                           partition=partition, split_share=self.split_share)
        release, _ = forest_release(
            X, codes, len(classes), low, high, epsilon, n_trees=plan.n_trees,
            depth=plan.depth, partition=plan.partition, split_share=plan.split_share,
            noise_rng=noise_source(self.random_state), public_rng=public_rng(self.random_state),
            weights=weights)
        return {
            "classes_": classes,
            "bounds_": (low, high),
            "n_estimators_": plan.n_trees,
            "max_depth_": plan.depth,
            "partition_": plan.partition,
            "split_share_": plan.split_share,
            "tree_feature_": release["feature"],
            "tree_threshold_": release["threshold"],
            "leaf_counts_": release["leaf_counts"],
            "leaf_count_variance_": release["leaf_variance"],
            "feature_weights_": release["feature_weights"],
            "split_counts_": release["split_counts"],
        }

    def predict_proba(self, X):
        """Class probabilities from the noisy leaf counts (post-processing, free).

        The counts of the leaves a row reaches are pooled over the trees, and
        each depth's pooled counts are trusted as far as their frequencies are
        more precise than the spread between sibling nodes that the release
        shows at that depth, deferring to the parent node otherwise (see
        :func:`~dpsk.mechanisms._forest.forest_proba` and ``docs/trees.rst``,
        "From counts to probabilities").

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Columns in the order of ``classes_``.
        """
        check_is_fitted(self, "leaf_counts_")
        check_not_datetime(X)
        X = finite_rows_advised(validate_data, self, X, dtype=np.float64, reset=False)
        X = np.clip(X, *self.bounds_)
        return forest_proba(X, self.tree_feature_, self.tree_threshold_, self.leaf_counts_,
                            self.leaf_count_variance_)

    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba` (``-inf`` for a probability of 0)."""
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))

    def predict(self, X):
        """The class of largest probability for each row.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
        """
        proba = self.predict_proba(X)
        return self.classes_[np.argmax(proba, axis=1)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # Noise calibrated for privacy, and splits that never look at the data, can
        # cost accuracy on the small problems of the common checks.
        tags.classifier_tags.poor_score = True
        return tags


_COMMON_PARAMETERS = """
    bounds : (low, high)
        Declared range of the features: ``low`` and ``high`` each a number or
        one value per feature, ``low < high``. Required: the split points are
        drawn inside it, and values outside it are clipped to it (a fixed map
        of each row, so the guarantee holds for any input). It is never read
        from the data. After :class:`~dpsk.preprocessing.BoundedScaler` or
        :class:`~dpsk.preprocessing.PrivateBoundsScaler`, ``bounds=(0, 1)``.
    classes : array-like of shape (n_classes,), default=None
        The labels the model can predict. ``None`` reads them from ``y`` and
        warns (:class:`~dpsk.ClassesFromDataWarning`): which labels occur is
        then public.
    split_share : float in [0, 0.9] or "auto", default="auto"
        Share of ``epsilon`` spent on the split statistics: each feature's
        class-conditional histogram on 8 bins of its declared range, from
        which the split points follow where the values lie and the split
        features are drawn in proportion to how well they separate the
        classes. 0 draws features uniformly and split points uniformly
        within the bounds (no data read for the structure at all). ``"auto"``
        spends 0.2 when the public rule predicts that the statistics stand
        above their noise, else 0 (``docs/trees.rst``, "Where the splits
        fall").
    class_weight : dict or None, default=None
        Weight of each declared class, e.g. ``{0: 0.2, 1: 1.0}`` when class 1
        is rare; divided by the largest, so every row weight stays in [0, 1],
        and multiplied into ``sample_weight``. ``"balanced"`` is refused: it
        would read the class counts, and so is any ``class_weight`` without
        declared ``classes`` (whether its keys are among ``y``'s labels would be
        a noise-free fact about the data); both refusals are free.
    accountant : BudgetAccountant or None, default=None
        The ledger charged (None: the default ledger).
    random_state : int or None, default=None
        None: noise from the operating system's secure source and fresh public
        randomness for the structure (the only setting for a model you
        release). An int seeds both, on separate streams, for tests and
        documentation only.
"""

_COMMON_ATTRIBUTES = """
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        When ``X`` has string column names.
    bounds_ : (ndarray, ndarray)
        The declared bounds, one value per feature.
    n_estimators_ : int
        Number of trees.
    max_depth_ : int
        Depth of every tree (complete binary trees, ``2**max_depth_`` leaves).
    partition_ : {"shared", "disjoint"}
        Whether the trees shared the rows or each had its own part.
    split_share_ : float
        The share of ``epsilon`` spent on the split statistics.
    tree_feature_, tree_threshold_ : ndarray of shape (n_estimators_, 2**max_depth_ - 1)
        Each internal node's feature and threshold, nodes in heap order (the
        children of node ``i`` are ``2 i + 1``, left, for values ``<=`` the
        threshold, and ``2 i + 2``).
    leaf_counts_ : ndarray of shape (n_estimators_, 2**max_depth_, n_classes)
        The noisy leaf-by-class counts (the private release).
    leaf_count_variance_ : float
        The variance of the noise of each leaf count (public).
    feature_weights_ : ndarray of shape (n_features_in_,)
        The probability of each feature at a node.
    split_counts_ : ndarray of shape (n_features_in_, 8, n_classes) or None
        The noisy split statistics (None when ``split_share_`` is 0).
    privacy_spent_ : (float, float)
        ``(epsilon, 0.0)``.
    privacy_event_ : PureDPEvent
"""


class DPDecisionTreeClassifier(BaseRandomTreesClassifier):
    """A differentially private decision tree whose structure does not read the data.

    The tree is a complete binary tree of depth ``max_depth``: each node
    splits a feature drawn at random at a point drawn at random inside the
    node's range (the random decision trees of Fan, Wang, Yu and Ma 2003, as
    in the private trees of Jagannathan, Pillaipakkamnatt and Wright 2012).
    Only the leaves read the data: each leaf's count of every class gets
    exact discrete Laplace noise, and the class probabilities are those noisy
    counts, normalised and shrunk towards the parent nodes where the noise
    dominates. With ``split_share > 0`` a share of ``epsilon`` first releases
    each feature's class histogram on a coarse grid, which places the split
    points where the values are and favours the features that separate the
    classes. A single random tree is a weak learner; for accuracy use
    :class:`~dpsk.DPRandomForestClassifier`, which pools many.

    Guarantee: ``epsilon``-differentially private under replace-one
    neighbours (rows and their weights), by basic composition of the split
    statistics and the leaf counts, each the Laplace mechanism on integer
    counts of a partition fixed before the counts are drawn
    (:func:`~dpsk.mechanisms._forest.forest_release`; ``docs/trees.rst``).
    One fit records one ``PureDPEvent(epsilon)``.

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy parameter of the whole fit, > 0.
    max_depth : int in [0, 20] or "auto", default="auto"
        Depth of the tree. ``"auto"``: the public rule of ``docs/trees.rst``
        ("Depth and number of trees"), which balances the leaves' signal
        against their noise: ``2**depth`` at most ``16 n epsilon' / K``
        (``epsilon'`` the leaves' share of epsilon) and within the root's
        cap, at most ``n``. 0 is the noisy class frequencies alone.
    """ + _COMMON_PARAMETERS + """
    Attributes
    ----------""" + _COMMON_ATTRIBUTES + """
    See Also
    --------
    DPRandomForestClassifier : many such trees, pooled.

    Examples
    --------
    >>> import numpy as np
    >>> from dpsk import BudgetAccountant, DPDecisionTreeClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.random((2000, 2))
    >>> y = (X[:, 0] > 0.5).astype(int)
    >>> ledger = BudgetAccountant()
    >>> tree = DPDecisionTreeClassifier(epsilon=1.0, bounds=(0, 1), classes=[0, 1],
    ...                                 accountant=ledger, random_state=0).fit(X, y)
    >>> ledger.total()
    (1.0, 0.0)
    >>> tree.predict_proba(X).shape
    (2000, 2)
    """

    _single_tree = True

    def __init__(self, epsilon=1.0, *, max_depth="auto", bounds=None, classes=None,
                 split_share="auto", class_weight=None, accountant=None, random_state=None):
        self.epsilon = epsilon
        self.max_depth = max_depth
        self.bounds = bounds
        self.classes = classes
        self.split_share = split_share
        self.class_weight = class_weight
        self.accountant = accountant
        self.random_state = random_state
