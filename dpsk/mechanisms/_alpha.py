"""The alpha rule: the L2 strength ``alpha="auto"`` resolves to, from public quantities only.

A private linear model trades two errors through ``alpha``: the bias of the
regulariser, which grows with ``alpha``, and the privacy noise, whose effect
shrinks as ``alpha`` grows (every mechanism's sensitivity is ``O(1 / (n
alpha))``). :func:`auto_alpha` minimises a bound on the sum, the excess risk of
the released model over a comparator ``w0`` with a public prior guess of its
norm. Every noise scale it reads comes from the mechanism's own calibration
(``dpsk.mechanisms._erm._noise_plan`` and ``noisy_gd_schedule``), so the rule
follows any change to them. The derivation and the calibration of the two
constants per mechanism, :data:`PRIOR_NORM` and :data:`PRIOR_EXPONENT`, are in
``docs/choosing_alpha.rst``.

Sources: the decomposition and the shapes of the noise terms follow the proofs
of Theorems 3 (output perturbation) and 4 (objective perturbation) of
Chaudhuri, Monteleoni and Sarwate (2011); balancing a noise term against the
regulariser's bias by the choice of the L2 strength is the prescription of
Lowy and Razaviyayn (2021) for output perturbation. The objective, Gaussian
and noisy-gradient-descent terms are dpsk's own (derived in the docs page);
the last one follows the analysis of stochastic gradient descent with a
comparator and the suffix averaging of Shamir and Zhang (2013, "Stochastic
gradient descent for non-smooth optimization", ICML) for the last iterate.
"""

import math

import numpy as np
from scipy.optimize import minimize_scalar
from scipy.special import ndtr

from ._erm import _noise_plan
from ._gradient import noisy_gd_schedule

__all__ = ["auto_alpha", "excess_risk_bound", "prior_size", "resolve_alpha", "PRIOR_NORM",
           "PRIOR_EXPONENT", "ALPHA_RANGE", "minimise_over_alpha", "floor_alpha", "score_noise_sd",
           "zero_signal_excess", "FLOOR_EXCESS", "SOFTMAX_ALPHA_FACTOR",
           "SOFTMAX_ALPHA_SLOPE", "SOFTMAX_PIVOT", "softmax_factor"]

#: The prior guess of the comparator's size, per mechanism: ``||w0||^2 =
#: PRIOR_NORM[perturbation]^2 * size^PRIOR_EXPONENT[perturbation]`` on rows of
#: norm <= 1, ``size`` the number of released weights. A model with margins of
#: a few units needs ``||w0||^2 ~ margin^2 k``, ``k`` the number of directions
#: the rows' norm is spread over: ``size`` for isotropic rows (``p = 1``), fewer
#: when the signal lives in a few factors. The constants absorb the slack of
#: each mechanism's bound, so they are calibrated per mechanism on generated
#: data families (``python -m benchmarks alpha-rule --groups generated``),
#: never on Adult, scikit-learn's bundled sets or the families of ``python -m
#: benchmarks defaults``, which are held out. A free exponent ``p`` fitted the
#: calibration families slightly better but did not transfer between them
#: (leave-one-family-out), so ``p = 1`` stays. Noisy gradient descent's bound
#: reads the prior also in its optimisation term ``||w0||^2 / (2 eta T)``, and
#: its constant was calibrated on its own. Derivation and tables in
#: ``docs/choosing_alpha.rst``.
#: For the softmax (``K`` weight vectors of length ``d``) the prior counts pairs of
#: classes, not weights: a centred comparator whose every pair ``(j, k)`` of classes
#: is separated as a binary comparator is (``||w_j - w_k||^2 = r^2 d^p``) has
#: ``||W0||^2 = r^2 d^p (K - 1) / 2`` (see :func:`prior_size`), not ``r^2 (K d)^p``.
PRIOR_NORM = {"objective": 2.0, "output": 0.5, "gradient": 7.5}

