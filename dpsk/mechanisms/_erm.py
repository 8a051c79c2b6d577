"""Private empirical risk minimisation: the one path from epsilon to a noisy model.

Every dpsk model that releases a linear function (the linear models, and the
kernel classifier on its random features) calls :func:`private_erm` once per
binary problem, or once for a whole multinomial (softmax) model. Reading it top
to bottom shows where each part of epsilon goes.
"""

import contextvars
import math
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from .._data._threads import single_threaded_blas
from .._optimize._binary import minimize_regularized_loss
from .._optimize._multinomial_solver import minimize_multinomial_loss, multinomial_tolerance_floor
from .._optimize._solution_cache import shared_solution
from .._optimize._solver import tolerance_floor
from .._silence import silenced
from ._gradient import noisy_gradient_descent
from ._noise import (
    add_on_grid,
    analytic_gaussian_sigma,
    center_input_radius,
    float_input_radius,
    gamma_norm_noise,
    gaussian_noise,
    gaussian_objective_calibration,
    noise_norm_bound,
    objective_perturbation_calibration,
    output_perturbation_beta,
    output_perturbation_sensitivity,
    release_grid,
    rounding_radius,
    solver_residual_beta,
)

__all__ = ["private_erm", "SOLVER_EPSILON_SHARE", "algorithm2_slack"]

#: Share of epsilon that objective perturbation keeps back to cover the solver's
#: residual (``dpsk.mechanisms._noise.solver_residual_beta``). With the default
#: ``tol=1e-10`` the resulting extra noise is orders of magnitude below the main
#: noise, and the 1% costs the main noise next to nothing.
SOLVER_EPSILON_SHARE = 0.01

# Off by default; on only inside ``algorithm2_slack()`` (per thread / context).
_ALGORITHM2_SLACK = contextvars.ContextVar("dpsk_algorithm2_slack", default=False)


@contextmanager
def algorithm2_slack():
    """Calibrate pure objective perturbation of margin losses as the paper does.

    Inside the block, fits in the calling thread that use pure (``delta = 0``)
    objective perturbation with a margin loss pay Algorithm 2's slack ``log(1
    + 2c/(n alpha) + c^2/(n alpha)^2)`` and its rule for the extra
    regularisation (``objective_perturbation_calibration(..., paper=True)``)
    instead of dpsk's ``log(1 + c/(n alpha))``. Both are epsilon-DP; the
    paper's costs more noise. For reproducing Chaudhuri et al. (2011), Table 1
    (``benchmarks/bench_adult.py``); the softmax and the Gaussian mechanisms
    are unaffected. Fits run in other threads or processes do not see it.
    """
    token = _ALGORITHM2_SLACK.set(True)
    try:
        yield
    finally:
        _ALGORITHM2_SLACK.reset(token)


