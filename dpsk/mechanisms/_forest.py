"""Random decision trees whose structure reads no data, labelled by noisy counts.

The release of :class:`~dpsk.DPDecisionTreeClassifier` and
:class:`~dpsk.DPRandomForestClassifier` (``docs/trees.rst`` derives every step):

1. optionally, a share of epsilon on each feature's class-conditional
   histogram over a declared grid (:func:`split_statistics`), which gives
   every feature a *split map* (where its values lie) and a weight (how well it
   separates the classes);
2. the structure, from public randomness only (:func:`random_structure`):
   complete binary trees of a fixed depth, each node's feature drawn from the
   released weights and its threshold uniform within the node's range in the
   released split map (uniform within the declared bounds when step 1 is
   skipped), as in the random decision trees of Fan, Wang, Yu and Ma (2003)
   and the private forests of Jagannathan, Pillaipakkamnatt and Wright (2012)
   and Fletcher and Islam (2017);
3. every tree's leaf-by-class counts plus exact discrete Laplace noise
   (:func:`~dpsk.mechanisms._counts.noisy_histogram`), the trees sharing
   the rows with the budget split between them, or each on its own part of the
   rows at the whole budget.

The structure depends on the data only through the release of step 1, so the
partition the counts of step 3 are taken on is fixed when they are drawn. The
class probabilities (:func:`forest_proba`) are post-processing of the noisy
counts.
"""

import math

import numpy as np

from ..accounting._events import PureDPEvent
from ._counts import count_variance, noisy_histogram

__all__ = ["SPLIT_BINS", "split_statistics", "random_structure", "node_thresholds",
           "apply_trees", "forest_release", "forest_proba", "UNIFORM_SHARE",
           "FEATURE_SHARE", "PAIR_SIGNAL", "PRIOR_DISPERSION", "level_dispersion"]

#: Bins of the declared range in the split statistics.
SPLIT_BINS = 8

#: Share of the uniform law in each released split map: a threshold lands in
#: every bin with probability at least ``UNIFORM_SHARE / SPLIT_BINS``, whatever
#: the noise did.
UNIFORM_SHARE = 0.25

#: Share of the uniform law in the released feature weights: every feature is
#: drawn with probability at least ``FEATURE_SHARE / d``.
FEATURE_SHARE = 0.5

#: The weight of a feature grows as its separation to this power.
RELEVANCE_POWER = 2.0

#: A pair of sibling nodes enters the estimate of its level's dispersion
#: (:func:`level_dispersion`) when both noisy totals stand this many standard
#: deviations above their noise.
PAIR_SIGNAL = 2.0

#: The dispersion of a level without a pair of siblings above their noise when
#: no level above has one either: 1/16, with which a node of a balanced
#: two-class problem weighs its frequencies like an m-estimate with 8
#: pseudo-rows of its parent's (:func:`level_dispersion`).
PRIOR_DISPERSION = 1.0 / 16.0

# Rows routed at a time in prediction (bounds the (n_trees, rows) index arrays).
_CHUNK = 8192


def split_statistics(X01, codes, n_classes, epsilon, rng, weights=None):
    """Each feature's class-conditional histogram on :data:`SPLIT_BINS` bins: ``epsilon``-DP.

    Every row adds to one cell per feature (its bin, its class), ``d`` cells
    in all, so :func:`~dpsk.mechanisms._counts.noisy_histogram` calibrates
    its noise to an L1 sensitivity of ``2 d``.

    Parameters
    ----------
    X01 : ndarray of shape (n, d)
        Rows mapped onto ``[0, 1]`` by the declared bounds (clipped).
    codes : ndarray of shape (n,)
        Class indices in ``[0, n_classes)``.
    n_classes : int
    epsilon : float
    rng : NoiseSource
    weights : ndarray of shape (n,) or None

    Returns
    -------
    counts : ndarray of shape (d, SPLIT_BINS, n_classes)
        The noisy counts.
    event : PureDPEvent
    """
    n, d = X01.shape
    bins = np.minimum((X01 * SPLIT_BINS).astype(np.int64), SPLIT_BINS - 1)
    # One block of SPLIT_BINS * n_classes cells per feature.
    cells = bins * n_classes + codes[:, None]
    counts, _, event = noisy_histogram(cells, [SPLIT_BINS * n_classes] * d, epsilon, rng,
                                       sample_weight=weights)
    return counts.reshape(d, SPLIT_BINS, n_classes), event