#: The softmax's alpha over the minimiser of its bound at ``n epsilon =``
#: :data:`SOFTMAX_PIVOT`; it falls like ``(n epsilon)^-SOFTMAX_ALPHA_SLOPE`` (see
#: :func:`softmax_factor`). Calibrated on generated multiclass families (n 1e3 to
#: 1e5, K 3 to 8, with the class prior; docs/choosing_alpha.rst, "Multiclass: a
#: factor that falls with n epsilon"), held out on real tables. One-vs-rest and
#: the margin losses keep the bound's minimiser.
SOFTMAX_ALPHA_FACTOR = 2.0
#: The slope of the softmax factor in ``log(n epsilon)``.
SOFTMAX_ALPHA_SLOPE = 0.2
#: The ``n epsilon`` at which the softmax factor is :data:`SOFTMAX_ALPHA_FACTOR`.
SOFTMAX_PIVOT = 1000.0

#: The exponent ``p`` of the prior's growth with the width (see :data:`PRIOR_NORM`).
PRIOR_EXPONENT = {"objective": 1.0, "output": 1.0, "gradient": 1.0}

#: The interval searched, in ``alpha``; the bound is minimised over its logarithm.
ALPHA_RANGE = (1e-9, 1e2)

_GRID_POINTS = 56


def resolve_alpha(alpha, **public):
    """``alpha`` itself when it is a number; :func:`auto_alpha` of ``public`` for ``"auto"``."""
    if isinstance(alpha, str):
        if alpha != "auto":
            raise ValueError(f"alpha must be a float > 0 or 'auto', got {alpha!r}.")
        return auto_alpha(**public)
    return float(alpha)


def auto_alpha(n, d, epsilon, delta=0.0, *, loss, perturbation, n_problems=1, tol=1e-10,
               loss_at=None, prior_norm=None, prior_exponent=None, corrected=True):
    """The ``alpha`` that minimises :func:`excess_risk_bound` for one release.

    A plain function of public quantities: the number of rows ``n``, the
    design's dimension ``d`` (after the intercept column and any random
    feature map), the budget, the mechanism and the loss's constants. It never
    sees the data. The minimiser is found on a logarithmic grid over
    :data:`ALPHA_RANGE`, refined by a bounded scalar search around the best
    grid point; the bound is flat wherever objective perturbation's extra
    regularisation takes over (the solved objective is then the same for every
    smaller ``alpha``), and the grid returns the largest such ``alpha`` up to
    its resolution, so the rule never pushes ``alpha`` under the mechanism's
    own floor without gain.

    Parameters
    ----------
    n, d : int
        Rows and design columns (public metadata).
    epsilon, delta : float
        The budget of the whole fit (all ``n_problems`` models).
    loss : loss object
        As passed to ``dpsk.mechanisms._erm.private_erm`` (``lipschitz``,
        ``curvature``, ``n_outputs``, ``hessian_rank``).
    perturbation : {"objective", "output", "gradient"}
    n_problems : int, default=1
        Models released together (one-vs-rest).
    tol : float, default=1e-10
        The solver tolerance (enters the calibrations).
    loss_at : callable or None
        ``alpha -> loss object`` for losses whose constants depend on
        ``alpha`` (tilted ERM); None uses ``loss`` at every ``alpha``.
    prior_norm : float or None, default=None
        None: ``PRIOR_NORM[perturbation]``.
    prior_exponent : float or None, default=None
        None: ``PRIOR_EXPONENT[perturbation]``.
    corrected : bool, default=True
        Apply :func:`softmax_factor` to the softmax's minimiser. False
        gives the bound's own minimiser (what the class prior's share reads).

    Returns
    -------
    alpha : float
    """
    n, d = int(n), int(d)
    if n < 1 or d < 1:
        raise ValueError("n and d must be >= 1.")
    if perturbation not in PRIOR_NORM:
        raise ValueError(f"perturbation must be one of {sorted(PRIOR_NORM)}, "
                         f"got {perturbation!r}.")
    if prior_norm is None:
        prior_norm = PRIOR_NORM[perturbation]
    if prior_exponent is None:
        prior_exponent = PRIOR_EXPONENT[perturbation]

    def bound(log_alpha):
        return excess_risk_bound(
            math.exp(log_alpha), n, d, epsilon, delta, loss=loss, perturbation=perturbation,
            n_problems=n_problems, tol=tol, loss_at=loss_at, prior_norm=prior_norm,
            prior_exponent=prior_exponent)

    alpha = minimise_over_alpha(bound)
    if corrected and loss.n_outputs > 1:
        alpha = min(alpha * softmax_factor(n, epsilon), ALPHA_RANGE[1])
    return alpha