def private_erm(Z, y, loss, epsilon, alpha, perturbation, rng, tol=1e-10, delta=0.0,
                n_problems=1, sample_weight=None, center=None):
    """Fit one private L2-regularised linear model on rows of norm <= 1.

    ``epsilon`` and ``delta`` are the budget of the whole release of
    ``n_problems`` models about the same rows (one-vs-rest); this call releases
    one of them, and the split between them is made here, by mechanism.

    Guarantee: the ``n_problems`` releases together are ``(epsilon,
    delta)``-differentially private with respect to changing one row of
    ``(Z, y)``, provided every row of ``Z`` has L2 norm <= 1, ``y`` is in {-1,
    +1}, ``loss`` is convex and differentiable with ``|l'| <= 1`` and
    ``l'' <= loss.curvature``, and ``n = len(y)`` is public.

    * ``delta = 0``, ``perturbation="output"``: Algorithm 1 of Chaudhuri,
      Monteleoni and Sarwate (2011), Theorem 1, at ``epsilon / n_problems``
      (sequential composition). Minimise ``J``, then add Gamma-norm noise of
      rate ``output_perturbation_beta`` (which includes the solver tolerance
      and the rounding to the release grid).
    * ``delta = 0``, ``perturbation="objective"``: Algorithm 2 (Theorem 2,
      Corollary 4 for the Huber loss) with dpsk's sharper change-of-variables
      slack ``log(1 + c/(n alpha))`` (``objective_perturbation_calibration``;
      the paper's own inside :func:`algorithm2_slack`) at ``(1 -
      SOLVER_EPSILON_SHARE) * epsilon / n_problems``; the remaining share pays
      for the gap between the solver's point and the exact minimiser and for
      the rounding (``solver_residual_beta``).
    * ``delta > 0``, ``perturbation="output"``: the Gaussian mechanism with the
      analytic calibration of Balle and Wang (2018). Replacing one row moves
      every one of the ``n_problems`` minimisers by at most the sensitivity
      ``Delta`` of Algorithm 1, so the joint release has L2 sensitivity
      ``sqrt(n_problems) Delta`` and each model gets ``N(0, sigma^2 I)`` with
      ``sigma = analytic_gaussian_sigma(epsilon, delta, sqrt(n_problems)
      Delta)``: one Gaussian mechanism, not ``n_problems`` composed ones.
    * ``delta > 0``, ``perturbation="objective"``: Gaussian objective
      perturbation (``gaussian_objective_calibration``) at ``((1 -
      SOLVER_EPSILON_SHARE) epsilon / n_problems, delta / n_problems)``, plus
      the pure residual share as above.
    * ``delta > 0``, ``perturbation="gradient"``: full-batch noisy gradient
      descent (``dpsk.mechanisms._gradient``), its ``n_problems * T`` Gaussian steps
      composed exactly as one Gaussian-DP release.

    Multinomial (softmax) models. With ``loss = MultinomialLoss(K)`` the
    release is the whole ``K x d`` weight matrix, one mechanism at the whole
    ``(epsilon, delta)`` (``n_problems = 1``), and ``y`` holds class indices in
    ``{0, ..., K-1}``. Every item above holds with the loss's constants in
    place of the margin loss's (``dpsk._optimize._losses.MultinomialLoss``): one row's
    gradient has Frobenius norm <= ``lipschitz = sqrt(2)``, so the
    minimiser's sensitivity is ``2 sqrt(2) / (n alpha)`` (the argument of
    Theorem 1 needs only strong convexity and that gradient bound); objective
    perturbation pays ``(K - 1) log(1 + c/(n Lambda))`` with ``c = 1/2`` for
    the change of variables and masks a gradient difference of norm <= ``2
    sqrt(2)``; noisy gradient descent has step sensitivity ``2 sqrt(2) / n``.
    The noise is drawn in ``R^(K d)`` with the Frobenius norm, and the solver
    is ``dpsk._optimize._multinomial_solver``, certified like the binary one.

    Weighted rows (``sample_weight``). The objective becomes ``(1/n) sum_i
    s_i l(y_i w.z_i) + (alpha/2) ||w||^2`` with the public ``n`` (never
    ``sum s_i``) and each ``s_i`` in [0, 1] part of row ``i`` (a neighbour
    replaces ``(z, y, s)`` together). Every mechanism above keeps its
    calibration: a weighted row's loss ``s l`` is still convex with ``|s l'|
    <= lipschitz`` and ``0 <= s l'' <= curvature``, its Hessian term keeps
    rank <= ``hessian_rank``, and those constants are all the proofs use
    (derivation in docs/privacy.rst, "Weights"). The noise plan does not read
    the weights.

    A public centre (``center``, the class prior's model: docs/privacy.rst,
    "The class prior"). The regulariser becomes ``(Lambda/2) ||w - u||^2``
    with ``u`` fixed before the data is read (here: a function of an earlier
    release). Expanded, that is the objective above plus the public linear
    term ``-Lambda u.w`` (and a constant), so every mechanism keeps its
    calibration: output perturbation's minimiser still moves by at most its
    sensitivity (strong convexity against the same gradient difference),
    objective perturbation's map from the noise ``b`` to the release still has
    the same Jacobian and the same ``b - b'`` between neighbours (the public
    term cancels), and noisy gradient descent releases the same data
    gradients (it starts at ``u`` and steps on ``alpha (w - u)``, public
    post-processing).

    Every release is added on a grid (``add_on_grid``): a plain floating-point
    sum would round to values whose low bits depend on the minimiser (Mironov,
    2012).

    Parameters
    ----------
    Z : ndarray or sparse matrix of shape (n, d)
        Rows of L2 norm <= 1 (see ``dpsk._data._validation.design_matrix``).
    y : ndarray of shape (n,)
        Labels in {-1, +1}, or class indices for a multinomial loss.
    loss : loss object from ``dpsk._optimize._losses``
    epsilon : float
        Epsilon of the whole release of ``n_problems`` models, > 0.
    alpha : float
        L2 regularisation ``alpha/2 ||w||^2``, > 0 (the paper's Lambda).
    perturbation : {"objective", "output", "gradient"}
    rng : NoiseSource
        Used only for this release's noise (``dpsk.mechanisms._random``).
    tol : float, default=1e-10
        Fixed before seeing the data. The solver returns a point within
        ``tol / strong_convexity`` of the exact minimiser, always (see
        ``dpsk._optimize._solver``), and the noise covers that distance.
    delta : float, default=0.0
        Delta of the whole release, in [0, 1).
    n_problems : int, default=1
        Number of models released together about the same rows.
    sample_weight : ndarray of shape (n,) or None, default=None
        Row weights in [0, 1] (see above); None is the unweighted fit. Only
        with a stored design (dense or CSR).
    center : ndarray of shape (d,) or (K, d), or None, default=None
        The public centre ``u`` of the regulariser (see above); None is zero.

    Returns
    -------
    w : ndarray of shape (d,), or (K, d) for a multinomial loss
        The release. Nothing else leaves this function: solver diagnostics
        (iterations, gradient norms, which solver path was taken) depend on the
        data without noise. Warnings raised inside are dropped for that reason
        (this also covers one-vs-rest problems solved in joblib workers).
    """
    # One BLAS thread: the solvers' many small BLAS calls oversubscribe a busy
    # machine otherwise (dpsk._data._threads).
    with silenced(), single_threaded_blas():
        return _private_erm(Z, y, loss, epsilon, alpha, perturbation, rng, tol, delta,
                            n_problems, sample_weight, center)


