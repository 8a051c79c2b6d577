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

from ..accounting._profiles import gaussian_delta
from ._random import NoiseSource
from ._samplers import _GRID_INT_LIMIT, add_on_grid, gamma_norm_noise, gaussian_noise  # noqa: F401

__all__ = [
    "gamma_norm_noise",
    "output_perturbation_beta",
    "output_perturbation_sensitivity",
    "ObjectiveCalibration",
    "objective_perturbation_calibration",
    "solver_residual_beta",
    "exponential_mechanism",
    "analytic_gaussian_sigma",
    "classical_gaussian_sigma",
    "gaussian_delta",
    "gaussian_noise",
    "GaussianObjectiveCalibration",
    "gaussian_objective_delta",
    "gaussian_objective_calibration",
    "release_grid",
    "rounding_radius",
    "noise_norm_bound",
    "add_on_grid",
    "float_input_radius",
    "GRID_FRACTION",
]


def output_perturbation_beta(epsilon, n, alpha, lipschitz=1.0, solver_tol=0.0, rounding=0.0):
    """Rate ``beta`` of the output-perturbation noise (Algorithm 1).

    Guarantee: releasing ``add_on_grid(w, b, grid)``, with ``w`` any point
    within ``solver_tol / alpha`` of the exact minimiser of ``J``,
    ``b ~ gamma_norm_noise(d, beta)`` and ``rounding = rounding_radius(grid,
    d)``, is ``epsilon``-differentially private (neighbours differ in one row).

    Why: by Corollary 1 of Chaudhuri et al. (2011) the exact minimiser ``w*``
    of an ``alpha``-strongly convex ``J`` with ``||x|| <= 1`` and
    ``|l'| <= lipschitz`` moves by at most ``2 * lipschitz / (n * alpha)``
    between neighbours (Theorem 1). The solver's point lies within
    ``solver_tol / alpha`` of ``w*`` (``dpsk._optimize._solver``), so the
    solver's points of two neighbours are at most ``2 * lipschitz / (n *
    alpha) + 2 * solver_tol / alpha`` apart; ``2 * rounding`` is added as a
    margin (no longer needed: :func:`add_on_grid` rounds the exact sum ``w +
    b``, post-processing of the continuous mechanism, ``docs/privacy.rst``,
    "Exact noise"). Noise of density ``exp(-beta ||b||)`` with ``beta =
    epsilon / sensitivity`` then gives density ratios at most ``exp(epsilon)``
    at every output (the paper's ``beta = n * alpha *
    epsilon / 2`` when the last two terms are 0).

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
        The solver's tolerance: its point is within ``solver_tol / alpha`` of
        the exact minimiser. Fixed before seeing the data.
    rounding : float, default=0.0
        A margin added on each side (:func:`rounding_radius` of the grid).

    Returns
    -------
    beta : float
    """
    _check_positive(epsilon=epsilon)
    return epsilon / output_perturbation_sensitivity(n, alpha, lipschitz, solver_tol, rounding)


def output_perturbation_sensitivity(n, alpha, lipschitz=1.0, solver_tol=0.0, rounding=0.0):
    """L2 sensitivity of the solver point that output perturbation releases.

    ``2 lipschitz / (n alpha) + 2 solver_tol / alpha + 2 rounding``: the exact
    minimiser's (Chaudhuri et al. 2011, Corollary 1), the solver's distance to
    it on each side, and the grid margin on each side. Both
    the Gamma-norm (:func:`output_perturbation_beta`) and the Gaussian
    calibrations of output perturbation use it.
    """
    _check_positive(n=n, alpha=alpha, lipschitz=lipschitz)
    if not solver_tol >= 0:
        raise ValueError(f"solver_tol must be >= 0, got {solver_tol!r}.")
    if not rounding >= 0:
        raise ValueError(f"rounding must be >= 0, got {rounding!r}.")
    return 2.0 * lipschitz / (n * alpha) + 2.0 * solver_tol / alpha + 2.0 * rounding


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