def softmax_factor(n, epsilon):
    """The softmax's alpha over its bound's minimiser: ``F (N0 / (n epsilon))^s``.

    ``F =`` :data:`SOFTMAX_ALPHA_FACTOR`, ``N0 =`` :data:`SOFTMAX_PIVOT`, ``s =``
    :data:`SOFTMAX_ALPHA_SLOPE`; ``n epsilon`` is public (``epsilon`` the model's
    own, after the class prior's share). The bound's noise term sees only the
    regulariser's strong convexity; the data's own curvature, which damps the
    noise as well, counts for more as ``alpha`` falls, i.e. as ``n epsilon``
    grows, so the bound's minimiser is too large there and too small where ``n
    epsilon`` is small and the noise, not the bias, decides. Derivation and
    measurements in ``docs/choosing_alpha.rst``.
    """
    n_epsilon = float(n) * float(epsilon)
    return SOFTMAX_ALPHA_FACTOR * (SOFTMAX_PIVOT / n_epsilon) ** SOFTMAX_ALPHA_SLOPE


def minimise_over_alpha(bound):
    """The ``alpha`` in :data:`ALPHA_RANGE` that minimises ``bound(log alpha)``.

    A logarithmic grid, then a bounded scalar search around the best grid
    point; among (near-)ties the largest ``alpha`` (a bound flat below some
    ``alpha`` gains nothing there). Shared by every rule of this kind.
    """
    lo, hi = (math.log(a) for a in ALPHA_RANGE)
    grid = np.linspace(lo, hi, _GRID_POINTS)
    values = np.array([bound(g) for g in grid])
    # The largest alpha among the (near-)ties: on objective perturbation's flat
    # part every smaller alpha gives the same solved objective.
    best = int(np.flatnonzero(values <= values.min() * (1 + 1e-9))[-1])
    left, right = grid[max(best - 1, 0)], grid[min(best + 1, len(grid) - 1)]
    refined = minimize_scalar(bound, bounds=(left, right), method="bounded",
                              options={"xatol": 1e-3})
    log_alpha = refined.x if refined.fun < values[best] else grid[best]
    return float(math.exp(log_alpha))


