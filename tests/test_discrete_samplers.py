"""The exact discrete samplers (dpsk/mechanisms/_discrete.py) and their users.

Three kinds of test:

* **exact laws by enumeration**: a scripted source walks every branch of a
  sampler's random choices (each ``randbelow``, each rational Bernoulli, each
  lazy comparison) with its exact probability, and the resulting law must match
  the target pmf to within the mass left unexplored (below 1e-6). This checks
  the algorithms themselves, with no sampling error;
* **chi-square tests on the seeded source** (end to end, the real bits), with
  power against a parameter 10% off (noise 10% too small);
* the users: the exponential mechanism's law, the vote and the searches still
  charge and release as before, and seeded draws are pinned (regression).

Every statistical test uses a fixed seed and significance 1e-3.
"""

import math
from collections import defaultdict
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats
from sklearn.linear_model import LogisticRegression

from dpsk import BudgetAccountant, DPGridSearch, DPLogisticRegression, DPPredictionEnsemble
from dpsk.mechanisms import _discrete
from dpsk.mechanisms._discrete import (
    bernoulli,
    bernoulli_exp,
    discrete_gaussian,
    discrete_laplace,
    exponential_choice,
    geometric,
    to_fraction,
)
from dpsk.mechanisms._noise import exponential_mechanism
from dpsk.mechanisms._random import NoiseSource

P_THRESHOLD = 1e-3
SMALLER = Fraction(9, 10)  # noise 10% too small
GAMMAS = [Fraction(0), Fraction(1, 3), Fraction(1), Fraction(5, 2), Fraction(40)]


# -- enumeration of a sampler's random choices ------------------------------------------
# Layer by layer: the rational Bernoulli is exact by construction; bernoulli_exp is
# enumerated over rational coins; each rejection sampler's *round* is enumerated over
# coins of probability exp(-gamma) (bernoulli_exp, checked first), and the loop around
# a round only repeats it until it returns a value.
class _Branch(Exception):
    def __init__(self, outcomes):
        super().__init__()
        self.outcomes = outcomes


class _Script(NoiseSource):
    """A source that replays a prefix of choices and reports the next choice point."""

    def __init__(self, prefix):
        super().__init__()
        self._prefix, self._pos = prefix, 0

    def pick(self, outcomes):
        """One choice among ``[(value, probability), ...]`` (missing mass: never taken)."""
        if self._pos < len(self._prefix):
            self._pos += 1
            return self._prefix[self._pos - 1]
        raise _Branch(outcomes)

    def randbelow(self, n):
        return self.pick([(v, 1 / n) for v in range(n)])

    def randbits(self, k):
        return self.randbelow(1 << k)

    def coin(self, p):
        return self.pick([(True, p), (False, 1 - p)])


def _enumerate(sampler, tol=1e-10):
    """``(law, lost)``: the probability of every output reached by enumerating all
    choices, and the mass of the branches cut (probability below ``tol``)."""
    law, lost = defaultdict(float), 0.0
    stack = [((), 1.0)]
    while stack:
        prefix, weight = stack.pop()
        try:
            value = sampler(_Script(prefix))
        except _Branch as branch:
            lost += weight * (1 - math.fsum(p for _, p in branch.outcomes))
            for outcome, p in branch.outcomes:
                if weight * p < tol:
                    lost += weight * p
                elif p > 0:
                    stack.append((prefix + (outcome,), weight * p))
            continue
        law[value] += weight
    return law, lost


def _rational_coins(monkeypatch):
    monkeypatch.setattr(_discrete, "_bernoulli", lambda a, b, rng: rng.coin(a / b))


def _exp_coins(monkeypatch):
    monkeypatch.setattr(_discrete, "_bernoulli_exp_at_most_one",
                        lambda a, b, rng: rng.coin(math.exp(-a / b)))
    monkeypatch.setattr(_discrete, "_bernoulli_exp",
                        lambda gamma, rng: rng.coin(math.exp(-gamma)))


