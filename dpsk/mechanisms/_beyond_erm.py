"""Output perturbation beyond ERM: robust and tilted logistic regression.

Lowy and Razaviyayn (Sections 5.1 and 5.2) observe that output perturbation
needs only strong convexity and a bound on how far one row moves the exact
minimiser, not an average of losses. This module releases the minimisers of
two such objectives with noise calibrated to sensitivities derived here (our
own derivations; ``docs/beyond_erm.rst`` writes them out).

Robust. The objective of ``dpsk._optimize._robust_solver``,
``F(w) = (1/n) sum_i l(y_i w.z_i - r N(w)) + (alpha/2) ||w||^2``. Each term
``f_i`` is convex and ``L``-Lipschitz with ``L = 1 + r``: its gradient is
``l'(m_i) (y_i z_i - r u_w)`` with ``|l'| <= 1``, ``||z_i|| <= 1`` and
``||u_w|| < 1``. For exact minimisers ``w1, w2`` of neighbouring objectives
``F1, F2``, ``alpha``-strong convexity at each gives ``(F1 - F2)(w2) - (F1 -
F2)(w1) >= alpha ||w2 - w1||^2``; ``F1 - F2 = (f_i - f_i') / n`` is
``2L/n``-Lipschitz, so ``||w1 - w2|| <= 2 (1 + r) / (n alpha)``. No second
derivative is used.

Tilted. The objective of ``dpsk._optimize._tilted_solver``, ``T(w) = (alpha/2) ||w||^2
+ (1/t) log mean_i exp(t l_i(w))``, ``t > 0``: see :func:`tilted_sensitivity`.

Both release ``add_on_grid(solver point, noise)`` with Algorithm 1's
calibration at the derived sensitivity plus the solver's distance and the grid
rounding (``dpsk.mechanisms._erm._noise_plan``): Gamma-norm noise for ``delta = 0``, the
analytic Gaussian mechanism (Balle and Wang 2018) for ``delta > 0``.
"""

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import expit

from .._optimize._hinge_solver import minimize_hinge
from .._optimize._robust_solver import (
    minimize_robust_logistic,
    minimize_robust_logistic_linf,
    robust_curvature,
    robust_linf_curvature,
)
from .._optimize._tilted_solver import minimize_tilted_logistic
from .._silence import silenced
from ._erm import _draw, _noise_plan
from ._noise import add_on_grid

__all__ = ["private_robust_erm", "robust_sensitivity", "RobustLogisticConstants",
           "private_tilted_erm", "tilted_sensitivity", "TiltedLogisticConstants",
           "private_hinge_erm", "HingeConstants", "hinge_solver_distance",
           "private_robust_linf_erm", "robust_linf_sensitivity", "RobustLinfConstants"]


@dataclass(frozen=True)
class RobustLogisticConstants:
    """The constants of the robust logistic loss at radius ``r`` on rows of norm <= 1.

    ``lipschitz = 1 + r`` bounds one row's gradient (module docstring) and
    ``curvature`` its gradient's Lipschitz constant
    (``dpsk._optimize._robust_solver.robust_curvature``). Shaped like a ``dpsk._optimize._losses``
    object so that ``dpsk.mechanisms._erm._noise_plan`` calibrates it.
    """

    radius: float
    n_outputs: int = 1

    @property
    def lipschitz(self):
        return 1.0 + self.radius

    @property
    def curvature(self):
        return robust_curvature(self.radius)


