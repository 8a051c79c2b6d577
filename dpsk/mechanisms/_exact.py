"""Exact continuous deviates as lazily refined reals ("u-rands").

A u-rand is a real number in ``[0, 1)`` of which only a prefix of binary digits
has been drawn: ``(p + U) / 2^n`` with ``p`` the ``n`` digits drawn so far and
``U`` uniform on ``[0, 1)`` and independent of everything drawn. Comparing two
u-rands draws further digits of both until they differ; nothing else is ever
read from a u-rand's digits. Every decision the algorithms below take is
therefore a function of drawn digits only, so, given the whole history of a
draw, the digits not yet drawn are still independent uniform bits: the deviate
returned is ``integer + u-rand``, and appending fresh random digits to it at any
later time (to decide which release-grid cell it falls in, for instance)
continues *the same exact draw*.

* :func:`exact_exponential` is von Neumann's (1951) method: a uniform ``x`` is
  accepted when the longest decreasing run ``x > z1 > z2 > ...`` of fresh
  uniforms has even length, which happens with probability ``exp(-x)``;
  every rejection adds 1 to the integer part.
* :func:`exact_normal` is Algorithm N of Karney (2016), "Sampling exactly from
  the normal distribution", ACM TOMS 42(1), with his Algorithms H and B
  written out in :func:`_bernoulli_exp_half` and :func:`_bernoulli_b`.

``docs/privacy.rst`` ("Exact noise") derives both laws. Randomness is read
only through :meth:`dpsk.mechanisms._random.NoiseSource.randbits`, in blocks
held by a :class:`BitStream` that lives for one draw and is then dropped.
"""

__all__ = ["BitStream", "URand", "less", "exact_normal", "exact_exponential", "CHUNK"]

#: Digits drawn at a time when a comparison needs more: two fresh u-rands agree
#: on a chunk with probability 2^-32, so one chunk almost always decides.
CHUNK = 32

# Bits read from the NoiseSource at a time (one os.urandom call per block).
_BLOCK = 512


class BitStream:
    """Uniform random bits from a :class:`~dpsk.mechanisms._random.NoiseSource`.

    Reads ``_BLOCK`` bits at a time through ``rng.randbits`` and hands them out
    in order, so a seeded source gives the same digits on every run. It holds
    unread bits only while one draw is being made: the samplers create one per
    call and drop it, and it is never pickled or stored.
    """

    __slots__ = ("_rng", "_buffer", "_count")

    def __init__(self, rng):
        self._rng = rng
        self._buffer = 0
        self._count = 0

    def take(self, k):
        """A uniform integer in ``[0, 2^k)``."""
        while self._count < k:
            self._buffer |= self._rng.randbits(_BLOCK) << self._count
            self._count += _BLOCK
        value = self._buffer & ((1 << k) - 1)
        self._buffer >>= k
        self._count -= k
        return value

    def below(self, m):
        """A uniform integer in ``[0, m)`` for ``m >= 1``, by exact rejection."""
        k = (m - 1).bit_length()
        while True:
            value = self.take(k)
            if value < m:
                return value


class URand:
    """A real ``(p + U) / 2^n`` in ``[0, 1)`` whose first ``n`` binary digits are ``p``."""

    __slots__ = ("p", "n")

    def __init__(self, p=0, n=0):
        self.p = p
        self.n = n

    def extend(self, n, bits):
        """Draw digits until ``n`` are known (no-op when already known)."""
        if n > self.n:
            extra = n - self.n
            self.p = (self.p << extra) | bits.take(extra)
            self.n = n

    def __repr__(self):
        return f"URand(p={self.p}, n={self.n})"


def less(a, b, bits):
    """``a < b`` for two u-rands, drawing digits of both until their prefixes differ.

    Prefixes of the same length ``n`` that differ put the two reals in disjoint
    intervals ``[p/2^n, (p+1)/2^n)``, so the answer does not depend on any digit
    not drawn. Equal reals have probability zero.
    """
    n = max(a.n, b.n, CHUNK)
    while True:
        a.extend(n, bits)
        b.extend(n, bits)
        if a.p != b.p:
            return a.p < b.p
        n += CHUNK


