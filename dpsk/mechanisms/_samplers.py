"""Privacy noise drawn exactly, and released on a grid by exact interval arithmetic.

A draw here is an exact sample of the continuous law the proofs are about
(Gaussian, or the Gamma-norm density ``exp(-beta ||b||)``), kept as integers
plus u-rands (:mod:`dpsk.mechanisms._exact`): each coordinate is known to lie
in an interval with dyadic end points, and drawing more digits shrinks the
interval while continuing the same exact draw. Two things are read from a draw,
each by refining until it is decided:

* :func:`add_on_grid`: the grid cell ``round((w_j + b_j) / grid)`` of the
  exact sum, for every coordinate. The release is then a function of the
  exact continuous mechanism ``w + b``, i.e. post-processing, and the
  continuous proofs hold for it as they stand;
* the float64 array the draw *is* (a :class:`ExactNoise` is an ndarray):
  every coordinate correctly rounded, for solvers that need ``b`` as input
  (objective perturbation; ``docs/privacy.rst`` bounds the rounding).

Deciding uses only interval end points: round-to-nearest and ``floor`` are
monotone, so when both end points of an interval give the same answer, every
real in it does. The digits are drawn in a fixed order from one
:class:`~dpsk.mechanisms._exact.BitStream`, so a seeded source reproduces.
"""

import math

import numpy as np

from ._exact import (
    CHUNK,
    EXPONENTIAL_WORDS,
    NORMAL_WORDS,
    BitStream,
    URand,
    exponential_trials,
    normal_trials,
)
from ._random import NoiseSource

__all__ = ["ExactNoise", "gaussian_noise", "gamma_norm_noise", "add_on_grid",
           "FIRST_PRECISION"]

#: Fraction digits of every u-rand before the first attempt to decide: with 64
#: digits an interval is about 2^-64 of a coordinate wide, so a refinement
#: (32 more digits for every u-rand of the draw) is rare.
FIRST_PRECISION = 64
_REFINE = 32

# Integer coordinates of the data-dependent point are clipped to this size.
_GRID_INT_LIMIT = 2.0**61


class ExactNoise(np.ndarray):
    """A float64 array whose entries are the correctly rounded values of an exact draw.

    The exact draw itself (``_draw``) stays attached to this object only:
    arithmetic, views and copies give plain float arrays, so only the object a
    sampler returned can be released exactly by :func:`add_on_grid`.
    """

    def __reduce__(self):
        # A pickled draw would carry noise digits: pickle only the floats.
        return np.asarray(self).copy().__reduce__()


class _GaussianDraw:
    """``sigma * N(0, I_d)``: coordinate ``j`` is ``sign_j sigma (k_j + x_j)``.

    ``fast`` holds the draw as arrays (``negative``, ``k``, ``top``: the first 64
    fraction digits), an enclosure of every coordinate that stays valid however
    far a coordinate is refined later; :meth:`urand` gives a coordinate's
    fraction as a :class:`~dpsk.mechanisms._exact.URand` (created on first use,
    then kept, so every later decision sees the same digits), and ``normals``
    the whole draw in that form, for the generic exact path.
    """

    fast = None
    _normals = None

    def __init__(self, d, sigma, bits):
        self.bits = bits
        self.sigma = _ratio(sigma)
        self.fast, self._longer = _normals(d, bits)
        self.precision = FIRST_PRECISION

    def urand(self, j):
        """Coordinate ``j``'s fraction as a u-rand."""
        if self._normals is not None:
            return self._normals[j][2]
        x = self._longer.get(j)
        if x is None:
            x = self._longer[j] = URand(int(self.fast[2][j]), 2 * CHUNK)
        return x

    @property
    def normals(self):
        """The draw as a list of ``(negative, k, x)``."""
        if self._normals is None:
            negative, k, _ = self.fast
            self._normals = [(bool(negative[j]), int(k[j]), self.urand(j))
                             for j in range(len(k))]
            self.precision = 0
            self.refine(FIRST_PRECISION)
        return self._normals

    @normals.setter
    def normals(self, value):
        self._normals = value

    def refine(self, precision):
        self.precision = max(precision, max((x.n for _, _, x in self.normals), default=0))
        for _, _, x in self.normals:
            x.extend(self.precision, self.bits)

    def magnitudes(self):
        """Per coordinate: ``negative`` and ``|b_j|`` in ``[lo_n, hi_n] / den``."""
        normals = self.normals  # first: building them may raise the precision
        sn, sd = self.sigma
        den = sd << self.precision
        out = []
        for negative, k, x in normals:
            a = (k << self.precision) + x.p
            out.append((negative, sn * a, sn * (a + 1), den))
        return out

    def decide_each(self, j, decide_one):
        """Decide coordinate ``j`` alone, refining only its own fraction."""
        negative, k, _ = self.fast
        sn, sd = self.sigma
        x = self.urand(j)
        while True:
            a = (int(k[j]) << x.n) + x.p
            out = decide_one(bool(negative[j]), sn * a, sn * (a + 1), sd << x.n, j)
            if out is not None:
                return out
            x.extend(x.n + _REFINE, self.bits)


