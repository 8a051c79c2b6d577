"""The batched exact samplers compute the scalar reference's function, so they have its law.

* coupling: on the same rows of words and the same spill, :func:`normal_trials`
  and :func:`exponential_trials` return exactly what the scalar trials return
  (sign, integer part, every fraction digit), including rows forced onto the
  scalar code (ties, a q-comparison that needs more digits, long runs, rows
  that run out of words);
* the float64 fast paths (released cells, correctly rounded floats) agree with
  the exact integer enclosures wherever they decide, and hand the rest over;
* the laws of the batched samplers: exact binomial and KS tests, each with power
  against noise 10% too small.
"""

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

import dpsk.mechanisms._exact as exact
import dpsk.mechanisms._samplers as samplers
from dpsk.mechanisms._exact import (
    EXPONENTIAL_WORDS,
    NORMAL_WORDS,
    BitStream,
    URand,
    WordStream,
    _below_q,
    exponential_trial,
    exponential_trials,
    normal_trial,
    normal_trials,
)
from dpsk.mechanisms._random import NoiseSource

SIGNIFICANCE = 1e-3
SMALLER = 0.9
_HALF = 1 << 31


def _rows(seed, n_rows, width):
    return NoiseSource.seeded(seed).words(n_rows * width).reshape(n_rows, width).copy()


def _forced_normal_rows(seed):
    """Rows that the batched code must hand to the scalar code, one reason each."""
    rows = _rows(seed, 8, NORMAL_WORDS)
    rows[0, :2] = [5, 5]                         # tie in the first H coin
    rows[1, :] = 7                               # a constant row: ties everywhere
    rows[2, :] = _HALF + 3                       # every H coin succeeds: k runs off the row
    rows[3, :] = np.arange(_HALF - 1, _HALF - 1 - NORMAL_WORDS, -1)  # one long run
    # k = 0 (a run of length 1), x = 1000, z = 500 < x, v = 500: 2 v = x, so
    # whether (2k + 2) v < 2k + x needs more digits.
    rows[4, :5] = [100, 200, 1000, 500, 500]
    rows[5, :4] = [100, 200, 1000, 1000]         # z ties with x
    rows[6, :5] = [100, 200, 1000, 500, 100]     # decided: k = 0 and B passes step 0
    return rows


def _same_normal(scalar_out, batched):
    if scalar_out is None:
        return batched is None
    return (batched is not None and scalar_out[:2] == batched[:2]
            and (scalar_out[2].p, scalar_out[2].n) == (batched[2].p, batched[2].n))


def _batched_normals(words, spill):
    accepted, negative, k, x, scalar = normal_trials(words, spill)
    out = []
    for t in range(len(words)):
        if not accepted[t]:
            out.append(None)
        elif t in scalar:
            out.append(scalar[t])
        else:
            out.append((bool(negative[t]), int(k[t]), URand(int(x[t]), 32)))
    return out


@pytest.mark.parametrize("seed", [1, 2])
def test_normal_trials_equal_the_scalar_trials_on_the_same_words(monkeypatch, seed):
    words = np.vstack([_forced_normal_rows(seed), _rows(10 + seed, 4000, NORMAL_WORDS)])
    handed = []
    reference = exact.normal_trial

    def counting(bits):
        handed.append(bits)
        return reference(bits)

    monkeypatch.setattr(exact, "normal_trial", counting)
    batched = _batched_normals(words, BitStream(NoiseSource.seeded(100 + seed)))
    monkeypatch.undo()
    spill = BitStream(NoiseSource.seeded(100 + seed))
    scalar = [normal_trial(WordStream(row, spill)) for row in words]
    assert all(_same_normal(s, b) for s, b in zip(scalar, batched))
    # The forced rows did go through the scalar code (and so did a few others).
    assert len(handed) >= 6


def test_forced_rows_are_handed_over():
    rows = _forced_normal_rows(3)
    # 128 rows so that the batched code runs (fewer go straight to the scalar code).
    words = np.vstack([rows, _rows(4, 128, NORMAL_WORDS)])
    seen = []
    original = exact.normal_trial
    try:
        exact.normal_trial = lambda bits: seen.append(bits._words[0]) or original(bits)
        normal_trials(words, BitStream(NoiseSource.seeded(5)))
    finally:
        exact.normal_trial = original
    firsts = {int(w) for w in seen}
    for r in (0, 1, 2, 3, 4, 5):
        assert int(rows[r, 0]) in firsts, r


def test_exponential_trials_equal_the_scalar_trials_on_the_same_words():
    words = _rows(7, 5000, EXPONENTIAL_WORDS)
    words[0, :2] = [9, 9]                                                   # tie
    words[1, :] = np.arange(_HALF, _HALF - EXPONENTIAL_WORDS, -1)           # long run
    words[2, :3] = [50, 40, 40]                                             # later tie
    accepted, x, scalar = exponential_trials(words, BitStream(NoiseSource.seeded(8)))
    assert {0, 1, 2} <= set(scalar) | set(np.flatnonzero(~accepted).tolist())
    spill = BitStream(NoiseSource.seeded(8))
    for t, row in enumerate(words):
        out = exponential_trial(WordStream(row, spill))
        assert (out is not None) == bool(accepted[t])
        if out is not None:
            got = scalar.get(t) or URand(int(x[t]), 32)
            assert (out.p, out.n) == (got.p, got.n)