def excess_risk_bound(alpha, n, d, epsilon, delta=0.0, *, loss, perturbation, n_problems=1,
                      tol=1e-10, loss_at=None, prior_norm=None, prior_exponent=None):
    """A bound on the expected excess risk of one release at ``alpha``.

    With ``Lambda`` the L2 strength of the solved objective ``J`` (``alpha``
    plus objective perturbation's extra regularisation), ``w_L`` its
    minimiser, ``w`` the release and ``w0`` any comparator, the unregularised
    risk satisfies ``L(w) - L(w0) <= [J(w) - J(w_L)] + Lambda ||w0||^2 / 2``
    (because ``J(w_L) <= J(w0)``). The second term is the bias, with the prior
    ``||w0||^2 = prior_norm^2 * d^prior_exponent`` for one weight vector and
    ``prior_norm^2 * d^prior_exponent * (K - 1) / 2`` for the ``K``-class
    softmax (:func:`prior_size`). The first is the noise term, in
    expectation over the mechanism's noise (derivations in
    ``docs/choosing_alpha.rst``):

    * objective perturbation: the release minimises ``J + b.w / n``, so
      ``J(w) - J(w_L) <= ||b||^2 / (2 n^2 Lambda)`` (strong convexity; the
      shape of Chaudhuri et al. 2011, Theorem 4); plus the term of the
      solver-residual noise added to the solver's point, as for output
      perturbation below (its rate from ``solver_residual_beta``);
    * output perturbation: ``w = w_L + e`` and
      ``J`` is ``(c r + Lambda)``-smooth along a random direction on average
      (one row's Hessian has trace <= ``c r``, ``r`` its rank, rows of norm
      <= 1), so ``E[J(w) - J(w_L)] <= (c r / size + Lambda) E||e||^2 / 2``
      for noise of isotropic direction (Theorem 3's shape, with the smooth
      loss's curvature in place of its Lipschitz constant; Lowy and
      Razaviyayn's output-perturbation prescriptions balance the same two
      terms);
    * noisy gradient descent: a direct bound on ``E[J(w_T)] - J(w0)`` for the
      released last iterate, without ``w_L`` (:func:`_noisy_gd_excess`):
      ``||w0||^2 / (2 eta T)`` for the optimisation plus ``H_T`` times one
      step's noise, ``(eta sigma^2 / 2) (size + eta (c r + alpha size))``,
      with ``eta``, ``T`` and ``sigma`` from ``noisy_gd_schedule``; it takes
      the place of the first bracket, since ``L(w) - L(w0) <= [J(w) - J(w0)]
      + alpha ||w0||^2 / 2`` holds as well (``Lambda = alpha``).

    ``E||b||^2`` is ``size (size + 1) / beta^2`` for Gamma-norm noise of rate
    ``beta`` (its norm is Gamma(size, 1/beta)) and ``size sigma^2`` for
    Gaussian noise; both scales come from the mechanism's calibration.

    Returns
    -------
    bound : float
    """
    if prior_norm is None:
        prior_norm = PRIOR_NORM[perturbation]
    if prior_exponent is None:
        prior_exponent = PRIOR_EXPONENT[perturbation]
    loss_alpha = loss if loss_at is None else loss_at(alpha)
    size = d * loss_alpha.n_outputs
    curvature_trace = float(loss_alpha.curvature) * getattr(loss_alpha, "hessian_rank", 1)
    if perturbation == "gradient":
        prior = prior_size(d, loss_alpha.n_outputs, prior_norm, prior_exponent)
        return (_noisy_gd_excess(loss_alpha, n, size, alpha, epsilon, delta, n_problems,
                                 curvature_trace, prior)
                + 0.5 * alpha * prior)
    else:
        plan = _noise_plan(loss_alpha, n, d, epsilon, delta, alpha, perturbation, tol,
                           n_problems)
        strength = plan.strong_convexity
        if plan.beta is not None:
            second_moment = size * (size + 1.0) / plan.beta**2
        else:
            second_moment = size * plan.sigma**2
    if perturbation == "objective":
        noise = second_moment / (2.0 * n**2 * strength)
        # The residual noise, added to the solver's point like output perturbation's;
        # its radius tol / Lambda grows like 1 / alpha^2 as the solver's tolerance
        # floor rises, a cliff at small alpha that the main term alone misses.
        residual_moment = size * (size + 1.0) / plan.residual_beta**2
        noise += 0.5 * (curvature_trace / size + strength) * residual_moment
    else:
        noise = 0.5 * (curvature_trace / size + strength) * second_moment
    # The binary bias in exactly its former arithmetic (same bits); the softmax's
    # is that of one pair of classes times the (K - 1) / 2 of prior_size.
    bias = 0.5 * strength * prior_norm**2 * d**prior_exponent
    if loss_alpha.n_outputs > 1:
        bias *= _class_pairs_factor(loss_alpha.n_outputs)
    return noise + bias


