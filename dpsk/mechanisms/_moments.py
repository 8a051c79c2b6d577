"""Noisy class counts, class sums and pooled second moments of bounded features.

The release behind :class:`~dpsk.DPGaussianNB`, kept here as a plain function
(:func:`class_moments`) so that any model built on class-conditional means and
a shared variance (naive Bayes, nearest centroids, the leaves of data-blind
trees that average a bounded target) can call it.

Every feature ``j`` has declared bounds ``[l_j, u_j]``. A row's value is
clipped to them, mapped to ``z = (x - c_j) / h_j`` in ``[-1, 1]`` (``c_j`` the
midpoint, ``h_j`` the half-width) and put on the integer grid ``m =
round(G z)``, ``G = RESOLUTION`` (:func:`~dpsk.mechanisms._counts.grid_values`).
With a row weight ``w`` in ``[0, 1]``, on the grid ``omega = round(W w)``
(``W = WEIGHT_GRID``; ``omega = 1, W = 1`` without weights), the row
contributes

* ``omega`` to the count of its class ``k``;
* ``omega m_j`` to the sum ``S[k, j]`` of its class, for every feature;
* ``omega m_j^2`` to the pooled square sum ``Q[j]`` (all classes together).

Replacing one row ``(x, k, w)`` by ``(x', k', w')`` changes (``docs/naive_bayes.rst``
derives each bound):

===========  =========================  ==============================
statistic    L1 sensitivity             squared L2 sensitivity
===========  =========================  ==============================
counts       ``2 W``                    ``2 W^2``
class sums   ``2 d G W``                ``4 d G^2 W^2``
squares      ``d G^2 W``                ``d G^4 W^2``
===========  =========================  ==============================

The three integer vectors are released with exact discrete noise
(:mod:`dpsk.mechanisms._counts`) at shares of the budget given by ``split``:
``epsilon_x = split_x epsilon`` (discrete Laplace, pure) or ``rho_x = split_x
rho`` (discrete Gaussian, ``rho = zcdp_rho(epsilon, delta)``). Basic
composition of the three pure releases, or additivity of zCDP, gives the whole
``(epsilon, delta)``.

:func:`moments_split` derives the split from public quantities: the shares
that minimise the expected excess log-loss of the fitted Gaussian model
(to first order), with a floor on the counts' share that keeps the prior-only
rule within 0.005 of the majority class (``docs/naive_bayes.rst``, "The budget
split").
"""

import math
from dataclasses import dataclass

import numpy as np

from ._counts import (
    WEIGHT_GRID,
    add_count_noise,
    check_int_range,
    gaussian_noise_for_rho,
    grid_values,
    grid_weights,
    histogram_event,
    laplace_noise,
    zcdp_rho,
)

__all__ = ["RESOLUTION", "NoisyMoments", "class_moments", "moments_split", "noise_laws",
           "REFERENCE_VARIANCE", "FLOOR_EXCESS"]

#: ``G``: a feature's declared range ``[l, u]`` is put on ``2 G + 1`` points, a
#: step of ``(u - l) / (2 G)``. The rounding moves a mean by at most that much
#: and inflates a variance by about a step squared over 12 (Sheppard), far
#: below any noise a private release carries.
RESOLUTION = 4096

#: The within-class variance of a feature, in units of its squared half-width,
#: that the split is derived for: 1/3, a feature spread evenly over its
#: declared range.
REFERENCE_VARIANCE = 1.0 / 3.0

#: How far the prior-only rule (predict the class with the largest noisy
#: count) may fall behind the majority class, at most, because of the counts'
#: noise: the counts' share is raised until this holds (within ``cap``).
FLOOR_EXCESS = 0.005

# Largest excess error of the prior-only rule per unit of noise scale over n:
# Laplace counts (difference of two Laplace(b)): max_u u (1 + u/2) e^-u / 2 at u = sqrt 2;
# Gaussian counts (difference of two N(0, s^2)): sqrt 2 max_u u Phi(-u) at u = 0.7518.
_PRIOR_EXCESS_LAPLACE = 0.5 * (math.sqrt(2.0) + 1.0) * math.exp(-math.sqrt(2.0))
_ARGMAX_GAUSSIAN = 0.7517915241
_PRIOR_EXCESS_GAUSSIAN = (math.sqrt(2.0) * _ARGMAX_GAUSSIAN * 0.5
                          * math.erfc(_ARGMAX_GAUSSIAN / math.sqrt(2.0)))


