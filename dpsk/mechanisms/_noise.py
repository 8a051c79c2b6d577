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
from scipy.special import gammainccinv, log_ndtr, ndtr, ndtri

from ..accounting._profiles import gaussian_delta
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
        The paper's ``Delta``: extra L2 regularisation, added when the
        change-of-variables slack would leave too little of epsilon for the
        noise (see :func:`objective_perturbation_calibration`).
    epsilon_prime : float
        The paper's ``epsilon'``, the part of epsilon left for the noise.
    """

    beta: float
    extra_alpha: float
    epsilon_prime: float


def objective_perturbation_calibration(epsilon, n, alpha, curvature, *, lipschitz=1.0,
                                       jacobian_exponent=1, paper=False):
    """Calibrate objective perturbation (Chaudhuri et al. 2011, Algorithm 2).

    Guarantee: the exact minimiser of ``J(w) + (1/n) b.w + (extra_alpha/2)
    ||w||^2`` with ``b ~ gamma_norm_noise(d, beta)`` is ``epsilon``-DP for
    replace-one neighbours, provided ``||x|| <= 1``, labels in {-1, +1}, a
    convex loss, differentiable, with ``|l'| <= lipschitz`` and ``0 <= l'' <=
    curvature`` (twice differentiable except at finitely many margins, as the
    Huber loss: their Corollary 4), and the regulariser ``alpha/2 ||w||^2``. For
    a loss of a weight matrix (the softmax): one row's gradient has norm <=
    ``lipschitz`` and its Hessian is PSD, of rank <= ``jacobian_exponent`` and
    eigenvalues <= ``curvature``.

    The bound (dpsk's own; the steps of their Theorem 2 with a sharper
    determinant bound, derived in ``docs/privacy.rst``). The release ``w``
    determines ``b = b_D(w) = -n grad J_D(w)``, a bijection, so the release
    has density ``mu(b_D(w)) |det H_D(w)|`` with ``H_D = -grad b_D``. For
    neighbours differing in row ``n``, ``H_D = B + h x x^T`` and ``H_D' = B +
    h' x' x'^T`` with the common part ``B >= n Lambda I`` (``Lambda = alpha +
    extra_alpha``) and ``h, h'`` in ``[0, c]``. By the matrix determinant
    lemma ``det H_D = det B (1 + h x^T B^-1 x)`` with ``0 <= h x^T B^-1 x <=
    c / (n Lambda)``, and likewise for ``D'``, so the ratio of the two
    determinants lies in ``[1 / (1 + c/(n Lambda)), 1 + c/(n Lambda)]``: the
    slack is ``log(1 + c/(n Lambda))``, half the paper's. (For a rank-``r``
    Hessian, ``det(I + B^-1/2 H B^-1/2)`` is in ``[1, (1 + c/(n Lambda))^r]``:
    ``r log(1 + c/(n Lambda))``.) The noise: ``b_D'(w) - b_D(w)`` is the
    difference of the two rows' gradients, of norm <= ``2 lipschitz``, so the
    Gamma-norm densities differ by at most ``exp(2 beta lipschitz)``.

    The calibration: ``slack = r log(1 + c/(n alpha))``. If ``slack <=
    epsilon / 2``, no extra regularisation, ``eps' = epsilon - slack``;
    otherwise ``Lambda`` is raised to ``c / (n (exp(epsilon / (2 r)) - 1))``,
    which brings the slack down to ``epsilon / 2``, and ``eps' = epsilon -
    slack(Lambda)``. Then ``beta = eps' / (2 lipschitz)``, so slack plus noise
    is exactly epsilon. (The threshold ``epsilon / 2`` is the Gaussian
    calibration's rule; Algorithm 2 raises ``Lambda`` only when ``eps' <= 0``,
    which lets ``eps'`` and with it ``beta`` fall towards 0 just before the
    switch.)

    ``paper=True`` is Algorithm 2 exactly as published, for margin losses
    (``jacobian_exponent = 1``): ``eps' = eps - log(1 + 2c/(n alpha) +
    c^2/(n alpha)^2)``; if ``eps' <= 0``, ``Delta = c / (n (exp(eps/4) - 1)) -
    alpha`` and ``eps' = eps/2``; ``beta = eps' / (2 lipschitz)`` (their
    Theorem 2, whose rank-two argument pays the slack twice). It is kept for
    reproducing their Table 1 (``dpsk.mechanisms._erm.algorithm2_slack``); it is
    valid, only less accurate.

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
    jacobian_exponent : int, default=1
        ``r``, the rank of one row's loss Hessian: 1 for margin losses, ``K -
        1`` for the softmax.
    paper : bool, default=False
        Algorithm 2 verbatim (margin losses only).

    Returns
    -------
    ObjectiveCalibration
    """
    _check_positive(epsilon=epsilon, n=n, alpha=alpha, curvature=curvature,
                    lipschitz=lipschitz, jacobian_exponent=jacobian_exponent)
    if paper:
        if jacobian_exponent != 1:
            raise ValueError("paper=True is Algorithm 2 for margin losses (jacobian_exponent=1).")
        return _algorithm2(epsilon, n, alpha, curvature, lipschitz)
    r = jacobian_exponent
    extra_alpha = 0.0
    slack = r * math.log1p(curvature / (n * alpha))
    if slack > epsilon / 2.0:
        # Positive whenever slack > eps/2; the max only guards rounding.
        extra_alpha = max(curvature / (n * math.expm1(epsilon / (2.0 * r))) - alpha, 0.0)
        slack = r * math.log1p(curvature / (n * (alpha + extra_alpha)))
    # eps' from the slack at the final Lambda, so that the two add up to epsilon.
    epsilon_prime = epsilon - slack
    return ObjectiveCalibration(
        beta=epsilon_prime / (2.0 * lipschitz), extra_alpha=extra_alpha,
        epsilon_prime=epsilon_prime,
    )


def _algorithm2(epsilon, n, alpha, curvature, lipschitz):
    """Algorithm 2 of Chaudhuri et al. (2011) line by line (margin losses)."""
    ratio = curvature / (n * alpha)
    epsilon_prime = epsilon - np.log1p(2.0 * ratio + ratio**2)
    extra_alpha = 0.0
    if epsilon_prime <= 0:
        # With eps' <= 0 the formula gives Delta > 0; the max only guards rounding.
        extra_alpha = max(curvature / (n * np.expm1(epsilon / 4.0)) - alpha, 0.0)
        epsilon_prime = epsilon / 2.0
    return ObjectiveCalibration(beta=float(epsilon_prime / (2.0 * lipschitz)),
                                extra_alpha=float(extra_alpha),
                                epsilon_prime=float(epsilon_prime))


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


def gaussian_objective_delta(sigma, epsilon, epsilon_jacobian, *, hessian_rank=1):
    """A delta at which Gaussian objective perturbation is (epsilon, delta)-DP.

    Setting (replace-one neighbours ``D, D'`` differing in the last row, rows
    of norm <= 1; dpsk's own argument, in the style of Chaudhuri et al. 2011,
    Theorem 2, and Kifer, Smith and Thakurta 2012; derived in full in
    ``docs/privacy.rst``). ``sigma`` is the noise scale per unit of gradient
    bound (``sigma / lipschitz``, see :func:`gaussian_objective_calibration`).
    ``hessian_rank = 1``: a convex margin loss with ``|l'| <= 1`` and ``0 <=
    l'' <= c``, labels in {-1, +1} (also the two-class softmax, which is one).
    ``hessian_rank = r >= 2``: the softmax cross-entropy of ``K = r + 1``
    classes, whose row gradient is ``(p - e_y) x^T / sqrt 2`` in unit terms.

    The privacy loss is a function of the release. The exact minimiser ``w``
    of ``J_D(w) + (1/n) b.w`` determines ``b = b_D(w) = -n grad J_D(w)``, a
    bijection, so ``w`` has density ``phi_sigma(b_D(w)) |det grad b_D(w)|``,
    and the loss at ``w`` is ``L(w) = (||b + v||^2 - ||b||^2) / (2 sigma^2) +
    log(det ratio)`` with ``b = b_D(w)`` and ``v = v(w) = b_D'(w) - b_D(w)``,
    the difference of the two versions of the last row's gradient. Under
    ``D``, ``b_D(W)`` is the drawn noise, exactly ``N(0, sigma^2 I)``, and
    ``delta(epsilon) = E[(1 - exp(epsilon - L(W)))_+]``, which is
    nondecreasing in ``L``; so any bound ``L(W) <= U(b)`` gives ``delta <=
    E[(1 - exp(epsilon - U(b)))_+]``. ``v(w)`` depends on ``w`` and hence on
    ``b``; it is bounded through the set ``V`` of values it can take *for
    every* ``w``, never by treating ``<b, v(w)>`` as a fixed projection of ``b``.

    * Jacobian: ``log(det ratio) <= epsilon_jacobian`` (see
      :func:`objective_perturbation_calibration`).
    * Margin losses: ``v = a x - a' x'`` with ``|a|, |a'| <= 1``, so ``V`` is
      the parallelogram with vertices ``+-u1, +-u2``, ``u1 = x + x'``, ``u2 =
      x - x'``, ``||u1||^2 + ||u2||^2 <= 4``. ``||b + v||^2`` is convex in
      ``v``, so its maximum over ``V`` is at a vertex; at a fixed vertex ``u``
      the loss is that of a Gaussian mechanism of shift ``u``, normal with mean
      ``m^2/2`` and variance ``m^2``, ``m = ||u|| / sigma``. The maximum of the
      four hockey-stick integrands is at most their sum, so ``delta <= 2
      G(eps', ||u1||/sigma) + 2 G(eps', ||u2||/sigma)``, ``eps' = epsilon -
      epsilon_jacobian``, with ``G(eps', m) = Phi(m/2 - eps'/m) - exp(eps')
      Phi(-m/2 - eps'/m)`` (Balle and Wang 2018, Theorem 8). ``dG/dm =
      phi(m/2 - eps'/m)``, so ``q -> G(eps', sqrt(q)/sigma)`` is convex on
      ``[0, 4]`` when ``m^4 + 4 m^2 <= 4 eps'^2`` at ``m = 2/sigma``; then the
      sum is largest at ``||u1|| = 2, u2 = 0``: ``delta <= 2 G(eps', 2/sigma)``.
    * Otherwise (or for the softmax): ``<b, v>`` is at most ``2 sigma
      max(0, T_1, ..., T_m)`` with standard normal ``T_j`` (margin losses: ``m
      = 4``, ``+-<b, x>/sigma`` and ``+-<b, x'>/sigma``; the softmax: ``p - e_y``
      lies in the simplex minus ``e_y``, so ``(p - e_y)^T B x <= max_k ((Bx)_k -
      (Bx)_y)``, and likewise for ``x'``: ``m = 2 (K - 1)`` normals ``((Bx)_k -
      (Bx)_y) / (sigma sqrt 2)`` in unit terms) and ``||v||^2 <= 4``. The
      maximum of the ``m + 1`` integrands is at most their sum: ``delta <= (1
      - exp(eps' - 2/sigma^2))_+ + m G(eps', 2/sigma)``.

    Parameters
    ----------
    sigma : float
        Noise scale per unit of gradient bound, > 0.
    epsilon : float
        Total epsilon, >= 0.
    epsilon_jacobian : float
        ``r log(1 + c / (n Lambda))``, >= 0.
    hessian_rank : int, default=1
        1 for margin losses, ``K - 1`` for the softmax of ``K`` classes.

    Returns
    -------
    delta : float in [0, 1]
    """
    _check_positive(sigma=sigma, hessian_rank=hessian_rank)
    mu = 2.0 / sigma
    eps_p = epsilon - epsilon_jacobian
    one = _gaussian_hockey_stick(eps_p, mu)
    if hessian_rank == 1 and eps_p > 0 and mu**4 + 4.0 * mu**2 <= 4.0 * eps_p**2:
        return float(min(2.0 * one, 1.0))
    at_zero = max(-math.expm1(eps_p - 0.5 * mu * mu), 0.0)
    n_terms = 2 * max(int(hessian_rank), 2)
    return float(min(at_zero + n_terms * one, 1.0))


def _gaussian_hockey_stick(epsilon, mu):
    """``E[(1 - exp(epsilon - L))_+]`` for ``L ~ N(mu^2/2, mu^2)``, any real epsilon.

    The (epsilon, delta) profile of a Gaussian shift by ``mu`` standard
    deviations (Balle and Wang 2018, Theorem 8); the second term in log space.
    """
    if mu == 0:  # no shift: the loss is 0
        return max(-math.expm1(epsilon), 0.0)
    a, b = 0.5 * mu, epsilon / mu
    return min(max(float(ndtr(a - b)) - math.exp(epsilon + log_ndtr(-a - b)), 0.0), 1.0)


def gaussian_objective_calibration(epsilon, delta, n, alpha, curvature, *, lipschitz=1.0,
                                   hessian_rank=1):
    """Calibrate Gaussian objective perturbation for ``(epsilon, delta)``-DP.

    Guarantee: the exact minimiser of ``J(w) + (1/n) b.w + (extra_alpha/2)
    ||w||^2``, ``J`` as in Algorithm 2 of Chaudhuri et al. (2011) and ``b ~ N(0,
    sigma^2 I)``, is ``(epsilon, delta)``-DP for replace-one neighbours, under
    the conditions and by the argument of :func:`gaussian_objective_delta`
    (margin losses with ``hessian_rank = 1``; the softmax of ``K`` classes
    with ``hessian_rank = K - 1``).

    The split: the change of variables costs ``epsilon_jacobian = r log(1 +
    c / (n Lambda))`` (:func:`objective_perturbation_calibration`). If
    ``alpha`` alone keeps that at most ``epsilon / 2``, no extra
    regularisation is added and the noise gets the rest; otherwise ``Lambda``
    is raised to ``c / (n (exp(epsilon / (2 r)) - 1))``, which costs exactly
    ``epsilon / 2``. ``sigma`` is then the smallest scale at which
    :func:`gaussian_objective_delta` is <= ``delta`` (found by
    :func:`_smallest_sigma`; the bound does not increase with ``sigma``).
    When one row's gradient has norm at most ``lipschitz`` (instead of 1),
    ``b`` and ``v`` scale together: the bound at ``sigma`` is the unit bound at
    ``sigma / lipschitz``, so ``sigma`` is ``lipschitz`` times the unit one.

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
        lambda s: gaussian_objective_delta(s, epsilon, epsilon_jacobian,
                                           hessian_rank=hessian_rank),
        delta, log_guess=0.0,
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