def prior_size(d, n_outputs, prior_norm, prior_exponent):
    """The prior guess ``||w0||^2`` of the comparator's squared norm.

    One weight vector (a margin loss, ``n_outputs == 1``): ``r^2 d^p``, the
    binary prior. The softmax's ``K = n_outputs`` weight vectors only matter
    through their differences (adding one vector to all of them changes no
    prediction), so take the comparator centred, ``sum_k w_k = 0``. Then
    ``sum_{j < k} ||w_j - w_k||^2 = K sum_k ||w_k||^2 - ||sum_k w_k||^2 = K
    ||W||^2``. Asking every pair of classes to be separated as well as a binary
    comparator separates two classes, ``||w_j - w_k||^2 = r^2 d^p``, gives

        ``||W0||^2 = (1 / K) (K (K - 1) / 2) r^2 d^p = r^2 d^p (K - 1) / 2``,

    which grows like ``K / 2`` where ``r^2 (K d)^p`` grew like ``K``; at
    ``K = 2`` it is half the binary prior, as the two-class softmax ``(w_0, w_1)
    = (-w / 2, w / 2)`` of a logistic ``w`` has half its squared norm.
    Derivation and measurements in ``docs/choosing_alpha.rst``.

    Parameters
    ----------
    d : int
        Length of one weight vector (the design's columns).
    n_outputs : int
        Weight vectors released together: 1, or ``K`` for the softmax.
    prior_norm, prior_exponent : float
        ``r`` and ``p``.

    Returns
    -------
    float
    """
    prior = prior_norm**2 * d**prior_exponent
    return prior if n_outputs == 1 else prior * _class_pairs_factor(n_outputs)


def _class_pairs_factor(n_classes):
    """``(K - 1) / 2``: the centred softmax comparator's norm in binary priors."""
    return (n_classes - 1) / 2.0


def _noisy_gd_excess(loss, n, size, alpha, epsilon, delta, n_problems, curvature_trace,
                     prior):
    """Bound on ``E[J(w_T)] - J(w0)`` for the last iterate of noisy gradient descent.

    For the schedule the mechanism runs (``noisy_gd_schedule``: ``T`` steps of
    size ``eta = 1 / (c + alpha)`` from ``w_0 = 0``, Gaussian noise of
    standard deviation ``sigma`` per coordinate and step) and a comparator
    with ``||w0||^2 = prior``:

    ``prior / (2 eta T) + H_T (eta sigma^2 / 2) (size + eta trace(A))``,

    ``H_T = 1 + 1/2 + ... + 1/T`` and ``trace(A) <= curvature_trace + alpha
    size`` the trace of a fixed matrix above every Hessian of ``J``. The
    first term is gradient descent's optimisation error, the second the
    noise of one step times ``H_T`` (the last iterate against the average,
    by Shamir and Zhang's suffix averaging). It never refers to the
    regularised minimiser. Derivation in ``docs/choosing_alpha.rst``.
    """
    schedule = noisy_gd_schedule(n, size, alpha, loss, epsilon, delta, n_problems=n_problems)
    eta, steps = schedule.step_size, schedule.n_steps
    per_step = 0.5 * eta * schedule.sigma**2 * (size + eta * (curvature_trace + alpha * size))
    harmonic = math.fsum(1.0 / k for k in range(1, steps + 1))
    return prior / (2.0 * eta * steps) + harmonic * per_step


#: The excess error over the prior's majority class that the floor allows a model
#: with no signal at all (see :func:`floor_alpha`): the tolerance of issue 35's target.
FLOOR_EXCESS = 0.005


def score_noise_sd(alpha, n, d, epsilon, delta=0.0, *, loss, perturbation, n_problems=1,
                   tol=1e-10):
    """A bound on the standard deviation of the privacy noise of one score ``w.z``.

    For a row with ``||z|| <= 1`` and noise of isotropic direction (both laws
    are rotation invariant), ``E (e.z)^2 = ||z||^2 E||e||^2 / size <=
    E||e||^2 / size``, with ``e`` the release's deviation caused by the noise:

    * output perturbation: ``e`` is the noise itself;
    * objective perturbation: ``e = -(H + Lambda I)^-1 b / n`` to first order,
      ``H >= 0`` the data's Hessian, so ``E (e.z)^2 <= E||b||^2 / (n^2
      Lambda^2 size)`` whatever the data (plus the residual noise's term);
    * noisy gradient descent: the last iterate's noise is ``eta sum_t (1 -
      eta A)^(T-1-t) xi_t`` with ``A >= alpha I``, so per coordinate its
      variance is at most ``eta^2 sigma^2 sum_t (1 - eta alpha)^(2t)``.

    The bound ignores the data's curvature, which damps the noise in the
    directions the data occupy; it is what a rule that may not read the data
    can use. Public quantities only (the noise plans of the mechanisms).
    """
    size = d * loss.n_outputs
    if perturbation == "gradient":
        schedule = noisy_gd_schedule(n, size, alpha, loss, epsilon, delta,
                                     n_problems=n_problems)
        q2 = (1.0 - schedule.step_size * alpha) ** 2
        steps = schedule.n_steps
        accumulated = steps if q2 >= 1.0 else (1.0 - q2**steps) / (1.0 - q2)
        return float(schedule.step_size * schedule.sigma * math.sqrt(accumulated))
    plan = _noise_plan(loss, n, d, epsilon, delta, alpha, perturbation, tol, n_problems)
    if plan.beta is not None:
        moment = size * (size + 1.0) / plan.beta**2
    else:
        moment = size * plan.sigma**2
    if perturbation == "objective":
        moment /= (n * plan.strong_convexity) ** 2
        moment += size * (size + 1.0) / plan.residual_beta**2
    return float(math.sqrt(moment / size))