def objective_perturbation_calibration(epsilon, n, alpha, curvature, *, lipschitz=1.0,
                                       jacobian_exponent=2):
    """Calibrate objective perturbation, Algorithm 2 of Chaudhuri et al. (2011).

    Guarantee (their Theorem 2, and Theorem 7 for the Huber loss): the exact
    minimiser of ``J(w) + (1/n) b.w + (extra_alpha/2) ||w||^2`` with
    ``b ~ gamma_norm_noise(d, beta)`` is ``epsilon``-differentially private,
    provided ``||x|| <= 1``, labels in {-1, +1}, the loss is convex and
    differentiable with ``|l'| <= 1`` and ``l'' <= curvature``, and the
    regulariser is ``alpha/2 ||w||^2`` (for a loss of a weight matrix, such as
    the softmax: one row's gradient norm <= ``lipschitz`` and Hessian
    eigenvalues <= ``curvature`` of rank <= ``jacobian_exponent``, as below).

    The calibration: ``eps' = eps - log(1 + 2c/(n alpha) + c^2/(n alpha)^2)``;
    if ``eps' > 0`` no extra regularisation is needed, otherwise
    ``Delta = c / (n (exp(eps/4) - 1)) - alpha`` and ``eps' = eps/2``; finally
    ``beta = eps'/2``.

    Generalisation (``lipschitz``, ``jacobian_exponent``), for losses of a
    weight matrix such as the softmax cross-entropy (``dpsk._optimize._losses``), by the
    same two steps as the paper's proof. The paper's slack is ``2 log(1 +
    c/(n alpha))``: ``jacobian_exponent = 2``. Its proof bounds the ratio of
    the two neighbours' Jacobian determinants through a rank-2 difference of
    Hessians; the argument of :func:`gaussian_objective_delta` compares each
    neighbour with the common part instead and gets ``r log(1 + c/(n
    Lambda))`` when one row's Hessian has rank ``r`` (``r = K - 1`` for the
    softmax). The noise part: ``b`` moves by the difference of two rows'
    gradients, at most ``2 lipschitz`` in norm, so ``beta = eps' / (2
    lipschitz)``. The Delta branch raises ``Lambda`` until the slack is
    exactly ``eps/2``: ``Lambda = c / (n (exp(eps / (2 r)) - 1))``. Margin
    losses keep the paper's exponent 2 (so this function stays checkable
    against Algorithm 2 line by line); the softmax passes ``K - 1``.

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
    lipschitz : float, default=1.0
        Bound on one row's loss-gradient norm (``|l'|`` for a margin loss).
    jacobian_exponent : int, default=2
        ``r`` in the slack ``r log(1 + c/(n Lambda))``: 2 is the paper's bound
        for margin losses, ``K - 1`` serves the softmax (see above).

    Returns
    -------
    ObjectiveCalibration
    """
    _check_positive(epsilon=epsilon, n=n, alpha=alpha, curvature=curvature,
                    lipschitz=lipschitz, jacobian_exponent=jacobian_exponent)
    ratio = curvature / (n * alpha)
    if jacobian_exponent == 2:
        # The paper's expression, kept verbatim for margin losses.
        slack = np.log1p(2.0 * ratio + ratio**2)
    else:
        slack = jacobian_exponent * np.log1p(ratio)
    epsilon_prime = epsilon - slack
    extra_alpha = 0.0
    if epsilon_prime <= 0:
        extra_alpha = curvature / (n * np.expm1(epsilon / (2.0 * jacobian_exponent))) - alpha
        epsilon_prime = epsilon / 2.0
        # With eps' <= 0 the formula gives Delta > 0; the max only guards rounding.
        extra_alpha = max(extra_alpha, 0.0)
    return ObjectiveCalibration(
        beta=epsilon_prime / (2.0 * lipschitz), extra_alpha=extra_alpha,
        epsilon_prime=epsilon_prime,
    )