def private_robust_erm(Z, y, radius, n_perturbed, epsilon, alpha, rng, tol=1e-10, delta=0.0,
                       n_problems=1, sample_weight=None):
    """Release one robust logistic model; the ``n_problems`` releases are ``(epsilon, delta)``-DP.

    Guarantee: releasing the ``n_problems`` one-vs-rest models about the same
    rows is ``(epsilon, delta)``-differentially private with respect to
    replacing one row of ``(Z, y)``, provided every row of ``Z`` has L2 norm
    <= 1, ``y`` is in {-1, +1} and ``n`` is public. ``delta = 0``: Gamma-norm
    noise at ``epsilon / n_problems`` each (sequential composition); ``delta >
    0``: one joint Gaussian mechanism of sensitivity ``sqrt(n_problems)
    Delta`` (as ``dpsk.mechanisms._erm.private_erm``). ``Delta = 2 (1 + r) / (n alpha) +
    2 tol / alpha + 2 rounding`` (module docstring).

    Parameters
    ----------
    Z : ndarray or CSR matrix of shape (n, d), rows of norm <= 1
    y : ndarray of shape (n,), labels in {-1, +1}
    radius : float
        ``r >= 0``, the perturbation radius in the units of ``Z``.
    n_perturbed : int
        Leading coordinates the perturbation acts on (``d - 1`` with an
        intercept column last).
    epsilon, alpha, rng, tol, delta, n_problems
        As in :func:`dpsk.mechanisms._erm.private_erm`.
    sample_weight : ndarray of shape (n,) or None
        Row weights in [0, 1], part of each row; the objective still divides
        by ``n``. One row's weighted gradient ``s l' (y x - r u)`` keeps norm
        ``<= 1 + r``, so ``Delta`` is unchanged (docs/privacy.rst, "Weights").

    Returns
    -------
    w : ndarray of shape (d,)
        Nothing else leaves: solver diagnostics stay private.
    """
    def solve(solver_tol):
        return minimize_robust_logistic(Z, y, alpha, radius, n_perturbed, tol=solver_tol,
                                        sample_weight=sample_weight).w

    return _output_release(RobustLogisticConstants(float(radius)), Z.shape, solve, epsilon,
                           alpha, rng, tol, delta, n_problems)


def _output_release(constants, shape, solve, epsilon, alpha, rng, tol, delta, n_problems):
    """Calibrate from public quantities, solve, add the noise on the release grid.

    ``constants.lipschitz`` is the sensitivity times ``n alpha / 2``; the plan
    adds the solver's distance and the rounding (``dpsk.mechanisms._erm._noise_plan``).
    Warnings are dropped: only the release leaves.
    """
    with silenced():
        n, d = shape
        plan = _noise_plan(constants, n, d, epsilon, delta, alpha, "output", tol, n_problems)
        return add_on_grid(solve(plan.tol), _draw(plan, d, rng), plan.grid)


def robust_sensitivity(n, alpha, radius):
    """``2 (1 + r) / (n alpha)``: how far the exact robust minimiser moves (module docstring)."""
    return 2.0 * (1.0 + radius) / (n * alpha)