@dataclass(frozen=True)
class _NoisePlan:
    """What one release draws, fixed from public quantities before the data is read.

    ``beta`` (Gamma-norm rate, ``delta = 0``) or ``sigma`` (Gaussian scale) of the
    main noise; the L2 strength and solver tolerance of the solved objective;
    the release grid; and, for objective perturbation, the rate of the noise
    that covers the solver's residual.
    """

    beta: float | None
    sigma: float | None
    strong_convexity: float
    tol: float
    grid: float
    residual_beta: float | None = None


def _noise_plan(loss, n, d, epsilon, delta, alpha, perturbation, tol, n_problems=1,
                center_norm=0.0):
    """Calibrate one release of :func:`private_erm` (output or objective perturbation).

    The only place where the budget becomes noise scales: ``_private_erm``
    draws from it and ``dpsk.utility`` reads it (through :func:`_noise_law`).
    ``center_norm`` is ``||u||`` of a public centre: its linear term ``Lambda
    ||u||`` enters the solver's tolerance floor, nothing else.
    """
    n_outputs = loss.n_outputs
    size = d * n_outputs
    if perturbation == "output":
        # The release lives on a grid fixed by public quantities, so that its
        # floating-point bits say nothing about the minimiser (add_on_grid).
        grid = release_grid(2.0 * loss.lipschitz / (n * alpha), size)
        rounding = rounding_radius(grid, size)
        tol = max(tol, _tolerance_floor(loss, d, alpha, alpha * center_norm))
        if delta == 0:
            beta = output_perturbation_beta(epsilon / n_problems, n, alpha, loss.lipschitz,
                                            solver_tol=tol, rounding=rounding)
            return _NoisePlan(beta, None, alpha, tol, grid)
        sensitivity = output_perturbation_sensitivity(n, alpha, loss.lipschitz,
                                                      solver_tol=tol, rounding=rounding)
        sigma = analytic_gaussian_sigma(epsilon, delta, math.sqrt(n_problems) * sensitivity)
        return _NoisePlan(None, sigma, alpha, tol, grid)

    epsilon_each, delta_each = epsilon / n_problems, delta / n_problems
    epsilon_solver = SOLVER_EPSILON_SHARE * epsilon_each
    beta = sigma = None
    if delta == 0:
        calibration = _pure_objective_calibration(loss, epsilon_each - epsilon_solver, n, alpha)
        beta = calibration.beta
        b_bound = noise_norm_bound(size, beta=beta)
    else:
        calibration = gaussian_objective_calibration(
            epsilon_each - epsilon_solver, delta_each, n, alpha, loss.curvature,
            lipschitz=loss.lipschitz, hessian_rank=loss.hessian_rank,
        )
        sigma = calibration.sigma
        b_bound = noise_norm_bound(size, sigma=sigma)
    strong_convexity = alpha + calibration.extra_alpha
    # A data-independent floor: below it float64 cannot deliver tol (the bound on
    # ||b|| is the sampler's, not this draw's, so tol does not depend on b).
    tol = max(tol, _tolerance_floor(loss, d, strong_convexity,
                                    b_bound / n + strong_convexity * center_norm))
    grid = release_grid(2.0 * loss.lipschitz / (n * strong_convexity), size)
    # The residual noise also covers handing the exact b to the solver as
    # float64 (float_input_radius), next to the grid margin.
    rounding = rounding_radius(grid, size) + float_input_radius(b_bound, n, strong_convexity,
                                                                size)
    if center_norm > 0:
        rounding += center_input_radius(b_bound, n, strong_convexity, center_norm, size)
    residual_beta = solver_residual_beta(epsilon_solver, strong_convexity, tol,
                                         rounding=rounding)
    return _NoisePlan(beta, sigma, strong_convexity, tol, grid, residual_beta)