def solver_residual_beta(epsilon, strong_convexity, solver_tol, rounding=0.0):
    """Rate of the extra noise that covers an inexact objective-perturbation solve.

    Guarantee: if the exact perturbed minimiser ``w*`` is ``eps1``-DP and the
    solver's point ``w = w* + e`` satisfies ``||e|| <= solver_tol /
    strong_convexity + rounding``, then releasing ``add_on_grid(w, b',
    grid)`` with ``b' ~ gamma_norm_noise(d, beta)``, ``beta = epsilon / (2
    r)`` and ``r = solver_tol / strong_convexity + rounding``, is ``(eps1 +
    epsilon)``-DP. ``rounding`` holds every distance beyond the solver's
    tolerance: :func:`float_input_radius` (``b`` reaches the solver as
    float64) plus the grid margin :func:`rounding_radius`.

    Why: for a given data set ``D`` the solver's point is a function of the
    exact minimiser, ``w = v + e_D(v)``, so the release is a randomised map
    ``K_D`` applied to ``w* = v``. For neighbours ``D, D'`` and the same ``v``
    the points ``v + e_D`` and ``v + e_D'`` are at most ``2 r`` apart, and
    ``K_D`` releases the grid cells of the exact sum ``v + e_D + b'``
    (:func:`add_on_grid`), post-processing of ``v + e_D + b'``, whose density
    at any point changes by at most ``exp(2 beta r) = exp(epsilon)`` when
    ``v + e_D`` moves by ``2 r``: ``K_D(u | v) <= exp(epsilon) K_D'(u | v)``.
    ``K_D'`` is one fixed randomised
    map, so applying it to the ``eps1``-DP ``w*`` of ``D`` or of ``D'`` costs
    ``exp(eps1)``: together ``exp(eps1 + epsilon)``. This is the pure-DP
    analogue of the inexact-solver argument of Lowy and Razaviyayn (2021) and of
    "approximate minima perturbation" (Iyengar et al., 2019).

    Parameters
    ----------
    epsilon : float
        The share of the budget spent on this step, > 0.
    strong_convexity : float
        Strong-convexity modulus of the solved objective, > 0.
    solver_tol : float
        The solver's tolerance, > 0, fixed before seeing the data: its point is
        within ``solver_tol / strong_convexity`` of the exact minimiser.
    rounding : float, default=0.0
        Further distance of the solver's point from ``w*`` (see above).

    Returns
    -------
    beta : float
    """
    _check_positive(
        epsilon=epsilon, strong_convexity=strong_convexity, solver_tol=solver_tol
    )
    if not rounding >= 0:
        raise ValueError(f"rounding must be >= 0, got {rounding!r}.")
    radius = solver_tol / strong_convexity + rounding
    return epsilon / (2.0 * radius)


@dataclass(frozen=True)
class GaussianObjectiveCalibration:
    """Outcome of calibrating Gaussian objective perturbation.

    Attributes
    ----------
    sigma : float
        Standard deviation of each coordinate of ``b`` (added as ``(1/n) b.w``).
    extra_alpha : float
        Extra L2 regularisation, 0 unless ``alpha`` alone leaves too little of
        epsilon for the noise.
    epsilon_jacobian : float
        The part of epsilon the change of variables costs,
        ``r log(1 + c / (n (alpha + extra_alpha)))`` with ``r`` the rank of one
        row's loss Hessian (1 for margin losses).
    """

    sigma: float
    extra_alpha: float
    epsilon_jacobian: float


