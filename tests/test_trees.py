"""The private trees and forest: their mechanisms, laws, sensitivities, rule and shells.

* the vector discrete Laplace sampler (``dpsk/mechanisms/_discrete.py``):
  chi-square law tests with power against noise 10% too small, its exact
  building blocks, and the paths for large scales and large draws;
* the histogram mechanism the leaves use is naive Bayes'
  (``dpsk/mechanisms/_counts.py``): its law, sensitivity and conditions are
  tested in ``tests/test_count_mechanisms.py``;
* the forest release (``dpsk/mechanisms/_forest.py``): the structure reads no
  data, the leaf counts' sensitivity with shared and disjoint rows, the split
  statistics', the law of the leaf noise seen through a fitted estimator (and a
  mutation that shrinks it is caught);
* the public rule (``dpsk/mechanisms/_forest_rule.py``);
* the estimators: refusals for free, one ledger event, predictions, the
  fallback to the majority class, scikit-learn's checks.

Every statistical test uses a fixed seed and significance 1e-3.
"""

import math
import pickle
import warnings
from fractions import Fraction

import numpy as np
import pytest
from _sklearn_checks import WEIGHT_XFAILS, parametrize_with_checks
from scipy import stats
from test_discrete_samplers import _laplace_pvalue

import dpsk.mechanisms._counts as counts_module
from dpsk import (
    BudgetAccountant,
    DPDecisionTreeClassifier,
    DPRandomForestClassifier,
    PrivateFitError,
    PureDPEvent,
)
from dpsk.mechanisms._counts import laplace_noise
from dpsk.mechanisms._discrete import (
    _bernoulli_exp_vector,
    _uniform_below,
    discrete_laplace_vector,
)
from dpsk.mechanisms._forest import (
    PAIR_SIGNAL,
    PRIOR_DISPERSION,
    SPLIT_BINS,
    apply_trees,
    forest_proba,
    forest_release,
    level_dispersion,
    random_structure,
    split_maps,
)
from dpsk.mechanisms._forest_rule import (
    MAX_CELLS,
    MAX_TREES,
    ROOT_SIGNAL,
    auto_trees,
    forest_plan,
    leaf_budget,
    root_cap,
)
from dpsk.mechanisms._random import NoiseSource, public_rng

P_THRESHOLD = 1e-3


# -- the vector sampler -------------------------------------------------------------------


@pytest.mark.parametrize("scale", [0.5, 1 / 0.3, 40.0, Fraction(2) / Fraction(0.7)], ids=str)
def test_discrete_laplace_vector_frequencies_and_power(scale):
    draws = discrete_laplace_vector(scale, 20000, NoiseSource.seeded(11))
    assert draws.dtype == np.int64 and draws.shape == (20000,)
    assert _laplace_pvalue(draws, scale) > P_THRESHOLD
    assert _laplace_pvalue(draws, float(scale) * 0.9) < P_THRESHOLD  # noise 10% too small


def test_discrete_laplace_vector_tiny_and_huge_scales():
    rng = NoiseSource.seeded(12)
    assert not discrete_laplace_vector(1e-3, 500, rng).any()  # P[Z != 0] ~ 2 e^-1000
    # A scale whose terms exceed the numpy path's limit takes the scalar sampler.
    scale = Fraction(10**30 + 1, 10**29)
    draws = discrete_laplace_vector(scale, 3000, rng)
    assert draws.dtype == np.int64
    assert _laplace_pvalue(draws, scale) > P_THRESHOLD
    assert discrete_laplace_vector(2.0, 0, rng).shape == (0,)


def test_discrete_laplace_vector_refuses_bad_input():
    with pytest.raises(TypeError):
        discrete_laplace_vector(1.0, 3, np.random.default_rng(0))
    for scale in (0, -1.0, float("nan")):
        with pytest.raises(ValueError):
            discrete_laplace_vector(scale, 3, NoiseSource.seeded(0))
    with pytest.raises(ValueError):
        discrete_laplace_vector(1.0, -1, NoiseSource.seeded(0))


