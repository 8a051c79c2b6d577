"""The public rule that sizes a private forest: trees, depth, partition and split share.

Every number here is a function of public quantities only (``n``, ``d``, the
declared number of classes ``K`` and ``epsilon``), so the plan can be printed,
stored and published. ``docs/trees.rst`` derives the rule ("Depth and number
of trees", "Shared or disjoint rows", "Where the splits fall").
"""

import math
from dataclasses import dataclass

__all__ = ["ForestPlan", "forest_plan", "LEAF_SIGNAL", "TREE_POWER", "TREE_SCALE", "ROOT_SIGNAL",
           "MAX_TREES", "SPLIT_SHARE", "SPLIT_SIGNAL", "MAX_CELLS"]

#: ``c`` of the depth rule: the pooled leaf budget ``L sqrt(T)`` is ``c n epsilon / K``.
LEAF_SIGNAL = 16.0

#: The tree rule: ``T = round((n epsilon / K / TREE_SCALE)^TREE_POWER)``, at
#: least 1 and at most :data:`MAX_TREES` (``docs/trees.rst``).
TREE_POWER = 1.0 / 3.0
TREE_SCALE = 8.0

#: The pooled root counts (the class frequencies every noisy node defers to) must
#: stand this many standard deviations above their noise: ``T L <= (n epsilon /
#: K)^2 / (8 ROOT_SIGNAL^2)``.
ROOT_SIGNAL = 4.0

#: The most trees the rule picks (a user may ask for more).
MAX_TREES = 100

#: The share of epsilon the rule spends on split statistics when they pay.
SPLIT_SHARE = 0.2

#: The split statistics pay when a bin's expected count per class is at least
#: this many times the noise scale: ``n s epsilon / (2 d B K) >= SPLIT_SIGNAL``.
SPLIT_SIGNAL = 0.5

#: The most leaf-by-class cells (``T 2^depth K``) the rule allows: memory and
#: the noise draws grow with them.
MAX_CELLS = 1 << 20

_SPLIT_BINS = 8  # dpsk.mechanisms._forest.SPLIT_BINS (not imported: rules sit apart)


@dataclass(frozen=True)
class ForestPlan:
    """The size of one private forest (public).

    Attributes
    ----------
    n_trees : int
    depth : int
    partition : {"shared", "disjoint"}
    split_share : float
    """

    n_trees: int
    depth: int
    partition: str
    split_share: float


def leaf_budget(n, n_classes, epsilon):
    """``Q = c n epsilon / K``: how many noisy leaf counts a forest can afford in all.

    With the rows shared by ``T`` trees of ``L`` leaves, a leaf holds about
    ``n / (L K)`` rows of a class and the pooled count of a row's ``T``
    leaves has noise of standard deviation ``2 sqrt(2 T) / epsilon`` per tree
    average: signal over noise ``n epsilon / (2 sqrt 2 K L sqrt(T))``. Holding
    it at a constant is ``L sqrt(T) = Q``.
    """
    return LEAF_SIGNAL * n * epsilon / n_classes


def root_cap(n, n_classes, epsilon):
    """The most leaves in all, ``T L``, that keep the pooled root above its noise.

    The root's count of a class, pooled over ``T`` trees of ``L`` leaves with the
    rows shared, is ``T`` times the class's rows plus the sum of ``T L``
    noises of variance about ``8 T^2 / epsilon^2`` each: divided by ``T``,
    noise of standard deviation ``sqrt(8 T L) / epsilon`` against about ``n /
    K`` rows. :data:`ROOT_SIGNAL` standard deviations give ``T L <= (n
    epsilon / K)^2 / (8 ROOT_SIGNAL^2)``.
    """
    return (n * epsilon / n_classes) ** 2 / (8.0 * ROOT_SIGNAL**2)


def auto_trees(n, n_classes, epsilon):
    """``T = round((n epsilon / (K TREE_SCALE))^TREE_POWER)``, between 1 and :data:`MAX_TREES`.

    With the rows shared, each tree counts at ``epsilon / T``, so the pooled
    signal-to-noise ratio of every node falls like ``1 / sqrt(T)`` and every
    doubling of ``T`` costs half a level of the depth at which the counts
    still stand above their noise. More trees average the randomness of the
    structure; the cube root buys them slowly: one tree until ``n epsilon / K``
    reaches 27, 4 at about 500, 10 at 8,000, 100 only past 8 million.
    """
    trees = round((n * epsilon / (n_classes * TREE_SCALE)) ** TREE_POWER)
    return int(min(MAX_TREES, max(1, trees)))


def auto_split_share(n, d, n_classes, epsilon):
    """:data:`SPLIT_SHARE` when the split statistics stand above their noise, else 0.

    A bin of a feature holds about ``n / (B K)`` rows of a class on average,
    and its noise has scale ``2 d / (s epsilon)`` (each row adds to one bin of
    every feature). The share is spent when their ratio reaches
    :data:`SPLIT_SIGNAL`.
    """
    ratio = n * SPLIT_SHARE * epsilon / (2.0 * d * _SPLIT_BINS * n_classes)
    return SPLIT_SHARE if ratio >= SPLIT_SIGNAL else 0.0


def forest_plan(n, d, n_classes, epsilon, *, n_estimators="auto", max_depth="auto",
                partition="auto", split_share="auto"):
    """The plan of one fit: the declared values, and the public rule for each ``"auto"``.

    * ``split_share``: :func:`auto_split_share`.
    * ``n_estimators``: :func:`auto_trees` of the leaf share of epsilon, and
      at most half the :func:`root_cap`.
    * ``max_depth``: the largest depth with ``2^depth <= Q / sqrt(T)`` and
      ``T 2^depth <=`` :func:`root_cap`, at most ``log2(n)`` (no more leaves
      than rows) and within :data:`MAX_CELLS`; 0 (the noisy class
      frequencies alone) when fewer than 2 leaves fit.
    * ``partition``: ``"shared"``, which is never worse than ``"disjoint"``
      for pooled counts under pure DP (``docs/trees.rst``).

    Returns
    -------
    ForestPlan
    """
    n, d, n_classes = int(n), int(d), int(n_classes)
    share = auto_split_share(n, d, n_classes, epsilon) if split_share == "auto" \
        else float(split_share)
    budget = leaf_budget(n, n_classes, (1.0 - share) * epsilon)
    root = root_cap(n, n_classes, (1.0 - share) * epsilon)
    if n_estimators == "auto":
        n_trees = auto_trees(n, n_classes, (1.0 - share) * epsilon)
        n_trees = int(max(1, min(n_trees, root // 2)))
    else:
        n_trees = int(n_estimators)
    if max_depth == "auto":
        leaves = min(budget / math.sqrt(n_trees), root / n_trees)
        depth = int(math.floor(math.log2(leaves))) if leaves >= 2 else 0
        depth = min(depth, int(math.floor(math.log2(max(n, 1)))))
        while depth > 0 and n_trees * 2**depth * n_classes > MAX_CELLS:
            depth -= 1
    else:
        depth = int(max_depth)
    if partition == "auto":
        partition = "shared"
    return ForestPlan(n_trees=n_trees, depth=max(depth, 0), partition=partition,
                      split_share=share)
