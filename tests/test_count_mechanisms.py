"""The exact count releases (dpsk.mechanisms._counts, _moments): noise laws with power
against 10% too little noise, mutation tests, sensitivities on neighbouring data sets
(bounds attained), the zCDP conversion, the budget split's derivation, and the wiring
from the estimators to the mechanisms.

The noise is recovered exactly: the releases are integers (divided by powers of two,
which floats hold exactly), so ``released * unit - exact statistic`` is the draw.
Statistical tests use fixed seeds and a threshold of 1e-3; each is shown to reject the
law of noise 10% too small on the same draws (the power check)."""

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats
from scipy.special import ndtr

import dpsk.mechanisms._counts as counts_module
import dpsk.mechanisms._moments as moments_module
import dpsk.naive_bayes._categorical as categorical_module
import dpsk.naive_bayes._gaussian as gaussian_module
from dpsk import BudgetAccountant, DPCategoricalNB, DPGaussianNB, PureDPEvent
from dpsk.accounting._renyi import ORDERS, rdp_to_dp
from dpsk.mechanisms._counts import (
    SCALE_UNITS,
    WEIGHT_GRID,
    CountNoise,
    add_count_noise,
    count_variance,
    grid_values,
    grid_weights,
    laplace_noise,
    noisy_histogram,
    zcdp_rho,
)
from dpsk.mechanisms._moments import (
    RESOLUTION,
    _integer_moments,
    class_moments,
    moments_split,
)
from dpsk.mechanisms._random import NoiseSource

P_THRESHOLD = 1e-3
SMALLER = 0.9
G = RESOLUTION


# -- the laws ---------------------------------------------------------------------------


def _cdf(law, z):
    """``P[Z <= z]`` for integer ``z`` (array), exactly for Laplace, to 1e-12 for Gaussian."""
    z = np.asarray(z, dtype=float)
    if law.kind == "laplace":
        r = math.exp(-1.0 / float(law.parameter))
        with np.errstate(over="ignore"):
            return np.where(z >= 0, 1.0 - r ** (z + 1) / (1 + r), r ** (-z) / (1 + r))
    sigma2 = float(law.parameter)
    if sigma2 > 2500:  # the discrete law's cell masses equal the normal's to ~exp(-2 pi^2 s^2)
        return ndtr((z + 0.5) / math.sqrt(sigma2))
    support = np.arange(-int(14 * math.sqrt(sigma2)) - 2, int(14 * math.sqrt(sigma2)) + 3)
    pmf = np.exp(-support.astype(float) ** 2 / (2 * sigma2))
    cdf = np.cumsum(pmf / pmf.sum())
    return np.interp(z, support, cdf)


def _pvalue(draws, law, bins=20):
    """Chi-square of ``draws`` in equal-probability bins of ``law``."""
    draws = np.asarray(draws, dtype=float)
    grid = np.arange(-50_000, 50_001) * max(1.0, _scale(law) / 5_000)
    cdf = _cdf(law, np.floor(grid))
    edges = np.unique(np.floor(np.interp(np.linspace(0, 1, bins + 1)[1:-1], cdf, grid)))
    probabilities = np.diff(np.concatenate([[0.0], _cdf(law, edges), [1.0]]))
    observed = np.bincount(np.searchsorted(edges, draws, side="left"),
                           minlength=edges.size + 1)
    return stats.chisquare(observed, probabilities * draws.size).pvalue


def _scale(law):
    return float(law.parameter) if law.kind == "laplace" else math.sqrt(float(law.parameter))


def _smaller(law):
    factor = SMALLER if law.kind == "laplace" else SMALLER**2
    return CountNoise(law.kind, law.parameter * type(law.parameter)(factor))


def _check_law(draws, law):
    assert _pvalue(draws, law) > P_THRESHOLD, "calibrated law rejected"
    assert _pvalue(draws, _smaller(law)) < P_THRESHOLD, "no power against 10% less noise"


