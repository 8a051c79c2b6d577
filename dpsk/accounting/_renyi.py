"""Renyi-DP curves of single releases, the repeat-and-select bound, and the conversion.

Renyi DP (Mironov 2017): a mechanism is ``(alpha, rho)``-RDP when the Renyi
divergence of order ``alpha > 1`` between its output laws on any two neighbouring
data sets is at most ``rho``. A *curve* is the map ``alpha -> rho(alpha)``; here
it is always evaluated on a fixed, public grid of orders (:data:`ORDERS`), and
every bound below holds order by order, so a curve known on the grid is enough
for composition (curves add) and for the conversion to ``(epsilon, delta)``.

The derivations are in ``docs/grid_search.rst`` ("Repeat and select").
"""

import math

import numpy as np
from scipy.special import log_ndtr

__all__ = [
    "ORDERS",
    "pure_rdp",
    "gaussian_rdp",
    "gaussian_objective_rdp",
    "component_rdp",
    "mixture_rdp",
    "repeat_and_select_rdp",
    "tnb_mean",
    "rdp_to_dp",
]

#: The public grid of Renyi orders (the same as dp-accounting's default, so the
#: two can be compared order by order).
ORDERS = np.array([1.0 + x / 10.0 for x in range(1, 100)] + list(range(11, 64))
                  + [128.0, 256.0, 512.0, 1024.0])


def pure_rdp(epsilon, orders=ORDERS):
    """The Renyi curve of an arbitrary ``epsilon``-DP mechanism (tight).

    Every ``epsilon``-DP pair of output laws is a post-processing of binary
    randomised response with ``p = e^eps / (1 + e^eps)`` (Kairouz, Oh and
    Viswanath 2015, Theorem 2.4 with ``delta = 0``), and the Renyi divergence
    cannot grow under post-processing, so
    ``rho(alpha) = log(p^alpha q^(1-alpha) + q^alpha p^(1-alpha)) / (alpha - 1)``
    with ``q = 1 - p``; it is below ``min(epsilon, alpha epsilon^2 / 2)``.
    """
    orders = np.asarray(orders, dtype=float)
    eps = float(epsilon)
    log_p = -np.logaddexp(0.0, -eps)  # log(e^eps / (1 + e^eps))
    log_q = -np.logaddexp(0.0, eps)
    total = np.logaddexp(orders * log_p + (1.0 - orders) * log_q,
                         orders * log_q + (1.0 - orders) * log_p)
    return np.minimum(total / (orders - 1.0), eps)


def gaussian_rdp(noise_multiplier, orders=ORDERS):
    """``alpha / (2 sigma^2)``: the Gaussian mechanism, noise ``sigma`` times the L2
    sensitivity (Mironov 2017, Proposition 7)."""
    return np.asarray(orders, dtype=float) / (2.0 * float(noise_multiplier) ** 2)


def gaussian_objective_rdp(unit_sigma, epsilon_jacobian, orders=ORDERS):
    """Gaussian objective perturbation (``dpsk.mechanisms._noise.gaussian_objective_delta``).

    That derivation bounds the privacy loss at the release by ``L = eps_J + 2 /
    s^2 + (|g1| + |g2|) / s`` (``s`` = ``unit_sigma``, ``g1, g2`` normal with
    variance at most 1 under the first data set). The Renyi divergence of order
    ``alpha`` is ``log E[exp((alpha - 1) L)] / (alpha - 1)``; Cauchy-Schwarz gives
    ``E[e^(t|g1|) e^(t|g2|)] <= E[e^(2t|g|)]`` and ``E[e^(u|g|)] = 2 e^(u^2/2)
    Phi(u)``, so with ``u = 2 (alpha - 1) / s``::

        rho(alpha) = eps_J + 2 alpha / s^2 + log(2 Phi(u)) / (alpha - 1).
    """
    orders = np.asarray(orders, dtype=float)
    s = float(unit_sigma)
    u = 2.0 * (orders - 1.0) / s
    return (float(epsilon_jacobian) + 2.0 * orders / s**2
            + (math.log(2.0) + log_ndtr(u)) / (orders - 1.0))


