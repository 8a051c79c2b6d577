"""Exact noisy counts and bounded sums: integers plus exact discrete noise.

Count-based models (naive Bayes, the leaves of data-blind trees) release sums of
small per-row contributions: a row adds 1 to the cell of its class (and of its
leaf, or of each of its categorical levels), or adds its bounded feature values
to its class's sums. Here those sums are computed *exactly* as integers (a
bounded real is first put on a public grid of integers, row by row) and released
with exact discrete noise, so the released integers have exactly the law the
proof uses, with no floating point anywhere on the private path (Canonne, Kamath
and Steinke 2020, "The discrete Gaussian for differential privacy", NeurIPS;
arXiv 2004.00010):

* **pure** (``delta = 0``): discrete Laplace noise of scale ``t = Delta_1 /
  epsilon`` on every coordinate, where ``Delta_1`` bounds the L1 distance
  between the integer vectors of two neighbouring data sets. Shifting a
  discrete Laplace law by an integer ``j`` changes no probability by more than
  ``exp(|j| / t)``, and the product over coordinates by at most ``exp(Delta_1 /
  t) = exp(epsilon)``: the geometric mechanism of Ghosh, Roughgarden and
  Sundararajan (2009) in every coordinate, epsilon-DP exactly;
* **concentrated** (``delta > 0``): discrete Gaussian noise of variance parameter
  ``sigma^2 = Delta_2^2 / (2 rho)`` on every coordinate, ``Delta_2`` the L2
  bound. Independent discrete Gaussians are ``rho``-zCDP (CKS 2020, Theorem 14,
  the same bound as the continuous Gaussian), zCDP composes by adding the
  ``rho``, and :func:`zcdp_rho` picks the largest ``rho`` whose Renyi curve
  ``alpha rho`` converts to ``(epsilon, delta)``-DP
  (:func:`dpsk.accounting._renyi.rdp_to_dp`).

Every scale is computed in exact rationals from the exact values of the float
parameters (``fractions.Fraction`` of a float is its binary value); a Laplace
scale is then rounded *up* to a multiple of ``2^-20`` (:data:`SCALE_UNITS`:
more noise, never less), so the release is private for the very epsilon (or
rho) the ledger records. ``docs/naive_bayes.rst`` derives the sensitivities of
the naive Bayes releases, ``docs/trees.rst`` those of the trees' leaves; the
samplers are :func:`dpsk.mechanisms._discrete.discrete_laplace_vector` (the
exact discrete Laplace algorithm run on whole arrays) and
:func:`~dpsk.mechanisms._discrete.discrete_gaussian`.

Neighbours replace one row (its features, its label and its weight), as
everywhere in dpsk (``docs/privacy.rst``).
"""

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..accounting._events import ApproxDPEvent, PureDPEvent
from ..accounting._renyi import ORDERS, rdp_to_dp
from ._discrete import discrete_gaussian, discrete_laplace, discrete_laplace_vector, to_fraction
from ._random import NoiseSource

__all__ = [
    "CountNoise",
    "laplace_noise",
    "gaussian_noise_for_rho",
    "zcdp_rho",
    "add_count_noise",
    "grid_values",
    "WEIGHT_GRID",
    "SCALE_UNITS",
    "grid_weights",
    "check_int_range",
    "noisy_histogram",
    "histogram_event",
    "count_variance",
]

#: Row weights in [0, 1] are put on the grid ``k / WEIGHT_GRID`` (``k`` an integer
#: in ``[0, WEIGHT_GRID]``) before they multiply a row's contribution, so that
#: weighted sums stay exact integers.
WEIGHT_GRID = 1024

#: A discrete Laplace scale is rounded up to a multiple of ``1 / SCALE_UNITS``:
#: larger noise (never smaller), and a rational whose terms keep the vector
#: sampler in 64-bit integers however ``epsilon`` was written (the exact
#: ``Delta / epsilon`` of ``epsilon = 0.1`` has a 2^55 denominator).
SCALE_UNITS = 1 << 20

# Sums are accumulated in int64: every release checks, from public sizes only,
# that the largest possible sum stays below this.
_INT_LIMIT = 2**62