# The laws written out independently of the library (the module docstrings' tables).
def _expected_laws(d, epsilon, delta, split, W=1):
    if delta == 0:
        return [("laplace", l1 / (share * epsilon)) for l1, share in
                zip((2 * W, 2 * d * G * W, d * G * G * W), split)]
    rho = zcdp_rho(epsilon, delta)
    return [("gaussian", l2sq / (2 * share * rho)) for l2sq, share in
            zip((2 * W * W, 4 * d * G * G * W * W, d * G**4 * W * W), split)]


def _moments_noise(X, y, K, epsilon, delta, split, seed, weights=None):
    """Run class_moments and recover each block's noise (integers), plus its laws."""
    lower, upper = np.zeros(X.shape[1]), np.ones(X.shape[1])
    moments, _ = class_moments(X, y, K, lower, upper, epsilon, NoiseSource.seeded(seed),
                               delta=delta, split=split, sample_weight=weights)
    W = 1 if weights is None else WEIGHT_GRID
    exact = _integer_moments(grid_values(X, lower, upper, G), y, K,
                             None if weights is None else grid_weights(weights))
    released = (moments.counts * W, moments.sums * W * G, moments.squares * W * G * G)
    noise = [np.rint(r).astype(np.int64) - e for r, e in zip(released, exact)]
    for r in released:  # exact integers: nothing was rounded on the way out
        np.testing.assert_array_equal(r, np.rint(r))
    return [n.ravel() for n in noise]


# The discrete Gaussian cases draw four times slower: in the slow run.
@pytest.mark.parametrize("delta", [0.0, pytest.param(1e-6, marks=pytest.mark.slow)])
def test_class_sums_and_squares_have_the_calibrated_laws(delta):
    rng = np.random.default_rng(3)
    X, y = rng.random((10, 6000)), np.zeros(10, dtype=np.int64)
    split = (0.1, 0.6, 0.3)
    noise = _moments_noise(X, y, 1, 1.0, delta, split, seed=11)
    laws = [CountNoise(kind, value) for kind, value in _expected_laws(6000, 1.0, delta, split)]
    _check_law(noise[1], laws[1])  # 6000 class sums
    _check_law(noise[2], laws[2])  # 6000 square sums


@pytest.mark.parametrize("delta", [0.0, pytest.param(1e-6, marks=pytest.mark.slow)])
def test_class_counts_have_the_calibrated_law(delta):
    rng = np.random.default_rng(4)
    K = 5000
    X, y = rng.random((200, 1)), rng.integers(0, K, size=200)
    split = (0.5, 0.25, 0.25)
    noise = _moments_noise(X, y, K, 0.3, delta, split, seed=12)
    kind, value = _expected_laws(1, 0.3, delta, split)[0]
    _check_law(noise[0], CountNoise(kind, value))


@pytest.mark.slow
def test_weighted_moments_have_the_weighted_laws():
    rng = np.random.default_rng(5)
    X, y = rng.random((30, 3000)), rng.integers(0, 2, size=30)
    weights = rng.random(30)
    split = (0.2, 0.5, 0.3)
    noise = _moments_noise(X, y, 2, 2.0, 0.0, split, seed=13, weights=weights)
    laws = [CountNoise(k, v) for k, v in _expected_laws(3000, 2.0, 0.0, split, W=WEIGHT_GRID)]
    _check_law(noise[1], laws[1])


def test_mutation_ten_percent_less_noise_is_caught(monkeypatch):
    # The library made to calibrate every Laplace scale 10% too small: the same test fails.
    original = moments_module.laplace_noise

    def mutated(l1, epsilon):
        return original(l1, epsilon / SMALLER)

    monkeypatch.setattr(moments_module, "laplace_noise", mutated)
    rng = np.random.default_rng(3)
    X, y = rng.random((10, 6000)), np.zeros(10, dtype=np.int64)
    split = (0.1, 0.6, 0.3)
    noise = _moments_noise(X, y, 1, 1.0, 0.0, split, seed=11)
    law = CountNoise(*_expected_laws(6000, 1.0, 0.0, split)[1])
    assert _pvalue(noise[1], law) < P_THRESHOLD


