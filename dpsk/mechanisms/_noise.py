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
from fractions import Fraction

import numpy as np
from scipy.optimize import brentq
from scipy.special import gammainccinv, log_ndtr, ndtr, ndtri

from ..accounting._profiles import gaussian_delta
from ._discrete import exponential_choice, to_fraction
from ._random import NoiseSource

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
    "GRID_FRACTION",
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
        Source of the noise (``dpsk.mechanisms._random``): the OS's secure generator, or a
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
    ``solver_tol / alpha`` of ``w*`` (``dpsk._optimize._solver``), and rounding it to the
    release grid moves it by at most ``rounding``, so the rounded point moves by
    at most ``2 * lipschitz / (n * alpha) + 2 * solver_tol / alpha +
    2 * rounding``; :func:`add_on_grid` shows why noise with ``beta = epsilon /
    sensitivity`` masks that on the grid (the paper's ``beta = n * alpha *
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
        How far rounding to the release grid can move a point
        (:func:`rounding_radius`).

    Returns
    -------
    beta : float
    """
    _check_positive(epsilon=epsilon)
    return epsilon / output_perturbation_sensitivity(n, alpha, lipschitz, solver_tol, rounding)


def output_perturbation_sensitivity(n, alpha, lipschitz=1.0, solver_tol=0.0, rounding=0.0):
    """L2 sensitivity of the rounded solver point that output perturbation releases.

    ``2 lipschitz / (n alpha) + 2 solver_tol / alpha + 2 rounding``: the exact
    minimiser's (Chaudhuri et al. 2011, Corollary 1), the solver's distance to
    it on each side, and the rounding to the release grid on each side. Both
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
    strong_convexity``, then releasing ``add_on_grid(w, b', grid)`` with
    ``b' ~ gamma_norm_noise(d, beta)``, ``beta = epsilon / (2 r)``, ``r =
    solver_tol / strong_convexity + rounding`` and ``rounding =
    rounding_radius(grid, d)``, is ``(eps1 + epsilon)``-DP.

    Why: for a given data set ``D`` the solver's point is a function of the
    exact minimiser, ``w = v + e_D(v)``, so the release is a randomised map
    ``K_D`` applied to ``w* = v``. For neighbours ``D, D'`` and the same ``v``,
    the rounded points ``g_D = round(v + e_D)`` and ``g_D' = round(v + e_D')``
    differ coordinate-wise by at most ``|e_D - e_D'|_j + grid``, so by at most
    ``2 solver_tol / strong_convexity + sqrt(d) grid = 2 r`` in norm; by the
    cell argument of :func:`add_on_grid`, ``K_D(u | v) <= exp(2 beta r)
    K_D'(u | v) = exp(epsilon) K_D'(u | v)``. ``K_D'`` is one fixed randomised
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
        :func:`rounding_radius` of the release grid.

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
#: for: rounding then moves a point by at most ``2^-31`` of that scale (a
#: relative 1e-9 of extra noise). The guarantee of ``add_on_grid`` holds for any
#: grid; coarser grids only cost accuracy, and finer ones would make the
#: integer coordinates of large weights reach the clipping limit (weights up to
#: ``2^31 * scale / sqrt(d)`` in size are represented exactly).
GRID_FRACTION = 2.0**-30

# Integer coordinates are clipped to this size, far below int64 overflow.
_GRID_INT_LIMIT = 2.0**61


def release_grid(scale, d):
    """The release grid's spacing: the largest power of two <= ``GRID_FRACTION * scale / sqrt(d)``.

    A function of public quantities only (the sensitivity ``scale`` and the
    dimension ``d``). A power of two, so dividing by it and multiplying back
    are exact in floating point.
    """
    _check_positive(scale=scale, d=d)
    return 2.0 ** math.floor(math.log2(GRID_FRACTION * scale / math.sqrt(d)))


def rounding_radius(grid, d):
    """How far rounding to the grid can move a point of R^d: ``sqrt(d) grid / 2``."""
    return math.sqrt(d) * grid / 2.0


def add_on_grid(point, noise, grid):
    """Release ``round(point) + round(noise)`` on the grid, added exactly.

    Guarantee: if the grid points ``round(point)`` of two neighbouring data
    sets are at most ``s`` apart and ``noise`` has a density ``p`` with
    ``p(b) <= exp(epsilon) p(b - t)`` for every ``||t|| <= s`` (the Gamma-norm
    law with ``beta = epsilon / s``), the release is ``epsilon``-DP, and its
    floating-point bits carry nothing else.

    Why: adding ``point + noise`` in floating point rounds to a value whose low
    bits depend on ``point`` itself: which floats the release can take, and how
    often, differs between neighbours (Mironov, 2012, "On significance of the
    least significant bits for differential privacy"). dpsk's own audit found
    an event with probability 0.44 on one data set and 0 on its neighbour.
    Here both terms are rounded to integer multiples ``k grid`` of a power of
    two (exact: ``point / grid`` is exact and so is rounding it) and the
    integers are added exactly, so the release is the grid point
    ``(k_point + k_noise) grid`` and nothing else. Its probability is the
    noise's mass on the cell ``C(u - g) = {b : round(b) = u - g}`` around
    ``u - g``, with ``g`` the rounded point. Cells are translates of one
    another by grid vectors, so for neighbours with rounded points ``g, g'``
    the map ``b -> b - (g - g')`` takes ``C(u - g)`` onto ``C(u - g')``, and the
    density ratio along it is at most ``exp(epsilon)``: the two probabilities
    are within that factor. The noise is drawn without the data, so the
    rounding of the draw itself (a data-independent change of the noise law at
    relative order ``2^-52``) does not depend on the data.

    Parameters
    ----------
    point : ndarray of shape (d,)
        The data-dependent point (the solver's weights).
    noise : ndarray of shape (d,)
    grid : float
        A power of two (:func:`release_grid`).

    Returns
    -------
    release : ndarray of shape (d,)
    """
    # Clipping the data-dependent point is a contraction: it cannot increase the
    # distance between the neighbours' points. The noise is never clipped: a
    # clipped noise coordinate would leave round(point) readable in the release.
    k_point = np.rint(np.clip(np.asarray(point, dtype=float) / grid,
                              -_GRID_INT_LIMIT, _GRID_INT_LIMIT))
    k_noise = np.rint(np.asarray(noise, dtype=float) / grid)
    if not np.all(np.isfinite(k_noise)):  # the noise alone decides this
        raise ValueError("The noise does not fit the release grid.")
    if np.all(np.abs(k_noise) < _GRID_INT_LIMIT):
        total = (k_point.astype(np.int64) + k_noise.astype(np.int64)).astype(np.float64)
    else:
        # Beyond int64: exact Python integers. Converting the exact sum to float
        # is a function of the release alone.
        total = np.array([float(int(a) + int(b)) for a, b in zip(k_point, k_noise)])
    return total * grid


def exponential_mechanism(utilities, epsilon, sensitivity, rng):
    """Pick an index with probability proportional to ``exp(eps u / (2 sens))``, exactly.

    Guarantee (McSherry and Talwar, 2007): if every utility changes by at most
    ``sensitivity`` between neighbouring data sets, the chosen index is
    ``epsilon``-differentially private. Algorithm 4 of Chaudhuri et al. (2011)
    uses it with ``u_i = -z_i`` (minus the number of mistakes of candidate
    ``i`` on a held-out part), sensitivity 1: probability proportional to
    ``exp(-eps z_i / 2)``.

    The draw has exactly this law for the exact rational values of the float
    arguments: :func:`~dpsk.mechanisms._discrete.exponential_choice` proposes
    an index uniformly and keeps it with probability ``exp(-eps (u_max - u_i)
    / (2 sens))`` (Canonne, Kamath and Steinke 2020, Algorithm 1), in integer
    arithmetic on uniform bits; at most ``m`` proposals are expected. The
    probabilities ``p`` are computed in floating point for reporting only: the
    draw does not use them.

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
    # gamma_i = eps (u_max - u_i) / (2 sens) >= 0 in exact rationals; min is 0.
    rate = to_fraction(epsilon, "epsilon") / (2 * to_fraction(sensitivity, "sensitivity"))
    exact = [Fraction(float(value)) for value in u]
    best = max(exact)
    return exponential_choice([rate * (best - value) for value in exact], rng), p


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


def noise_norm_bound(d, *, beta=None, sigma=None):
    """The largest noise norm the samplers of :class:`~dpsk.mechanisms._random.NoiseSource` produce.

    Their uniforms lie in ``[2^-53, 1 - 2^-53]``, so the Gamma-norm radius is at
    most the Gamma(d, 1/beta) quantile at ``1 - 2^-53`` and every Gaussian
    coordinate at most ``ndtri(1 - 2^-53) sigma`` in size. A bound that holds
    for every draw and depends on nothing but ``d`` and the scale: the solver's
    tolerance floor uses it (``dpsk._optimize._solver.tolerance_floor``).
    """
    if beta is not None:
        _check_positive(beta=beta)
        return float(gammainccinv(int(d), 2.0**-53)) / beta
    _check_positive(sigma=sigma)
    return float(ndtri(1.0 - 2.0**-53)) * sigma * math.sqrt(d)


def gaussian_noise(d, sigma, rng):
    """Draw ``N(0, sigma^2 I_d)`` from a :class:`~dpsk.mechanisms._random.NoiseSource`."""
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
            "Privacy noise must come from a dpsk.mechanisms._random.NoiseSource, got "
            f"{type(rng).__name__}."
        )
