"""Exact samplers of the repeat-and-select tuner: integers from integer bits only.

Everything here is drawn with :meth:`~dpsk.mechanisms._random.NoiseSource.randbelow`
and rational arithmetic (``fractions.Fraction``), so each integer output has
exactly the probability its law gives it: no floating-point rounding enters a
law that a privacy proof relies on. Float parameters are converted to
``Fraction`` exactly (a double is a dyadic rational).

* :func:`bernoulli_exp` -- ``Bernoulli(exp(-gamma))`` for rational ``gamma >= 0``
  (Canonne, Kamath and Steinke 2020, "The discrete Gaussian for differential
  privacy", Algorithm 1 and the reduction below it);
* :func:`discrete_laplace` -- ``P[Z = z]`` proportional to ``exp(-epsilon |z|)``
  (their Algorithm 2);
* :func:`truncated_negative_binomial` -- the number of runs ``K`` of Papernot and
  Steinke (2022), by rejection from the geometric law.
"""

from fractions import Fraction

__all__ = ["as_fraction", "bernoulli", "bernoulli_exp", "discrete_laplace",
           "truncated_negative_binomial", "tnb_acceptance"]


def as_fraction(value):
    """``value`` as an exact ``Fraction`` (floats are dyadic rationals)."""
    return value if isinstance(value, Fraction) else Fraction(value)


def bernoulli(p, rng):
    """True with probability exactly ``p`` (a rational in [0, 1])."""
    p = as_fraction(p)
    return rng.randbelow(p.denominator) < p.numerator


def bernoulli_exp(gamma, rng):
    """True with probability exactly ``exp(-gamma)``, rational ``gamma >= 0``.

    For ``gamma <= 1``: draw ``A_k ~ Bernoulli(gamma / k)`` for ``k = 1, 2, ...``
    until the first failure at ``k = K``; ``P[K > k] = gamma^k / k!``, so ``P[K
    odd] = sum_j (-gamma)^j / j! = exp(-gamma)``. Larger ``gamma`` is split
    into ``floor(gamma)`` independent ``exp(-1)`` coins and one for the rest.
    """
    gamma = as_fraction(gamma)
    if gamma < 0:
        raise ValueError("gamma must be >= 0.")
    if gamma > 1:
        whole = int(gamma)  # floor for gamma > 0
        for _ in range(whole):
            if not bernoulli_exp(Fraction(1), rng):
                return False
        return bernoulli_exp(gamma - whole, rng)
    k = 1
    while bernoulli(gamma / k, rng):
        k += 1
    return k % 2 == 1


def discrete_laplace(epsilon, rng):
    """An integer ``Z`` with ``P[Z = z] = (1 - p) / (1 + p) p^|z|``, ``p = exp(-epsilon)``.

    ``epsilon = s / t`` in lowest terms. ``U`` uniform on ``{0..t-1}`` kept
    with probability ``exp(-U / t)`` and ``V`` with ``P[V = v]`` proportional
    to ``exp(-v)`` make ``X = U + t V`` with ``P[X = x]`` proportional to
    ``exp(-x / t)``; then ``Y = floor(X / s)`` has ``P[Y = y]`` proportional to
    ``exp(-y s / t)``, and a fair sign (rejecting the negative zero) gives the
    two-sided law.
    """
    eps = as_fraction(epsilon)
    if eps <= 0:
        raise ValueError("epsilon must be > 0.")
    s, t = eps.numerator, eps.denominator
    while True:
        u = rng.randbelow(t)
        if not bernoulli_exp(Fraction(u, t), rng):
            continue
        v = 0
        while bernoulli_exp(Fraction(1), rng):
            v += 1
        y = (u + t * v) // s
        negative = rng.randbelow(2) == 1
        if negative and y == 0:
            continue
        return -y if negative else y


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
