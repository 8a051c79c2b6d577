"""Privacy mechanisms as plain functions: calibrate a noise scale, then draw.

Each function states the guarantee it gives and the conditions it relies on.
Estimators never compute a noise scale themselves: they call these, so every
formula exists once and is tested once (``tests/test_mechanisms.py``).

Notation follows Chaudhuri, Monteleoni and Sarwate (2011), "Differentially
private empirical risk minimization", JMLR 12: ``n`` rows with ``||x|| <= 1``,
labels in {-1, +1}, a loss with ``|l'| <= 1`` (and ``l'' <= c``), and the
objective ``J(w) = (1/n) sum_i l(y_i w.x_i) + (alpha/2) ||w||^2``.
"""

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq
from scipy.special import log_ndtr, ndtr

from ._random import NoiseSource

__all__ = [
    "gamma_norm_noise",
    "output_perturbation_beta",
    "ObjectiveCalibration",
    "objective_perturbation_calibration",
    "solver_residual_beta",
    "exponential_mechanism",
    "analytic_gaussian_sigma",
    "classical_gaussian_sigma",
    "gaussian_delta",
    "gaussian_noise",
]


def gamma_norm_noise(d, beta, rng):
    """Draw ``b`` in R^d with density proportional to ``exp(-beta * ||b||)``.

    This is the noise of Algorithms 1 and 2 of Chaudhuri et al. (2011), their
    Eq. (7). In polar coordinates the density factorises: the norm ``||b||``
    follows Gamma(shape=d, scale=1/beta) (the ``r^(d-1)`` surface factor times
    ``exp(-beta r)``) and the direction is uniform on the sphere, independent of
    the norm. We draw exactly that.

    Parameters
    ----------
    d : int
        Dimension, >= 1.
    beta : float
        Rate, > 0. The expected norm is ``d / beta``.
    rng : NoiseSource
        Source of the noise (``dpsk._random``): the OS's secure generator, or a
        seeded one in tests. Secure sources never repeat a draw.

    Returns
    -------
    b : ndarray of shape (d,)
    """
    _check_noise_source(rng)
    d = int(d)
    if d < 1:
        raise ValueError(f"d must be >= 1, got {d}.")
    if not (np.isfinite(beta) and beta > 0):
        raise ValueError(f"beta must be a finite number > 0, got {beta!r}.")
    direction = rng.standard_normal(d)
    norm_dir = np.linalg.norm(direction)
    while norm_dir == 0.0:  # probability zero, but never divide by it
        direction = rng.standard_normal(d)
        norm_dir = np.linalg.norm(direction)
    radius = rng.gamma(shape=d, scale=1.0 / beta)
    return direction * (radius / norm_dir)


def output_perturbation_beta(epsilon, n, alpha, lipschitz=1.0, solver_tol=0.0):
    """Rate ``beta`` of the output-perturbation noise (Algorithm 1).

    Guarantee: releasing ``w + b``, with ``w`` any point whose gradient norm of
    ``J`` is at most ``solver_tol`` and ``b ~ gamma_norm_noise(d, beta)``, is
    ``epsilon``-differentially private (neighbours differ in one row).

    Why: by Corollary 1 of Chaudhuri et al. (2011) the exact minimiser ``w*``
    of an ``alpha``-strongly convex ``J`` with ``||x|| <= 1`` and
    ``|l'| <= lipschitz`` moves by at most ``2 * lipschitz / (n * alpha)``
    between neighbours (Theorem 1). An inexact solution lies within
    ``solver_tol / alpha`` of ``w*`` (strong convexity), so its sensitivity is
    at most ``2 * lipschitz / (n * alpha) + 2 * solver_tol / alpha``; the noise
    with ``beta = epsilon / sensitivity`` masks that (the paper's
    ``beta = n * alpha * epsilon / 2`` when ``solver_tol = 0``).

    Parameters
    ----------
    epsilon : float
        Privacy parameter, > 0.
    n : int
        Number of rows (treated as public, as in the paper).
    alpha : float
        Strong-convexity (L2 regularisation) strength, > 0.
    lipschitz : float, default=1.0
        Bound on ``|l'|`` times the row-norm bound.
    solver_tol : float, default=0.0
        Bound on the gradient norm the solver is guaranteed to reach; it must be
        fixed before seeing the data.

    Returns
    -------
    beta : float
    """
    _check_positive(epsilon=epsilon, n=n, alpha=alpha, lipschitz=lipschitz)
    if not solver_tol >= 0:
        raise ValueError(f"solver_tol must be >= 0, got {solver_tol!r}.")
    sensitivity = 2.0 * lipschitz / (n * alpha) + 2.0 * solver_tol / alpha
    return epsilon / sensitivity