def tilted_sensitivity(n, alpha, tilt):
    """How far one row moves the exact minimiser of the tilted objective: ``2 q / alpha``.

    Derivation (``t > 0``, rows of norm <= 1, logistic loss ``l >= 0`` with
    ``|l'| <= 1``; ``docs/beyond_erm.rst`` has it at length):

    1. For exact minimisers ``w1, w2`` of neighbouring objectives ``T1, T2``,
       strong convexity and ``grad T1(w1) = grad T2(w2) = 0`` give ``alpha
       ||w1 - w2||^2 <= <grad T2(w2) - grad T1(w2), w1 - w2>``, so ``||w1 -
       w2|| <= ||G2(w2) - G1(w2)|| / alpha`` with ``G = sum_j p_j g_j`` the
       loss part of the gradient (``p`` the tilted weights, ``||g_j|| <= 1``).
    2. Only row ``i`` differs. With ``a = p_i`` (first data set) and ``b =
       p'_i`` (second) at the same point, the shared rows' weights are ``e_j /
       (S + e_i)`` and ``e_j / (S + e'_i)`` and sum to ``1 - a`` and ``1 - b``,
       so ``||G2 - G1|| <= |a - b| + a + b = 2 max(a, b)``.
    3. A bound on one weight at a minimiser: ``T(w*) <= T(0) = log 2`` and the
       log-mean-exp term is ``>= 0`` (``l >= 0``), so ``(alpha/2) ||w*||^2 <=
       log 2``; also ``alpha ||w*|| = ||G(w*)|| <= 1``. With ``B = min(1 /
       alpha, sqrt(2 log 2 / alpha))``, every row's loss at ``w*`` (of either
       data set) is ``l <= L = log(1 + e^B)``, and the other ``n - 1`` rows
       have ``e^{t l_j} >= 1``: ``p_i <= q = e^{tL} / (e^{tL} + n - 1)``.

    Hence ``Delta = 2 q / alpha``. As ``t -> 0``, ``q -> 1/n`` and ``Delta`` is
    ERM's ``2 / (n alpha)``; for fixed ``t`` it falls like ``e^{tL} / n`` only
    once ``n >> e^{tL}``, and below that it stays near ``2 / alpha``: one row
    can carry almost all the weight.
    """
    n, alpha, tilt = int(n), float(alpha), float(tilt)
    if not (n >= 1 and alpha > 0 and math.isfinite(tilt) and tilt > 0):
        raise ValueError("tilted_sensitivity needs n >= 1, alpha > 0 and a finite tilt > 0.")
    if n == 1:
        return 2.0 / alpha
    bound = min(1.0 / alpha, math.sqrt(2.0 * math.log(2.0) / alpha))
    loss_max = float(np.logaddexp(0.0, bound))
    return 2.0 * float(expit(tilt * loss_max - math.log(n - 1))) / alpha


@dataclass(frozen=True)
class TiltedLogisticConstants:
    """Constants of the tilted logistic objective, shaped for ``dpsk.mechanisms._erm._noise_plan``.

    ``lipschitz`` is the sensitivity expressed in Algorithm 1's units, ``n
    alpha Delta / 2`` (so the plan's ``2 lipschitz / (n alpha)`` is
    :func:`tilted_sensitivity`); ``curvature = 1/4 + t`` (``dpsk._optimize._tilted_solver``).
    """

    tilt: float
    n: int
    alpha: float
    n_outputs: int = 1

    @property
    def lipschitz(self):
        return 0.5 * self.n * self.alpha * tilted_sensitivity(self.n, self.alpha, self.tilt)

    @property
    def curvature(self):
        return 0.25 + self.tilt


def private_tilted_erm(Z, y, tilt, epsilon, alpha, rng, tol=1e-10, delta=0.0, n_problems=1):
    """Release one tilted logistic model; the ``n_problems`` releases are ``(epsilon, delta)``-DP.

    Guarantee: as :func:`private_robust_erm`, with ``Delta =``
    :func:`tilted_sensitivity` ``(n, alpha, tilt) + 2 tol / alpha + 2
    rounding``. Conditions: rows of ``Z`` of norm <= 1, ``y`` in {-1, +1},
    ``tilt > 0``, ``n`` public.

    Returns
    -------
    w : ndarray of shape (d,)
    """
    def solve(solver_tol):
        return minimize_tilted_logistic(Z, y, alpha, tilt, tol=solver_tol).w

    constants = TiltedLogisticConstants(float(tilt), Z.shape[0], float(alpha))
    return _output_release(constants, Z.shape, solve, epsilon, alpha, rng, tol, delta, n_problems)


@dataclass(frozen=True)
class HingeConstants:
    """The hinge loss's constants, shaped for ``dpsk.mechanisms._erm._noise_plan``.

    ``lipschitz = 1``: every subgradient of ``max(0, 1 - y w.z)`` is ``-s y z``
    with ``s`` in ``[0, 1]``, of norm at most ``||z|| <= 1``. ``curvature = 0``
    is not a property of the hinge (it has none): the plan only uses it for the
    gradient solvers' tolerance floor, which the duality-gap certificate does
    not need (its rounding is of order ``d u ||w||`` whatever the curvature);
    with 0 that floor is ``64 d u``, far below any gap target.
    """

    n_outputs: int = 1
    lipschitz: float = 1.0
    curvature: float = 0.0


