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

import numpy as np

__all__ = ["BitStream", "URand", "less", "exact_normal", "exact_exponential", "CHUNK",
           "WordStream", "normal_trial", "exponential_trial", "normal_trials",
           "exponential_trials", "NORMAL_WORDS", "EXPONENTIAL_WORDS"]

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

    @property
    def source(self):
        """The :class:`~dpsk.mechanisms._random.NoiseSource` the bits come from."""
        return self._rng

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


def _below_q(k, x, bits):
    """True with probability ``q = (2k + x) / (2k + 2)``: a fresh uniform ``v`` has
    ``(2k + 2) v < 2k + x``.

    With ``n`` digits of ``v`` and ``x``, ``2^n (2k + 2) v`` lies in ``[(2k + 2) p_v,
    (2k + 2)(p_v + 1))`` and ``2^n (2k + x)`` in ``[2^n 2k + p_x, 2^n 2k + p_x + 1)``;
    disjoint intervals decide the comparison, otherwise both draw ``CHUNK`` more
    digits. Only the comparison is read from the digits, so ``x`` stays a u-rand.
    """
    m = 2 * k + 2
    v = URand()
    n = max(x.n, CHUNK)
    while True:
        v.extend(n, bits)
        x.extend(n, bits)
        low = v.p * m
        offset = (2 * k << n) + x.p
        if low + m <= offset:
            return True
        if low >= offset + 1:
            return False
        n += CHUNK


def _bernoulli_b(k, x, bits):
    """True with probability ``exp(-x (2k + x) / (2k + 2))`` (Karney's Algorithm B).

    The run of :func:`_decreasing_run_is_even` from ``x`` with, at each step,
    an independent event of probability ``q = (2k + x) / (2k + 2)``
    (:func:`_below_q`; Karney draws ``v`` as ``(f + r) / (2k + 2)``, here ``v`` is
    a u-rand compared with ``q`` directly, the same event). Every read is a
    whole 32-bit word: step ``s`` reads ``z_s`` and, when ``z_s`` is below the
    previous element, ``v_s``.
    """
    length = 0
    previous = x
    while True:
        z = URand(bits.take(CHUNK), CHUNK)
        if not less(z, previous, bits) or not _below_q(k, x, bits):
            return length % 2 == 0
        previous = z
        length += 1


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
        out = normal_trial(bits)
        if out is not None:
            return out


def normal_trial(bits):
    """One trial of Algorithm N: ``(negative, k, x)``, or None when it rejects.

    Steps 1-4 of :func:`exact_normal` once; ``x`` takes its first word when
    drawn and the sign is the lowest digit of one word, so every read is a whole
    32-bit word (what lets :func:`normal_trials` read words by index).
    """
    k = 0
    while _bernoulli_exp_half(bits):
        k += 1
    for _ in range(k * (k - 1)):
        if not _bernoulli_exp_half(bits):
            return None
    x = URand(bits.take(CHUNK), CHUNK)
    for _ in range(k + 1):
        if not _bernoulli_b(k, x, bits):
            return None
    return bool(bits.take(CHUNK) & 1), k, x


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
        x = exponential_trial(bits)
        if x is not None:
            return k, x
        k += 1


def exponential_trial(bits):
    """One trial of von Neumann's method: the u-rand ``x`` if accepted, else None."""
    x = URand(bits.take(CHUNK), CHUNK)
    return x if _decreasing_run_is_even(x, bits) else None


# -- many trials at once --------------------------------------------------------------------
#
# Trials are independent: each reads its own row of recorded 32-bit words, continued
# (when a row runs out) by a shared ``spill`` BitStream. :func:`normal_trials` and
# :func:`exponential_trials` compute with numpy exactly what :func:`normal_trial`
# and :func:`exponential_trial` compute on ``WordStream(row, spill)``: they read a
# row's words at the indices the scalar code would read them, and hand a row to the
# scalar code, from its first word, whenever deciding it would need more than
# comparing distinct words inside the row (a tie of two words, a run or a trial
# longer than the row or than the vectorised steps). Only those rows can read the
# spill, and they are done in row order, so both read the same spill words.

#: Words recorded per trial (a trial of Algorithm N reads about 10 on average).
NORMAL_WORDS = 28
EXPONENTIAL_WORDS = 8
#: Coins (of Algorithm H or B) a row may use before it is handed to the scalar code.
_MAX_COINS = 30
_H_WINDOW = 11         # words of Algorithm H coins examined at once
_B_STEPS = 5           # steps of one coin of Algorithm B examined at once
_HALF = 1 << (CHUNK - 1)
#: Below this many live rows, one more numpy step costs more than the scalar code.
_SCALAR_ROWS = 16