def _accepted(law):
    """The law of a round's output given that it was not rejected."""
    total = math.fsum(p for v, p in law.items() if v is not None)
    return {v: p / total for v, p in law.items() if v is not None}


@pytest.mark.parametrize("gamma", GAMMAS[:4] + [Fraction(1, 10**300)], ids=str)
def test_bernoulli_exp_law_by_enumeration(gamma, monkeypatch):
    _rational_coins(monkeypatch)
    law, lost = _enumerate(lambda rng: bernoulli_exp(gamma, rng))
    assert lost < 1e-8
    assert abs(law[True] - math.exp(-gamma)) <= lost + 1e-14


@pytest.mark.parametrize("gamma", [Fraction(40), Fraction(10**6, 7)], ids=str)
def test_bernoulli_exp_large_gamma_by_enumeration(gamma, monkeypatch):
    # Over coins of probability exp(-a/b), a/b <= 1 (the case enumerated above).
    monkeypatch.setattr(_discrete, "_bernoulli_exp_at_most_one",
                        lambda a, b, rng: rng.coin(math.exp(-a / b)))
    law, lost = _enumerate(lambda rng: bernoulli_exp(gamma, rng), tol=1e-30)
    assert lost < 1e-20 and law[True] <= math.exp(-gamma) + 1e-30


@pytest.mark.parametrize("scale", [Fraction(1), Fraction(3, 2), Fraction(1, 3), Fraction(7, 5),
                                   Fraction(5)], ids=str)
def test_discrete_laplace_round_law_by_enumeration(scale, monkeypatch):
    _exp_coins(monkeypatch)
    law, lost = _enumerate(
        lambda rng: _discrete._laplace_round(scale.numerator, scale.denominator, rng))
    assert lost < 1e-8
    accepted = _accepted(law)

    def pmf(z, t):
        r = math.exp(-1 / t)
        return (1 - r) / (1 + r) * r ** abs(z)

    for z in range(-6, 7):
        assert accepted.get(z, 0.0) == pytest.approx(pmf(z, scale), abs=1e-7), z
    # The law with 10% less noise is far outside the enumeration's error.
    assert abs(accepted[0] - pmf(0, scale * SMALLER)) > 1e-3


def _gaussian_pmf(sigma2, z):
    total = math.fsum(math.exp(-k * k / (2 * sigma2)) for k in range(-400, 401))
    return math.exp(-z * z / (2 * sigma2)) / total


