"""A differentially private random forest of trees whose structure reads no data."""

from numbers import Integral

from sklearn.utils._param_validation import Interval, StrOptions

from ..tree._classes import _COMMON_ATTRIBUTES, _COMMON_PARAMETERS, BaseRandomTreesClassifier

__all__ = ["DPRandomForestClassifier"]


class DPRandomForestClassifier(BaseRandomTreesClassifier):
    """A differentially private random forest: random trees, noisy leaf counts, pooled.

    Every tree is a complete binary tree whose nodes split a randomly drawn
    feature at a randomly drawn point inside the node's range: the structure
    never reads the rows (random decision trees, Fan, Wang, Yu and Ma 2003;
    private random forests, Jagannathan, Pillaipakkamnatt and Wright 2012,
    Fletcher and Islam 2017). The rows are then counted in the leaves, class
    by class, and the counts get exact discrete Laplace noise. A row's class
    probabilities pool the noisy counts of the leaves it reaches in all
    trees, shrunk towards coarser nodes where the noise dominates, down to the
    noisy class frequencies at the root: a forest whose leaves hold only noise
    predicts the majority class.

    With ``split_share > 0`` a share of ``epsilon`` first releases every
    feature's class histogram on a coarse grid of its declared range: the
    split points then follow where the values lie (declared bounds are often
    loose, and uniform split points would mostly fall where no row is), and
    the split features are drawn in proportion to how well they separate the
    classes. ``"auto"`` spends it when the public rule says it pays.

    Guarantee: ``epsilon``-differentially private under replace-one
    neighbours (rows and their weights), by basic composition of the split
    statistics and the leaf counts, each the Laplace mechanism on the integer
    counts of a partition fixed before the counts are drawn; trees on
    disjoint rows compose in parallel
    (:func:`~dpsk.mechanisms._forest.forest_release`; ``docs/trees.rst``).
    One fit records one ``PureDPEvent(epsilon)``.

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy parameter of the whole fit, > 0.
    n_estimators : int >= 1 or "auto", default="auto"
        Number of trees. ``"auto"``: the public rule of ``docs/trees.rst``
        ("Depth and number of trees"): ``round((n epsilon' / (8 K))^(1/3))``
        trees, ``epsilon'`` the leaves' share of epsilon (each tree counts at
        ``epsilon' / T``, so every node's signal-to-noise falls like
        ``1 / sqrt(T)``), between 1 and 100 and few enough that the pooled
        class frequencies stand 4 deviations above their noise.
    max_depth : int in [0, 20] or "auto", default="auto"
        Depth of every tree. ``"auto"``: the public rule, which balances the
        leaves' signal (rows per leaf) against their noise: ``2**depth`` at
        most ``16 n epsilon' / (K sqrt(n_estimators))`` and within the root's
        cap, with no more leaves than rows.
    partition : {"auto", "shared", "disjoint"}, default="auto"
        ``"shared"``: every tree counts every row, each at ``epsilon /
        n_estimators`` (sequential composition). ``"disjoint"``: the rows are
        dealt to the trees by a public random permutation and each tree
        counts its own at the whole ``epsilon`` (parallel composition).
        ``"auto"`` is ``"shared"``: for pooled counts both have the same noise
        to signal, and shared rows average out more of the sampling noise
        (``docs/trees.rst``, "Shared or disjoint rows").
    """ + _COMMON_PARAMETERS + """
    Attributes
    ----------""" + _COMMON_ATTRIBUTES + """
    See Also
    --------
    DPDecisionTreeClassifier : one such tree.
    DPLogisticRegression : a private linear model.

    Examples
    --------
    >>> import numpy as np
    >>> from dpsk import BudgetAccountant, DPRandomForestClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.random((5000, 4))
    >>> y = ((X[:, 0] > 0.5) ^ (X[:, 1] > 0.5)).astype(int)
    >>> ledger = BudgetAccountant()
    >>> forest = DPRandomForestClassifier(epsilon=1.0, bounds=(0, 1), classes=[0, 1],
    ...                                   accountant=ledger, random_state=0).fit(X, y)
    >>> ledger.total()
    (1.0, 0.0)
    >>> bool(forest.score(X, y) > 0.7)
    True
    """

    _single_tree = False

    _parameter_constraints = {
        **BaseRandomTreesClassifier._parameter_constraints,
        "n_estimators": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "partition": [StrOptions({"auto", "shared", "disjoint"})],
    }

    def __init__(self, epsilon=1.0, *, n_estimators="auto", max_depth="auto", bounds=None,
                 classes=None, partition="auto", split_share="auto", class_weight=None,
                 accountant=None, random_state=None):
        self.epsilon = epsilon
        self.n_estimators = n_estimators
        self.max_depth = max_depth
        self.bounds = bounds
        self.classes = classes
        self.partition = partition
        self.split_share = split_share
        self.class_weight = class_weight
        self.accountant = accountant
        self.random_state = random_state

    def _forest_parameters(self):
        return self.n_estimators, self.partition
