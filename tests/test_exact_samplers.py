"""The exact samplers (dpsk/mechanisms/_exact.py, _samplers.py): laws, tails, grid cells.

Every goodness-of-fit test runs on a fixed seed at significance 1e-3 (so the
suite is deterministic), and each law test is paired with a check that the
same test rejects noise 10% too small.
"""

import math
import pickle
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

import dpsk.mechanisms._samplers as samplers
from dpsk._optimize._losses import HuberLoss, LogisticLoss
from dpsk.accounting._profiles import gaussian_delta
from dpsk.mechanisms import _erm, _gradient
from dpsk.mechanisms._exact import (
    BitStream,
    URand,
    _bernoulli_b,
    _bernoulli_exp_half,
    exact_exponential,
    exact_normal,
)
from dpsk.mechanisms._noise import add_on_grid, gamma_norm_noise, gaussian_noise
from dpsk.mechanisms._random import NoiseSource

SIGNIFICANCE = 1e-3
SMALLER = 0.9  # "10% too little noise"


def _bits(seed):
    return BitStream(NoiseSource.seeded(seed))


def _value(k, x, negative=False, digits=64, bits=None):
    """The deviate to ``digits`` fraction digits (drawing them if needed), as a float."""
    if bits is not None:
        x.extend(digits, bits)
    v = k + x.p / 2**x.n
    return -v if negative else v


def _normals(n, seed):
    bits = _bits(seed)
    return np.array([_value(k, x, neg, bits=bits) for neg, k, x in
                     (exact_normal(bits) for _ in range(n))])


# -- the building blocks ---------------------------------------------------------------


def test_bernoulli_exp_half_frequency():
    bits = _bits(1)
    n = 40_000
    hits = sum(_bernoulli_exp_half(bits) for _ in range(n))
    assert stats.binomtest(hits, n, math.exp(-0.5)).pvalue > SIGNIFICANCE
    assert stats.binomtest(hits, n, math.exp(-0.5 / SMALLER)).pvalue < SIGNIFICANCE


@pytest.mark.parametrize("k", [0, 1, 3])
def test_bernoulli_b_frequency(k):
    # x = 0.7 to 64 digits: the probability is exp(-x (2k + x) / (2k + 2)).
    bits = _bits(2 + k)
    n, p0 = 30_000, int(0.7 * 2**64)
    hits = 0
    for _ in range(n):
        x = URand()
        x.p, x.n = p0, 64
        hits += _bernoulli_b(k, x, bits)
    x = p0 / 2**64
    assert stats.binomtest(hits, n, math.exp(-x * (2 * k + x) / (2 * k + 2))).pvalue \
        > SIGNIFICANCE


# -- the laws ----------------------------------------------------------------------------


def test_exact_normal_law_and_power():
    draws = _normals(20_000, 3)
    assert stats.kstest(draws, "norm").pvalue > SIGNIFICANCE
    assert stats.kstest(draws, stats.norm(scale=SMALLER).cdf).pvalue < SIGNIFICANCE


def test_exact_normal_integer_part_and_sign():
    bits = _bits(4)
    triples = [exact_normal(bits) for _ in range(30_000)]
    ks = np.array([k for _, k, _ in triples])
    observed = np.bincount(np.minimum(ks, 3), minlength=4)
    edges = np.array([0, 1, 2, 3, np.inf])
    expected = 2 * np.diff(stats.norm.cdf(edges)) * len(ks)
    assert stats.chisquare(observed, expected).pvalue > SIGNIFICANCE
    negatives = sum(neg for neg, _, _ in triples)
    assert stats.binomtest(negatives, len(ks), 0.5).pvalue > SIGNIFICANCE


def test_exact_exponential_law_and_power():
    bits = _bits(5)
    draws = np.array([_value(k, x, bits=bits) for k, x in
                      (exact_exponential(bits) for _ in range(20_000))])
    assert stats.kstest(draws, "expon").pvalue > SIGNIFICANCE
    assert stats.kstest(draws, stats.expon(scale=SMALLER).cdf).pvalue < SIGNIFICANCE


