"""Noisy counts on a data-independent partition: the Laplace mechanism on the integers.

One mechanism for every count-based model: rows fall into cells of a partition
fixed before the data are read (the leaves of a tree whose structure is public,
the bins of a declared grid, the classes), each row adds its weight to a fixed
number of cells, and every cell's count gets independent exact discrete Laplace
noise (:func:`~dpsk.mechanisms._discrete.discrete_laplace_vector`). The
derivation is in ``docs/trees.rst`` ("The histogram mechanism").
"""

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..accounting._events import PureDPEvent
from ._discrete import discrete_laplace_vector
from ._random import NoiseSource

__all__ = ["NoisyCounts", "noisy_histogram", "laplace_scale", "discrete_laplace_variance",
           "WEIGHT_UNITS", "SCALE_UNITS"]

#: Weights are rounded to multiples of ``1 / WEIGHT_UNITS`` and counted in those
#: units, so that weighted counts are integers and take exact integer noise.
WEIGHT_UNITS = 1 << 16

#: The noise scale is rounded up to a multiple of ``1 / SCALE_UNITS``: larger
#: noise (never smaller), and a rational whose terms keep the vector sampler in
#: 64-bit integers however ``epsilon`` was written.
SCALE_UNITS = 1 << 20


@dataclass(frozen=True)
class NoisyCounts:
    """The release of :func:`noisy_histogram`.

    Attributes
    ----------
    counts : ndarray of shape (n_cells,)
        The noisy counts, float64: integers, or multiples of ``1 /
        WEIGHT_UNITS`` for weighted rows (exact in float64 below ``2^37``
        rows).
    variance : float
        The variance of each cell's noise, in count units (public: a function
        of ``epsilon`` and the sensitivity only).
    event : PureDPEvent
        ``PureDPEvent(epsilon)``, composed as an arbitrary ``epsilon``-DP
        release (the vector of discrete Laplace draws is not the scalar
        continuous Laplace whose privacy-loss distribution ``"laplace"`` names).
    """

    counts: np.ndarray
    variance: float
    event: PureDPEvent


def laplace_scale(sensitivity, epsilon):
    """The discrete Laplace scale of an integer release: ``sensitivity / epsilon``, rounded up.

    Rounded up to a multiple of ``1 / SCALE_UNITS`` (relative change below
    ``2^-20 epsilon / sensitivity``): a larger scale only lowers the privacy
    loss, so the release stays ``epsilon``-DP.

    Parameters
    ----------
    sensitivity : int
        L1 sensitivity of the integer counts, >= 1.
    epsilon : float
        > 0 and finite.

    Returns
    -------
    scale : fractions.Fraction
    """
    if not (isinstance(sensitivity, int) and sensitivity >= 1):
        raise ValueError(f"sensitivity must be an int >= 1, got {sensitivity!r}.")
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise ValueError(f"epsilon must be a finite number > 0, got {epsilon!r}.")
    exact = Fraction(sensitivity) / Fraction(float(epsilon))
    units = -((-exact.numerator * SCALE_UNITS) // exact.denominator)  # ceiling
    return Fraction(units, SCALE_UNITS)


def discrete_laplace_variance(scale):
    """Variance ``2 q / (1 - q)^2``, ``q = exp(-1 / scale)``, of the discrete Laplace law."""
    q = math.exp(-1.0 / float(scale))
    return 2.0 * q / (1.0 - q) ** 2


def noisy_histogram(cells, n_cells, epsilon, rng, *, weights=None):
    """Counts of rows per cell plus exact discrete Laplace noise: ``epsilon``-DP.

    Guarantee (the Laplace mechanism of Dwork, McSherry, Nissim and Smith 2006
    on the integers, i.e. the geometric mechanism of Ghosh, Roughgarden and
    Sundararajan 2009, applied to a vector): ``epsilon``-differentially private
    under replace-one neighbours, provided the partition (which cell each
    possible row goes to, and ``n_cells``) is fixed without reading the data,
    as it is when it is a function of public parameters, of public randomness
    and of earlier private releases. Each row adds its weight to the ``r``
    cells of its row of ``cells``; replacing one row takes at most ``r``
    units out of cells and puts at most ``r`` in, so the integer count vector
    moves by at most ``2 r`` in L1 (``2 r WEIGHT_UNITS`` in weight units). Each
    cell gets independent noise ``Z`` with ``P[Z = z]`` proportional to
    ``exp(-|z| / b)``, ``b >= sensitivity / epsilon`` (:func:`laplace_scale`),
    so the probability of any released vector changes by a factor of at most
    ``exp(||c - c'||_1 / b) <= exp(epsilon)``. The draw is exact
    (:func:`~dpsk.mechanisms._discrete.discrete_laplace_vector`); the release
    is integers (weight units), converted to float64 exactly.

    Conditions, enforced: cell indices are integers in ``[0, n_cells)``,
    weights are finite and in ``[0, 1]`` (rounded to the nearest multiple of
    ``1 / WEIGHT_UNITS``, a fixed function of each row), noise from a
    :class:`~dpsk.mechanisms._random.NoiseSource`.

    Parameters
    ----------
    cells : ndarray of shape (n,) or (n, r), integer
        The cells each row adds to.
    n_cells : int
        Number of cells, >= 1.
    epsilon : float
        > 0.
    rng : NoiseSource
    weights : ndarray of shape (n,) or None
        Row weights in [0, 1]; None counts every row once.

    Returns
    -------
    NoisyCounts
    """
    if not isinstance(rng, NoiseSource):
        raise TypeError("Privacy noise must come from a dpsk.mechanisms._random.NoiseSource, "
                        f"got {type(rng).__name__}.")
    cells = np.asarray(cells)
    if cells.ndim == 1:
        cells = cells[:, None]
    if cells.ndim != 2 or cells.dtype.kind not in "iu":
        raise ValueError("cells must be an integer array of shape (n,) or (n, r).")
    n_cells = int(n_cells)
    if n_cells < 1:
        raise ValueError("n_cells must be >= 1.")
    if cells.size and (cells.min() < 0 or cells.max() >= n_cells):
        raise ValueError("cells must lie in [0, n_cells).")
    n, r = cells.shape
    if weights is None:
        units = 1
        counts = np.bincount(cells.ravel(), minlength=n_cells).astype(np.int64)
    else:
        weights = np.asarray(weights, dtype=np.float64)
        if weights.shape != (n,) or not np.all((weights >= 0.0) & (weights <= 1.0)):
            raise ValueError("weights must be a vector of numbers in [0, 1], one per row.")
        units = WEIGHT_UNITS
        quantised = np.rint(weights * WEIGHT_UNITS).astype(np.int64)
        # Exact integer sums (np.bincount would add in float64).
        counts = np.zeros(n_cells, dtype=np.int64)
        np.add.at(counts, cells.ravel(), np.repeat(quantised, r))
    scale = laplace_scale(2 * r * units, epsilon)
    noise = discrete_laplace_vector(scale, n_cells, rng)
    noisy = counts.astype(object) + noise if noise.dtype == object else counts + noise
    released = np.asarray(noisy, dtype=np.float64) / units
    variance = discrete_laplace_variance(scale) / units**2
    return NoisyCounts(released, variance, PureDPEvent(float(epsilon)))