@dataclass(frozen=True)
class NoisyMoments:
    """What :func:`class_moments` releases, in the units of ``z`` (``[-1, 1]``).

    Attributes
    ----------
    counts : ndarray of shape (K,)
        Noisy class counts (rows, or weight when weighted). May be negative.
    sums : ndarray of shape (K, d)
        Noisy sums of ``z`` per class.
    squares : ndarray of shape (d,)
        Noisy sums of ``z^2`` over all rows.
    count_variance, sum_variance, square_variance : float
        The variance of the noise of one coordinate of each, in those units.
    """

    counts: np.ndarray
    sums: np.ndarray
    squares: np.ndarray
    count_variance: float
    sum_variance: float
    square_variance: float


def moments_split(n, d, n_classes, epsilon, delta=0.0):
    """The shares of the budget for (counts, class sums, squares): public quantities only.

    First order (``docs/naive_bayes.rst``): with noise of variance ``V_x`` on
    each statistic, the expected excess log-loss (Kullback-Leibler divergence
    of the fitted model from the true one) of a Gaussian model with class
    priors ``pi``, class means and a shared variance ``s^2`` (in units of the
    squared half-width) is about ``(P/2) V_n / n^2 + (d P / (2 s^2)) V_S / n^2
    + (d / (4 s^4)) V_Q / n^2`` with ``P = sum_k 1 / pi_k``. Pure:
    ``V = 2 (Delta_1 / epsilon_x)^2``, and minimising ``sum a_x / epsilon_x^2``
    under ``sum epsilon_x = epsilon`` gives ``epsilon_x`` proportional to
    ``a_x^(1/3)``: ``(4 P)^(1/3) : (4 d^3 P / s^2)^(1/3) : (d^3 / (2 s^4))^(1/3)``.
    Concentrated: ``V = Delta_2^2 / (2 rho_x)``, and minimising ``sum a_x /
    rho_x`` gives ``rho_x`` proportional to ``a_x^(1/2)``: ``(P / 2)^(1/2) :
    d (P / s^2)^(1/2) : d / (2 sqrt 2 s^2)``. ``P = K^2`` (balanced classes)
    and ``s^2 = REFERENCE_VARIANCE``.

    The counts' share is then raised, if needed, so that the prior-only rule
    errs at most :data:`FLOOR_EXCESS` more than the majority class (the worst
    case over class gaps of ``gap * P[noise difference > n gap]``), but never
    above half the budget.

    Returns
    -------
    (counts, sums, squares) : tuple of float
        Positive, summing to 1.
    """
    s2 = REFERENCE_VARIANCE
    P = float(n_classes) ** 2
    if delta == 0:
        weights = np.array([4.0 * P, 4.0 * d**3 * P / s2, d**3 / (2.0 * s2 * s2)]) ** (1.0 / 3.0)
    else:
        weights = np.array([math.sqrt(P / 2.0), d * math.sqrt(P / s2),
                            d / (2.0 * math.sqrt(2.0) * s2)])
    shares = weights / weights.sum()
    count_share = min(max(shares[0], _count_floor(n, epsilon, delta)), 0.5)
    rest = (1.0 - count_share) / (shares[1] + shares[2])
    return (float(count_share), float(shares[1] * rest), float(shares[2] * rest))


def _count_floor(n, epsilon, delta):
    """The smallest counts' share at which the prior-only excess is <= FLOOR_EXCESS."""
    if delta == 0:
        # Laplace scale b = 2 / eps_n; excess <= _PRIOR_EXCESS_LAPLACE b / n.
        return 2.0 * _PRIOR_EXCESS_LAPLACE / (FLOOR_EXCESS * n) / epsilon
    # Gaussian sigma = 1 / sqrt(rho_n); excess <= _PRIOR_EXCESS_GAUSSIAN sigma / n.
    rho_needed = (_PRIOR_EXCESS_GAUSSIAN / (FLOOR_EXCESS * n)) ** 2
    return rho_needed / zcdp_rho(epsilon, delta)