def component_rdp(component, orders=ORDERS):
    """The curve of one component ``(kind, *parameters, count)`` of a run.

    ``("pure", epsilon, count)``, ``("gaussian", noise_multiplier, count)``,
    ``("gaussian-objective", unit_sigma, epsilon_jacobian, count)``: ``count``
    releases of that kind, composed (curves add, Mironov 2017, Proposition 1).
    """
    kind, *params, count = component
    if kind == "pure":
        curve = pure_rdp(*params, orders)
    elif kind == "gaussian":
        curve = gaussian_rdp(*params, orders)
    elif kind == "gaussian-objective":
        curve = gaussian_objective_rdp(*params, orders)
    else:
        raise ValueError(f"Unknown Renyi component kind {kind!r}.")
    return int(count) * curve


def mixture_rdp(candidates, orders=ORDERS):
    """The curve of one run that picks a candidate uniformly, then runs it.

    ``candidates`` is a sequence of component lists, one per candidate. The
    candidate's index is part of the output, so the output laws of different
    candidates have disjoint supports and
    ``exp((alpha - 1) rho) = (1/m) sum_i exp((alpha - 1) rho_i)``: the
    log-mean-exp of the candidates' curves (never more than their maximum).
    """
    orders = np.asarray(orders, dtype=float)
    curves = np.array([sum(component_rdp(c, orders) for c in cand) for cand in candidates])
    scaled = (orders - 1.0) * curves
    top = scaled.max(axis=0)
    mean = top + np.log(np.mean(np.exp(scaled - top), axis=0))
    return mean / (orders - 1.0)


def tnb_mean(eta, gamma):
    """``E[K]`` of the truncated negative binomial law ``D_(eta, gamma)``.

    ``P[K = k] = (1 - gamma)^k prod_(l<k) (l + eta) / (l + 1) / (gamma^-eta - 1)``
    for ``eta > 0`` (``eta = 1`` is the geometric law), and the logarithmic law
    ``(1 - gamma)^k / (k log(1 / gamma))`` for ``eta = 0`` (Papernot and
    Steinke 2022, Section 2).
    """
    eta, gamma = float(eta), float(gamma)
    if eta == 0.0:
        return (1.0 / gamma - 1.0) / math.log(1.0 / gamma)
    return eta * (1.0 - gamma) / (gamma * (1.0 - gamma**eta))


def repeat_and_select_rdp(run_rdp, eta, gamma, orders=ORDERS):
    """Papernot and Steinke (2022), Theorem 2: the best of ``K ~ D_(eta, gamma)`` runs.

    If one run is ``(lambda, rho(lambda))``-RDP at every order of the grid, the
    whole procedure (run ``K`` times independently, release the best run only)
    is RDP with, at every order ``lambda > 1``::

        rho(lambda) + (1 + eta) min_mu [(1 - 1/mu) rho(mu) + log(1/gamma) / mu]
                    + log(E[K]) / (lambda - 1)

    (``mu`` over the grid). RDP is non-decreasing in the order, so each value is
    then replaced by the smallest one at any order above it.
    """
    orders = np.asarray(orders, dtype=float)
    rho = np.asarray(run_rdp, dtype=float)
    eta, gamma = float(eta), float(gamma)
    # The mean rounded up: the bound grows with it.
    mean = tnb_mean(eta, gamma) * (1.0 + 1e-12)
    constant = (1.0 + eta) * np.min((1.0 - 1.0 / orders) * rho + math.log(1.0 / gamma) / orders)
    out = rho + constant + math.log(mean) / (orders - 1.0)
    return np.minimum.accumulate(out[::-1])[::-1]


def rdp_to_dp(rdp, delta, orders=ORDERS):
    """The smallest epsilon over the grid at which a curve gives ``(epsilon, delta)``-DP.

    Conversion of Balle et al. (2020, "Hypothesis testing interpretations and
    Renyi differential privacy", Theorem 21; also Canonne, Kamath and Steinke
    2020, Proposition 12): ``(alpha, rho)``-RDP implies ``(epsilon, delta)``-DP
    with ``epsilon = rho + log((alpha - 1) / alpha) - (log delta + log alpha) /
    (alpha - 1)``. Returns ``inf`` for ``delta = 0``.
    """
    if delta <= 0:
        return math.inf
    orders = np.asarray(orders, dtype=float)
    rdp = np.asarray(rdp, dtype=float)
    eps = (rdp + np.log1p(-1.0 / orders)
           - (math.log(delta) + np.log(orders)) / (orders - 1.0))
    return float(max(np.min(eps), 0.0))