class WordStream:
    """The randomness of one trial: its recorded words, then words of ``spill``.

    Every read of the trial code is a whole number of 32-bit words; as in
    :class:`BitStream`, the first word read is the least significant.
    """

    __slots__ = ("_words", "_next", "_spill")

    def __init__(self, words, spill):
        self._words = words
        self._next = 0
        self._spill = spill

    def take(self, k):
        """A uniform integer in ``[0, 2^k)``, ``k`` a multiple of 32."""
        if k % CHUNK:
            raise ValueError("A WordStream reads whole 32-bit words.")
        value = 0
        for shift in range(0, k, CHUNK):
            if self._next < len(self._words):
                word = int(self._words[self._next])
                self._next += 1
            else:
                word = self._spill.take(CHUNK)
            value |= word << shift
        return value


def _first_stop(go_on):
    """Per row of the last axis: index of the first False, and whether there is one."""
    stop = ~go_on
    return np.argmax(stop, axis=-1), stop.any(axis=-1)


def _run(below, tie):
    """Stop index and decidability of decreasing runs laid out along the last axis.

    ``below[..., i]``: step ``i`` continues the run; ``tie[..., i]``: its
    comparison would need more digits. The run stops at the first step that does
    not continue; it is decided when it stops inside the window and no
    comparison up to the stop tied.
    """
    stop, has = _first_stop(below)
    used = np.arange(below.shape[-1]) <= stop[..., None]
    return stop, has & ~np.any(tie & used, axis=-1)


def _h_coins(win):
    """Algorithm H on windows of words: (success, words read, decided)."""
    below = np.concatenate([win[:, :1] < _HALF, win[:, 1:] < win[:, :-1]], axis=1)
    tie = np.concatenate([np.zeros_like(below[:, :1]), win[:, 1:] == win[:, :-1]], axis=1)
    stop, decided = _run(below, tie)
    return stop % 2 == 0, stop + 1, decided


def _h_table(win):
    """Algorithm H started at every word of the windows: (success, words read, clean).

    A run from 1/2 starting at word ``i`` stops at ``i`` when that word is not
    below 1/2, otherwise at the first ``j > i`` whose word is not below word
    ``j - 1``; it is clean when no comparison up to the stop tied, and read is
    ``stop - i + 1`` (larger than the window when it does not stop inside).
    """
    n_rows, width = win.shape
    idx = np.arange(width, dtype=np.int32)
    later, earlier = win[:, 1:], win[:, :-1]
    # first[:, i]: the first j >= i whose word is not below word j - 1.
    not_below = np.full(win.shape, width, dtype=np.int32)
    not_below[:, 1:] = np.where(later >= earlier, idx[1:], width)
    first = np.minimum.accumulate(not_below[:, ::-1], axis=1)[:, ::-1]
    stop = np.empty(win.shape, dtype=np.int32)
    stop[:, :-1] = first[:, 1:]
    stop[:, -1] = width
    stop = np.where(win >= _HALF, idx, stop)
    ties = np.zeros(win.shape, dtype=np.int32)
    np.cumsum(later == earlier, axis=1, out=ties[:, 1:])
    ties_to_stop = np.take_along_axis(ties, np.minimum(stop, width - 1), axis=1) - ties
    return (stop - idx) % 2 == 0, stop - idx + 1, ties_to_stop == 0


def _first_not(good, after):
    """Per row: the first index ``> after`` where ``good`` is False (its width if none)."""
    idx = np.arange(good.shape[1])
    return np.where(~good & (idx > after[:, None]), idx, good.shape[1]).min(axis=1)