def gaussian_objective_delta(sigma, epsilon, epsilon_jacobian):
    """A delta at which Gaussian objective perturbation is (epsilon, delta)-DP.

    Derivation (replace-one neighbours ``D, D'`` differing in the last row,
    rows of norm <= 1, labels in {-1, +1}, a convex loss of the margin with
    ``|l'| <= 1`` and ``0 <= l'' <= c``; for the softmax loss see
    :func:`gaussian_objective_calibration`, which rescales it; dpsk's own, in the style of
    Chaudhuri et al. 2011, Theorem 2, and Kifer, Smith and Thakurta 2012).
    The minimiser ``w`` of ``J(w) + (1/n) b.w`` with ``J`` ``Lambda``-strongly
    convex determines ``b`` through ``b_D(w) = -n grad J_D(w)``, a bijection,
    so the density of the release is ``phi_sigma(b_D(w)) |det grad b_D(w)|``.

    * Jacobian: ``-grad b_D(w) = A + l''(z) x x^T`` with ``A`` the common part
      (the other rows and ``n Lambda I``, so ``A >= n Lambda I``). By the
      matrix determinant lemma ``det(A + l'' x x^T) = det(A) (1 + l'' x^T A^-1
      x)``, between ``det(A)`` and ``det(A) (1 + c / (n Lambda))``; the ratio
      of the two neighbours' determinants is therefore within a factor
      ``1 + c / (n Lambda)``: ``epsilon_jacobian = log(1 + c / (n Lambda))``
      (for the Huber loss, whose ``l''`` jumps, the change of variables holds
      for the Lipschitz map ``b_D`` almost everywhere, as in their Theorem 7).
    * Noise: ``b_D'(w) = b_D(w) + v`` with ``v = a x - a' x'``, ``|a|, |a'| <=
      1`` (the two rows' ``l' y``), so ``||v|| <= 2`` and ``<b, v> <= |<b, x>| +
      |<b, x'>|``. The log-ratio of the Gaussian densities is ``(2 <b, v> +
      ||v||^2) / (2 sigma^2) <= 2 / sigma^2 + (|g1| + |g2|) / sigma`` with
      ``g1 = <b, x> / sigma`` and ``g2 = <b, x'> / sigma``, each a standard
      normal times a norm <= 1. Under ``D`` the ``b`` behind the release is
      exactly ``N(0, sigma^2 I)``.

    So the privacy loss is at most ``L = epsilon_jacobian + 2 / sigma^2 + (|g1|
    + |g2|) / sigma``. The tight delta of a pair is the hockey-stick
    ``E[(1 - exp(epsilon - L))_+]``, increasing and convex in ``L``; among all
    couplings of ``|g1|`` and ``|g2|`` the comonotone one (``g1 = g2``) is
    largest in convex order, so ``delta <= E[(1 - exp(epsilon -
    epsilon_jacobian - 2/sigma^2 - 2|g|/sigma))_+]`` for ``g ~ N(0, 1)``. With
    ``c0 = epsilon - epsilon_jacobian - 2 / sigma^2``, ``k = 2 / sigma`` and
    ``t = max(c0 / k, 0)`` this is ``2 (Phi_bar(t) - exp(c0 + k^2/2)
    Phi_bar(t + k))``, which is what is returned.

    Parameters
    ----------
    sigma : float
        > 0.
    epsilon : float
        Total epsilon, >= 0.
    epsilon_jacobian : float
        ``log(1 + c / (n Lambda))``, >= 0.

    Returns
    -------
    delta : float in [0, 1]
    """
    _check_positive(sigma=sigma)
    c0 = epsilon - epsilon_jacobian - 2.0 / sigma**2
    k = 2.0 / sigma
    t = max(c0 / k, 0.0)
    # Phi_bar(x) = ndtr(-x); the second term in log space, so huge c0 cannot overflow.
    second = math.exp(c0 + 0.5 * k * k + log_ndtr(-(t + k)))
    return float(min(max(2.0 * (ndtr(-t) - second), 0.0), 1.0))