def split_maps(counts):
    """Split maps and feature weights from released split statistics (post-processing).

    The split map of feature ``f`` is a distribution function on ``[0, 1]``,
    piecewise linear on the bins: the noisy counts clipped at 0 and
    normalised, mixed with the uniform law (share :data:`UNIFORM_SHARE`). A
    threshold at position ``u`` of a node's range in the map sits where a
    share ``u`` of the feature's (noisy) mass lies below it.

    The weight of a feature is its separation: the largest distance, over bin
    edges and classes, between one class's distribution function and the
    average over classes, to the power :data:`RELEVANCE_POWER`, normalised,
    then mixed with the uniform law (share :data:`FEATURE_SHARE`).

    Parameters
    ----------
    counts : ndarray of shape (d, B, K)

    Returns
    -------
    cdf : ndarray of shape (d, B + 1)
        Increasing from 0 to 1.
    feature_weights : ndarray of shape (d,)
        Sums to 1.
    """
    d, n_bins, _ = counts.shape
    clipped = np.maximum(counts, 0.0)
    marginal = clipped.sum(axis=2)
    total = marginal.sum(axis=1, keepdims=True)
    marginal = np.where(total > 0, marginal / np.where(total > 0, total, 1.0), 1.0 / n_bins)
    marginal = (1.0 - UNIFORM_SHARE) * marginal + UNIFORM_SHARE / n_bins
    cdf = np.concatenate([np.zeros((d, 1)), np.cumsum(marginal, axis=1)], axis=1)
    cdf[:, -1] = 1.0
    per_class = clipped.sum(axis=1, keepdims=True)
    conditional = np.cumsum(clipped / np.where(per_class > 0, per_class, 1.0), axis=1)
    separation = np.abs(conditional - conditional.mean(axis=2, keepdims=True)).max(axis=(1, 2))
    score = separation**RELEVANCE_POWER
    if score.sum() > 0:
        score = score / score.sum()
    else:
        score = np.full(d, 1.0 / d)
    return cdf, (1.0 - FEATURE_SHARE) * score + FEATURE_SHARE / d


def random_structure(n_trees, depth, feature_weights, rng):
    """Complete binary trees drawn from public randomness: features and split positions.

    Nodes are numbered in heap order (node ``i`` has children ``2 i + 1`` and
    ``2 i + 2``). Each node draws its feature from ``feature_weights`` and its
    position uniformly inside its range on that feature, the range being
    ``[0, 1]`` narrowed by the splits on the same feature among its ancestors
    (Fan et al. 2003 draw within the declared range; narrowing keeps every
    split inside its node's box, as in diffprivlib's trees). Positions are in
    the feature's split map, ``[0, 1]``.

    Parameters
    ----------
    n_trees, depth : int
    feature_weights : ndarray of shape (d,)
        A probability vector (public or released).
    rng : numpy.random.Generator
        Public randomness (:func:`~dpsk.mechanisms._random.public_rng`).

    Returns
    -------
    feature : ndarray of shape (n_trees, 2**depth - 1), int64
    position : ndarray of shape (n_trees, 2**depth - 1), float64 in (0, 1)
    """
    n_nodes = 2**depth - 1
    d = len(feature_weights)
    feature = np.zeros((n_trees, n_nodes), dtype=np.int64)
    position = np.zeros((n_trees, n_nodes))
    for level in range(depth):
        nodes = np.arange(2**level - 1, 2 ** (level + 1) - 1)
        chosen = rng.choice(d, size=(n_trees, nodes.size), p=feature_weights)
        low = np.zeros((n_trees, nodes.size))
        high = np.ones((n_trees, nodes.size))
        child = np.broadcast_to(nodes, (n_trees, nodes.size))
        for _ in range(level):
            parent = (child - 1) // 2
            same = np.take_along_axis(feature, parent, axis=1) == chosen
            cut = np.take_along_axis(position, parent, axis=1)
            right = child % 2 == 0
            low = np.where(same & right, np.maximum(low, cut), low)
            high = np.where(same & ~right, np.minimum(high, cut), high)
            child = parent
        feature[:, nodes] = chosen
        position[:, nodes] = low + (high - low) * rng.random((n_trees, nodes.size))
    return feature, position


