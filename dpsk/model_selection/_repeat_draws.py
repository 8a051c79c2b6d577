"""Exact samplers of the repeat-and-select tuner: integers from integer bits only.

Everything here is drawn with :meth:`~dpsk.mechanisms._random.NoiseSource.randbelow`
and rational arithmetic (``fractions.Fraction``), so each integer output has
exactly the probability its law gives it: no floating-point rounding enters a
law that a privacy proof relies on. Float parameters are converted to
``Fraction`` exactly (a double is a dyadic rational).

* :func:`discrete_laplace` -- ``P[Z = z]`` proportional to ``exp(-epsilon |z|)``
  (the shared sampler of :mod:`dpsk.mechanisms._discrete`, after Canonne,
  Kamath and Steinke 2020, Algorithm 2), the score noise of pure runs;
* :func:`discrete_gaussian` -- ``P[Z = z]`` proportional to ``exp(-z^2 / (2
  sigma2))``, the shared sampler itself (Algorithm 3 of the same paper; it takes
  ``sigma2`` exactly), the score noise of the others;
* :func:`truncated_negative_binomial` -- the number of runs ``K`` of Papernot and
  Steinke (2022), by rejection from the geometric law.
"""

from fractions import Fraction

from ..mechanisms._discrete import bernoulli, bernoulli_exp, discrete_gaussian, to_fraction
from ..mechanisms._discrete import discrete_laplace as _discrete_laplace

__all__ = ["as_fraction", "bernoulli", "bernoulli_exp", "discrete_gaussian",
           "discrete_laplace", "truncated_negative_binomial", "tnb_acceptance"]


def as_fraction(value):
    """``value`` as an exact ``Fraction`` (floats are dyadic rationals)."""
    return to_fraction(value)


def discrete_laplace(epsilon, rng):
    """An integer ``Z`` with ``P[Z = z] = (1 - p) / (1 + p) p^|z|``, ``p = exp(-epsilon)``.

    The shared exact sampler (:func:`dpsk.mechanisms._discrete.discrete_laplace`)
    at the rational scale ``1 / epsilon``.
    """
    eps = as_fraction(epsilon)
    if eps <= 0:
        raise ValueError("epsilon must be > 0.")
    return _discrete_laplace(1 / eps, rng)


def tnb_acceptance(eta, k):
    """``prod_(l=1)^(k-1) (l + eta) / (l + 1)``: the rejection step's acceptance of ``k``."""
    eta = as_fraction(eta)
    accept = Fraction(1)
    for ell in range(1, int(k)):
        accept *= (ell + eta) / (ell + 1)
    return accept


def truncated_negative_binomial(eta, gamma, rng):
    """``K >= 1`` from the law ``D_(eta, gamma)`` of Papernot and Steinke (2022).

    ``P[K = k]`` is proportional to ``(1 - gamma)^k prod_(l<k) (l + eta) / (l +
    1)`` for ``eta`` in (0, 1] and to ``(1 - gamma)^k / k`` for ``eta = 0`` (the
    logarithmic law). Draw ``G`` geometric on {1, 2, ...} (``P[G = k] = gamma
    (1 - gamma)^(k - 1)``, by exact ``gamma``-coins) and accept it with
    probability :func:`tnb_acceptance` ``(eta, G)``, at most 1 because every
    factor is: the accepted ``G`` has probability proportional to ``(1 -
    gamma)^(k-1) prod_(l=1)^(k-1) (l + eta) / (l + 1)``, which is the law above
    (the ``l = 0`` factor ``eta`` and one ``1 - gamma`` are constants; for
    ``eta = 0`` the product is ``1 / k``). ``eta = 1`` accepts every ``G``.
    """
    eta, gamma = as_fraction(eta), as_fraction(gamma)
    if not 0 <= eta <= 1:
        raise ValueError("eta must be in [0, 1].")
    if not 0 < gamma < 1:
        raise ValueError("gamma must be in (0, 1).")
    while True:
        k = 1
        while not bernoulli(gamma, rng):
            k += 1
        if eta == 1 or bernoulli(tnb_acceptance(eta, k), rng):
            return k