class _GammaNormDraw:
    """``b = (R / beta) G / ||G||``: density proportional to ``exp(-beta ||b||)`` in R^d.

    ``R`` is the sum of ``d`` exact Exponential(1) deviates (Gamma(d, 1), the
    law of ``beta ||b||``) and ``G / ||G||`` is uniform on the sphere, from
    ``d`` exact normals; they are independent.
    """

    def __init__(self, d, beta, bits):
        self.bits = bits
        self.beta = _ratio(beta)
        fast, longer = _normals(d, bits)
        negative, k, top = fast
        self.normals = [(bool(negative[j]), int(k[j]),
                         longer.get(j) or URand(int(top[j]), 2 * CHUNK)) for j in range(d)]
        self.exponentials = _exponentials(d, bits)
        self.precision = 0
        self.refine(FIRST_PRECISION)

    def _urands(self):
        return [x for _, _, x in self.normals] + [x for _, x in self.exponentials]

    def refine(self, precision):
        urands = self._urands()
        self.precision = max(precision, max(x.n for x in urands))
        for x in urands:
            x.extend(self.precision, self.bits)

    def magnitudes(self):
        """Per coordinate: ``negative`` and ``|b_j|`` in ``[lo_n, hi_n] / den`` (or None).

        With ``L`` digits: ``2^L R`` lies in ``[r_lo, r_lo + d]`` (the sum of the
        integers ``2^L k_i + p_i``), ``2^L |G_j|`` in ``[a_j, a_j + 1]`` and
        ``2^L ||G||`` in ``[isqrt(sum a^2), isqrt(sum (a + 1)^2) + 1]``, so
        ``|b_j| = (2^L R)(2^L |G_j|) / (beta 2^L (2^L ||G||))`` lies between the
        quotients of the lower and upper ends. ``None`` until ``||G||`` is
        bounded away from 0.
        """
        shift = self.precision
        a = [(k << shift) + x.p for _, k, x in self.normals]
        r_lo = sum((k << shift) + x.p for k, x in self.exponentials)
        r_hi = r_lo + len(self.exponentials)
        q_lo = math.isqrt(sum(v * v for v in a))
        q_hi = math.isqrt(sum((v + 1) * (v + 1) for v in a)) + 1
        if q_lo == 0:
            return None
        bn, bd = self.beta
        den_lo = (bn * q_hi) << shift
        den_hi = (bn * q_lo) << shift
        # Bring both bounds to one denominator so callers see (lo, hi, den).
        den = den_lo * den_hi
        return [(negative, r_lo * v * bd * den_hi, r_hi * (v + 1) * bd * den_lo, den)
                for (negative, _, _), v in zip(self.normals, a)]