def node_thresholds(feature, position, low, high, cdf=None):
    """Thresholds in the units of X: each position mapped through its feature's split map.

    ``low + (high - low) G_f^{-1}(u)`` with ``G_f`` the split map of feature
    ``f`` (the identity without split statistics).
    """
    unit = position.copy()
    if cdf is not None:
        grid = np.linspace(0.0, 1.0, cdf.shape[1])
        for f in np.unique(feature):
            mask = feature == f
            unit[mask] = np.interp(position[mask], cdf[f], grid)
    return low[feature] + (high - low)[feature] * unit


def apply_trees(X, feature, threshold, depth):
    """Leaf index (0 to ``2**depth - 1``) of every row in every tree: shape (n_trees, n).

    A row goes right at a node when its value on the node's feature exceeds
    the threshold.
    """
    n_trees = feature.shape[0]
    node = np.zeros((n_trees, X.shape[0]), dtype=np.int64)
    trees = np.arange(n_trees)[:, None]
    rows = np.arange(X.shape[0])[None, :]
    for _ in range(depth):
        f = feature[trees, node]
        node = 2 * node + 1 + (X[rows, f] > threshold[trees, node])
    return node - (2**depth - 1)


def forest_release(X, codes, n_classes, low, high, epsilon, *, n_trees, depth, partition,
                   split_share, noise_rng, public_rng, weights=None):
    """Random trees with noisy leaf counts: ``epsilon``-DP in all.

    Guarantee: ``epsilon``-differentially private under replace-one
    neighbours, by basic composition of at most two releases of
    :func:`~dpsk.mechanisms._counts.noisy_histogram`:

    * the split statistics (:func:`split_statistics`) at ``split_share *
      epsilon``, when ``split_share > 0``;
    * the leaf-by-class counts at the rest. With ``partition="shared"`` every
      row adds to one leaf of each of the ``n_trees`` trees (L1 sensitivity
      ``2 n_trees``); with ``"disjoint"`` the rows are dealt to the trees by a
      public permutation of their positions, so each row adds to one leaf of
      one tree (sensitivity 2; parallel composition: replacing row ``i``
      changes only the counts of the tree position ``i`` was dealt to).

    The structure (:func:`random_structure`) is drawn from ``public_rng`` and
    the released split statistics, not from the rows, so the leaves are a
    fixed partition when their counts are drawn. Rows are clipped to the
    declared box first (a fixed map of each row).

    Parameters
    ----------
    X : ndarray of shape (n, d)
    codes : ndarray of shape (n,)
        Class indices in ``[0, n_classes)``.
    n_classes : int
    low, high : ndarray of shape (d,)
        Declared bounds, ``low < high``.
    epsilon : float
        The whole budget, > 0.
    n_trees, depth : int
    partition : {"shared", "disjoint"}
    split_share : float
        In ``[0, 1)``.
    noise_rng : NoiseSource
    public_rng : numpy.random.Generator
    weights : ndarray of shape (n,) or None
        Row weights in [0, 1].

    Returns
    -------
    release : dict
        ``feature`` and ``threshold`` (n_trees, 2**depth - 1), ``leaf_counts``
        (n_trees, 2**depth, n_classes), ``leaf_variance`` (the noise variance
        of one leaf count), ``feature_weights`` (d,), ``split_counts`` (d,
        SPLIT_BINS, n_classes) or None.
    event : PureDPEvent
        ``PureDPEvent(epsilon)``.
    """
    if partition not in ("shared", "disjoint"):
        raise ValueError("partition must be 'shared' or 'disjoint'.")
    if not 0.0 <= split_share < 1.0:
        raise ValueError("split_share must be in [0, 1).")
    n, d = X.shape
    X = np.clip(X, low, high)
    split_counts, cdf = None, None
    feature_weights = np.full(d, 1.0 / d)
    if split_share > 0:
        X01 = (X - low) / (high - low)
        split_counts, _ = split_statistics(X01, codes, n_classes, split_share * epsilon,
                                           noise_rng, weights)
        cdf, feature_weights = split_maps(split_counts)
    feature, position = random_structure(n_trees, depth, feature_weights, public_rng)
    threshold = node_thresholds(feature, position, low, high, cdf)
    n_leaves = 2**depth
    leaves = apply_trees(X, feature, threshold, depth)  # (n_trees, n)
    if partition == "shared":
        # One block of n_leaves * n_classes cells per tree; a row adds to each.
        cells = (leaves * n_classes + codes[None, :]).T
        n_bins = [n_leaves * n_classes] * n_trees
    else:
        tree_of_row = public_rng.permutation(n) % n_trees
        cells = (tree_of_row * n_leaves + leaves[tree_of_row, np.arange(n)]) * n_classes + codes
        n_bins = n_trees * n_leaves * n_classes
    counts, noise, _ = noisy_histogram(cells, n_bins, (1.0 - split_share) * epsilon, noise_rng,
                                       sample_weight=weights)
    release = {
        "feature": feature,
        "threshold": threshold,
        "leaf_counts": counts.reshape(n_trees, n_leaves, n_classes),
        "leaf_variance": count_variance(noise, weights is not None),
        "feature_weights": feature_weights,
        "split_counts": split_counts,
    }
    return release, PureDPEvent(float(epsilon))