def _draw(plan, size, rng):
    """The main noise of ``plan``: Gamma-norm at rate ``beta`` or Gaussian at ``sigma``."""
    if plan.beta is not None:
        return gamma_norm_noise(size, plan.beta, rng)
    return gaussian_noise(size, plan.sigma, rng)


def _private_erm(Z, y, loss, epsilon, alpha, perturbation, rng, tol, delta, n_problems,
                 sample_weight=None, center=None):
    n, d = Z.shape
    sample_weight = _row_weights(sample_weight, n)
    if loss.n_outputs == 1 and loss.lipschitz > 1:
        raise ValueError("The privacy guarantees need a margin loss with |l'| <= 1.")
    if perturbation not in ("objective", "output", "gradient"):
        raise ValueError(
            f"perturbation must be 'objective', 'output' or 'gradient', got {perturbation!r}."
        )
    if perturbation == "gradient":
        if delta == 0:
            raise ValueError("perturbation='gradient' needs delta > 0 (Gaussian noise).")
        return noisy_gradient_descent(Z, y, loss, epsilon, delta, alpha, rng,
                                      n_problems=n_problems, sample_weight=sample_weight,
                                      center=center)
    # The noise lives in the space of all released weights: K x d for the softmax.
    shape = (d,) if loss.n_outputs == 1 else (loss.n_outputs, d)
    size = math.prod(shape)
    if center is not None:
        center = np.asarray(center, dtype=float).reshape(shape)
    center_norm = 0.0 if center is None else float(np.linalg.norm(center))
    plan = _noise_plan(loss, n, d, epsilon, delta, alpha, perturbation, tol, n_problems,
                       center_norm)
    if perturbation == "output":
        # (alpha/2) ||w - u||^2 is the linear term -alpha u, public
        linear = None if center is None else -alpha * center
        w = _output_minimizer(loss, Z, y, alpha, plan.tol, sample_weight, linear)
        return add_on_grid(w.ravel(), _draw(plan, size, rng), plan.grid).reshape(shape)

    b = _draw(plan, size, rng)
    # The correctly rounded floats of the exact draw (docs/privacy.rst, "Exact noise").
    linear = np.asarray(b, dtype=float).reshape(shape) / n
    if center is not None:
        linear = linear - plan.strong_convexity * center
    w = _minimize(loss, Z, y, plan.strong_convexity, plan.tol, linear=linear,
                  sample_weight=sample_weight)
    return add_on_grid(w.ravel(), gamma_norm_noise(size, plan.residual_beta, rng),
                       plan.grid).reshape(shape)