def _fresh_below(previous, bits):
    """A fresh u-rand ``z`` and whether ``z < previous`` (``None``: the constant 1/2).

    The common case, ``previous`` known to exactly one chunk, compares one
    chunk of ``z`` without building the general comparison; it is the same
    comparison as :func:`less`, which takes over on a tie.
    """
    if previous is None:
        z = URand(bits.take(CHUNK), CHUNK)
        return z, (z.p >> (CHUNK - 1)) == 0
    if previous.n == CHUNK:
        p = bits.take(CHUNK)
        if p != previous.p:
            return URand(p, CHUNK), p < previous.p
        z = URand(p, CHUNK)
    else:
        z = URand()
    return z, less(z, previous, bits)


def _decreasing_run_is_even(start, bits, extra=None):
    """Whether the longest run ``start > z1 > z2 > ...`` of fresh u-rands is even.

    ``start`` is a u-rand (refined in place by the comparisons), or None for the
    constant 1/2. ``extra()``, when given, is a further independent event each
    step must also pass (Karney's Algorithm B). The run reaches length ``m``
    with probability ``s^m q^m / m!`` (``s`` the start, ``q`` the probability
    of ``extra``), so it stops at an even length with probability
    ``sum_m (-1)^m (s q)^m / m! = exp(-s q)``.
    """
    length = 0
    previous = start
    while True:
        z, below = _fresh_below(previous, bits)
        if not below or (extra is not None and not extra()):
            return length % 2 == 0
        previous = z
        length += 1


def _bernoulli_exp_half(bits):
    """True with probability ``exp(-1/2)`` (Karney's Algorithm H)."""
    return _decreasing_run_is_even(None, bits)


def _bernoulli_b(k, x, bits):
    """True with probability ``exp(-x (2k + x) / (2k + 2))`` (Karney's Algorithm B).

    The run of :func:`_decreasing_run_is_even` from ``x`` with, at each step,
    an independent event of probability ``q = (2k + x) / (2k + 2)``: a uniform
    ``v`` written as ``(f + r) / (2k + 2)`` with ``f`` uniform in ``[0, 2k +
    2)`` and ``r`` a fresh u-rand, and ``v < q`` exactly when ``f < 2k`` or
    ``f = 2k`` and ``r < x``.
    """
    m = 2 * k + 2

    def below_q():
        f = bits.below(m)
        if f < 2 * k:
            return True
        return f == 2 * k and less(URand(), x, bits)

    return _decreasing_run_is_even(x, bits, below_q)


def exact_normal(bits):
    """An exact standard normal deviate ``sign * (k + x)`` (Karney 2016, Algorithm N).

    1. ``k >= 0`` with probability ``exp(-k/2) (1 - exp(-1/2))``: count the
       successes of Algorithm H before its first failure;
    2. accept ``k`` with probability ``exp(-k (k - 1) / 2)``: ``k (k - 1)``
       successes of H in a row;
    3. draw a u-rand ``x`` and accept with probability ``exp(-x (2k + x) /
       2)``: ``k + 1`` successes of Algorithm B;
    4. a fair sign.

    Steps 1-3 accept ``k + x`` with probability proportional to ``exp(-k/2 -
    k (k - 1)/2 - x (2k + x)/2) = exp(-(k + x)^2 / 2)``; any rejection starts
    again at step 1.

    Returns
    -------
    negative : bool
    k : int
    x : URand
        The fraction; its undrawn digits are fresh uniform bits.
    """
    while True:
        k = 0
        while _bernoulli_exp_half(bits):
            k += 1
        if not all(_bernoulli_exp_half(bits) for _ in range(k * (k - 1))):
            continue
        x = URand()
        if all(_bernoulli_b(k, x, bits) for _ in range(k + 1)):
            return bool(bits.take(1)), k, x


def exact_exponential(bits):
    """An exact Exponential(1) deviate ``k + x`` (von Neumann 1951).

    A u-rand ``x`` is accepted with probability ``exp(-x)`` (an even longest
    decreasing run from ``x``); each rejection, of probability ``1 - (1 -
    e^-1) = e^-1``, adds one to ``k``. So ``k`` is geometric with ``P(k) =
    e^-k (1 - e^-1)`` and ``x``, independent, has density ``e^-x / (1 -
    e^-1)`` on ``[0, 1)``: ``k + x`` has density ``e^-(k + x)``.

    Returns
    -------
    k : int
    x : URand
    """
    k = 0
    while True:
        x = URand()
        if _decreasing_run_is_even(x, bits):
            return k, x
        k += 1