def _normals(d, bits):
    """``d`` exact standard normals from independent trials of Algorithm N.

    Trials run in batches (:func:`~dpsk.mechanisms._exact.normal_trials`), each on
    its own row of fresh words, rows that need more continuing with ``bits``;
    the first ``d`` accepted trials, in row order, are the draw. Each fraction
    of 32 digits then gets 32 more from one fresh word.

    Returns
    -------
    fast : tuple of arrays
        ``negative``, ``k`` and ``top``, the first 64 fraction digits.
    longer : dict
        ``j -> URand`` for the coordinates whose trial drew more than 64 digits.
    """
    rng = bits.source
    parts = []
    longer = {}
    count = 0
    while count < d:
        need = d - count
        words = rng.words((9 * need // 4 + 4) * NORMAL_WORDS).reshape(-1, NORMAL_WORDS)
        accepted, negative, k, x, scalar = normal_trials(words, bits)
        rows = np.flatnonzero(accepted)[:need]
        negative, k, x = negative[rows], k[rows], x[rows]
        for i, t in enumerate(rows.tolist()):
            if t in scalar:
                negative[i], k[i], urand = scalar[t]
                if urand.n == CHUNK:
                    x[i] = urand.p
                else:
                    longer[count + i] = urand
        parts.append((negative, k, x))
        count += rows.size
    negative, k, x = (np.concatenate(a) for a in zip(*parts))
    extra = rng.words(d).astype(np.uint64)
    top = (x.astype(np.uint64) << np.uint64(CHUNK)) | extra
    for j, urand in longer.items():
        top[j] = urand.p >> (urand.n - 2 * CHUNK)
    return (negative, k, top), longer


def _exponentials(d, bits):
    """``d`` exact Exponential(1) deviates ``(k, x)`` by von Neumann's method.

    One sequence of independent trials (:func:`~dpsk.mechanisms._exact.
    exponential_trials`, in batches): ``k`` counts the rejected trials since the
    previous accepted one, exactly as :func:`~dpsk.mechanisms._exact.
    exact_exponential` counts them.
    """
    rng = bits.source
    out = []
    rejected = 0
    while len(out) < d:
        need = d - len(out)
        words = rng.words((7 * need // 4 + 4) * EXPONENTIAL_WORDS).reshape(-1, EXPONENTIAL_WORDS)
        accepted, x, scalar = exponential_trials(words, bits)
        for t, ok in enumerate(accepted.tolist()):
            if not ok:
                rejected += 1
                continue
            out.append((rejected, scalar[t] if t in scalar else URand(int(x[t]), CHUNK)))
            rejected = 0
            if len(out) == d:
                break
    return out


def _ratio(value):
    """``value`` as ``(numerator, denominator)`` integers, exactly (a float is dyadic)."""
    return float(value).as_integer_ratio()


def _decide(draw, decide_one):
    """Refine ``draw`` until ``decide_one(negative, lo, hi, den, j)`` is not None for all j."""
    while True:
        magnitudes = draw.magnitudes()
        if magnitudes is not None:
            out = [decide_one(negative, lo, hi, den, j)
                   for j, (negative, lo, hi, den) in enumerate(magnitudes)]
            if all(v is not None for v in out):
                return out
        draw.refine(draw.precision + _REFINE)


def _quotient_float(num, den):
    """The correctly rounded float of ``num / den`` (Python's int division is)."""
    try:
        return num / den
    except OverflowError:
        return math.copysign(math.inf, num)


def _float_of(negative, lo, hi, den, _j):
    low, high = _quotient_float(lo, den), _quotient_float(hi, den)
    if low != high:
        return None
    return -low if negative else low


def _checked(d, scale, name, rng):
    # Privacy noise only from a NoiseSource: a numpy Generator here would mean a
    # stateful, replayable, non-cryptographic stream had reached a mechanism.
    if not isinstance(rng, NoiseSource):
        raise TypeError(
            "Privacy noise must come from a dpsk.mechanisms._random.NoiseSource, got "
            f"{type(rng).__name__}."
        )
    d = int(d)
    if d < 1:
        raise ValueError(f"d must be >= 1, got {d}.")
    if not (np.isfinite(scale) and scale > 0):
        raise ValueError(f"{name} must be a finite number > 0, got {scale!r}.")
    return d


def _two_sum(a, b):
    """``s + e = a + b`` exactly, ``s = fl(a + b)`` (Knuth)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _split(a):
    """``a = hi + lo`` with 26-bit halves (Veltkamp), for :func:`_two_product`."""
    c = 134217729.0 * a  # 2^27 + 1
    hi = c - (c - a)
    return hi, a - hi


def _two_product(a, b):
    """``p + q = a b`` exactly, ``p = fl(a b)`` (Dekker), barring over/underflow."""
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def _gaussian_floats_fast(fast, sigma):
    """The correctly rounded floats of a Gaussian draw, where a proven bound decides.

    ``|b_j| = sigma (k + x)`` with ``x`` in ``[top, top + 1) / 2^64``. In
    double-double arithmetic, ``c = fl(p + t2)`` is the candidate and ``rho`` the
    residual ``sigma (k + top / 2^64) - c`` up to ``E``; ``docs/privacy.rst``
    ("Exact noise") derives ``E``. ``c`` is the correctly rounded value of every
    real of the enclosure when ``[rho - E, rho + E + sigma 2^-64]`` lies strictly
    inside the half-spacings of ``c``'s neighbours.

    Returns the floats and the mask of coordinates decided.
    """
    negative, k, top = fast
    kf = k.astype(np.float64)
    x_high = (top >> np.uint64(11)).astype(np.float64) * 2.0**-53
    x_low = (top & np.uint64(2047)).astype(np.float64) * 2.0**-64
    with np.errstate(all="ignore"):
        s, e = _two_sum(kf, x_high)
        low = e + x_low
        p, q = _two_product(np.float64(sigma), s)
        t2 = q + sigma * low
        c = p + t2
        rho = (p - c) + t2
        bound = 2.0**-49 * (sigma * (np.abs(e) + x_low) + np.abs(t2) + np.abs(rho)) + 2.0**-1069
        up = (np.nextafter(c, np.inf) - c) * 0.5
        down = (c - np.nextafter(c, 0.0)) * 0.5
        decided = ((rho - bound > -down) & (rho + bound + sigma * 2.0**-64 * (1 + 2.0**-50) < up)
                   & np.isfinite(c) & (p > 2.0**-900) & (p < 2.0**900) & (k < 2**50))
    return np.where(negative, -c, c), decided


def _wrap(draw, d):
    fast = getattr(draw, "fast", None)
    if fast is not None:
        values, decided = _gaussian_floats_fast(fast, draw.sigma[0] / draw.sigma[1])
        for j in np.flatnonzero(~decided).tolist():
            values[j] = draw.decide_each(j, _float_of)
        noise = values.view(ExactNoise)
        noise._draw = draw
        return noise
    values = np.array(_decide(draw, _float_of), dtype=np.float64).reshape(d)
    noise = values.view(ExactNoise)
    noise._draw = draw
    return noise


def gaussian_noise(d, sigma, rng):
    """Draw ``N(0, sigma^2 I_d)`` exactly (Karney's Algorithm N per coordinate).

    Guarantee: the returned :class:`ExactNoise` carries an exact draw of the
    Gaussian law (no floating-point truncation of its tails or of its
    resolution); :func:`add_on_grid` releases the grid cells of ``point +
    draw`` exactly. The float values of the array are the draw correctly
    rounded to float64. ``rng`` must be a
    :class:`~dpsk.mechanisms._random.NoiseSource`.
    """
    d = _checked(d, sigma, "sigma", rng)
    return _wrap(_GaussianDraw(d, sigma, BitStream(rng)), d)


def gamma_norm_noise(d, beta, rng):
    """Draw ``b`` in R^d with density proportional to ``exp(-beta ||b||)``, exactly.

    The noise of Algorithms 1 and 2 of Chaudhuri et al. (2011), their Eq. (7).
    In polar coordinates the density factorises: ``beta ||b||`` is Gamma(d, 1)
    (the ``r^(d-1)`` surface factor times ``exp(-r)``), drawn as a sum of ``d``
    exact Exponential(1) deviates, and the direction is uniform on the sphere,
    independent of the norm, drawn as ``G / ||G||`` for ``d`` exact standard
    normals. Returned as :class:`ExactNoise`, as :func:`gaussian_noise`.
    """
    d = _checked(d, beta, "beta", rng)
    return _wrap(_GammaNormDraw(d, beta, BitStream(rng)), d)


def _cells_of_floats(point, noise, grid):
    """``round((point + noise) / grid)`` for float vectors, exactly."""
    gn, gd = _ratio(grid)
    out = []
    for w, b in zip(point, noise):
        wn, wd = _ratio(w)
        bn, bd = _ratio(b)
        out.append(_round_sum(wn * gd, wd * gn, bn * gd, bd * gn))
    return out


def _round_sum(an, ad, bn, bd):
    """``floor(an/ad + bn/bd + 1/2)`` for integers with ``ad, bd > 0``."""
    return (2 * (an * bd + bn * ad) + ad * bd) // (2 * ad * bd)


def _cell_decider(point, grid):
    """``decide_one`` of the cell of ``point_j + b_j``: None while the enclosure straddles."""
    gn, gd = _ratio(grid)

    def cell(negative, lo, hi, den, j):
        wn, wd = _ratio(point[j])
        # (w + b) / grid with b between -hi/den and -lo/den, or lo/den and hi/den.
        if negative:
            lo, hi = -hi, -lo
        first = _round_sum(wn * gd, wd * gn, lo * gd, den * gn)
        last = _round_sum(wn * gd, wd * gn, hi * gd, den * gn)
        return first if first == last else None

    return cell


def _cells_of_draw(point, draw, grid):
    return _decide(draw, _cell_decider(point, grid))


def _gaussian_cells_fast(point, fast, sigma, grid):
    """Grid cells of ``point + b`` in float64 where a proven error bound decides them.

    ``b_j = +-sigma (k_j + x_j)`` with ``x_j`` in ``[top_j, top_j + 1) / 2^64``.
    ``docs/privacy.rst`` ("Exact noise") derives the bound: the computed
    ``t = fl(point + fl(sigma fl(k + x~))) / grid``, with ``x~`` the first 53
    digits of ``top``, is within ``E = (sigma (k + 1) 2^-51 + 2^-53 (|point| +
    |b~|)) / grid + 2^-1074`` of the exact ``(point + b) / grid``, and the
    computed fraction ``t - floor(t)`` within ``2^-53`` of the exact one. Where
    that fraction is farther than (twice) these bounds from 1/2, the cell is
    ``floor(t)`` or ``floor(t) + 1`` for every real of the enclosure.

    Returns the cells (int64) and the mask of coordinates decided.
    """
    negative, k, top = fast
    kf = k.astype(np.float64)
    x = (top >> np.uint64(11)).astype(np.float64) * 2.0**-53
    magnitude = sigma * (kf + x)
    t = (point + np.where(negative, -magnitude, magnitude)) / grid
    bound = ((sigma * (kf + 1.0) * 2.0**-50 + 2.0**-52 * (np.abs(point) + magnitude)) / grid
             + 2.0**-1073 + 2.0**-51)
    with np.errstate(invalid="ignore"):
        floor = np.floor(t)
        fraction = t - floor
        decided = (np.isfinite(t) & (np.abs(t) < 2.0**52) & (bound < 0.25)
                   & (np.abs(fraction - 0.5) > bound) & (k < 2**52))
    cells = np.where(decided, floor + (fraction > 0.5), 0.0).astype(np.int64)
    return cells, decided


def add_on_grid(point, noise, grid):
    """Release ``grid * round((point + noise) / grid)``, the sum taken exactly.

    Guarantee: when ``noise`` is an :class:`ExactNoise` returned by
    :func:`gaussian_noise` or :func:`gamma_norm_noise`, the released grid
    integers are a function of the exact real vector ``point + b`` with ``b``
    an exact draw of the continuous law, so the release is post-processing of
    the continuous mechanism and inherits its guarantee (no delta is added),
    and its floating-point bits carry nothing but the grid integers.

    Why the grid: adding noise to a point in floating point rounds to a value
    whose low bits depend on the point (Mironov, 2012, "On significance of the
    least significant bits for differential privacy"; dpsk's own audit found
    an event of probability 0.44 on one data set and 0 on its neighbour).
    Here each coordinate's cell is decided on an interval that encloses the
    exact sum (:func:`_decide`): when both ends of the interval round to the
    same integer, so does the exact sum; otherwise more digits of the draw are
    drawn. The integers ``k`` are exact, and ``k * grid`` (a power of two) is
    a function of ``k`` alone.

    A plain float array as ``noise`` is treated as exact values (a float is a
    dyadic rational): the same rounding of the exact sum, without refinement.

    Parameters
    ----------
    point : ndarray of shape (d,)
        The data-dependent point (the solver's weights).
    noise : ExactNoise or ndarray of shape (d,)
    grid : float
        A power of two (:func:`dpsk.mechanisms._noise.release_grid`).

    Returns
    -------
    release : ndarray of shape (d,)
    """
    # Clipping the data-dependent point is a contraction: it cannot increase the
    # distance between the neighbours' points. The noise is never clipped.
    limit = _GRID_INT_LIMIT * grid
    point = np.clip(np.asarray(point, dtype=float).ravel(), -limit, limit)
    draw = getattr(noise, "_draw", None)
    fast = getattr(draw, "fast", None)
    decided = None
    if fast is not None:
        # Float64 with a proven error bound, the exact enclosure only where it
        # cannot decide (both give the cell of the same exact sum).
        sigma = draw.sigma[0] / draw.sigma[1]  # exact: the float sigma itself
        cells, decided = _gaussian_cells_fast(point, fast, sigma, grid)
    if decided is not None:
        cells = cells.tolist()
        for j in np.flatnonzero(~decided).tolist():
            cells[j] = draw.decide_each(j, _cell_decider(point, grid))
    elif draw is not None:
        cells = _cells_of_draw(point, draw, grid)
    else:
        values = np.asarray(noise, dtype=float).ravel()
        if not np.all(np.isfinite(values)):  # the noise alone decides this
            raise ValueError("The noise does not fit the release grid.")
        cells = _cells_of_floats(point, values, grid)
    try:
        release = np.array([float(k) for k in cells], dtype=np.float64) * grid
    except OverflowError:
        release = np.array([math.inf])
    if not np.all(np.isfinite(release)):
        # Only released integers beyond float range: a function of the release.
        raise ValueError("The noise does not fit the release grid.")
    return release