def test_large_geometric_values_take_exact_integers():
    # With t close to 2^61, U + t V leaves 64 bits once V >= 4 (about 2% of the
    # rounds): those entries are finished in Python integers, with the same law.
    scale = Fraction((1 << 61) - 1, (1 << 61) // 3)
    draws = discrete_laplace_vector(scale, 6000, NoiseSource.seeded(13))
    assert draws.dtype == np.int64
    assert np.abs(draws).max() >= 12  # some came from V >= 4
    assert _laplace_pvalue(draws, scale) > P_THRESHOLD


def test_uniform_below_is_uniform():
    rng = NoiseSource.seeded(14)
    for m in (1, 2, 3, 7, (1 << 33) + 5):
        draws = _uniform_below(m, 30000, rng)
        assert draws.dtype == np.uint64 and draws.max(initial=0) < m
        if m == 1:
            assert not draws.any()
            continue
        bins = min(m, 8)
        cells = (draws.astype(object) * bins // m).astype(np.int64)
        expected = np.array([len(range(-(-i * m // bins), -(-(i + 1) * m // bins)))
                             for i in range(bins)]) / m * draws.size
        observed = np.bincount(cells, minlength=bins)
        assert stats.chisquare(observed, expected).pvalue > P_THRESHOLD


def test_bernoulli_exp_vector_frequencies_and_power():
    rng = NoiseSource.seeded(15)
    b = 7
    a = np.repeat(np.arange(b + 1, dtype=np.uint64), 6000)
    hits = _bernoulli_exp_vector(a, b, rng).reshape(b + 1, -1).sum(axis=1)
    for gamma_num, count in enumerate(hits):
        p = math.exp(-gamma_num / b)
        assert stats.binomtest(int(count), 6000, p).pvalue > P_THRESHOLD / (b + 1)
    # Power: exp(-1) against exp(-0.9).
    assert stats.binomtest(int(hits[-1]), 6000, math.exp(-0.9)).pvalue < P_THRESHOLD


def _noise_free(monkeypatch):
    """Replace the count noise by zeros: the true counts come out."""
    monkeypatch.setattr(counts_module, "discrete_laplace_vector",
                        lambda scale, size, rng: np.zeros(size, dtype=np.int64))


# -- the forest release -------------------------------------------------------------------


def _data(n=400, d=3, n_classes=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.random((n, d))
    y = (X[:, 0] + 0.3 * rng.random(n) > 0.6).astype(int) % n_classes
    return X, y


def _release(X, y, monkeypatch=None, **params):
    base = dict(n_trees=4, depth=3, partition="shared", split_share=0.0)
    base.update(params)
    d = X.shape[1]
    return forest_release(X, y, 2, np.zeros(d), np.ones(d), 1.0,
                          noise_rng=NoiseSource.seeded(1), public_rng=public_rng(5), **base)


@pytest.mark.parametrize("partition", ["shared", "disjoint"])
def test_structure_reads_no_data_and_counts_move_little(partition, monkeypatch):
    _noise_free(monkeypatch)
    X, y = _data()
    for row, change in ((0, "label"), (7, "far"), (100, "move")):
        X2, y2 = X.copy(), y.copy()
        if change == "label":
            y2[row] = 1 - y2[row]
        elif change == "far":
            X2[row] = 1e6  # clipped to the bounds
        else:
            X2[row] = 1.0 - X2[row]
        a, event = _release(X, y, partition=partition)
        b, _ = _release(X2, y2, partition=partition)
        np.testing.assert_array_equal(a["feature"], b["feature"])
        np.testing.assert_array_equal(a["threshold"], b["threshold"])
        moved = np.abs(a["leaf_counts"] - b["leaf_counts"]).sum()
        assert moved <= (2 * 4 if partition == "shared" else 2)
        assert event == PureDPEvent(1.0)
    # Every row counted once per tree (shared) or once in all (disjoint).
    total = a["leaf_counts"].sum()
    assert total == (4 * len(y) if partition == "shared" else len(y))


def test_split_statistics_sensitivity(monkeypatch):
    _noise_free(monkeypatch)
    X, y = _data(d=5)
    X2, y2 = X.copy(), y.copy()
    X2[3], y2[3] = 1.0 - X2[3], 1 - y2[3]
    a, _ = _release(X, y, split_share=0.3)
    b, _ = _release(X2, y2, split_share=0.3)
    assert a["split_counts"].shape == (5, SPLIT_BINS, 2)
    assert a["split_counts"].sum() == 5 * len(y)  # one cell per feature per row
    assert np.abs(a["split_counts"] - b["split_counts"]).sum() <= 2 * 5


def test_split_maps_and_structure_follow_the_released_statistics():
    counts = np.zeros((2, SPLIT_BINS, 2))
    counts[0, 2, 0] = counts[0, 2, 1] = 1000.0  # feature 0 sits in bin 2, no separation
    counts[1, 1, 0] = counts[1, 6, 1] = 1000.0  # feature 1 separates the classes
    cdf, weights = split_maps(counts)
    assert np.all(np.diff(cdf, axis=1) > 0) and np.allclose(cdf[:, [0, -1]], [0, 1])
    assert weights[1] > weights[0] and weights.sum() == pytest.approx(1.0)
    # Most of feature 0's map lies in its bin.
    assert cdf[0, 3] - cdf[0, 2] > 0.7
    feature, position = random_structure(50, 4, weights, np.random.default_rng(0))
    assert np.mean(feature == 1) > 0.6
    assert np.all((position > 0) & (position < 1))


def _leaf_noise():
    """A 5-tree forest (depth 9, epsilon 1.5) and its leaf noise, from the published structure."""
    X, y = _data(n=300, d=2)
    forest = DPRandomForestClassifier(epsilon=1.5, n_estimators=5, max_depth=9,
                                      bounds=(0, 1), classes=[0, 1], split_share=0,
                                      random_state=3, accountant=BudgetAccountant()).fit(X, y)
    leaves = apply_trees(X, forest.tree_feature_, forest.tree_threshold_, 9)
    true = np.zeros_like(forest.leaf_counts_)
    for t in range(5):
        np.add.at(true[t], (leaves[t], y), 1)
    return forest, (forest.leaf_counts_ - true).ravel()


def test_leaf_noise_law_through_the_estimator():
    # The noise of every released leaf count, seen from outside: the true counts are
    # recomputed from the published structure, and the difference must follow the
    # discrete Laplace law of scale 2 T / epsilon (sensitivity 2 T, shared rows).
    forest, noise = _leaf_noise()
    scale = 2 * 5 / 1.5
    assert _laplace_pvalue(noise, scale) > P_THRESHOLD
    assert _laplace_pvalue(noise, scale * 0.9) < P_THRESHOLD
    assert forest.leaf_count_variance_ == pytest.approx(laplace_noise(10, 1.5).variance)


def test_mutation_of_the_sensitivity_is_caught(monkeypatch):
    # A release that calibrated for one tree's sensitivity instead of T trees' would
    # draw noise 5 times too small; the law test above rejects it.
    real = counts_module.laplace_noise
    monkeypatch.setattr(counts_module, "laplace_noise",
                        lambda sensitivity, epsilon: real(2, epsilon))
    _, noise = _leaf_noise()
    assert _laplace_pvalue(noise, 2 * 5 / 1.5) < P_THRESHOLD


def test_forest_proba_shrinks_to_the_root_under_noise():
    rng = np.random.default_rng(0)
    feature, position = random_structure(3, 4, np.full(2, 0.5), rng)
    X = rng.random((50, 2))
    counts = np.zeros((3, 16, 2))
    counts[:, :, 0] = 30.0  # class 0 everywhere: 1440 rows pooled at the root
    counts[0, 5, 1] = 25.0  # one leaf that would favour class 1 on its own
    proba = forest_proba(X, feature, position, counts, leaf_variance=1e6)
    assert np.allclose(proba.sum(axis=1), 1.0)
    assert np.all(proba.argmax(axis=1) == 0)
    # Without noise the counts speak for themselves.
    clean = forest_proba(X, feature, position, counts, leaf_variance=0.0)
    assert np.allclose(clean.sum(axis=1), 1.0)


def _levels(leaf_counts):
    n_trees, n_leaves, k = leaf_counts.shape
    depth = n_leaves.bit_length() - 1
    return [leaf_counts.reshape(n_trees, 2**j, 2 ** (depth - j), k).sum(axis=2)
            for j in range(depth + 1)]


def test_level_dispersion_reads_how_far_siblings_stray():
    # Children that mirror their parent's frequencies (up to the sampling noise the
    # estimate expects) give no dispersion; children that split the classes give
    # about (distance / 2)^2; a level with no pair above its noise takes the
    # level above's.
    rng = np.random.default_rng(3)
    same = rng.multinomial(200, [0.7, 0.3], size=(1, 64)).astype(float)
    tau2 = level_dispersion(_levels(same), leaf_variance=0.0)
    assert tau2[0] == 0.0 and max(tau2[1:]) < 0.002
    apart = np.zeros((1, 4, 2))
    apart[0, 0::2] = [180.0, 20.0]  # frequencies 0.9 / 0.1
    apart[0, 1::2] = [20.0, 180.0]  # and 0.1 / 0.9: squared distance 1.28
    tau2 = level_dispersion(_levels(apart), leaf_variance=0.0)
    assert tau2[1] == 0.0  # the two halves are alike
    assert 0.3 < tau2[2] < 0.32  # 1.28 / 4, less the expected sampling noise
    # A noise variance that buries every total: no pair enters at any level, and
    # every level takes the prior.
    buried = level_dispersion(_levels(apart), leaf_variance=(400.0 / PAIR_SIGNAL) ** 2)
    assert buried[1:] == [PRIOR_DISPERSION] * 2
    # One that buries the leaves' totals only: the leaves take the level above's.
    apart[0, 0::2], apart[0, 1::2] = [800.0, 200.0], [200.0, 800.0]
    tau2 = level_dispersion(_levels(apart), leaf_variance=400.0**2)
    assert tau2[1] == tau2[2] == 0.0


def test_forest_proba_defers_to_the_parent_where_siblings_agree():
    # No privacy noise. Every pair of siblings but one holds the root's
    # frequencies, so the level's dispersion is small and one leaf of a few rows
    # that favour class 1 cannot overturn the parent; where the leaves differ
    # throughout, their frequencies speak for themselves.
    rng = np.random.default_rng(0)
    feature, position = random_structure(1, 5, np.full(2, 0.5), rng)
    X = rng.random((400, 2))
    counts = np.zeros((1, 32, 2))
    counts[0, :, 0], counts[0, :, 1] = 80.0, 20.0
    counts[0, 7] = [1.0, 4.0]
    leaves = apply_trees(X, feature, position, 5)[0]
    proba = forest_proba(X, feature, position, counts, leaf_variance=0.0)
    assert np.allclose(proba.sum(axis=1), 1.0)
    assert np.all(proba.argmax(axis=1) == 0) and np.any(leaves == 7)
    counts[0, 0::2] = [10.0, 90.0]  # every left leaf now favours class 1
    proba = forest_proba(X, feature, position, counts, leaf_variance=0.0)
    assert np.all(proba.argmax(axis=1)[leaves % 2 == 0] == 1)
    assert np.all(proba.argmax(axis=1)[(leaves % 2 == 1) & (leaves != 7)] == 0)


@pytest.mark.parametrize("cls, share", [(DPDecisionTreeClassifier, 0.99),
                                        (DPRandomForestClassifier, 0.95)])
def test_labels_without_signal_give_the_majority_class(cls, share):
    # Labels drawn independently of the rows (two thirds class 1): the deep
    # leaves hold sampling and privacy noise only, and (nearly) every row gets
    # the majority class at every epsilon of the benchmark (the floor of issue
    # 38). The fixed shrinkage before gave 8 to 14% of minority predictions here
    # for the tree, 4 to 16% for the forest; the forest's deepest level can still
    # read a little spread from the few leaf pairs whose noise was large
    # (docs/trees.rst, "From counts to probabilities").
    rng = np.random.default_rng(5)
    X = rng.random((4000, 10))
    y = (rng.random(4000) < 2 / 3).astype(int)
    for eps in (0.1, 1.0, 2.0):
        model = cls(epsilon=eps, bounds=(0, 1), classes=[0, 1], random_state=1,
                    accountant=BudgetAccountant()).fit(X, y)
        assert model.max_depth_ >= 5
        assert np.mean(model.predict(X) == 1) > share


# -- the public rule ------------------------------------------------------------------------


def test_forest_plan_rule():
    tiny = forest_plan(50, 5, 2, 0.01)
    assert (tiny.n_trees, tiny.depth, tiny.split_share) == (1, 0, 0.0)
    big = forest_plan(30000, 10, 2, 2.0)
    assert (big.n_trees, big.depth, big.partition, big.split_share) == (14, 14, "shared", 0.2)
    assert big.n_trees * 2**big.depth * 2 <= MAX_CELLS
    assert forest_plan(30000, 10, 2, 2.0) == big  # a function of public quantities
    for n in (10, 300, 3000, 30000, 300000):
        for eps in (0.01, 0.1, 1.0, 10.0):
            plan = forest_plan(n, 8, 3, eps)
            assert 1 <= plan.n_trees <= MAX_TREES and 0 <= plan.depth <= math.log2(n)
            assert plan.n_trees * 2**plan.depth * 3 <= MAX_CELLS
    declared = forest_plan(1000, 4, 2, 1.0, n_estimators=7, max_depth=3, split_share=0.1,
                           partition="disjoint")
    assert (declared.n_trees, declared.depth, declared.split_share, declared.partition) == \
        (7, 3, 0.1, "disjoint")
    # More rows or more epsilon never shrink the forest.
    sizes = [forest_plan(n, 8, 2, 1.0) for n in (100, 1000, 10000)]
    assert [p.n_trees for p in sizes] == sorted(p.n_trees for p in sizes)


def test_tree_rule_monotone_and_limits():
    # One tree until n epsilon / K reaches TREE_SCALE 1.5^3 = 27, MAX_TREES only
    # past TREE_SCALE 99.5^3 (about 7.9 million).
    assert auto_trees(26, 1, 1.0) == 1 and auto_trees(28, 1, 1.0) == 2
    assert auto_trees(7_800_000, 1, 1.0) == MAX_TREES - 1
    assert auto_trees(8_000_000, 1, 1.0) == auto_trees(10**12, 2, 1.0) == MAX_TREES
    assert auto_trees(1, 2, 1e-9) == 1
    grid = [10, 100, 1000, 10**4, 10**5, 10**6]
    for eps in (0.01, 0.1, 1.0, 10.0):
        trees = [auto_trees(n, 2, eps) for n in grid]
        assert trees == sorted(trees)  # more rows never fewer trees
    for n in grid:
        trees = [auto_trees(n, 2, eps) for eps in (0.01, 0.1, 1.0, 10.0)]
        assert trees == sorted(trees)  # more epsilon never fewer trees
        trees = [auto_trees(n, k, 1.0) for k in (2, 3, 5, 10)]
        assert trees == sorted(trees, reverse=True)  # more classes never more trees
    # The plan keeps the pooled root ROOT_SIGNAL deviations above its noise and the
    # leaves within the leaf budget, for any public (n, K, epsilon).
    for n in grid:
        for k in (2, 5):
            for eps in (0.05, 0.5, 5.0):
                plan = forest_plan(n, 6, k, eps)
                leaf_eps = (1.0 - plan.split_share) * eps
                if plan.depth:
                    assert plan.n_trees * 2**plan.depth <= root_cap(n, k, leaf_eps)
                    assert 2**plan.depth * math.sqrt(plan.n_trees) <= leaf_budget(n, k, leaf_eps)
                    root_snr = (n * leaf_eps / k) / math.sqrt(8 * plan.n_trees * 2**plan.depth)
                    assert root_snr >= ROOT_SIGNAL


# -- the estimators -----------------------------------------------------------------------


@pytest.mark.parametrize("cls", [DPDecisionTreeClassifier, DPRandomForestClassifier])
def test_refusals_are_free_and_quote_nothing(cls):
    X, y = _data()
    ledger = BudgetAccountant()

    def refused(model, *args, exc=ValueError, **kwargs):
        with pytest.raises(exc) as info:
            model.fit(*args, **kwargs)
        assert ledger.spends == []
        return str(info.value)

    text = refused(cls(classes=[0, 1], accountant=ledger), X, y)
    assert "bounds" in text and "never reads" in text
    X_nan = X.copy()
    X_nan[17, 1] = np.nan
    refused(cls(bounds=(0, 1), classes=[0, 1], accountant=ledger), X_nan, y)
    y_bad = y.copy()
    y_bad[3] = 9
    assert "9" not in refused(cls(bounds=(0, 1), classes=[0, 1], accountant=ledger), X, y_bad)
    refused(cls(bounds=(0, 1), classes=[0, 1], accountant=ledger), X, y,
            sample_weight=np.full(len(y), 1.5))
    refused(cls(bounds=(0, 1), classes=[0, 1], class_weight="balanced", accountant=ledger),
            X, y)
    # class_weight without declared classes: refused whatever y holds (its keys
    # being labels of y or not would be a noise-free fact about the data)
    for keys in ({0: 0.5}, {7: 0.5}):
        text = refused(cls(bounds=(0, 1), class_weight=keys, accountant=ledger), X, y)
        assert "declared classes" in text and "7" not in text
    for bounds in ((1, 0), (0, [1, 1]), (0, np.inf), "0-1", (0, 1, 2)):
        refused(cls(bounds=bounds, classes=[0, 1], accountant=ledger), X, y)


@pytest.mark.parametrize("cls", [DPDecisionTreeClassifier, DPRandomForestClassifier])
def test_one_event_per_fit_and_failures_charged(cls, monkeypatch):
    X, y = _data()
    ledger = BudgetAccountant()
    model = cls(epsilon=0.7, bounds=(0, 1), classes=[0, 1], accountant=ledger).fit(X, y)
    assert ledger.spends == [(0.7, 0.0)]
    assert model.privacy_event_ == PureDPEvent(0.7) and model.privacy_spent_ == (0.7, 0.0)
    import dpsk.tree._classes as shell

    def broken(*args, **kwargs):
        raise RuntimeError("a value from the data: 0.123")

    monkeypatch.setattr(shell, "forest_release", broken)
    with pytest.raises(PrivateFitError) as info:
        cls(epsilon=0.3, bounds=(0, 1), classes=[0, 1], accountant=ledger).fit(X, y)
    assert "0.123" not in str(info.value) and info.value.__cause__ is None
    assert ledger.spends == [(0.7, 0.0), (0.3, 0.0)]


def test_forest_learns_and_falls_back_to_the_majority():
    rng = np.random.default_rng(0)
    X = rng.random((6000, 5)) * 0.2 + 0.4  # the data fill a fifth of the declared range
    y = (X[:, 0] > 0.5).astype(int)
    y[rng.random(6000) < 0.1] = 2  # a minority class
    forest = DPRandomForestClassifier(epsilon=2.0, bounds=(0, 1), classes=[0, 1, 2],
                                      random_state=0, accountant=BudgetAccountant())
    assert forest.fit(X, y).score(X, y) > 0.8
    assert forest.split_share_ > 0
    # At a tiny epsilon the leaves hold noise: the forest predicts the majority class.
    y_major = np.where(rng.random(6000) < 0.8, 1, 0)
    weak = DPRandomForestClassifier(epsilon=0.05, bounds=(0, 1), classes=[0, 1],
                                    random_state=0, accountant=BudgetAccountant())
    assert np.all(weak.fit(X, y_major).predict(X) == 1)


def test_disjoint_partition_and_weights_run():
    X, y = _data(n=2000)
    forest = DPRandomForestClassifier(epsilon=2.0, partition="disjoint", bounds=(0, 1),
                                      classes=[0, 1], random_state=0,
                                      accountant=BudgetAccountant())
    assert forest.fit(X, y).partition_ == "disjoint" and forest.score(X, y) > 0.7
    weights = np.where(y == 1, 1.0, 0.5)
    weighted = DPRandomForestClassifier(epsilon=2.0, bounds=(0, 1), classes=[0, 1],
                                        class_weight={0: 0.5}, random_state=0,
                                        accountant=BudgetAccountant())
    by_sample = DPRandomForestClassifier(epsilon=2.0, bounds=(0, 1), classes=[0, 1],
                                         random_state=0, accountant=BudgetAccountant())
    np.testing.assert_array_equal(weighted.fit(X, y).leaf_counts_,
                                  by_sample.fit(X, y, sample_weight=weights).leaf_counts_)
    # All-one weights are the unweighted release, bit for bit.
    plain = DPRandomForestClassifier(epsilon=2.0, bounds=(0, 1), classes=[0, 1],
                                     random_state=0, accountant=BudgetAccountant()).fit(X, y)
    ones = DPRandomForestClassifier(epsilon=2.0, bounds=(0, 1), classes=[0, 1],
                                    random_state=0, accountant=BudgetAccountant())
    np.testing.assert_array_equal(ones.fit(X, y, sample_weight=1.0).leaf_counts_,
                                  plain.leaf_counts_)


def test_predictions_and_pickle():
    X, y = _data(n=1000)
    forest = DPRandomForestClassifier(epsilon=1.0, bounds=(0, 1), classes=[0, 1],
                                      random_state=0, accountant=BudgetAccountant()).fit(X, y)
    proba = forest.predict_proba(X)
    assert proba.shape == (1000, 2) and np.allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_array_equal(forest.predict(X), forest.classes_[proba.argmax(axis=1)])
    np.testing.assert_allclose(np.exp(forest.predict_log_proba(X)), proba)
    # Values outside the bounds are clipped, as in fit.
    np.testing.assert_array_equal(forest.predict(X + 100.0), forest.predict(np.ones_like(X)))
    restored = pickle.loads(pickle.dumps(forest))
    np.testing.assert_array_equal(restored.predict_proba(X), proba)
    tree = DPDecisionTreeClassifier(epsilon=1.0, bounds=(0, 1), classes=[0, 1], random_state=0,
                                    accountant=BudgetAccountant()).fit(X, y)
    assert tree.n_estimators_ == 1 and tree.tree_feature_.shape[0] == 1


def test_seeded_fits_reproduce_and_unseeded_do_not():
    X, y = _data()

    def fit(random_state):
        return DPRandomForestClassifier(bounds=(0, 1), classes=[0, 1],
                                        random_state=random_state,
                                        accountant=BudgetAccountant()).fit(X, y)

    np.testing.assert_array_equal(fit(4).leaf_counts_, fit(4).leaf_counts_)
    assert not np.array_equal(fit(None).tree_threshold_, fit(None).tree_threshold_)


@parametrize_with_checks([
    DPDecisionTreeClassifier(bounds=(-10, 10), random_state=0),
    DPRandomForestClassifier(bounds=(-10, 10), random_state=0),
], expected_failed_checks=lambda estimator: WEIGHT_XFAILS)
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        check(estimator)