@pytest.mark.parametrize("delta", [0.0, 1e-6])  # 6000 draws: the one default Gaussian law test
def test_histogram_has_the_calibrated_law(delta):
    rng = np.random.default_rng(6)
    codes = rng.integers(0, 3000, size=(100, 2))
    counts, law, _ = noisy_histogram(codes, [3000, 3000], 0.8, NoiseSource.seeded(14),
                                     delta=delta)
    exact = np.concatenate([np.bincount(codes[:, 0], minlength=3000),
                            np.bincount(codes[:, 1], minlength=3000)])
    noise = np.rint(counts).astype(np.int64) - exact
    # Two attributes per row: L1 4, squared L2 4.
    expected = (CountNoise("laplace", law.parameter) if delta == 0 else law)
    if delta == 0:
        assert 4 / 0.8 <= float(law.parameter) <= 4 / 0.8 + 1 / SCALE_UNITS
    else:
        assert float(law.parameter) == pytest.approx(4 / (2 * zcdp_rho(0.8, delta)), rel=1e-15)
    _check_law(noise, expected)


def test_histogram_mutation_is_caught(monkeypatch):
    original = counts_module.laplace_noise
    monkeypatch.setattr(counts_module, "laplace_noise",
                        lambda l1, eps: original(l1, eps / SMALLER))
    rng = np.random.default_rng(6)
    codes = rng.integers(0, 6000, size=100)
    counts, _, _ = noisy_histogram(codes, 6000, 0.8, NoiseSource.seeded(14))
    noise = np.rint(counts).astype(np.int64) - np.bincount(codes, minlength=6000)
    assert _pvalue(noise, CountNoise("laplace", laplace_noise(2, 0.8).parameter)) < P_THRESHOLD


def test_laplace_scales_round_the_exact_rational_up_and_keep_small_terms():
    law = laplace_noise(6, 0.3)
    assert law.variance == pytest.approx(2 * float(law.parameter) ** 2, rel=1e-3)
    for sensitivity, epsilon in ((2, 0.1), (200, 0.3), (2, 7.0), (6, 1e-4), (2048 * 100, 0.01)):
        scale = laplace_noise(sensitivity, epsilon).parameter
        exact = Fraction(sensitivity) / Fraction(epsilon)  # not sensitivity / epsilon rounded
        assert exact <= scale < exact + Fraction(1, SCALE_UNITS)
        # Small terms: the vector sampler's numpy path takes it.
        assert scale.numerator < 1 << 61 and scale.denominator <= SCALE_UNITS


@pytest.mark.parametrize("weighted", [False, True])
def test_histogram_blocks_have_the_calibrated_law(weighted):
    # Three blocks (a row adds to one cell of each, as a row of a 3-tree forest adds to
    # one leaf of each tree), weighted or not: discrete Laplace of scale 2 r W / epsilon.
    rng = np.random.default_rng(0)
    n, r, size, epsilon = 500, 3, 2000, 0.7
    codes = rng.integers(0, size, size=(n, r))
    weights = rng.random(n) if weighted else None
    counts, law, event = noisy_histogram(codes, [size] * r, epsilon, NoiseSource.seeded(16),
                                         sample_weight=weights)
    W = WEIGHT_GRID if weighted else 1
    per_row = np.ones(n, dtype=np.int64) if weights is None else grid_weights(weights)
    exact = np.concatenate([np.bincount(c, weights=per_row, minlength=size) for c in codes.T])
    noise = counts * W - exact
    np.testing.assert_array_equal(noise, np.rint(noise))  # integer noise, exactly released
    expected = CountNoise("laplace", Fraction(2 * r * W) / Fraction(epsilon))
    assert float(law.parameter) == pytest.approx(float(expected.parameter), rel=1e-6)
    _check_law(noise, expected)
    assert count_variance(law, weighted) == pytest.approx(expected.variance / W**2, rel=1e-6)
    assert event == PureDPEvent(epsilon)


def _noise_free(monkeypatch):
    monkeypatch.setattr(counts_module, "discrete_laplace_vector",
                        lambda scale, size, rng: np.zeros(size, dtype=np.int64))