def _output_minimizer(loss, Z, y, alpha, tol, sample_weight=None, linear=None):
    """Output perturbation's solve, shared with ``dpsk.utility``'s Monte Carlo when active."""
    if sample_weight is not None:  # the shared store is keyed on unweighted problems
        return _minimize(loss, Z, y, alpha, tol, linear=linear, sample_weight=sample_weight)
    return shared_solution((loss, Z, y, alpha, tol, linear),
                           lambda: _minimize(loss, Z, y, alpha, tol, linear=linear))


def _row_weights(sample_weight, n):
    """``sample_weight`` as floats in [0, 1] of length ``n``, or None for none or all ones.

    The estimators refuse other weights for free before anything is spent;
    this check guards the mechanism's own condition.
    """
    if sample_weight is None:
        return None
    weights = np.asarray(sample_weight, dtype=float)
    if weights.shape != (n,) or not np.all((weights >= 0.0) & (weights <= 1.0)):
        raise ValueError("sample_weight must hold one weight in [0, 1] per row.")
    # All ones is the unweighted objective exactly: take the unweighted path, so
    # the bits are those of an unweighted fit (the law is the same either way).
    return None if np.all(weights == 1.0) else weights


def _noise_law(loss, n, d, epsilon, alpha, perturbation, tol=1e-10, delta=0.0):
    """The public scale of the noise one binary ``private_erm`` release draws.

    A private helper for ``dpsk.utility``'s probe mode, which differentiates
    the perturbed optimum with respect to epsilon. It follows the branches of
    :func:`_private_erm` for ``n_problems = 1`` (tested against the draws it
    makes) and reads nothing but public parameters.

    Returns
    -------
    scale : float
        ``1 / beta`` of the Gamma-norm noise (``delta = 0``) or ``sigma`` of the
        Gaussian noise: the noise is ``scale`` times a draw whose law does not
        depend on epsilon.
    strong_convexity : float
        The L2 strength of the solved objective (``alpha`` plus objective
        perturbation's extra regularisation).
    """
    if perturbation not in ("output", "objective"):
        raise ValueError(f"No closed-form noise law for perturbation={perturbation!r}.")
    plan = _noise_plan(loss, n, d, epsilon, delta, alpha, perturbation, tol)
    scale = 1.0 / plan.beta if plan.beta is not None else plan.sigma
    return scale, plan.strong_convexity


def _pure_objective_calibration(loss, epsilon, n, alpha):
    """Pure objective perturbation's calibration: dpsk's, or Algorithm 2's when asked."""
    if loss.n_outputs == 1 and _ALGORITHM2_SLACK.get():
        return objective_perturbation_calibration(
            epsilon, n, alpha, loss.curvature, lipschitz=loss.lipschitz, paper=True)
    return objective_perturbation_calibration(
        epsilon, n, alpha, loss.curvature,
        lipschitz=loss.lipschitz, jacobian_exponent=_jacobian_exponent(loss),
    )


def _jacobian_exponent(loss):
    """The slack exponent ``r`` of pure objective perturbation (see the calibration).

    The rank of one row's loss Hessian: 1 for margin losses (the slack ``log(1
    + c/(n alpha))``, half of Algorithm 2's), ``K - 1`` for the softmax.
    """
    return loss.hessian_rank


def _minimize(loss, Z, y, lam, tol, linear=None, sample_weight=None):
    """The certified solver for ``loss``: a point within ``tol / lam`` of the minimiser."""
    if loss.n_outputs == 1:
        return minimize_regularized_loss(loss, Z, y, lam, linear=linear, tol=tol,
                                         sample_weight=sample_weight).w
    return minimize_multinomial_loss(Z, y, loss.n_classes, lam, linear=linear, tol=tol,
                                     sample_weight=sample_weight).w


def _tolerance_floor(loss, d, lam, linear_norm_bound=0.0):
    """The solver's data-independent tolerance floor for ``loss`` (``dpsk._optimize._solver``)."""
    if loss.n_outputs == 1:
        return tolerance_floor(d, loss.curvature, lam, linear_norm_bound)
    return multinomial_tolerance_floor(d, loss.n_classes, lam, linear_norm_bound)