@dataclass(frozen=True)
class ObjectiveCalibration:
    """Outcome of calibrating objective perturbation (Algorithm 2).

    Attributes
    ----------
    beta : float
        Rate of the noise ``b`` added to the objective as ``(1/n) b.w``.
    extra_alpha : float
        The paper's ``Delta``: extra L2 regularisation added when the slack
        ``log(1 + 2c/(n alpha) + c^2/(n alpha)^2)`` would eat the whole budget.
    epsilon_prime : float
        The paper's ``epsilon'``, the part of epsilon left for the noise.
    """

    beta: float
    extra_alpha: float
    epsilon_prime: float


def objective_perturbation_calibration(epsilon, n, alpha, curvature):
    """Calibrate objective perturbation, Algorithm 2 of Chaudhuri et al. (2011).

    Guarantee (their Theorem 2, and Theorem 7 for the Huber loss): the exact
    minimiser of ``J(w) + (1/n) b.w + (extra_alpha/2) ||w||^2`` with
    ``b ~ gamma_norm_noise(d, beta)`` is ``epsilon``-differentially private,
    provided ``||x|| <= 1``, labels in {-1, +1}, the loss is convex and
    differentiable with ``|l'| <= 1`` and ``l'' <= curvature``, and the
    regulariser is ``alpha/2 ||w||^2``.

    The calibration: ``eps' = eps - log(1 + 2c/(n alpha) + c^2/(n alpha)^2)``;
    if ``eps' > 0`` no extra regularisation is needed, otherwise
    ``Delta = c / (n (exp(eps/4) - 1)) - alpha`` and ``eps' = eps/2``; finally
    ``beta = eps'/2``.

    Parameters
    ----------
    epsilon : float
        Privacy parameter, > 0.
    n : int
        Number of rows.
    alpha : float
        Regularisation strength, > 0.
    curvature : float
        The loss constant ``c`` bounding ``l''``, > 0.

    Returns
    -------
    ObjectiveCalibration
    """
    _check_positive(epsilon=epsilon, n=n, alpha=alpha, curvature=curvature)
    ratio = curvature / (n * alpha)
    epsilon_prime = epsilon - np.log1p(2.0 * ratio + ratio**2)
    extra_alpha = 0.0
    if epsilon_prime <= 0:
        extra_alpha = curvature / (n * np.expm1(epsilon / 4.0)) - alpha
        epsilon_prime = epsilon / 2.0
        # With eps' <= 0 the formula gives Delta > 0; the max only guards rounding.
        extra_alpha = max(extra_alpha, 0.0)
    return ObjectiveCalibration(
        beta=epsilon_prime / 2.0, extra_alpha=extra_alpha, epsilon_prime=epsilon_prime
    )


def solver_residual_beta(epsilon, strong_convexity, solver_tol):
    """Rate of the extra noise that covers an inexact objective-perturbation solve.

    Guarantee: if the exact perturbed minimiser ``w*`` is ``eps1``-DP and the
    released point ``w = w* + e`` satisfies ``||e|| <= r = solver_tol /
    strong_convexity`` (the solver reached gradient norm ``solver_tol`` on a
    ``strong_convexity``-strongly convex objective), then releasing
    ``w + b'`` with ``b' ~ gamma_norm_noise(d, beta)``, ``beta = epsilon / (2r)``,
    is ``(eps1 + epsilon)``-DP.

    Why: conditioned on ``w* = v`` the density of the release at ``u`` is an
    average of ``exp(-beta ||u - v - e||)`` terms, each within a factor
    ``exp(beta r)`` of ``exp(-beta ||u - v||)``; the latter is the same for both
    neighbours, so the data-dependent ``e`` costs at most ``exp(2 beta r)`` =
    ``exp(epsilon)`` on top of the ``exp(eps1)`` of ``w*``. This is the pure-DP
    analogue of the inexact-solver argument of Lowy and Razaviyayn (2021) and of
    "approximate minima perturbation" (Iyengar et al., 2019).

    Parameters
    ----------
    epsilon : float
        The share of the budget spent on this step, > 0.
    strong_convexity : float
        Strong-convexity modulus of the solved objective, > 0.
    solver_tol : float
        Gradient-norm bound the solver is guaranteed to reach, > 0, fixed before
        seeing the data.

    Returns
    -------
    beta : float
    """
    _check_positive(
        epsilon=epsilon, strong_convexity=strong_convexity, solver_tol=solver_tol
    )
    radius = solver_tol / strong_convexity
    return epsilon / (2.0 * radius)