def test_gamma_norm_noise_law_and_power():
    source = NoiseSource.seeded(6)
    d, beta = 3, 2.0
    norms = np.array([np.linalg.norm(gamma_norm_noise(d, beta, source)) for _ in range(3000)])
    law = stats.gamma(a=d, scale=1 / beta)
    assert stats.kstest(norms, law.cdf).pvalue > SIGNIFICANCE
    assert stats.kstest(norms, stats.gamma(a=d, scale=SMALLER / beta).cdf).pvalue \
        < SIGNIFICANCE


# -- the tails: the fraction given the integer part, at every fine cell ---------------------


def _tail_fraction(k, bits):
    """Steps 3-5 of Algorithm N for a fixed ``k``: the fraction of ``|G|`` given
    ``floor(|G|) = k``, drawn exactly (the tail algorithm in isolation)."""
    while True:
        x = URand()
        if all(_bernoulli_b(k, x, bits) for _ in range(k + 1)):
            return x


def _conditional_cdf(k, scale):
    # P(|G| <= k + x | k <= |G| < k + 1) for G ~ N(0, scale^2), in the upper tail.
    low, high = stats.norm.sf(k / scale), stats.norm.sf((k + 1) / scale)
    return lambda x: (low - stats.norm.sf((k + np.asarray(x)) / scale)) / (low - high)


@pytest.mark.parametrize("k", [6, 8, 10])
def test_tail_fraction_law_and_fine_cells(k):
    bits = _bits(10 + k)
    fractions = [_tail_fraction(k, bits) for _ in range(4000)]
    for x in fractions:
        x.extend(64, bits)
    values = np.array([x.p / 2**64 for x in fractions])
    assert stats.kstest(values, _conditional_cdf(k, 1.0)).pvalue > SIGNIFICANCE
    assert stats.kstest(values, _conditional_cdf(k, SMALLER)).pvalue < SIGNIFICANCE
    # Cells of width 2^-28 sigma at k sigma: digits 21-28 of the fraction are
    # uniform, so every fine cell is reached at its rate. (An inversion of 52-bit
    # uniforms has spacing 2^-52 / phi(k) there: 2^-4.5 sigma at 8 sigma.)
    residues = np.array([(x.p >> 36) & 0xFF for x in fractions])
    assert stats.chisquare(np.bincount(residues, minlength=256)).pvalue > SIGNIFICANCE


# -- the impossible-cell audit on a coarse grid, d = 1 and 2 ---------------------------------


def _released_cells(point, noise, grid):
    return np.rint(add_on_grid(point, noise, grid) / grid).astype(np.int64)


def _pooled_chisquare(observed_cells, probabilities, n):
    """Chi-square of cell counts against exact probabilities, pooling cells with
    an expected count below 5 into one bin (which also holds everything else)."""
    cells = sorted(probabilities)
    counts = {c: 0 for c in cells}
    other = 0
    for c, m in zip(*np.unique(observed_cells, return_counts=True)):
        if int(c) in counts:
            counts[int(c)] += int(m)
        else:
            other += int(m)
    keep = [c for c in cells if probabilities[c] * n >= 5]
    observed = [counts[c] for c in keep]
    expected = [probabilities[c] * n for c in keep]
    observed.append(n - sum(observed))
    expected.append(n - sum(expected))
    return stats.chisquare(observed, expected).pvalue


def _gaussian_cell_probabilities(w, sigma, grid, cells):
    edges_low = (np.asarray(cells) - 0.5) * grid - w
    edges_high = (np.asarray(cells) + 0.5) * grid - w
    p = stats.norm.cdf(edges_high / sigma) - stats.norm.cdf(edges_low / sigma)
    return dict(zip(cells, p))