# -- float64 fast paths against the exact enclosures ---------------------------------------


@pytest.mark.parametrize("sigma, grid", [(1.0, 2.0**-20), (3.0, 0.25), (1e-3, 2.0**-40),
                                         (7.3e5, 2.0**-3)])
def test_fast_cells_and_floats_agree_with_the_exact_enclosure(sigma, grid):
    d = 3000
    point = np.random.default_rng(0).standard_normal(d) * 10
    noise = samplers.gaussian_noise(d, sigma, NoiseSource.seeded(9))
    draw = noise._draw
    cells, decided = samplers._gaussian_cells_fast(point, draw.fast, sigma, grid)
    exact_cells = samplers._cells_of_draw(point, draw, grid)
    assert decided.mean() > 0.99
    assert [int(c) for c, ok in zip(cells, decided) if ok] == \
        [c for c, ok in zip(exact_cells, decided) if ok]
    values, decided = samplers._gaussian_floats_fast(draw.fast, sigma)
    assert decided.mean() > 0.98
    exact_values = samplers._decide(draw, samplers._float_of)
    assert values[decided].tolist() == [v for v, ok in zip(exact_values, decided) if ok]
    assert noise.tolist() == exact_values


def test_undecided_cells_fall_back_to_the_exact_sum():
    # sigma / grid = 2^62: the float bound decides nothing, every cell is exact.
    sigma, grid = 4.0, 2.0**-60
    point = np.random.default_rng(1).uniform(-1.5, 1.5, 40)  # inside the clipping range
    noise = samplers.gaussian_noise(40, sigma, NoiseSource.seeded(10))
    _, decided = samplers._gaussian_cells_fast(point, noise._draw.fast, sigma, grid)
    assert not decided.any()
    released = samplers.add_on_grid(point, noise, grid)
    draw = noise._draw
    expected = []
    for j, w in enumerate(point):
        negative, k = bool(draw.fast[0][j]), int(draw.fast[1][j])
        x = draw.urand(j)
        lo = Fraction(k) + Fraction(x.p, 2**x.n)
        hi = lo + Fraction(1, 2**x.n)
        b_lo, b_hi = (-hi * Fraction(sigma), -lo * Fraction(sigma)) if negative \
            else (lo * Fraction(sigma), hi * Fraction(sigma))
        first = math.floor((Fraction(w) + b_lo) / Fraction(grid) + Fraction(1, 2))
        assert first == math.floor((Fraction(w) + b_hi) / Fraction(grid) + Fraction(1, 2))
        expected.append(first * grid)
    assert released.tolist() == expected


# -- laws of the batched samplers -------------------------------------------------------------


@pytest.mark.parametrize("k", [0, 2])
def test_below_q_frequency(k):
    bits = BitStream(NoiseSource.seeded(11 + k))
    n, p0 = 40_000, int(0.3 * 2**64)
    hits = 0
    for _ in range(n):
        hits += _below_q(k, URand(p0, 64), bits)
    q = (2 * k + p0 / 2**64) / (2 * k + 2)
    assert stats.binomtest(hits, n, q).pvalue > SIGNIFICANCE
    assert stats.binomtest(hits, n, q * SMALLER).pvalue < SIGNIFICANCE


def test_batched_gaussian_law_and_power():
    draws = np.asarray(samplers.gaussian_noise(40_000, 1.0, NoiseSource.seeded(12)))
    assert stats.kstest(draws, "norm").pvalue > SIGNIFICANCE
    assert stats.kstest(draws, stats.norm(scale=SMALLER).cdf).pvalue < SIGNIFICANCE


def test_batched_gaussian_integer_part_and_sign():
    noise = samplers.gaussian_noise(40_000, 1.0, NoiseSource.seeded(13))
    negative, k, _ = noise._draw.fast
    observed = np.bincount(np.minimum(k, 3), minlength=4)
    expected = 2 * np.diff(stats.norm.cdf([0, 1, 2, 3, np.inf])) * len(k)
    assert stats.chisquare(observed, expected).pvalue > SIGNIFICANCE
    assert stats.binomtest(int(negative.sum()), len(k), 0.5).pvalue > SIGNIFICANCE


def test_batched_exponential_law_and_power():
    bits = BitStream(NoiseSource.seeded(14))
    pairs = samplers._exponentials(30_000, bits)
    draws = np.array([k + x.p / 2**x.n for k, x in pairs])
    assert stats.kstest(draws, "expon").pvalue > SIGNIFICANCE
    assert stats.kstest(draws, stats.expon(scale=SMALLER).cdf).pvalue < SIGNIFICANCE


def test_batched_gamma_norm_law_and_power():
    d, beta = 200, 2.0
    source = NoiseSource.seeded(15)
    norms = np.array([np.linalg.norm(samplers.gamma_norm_noise(d, beta, source))
                      for _ in range(300)])
    assert stats.kstest(norms, stats.gamma(a=d, scale=1 / beta).cdf).pvalue > SIGNIFICANCE
    assert stats.kstest(norms, stats.gamma(a=d, scale=SMALLER / beta).cdf).pvalue \
        < SIGNIFICANCE