def exponential_mechanism(utilities, epsilon, sensitivity, rng):
    """Pick an index with probability proportional to ``exp(eps u / (2 sens))``.

    Guarantee (McSherry and Talwar, 2007): if every utility changes by at most
    ``sensitivity`` between neighbouring data sets, the chosen index is
    ``epsilon``-differentially private. Algorithm 4 of Chaudhuri et al. (2011)
    uses it with ``u_i = -z_i`` (minus the number of mistakes of candidate
    ``i`` on a held-out part), sensitivity 1: probability proportional to
    ``exp(-eps z_i / 2)``.

    Parameters
    ----------
    utilities : array-like of shape (m,)
        Finite utilities, larger is better.
    epsilon : float
        Privacy parameter, > 0.
    sensitivity : float
        Bound on the change of any utility between neighbours, > 0.
    rng : NoiseSource

    Returns
    -------
    index : int
    probabilities : ndarray of shape (m,)
        The selection probabilities (they depend on the private utilities: do
        not release them).
    """
    _check_positive(epsilon=epsilon, sensitivity=sensitivity)
    _check_noise_source(rng)
    u = np.asarray(utilities, dtype=float)
    if u.ndim != 1 or u.size == 0 or not np.all(np.isfinite(u)):
        raise ValueError("utilities must be a non-empty 1-d array of finite numbers.")
    logits = epsilon * u / (2.0 * sensitivity)
    logits -= logits.max()  # shift for stability; the distribution is unchanged
    p = np.exp(logits)
    p /= p.sum()
    return int(rng.choice(u.size, p=p)), p


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
    _check_positive(sigma=sigma, sensitivity=sensitivity)
    if not (np.isfinite(epsilon) and epsilon >= 0):
        raise ValueError(f"epsilon must be a finite number >= 0, got {epsilon!r}.")
    a = sensitivity / (2.0 * sigma)
    b = epsilon * sigma / sensitivity
    first = ndtr(a - b)
    second = math.exp(epsilon + log_ndtr(-a - b))
    return float(min(max(first - second, 0.0), 1.0))


def analytic_gaussian_sigma(epsilon, delta, sensitivity):
    """The smallest Gaussian noise scale giving (epsilon, delta)-DP (analytic Gaussian).

    Guarantee (Balle and Wang 2018, Theorem 8 and their Algorithm 1): releasing
    ``f(D) + N(0, sigma^2 I)`` with ``||f(D) - f(D')||_2 <= sensitivity`` for
    all neighbours is ``(epsilon, delta)``-differentially private, and no
    smaller ``sigma`` is. Valid for every ``epsilon > 0`` (the classical
    ``sqrt(2 ln(1.25/delta)) Delta / epsilon`` needs ``epsilon < 1``, and is
    larger).

    Derivation: :func:`gaussian_delta` is continuous and strictly decreasing in
    ``sigma`` from 1 (sigma -> 0) to 0 (sigma -> inf), so the equation
    ``gaussian_delta(sigma) = delta`` has one root. It is bracketed by doubling
    or halving from the classical scale and found by Brent's method; the
    returned sigma is nudged up by one part in 1e12 and checked, so the
    guarantee never rests on the root finder's last digit.

    Parameters
    ----------
    epsilon : float
        > 0.
    delta : float
        In (0, 1).
    sensitivity : float
        L2 sensitivity, > 0.

    Returns
    -------
    sigma : float
    """
    _check_positive(epsilon=epsilon, sensitivity=sensitivity)
    if not (0.0 < delta < 1.0):
        raise ValueError(f"delta must be in (0, 1), got {delta!r}.")

    def excess(log_sigma):
        return gaussian_delta(math.exp(log_sigma), epsilon, sensitivity) - delta

    guess = math.log(sensitivity * math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon)
    lo, hi = guess - 1.0, guess + 1.0
    while excess(lo) <= 0:
        lo -= 2.0
    while excess(hi) > 0:
        hi += 2.0
    sigma = math.exp(brentq(excess, lo, hi, xtol=1e-14, rtol=1e-14)) * (1.0 + 1e-12)
    while gaussian_delta(sigma, epsilon, sensitivity) > delta:  # pragma: no cover
        sigma *= 1.0 + 1e-9
    return sigma


def classical_gaussian_sigma(epsilon, delta, sensitivity):
    """The textbook scale ``sqrt(2 ln(1.25/delta)) sensitivity / epsilon``.

    Dwork and Roth (2014), Theorem A.1: (epsilon, delta)-DP only for
    ``epsilon < 1``. Kept for comparison (dpsk calibrates with
    :func:`analytic_gaussian_sigma`, which is smaller and valid for every
    epsilon).
    """
    _check_positive(epsilon=epsilon, sensitivity=sensitivity)
    if not (0.0 < delta < 1.0):
        raise ValueError(f"delta must be in (0, 1), got {delta!r}.")
    return math.sqrt(2.0 * math.log(1.25 / delta)) * sensitivity / epsilon


def gaussian_noise(d, sigma, rng):
    """Draw ``N(0, sigma^2 I_d)`` from a :class:`~dpsk._random.NoiseSource`."""
    _check_noise_source(rng)
    _check_positive(sigma=sigma)
    return sigma * rng.standard_normal(int(d))


def _check_positive(**values):
    for name, value in values.items():
        if not (np.isfinite(value) and value > 0):
            raise ValueError(f"{name} must be a finite number > 0, got {value!r}.")


def _check_noise_source(rng):
    # Privacy noise only from a NoiseSource: a numpy Generator here would mean a
    # stateful, replayable, non-cryptographic stream had reached a mechanism.
    if not isinstance(rng, NoiseSource):
        raise TypeError(
            "Privacy noise must come from a dpsk._random.NoiseSource, got "
            f"{type(rng).__name__}."
        )