def test_impossible_cell_audit_gaussian():
    sigma, grid, shift = 1.0, 0.25, 0.37  # a coarse grid; neighbours 0.37 apart
    w, w_prime = 0.1, 0.1 + shift
    n = 20_000
    cells = list(range(-40, 41))
    probs = _gaussian_cell_probabilities(w, sigma, grid, cells)
    probs_prime = _gaussian_cell_probabilities(w_prime, sigma, grid, cells)
    released = _released_cells(np.full(n, w), gaussian_noise(n, sigma, NoiseSource.seeded(20)),
                               grid)
    released_prime = _released_cells(np.full(n, w_prime),
                                     gaussian_noise(n, sigma, NoiseSource.seeded(21)), grid)
    # Every cell reached under one neighbour has positive probability under the other.
    for seen in (set(released.tolist()), set(released_prime.tolist())):
        assert all(probs.get(c, 0) > 0 and probs_prime.get(c, 0) > 0 for c in seen)
    # The sampler reaches cells at their exact continuous rates ...
    assert _pooled_chisquare(released, probs, n) > SIGNIFICANCE
    assert _pooled_chisquare(released_prime, probs_prime, n) > SIGNIFICANCE
    smaller = _gaussian_cell_probabilities(w, SMALLER * sigma, grid, cells)
    assert _pooled_chisquare(released, smaller, n) < SIGNIFICANCE
    # ... and at those rates the privacy loss meets the claim: the cells are a
    # post-processing of the Gaussian mechanism of sensitivity `shift`.
    p, q = np.array(list(probs.values())), np.array(list(probs_prime.values()))
    for eps in (0.1, 0.5, 1.0):
        for a, b in ((p, q), (q, p)):
            assert np.maximum(a - math.exp(eps) * b, 0).sum() <= \
                gaussian_delta(sigma, eps, shift) + 1e-12


def _laplace_cell_probabilities(w, beta, grid, cells):
    # d = 1: density (beta / 2) exp(-beta |b|); each tail's mass in closed form,
    # without cancellation.
    def mass(a, c):
        if a >= 0:
            return 0.5 * (math.exp(-beta * a) - math.exp(-beta * c))
        if c <= 0:
            return 0.5 * (math.exp(beta * c) - math.exp(beta * a))
        return 1.0 - 0.5 * math.exp(beta * a) - 0.5 * math.exp(-beta * c)

    return {c: mass((c - 0.5) * grid - w, (c + 0.5) * grid - w) for c in cells}


def test_impossible_cell_audit_gamma_norm_d1():
    beta, grid, shift = 2.0, 0.25, 0.37
    epsilon = beta * shift
    w, w_prime = -0.05, -0.05 + shift
    n = 6000
    cells = list(range(-80, 81))
    source = NoiseSource.seeded(22)
    released = np.array([_released_cells([w], gamma_norm_noise(1, beta, source), grid)[0]
                         for _ in range(n)])
    probs = _laplace_cell_probabilities(w, beta, grid, cells)
    probs_prime = _laplace_cell_probabilities(w_prime, beta, grid, cells)
    assert all(probs_prime.get(int(c), 0) > 0 for c in set(released.tolist()))
    assert _pooled_chisquare(released, probs, n) > SIGNIFICANCE
    assert _pooled_chisquare(released, _laplace_cell_probabilities(w, beta / SMALLER, grid,
                                                                   cells), n) < SIGNIFICANCE
    p, q = np.array(list(probs.values())), np.array(list(probs_prime.values()))
    assert np.max(np.abs(np.log(p / q))) <= epsilon + 1e-9


@pytest.mark.slow
def test_impossible_cell_audit_gamma_norm_d2():
    from scipy import integrate

    beta, grid = 1.5, 0.5
    w = np.array([0.1, -0.2])
    n = 6000
    source = NoiseSource.seeded(23)
    released = np.array([_released_cells(w, gamma_norm_noise(2, beta, source), grid)
                         for _ in range(n)])
    # Exact cell probabilities of the density beta^2 / (2 pi) exp(-beta ||b||).
    cells = [(i, j) for i in range(-4, 5) for j in range(-4, 5)]

    def probability(i, j):
        lo = (np.array([i, j]) - 0.5) * grid - w
        hi = lo + grid
        value, _ = integrate.dblquad(
            lambda y, x: beta**2 / (2 * np.pi) * np.exp(-beta * math.hypot(x, y)),
            lo[0], hi[0], lo[1], hi[1], epsabs=1e-10)
        return value

    probs = {c: probability(*c) for c in cells}
    index = {c: k for k, c in enumerate(cells)}
    flat = np.array([index.get((int(a), int(b)), -1) for a, b in released])
    assert _pooled_chisquare(flat, {index[c]: p for c, p in probs.items()}, n) > SIGNIFICANCE


# -- refinement, float rounding, reproducibility --------------------------------------------