@pytest.mark.parametrize("sigma2", [Fraction(1, 2), Fraction(2), Fraction(10)], ids=str)
def test_discrete_gaussian_round_law_by_enumeration(sigma2, monkeypatch):
    _exp_coins(monkeypatch)
    t = math.isqrt(sigma2.numerator // sigma2.denominator) + 1

    def laplace(t_, s, rng):  # the proposal's exact law (enumerated above), |y| <= 200
        r = math.exp(-s / t_)
        return rng.pick([(y, (1 - r) / (1 + r) * r ** abs(y)) for y in range(-200, 201)])

    monkeypatch.setattr(_discrete, "_discrete_laplace", laplace)
    law, lost = _enumerate(lambda rng: _discrete._gaussian_round(sigma2, t, rng))
    assert lost < 1e-8
    accepted = _accepted(law)
    for z in range(-6, 7):
        assert accepted.get(z, 0.0) == pytest.approx(_gaussian_pmf(sigma2, z), abs=1e-7), z
    assert abs(accepted[0] - _gaussian_pmf(sigma2 * SMALLER**2, 0)) > 1e-3


def test_exponential_choice_round_law_by_enumeration(monkeypatch):
    _exp_coins(monkeypatch)
    gammas = [Fraction(0), Fraction(1, 2), Fraction(2), Fraction(0), Fraction(7, 3)]
    law, lost = _enumerate(lambda rng: _discrete._choice_round(gammas, rng))
    assert lost == 0.0
    weights = [math.exp(-g) for g in gammas]
    accepted = _accepted(law)
    for i, w in enumerate(weights):
        assert accepted[i] == pytest.approx(w / math.fsum(weights), rel=1e-12)
    # A round keeps something with probability >= 1 / m.
    assert 1 - law[None] >= 1 / len(gammas)


@pytest.mark.parametrize("p", [Fraction(1, 2), Fraction(1, 10), Fraction(2, 3),
                               Fraction(1, 30)], ids=str)
def test_geometric_law_by_enumeration(p, monkeypatch):
    # Each lazy comparison is one choice point with the probability its bounds pin down
    # (to 2^-200); _bernoulli_below itself is checked by the next test.
    def coin(bounds, rng):
        lo, hi = bounds(200)
        assert hi - lo <= 4
        return rng.coin(lo / (1 << 200))

    monkeypatch.setattr(_discrete, "_bernoulli_below", coin)
    law, lost = _enumerate(lambda rng: geometric(p, rng))
    assert lost < 1e-7
    q = 1 - float(p)
    for k in range(40):
        assert abs(law.get(k, 0.0) - float(p) * q**k) <= lost + 1e-12, k
    # A stopping probability 10% too large is far outside the enumeration's error.
    assert abs(law[0] - float(p) * 1.1) > 1e-3


def test_lazy_comparison_decides_u_below_x():
    """``_bernoulli_below`` answers ``U < x`` for the uniform its bits spell out."""
    x = Fraction(1, 3)

    class Bits(NoiseSource):
        def __init__(self, words):
            super().__init__()
            self.words = iter(words)

        def randbits(self, k):
            return next(self.words) % (1 << k)

    def bounds(precision):
        return (x.numerator << precision) // x.denominator, -(-(x.numerator << precision)
                                                               // x.denominator)

    third = (1 << 64) // 3  # 0x5555...: U within 2^-64 of 1/3, undecided at 64 bits
    assert _discrete._bernoulli_below(bounds, Bits([third - 1]))
    assert not _discrete._bernoulli_below(bounds, Bits([third + 1]))
    # Undecided: the next 64 bits decide.
    assert _discrete._bernoulli_below(bounds, Bits([third, third - 1]))
    assert not _discrete._bernoulli_below(bounds, Bits([third, third + 1]))


def test_square_bounds_bracket_the_powers():
    for a, b, n_squares in [(9, 10, 0), (9, 10, 3), (2, 3, 10), (999, 1000, 11), (0, 1, 2),
                            (2**80 - 1, 2**80, 40)]:
        for precision in (8, 64, 200):
            table = _discrete._square_bounds(a, b, n_squares, precision)
            assert len(table) == n_squares + 1
            for i, (lo, hi) in enumerate(table[:12]):
                assert lo <= Fraction(a, b) ** (2**i) * (1 << precision) <= hi
            assert all(0 <= hi - lo <= 2 for lo, hi in table)


# -- chi-square tests on the seeded source ----------------------------------------------
@pytest.mark.parametrize("gamma", GAMMAS, ids=str)
def test_bernoulli_exp_frequencies_and_power(gamma):
    rng = NoiseSource.seeded(100 + int(gamma * 3))
    n = 4000 if gamma == 40 else 20000
    hits = sum(bernoulli_exp(gamma, rng) for _ in range(n))
    assert stats.binomtest(hits, n, math.exp(-gamma)).pvalue > P_THRESHOLD
    if 0 < gamma < 40:  # a gamma 10% too small (more often True) is rejected
        assert stats.binomtest(hits, n, math.exp(-gamma * SMALLER)).pvalue < P_THRESHOLD
    if gamma == 40:
        assert hits == 0  # P = 4e-18


def test_seeded_regression():
    # Pinned: these change only if an algorithm or NoiseSource.randbits/randbelow does.
    expected = {
        Fraction(0): "11111111111111111111111111111111",
        Fraction(1, 3): "10111011101011100001111011111011",
        Fraction(1): "01101110001011000011110100001010",
        Fraction(5, 2): "01000001000000000000000000000000",
        Fraction(40): "00000000000000000000000000000000",
    }
    for gamma, bits in expected.items():
        rng = NoiseSource.seeded(2026)
        assert "".join(str(int(bernoulli_exp(gamma, rng))) for _ in range(32)) == bits, gamma
    draws = {
        lambda rng: geometric(Fraction(1, 10), rng): [15, 2, 8, 4, 21, 3, 3, 2],
        lambda rng: discrete_laplace(Fraction(3, 2), rng): [0, 0, 0, 0, -3, 5, 0, 0],
        lambda rng: discrete_gaussian(Fraction(5), rng): [1, 1, -3, 0, -3, -1, 0, -1],
        lambda rng: exponential_choice([0, Fraction(1, 2), 2], rng): [2, 0, 0, 1, 0, 0, 0, 1],
    }
    for sampler, values in draws.items():
        rng = NoiseSource.seeded(2026)
        assert [sampler(rng) for _ in range(8)] == values


def test_bernoulli_rational_is_exact_and_checks_its_argument():
    rng = NoiseSource.seeded(5)
    hits = sum(bernoulli(Fraction(2, 7), rng) for _ in range(20000))
    assert stats.binomtest(hits, 20000, 2 / 7).pvalue > P_THRESHOLD
    assert not any(bernoulli(0, rng) for _ in range(100))
    assert all(bernoulli(1, rng) for _ in range(100))
    with pytest.raises(ValueError):
        bernoulli(1.5, rng)


def _geometric_pvalue(draws, p, n_bins=20):
    """Chi-square of ``G`` against ``P[G >= k] = q^k``, on equal-probability bins."""
    q = 1 - float(p)
    # Bin edges k_j = smallest k with q^k <= 1 - j / n_bins.
    edges = np.unique(np.ceil(np.log1p(-np.arange(1, n_bins) / n_bins) / math.log1p(-float(p))))
    cdf = np.concatenate([[0.0], 1 - q**edges, [1.0]])  # P[G < edge]
    observed = np.bincount(np.searchsorted(edges, draws, side="right"), minlength=cdf.size - 1)
    return stats.chisquare(observed, np.diff(cdf) * len(draws)).pvalue


@pytest.mark.parametrize("p, n", [
    (0.5, 5000), (0.1, 5000), (1e-3, 5000), (0.999, 5000),
    pytest.param(1e-9, 5000, marks=pytest.mark.slow),
    (1e-9, 1000),
], ids=str)
def test_geometric_frequencies_and_power(p, n):
    rng = NoiseSource.seeded(7)
    draws = np.array([geometric(p, rng) for _ in range(n)], dtype=float)
    assert _geometric_pvalue(draws, p) > P_THRESHOLD
    if p < 0.9 and n >= 5000:  # a stopping probability 10% too large is rejected
        assert _geometric_pvalue(draws, p * 1.1) < P_THRESHOLD


def _laplace_pvalue(draws, scale, z_max=None):
    r = math.exp(-1 / float(scale))
    if z_max is None:  # cells with at least ~5 expected draws each
        z_max = max(1, int(math.log(len(draws) * (1 - r) / 10) / -math.log(r)))
    support = np.arange(-z_max, z_max + 1)
    pmf = (1 - r) / (1 + r) * r ** np.abs(support)
    tail = r ** (z_max + 1) / (1 + r)
    observed = [np.sum(draws < -z_max), *[np.sum(draws == s) for s in support],
                np.sum(draws > z_max)]
    return stats.chisquare(observed, np.array([tail, *pmf, tail]) * len(draws)).pvalue


@pytest.mark.parametrize("scale", [
    1 / 0.3, 0.5, 40.0, 1e-3, pytest.param(1 / 0.7, marks=pytest.mark.slow)], ids=str)
def test_discrete_laplace_frequencies_and_power(scale):
    rng = NoiseSource.seeded(8)
    n = 500 if scale < 0.01 else 6000
    draws = np.array([discrete_laplace(scale, rng) for _ in range(n)])
    if scale < 0.01:  # P[Z != 0] = 2 e^-1000 / (1 + e^-1000)
        assert not draws.any()
        return
    assert _laplace_pvalue(draws, scale) > P_THRESHOLD
    assert _laplace_pvalue(draws, scale * 0.9) < P_THRESHOLD


def test_discrete_gaussian_frequencies_and_power():
    rng = NoiseSource.seeded(9)
    for sigma2 in (Fraction(3), Fraction(10**4)):
        draws = np.array([discrete_gaussian(sigma2, rng) for _ in range(3000)])
        sigma = math.sqrt(sigma2)
        # Equal-probability bins of the continuous normal, rounded to integers.
        edges = np.unique(np.round(stats.norm.ppf(np.linspace(0.05, 0.95, 10)) * sigma))

        def pvalue(s2):
            support = np.arange(-int(12 * sigma) - 1, int(12 * sigma) + 2)
            pmf = np.exp(-support.astype(float) ** 2 / (2 * float(s2)))
            pmf /= pmf.sum()
            cells = np.searchsorted(edges, support, side="right")
            expected = np.bincount(cells, weights=pmf, minlength=edges.size + 1)
            observed = np.bincount(np.searchsorted(edges, draws, side="right"),
                                   minlength=edges.size + 1)
            return stats.chisquare(observed, expected * len(draws)).pvalue

        assert pvalue(sigma2) > P_THRESHOLD
        assert pvalue(sigma2 * SMALLER**2) < P_THRESHOLD  # sigma 10% too small


def test_samplers_refuse_bad_parameters_and_numpy_generators():
    rng = NoiseSource.seeded(0)
    for call in (lambda: bernoulli_exp(-1, rng), lambda: geometric(0, rng),
                 lambda: geometric(1.5, rng), lambda: discrete_laplace(0, rng),
                 lambda: discrete_gaussian(-1, rng), lambda: bernoulli_exp(math.nan, rng),
                 lambda: discrete_laplace(math.inf, rng), lambda: exponential_choice([1], rng)):
        with pytest.raises(ValueError):
            call()
    with pytest.raises(TypeError, match="NoiseSource"):
        bernoulli_exp(1, np.random.default_rng(0))
    with pytest.raises(TypeError):
        to_fraction(True)
    assert to_fraction(0.1) == Fraction(3602879701896397, 36028797018963968)
    assert to_fraction(np.float32(0.5)) == Fraction(1, 2)
    assert geometric(1, rng) == 0


def test_randbits_and_randbelow_are_uniform():
    rng = NoiseSource.seeded(3)
    for n in (1, 3, 10, 2**40 + 1):
        values = [rng.randbelow(n) for _ in range(3000)]
        assert min(values) >= 0 and max(values) < n
        if 1 < n < 20:
            observed = np.bincount(values, minlength=n)
            assert stats.chisquare(observed).pvalue > P_THRESHOLD
    assert all(0 <= rng.randbits(5) < 32 for _ in range(100))


# -- the exponential mechanism ------------------------------------------------------------
def _exp_law(u, epsilon, sensitivity):
    logits = epsilon * np.asarray(u, dtype=float) / (2 * sensitivity)
    weights = np.exp(logits - logits.max())
    return weights / weights.sum()


def test_exponential_mechanism_law_and_power():
    u, epsilon, sensitivity = [3.0, 1.0, 0.0, 2.5, -4.0], 1.3, 1.0
    rng = NoiseSource.seeded(21)
    n = 8000
    picks = np.array([exponential_mechanism(u, epsilon, sensitivity, rng)[0]
                      for _ in range(n)])
    observed = np.bincount(picks, minlength=len(u))
    assert stats.chisquare(observed, n * _exp_law(u, epsilon, sensitivity)).pvalue > P_THRESHOLD
    # 10% less noise (epsilon / 0.9) is rejected.
    sharper = _exp_law(u, epsilon / float(SMALLER), sensitivity)
    assert stats.chisquare(observed, n * sharper).pvalue < P_THRESHOLD


def test_exponential_mechanism_draw_does_not_use_the_float_probabilities(monkeypatch):
    seen = []

    def recording(gammas, rng):
        seen.append(list(gammas))
        return 0

    import dpsk.mechanisms._noise as noise_module

    monkeypatch.setattr(noise_module, "exponential_choice", recording)
    index, p = exponential_mechanism([0.1, 0.3, -2.0], 0.7, 0.5, NoiseSource.seeded(0))
    rate = Fraction(0.7) / (2 * Fraction(0.5))
    assert seen == [[rate * (Fraction(0.3) - Fraction(v)) for v in (0.1, 0.3, -2.0)]]
    assert index == 0 and isinstance(index, int)
    np.testing.assert_allclose(p, _exp_law([0.1, 0.3, -2.0], 0.7, 0.5), rtol=1e-12)


# -- the users charge and release as before -----------------------------------------------
@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((240, 3))
    X /= np.linalg.norm(X, axis=1, keepdims=True).max()
    y = (X[:, 0] + 0.2 * rng.standard_normal(240) > 0).astype(int)
    return X, y


@pytest.mark.parametrize("method", ["disjoint", "random-stopping"])
def test_search_charges_and_releases_alike_on_neighbours(data, method):
    X, y = data
    X2, y2 = X.copy(), y.copy()
    y2[0] = 1 - y2[0]  # neighbour: one label changed
    seen = []
    for X_, y_ in ((X, y), (X2, y2)):
        for _ in range(3):
            acc = BudgetAccountant()
            search = DPGridSearch(DPLogisticRegression(classes=[0, 1]),
                                  {"alpha": [0.01, 0.1, 1.0]}, epsilon=0.9, method=method,
                                  stop_probability=0.3, accountant=acc).fit(X_, y_)
            assert acc.spends == [(0.9, 0.0)] and search.privacy_spent_ == (0.9, 0.0)
            assert isinstance(search.best_index_, int) and 0 <= search.best_index_ < 3
            seen.append((sorted(vars(search)), type(getattr(search, "best_score_", None))))
    assert all(s == seen[0] for s in seen)
    # Seeded: reproducible (test mode).
    runs = [DPGridSearch(DPLogisticRegression(classes=[0, 1]), {"alpha": [0.01, 0.1, 1.0]},
                         epsilon=0.9, method=method, stop_probability=0.3,
                         random_state=4).fit(X, y) for _ in range(2)]
    assert runs[0].best_index_ == runs[1].best_index_
    np.testing.assert_array_equal(runs[0].best_estimator_.coef_, runs[1].best_estimator_.coef_)


def test_vote_charges_and_answers_alike_on_neighbours(data):
    X, y = data
    X2, y2 = X.copy(), y.copy()
    y2[0] = 1 - y2[0]
    queries = np.random.default_rng(1).normal(size=(5, 3))
    seen = []
    for X_, y_ in ((X, y), (X2, y2)):
        acc = BudgetAccountant()
        ens = DPPredictionEnsemble(LogisticRegression(), epsilon=0.5, n_teachers=6,
                                   classes=[0, 1], accountant=acc).fit(X_, y_)
        answers = ens.predict(queries)
        assert set(answers) <= {0, 1}
        seen.append((acc.spends, answers.dtype, answers.shape, sorted(vars(ens))))
    assert seen[0] == seen[1]
    assert seen[0][0] == [(0.5, 0.0)] * 5
