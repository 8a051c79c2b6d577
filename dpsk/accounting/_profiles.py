"""Privacy profiles: delta as a function of epsilon for the basic mechanisms.

The ledger converts Gaussian releases to (epsilon, delta) with these, and the
mechanisms calibrate their noise by inverting them
(:func:`dpsk.mechanisms._noise.analytic_gaussian_sigma`). They live in the
accounting wing because they describe a release's privacy, not how it is drawn.
"""

import math

import numpy as np
from scipy.special import log_ndtr, ndtr

__all__ = ["gaussian_delta"]


def gaussian_delta(sigma, epsilon, sensitivity):
    """The smallest delta for which ``f + N(0, sigma^2 I)`` is (epsilon, delta)-DP.

    Balle and Wang (2018), "Improving the Gaussian mechanism for differential
    privacy: analytical calibration and optimal denoising", ICML, Theorem 8:
    for an L2-sensitivity ``Delta`` the Gaussian mechanism is
    ``(epsilon, delta)``-DP if and only if

    ``Phi(Delta/(2 sigma) - epsilon sigma/Delta)
    - exp(epsilon) Phi(-Delta/(2 sigma) - epsilon sigma/Delta) <= delta``,

    with ``Phi`` the standard normal distribution function. Why: the privacy
    loss of a Gaussian shift by ``Delta`` is itself normal, with mean
    ``mu = Delta^2 / (2 sigma^2)`` and variance ``2 mu``; the expression is
    ``P[L > epsilon] - exp(epsilon) P[L' > epsilon]`` for the two neighbours'
    losses, which is the exact (epsilon, delta) profile of the pair. The second
    term is computed in log space (``log_ndtr``), so large epsilon does not
    overflow.

    Parameters
    ----------
    sigma, epsilon, sensitivity : float
        > 0 (epsilon may be 0).

    Returns
    -------
    delta : float in [0, 1]
    """
    for name, value in (("sigma", sigma), ("sensitivity", sensitivity)):
        if not (np.isfinite(value) and value > 0):
            raise ValueError(f"{name} must be a finite number > 0, got {value!r}.")
    if not (np.isfinite(epsilon) and epsilon >= 0):
        raise ValueError(f"epsilon must be a finite number >= 0, got {epsilon!r}.")
    a = sensitivity / (2.0 * sigma)
    b = epsilon * sigma / sensitivity
    first = ndtr(a - b)
    second = math.exp(epsilon + log_ndtr(-a - b))
    return float(min(max(first - second, 0.0), 1.0))