def hinge_solver_distance(gap, alpha):
    """``sqrt(2 gap / alpha)``: how far a point with duality gap ``gap`` is from the minimiser."""
    return math.sqrt(2.0 * float(gap) / float(alpha))


def private_hinge_erm(Z, y, epsilon, alpha, rng, gap=1e-10, delta=0.0, n_problems=1,
                      sample_weight=None):
    """Release one linear SVM (hinge loss); the ``n_problems`` releases are ``(epsilon, delta)``-DP.

    Guarantee: as :func:`private_robust_erm`, with ``Delta = 2 / (n alpha) + 2
    sqrt(2 gap / alpha) + 2 rounding``. Conditions: rows of ``Z`` of norm
    <= 1, ``y`` in {-1, +1}, ``n`` public, ``gap`` fixed before the data.

    Why ``2 / (n alpha)`` holds without differentiability (Chaudhuri et al.
    2011, Theorem 1, assume a differentiable loss; Lowy and Razaviyayn's
    non-smooth setting needs this instead). Let ``w1, w2`` minimise ``F1, F2``
    (row ``i`` replaced), both ``alpha``-strongly convex. ``0`` is a
    subgradient of ``F1`` at ``w1``, so strong convexity gives ``F1(w2) -
    F1(w1) >= (alpha/2) ||w1 - w2||^2``; likewise ``F2(w1) - F2(w2) >=
    (alpha/2) ||w1 - w2||^2``. Adding, ``(F1 - F2)(w2) - (F1 - F2)(w1) >=
    alpha ||w1 - w2||^2``. ``F1 - F2 = (f_i - f_i') / n`` with ``f(w) = max(0,
    1 - y w.z)`` 1-Lipschitz (a maximum of two functions of Lipschitz constant
    0 and ``||z|| <= 1``), so the left side is at most ``(2/n) ||w1 - w2||``:
    ``||w1 - w2|| <= 2 / (n alpha)``.

    The solver's distance. ``dpsk._optimize._hinge_solver.minimize_hinge`` returns a
    point within ``sqrt(2 gap / alpha)`` of the exact minimiser (a certified
    duality gap, or a fallback that meets the same bound). ``gap`` is public,
    so the noise scale depends on public quantities only; the plan may raise
    it to its floor, never lower it. In the plan's units the solver tolerance
    is ``tol = alpha sqrt(2 gap / alpha)`` (its distance is ``tol / alpha``).

    Weights (``sample_weight``, one in [0, 1] per row, part of the row): ``F1
    - F2 = (s_i f_i - s'_i f'_i) / n`` with ``s f`` still 1-Lipschitz, so
    ``Delta`` is unchanged (docs/privacy.rst, "Weights"); the duality gap of
    the weighted objective bounds the solver's distance the same way.

    Returns
    -------
    w : ndarray of shape (d,)
    """
    alpha, gap = float(alpha), float(gap)

    def solve(solver_tol):
        # The plan's tol back into a gap: tol / alpha = sqrt(2 g / alpha).
        return minimize_hinge(Z, y, alpha, gap=solver_tol * solver_tol / (2.0 * alpha),
                              sample_weight=sample_weight).w

    tol = alpha * hinge_solver_distance(gap, alpha)
    return _output_release(HingeConstants(), Z.shape, solve, epsilon, alpha, rng, tol, delta,
                           n_problems)