@pytest.mark.parametrize("weighted", [False, True])
def test_histogram_sensitivity_on_neighbours(weighted, monkeypatch):
    _noise_free(monkeypatch)
    rng = np.random.default_rng(1)
    n, r, size = 50, 4, 8
    worst = 0.0
    for _ in range(200):
        codes = rng.integers(0, size, size=(n, r))
        weights = rng.random(n) if weighted else None
        other, other_weights = codes.copy(), None if weights is None else weights.copy()
        i = rng.integers(n)
        other[i] = rng.integers(0, size, size=r)
        if weighted:
            other_weights[i] = rng.random()
        a, _, _ = noisy_histogram(codes, [size] * r, 1.0, NoiseSource.seeded(0),
                                  sample_weight=weights)
        b, _, _ = noisy_histogram(other, [size] * r, 1.0, NoiseSource.seeded(0),
                                  sample_weight=other_weights)
        worst = max(worst, np.abs(a - b).sum() / (2 * r))
    assert 0.5 <= worst <= 1.0 + 1e-12


def test_histogram_enforces_its_conditions():
    source = NoiseSource.seeded(0)
    for codes in (np.array([0, 5]), np.array([0, -1]), np.array([0.0, 1.0]),
                  np.zeros((2, 3), dtype=np.int64)):  # 3 columns, one block size
        with pytest.raises(ValueError):
            noisy_histogram(codes, 5, 1.0, source)
    with pytest.raises(ValueError):
        noisy_histogram(np.array([0, 1]), 5, 1.0, source, sample_weight=np.array([0.5, np.nan]))
    with pytest.raises(TypeError):
        noisy_histogram(np.array([0, 1]), 5, 1.0, np.random.default_rng(0))
    for epsilon in (0.0, -1.0, float("inf")):
        with pytest.raises(ValueError):
            noisy_histogram(np.array([0, 1]), 5, epsilon, source)


def test_add_count_noise_refuses_numpy_generators():
    with pytest.raises(TypeError):
        add_count_noise(np.zeros(3, dtype=np.int64), laplace_noise(1, 1.0),
                        np.random.default_rng(0))


# -- sensitivities on neighbouring data sets -------------------------------------------------


def _stats(X, y, K, weights=None):
    m = grid_values(X, np.zeros(X.shape[1]), np.ones(X.shape[1]), G)
    return _integer_moments(m, y, K, None if weights is None else grid_weights(weights))


def _neighbours(seed, d=5, K=3, n=12, weighted=False):
    """Random neighbours: row 0 replaced, with extremes, out-of-bounds values and label changes."""
    rng = np.random.default_rng(seed)
    X = rng.choice([-3.0, 0.0, 0.5, 1.0, 7.0, 0.3], size=(n, d))
    y = rng.integers(0, K, size=n)
    w = rng.choice([0.0, 0.37, 1.0], size=n) if weighted else None
    X2, y2 = X.copy(), y.copy()
    X2[0] = rng.choice([-3.0, 0.0, 0.5, 1.0, 7.0, 0.9], size=d)
    y2[0] = rng.integers(0, K)
    w2 = None
    if weighted:
        w2 = w.copy()
        w2[0] = rng.choice([0.0, 0.61, 1.0])
    return (X, y, w), (X2, y2, w2)


@pytest.mark.parametrize("weighted", [False, True])
def test_moments_move_within_the_table_on_neighbours(weighted):
    d, W = 5, WEIGHT_GRID if weighted else 1
    l1 = (2 * W, 2 * d * G * W, d * G * G * W)
    l2sq = (2 * W * W, 4 * d * G * G * W * W, d * G**4 * W * W)
    worst = np.zeros((2, 3))
    for seed in range(400):
        (X, y, w), (X2, y2, w2) = _neighbours(seed, d=d, weighted=weighted)
        for i, (a, b) in enumerate(zip(_stats(X, y, 3, w), _stats(X2, y2, 3, w2))):
            diff = (a - b).astype(float).ravel()
            worst[0, i] = max(worst[0, i], np.abs(diff).sum() / l1[i])
            worst[1, i] = max(worst[1, i], (diff**2).sum() / l2sq[i])
    assert np.all(worst <= 1.0 + 1e-12), worst
    assert np.all(worst[0] >= 0.5)  # the random pairs come close to the bounds