def _h_steps(win, h, pos, stage, k, left, width, decided, reject):
    """Steps 1 and 2 (a sequence of H coins) for rows ``h`` as far as their windows go.

    The coins follow each other along the window (:func:`_h_table` gives the
    coin starting at every word); the sequence of coins is walked once, then
    step 1 ends at the first failed coin and step 2 needs the next ``k (k -
    1)`` to succeed. A row whose window ends first keeps its state for the
    next pass; a row whose deciding coins include a tie goes to the scalar code.
    Updates the per-row arrays in place.
    """
    n_rows, n_words = win.shape
    coin_t, read_t, clean_t = (a.ravel() for a in _h_table(win))
    base = np.arange(n_rows) * n_words
    at = np.zeros(n_rows, dtype=np.int64)
    # Coin i of each row's sequence: value, whether inside the window, clean, end.
    coins = np.zeros((n_rows, n_words + 1), dtype=bool)
    inside = np.zeros((n_rows, n_words + 1), dtype=bool)
    clean = np.zeros((n_rows, n_words + 1), dtype=bool)
    end = np.zeros((n_rows, n_words + 2), dtype=np.int64)  # end[:, i + 1]: after coin i
    limit = np.minimum(n_words, width - pos[h])  # words of the row left in the window
    for i in range(n_words):
        flat = base + np.minimum(at, n_words - 1)
        r = read_t[flat]
        ok = at + r <= limit
        coins[:, i], inside[:, i], clean[:, i] = coin_t[flat], ok, clean_t[flat]
        at = np.where(ok, at + r, n_words + 1)
        end[:, i + 1] = at
        if not ok.any():
            break
    good = inside & coins & clean
    rows = np.arange(n_rows)
    st, kk, ll = stage[h], k[h], left[h]
    # Step 1, for rows still in it: k grows by the successes before the first
    # failure f.
    f = np.where(st == 0, _first_not(good, np.full(n_rows, -1)), -1)
    f_c = np.maximum(f, 0)
    at_f_bad = inside[rows, f_c] & clean[rows, f_c] & ~coins[rows, f_c]
    in_1 = st == 0
    step1_ends = in_1 & at_f_bad
    kk = np.where(in_1, kk + np.maximum(f, 0), kk)
    ll = np.where(step1_ends, kk * (kk - 1), ll)
    # Step 2, for rows that entered it now (from f) or earlier (from -1).
    in_2 = step1_ends | (st == 1)
    g = _first_not(good, f)
    passed = in_2 & (g - f - 1 >= ll)
    g_c = np.minimum(g, n_words)
    at_g_bad = inside[rows, g_c] & clean[rows, g_c] & ~coins[rows, g_c]
    failed = in_2 & ~passed & at_g_bad
    # Where each row stops reading, and what it is left doing.
    last = np.where(passed, f + ll, np.where(in_2, g - 1, f - 1))
    last = np.where(failed, g, last)
    unclear_1 = in_1 & ~step1_ends & inside[rows, f_c] & ~clean[rows, f_c]
    unclear_2 = in_2 & ~passed & ~failed & inside[rows, g_c] & ~clean[rows, g_c]
    paused_2 = in_2 & ~passed & ~failed
    ll = np.where(paused_2, ll - (g - f - 1), ll)
    ll = np.where(passed, kk + 1, ll)
    st = np.where(passed, 2, np.where(in_2, 1, st))
    pos[h] += end[rows, last + 1]
    stage[h], k[h], left[h] = st, kk, ll
    paused = (in_1 & ~step1_ends) | paused_2
    # A row paused by its own end (not the window's) needs the spill: scalar code.
    decided[h] = ~(unclear_1 | unclear_2 | (paused & (limit < n_words)))
    reject[h] = failed


def _b_coins(win, k, x):
    """Algorithm B from ``x`` on windows: (success, words read, decided).

    Step ``s`` of a run that got there read ``2 s`` words: ``z_s`` is word ``2 s``
    and ``v_s`` word ``2 s + 1`` (read only when ``z_s`` is below).
    """
    win = win.astype(np.int64)
    z, v = win[:, 0::2], win[:, 1::2]
    previous = np.concatenate([x[:, None], z[:, :-1]], axis=1)
    m = (2 * k + 2)[:, None]
    low = v * m
    offset = ((2 * k) << CHUNK)[:, None] + x[:, None]
    q_true, q_false = low + m <= offset, low >= offset + 1
    z_below = z < previous
    stop, decided = _run(z_below & q_true, (z == previous) | (z_below & ~q_true & ~q_false))
    read = 2 * stop + 1 + np.take_along_axis(z_below, stop[:, None], axis=1)[:, 0]
    return stop % 2 == 0, read, decided