def gaussian_objective_calibration(epsilon, delta, n, alpha, curvature, *, lipschitz=1.0,
                                   hessian_rank=1):
    """Calibrate Gaussian objective perturbation for ``(epsilon, delta)``-DP.

    Guarantee: the exact minimiser of ``J(w) + (1/n) b.w + (extra_alpha/2)
    ||w||^2``, ``J`` as in Algorithm 2 of Chaudhuri et al. (2011) and ``b ~ N(0,
    sigma^2 I)``, is ``(epsilon, delta)``-DP under the conditions and by the
    argument of :func:`gaussian_objective_delta`.

    The split: the change of variables costs ``log(1 + c / (n Lambda))``. If
    ``alpha`` alone keeps that at most ``epsilon / 2``, no extra regularisation
    is added and the noise gets the rest; otherwise ``Lambda`` is raised to
    ``c / (n (exp(epsilon / 2) - 1))``, which costs exactly ``epsilon / 2``
    (the same rule as Algorithm 2's Delta branch). ``sigma`` is then the
    smallest scale at which :func:`gaussian_objective_delta` is <= ``delta``
    (found by :func:`_smallest_sigma`; the bound decreases in ``sigma``).

    Losses of a weight matrix (the softmax cross-entropy, ``dpsk._optimize._losses``).
    When one row's Hessian has rank ``r`` (``hessian_rank``), the determinant
    argument of :func:`gaussian_objective_delta` applies to each of the ``r``
    eigen-directions in turn: ``det(A + H) / det(A) = det(I + A^-1/2 H
    A^-1/2)`` lies between 1 and ``(1 + c/(n Lambda))^r`` (``r`` eigenvalues
    in ``[0, c/(n Lambda)]``), so ``epsilon_jacobian = r log(1 + c/(n
    Lambda))``, and the extra regularisation, when needed, is ``c / (n (exp(
    epsilon / (2 r)) - 1))``. When one row's gradient has norm at most
    ``lipschitz`` (instead of 1), the noise argument holds with every gradient
    and ``v`` scaled by ``lipschitz``: the bound becomes
    ``gaussian_objective_delta(sigma / lipschitz, ...)``, so ``sigma`` is
    ``lipschitz`` times the unit-Lipschitz one.

    Parameters
    ----------
    epsilon : float
        > 0.
    delta : float
        In (0, 1).
    n : int
        Number of rows (public).
    alpha : float
        Regularisation, > 0.
    curvature : float
        The loss constant ``c`` bounding ``l''``, > 0.
    lipschitz : float, default=1.0
        Bound on one row's loss-gradient norm.
    hessian_rank : int, default=1
        Rank ``r`` of one row's loss Hessian (1 for margin losses, ``K - 1``
        for the softmax).

    Returns
    -------
    GaussianObjectiveCalibration
    """
    _check_positive(epsilon=epsilon, n=n, alpha=alpha, curvature=curvature,
                    lipschitz=lipschitz, hessian_rank=hessian_rank)
    if not (0.0 < delta < 1.0):
        raise ValueError(f"delta must be in (0, 1), got {delta!r}.")
    extra_alpha = 0.0
    epsilon_jacobian = hessian_rank * math.log1p(curvature / (n * alpha))
    if epsilon_jacobian > epsilon / 2.0:
        extra_alpha = max(
            curvature / (n * math.expm1(epsilon / (2.0 * hessian_rank))) - alpha, 0.0)
        epsilon_jacobian = hessian_rank * math.log1p(curvature / (n * (alpha + extra_alpha)))

    unit_sigma = _smallest_sigma(
        lambda s: gaussian_objective_delta(s, epsilon, epsilon_jacobian), delta, log_guess=0.0
    )
    sigma = lipschitz * unit_sigma
    return GaussianObjectiveCalibration(sigma=sigma, extra_alpha=extra_alpha,
                                        epsilon_jacobian=epsilon_jacobian)


#: Spacing of the release grid relative to the sensitivity scale it is chosen
#: for: releasing the grid cell of ``w + b`` moves it by at most ``2^-31`` of
#: that scale (a relative 1e-9). The guarantee of ``add_on_grid`` holds for any
#: grid; coarser grids only cost accuracy, and finer ones would make the
#: integer coordinates of large weights reach the clipping limit (weights up to
#: ``2^31 * scale / sqrt(d)`` in size are represented exactly).
GRID_FRACTION = 2.0**-30


def release_grid(scale, d):
    """The release grid's spacing: the largest power of two <= ``GRID_FRACTION * scale / sqrt(d)``.

    A function of public quantities only (the sensitivity ``scale`` and the
    dimension ``d``). A power of two, so dividing by it and multiplying back
    are exact in floating point.
    """
    _check_positive(scale=scale, d=d)
    return 2.0 ** math.floor(math.log2(GRID_FRACTION * scale / math.sqrt(d)))


def rounding_radius(grid, d):
    """How far rounding to the grid can move a point of R^d: ``sqrt(d) grid / 2``.

    The calibrations add it as a margin (``docs/privacy.rst``, "Exact noise").
    """
    return math.sqrt(d) * grid / 2.0


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
    ``gaussian_delta(sigma) = delta`` has one root, found from the classical
    scale by :func:`_smallest_sigma`.

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

    guess = math.log(sensitivity * math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon)
    return _smallest_sigma(lambda s: gaussian_delta(s, epsilon, sensitivity), delta,
                           log_guess=guess)


def _smallest_sigma(delta_of_sigma, delta, log_guess):
    """The smallest ``sigma`` with ``delta_of_sigma(sigma) <= delta``.

    ``delta_of_sigma`` must decrease continuously from above ``delta`` to 0:
    the root is bracketed on ``log sigma`` by stepping out from ``log_guess``
    and found by Brent's method; the result is nudged up by one part in 1e12
    and checked, so the guarantee never rests on the root finder's last digit.
    """
    def excess(log_sigma):
        return delta_of_sigma(math.exp(log_sigma)) - delta

    lo, hi = log_guess - 1.0, log_guess + 1.0
    while excess(lo) <= 0:
        lo -= 2.0
    while excess(hi) > 0:
        hi += 2.0
    sigma = math.exp(brentq(excess, lo, hi, xtol=1e-14, rtol=1e-14)) * (1.0 + 1e-12)
    while delta_of_sigma(sigma) > delta:  # pragma: no cover
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


