"""Exact discrete samplers: integer arithmetic on uniform random bits, no floating point.

A sampler here draws from exactly the law it documents: every parameter is a
rational number (a float converts exactly, ``fractions.Fraction(0.1)`` is the
binary value of ``0.1``, not ``1/10``), every comparison is between integers,
and the only randomness is :meth:`NoiseSource.randbits` and
:meth:`NoiseSource.randbelow`, which return exactly uniform integers. So the
probability of every output is the one the privacy proof uses, with no
truncated tail and no rounding; there is no ``delta`` to charge for them.

* :func:`bernoulli` -- Bernoulli(p) for rational p;
* :func:`bernoulli_exp` -- Bernoulli(exp(-gamma)) for rational ``gamma >= 0``
  (Canonne, Kamath and Steinke 2020, Algorithm 1);
* :func:`geometric` -- failures before the first success of Bernoulli(p) coins,
  rational p, in time logarithmic in ``1 / p`` (its binary digits are independent);
* :func:`discrete_laplace` -- ``P[Z = z]`` proportional to ``exp(-|z| / t)`` for
  rational ``t > 0`` (Canonne, Kamath and Steinke 2020, Algorithm 2);
* :func:`discrete_laplace_vector` -- many independent draws of
  :func:`discrete_laplace`'s law at once, the same algorithm run in numpy;
* :func:`discrete_gaussian` -- ``P[Z = z]`` proportional to ``exp(-z^2 / (2 sigma^2))``
  for rational ``sigma^2 > 0`` (Canonne, Kamath and Steinke 2020, Algorithm 3);
* :func:`exponential_choice` -- index ``i`` with probability proportional to
  ``exp(-gamma_i)`` (the exponential mechanism), by exact rejection.

Reference: C. Canonne, G. Kamath and T. Steinke (2020), "The Discrete Gaussian
for Differential Privacy", NeurIPS (arXiv 2004.00010), Section 5. The
derivations are in ``docs/privacy.rst`` (section "Exact discrete samplers").

The running time of every sampler is random and, for the exponential mechanism,
depends on the private utilities: like the solvers, these samplers do not hide
their timing.
"""

import math
from fractions import Fraction
from numbers import Integral, Rational

import numpy as np

from ._random import NoiseSource

__all__ = [
    "to_fraction",
    "bernoulli",
    "bernoulli_exp",
    "geometric",
    "discrete_laplace",
    "discrete_laplace_vector",
    "discrete_gaussian",
    "exponential_choice",
]

# Bits of the first look at a uniform in the lazy comparisons of ``_bernoulli_below``;
# each further look doubles them.
_FIRST_BITS = 64


def _check_source(rng):
    # The same rule as the continuous mechanisms: privacy noise only from a
    # NoiseSource, never from a replayable numpy generator.
    if not isinstance(rng, NoiseSource):
        raise TypeError(
            "Privacy noise must come from a dpsk.mechanisms._random.NoiseSource, got "
            f"{type(rng).__name__}."
        )


def to_fraction(value, name="value"):
    """The exact rational value of a finite int, float or Fraction.

    Floats (including numpy floats) convert without rounding: the binary
    value of the float is a dyadic rational. Refuses bools, NaN and infinities.

    Parameters
    ----------
    value : int, float or fractions.Fraction
    name : str
        Used in the error message.

    Returns
    -------
    fraction : fractions.Fraction
    """
    if isinstance(value, bool):
        raise TypeError(f"{name} must be a number, not a bool.")
    if isinstance(value, Rational):
        return Fraction(value)
    try:
        as_float = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}.") from None
    if not math.isfinite(as_float) or as_float != value:
        raise ValueError(f"{name} must be a finite real number.")
    return Fraction(as_float)


def bernoulli(p, rng):
    """Bernoulli(p) for a rational ``p`` in [0, 1], exactly: ``randbelow(den) < num``.

    Guarantee: returns True with probability exactly ``p`` (``p = a / b`` in
    lowest terms, ``randbelow(b)`` is uniform on ``{0, ..., b - 1}``, and
    exactly ``a`` of its values are below ``a``).

    Parameters
    ----------
    p : int, float or Fraction
        In [0, 1].
    rng : NoiseSource

    Returns
    -------
    bool
    """
    p = to_fraction(p, "p")
    if not 0 <= p <= 1:
        raise ValueError("p must be in [0, 1].")
    _check_source(rng)
    return _bernoulli(p.numerator, p.denominator, rng)