def test_moment_bounds_are_attained():
    d = 4
    one, minus = np.ones((1, d)), -np.ones((1, d))
    # counts and class sums, L1: a row at the top corner of class 0 becomes the bottom
    # corner of class 1.
    a = _stats(np.vstack([one, one]), np.array([0, 1]), 2)
    b = _stats(np.vstack([minus, one]), np.array([1, 1]), 2)
    assert np.abs(a[0] - b[0]).sum() == 2
    assert np.abs(a[1] - b[1]).sum() == 2 * d * G
    # class sums, L2: the top corner becomes the bottom corner in the same class.
    c = _stats(minus, np.array([0]), 2)
    d_ = _stats(one * 2, np.array([0]), 2)  # 2 is clipped to the upper bound 1
    assert ((c[1] - d_[1]).astype(float) ** 2).sum() == 4 * d * G * G
    # squares: an edge value becomes the midpoint.
    mid = _stats(np.full((1, d), 0.5), np.array([0]), 2)
    assert np.abs(c[2] - mid[2]).sum() == d * G * G


def test_histogram_moves_by_at_most_two_per_attribute():
    rng = np.random.default_rng(0)
    for _ in range(300):
        codes = rng.integers(0, 4, size=(10, 3))
        other = codes.copy()
        other[0] = rng.integers(0, 4, size=3)
        a = [np.bincount(c, minlength=4) for c in codes.T]
        b = [np.bincount(c, minlength=4) for c in other.T]
        diff = np.concatenate(a) - np.concatenate(b)
        assert np.abs(diff).sum() <= 6 and (diff**2).sum() <= 6