def normal_trials(words, spill):
    """:func:`normal_trial` on ``WordStream(row, spill)`` for every row of ``words``.

    Parameters
    ----------
    words : ndarray of uint32, shape (T, NORMAL_WORDS)
    spill : BitStream

    Returns
    -------
    accepted : ndarray of bool, shape (T,)
    negative, k, x : ndarrays
        For accepted rows decided here: the sign, integer part and the first
        word of the fraction (the fraction has 32 digits).
    scalar : dict
        ``t -> (negative, k, x)`` for accepted rows the scalar code decided.
    """
    n_rows, width = words.shape
    window = 1 + 2 * _B_STEPS + 1
    accepted = np.zeros(n_rows, dtype=bool)
    to_scalar = np.zeros(n_rows, dtype=bool)
    out_negative = np.zeros(n_rows, dtype=bool)
    out_k = np.zeros(n_rows, dtype=np.int64)
    out_x = np.zeros(n_rows, dtype=np.int64)
    # Per live row: next word, stage (0: step 1, 1: step 2, 2: step 3), k, coins of
    # the stage still to pass, the word of x.
    rows = np.arange(n_rows)
    pos = np.zeros(n_rows, dtype=np.int64)
    stage = np.zeros(n_rows, dtype=np.int64)
    k = np.zeros(n_rows, dtype=np.int64)
    left = np.zeros(n_rows, dtype=np.int64)
    x = np.zeros(n_rows, dtype=np.int64)
    h_offsets, b_offsets = np.arange(_H_WINDOW), np.arange(window)
    padded = np.zeros((n_rows, width + max(window, _H_WINDOW)), dtype=np.uint32)
    padded[:, :width] = words
    # Few rows: the scalar code is cheaper than numpy's per-call overhead.
    for _ in range(_MAX_COINS if n_rows >= 4 * _SCALAR_ROWS else 0):
        if rows.size <= _SCALAR_ROWS:
            break
        in_b = stage == 2
        reject = np.zeros(rows.size, dtype=bool)
        ok = np.zeros(rows.size, dtype=bool)
        read = np.zeros(rows.size, dtype=np.int64)
        decided = np.ones(rows.size, dtype=bool)
        sign = np.zeros(rows.size, dtype=np.int64)
        h = np.flatnonzero(~in_b)
        if h.size:
            _h_steps(padded[rows[h, None], pos[h, None] + h_offsets], h, pos, stage, k, left,
                     width, decided, reject)
        b = np.flatnonzero(in_b)
        if b.size:
            win = padded[rows[b, None], pos[b, None] + b_offsets]
            # A row entering step 3 first reads x, then the coin.
            first = left[b] == k[b] + 1
            x[b] = np.where(first, win[:, 0], x[b])
            shifted = np.where(first[:, None], win[:, 1:], win[:, :-1])
            b_ok, b_read, decided[b] = _b_coins(shifted[:, :2 * _B_STEPS], k[b], x[b])
            ok[b], read[b] = b_ok, b_read + first
            sign[b] = np.take_along_axis(win, read[b][:, None], axis=1)[:, 0]
        # The last coin of step 3 is followed by the sign word.
        done = in_b & ok & (left == 1)
        read_b = np.where(in_b, read + done, 0)
        decided &= ~in_b | (pos + read_b <= width)
        reject |= in_b & decided & ~ok
        left = np.where(in_b & decided & ok, left - 1, left)
        pos = pos + np.where(decided, read_b, 0)
        finished = done & decided
        accepted[rows[finished]] = True
        out_negative[rows[finished]] = (sign[finished] & 1).astype(bool)
        out_k[rows[finished]] = k[finished]
        out_x[rows[finished]] = x[finished]
        to_scalar[rows[~decided]] = True
        keep = decided & ~reject & ~finished
        rows, pos, stage, k, left, x = (a[keep] for a in (rows, pos, stage, k, left, x))
    to_scalar[rows] = True
    scalar = {}
    for t in np.flatnonzero(to_scalar):
        out = normal_trial(WordStream(words[t], spill))
        accepted[t] = out is not None
        if out is not None:
            scalar[int(t)] = out
    return accepted, out_negative, out_k, out_x, scalar


def exponential_trials(words, spill):
    """:func:`exponential_trial` on ``WordStream(row, spill)`` for every row of ``words``.

    Returns ``accepted`` (bool per row) and ``x`` (the fraction's first word,
    for rows decided here) and ``t -> x`` (a :class:`URand`) for accepted rows
    the scalar code decided.
    """
    w = words.astype(np.int64)
    z, previous = w[:, 1:], w[:, :-1]
    stop, decided = _run(z < previous, z == previous)
    accepted = decided & (stop % 2 == 0)
    scalar = {}
    for t in np.flatnonzero(~decided):
        out = exponential_trial(WordStream(words[t], spill))
        accepted[t] = out is not None
        if out is not None:
            scalar[int(t)] = out
    return accepted, w[:, 0], scalar