#: Tail probability of :func:`noise_norm_bound`: ``2^-128``.
NORM_BOUND_LOG_TAIL = 128.0 * math.log(2.0)


def noise_norm_bound(d, *, beta=None, sigma=None):
    """A norm the exact noise exceeds with probability at most ``2^-128``.

    The exact samplers (:mod:`dpsk.mechanisms._samplers`) have unbounded
    support, so no bound holds for every draw; this one fails with probability
    below ``2^-128`` and depends on nothing but ``d`` and the scale. The
    solver's tolerance floor (``dpsk._optimize._solver.tolerance_floor``) and
    the float rounding of objective perturbation's ``b``
    (:func:`float_input_radius`) use it. With ``x = 128 log 2``:

    * Gamma-norm, ``beta ||b|| ~ Gamma(d, 1)``: its centred log-moment
      generating function is ``-d log(1 - l) - d l = d sum_{m >= 2} l^m / m <=
      d l^2 / (2 (1 - l))`` for ``0 <= l < 1``, the sub-gamma condition with
      variance ``d`` and scale 1, so ``P(beta ||b|| >= d + sqrt(2 d x) + x) <=
      e^-x`` (Boucheron, Lugosi and Massart 2013, Section 2.4).
    * Gaussian, ``||b||^2 / sigma^2`` chi-square with ``d`` degrees of freedom:
      ``P(||b||^2 / sigma^2 >= d + 2 sqrt(d x) + 2 x) <= e^-x`` (Laurent and
      Massart 2000, Lemma 1).

    The float results are raised by a relative ``1e-12`` to cover their own
    rounding.
    """
    d = int(d)
    x = NORM_BOUND_LOG_TAIL
    if beta is not None:
        _check_positive(beta=beta)
        return (d + math.sqrt(2.0 * d * x) + x) / beta * (1.0 + 1e-12)
    _check_positive(sigma=sigma)
    return sigma * math.sqrt(d + 2.0 * math.sqrt(d * x) + 2.0 * x) * (1.0 + 1e-12)


def float_input_radius(b_bound, n, strong_convexity, d):
    """How far handing ``b / n`` to the solver in float64 moves the exact minimiser.

    The solver of objective perturbation reads ``linear = fl(fl(b) / n)``,
    ``fl(b)`` the correctly rounded draw. Per coordinate, unless ``b_j / n``
    is subnormal, ``|fl(b_j) - b_j| <= 2^-53 |b_j|`` and the division adds
    ``2^-53 |fl(b_j) / n|``, so ``|linear_j - b_j / n| <= (2^-53 + 2^-53 (1 +
    2^-53)) |b_j| / n <= 2^-51.9 |b_j| / n``; a subnormal result is off by at
    most ``2^-1074`` more. So ``||linear - b / n|| <= 2^-51 ||b|| / n + sqrt(d)
    2^-1074``. Changing the linear term of a ``strong_convexity``-strongly
    convex objective by ``v`` moves its minimiser by at most ``||v|| /
    strong_convexity`` (compare the two first-order conditions), and ``||b||
    <= b_bound`` (:func:`noise_norm_bound`). The residual noise covers this
    distance (:func:`solver_residual_beta`).
    """
    _check_positive(strong_convexity=strong_convexity)
    return (2.0**-51 * b_bound / n + math.sqrt(d) * 2.0**-1074) / strong_convexity * (1 + 1e-12)


def _check_positive(**values):
    for name, value in values.items():
        if not (np.isfinite(value) and value > 0):
            raise ValueError(f"{name} must be a finite number > 0, got {value!r}.")


def _check_noise_source(rng):
    # Privacy noise only from a NoiseSource: a numpy Generator here would mean a
    # stateful, replayable, non-cryptographic stream had reached a mechanism.
    if not isinstance(rng, NoiseSource):
        raise TypeError(
            "Privacy noise must come from a dpsk.mechanisms._random.NoiseSource, got "
            f"{type(rng).__name__}."
        )