def class_moments(X, class_index, n_classes, lower, upper, epsilon, rng, *, delta=0.0,
                  split=None, sample_weight=None):
    """Release noisy class counts, class sums of ``z`` and pooled sums of ``z^2``.

    Guarantee: the returned :class:`NoisyMoments` is ``epsilon``-DP
    (``delta = 0``) or ``(epsilon, delta)``-DP under replace-one neighbours
    (a row's features, class and weight together), for features clipped to the
    declared ``[lower, upper]`` and weights in ``[0, 1]``. Conditions, enforced
    here or by the grid maps: every contribution is bounded as in the module
    docstring's table (the clip and the grid make it so for every input); the
    noise scales come from those bounds and the shares of ``split`` only.
    Pure: three discrete Laplace releases at ``split_x epsilon``, basic
    composition (Ghosh, Roughgarden and Sundararajan 2009; Canonne, Kamath and
    Steinke 2020, Algorithm 2). Concentrated: three discrete Gaussian releases
    at ``split_x rho``, ``rho``-zCDP together (CKS 2020, Theorem 14), converted
    by :func:`~dpsk.mechanisms._counts.zcdp_rho`.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Finite features (private).
    class_index : ndarray of int of shape (n,)
        Each row's class, in ``[0, n_classes)`` (private).
    n_classes : int
        ``K``, declared.
    lower, upper : ndarray of shape (d,)
        Declared bounds.
    epsilon : float
    rng : NoiseSource
    delta : float, default=0.0
    split : tuple of 3 floats or None
        Shares for (counts, sums, squares); None: :func:`moments_split`.
    sample_weight : ndarray of shape (n,) or None
        Row weights in ``[0, 1]``.

    Returns
    -------
    moments : NoisyMoments
    event : PrivacyEvent
    """
    n, d = X.shape
    if split is None:
        split = moments_split(n, d, n_classes, epsilon, delta)
    G = RESOLUTION
    m = grid_values(X, lower, upper, G)
    if sample_weight is None:
        W, omega = 1, None
    else:
        W, omega = WEIGHT_GRID, grid_weights(sample_weight)
    check_int_range(n, W * G * G)
    counts, sums, squares = _integer_moments(m, class_index, n_classes, omega)
    noises = _noises(split, d, G, W, epsilon, delta)
    released = [add_count_noise(values, noise, rng)
                for values, noise in zip((counts, sums, squares), noises)]
    units = (W, W * G, W * G * G)
    moments = NoisyMoments(
        counts=released[0] / units[0], sums=released[1] / units[1],
        squares=released[2] / units[2],
        count_variance=noises[0].variance / units[0] ** 2,
        sum_variance=noises[1].variance / units[1] ** 2,
        square_variance=noises[2].variance / units[2] ** 2,
    )
    return moments, histogram_event(epsilon, delta)


def _integer_moments(m, class_index, n_classes, omega):
    """The exact integer statistics: counts (K,), class sums (K, d), square sums (d,)."""
    d = m.shape[1]
    weighted = m if omega is None else omega[:, None] * m
    counts = np.zeros(n_classes, dtype=np.int64)
    sums = np.zeros((n_classes, d), dtype=np.int64)
    for k in range(n_classes):  # one pass per class: exact int64 sums, no float rounding
        rows = class_index == k
        counts[k] = rows.sum() if omega is None else omega[rows].sum()
        sums[k] = weighted[rows].sum(axis=0, dtype=np.int64)
    squares = (weighted * m).sum(axis=0, dtype=np.int64)
    return counts, sums, squares


def _noises(split, d, G, W, epsilon, delta):
    """The noise law of each statistic (integer units), from the sensitivities' table."""
    if delta == 0:
        return tuple(laplace_noise(l1, share * epsilon) for l1, share in
                     zip((2 * W, 2 * d * G * W, d * G * G * W), split))
    rho = zcdp_rho(epsilon, delta)
    return tuple(gaussian_noise_for_rho(l2sq, share * rho) for l2sq, share in
                 zip((2 * W * W, 4 * d * G * G * W * W, d * G**4 * W * W), split))


def noise_laws(n, d, n_classes, epsilon, delta=0.0, split=None, weighted=False):
    """The three noise laws :func:`class_moments` would use (for tests and docs)."""
    if split is None:
        split = moments_split(n, d, n_classes, epsilon, delta)
    return _noises(split, d, RESOLUTION, WEIGHT_GRID if weighted else 1, epsilon, delta)