@dataclass(frozen=True)
class CountNoise:
    """The exact law added to each coordinate of an integer release.

    Attributes
    ----------
    kind : {"laplace", "gaussian"}
    parameter : fractions.Fraction
        The discrete Laplace scale ``t`` (``P[z]`` proportional to ``exp(-|z| /
        t)``), or the discrete Gaussian's ``sigma^2`` (``P[z]`` proportional to
        ``exp(-z^2 / (2 sigma^2))``). Exact.
    """

    kind: str
    parameter: Fraction

    @property
    def variance(self):
        """An upper bound on the variance of one draw, as a float (for estimators).

        Discrete Laplace: ``2 a / (1 - a)^2`` with ``a = exp(-1 / t)``, below the
        continuous ``2 t^2``. Discrete Gaussian: at most ``sigma^2`` (CKS 2020,
        Proposition 19).
        """
        value = float(self.parameter)
        if self.kind == "gaussian":
            return value
        a = math.exp(-1.0 / value)
        return 2.0 * a / (1.0 - a) ** 2

    def draw(self, rng):
        """One exact draw (a Python int)."""
        if self.kind == "laplace":
            return discrete_laplace(self.parameter, rng)
        return discrete_gaussian(self.parameter, rng)


def laplace_noise(l1_sensitivity, epsilon):
    """Discrete Laplace noise for an epsilon-DP integer release.

    Guarantee: adding independent draws of the returned law to every
    coordinate of an integer vector whose neighbours differ by at most
    ``l1_sensitivity`` in L1 norm is ``epsilon``-DP (module docstring). The
    scale ``l1_sensitivity / epsilon`` is computed in exact rationals at the
    float ``epsilon`` and rounded up to a multiple of ``1 / SCALE_UNITS``
    (relative change below ``2^-20 epsilon / l1_sensitivity``): a larger
    scale only lowers the privacy loss, and the rounded scale's small terms
    keep :func:`~dpsk.mechanisms._discrete.discrete_laplace_vector` on its
    fast path.

    Parameters
    ----------
    l1_sensitivity : int
        >= 1.
    epsilon : float
        > 0, finite.

    Returns
    -------
    CountNoise
    """
    sensitivity = _positive_int(l1_sensitivity, "l1_sensitivity")
    epsilon = to_fraction(epsilon, "epsilon")
    if not epsilon > 0:
        raise ValueError("epsilon must be > 0.")
    exact = Fraction(sensitivity) / epsilon
    units = -((-exact.numerator * SCALE_UNITS) // exact.denominator)  # ceiling
    return CountNoise("laplace", Fraction(units, SCALE_UNITS))


def gaussian_noise_for_rho(l2_sensitivity_squared, rho):
    """Discrete Gaussian noise for a ``rho``-zCDP integer release.

    Guarantee (Canonne, Kamath and Steinke 2020, Theorem 14): adding
    independent discrete Gaussians of variance parameter ``sigma^2 =
    Delta_2^2 / (2 rho)`` to every coordinate of an integer vector whose
    neighbours differ by at most ``Delta_2`` in L2 norm is ``rho``-zCDP: its
    Renyi divergence of order ``alpha`` is at most ``alpha rho``.

    Parameters
    ----------
    l2_sensitivity_squared : int
        ``Delta_2^2``, an integer >= 1 (squared, so that it stays exact).
    rho : float
        > 0, finite.

    Returns
    -------
    CountNoise
    """
    squared = _positive_int(l2_sensitivity_squared, "l2_sensitivity_squared")
    rho = to_fraction(rho, "rho")
    if not rho > 0:
        raise ValueError("rho must be > 0.")
    return CountNoise("gaussian", Fraction(squared) / (2 * rho))


def zcdp_rho(epsilon, delta):
    """The largest ``rho`` (to a relative 1e-9) with ``rho``-zCDP giving ``(epsilon, delta)``-DP.

    A ``rho``-zCDP release has Renyi curve ``alpha rho`` at every order; the
    conversion of Balle et al. (2020, Theorem 21), on dpsk's grid of orders
    (:func:`dpsk.accounting._renyi.rdp_to_dp`, the one place it is written),
    gives an epsilon that increases with ``rho``. Bisection finds the largest
    ``rho`` whose converted epsilon is at most ``epsilon``; the result is
    checked once more, so the guarantee never rests on the bisection's last step.

    Parameters
    ----------
    epsilon : float
        > 0.
    delta : float
        In (0, 1).

    Returns
    -------
    rho : float
    """
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise ValueError(f"epsilon must be a finite number > 0, got {epsilon!r}.")
    if not 0.0 < delta < 1.0:
        raise ValueError(f"delta must be in (0, 1), got {delta!r}.")

    def converted(rho):
        return rdp_to_dp(ORDERS * rho, delta)

    lo, hi = 0.0, max(epsilon, 1.0)
    while converted(hi) <= epsilon:
        hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if converted(mid) <= epsilon:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-10 * hi:
            break
    if not (lo > 0 and converted(lo) <= epsilon):  # pragma: no cover - bisection invariant
        raise ArithmeticError("zcdp_rho: no rho found.")
    return lo


def add_count_noise(values, noise, rng):
    """``values`` (integers) plus independent exact draws of ``noise``, as an int64 array.

    Parameters
    ----------
    values : array-like of int
        The exact integer statistic (any shape). Private.
    noise : CountNoise
    rng : NoiseSource

    Returns
    -------
    released : ndarray of int64, same shape
        Exact: ``values + z`` with ``z`` exact draws, in integer arithmetic.
        Laplace draws come from
        :func:`~dpsk.mechanisms._discrete.discrete_laplace_vector` (the same
        law as :meth:`CountNoise.draw`, about 100 times faster).
    """
    if not isinstance(rng, NoiseSource):
        raise TypeError("Privacy noise must come from a dpsk.mechanisms._random.NoiseSource, "
                        f"got {type(rng).__name__}.")
    values = np.asarray(values, dtype=np.int64)
    flat = values.ravel()
    if noise.kind == "laplace":
        draws = discrete_laplace_vector(noise.parameter, flat.size, rng)
    else:
        draws = np.empty(flat.size, dtype=object)
        draws[:] = [noise.draw(rng) for _ in range(flat.size)]
    # |values| < 2^62 (check_int_range), so with |z| < 2^62 the int64 sum cannot overflow.
    if draws.dtype == object:
        if any(abs(int(z)) >= _INT_LIMIT for z in draws):
            # A noise draw beyond 2^62: a function of the noise alone, so public.
            raise ValueError("The noise does not fit the integer release.")
        draws = draws.astype(np.int64)
    elif draws.size and np.abs(draws).max() >= _INT_LIMIT:
        raise ValueError("The noise does not fit the integer release.")
    out = flat + draws
    if out.size and np.abs(out).max() >= _INT_LIMIT:
        raise ValueError("The noise does not fit the integer release.")
    return out.reshape(values.shape)


def grid_values(values, lower, upper, resolution):
    """Put bounded reals on the integer grid: ``round(resolution * z)`` with ``z`` in [-1, 1].

    Each value is clipped to its column's ``[lower, upper]``, mapped linearly to
    ``z`` in ``[-1, 1]`` (the midpoint to 0), and rounded to the nearest
    multiple of ``1 / resolution``. Row by row and column by column, with public
    bounds only: the map a row goes through depends on nothing but that row, so
    it changes no sensitivity argument, and its result is an integer in
    ``[-resolution, resolution]`` for every input (the clip is applied to the
    integer too, against rounding at the ends).

    Parameters
    ----------
    values : ndarray of shape (n, d)
        Finite reals.
    lower, upper : ndarray of shape (d,)
        Declared bounds, ``lower < upper``, finite.
    resolution : int
        ``G >= 1``.

    Returns
    -------
    ndarray of int64, shape (n, d)
    """
    resolution = _positive_int(resolution, "resolution")
    lower = np.asarray(lower, dtype=np.float64)
    upper = np.asarray(upper, dtype=np.float64)
    centre = 0.5 * lower + 0.5 * upper
    half = 0.5 * upper - 0.5 * lower
    clipped = np.clip(np.asarray(values, dtype=np.float64), lower, upper)
    z = np.clip((clipped - centre) / half, -1.0, 1.0)
    return np.clip(np.rint(z * resolution), -resolution, resolution).astype(np.int64)


def grid_weights(sample_weight):
    """Row weights in [0, 1] on the grid of :data:`WEIGHT_GRID`: integers ``0..WEIGHT_GRID``.

    Each weight is clipped to [0, 1] and rounded (a fixed function of its row);
    a weight that is not finite is refused (callers refuse it for free first).
    """
    weights = np.asarray(sample_weight, dtype=np.float64)
    if not np.all(np.isfinite(weights)):
        raise ValueError("Row weights must be finite numbers in [0, 1].")
    return np.clip(np.rint(weights * WEIGHT_GRID), 0, WEIGHT_GRID).astype(np.int64)


def check_int_range(n_rows, largest_contribution):
    """Refuse (from public sizes only) a release whose integer sums could overflow int64."""
    if int(n_rows) * int(largest_contribution) >= _INT_LIMIT:
        raise ValueError(
            "Too many rows for an exact integer release at this resolution; nothing was "
            "spent. Fit on fewer rows or ask for a coarser grid.")


def histogram_event(epsilon, delta):
    """The ledger event of one histogram (or other integer) release at ``(epsilon, delta)``.

    Pure: a :class:`~dpsk.PureDPEvent` (a vector of discrete Laplace draws is an
    epsilon-DP mechanism; it is not the scalar Laplace mechanism the
    ``"laplace"`` tag promises, so it is recorded as generic). Concentrated:
    the ``(epsilon, delta)`` pair its zCDP bound was converted to.
    """
    if delta == 0:
        return PureDPEvent(epsilon)
    return ApproxDPEvent(epsilon, delta)


def noisy_histogram(codes, n_bins, epsilon, rng, *, delta=0.0, sample_weight=None):
    """Release the histogram of ``codes`` with exact discrete noise.

    With ``codes`` of shape ``(n,)`` every row adds 1 (or its weight, on the grid
    ``1 / WEIGHT_GRID``) to the cell of its code, among ``n_bins`` cells.
    With ``codes`` of shape ``(n, m)`` and ``n_bins`` a sequence of ``m``
    sizes, column ``c`` has its own block of ``n_bins[c]`` cells and every row
    adds one unit to one cell of each block (``m`` distinct cells): the
    histograms of ``m`` attributes of the same rows, released together.

    Sensitivity (replace one row, its codes and its weight): the row's ``m``
    units leave their cells and at most ``m`` units arrive in others, so the
    L1 distance is at most ``2 m`` and, the cells of a row being distinct, the
    squared L2 distance at most ``2 m`` (in weight units: times ``WEIGHT_GRID``
    and its square). So:

    * ``delta = 0``: discrete Laplace of scale ``2 m / epsilon`` per cell
      (rounded up, :func:`laplace_noise`),
      ``epsilon``-DP (Ghosh, Roughgarden and Sundararajan 2009; Canonne, Kamath
      and Steinke 2020, Algorithm 2);
    * ``delta > 0``: discrete Gaussian of ``sigma^2 = 2 m / (2 rho)`` per cell
      with ``rho = zcdp_rho(epsilon, delta)``: ``rho``-zCDP (CKS 2020,
      Theorem 14), hence ``(epsilon, delta)``-DP.

    The cells are public (``n_bins`` is declared, and which cell a possible
    row goes to is fixed before the rows are read: a function of public
    parameters, public randomness and earlier releases). For the trees of a
    forest whose structure does not read the data, column ``t``'s code
    ``leaf * n_classes + class`` gives the noisy class counts of every leaf of
    every tree in one release (:func:`dpsk.mechanisms._forest.forest_release`);
    for categorical naive Bayes, column ``c``'s code ``class * levels_c +
    level``.

    Parameters
    ----------
    codes : ndarray of int of shape (n,) or (n, m)
        Private. Column ``c``'s codes must lie in ``[0, n_bins[c])``: the
        caller refuses out-of-domain input for free first, and a code outside
        is refused here before anything is drawn.
    n_bins : int or sequence of m ints
        Block sizes, public.
    epsilon : float
        > 0.
    rng : NoiseSource
    delta : float, default=0.0
        0 (pure) or in (0, 1).
    sample_weight : ndarray of shape (n,) or None
        Row weights in [0, 1].

    Returns
    -------
    counts : ndarray of float of shape (sum(n_bins),)
        The noisy counts, block after block (in rows: the released integers
        divided by ``WEIGHT_GRID`` when weighted). May be negative.
    noise : CountNoise
        The law of each cell's noise (in released integer units).
    event : PrivacyEvent
        What the release spent.
    """
    codes = np.asarray(codes)
    if codes.ndim == 1:
        codes = codes[:, None]
    sizes = [_positive_int(b, "n_bins") for b in np.atleast_1d(n_bins).tolist()]
    if codes.ndim != 2 or codes.shape[1] != len(sizes) or codes.dtype.kind not in "iu":
        raise ValueError("codes must be integers of shape (n,) or (n, len(n_bins)).")
    if codes.size and (codes.min(axis=0) < 0).any() | (codes.max(axis=0) >= sizes).any():
        raise ValueError("codes of column c must lie in [0, n_bins[c]).")
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    cells = (codes.astype(np.int64) + offsets).ravel()
    m, unit = len(sizes), 1
    if sample_weight is None:
        counts = np.bincount(cells, minlength=sum(sizes)).astype(np.int64)
    else:
        unit = WEIGHT_GRID
        check_int_range(codes.shape[0], unit)
        counts = np.zeros(sum(sizes), dtype=np.int64)
        np.add.at(counts, cells, np.repeat(grid_weights(sample_weight), m))
    if delta == 0:
        noise = laplace_noise(2 * m * unit, epsilon)
    else:
        noise = gaussian_noise_for_rho(2 * m * unit * unit, zcdp_rho(epsilon, delta))
    released = add_count_noise(counts, noise, rng)
    return released / unit, noise, histogram_event(epsilon, delta)


def count_variance(noise, weighted):
    """The noise variance of one count :func:`noisy_histogram` released, in rows (public).

    ``noise.variance`` is in released integer units, ``1 / WEIGHT_GRID`` of a
    row when the rows were weighted.
    """
    unit = WEIGHT_GRID if weighted else 1
    return noise.variance / unit**2


def _positive_int(value, name):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}.")
    return int(value)