def test_grid_values_and_weights_are_bounded_integers():
    X = np.array([[-1e9, 0.25, 0.5, 1e9, 1.0]])
    m = grid_values(X, np.zeros(5), np.ones(5), G)
    np.testing.assert_array_equal(m, [[-G, -G // 2, 0, G, G]])
    np.testing.assert_array_equal(grid_weights([0.0, 0.5, 1.0]), [0, WEIGHT_GRID // 2, WEIGHT_GRID])


# -- calibration: zCDP conversion and the budget split ----------------------------------------


@pytest.mark.parametrize("epsilon, delta", [(0.1, 1e-6), (1.0, 1e-5), (2.0, 1e-9), (8.0, 1e-3)])
def test_zcdp_rho_is_the_largest_converting_rho(epsilon, delta):
    rho = zcdp_rho(epsilon, delta)
    assert rdp_to_dp(ORDERS * rho, delta) <= epsilon
    assert rdp_to_dp(ORDERS * rho * (1 + 1e-8), delta) > epsilon
    # At least as good as the textbook conversion epsilon = rho + 2 sqrt(rho log(1/delta)).
    textbook = (math.sqrt(math.log(1 / delta) + epsilon) - math.sqrt(math.log(1 / delta))) ** 2
    assert rho >= textbook * (1 - 1e-9)


def _excess_log_loss(shares, n, d, K, epsilon, delta, rho=None):
    """The split's objective, written out independently (docs/naive_bayes.rst)."""
    s2, P = 1.0 / 3.0, float(K * K)
    if delta == 0:
        e = np.asarray(shares) * epsilon
        variances = (2 * (2 / e[0]) ** 2, 2 * (2 * d / e[1]) ** 2, 2 * (d / e[2]) ** 2)
    else:
        r = np.asarray(shares) * (zcdp_rho(epsilon, delta) if rho is None else rho)
        variances = (2 / (2 * r[0]), 4 * d / (2 * r[1]), d / (2 * r[2]))
    weights = (P / 2, d * P / (2 * s2), d / (4 * s2 * s2))
    return sum(w * v for w, v in zip(weights, variances)) / n**2


@pytest.mark.parametrize("d, K, delta", [(4, 2, 0.0), (30, 2, 0.0), (100, 5, 0.0),
                                         (10, 2, 1e-6), (64, 3, 1e-6)])
def test_split_minimises_the_excess_log_loss_when_the_floor_is_slack(d, K, delta):
    n, epsilon = 10**7, 1.0  # many rows: the counts' floor does not bind
    rule = moments_split(n, d, K, epsilon, delta)
    assert sum(rule) == pytest.approx(1.0) and min(rule) > 0
    rho = zcdp_rho(epsilon, delta) if delta else None
    best = _excess_log_loss(rule, n, d, K, epsilon, delta, rho)
    grid = np.linspace(0.01, 0.98, 98)
    for a, b in itertools.product(grid, grid):
        if a + b < 0.995:
            other = _excess_log_loss((a, b, 1 - a - b), n, d, K, epsilon, delta, rho)
            assert best <= other * (1 + 1e-9)
    assert best < _excess_log_loss((1 / 3, 1 / 3, 1 / 3), n, d, K, epsilon, delta, rho)


@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_counts_floor_keeps_the_prior_only_rule_near_the_majority(delta):
    # The worst excess of the prior-only rule at the rule's count share, computed by
    # simulation-free formula, is at most 0.005 whenever the cap of 1/2 does not bind.
    for n, epsilon in ((300, 5.0), (2000, 0.5), (20000, 0.1), (500, 0.1)):
        share = moments_split(n, 10, 2, epsilon, delta)[0]
        if delta == 0:
            b = 2 / (share * epsilon)
            gaps = np.linspace(1e-4, 1, 20000)
            t = n * gaps
            excess = gaps * 0.5 * (1 + t / (2 * b)) * np.exp(-t / b)
        else:
            sigma = 1 / math.sqrt(share * zcdp_rho(epsilon, delta))
            gaps = np.linspace(1e-4, 1, 20000)
            excess = gaps * ndtr(-n * gaps / (math.sqrt(2) * sigma))
        if share < 0.5:
            assert excess.max() <= 0.005 * (1 + 1e-6)
        else:
            assert excess.max() > 0.005  # capped: the floor could not be met


# -- wiring: the estimators call the mechanisms at their parameters ---------------------------


def test_gaussian_nb_calls_class_moments_with_its_budget(monkeypatch):
    seen = {}
    real = gaussian_module.class_moments

    def recording(X, index, K, lower, upper, epsilon, rng, **kwargs):
        seen.update(epsilon=epsilon, K=K, **kwargs)
        return real(X, index, K, lower, upper, epsilon, rng, **kwargs)

    monkeypatch.setattr(gaussian_module, "class_moments", recording)
    X = np.random.default_rng(0).random((500, 3))
    y = np.arange(500) % 3
    model = DPGaussianNB(epsilon=0.4, delta=1e-7, bounds=(0, 1), classes=[0, 1, 2],
                         accountant=BudgetAccountant()).fit(X, y)
    assert seen["epsilon"] == 0.4 and seen["delta"] == 1e-7 and seen["K"] == 3
    assert seen["split"] == moments_split(500, 3, 3, 0.4, 1e-7) == model.budget_split_


def test_categorical_nb_calls_the_histogram_with_its_budget(monkeypatch):
    seen = {}
    real = categorical_module.noisy_histogram

    def recording(codes, n_bins, epsilon, rng, **kwargs):
        seen.update(codes=codes, n_bins=n_bins, epsilon=epsilon, **kwargs)
        return real(codes, n_bins, epsilon, rng, **kwargs)

    monkeypatch.setattr(categorical_module, "noisy_histogram", recording)
    X = np.random.default_rng(0).integers(0, 3, size=(50, 2))
    y = np.arange(50) % 2
    DPCategoricalNB(epsilon=0.6, n_categories=[3, 4], classes=[0, 1],
                    accountant=BudgetAccountant()).fit(X, y)
    assert seen["epsilon"] == 0.6 and seen["delta"] == 0.0
    np.testing.assert_array_equal(seen["n_bins"], [6, 8])  # classes x categories per column
    np.testing.assert_array_equal(seen["codes"][:, 1], y * 4 + X[:, 1])
