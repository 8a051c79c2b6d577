"""Private selection from private candidates: random stopping (Liu and Talwar 2019).

The mechanisms of ``DPGridSearch(method="random-stopping")`` as plain functions:

* :func:`random_stopping_plan` draws the secret number of runs ``K ~ Geometric(gamma)``
  and the candidate of every run, before any data is read;
* :func:`noisy_count` makes a run's quality score private: an integer count of
  sensitivity 1 plus two-sided geometric (discrete Laplace) noise;
* :func:`first_best` picks the run with the highest noisy score.

The guarantee of the whole procedure (:data:`RANDOM_STOPPING_FACTOR`) and its
derivation are in ``docs/grid_search.rst``.
"""

from fractions import Fraction

import numpy as np

from ..mechanisms._discrete import discrete_laplace, geometric
from ..mechanisms._noise import _check_noise_source, _check_positive

__all__ = [
    "RANDOM_STOPPING_FACTOR",
    "default_stop_probability",
    "random_stopping_plan",
    "discrete_laplace_noise",
    "noisy_count",
    "first_best",
]

#: Liu and Talwar (2019), Theorem 3.4 with T = infinity: if one run is
#: ``eps0``-DP, running ``K ~ Geometric(gamma)`` independent runs and releasing
#: the best one is ``3 eps0``-DP, for every ``gamma`` in (0, 1].
RANDOM_STOPPING_FACTOR = 3

#: The default ``gamma`` is ``1 / (RUNS_PER_CANDIDATE * m)``: ten runs per
#: candidate in expectation.
RUNS_PER_CANDIDATE = 10


def default_stop_probability(n_candidates):
    """``gamma = 1 / (10 m)``: ``10 m`` runs in expectation.

    A given candidate is never run with probability ``E[(1 - 1/m)^K] =
    (m - 1) gamma / (1 + (m - 1) gamma) < 1 / 11``. A function of ``m`` only.
    """
    return 1.0 / (RUNS_PER_CANDIDATE * int(n_candidates))


def random_stopping_plan(n_candidates, stop_probability, rng):
    """The secret plan of a random-stopping search: which candidate each run trains.

    The number of runs is ``K ~ Geometric(stop_probability)`` on {1, 2, ...}
    (``P[K = k] = gamma (1 - gamma)^(k - 1)``): it is the same as flipping a
    ``gamma``-coin after every run and stopping on heads (Liu and Talwar 2019,
    Algorithm 2), drawn up front. Every run's candidate is uniform on
    ``range(n_candidates)``. Both are drawn from the noise source and never
    looked at together with the data: the guarantee of the search holds only
    if ``K`` stays secret (see ``docs/grid_search.rst``).

    Both laws are exact, for the exact rational value of the float ``gamma``:
    ``K - 1`` comes from :func:`~dpsk.mechanisms._discrete.geometric` and each
    candidate from ``NoiseSource.randbelow``, in integer arithmetic on uniform
    bits (the guarantee holds for every ``gamma`` in (0, 1], so the float's
    value is as good as ``1 / (10 m)``).

    Parameters
    ----------
    n_candidates : int
        ``m >= 1``.
    stop_probability : float
        ``gamma`` in (0, 1].
    rng : NoiseSource

    Returns
    -------
    candidates : ndarray of int of shape (K,)
    """
    _check_noise_source(rng)
    m = int(n_candidates)
    if m < 1:
        raise ValueError(f"n_candidates must be >= 1, got {n_candidates!r}.")
    gamma = float(stop_probability)
    if not 0.0 < gamma <= 1.0:
        raise ValueError(f"stop_probability must be in (0, 1], got {stop_probability!r}.")
    n_runs = 1 + geometric(Fraction(gamma), rng)
    return np.array([rng.randbelow(m) for _ in range(n_runs)], dtype=np.int64)


def discrete_laplace_noise(epsilon, rng, size=None):
    """Integers ``Z`` with ``P[Z = z] = (1 - p) / (1 + p) p^|z|``, ``p = exp(-epsilon)``.

    Exact: :func:`~dpsk.mechanisms._discrete.discrete_laplace` with scale
    ``1 / epsilon`` (Canonne, Kamath and Steinke 2020, Algorithm 2), for the
    exact rational value of the float ``epsilon``, in integer arithmetic on
    uniform bits. This is the two-sided geometric law of Ghosh, Roughgarden and
    Sundararajan (2009).
    """
    _check_noise_source(rng)
    _check_positive(epsilon=epsilon)
    scale = 1 / Fraction(float(epsilon))
    if size is None:
        return discrete_laplace(scale, rng)
    count = int(np.prod(size, dtype=np.int64))
    draws = [discrete_laplace(scale, rng) for _ in range(count)]
    return np.array(draws, dtype=np.int64).reshape(size)


def noisy_count(count, epsilon, rng):
    """Release an integer count of sensitivity 1 with discrete Laplace noise.

    Guarantee (the geometric mechanism of Ghosh, Roughgarden and Sundararajan
    2009, "Universally utility-maximizing privacy mechanisms", STOC): if
    ``count`` changes by at most 1 between neighbouring data sets, ``count + Z`` with ``Z`` from
    :func:`discrete_laplace_noise` is ``epsilon``-DP. Why: for outputs ``r``
    the probabilities are ``c p^|r - count|``, and ``| |r - a| - |r - b| | <=
    |a - b| <= 1`` makes their ratio at most ``1 / p = exp(epsilon)``. The
    release is an integer computed in exact integer arithmetic, so its bits
    carry nothing but the value (no floating-point leak of the Laplace kind,
    Mironov 2012), and the noise has exactly this law (an exact sampler,
    Canonne, Kamath and Steinke 2020, Algorithm 2), so no ``delta`` is left.

    Parameters
    ----------
    count : int
        The private count (e.g. correct predictions on a held-out part).
    epsilon : float
        > 0 and finite.
    rng : NoiseSource

    Returns
    -------
    noisy : int
    """
    return int(count) + discrete_laplace_noise(epsilon, rng)


def first_best(scores):
    """Index of the first maximum of ``scores`` (ties go to the earliest run).

    The derivation in ``docs/grid_search.rst`` covers ties broken by run order.
    """
    scores = np.asarray(scores)
    if scores.ndim != 1 or scores.size == 0:
        raise ValueError("scores must be a non-empty 1-d array.")
    return int(np.argmax(scores))