def level_dispersion(levels, leaf_variance):
    """How far a node's class frequencies stray from its parent's, level by level (free).

    Post-processing of the release: an empirical-Bayes estimate of ``tau_j^2``,
    the expected squared distance between the class frequencies of a depth-``j``
    node and of its parent, from the pairs of siblings of every tree. For
    siblings ``a`` and ``b`` with noisy counts ``c_a, c_b`` and totals ``n_a,
    n_b``, the frequencies ``f = c / n`` differ by ``G = ||f_a - f_b||^2``,
    whose expectation is ``4 tau_j^2`` (two children of a balanced split stray
    from their parent by opposite amounts) plus the noise

    ``s = g (1 / n_a + 1 / n_b) + v_j (K - 2 + K sum p^2) (1 / n_a^2 + 1 / n_b^2)``,

    sampling (``g = 1 - sum p^2``, ``p`` the parent's frequencies) and privacy
    (``v_j = 2^(D - j) v`` the variance of one class count of a depth-``j``
    node; the second factor is the delta method's for normalised counts).
    Over the pairs whose totals both stand :data:`PAIR_SIGNAL` standard
    deviations ``sqrt(K v_j)`` above 0 (below that, clipping and the noisy
    denominators bias ``G``), with weights ``w = 1 / s``,

    ``tau_j^2 = max(0, mean_w(G - s)) / 4``;

    a level without such a pair takes the value of the nearest level above that
    has one (:data:`PRIOR_DISPERSION` if none does). Where the labels carry no
    signal, ``G`` is noise and the ``tau_j^2`` are about 0, so every node
    defers to the root (``docs/trees.rst``, "From counts to probabilities").

    Parameters
    ----------
    levels : list of ndarray
        ``levels[j]`` of shape (n_trees, 2**j, K): every node's noisy counts.
    leaf_variance : float
        The noise variance of one leaf count.

    Returns
    -------
    tau2 : list of float
        ``tau2[j]`` for ``j = 0..depth`` (``tau2[0] = 0``: the root has no parent).
    """
    depth = len(levels) - 1
    tau2, above = [0.0], PRIOR_DISPERSION
    for j in range(1, depth + 1):
        weight, excess = _sibling_evidence(levels[j], 2 ** (depth - j) * leaf_variance)
        if weight.size:
            above = max(0.0, float(np.sum(weight * excess) / np.sum(weight))) / 4.0
        tau2.append(above)
    return tau2


def _sibling_evidence(counts, variance):
    """Weights ``1 / s`` and excesses ``G - s`` of the sibling pairs of one level.

    ``counts`` of shape (n_trees, 2**j, K), ``variance`` the noise variance of
    one of its counts; only pairs whose totals both stand :data:`PAIR_SIGNAL`
    standard deviations above 0 (see :func:`level_dispersion`).
    """
    n_classes = counts.shape[-1]
    left = counts[:, 0::2].reshape(-1, n_classes)
    right = counts[:, 1::2].reshape(-1, n_classes)
    n_left, n_right = left.sum(axis=1), right.sum(axis=1)
    floor = max(PAIR_SIGNAL * math.sqrt(n_classes * variance), 1.0)
    kept = (n_left > floor) & (n_right > floor)
    left, right, n_left, n_right = left[kept], right[kept], n_left[kept], n_right[kept]
    purity = (_normalised(np.maximum(left + right, 0.0)) ** 2).sum(axis=1)
    noise = ((1.0 - purity) * (1.0 / n_left + 1.0 / n_right)
             + variance * (n_classes - 2 + n_classes * purity)
             * (1.0 / n_left**2 + 1.0 / n_right**2))
    gap = ((left / n_left[:, None] - right / n_right[:, None]) ** 2).sum(axis=1)
    return 1.0 / np.maximum(noise, 1e-12), gap - noise


