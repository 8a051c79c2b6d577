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
from scipy.special import log_ndtr, ndtr

from ..accounting._profiles import gaussian_delta
from ._discrete import exponential_choice, to_fraction
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


def center_input_radius(b_bound, n, strong_convexity, center_norm, d):
    """How far adding a public centre's term in float64 moves the exact minimiser.

    With a centre ``u`` (``dpsk.mechanisms._erm.private_erm``) objective
    perturbation hands the solver ``fl(linear - fl(Lambda u))`` instead of
    ``linear``, ``linear = fl(b / n)``. Per coordinate the product is off by
    at most ``2^-53 Lambda |u_j|`` and the difference by ``2^-53 (|linear_j| +
    Lambda |u_j| (1 + 2^-53))``, so, with ``|linear_j| <= (1 + 2^-51) |b_j| /
    n``, the vector is off by at most ``2^-52 (||b|| / n + 2 Lambda ||u||)``
    in norm, plus ``sqrt(d) 2^-1074`` for subnormal results; its minimiser by
    that over ``Lambda``. Added to :func:`float_input_radius` and covered by
    the residual noise the same way.
    """
    _check_positive(strong_convexity=strong_convexity)
    error = 2.0**-52 * (b_bound / n + 2.0 * strong_convexity * center_norm)
    return (error + math.sqrt(d) * 2.0**-1074) / strong_convexity * (1 + 1e-12)


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