def _bernoulli(numerator, denominator, rng):
    return rng.randbelow(denominator) < numerator


def bernoulli_exp(gamma, rng):
    """Bernoulli(exp(-gamma)) for a rational ``gamma >= 0``, exactly.

    Guarantee: returns True with probability exactly ``exp(-gamma)``, using
    only Bernoulli draws of rational probability (Canonne, Kamath and Steinke
    2020, Algorithm 1). For ``gamma <= 1``: draw Bernoulli(gamma / k) for
    k = 1, 2, ... until the first failure, at step ``K``; then ``P[K > k] =
    gamma^k / k!`` and ``P[K odd] = sum_j (-gamma)^j / j! = exp(-gamma)``. For
    ``gamma > 1``: ``exp(-gamma) = exp(-1)^floor(gamma) exp(-(gamma -
    floor(gamma)))``, a product of independent draws, stopping at the first
    failure. Expected cost: at most ``e`` rational Bernoulli draws for
    ``gamma <= 1``, and at most ``1 / (1 - exp(-1)) + 1`` draws of
    Bernoulli(exp(-1)) otherwise, however large ``gamma``.

    Parameters
    ----------
    gamma : int, float or Fraction
        >= 0 and finite.
    rng : NoiseSource

    Returns
    -------
    bool
    """
    gamma = to_fraction(gamma, "gamma")
    if gamma < 0:
        raise ValueError("gamma must be >= 0.")
    _check_source(rng)
    return _bernoulli_exp(gamma, rng)


def _bernoulli_exp(gamma, rng):
    whole = gamma.numerator // gamma.denominator
    for _ in range(whole):
        if not _bernoulli_exp_at_most_one(1, 1, rng):
            return False
    rest = gamma - whole
    return _bernoulli_exp_at_most_one(rest.numerator, rest.denominator, rng)


def _bernoulli_exp_at_most_one(numerator, denominator, rng):
    """Bernoulli(exp(-a / b)) for ``0 <= a / b <= 1`` (Algorithm 1, first branch)."""
    k = 1
    while _bernoulli(numerator, denominator * k, rng):  # Bernoulli(gamma / k)
        k += 1
    return k % 2 == 1


def _bernoulli_below(bounds, rng):
    """True with probability ``x``, for an ``x`` in [0, 1] known through bounds.

    ``bounds(P)`` returns integers ``lo <= 2^P x <= hi``, with ``hi - lo``
    bounded as ``P`` grows. A uniform ``U`` on [0, 1) is revealed ``P`` bits at
    a time: it lies in ``[u / 2^P, (u + 1) / 2^P)``; ``U < x`` is certain when
    ``u + 1 <= lo`` and ``U >= x`` when ``u >= hi``; otherwise more bits of
    ``U`` are drawn and the bounds are recomputed at the new precision. The
    answer is the exact event ``U < x``, of probability ``x``; a further look
    happens with probability at most ``(hi - lo) / 2^P``.
    """
    precision = _FIRST_BITS
    u = rng.randbits(precision)
    while True:
        lo, hi = bounds(precision)
        if u + 1 <= lo:
            return True
        if u >= hi:
            return False
        u = (u << precision) | rng.randbits(precision)
        precision *= 2


