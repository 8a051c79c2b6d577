"""The noisy second-moment matrix of norm-bounded rows: the release behind private PCA.

:class:`~dpsk.preprocessing.DPPCA` needs ``A = X^T X / n`` for rows clipped to
L2 norm ``R`` (``data_norm``). As for the counts of naive Bayes
(:mod:`dpsk.mechanisms._counts`), the statistic is computed *exactly* on an
integer grid and released with exact discrete noise, so that what leaves the
fit has exactly the law the proof uses:

* every row, clipped to norm ``R``, is mapped to ``m = trunc(G x / R)``
  coordinate by coordinate (``G = RESOLUTION``), rounding *towards zero*, so
  that ``||m||_2 <= G`` in exact integers (:func:`grid_rows` checks it and
  shrinks a row again if float rounding ever left it above);
* ``M = sum_rows m m^T`` is an integer matrix; its upper triangle (diagonal
  included, ``d (d + 1) / 2`` entries) is released with independent discrete
  noise and mirrored, which is the symmetric noise of "Analyze Gauss"
  (Dwork, Talwar, Thakurta and Zhang 2014, Algorithm 1);
* ``A~ = (M + E) R^2 / (G^2 n)``: post-processing with public ``n``.

Replacing one row ``m`` by ``m'`` (both of norm at most ``G``) changes the
upper triangle by ``D = m m^T - m' m'^T`` (``docs/privacy.rst``, "Private
PCA", derives both bounds):

===================  ==========================
L1 sensitivity       ``(d + 1) G^2``
squared L2           ``2 G^4``
===================  ==========================

Pure (``delta = 0``): discrete Laplace of scale ``(d + 1) G^2 / epsilon``
per entry, epsilon-DP (Ghosh, Roughgarden and Sundararajan 2009; Canonne,
Kamath and Steinke 2020). Concentrated (``delta > 0``): discrete Gaussian of
``sigma^2 = 2 G^4 / (2 rho)`` with ``rho = zcdp_rho(epsilon, delta)``
(CKS 2020, Theorem 14), hence ``(epsilon, delta)``-DP.
"""

import math

import numpy as np

from .._data._design import clip_rows
from ._counts import (
    add_count_noise,
    check_int_range,
    gaussian_noise_for_rho,
    histogram_event,
    laplace_noise,
    zcdp_rho,
)

__all__ = ["RESOLUTION", "check_row_count", "grid_rows", "second_moment_sensitivity",
           "second_moment_noise", "noisy_second_moment", "noise_spectral_norm"]

#: ``G``: a row of norm ``R`` is put on the integer grid of step ``R / G`` per
#: coordinate (truncated towards zero). The truncation moves each coordinate by
#: less than ``R / G``, far below the noise of any release at practical ``n``.
RESOLUTION = 2**12

# The exact integer sums are computed with a float64 matrix product: every
# product m_i m_j and every partial sum is an integer below 2^53, so any
# summation order is exact. This bound on n G^2 keeps it so.
_FLOAT_EXACT = 2**53


def check_row_count(n_rows, resolution=RESOLUTION):
    """Refuse, from ``n`` alone (public), a release whose exact sums would not fit.

    The integer sums stay exact in the float64 product while ``n G^2 < 2^53``
    (``2^29`` rows at the default ``G``). Callers check before they spend.
    """
    G = int(resolution)
    check_int_range(n_rows, G * G)
    if int(n_rows) * G * G >= _FLOAT_EXACT:
        raise ValueError("Too many rows for an exact second-moment release; nothing was "
                         "spent. Fit on fewer rows.")


def grid_rows(X, data_norm, resolution=RESOLUTION):
    """Clip rows to L2 norm ``data_norm`` and put them on the integer grid, norm <= ``G``.

    Row by row with public constants only, so it changes no sensitivity
    argument. The result satisfies ``sum_j m_j^2 <= G^2`` exactly, for every
    finite input: truncation towards zero cannot lengthen a vector, and a
    row that float rounding left above is shrunk again in integers.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Finite reals.
    data_norm : float
        ``R`` > 0, declared.
    resolution : int, default=RESOLUTION

    Returns
    -------
    ndarray of int64, shape (n, d)
    """
    G = int(resolution)
    clipped = clip_rows(np.asarray(X, dtype=np.float64), data_norm)
    m = np.trunc(clipped * (G / float(data_norm))).astype(np.int64)
    limit = G * G
    while True:
        over = np.flatnonzero((m * m).sum(axis=1) > limit)
        if over.size == 0:
            return m
        rows = m[over].astype(np.float64)
        norms = np.sqrt((rows * rows).sum(axis=1))
        m[over] = np.trunc(rows * ((G / norms) * (1.0 - 2.0**-40))[:, None]).astype(np.int64)