def zero_signal_excess(prior, sd, n_outputs, n_problems):
    """A bound on how much a model with no signal errs beyond the prior's majority class.

    With no signal the scores are the prior model's plus noise of standard
    deviation ``sd``: one log-odds ``b`` (binary), ``K`` log-odds ``logit
    p_k`` (one-vs-rest) or ``K`` log-probabilities (softmax), each score with
    its own noise, treated as Gaussian. Predicting class ``k`` instead of the
    majority ``m`` costs ``p_m - p_k`` of expected error, and happens only if
    score ``k`` beats score ``m``, so the excess is at most ``sum_k (p_m -
    p_k) Phi(-(b_m - b_k) / (sd sqrt(2)))`` (exact for one binary score
    without the ``sqrt(2)``, there being one noise).
    """
    prior = np.asarray(prior, dtype=float)
    m = int(np.argmax(prior))
    if sd <= 0:
        return 0.0
    if len(prior) == 2 and n_outputs == 1 and n_problems == 1:
        gap = abs(math.log(prior[1] / prior[0]))
        return float(abs(prior[1] - prior[0]) * ndtr(-gap / sd))
    scores = np.log(prior) if n_outputs > 1 else np.log(prior / (1.0 - prior))
    gaps = scores[m] - scores
    return float(np.sum((prior[m] - prior) * ndtr(-gaps / (sd * math.sqrt(2.0)))))


def floor_alpha(prior, n, d, epsilon, delta=0.0, *, loss, perturbation, n_problems=1,
                tol=1e-10, excess=FLOOR_EXCESS, noise_scale=1.0):
    """The smallest ``alpha`` at which a model with no signal stays near the prior's majority.

    The alpha rule assumes a signal of a few units of margin; where there is
    none, the noise of the scores at the rule's alpha (about the rule's margin
    scale itself) can flip the prior's majority and make the model worse than
    always predicting it. This floor is the smallest ``alpha`` of a
    logarithmic grid over :data:`ALPHA_RANGE` at which
    :func:`zero_signal_excess` of ``noise_scale`` times :func:`score_noise_sd`
    is at most ``excess``. It reads the prior, a release of the fit (noisy
    counts), and public quantities; nothing else. Derivation and cost in
    ``docs/choosing_alpha.rst``, "Never worse than a constant".

    Returns
    -------
    alpha : float
        ``ALPHA_RANGE[0]`` when every alpha passes.
    """
    grid = np.exp(np.linspace(*(math.log(a) for a in ALPHA_RANGE), 4 * _GRID_POINTS))
    n_outputs = loss.n_outputs

    def passes(alpha):
        sd = noise_scale * score_noise_sd(alpha, n, d, epsilon, delta, loss=loss,
                                          perturbation=perturbation, n_problems=n_problems,
                                          tol=tol)
        return zero_signal_excess(prior, sd, n_outputs, n_problems) <= excess

    # The noise falls as alpha grows: bisect on the grid for the first alpha that passes.
    lo, hi = 0, len(grid) - 1
    if passes(grid[lo]):
        return float(grid[lo])
    if not passes(grid[hi]):
        return float(grid[hi])
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if passes(grid[mid]):
            hi = mid
        else:
            lo = mid
    return float(grid[hi])
