"""Private adversarially robust logistic regression by output perturbation.

The release is the minimiser of the robust objective of
``dpsk._robust_solver``,

    F(w) = (1/n) sum_i l(y_i w.z_i - r N(w)) + (alpha/2) ||w||^2,

plus noise, calibrated to a sensitivity derived here (Lowy and Razaviyayn,
Section 5.2, adapt output perturbation to robust training; the bound below is
our own derivation, see ``docs/beyond_erm.rst``).

Sensitivity. Each term ``f_i(w) = l(y_i w.z_i - r N(w))`` is convex and
``L``-Lipschitz with ``L = 1 + r``: its gradient is ``l'(m_i) (y_i z_i - r
u_w)`` with ``|l'| <= 1``, ``||z_i|| <= 1`` and ``||u_w|| < 1``. Let ``w1, w2``
be the exact minimisers for neighbouring data sets (one row replaced), ``F1,
F2`` their objectives. ``alpha``-strong convexity gives ``F1(w2) - F1(w1) >=
(alpha/2) ||w2 - w1||^2`` and ``F2(w1) - F2(w2) >= (alpha/2) ||w2 - w1||^2``;
adding, ``(F1 - F2)(w2) - (F1 - F2)(w1) >= alpha ||w2 - w1||^2``. But ``F1 -
F2 = (f_i - f_i') / n`` is ``2L/n``-Lipschitz, so the left side is at most ``(2L
/ n) ||w2 - w1||``: ``||w1 - w2|| <= 2 (1 + r) / (n alpha)``. The argument needs
no second derivative, so it holds for the smoothed objective actually solved
(the smoothing keeps ``||u_w|| < 1``).

The rest is Algorithm 1 of Chaudhuri et al. (2011) at that sensitivity, with
the solver's distance and the grid rounding added (``dpsk._erm._noise_plan``):
Gamma-norm noise for ``delta = 0``, the analytic Gaussian mechanism (Balle and
Wang 2018) for ``delta > 0``.
"""

from dataclasses import dataclass

from ._erm import _draw, _noise_plan
from ._mechanisms import add_on_grid
from ._robust_solver import minimize_robust_logistic, robust_curvature
from ._silence import silenced

__all__ = ["private_robust_erm", "robust_sensitivity", "RobustLogisticConstants"]


@dataclass(frozen=True)
class RobustLogisticConstants:
    """The constants of the robust logistic loss at radius ``r`` on rows of norm <= 1.

    ``lipschitz = 1 + r`` bounds one row's gradient (module docstring) and
    ``curvature`` its gradient's Lipschitz constant
    (``dpsk._robust_solver.robust_curvature``). Shaped like a ``dpsk._losses``
    object so that ``dpsk._erm._noise_plan`` calibrates it.
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
                       n_problems=1):
    """Release one robust logistic model; the ``n_problems`` releases are ``(epsilon, delta)``-DP.

    Guarantee: releasing the ``n_problems`` one-vs-rest models about the same
    rows is ``(epsilon, delta)``-differentially private with respect to
    replacing one row of ``(Z, y)``, provided every row of ``Z`` has L2 norm
    <= 1, ``y`` is in {-1, +1} and ``n`` is public. ``delta = 0``: Gamma-norm
    noise at ``epsilon / n_problems`` each (sequential composition); ``delta >
    0``: one joint Gaussian mechanism of sensitivity ``sqrt(n_problems)
    Delta`` (as ``dpsk._erm.private_erm``). ``Delta = 2 (1 + r) / (n alpha) +
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
        As in :func:`dpsk._erm.private_erm`.

    Returns
    -------
    w : ndarray of shape (d,)
        Nothing else leaves: solver diagnostics stay private.
    """
    with silenced():
        n, d = Z.shape
        constants = RobustLogisticConstants(float(radius))
        plan = _noise_plan(constants, n, d, epsilon, delta, alpha, "output", tol, n_problems)
        w = minimize_robust_logistic(Z, y, alpha, radius, n_perturbed, tol=plan.tol).w
        return add_on_grid(w, _draw(plan, d, rng), plan.grid)


def robust_sensitivity(n, alpha, radius):
    """``2 (1 + r) / (n alpha)``: how far the exact robust minimiser moves (module docstring)."""
    return 2.0 * (1.0 + radius) / (n * alpha)