def forest_proba(X, feature, threshold, leaf_counts, leaf_variance):
    """Class probabilities from the noisy counts: pooled over trees, shrunk up the tree.

    Post-processing of the release. For a row ``x`` and each depth ``j``, the
    counts of the depth-``j`` ancestors of ``x``'s leaves are summed over the
    trees: ``A_j`` (a vector over classes), whose noise has variance ``W_j =
    n_trees 2^(depth - j) v`` per class (``v`` the variance of one leaf
    count: an internal node's count is the sum of its leaves'). From the root
    down, ``p_0`` is ``A_0`` clipped at 0 and normalised, and

    ``p_j = lambda_j q_j + (1 - lambda_j) p_(j-1)``,
    ``lambda_j = tau_j^2 N_j^2 / (tau_j^2 N_j^2 + K W_j + g_j T N_j)``,

    with ``q_j`` the clipped, normalised ``A_j``, ``N_j = max(sum A_j, 0)``
    its noisy total, ``T`` the number of trees, ``g_j = 1 - sum p_(j-1)^2``
    and ``tau_j^2`` the level's dispersion estimated from the release
    (:func:`level_dispersion`): the Bayes weight of a node's frequencies, which
    stray from the parent's by about ``tau_j^2``, against their privacy noise
    (``K W_j / N_j^2``) and their sampling noise (``g_j`` over the ``N_j / T``
    rows they stand for). A node lost in noise or holding a few rows, or a
    level whose nodes barely differ from their parents, defers to the parent,
    and ultimately to the root, whose pooled counts estimate the class
    frequencies. The result is ``p_depth``; rows sum to 1.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Clipped to the declared bounds (clipping does not change the route of a
        row, as every threshold lies within the bounds).
    feature, threshold : ndarray of shape (n_trees, 2**depth - 1)
    leaf_counts : ndarray of shape (n_trees, 2**depth, K)
    leaf_variance : float

    Returns
    -------
    proba : ndarray of shape (n, K)
    """
    n_trees, n_leaves, n_classes = leaf_counts.shape
    depth = n_leaves.bit_length() - 1
    # Counts of every node, level by level: level j has 2**j nodes per tree.
    levels = [leaf_counts.reshape(n_trees, 2**j, 2 ** (depth - j), n_classes).sum(axis=2)
              for j in range(depth + 1)]
    tau2 = level_dispersion(levels, leaf_variance)
    out = np.empty((X.shape[0], n_classes))
    trees = np.arange(n_trees)[:, None]
    for start in range(0, X.shape[0], _CHUNK):
        rows = X[start:start + _CHUNK]
        leaves = apply_trees(rows, feature, threshold, depth)
        proba = None
        for j in range(depth + 1):
            pooled = levels[j][trees, leaves >> (depth - j)].sum(axis=0)  # (rows, K)
            share = _normalised(np.maximum(pooled, 0.0))
            if proba is None:
                proba = share
                continue
            total = np.maximum(pooled.sum(axis=1, keepdims=True), 0.0)
            noise = n_classes * n_trees * 2 ** (depth - j) * leaf_variance
            sampling = (1.0 - (proba**2).sum(axis=1, keepdims=True)) * n_trees * total
            signal = tau2[j] * total**2
            spread = signal + noise + sampling
            weight = np.where(spread > 0, signal / np.where(spread > 0, spread, 1.0), 0.0)
            proba = weight * share + (1.0 - weight) * proba
        out[start:start + _CHUNK] = proba
    return out


def _normalised(counts):
    """Rows divided by their sums; uniform where a row sums to 0."""
    total = counts.sum(axis=1, keepdims=True)
    uniform = np.full_like(counts, 1.0 / counts.shape[1])
    return np.where(total > 0, counts / np.where(total > 0, total, 1.0), uniform)