def second_moment_sensitivity(d, resolution=RESOLUTION):
    """``(L1, squared L2)`` sensitivities of the upper triangle of ``sum m m^T``.

    For rows with ``||m||_2 <= G``: ``(d + 1) G^2`` and ``2 G^4``, integers
    (``docs/privacy.rst``, "Private PCA").
    """
    G = int(resolution)
    return (int(d) + 1) * G * G, 2 * G**4


def second_moment_noise(d, epsilon, delta=0.0, resolution=RESOLUTION):
    """The law of the noise on each released entry (integer units): a ``CountNoise``."""
    l1, l2sq = second_moment_sensitivity(d, resolution)
    if delta == 0:
        return laplace_noise(l1, epsilon)
    return gaussian_noise_for_rho(l2sq, zcdp_rho(epsilon, delta))


def noise_spectral_norm(n, d, data_norm, epsilon, delta=0.0, resolution=RESOLUTION):
    """About the spectral norm of the noise matrix, in the units of ``A``: public.

    A symmetric ``d x d`` matrix of independent entries of standard deviation
    ``s`` has spectral norm close to ``2 sqrt(d) s`` for large ``d`` (the
    semicircle law's edge). Here ``s`` is the noise's standard deviation
    (its variance bound) times ``R^2 / (G^2 n)``.
    """
    noise = second_moment_noise(d, epsilon, delta, resolution)
    G = int(resolution)
    s = math.sqrt(noise.variance) * float(data_norm) ** 2 / (G * G * n)
    return 2.0 * math.sqrt(d) * s


def noisy_second_moment(X, data_norm, epsilon, rng, *, delta=0.0, resolution=RESOLUTION):
    """Release ``A~``, a noisy ``X^T X / n`` of rows clipped to norm ``data_norm``.

    Guarantee: ``A~`` is ``epsilon``-DP (``delta = 0``) or ``(epsilon,
    delta)``-DP (``delta > 0``) under replace-one neighbours with ``n``
    public. Conditions, enforced here: rows on the grid of :func:`grid_rows`
    (norm at most ``G`` whatever the input), noise calibrated to the
    sensitivities of :func:`second_moment_sensitivity` from public ``d``,
    ``epsilon``, ``delta`` only, exact integer sums (``n G^2 < 2^53``,
    :func:`check_row_count`, which callers run before they spend). Mechanism: Analyze Gauss (Dwork,
    Talwar, Thakurta and Zhang 2014, Algorithm 1) with the
    discrete Gaussian in place of the continuous one (Canonne, Kamath and
    Steinke 2020, Theorem 14; converted by
    :func:`~dpsk.mechanisms._counts.zcdp_rho`); its pure counterpart with
    discrete Laplace noise (the geometric mechanism of Ghosh, Roughgarden and
    Sundararajan 2009) on the L1 sensitivity.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Finite features (private).
    data_norm : float
        Declared row bound ``R`` > 0.
    epsilon : float
    rng : NoiseSource
    delta : float, default=0.0
    resolution : int, default=RESOLUTION

    Returns
    -------
    A : ndarray of shape (d, d)
        Symmetric: the noisy second moment, in the units of ``X``.
    noise : CountNoise
        The law of each upper-triangle entry's noise (integer units).
    event : PrivacyEvent
        What the release spent.
    """
    n, d = X.shape
    G = int(resolution)
    check_row_count(n, G)
    m = grid_rows(X, data_norm, G).astype(np.float64)
    exact = np.rint(m.T @ m).astype(np.int64)  # exact: see _FLOAT_EXACT
    upper = np.triu_indices(d)
    noise = second_moment_noise(d, epsilon, delta, G)
    released = add_count_noise(exact[upper], noise, rng)
    M = np.zeros((d, d), dtype=np.float64)
    M[upper] = released
    M = M + np.triu(M, 1).T
    scale = float(data_norm) ** 2 / (G * G * n)
    return M * scale, noise, histogram_event(epsilon, delta)
