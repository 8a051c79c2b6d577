"""Exact discrete Laplace noise for private answers, and scores released on a grid.

The discrete Laplace law with scale ``t > 0`` on the integers gives ``k`` the
probability ``(1 - a) / (1 + a) * a^|k|``, ``a = exp(-1/t)``. Shifting its centre
by an integer ``j`` multiplies no probability by more than ``exp(|j| / t)``:
so an integer-valued statistic whose neighbours differ by at most ``k_max``,
plus discrete Laplace noise of scale ``k_max / epsilon``, is exactly
``epsilon``-DP, with no floating point in the law (Canonne, Kamath and Steinke
2020, "The discrete Gaussian for differential privacy", Section 5).

:func:`discrete_laplace` is their Algorithms 1 and 2: integer arithmetic only,
bits from :meth:`dpsk.mechanisms._random.NoiseSource.randbelow`. It is a minimal
local copy until the shared sampler (``dpsk.mechanisms._discrete``) is merged;
the lead switches it there. Derivations in ``docs/prediction.rst``.
"""

import math
from fractions import Fraction

import numpy as np

from ..mechanisms._discrete import bernoulli_exp, discrete_laplace

__all__ = ["bernoulli_exp", "discrete_laplace", "discrete_laplace_pmf",
           "grid_sensitivity", "laplace_on_grid"]


def discrete_laplace_pmf(k, scale):
    """``P(Z = k)`` for the discrete Laplace law of ``scale`` (float, for tests and docs)."""
    a = math.exp(-1.0 / float(scale))
    return (1.0 - a) / (1.0 + a) * np.power(a, np.abs(np.asarray(k, dtype=float)))


#: Grid cells per unit of the score's sensitivity bound. The rounding of a score
#: to the grid can move it by one cell more between neighbours, so the noise pays
#: ``1 / GRID_STEPS`` (0.1%) over continuous Laplace noise.
GRID_STEPS = 1000


def grid_sensitivity(relative_norm, rounding_cells=0.0):
    """Integer sensitivity ``floor(GRID_STEPS * r + rounding_cells) + 1`` of a gridded score.

    If two real scores differ by at most ``c`` grid cells, their nearest
    integers differ by at most ``floor(c) + 1`` (each rounding moves by at most
    1/2). ``r`` is the row's share of the full sensitivity (its design norm
    bound, at most about 1), ``rounding_cells`` the floating-point slack of the
    division by the grid, in cells.

    Returns
    -------
    ndarray of int
    """
    cells = GRID_STEPS * np.asarray(relative_norm, dtype=float) + np.asarray(rounding_cells)
    return np.floor(cells).astype(np.int64) + 1


def laplace_on_grid(scores, sensitivities, grid, epsilon, sources):
    """Release each score as ``grid * (round(score / grid) + Z)``, ``Z`` discrete Laplace.

    Guarantee: if, for row ``i``, ``round(score / grid)`` moves by at most
    ``sensitivities[i]`` (an integer) between neighbouring data sets, the
    release of that row is exactly ``epsilon``-DP: ``Z`` has scale
    ``sensitivities[i] / epsilon`` (module docstring). The caller proves the
    sensitivity (:func:`grid_sensitivity`) and charges ``epsilon`` per row.

    Parameters
    ----------
    scores : ndarray of shape (n_rows,)
        Private.
    sensitivities : ndarray of int of shape (n_rows,)
    grid : float
        Cell width, > 0 (public).
    epsilon : float
        > 0.
    sources : list of NoiseSource
        One per row.

    Returns
    -------
    released : ndarray of shape (n_rows,)
        The noisy scores, multiples of ``grid``.
    cells : ndarray of object (Python int)
        The same as exact integers (for tests).
    """
    epsilon = Fraction(float(epsilon))
    centres = np.rint(np.asarray(scores, dtype=float) / grid)
    cells = np.empty(centres.shape[0], dtype=object)
    for i, source in enumerate(sources):
        scale = Fraction(int(sensitivities[i])) / epsilon
        cells[i] = int(centres[i]) + discrete_laplace(scale, source)
    return np.array([float(c) for c in cells]) * grid, cells