def _exact_values(draw, digits=320):
    """Every coordinate of a draw to ``digits`` fraction digits, as Fractions."""
    draw.refine(digits)
    out = []
    for negative, lo, hi, den in draw.magnitudes():
        value = Fraction(lo, den)
        assert Fraction(hi, den) - value < Fraction(1, 2**250) * max(1, abs(value))
        out.append(-value if negative else value)
    return out


@pytest.mark.parametrize("sampler, scale", [(gaussian_noise, 3.0), (gamma_norm_noise, 0.5)])
def test_floats_are_the_draw_correctly_rounded(sampler, scale):
    noise = sampler(40, scale, NoiseSource.seeded(30))
    exact = _exact_values(noise._draw)
    assert [float(v) for v in exact] == noise.tolist()


@pytest.mark.parametrize("sampler, scale", [(gaussian_noise, 0.02), (gamma_norm_noise, 50.0)])
def test_cells_are_those_of_the_exact_sum_even_after_refinement(monkeypatch, sampler, scale):
    # A first precision of 2 digits forces refinement almost everywhere.
    monkeypatch.setattr(samplers, "FIRST_PRECISION", 2)
    grid = 2.0**-12
    point = np.random.default_rng(0).standard_normal(30)
    noise = sampler(30, scale, NoiseSource.seeded(31))
    released = add_on_grid(point, noise, grid)
    exact = _exact_values(noise._draw)
    expected = [math.floor((Fraction(p) + b) / Fraction(grid) + Fraction(1, 2)) * grid
                for p, b in zip(point, exact)]
    assert released.tolist() == expected


def test_law_unchanged_by_refinement(monkeypatch):
    monkeypatch.setattr(samplers, "FIRST_PRECISION", 1)
    draws = gaussian_noise(5000, 1.0, NoiseSource.seeded(32))
    assert stats.kstest(draws, "norm").pvalue > SIGNIFICANCE


def test_seeded_draws_reproduce_and_pickle_as_floats():
    a = gamma_norm_noise(6, 1.0, NoiseSource.seeded(33))
    b = gamma_norm_noise(6, 1.0, NoiseSource.seeded(33))
    np.testing.assert_array_equal(a, b)
    restored = pickle.loads(pickle.dumps(a))
    assert type(restored) is np.ndarray and not hasattr(restored, "_draw")
    np.testing.assert_array_equal(restored, a)
    # Arithmetic and copies give plain floats: only the sampler's object releases
    # exactly.
    assert getattr(a / 2, "_draw", None) is None and getattr(a.copy(), "_draw", None) is None


# -- the estimators' releases stay on the grid --------------------------------------------


def _unit_rows(n, d, seed):
    rng = np.random.default_rng(seed)
    Z = rng.standard_normal((n, d))
    Z /= np.maximum(np.linalg.norm(Z, axis=1, keepdims=True), 1.0)
    return Z, np.where(rng.random(n) < 0.5, -1.0, 1.0)


def _on_grid(values, grid):
    ratio = np.asarray(values) / grid
    return np.array_equal(ratio, np.rint(ratio))


@pytest.mark.parametrize("perturbation, delta", [("output", 0.0), ("objective", 0.0),
                                                 ("output", 1e-6), ("objective", 1e-6)])
def test_private_erm_releases_on_the_grid(perturbation, delta):
    Z, y = _unit_rows(60, 4, 0)
    loss = LogisticLoss()
    w = _erm.private_erm(Z, y, loss, 0.8, 0.05, perturbation, NoiseSource.seeded(40),
                         delta=delta)
    plan = _erm._noise_plan(loss, 60, 4, 0.8, delta, 0.05, perturbation, 1e-10)
    assert _on_grid(w, plan.grid)


def test_noisy_gradient_steps_release_on_the_grid():
    Z, y = _unit_rows(40, 3, 1)
    loss = HuberLoss(0.5)
    record = []
    _gradient._run(Z, y, loss, 1.0, 1e-6, 0.1, NoiseSource.seeded(41), 1, record=record)
    grid = _gradient.noisy_gd_schedule(40, 3, 0.1, loss, 1.0, 1e-6).grid
    assert record and all(_on_grid(g, grid) for _, g in record)