def robust_linf_sensitivity(n, alpha, radius, n_perturbed):
    """How far one row moves the exact L-infinity robust minimiser.

    ``Delta = max(2, 1 + r sqrt(k)) / (n alpha)``.

    Derivation (rows of norm <= 1, labels +-1, ``k`` perturbed coordinates;
    ``docs/beyond_erm.rst`` has it at length). As for the L2 model, for exact
    minimisers ``w1, w2`` of neighbouring objectives, ``alpha ||w1 - w2||^2 <=
    (F1 - F2)(w2) - (F1 - F2)(w1)``, and ``F1 - F2 = (f_i - f_i') / n``. Its
    gradient at any ``w`` is ``(1/n)`` times ``-a y z + b y' z' + r (a - b) u``
    with ``a = -l'(m_i)``, ``b = -l'(m'_i)`` in ``[0, 1]`` and ``u`` the
    gradient of the smoothed ``||P w||_1``, ``||u|| < sqrt(k)`` (the shared
    term ``r N_1(w)`` enters both rows' margins, so its gradient appears with
    the *difference* ``a - b``). Its norm is at most ``a + b + r sqrt(k) |a -
    b|``, a convex function of ``(a, b)`` whose maximum on the unit square is at
    a corner: ``max(2, 1 + r sqrt(k))``. So ``F1 - F2`` is ``max(2, 1 + r
    sqrt(k)) / n``-Lipschitz and ``||w1 - w2|| <= max(2, 1 + r sqrt(k)) / (n
    alpha)``. It grows with ``sqrt(k)`` once ``r sqrt(k) > 1``: the L2 norm of
    ``sign(w)`` is ``sqrt(k)``, the dual-norm price of an L-infinity adversary.
    """
    k = max(int(n_perturbed), 1)
    return max(2.0, 1.0 + float(radius) * math.sqrt(k)) / (n * alpha)


@dataclass(frozen=True)
class RobustLinfConstants:
    """The L-infinity robust logistic loss's constants, for ``dpsk.mechanisms._erm._noise_plan``.

    ``lipschitz = max(1, (1 + r sqrt(k)) / 2)`` is the sensitivity in Algorithm 1's
    units (``2 lipschitz / (n alpha)`` is :func:`robust_linf_sensitivity`);
    ``curvature`` is ``dpsk._optimize._robust_solver.robust_linf_curvature``.
    """

    radius: float
    n_perturbed: int
    n_outputs: int = 1

    @property
    def lipschitz(self):
        return max(1.0, 0.5 * (1.0 + self.radius * math.sqrt(max(self.n_perturbed, 1))))

    @property
    def curvature(self):
        return robust_linf_curvature(self.radius, self.n_perturbed)


def private_robust_linf_erm(Z, y, radius, n_perturbed, epsilon, alpha, rng, tol=1e-10,
                            delta=0.0, n_problems=1, sample_weight=None):
    """Release one L-infinity robust logistic model; the releases are ``(epsilon, delta)``-DP.

    Guarantee: as :func:`private_robust_erm`, with ``Delta =``
    :func:`robust_linf_sensitivity` ``+ 2 tol / alpha + 2 rounding``, for the
    objective ``(1/n) sum_i l(y_i w.z_i - r N_1(w)) + (alpha/2) ||w||^2``
    (``N_1`` the smoothed L1 norm of the ``n_perturbed`` leading coordinates,
    ``dpsk._optimize._robust_solver._RobustLinfObjective``). Conditions: rows
    of ``Z`` of norm <= 1, ``y`` in {-1, +1}, ``n`` public. ``sample_weight``
    as in :func:`private_robust_erm`: a weighted row's gradient keeps the
    unweighted bound, so ``Delta`` is unchanged.

    Returns
    -------
    w : ndarray of shape (d,)
    """
    def solve(solver_tol):
        return minimize_robust_logistic_linf(Z, y, alpha, radius, n_perturbed, tol=solver_tol,
                                             sample_weight=sample_weight).w

    constants = RobustLinfConstants(float(radius), int(n_perturbed))
    return _output_release(constants, Z.shape, solve, epsilon, alpha, rng, tol, delta, n_problems)