def _square_bounds(numerator, denominator, n_squares, precision):
    """Bounds ``lo[i] <= 2^P (a / b)^(2^i) <= hi[i]`` for ``i <= n_squares``, ``0 <= a <= b``.

    Repeated squaring in fixed point with ``P + g`` fractional bits; lower
    bounds round down, upper bounds round up, and squaring is monotone on
    non-negative numbers, so the bounds hold. An error ``e`` in ``x`` becomes
    at most ``2 e`` in ``x^2`` (``x <= 1``) plus one rounding unit, so after
    ``i`` squarings the gap is below ``2^(i + 1)`` units: ``g = n_squares + 3``
    guard bits keep it below 1 at precision ``P`` (2 after the final rounding).
    """
    guard = n_squares + 3
    scale = precision + guard
    lo = (numerator << scale) // denominator
    hi = -((-numerator << scale) // denominator)
    bounds = []
    for i in range(n_squares + 1):
        if i:
            lo = (lo * lo) >> scale
            hi = -((-(hi * hi)) >> scale)
        bounds.append((lo >> guard, -((-hi) >> guard)))
    return bounds


def geometric(p, rng):
    """``G >= 0`` with ``P[G = k] = p (1 - p)^k`` exactly, for a rational ``p`` in (0, 1].

    The number of failures before the first success of independent
    Bernoulli(p) coins; ``P[G >= k] = q^k`` with ``q = 1 - p``.

    Guarantee: the law is exact. ``P[G = k]`` is proportional to ``q^k =
    prod_i (q^(2^i))^(b_i)`` over the binary digits ``b_i`` of ``k``: a product
    form, so the digits are independent, digit ``i`` being 1 with probability
    ``q^(2^i) / (1 + q^(2^i))``. With ``n = 2^L``, ``G = n H + R``: the high
    part ``H`` is geometric with ratio ``q^n`` (drawn as coins of probability
    ``q^n``), the low part ``R`` has ``L`` independent digits. Each coin
    compares a uniform, revealed bit by bit, with interval bounds on the
    rational ``q^(2^i)`` (:func:`_bernoulli_below`), so the probabilities are
    exact although ``q^(2^i)`` itself is never written out. This is the
    digit decomposition used by Bringmann and Friedrich (2013), "Exact and
    efficient generation of geometric random variates"; ``L`` is chosen so that
    ``q^n`` is about 1/2, giving ``O(log(1 / p))`` coins in expectation.

    Parameters
    ----------
    p : int, float or Fraction
        Success probability in (0, 1].
    rng : NoiseSource

    Returns
    -------
    int
    """
    p = to_fraction(p, "p")
    if not 0 < p <= 1:
        raise ValueError("p must be in (0, 1].")
    _check_source(rng)
    q = 1 - p
    if q == 0:
        return 0
    n_digits = _low_digits(p)
    tables = {}  # this draw's bounds on q^(2^i), one table per precision looked at

    def power(i, precision):
        if precision not in tables:
            tables[precision] = _square_bounds(q.numerator, q.denominator, n_digits, precision)
        return tables[precision][i]

    high = 0
    while _bernoulli_below(lambda P: power(n_digits, P), rng):
        high += 1
    low = 0
    for i in range(n_digits):
        if _bernoulli_below(lambda P, i=i: _ratio_bounds(power(i, P), P), rng):
            low |= 1 << i
    return (high << n_digits) | low


def _low_digits(p):
    """``L`` with ``(1 - p)^(2^L)`` near 1/2: public, and only the cost depends on it."""
    as_float = float(p)
    if as_float == 0.0:  # below float range: 2^L >= 1 / p gives q^(2^L) <= 1 / e
        return p.denominator.bit_length() - p.numerator.bit_length() + 1
    rate = -math.log1p(-as_float)  # -ln q
    if rate >= math.log(2):
        return 0
    return math.ceil(math.log2(math.log(2) / rate))


def _ratio_bounds(y_bounds, precision):
    """Integers ``lo <= 2^P y / (1 + y) <= hi`` from ``y_lo <= 2^P y <= y_hi`` (increasing)."""
    y_lo, y_hi = y_bounds
    one = 1 << precision
    return (y_lo << precision) // (one + y_lo), -((-(y_hi << precision)) // (one + y_hi))


def discrete_laplace(scale, rng):
    """``Z`` on the integers with ``P[Z = z]`` proportional to ``exp(-|z| / t)``, exactly.

    Guarantee (Canonne, Kamath and Steinke 2020, Algorithm 2): the law is
    exact for every rational scale ``t = num / den > 0``. The sampler draws
    ``X >= 0`` with ``P[X = x]`` proportional to ``exp(-x / num)`` as ``X = U
    + num V`` (``U`` uniform below ``num``, kept with probability ``exp(-U /
    num)``; ``V`` geometric with ratio ``exp(-1)``), so ``Y = floor(X / den)``
    has ``P[Y = y]`` proportional to ``exp(-y den / num) = exp(-y / t)``;
    then a fair sign, rejecting the negative zero so that 0 is not counted
    twice. With ``t = 1 / epsilon`` this is the geometric mechanism (Ghosh,
    Roughgarden and Sundararajan 2009): adding it to an integer of sensitivity
    1 is ``epsilon``-DP.

    Parameters
    ----------
    scale : int, float or Fraction
        ``t > 0`` and finite.
    rng : NoiseSource

    Returns
    -------
    int
    """
    scale = to_fraction(scale, "scale")
    if not scale > 0:
        raise ValueError("scale must be > 0.")
    _check_source(rng)
    return _discrete_laplace(scale.numerator, scale.denominator, rng)


def _discrete_laplace(t, s, rng):
    """Algorithm 2 of Canonne, Kamath and Steinke (2020): scale ``t / s``."""
    while True:
        z = _laplace_round(t, s, rng)
        if z is not None:
            return z


def _laplace_round(t, s, rng):
    """One round of Algorithm 2: a draw with the target law, or None (rejected)."""
    u = rng.randbelow(t)
    if not _bernoulli_exp_at_most_one(u, t, rng):
        return None
    v = 0
    while _bernoulli_exp_at_most_one(1, 1, rng):
        v += 1
    y = (u + t * v) // s
    negative = rng.randbits(1) == 1
    if negative and y == 0:
        return None  # -0 would count zero twice
    return -y if negative else y


#: Largest numerator or denominator of the scale the numpy path of
#: :func:`discrete_laplace_vector` takes: every integer it forms is then below 2^63.
_VECTOR_LIMIT = 1 << 61


def discrete_laplace_vector(scale, size, rng):
    """``size`` independent draws of :func:`discrete_laplace`'s law, in numpy.

    Guarantee: each entry has exactly the law ``P[Z = z]`` proportional to
    ``exp(-|z| / t)`` for the rational scale ``t = num / den > 0``, and the
    entries are independent. It is Algorithm 2 of Canonne, Kamath and Steinke
    (2020), the algorithm of :func:`discrete_laplace`, run on whole arrays:
    every pending entry plays one round at a time, and the entries a round
    rejects play the next one. A round draws ``U`` uniform below ``num``,
    keeps it with probability ``exp(-U / num)``, draws ``V`` geometric with
    ratio ``exp(-1)``, sets ``Y = floor((U + num V) / den)`` and a fair sign,
    rejecting the negative zero; rounds are independent, so an entry's first
    accepted round has the target law (the derivation is in ``docs/privacy.rst``,
    "Exact discrete samplers").

    Each Bernoulli(exp(-gamma)) with ``gamma = a / b <= 1`` is Algorithm 1: the
    number ``k`` of the first failed Bernoulli(gamma / k) coin, accepted when
    ``k`` is odd. The coin of probability ``a / (b k)`` is drawn as the product
    of two independent exact coins, ``a / b`` (a uniform integer below ``b``
    compared with ``a``) and ``1 / k`` (a uniform integer below ``k`` equal to
    0): the same probability, with integers no larger than ``max(b, k)``.
    Uniform integers below ``m`` come from one or two 32-bit words of
    :meth:`NoiseSource.words` by exact rejection (the low ``bit_length(m - 1)``
    bits, redrawn while ``>= m``). Entries whose ``num V`` would not fit in 64
    bits (a geometric tail of probability below ``2^-40`` for the scales used
    here) finish the same arithmetic in Python integers, and a scale whose
    numerator or denominator exceeds ``2^61`` takes the scalar sampler for
    every entry: the law never depends on which path ran.

    Parameters
    ----------
    scale : int, float or Fraction
        ``t > 0`` and finite.
    size : int
        Number of draws, >= 0.
    rng : NoiseSource

    Returns
    -------
    draws : ndarray of shape (size,)
        int64, or dtype object (Python ints) in the astronomically rare case
        that a draw does not fit in 64 bits.
    """
    scale = to_fraction(scale, "scale")
    if not scale > 0:
        raise ValueError("scale must be > 0.")
    if not isinstance(size, Integral) or isinstance(size, bool) or size < 0:
        raise ValueError("size must be an int >= 0.")
    _check_source(rng)
    size = int(size)
    t, s = scale.numerator, scale.denominator
    if t > _VECTOR_LIMIT or s > _VECTOR_LIMIT:
        return _as_int_array([_discrete_laplace(t, s, rng) for _ in range(size)])
    out = np.zeros(size, dtype=np.int64)
    big = {}  # index -> a draw beyond int64 (Python int), almost never used
    pending = np.arange(size)
    while pending.size:
        accepted, values, large = _laplace_rounds(t, s, pending.size, rng)
        done = pending[accepted]
        out[done] = values
        big.update((int(done[i]), value) for i, value in large.items())
        pending = pending[~accepted]
    if not big:
        return out
    out = out.astype(object)
    for i, value in big.items():
        out[i] = value
    return _as_int_array(out)


def _as_int_array(values):
    values = [int(v) for v in values]
    if all(-(1 << 63) <= v < (1 << 63) for v in values):
        return np.array(values, dtype=np.int64).reshape(len(values))
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def _laplace_rounds(t, s, count, rng):
    """One round of Algorithm 2 for ``count`` entries.

    Returns the mask of accepted entries, their values (int64, 0 where a value
    is kept in Python integers instead) and ``{entry: value}`` for the values
    computed in Python integers.
    """
    u = _uniform_below(t, count, rng)
    keep = _bernoulli_exp_vector(u, t, rng)
    u = u[keep]
    v = _geometric_exp_minus_one(u.size, rng)
    negative = _uniform_below(2, u.size, rng) == 1
    # U + t V < 2^63 on the numpy path; beyond it, exact Python integers.
    safe = v <= np.uint64(((1 << 63) - 1 - t) // t)
    y = np.zeros(u.size, dtype=np.int64)
    y[safe] = ((u[safe] + np.uint64(t) * v[safe]) // np.uint64(s)).astype(np.int64)
    exact = {int(i): (int(u[i]) + t * int(v[i])) // s for i in np.flatnonzero(~safe)}
    zero = (y == 0) & safe
    for i, value in exact.items():
        zero[i] = value == 0
    fine = ~(negative & zero)  # -0 would count zero twice: reject the round
    y = np.where(negative, -y, y)
    for i in exact:
        exact[i] = -exact[i] if negative[i] else exact[i]
    accepted = np.zeros(count, dtype=bool)
    kept = np.flatnonzero(keep)
    accepted[kept[fine]] = True
    # Position of each accepted entry among the accepted ones, for the Python values.
    rank = np.cumsum(fine) - 1
    large = {}
    for i, value in exact.items():
        if fine[i]:
            large[int(rank[i])] = value
    return accepted, y[fine], large


def _uniform_below(m, count, rng):
    """``count`` independent uniform integers in ``[0, m)`` (uint64), ``1 <= m <= 2^62``."""
    bits = (m - 1).bit_length()
    out = np.zeros(count, dtype=np.uint64)
    if bits == 0 or count == 0:
        return out
    mask = np.uint64((1 << bits) - 1)
    limit = np.uint64(m)
    todo = np.arange(count)
    while todo.size:
        if bits <= 32:  # one word per draw
            draws = rng.words(todo.size).astype(np.uint64) & mask
        else:
            words = rng.words(2 * todo.size).astype(np.uint64)
            draws = (words[0::2] | (words[1::2] << np.uint64(32))) & mask
        ok = draws < limit
        out[todo[ok]] = draws[ok]
        todo = todo[~ok]
    return out


def _bernoulli_exp_vector(a, b, rng):
    """Bernoulli(exp(-a_i / b)) for uint64 ``0 <= a_i <= b``, by Algorithm 1 in lockstep.

    Entry ``i`` draws Bernoulli(a_i / (b k)) for ``k = 1, 2, ...`` until the first
    failure and is accepted when that ``k`` is odd; every entry still running
    at step ``k`` shares the same ``k``.
    """
    result = np.zeros(a.size, dtype=bool)
    running = np.arange(a.size)
    k = 1
    while running.size:
        coin = _uniform_below(b, running.size, rng) < a[running]
        if k > 1:
            coin &= _uniform_below(k, running.size, rng) == 0
        stopped = running[~coin]
        result[stopped] = k % 2 == 1
        running = running[coin]
        k += 1
    return result


def _geometric_exp_minus_one(count, rng):
    """``count`` draws of ``V``: the successes of Bernoulli(exp(-1)) coins before a failure."""
    v = np.zeros(count, dtype=np.uint64)
    running = np.arange(count)
    while running.size:
        success = _bernoulli_exp_vector(np.ones(running.size, dtype=np.uint64), 1, rng)
        v[running[success]] += np.uint64(1)
        running = running[success]
    return v


def discrete_gaussian(sigma2, rng):
    """``Z`` on the integers with ``P[Z = z]`` proportional to ``exp(-z^2 / (2 sigma^2))``.

    Guarantee (Canonne, Kamath and Steinke 2020, Algorithm 3): the law is exact
    for every rational ``sigma^2 > 0``. A discrete Laplace proposal ``Y`` of
    scale ``t = floor(sigma) + 1`` is accepted with probability ``exp(-(|Y| -
    sigma^2 / t)^2 / (2 sigma^2))``; the proposal's ``exp(-|y| / t)`` times the
    acceptance is ``exp(-y^2 / (2 sigma^2))`` times a constant, by completing
    the square. The expected number of proposals is below 2 (their Section 5.3)
    for every ``sigma``.

    Parameters
    ----------
    sigma2 : int, float or Fraction
        The variance parameter ``sigma^2 > 0``, finite.
    rng : NoiseSource

    Returns
    -------
    int
    """
    sigma2 = to_fraction(sigma2, "sigma2")
    if not sigma2 > 0:
        raise ValueError("sigma2 must be > 0.")
    _check_source(rng)
    # floor(sqrt(x)) = isqrt(floor(x)) for x >= 0; any t >= 1 is exact, this one is fast.
    t = math.isqrt(sigma2.numerator // sigma2.denominator) + 1
    while True:
        y = _gaussian_round(sigma2, t, rng)
        if y is not None:
            return y


def _gaussian_round(sigma2, t, rng):
    """One round of Algorithm 3: a discrete Laplace proposal, kept or rejected (None)."""
    y = _discrete_laplace(t, 1, rng)
    if _bernoulli_exp((abs(y) - sigma2 / t) ** 2 / (2 * sigma2), rng):
        return y
    return None


def exponential_choice(gammas, rng):
    """Index ``i`` with probability proportional to ``exp(-gamma_i)``, exactly.

    Guarantee: for rational ``gamma_i >= 0`` with ``min_i gamma_i = 0``, the
    index has exactly the law ``exp(-gamma_i) / sum_j exp(-gamma_j)``.
    Rejection: propose ``i`` uniformly (``randbelow``), accept with
    probability ``exp(-gamma_i)`` (:func:`bernoulli_exp`). One round accepts
    ``i`` with probability ``exp(-gamma_i) / m``, proportional to the target,
    and rounds are independent, so the accepted index has the target law. A
    round accepts with probability at least ``1 / m`` (the index with
    ``gamma = 0`` is always kept), so at most ``m`` rounds are expected. With
    ``gamma_i = eps (u_max - u_i) / (2 sens)`` this is the exponential
    mechanism of McSherry and Talwar (2007).

    Parameters
    ----------
    gammas : sequence of Fraction
        ``m >= 1`` non-negative rationals, at least one of them 0.
    rng : NoiseSource

    Returns
    -------
    int
    """
    gammas = [to_fraction(g, "gamma") for g in gammas]
    if not gammas or min(gammas) != 0:
        raise ValueError("gammas must be non-negative with minimum 0.")
    _check_source(rng)
    while True:
        i = _choice_round(gammas, rng)
        if i is not None:
            return i


def _choice_round(gammas, rng):
    """One round: a uniform proposal, kept with probability ``exp(-gamma_i)``, or None."""
    i = rng.randbelow(len(gammas))
    return i if _bernoulli_exp(gammas[i], rng) else None
