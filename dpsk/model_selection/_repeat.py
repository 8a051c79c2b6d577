"""Private tuning for every mechanism: repeat a random number of times, keep the best.

The tuner of ``DPGridSearch(method="repeat")`` as plain functions (Papernot and
Steinke 2022, "Hyperparameter tuning with Renyi differential privacy", ICLR,
Theorem 2):

* :func:`run_components` -- the Renyi curve of one run of a candidate, from its
  public parameters (pure, Gaussian, or Gaussian objective perturbation);
* :func:`plan_repeat` -- from the total ``(epsilon, delta)``, the number of
  candidates and the public sizes, the law of the number of runs ``K`` and the
  per-run epsilon, found so that the whole search meets the total; the plan
  carries the one :class:`~dpsk.accounting._events.RepeatAndSelectEvent` the
  search spends;
* :func:`repeat_and_select` -- the runs: ``K`` drawn exactly, each run a
  uniformly chosen candidate fitted on the training part and scored privately
  on the validation part; only the best run comes back.

``K`` and the runs' candidates are secrets of the mechanism: they are never
stored, returned, logged or shown; the progress display counts seconds, not
runs (``docs/grid_search.rst``, "Repeat and select").
"""

import contextlib
import contextvars
import math
import threading
import time
from dataclasses import dataclass
from fractions import Fraction
from numbers import Real

import numpy as np
from sklearn.base import clone

from .._optimize._solution_cache import reusing_solutions
from .._silence import console_stderr, one_process, silenced
from ..accounting._events import (
    ApproxDPEvent,
    ExponentialEvent,
    GaussianEvent,
    PureDPEvent,
    RepeatAndSelectEvent,
)
from ..accounting._renyi import ORDERS, component_rdp, tnb_mean
from ..linear_model._base import BaseDPLinearClassifier, problem_count
from ..mechanisms._alpha import excess_risk_bound
from ..mechanisms._erm import SOLVER_EPSILON_SHARE
from ..mechanisms._noise import gaussian_objective_calibration
from ._repeat_draws import discrete_gaussian, discrete_laplace, truncated_negative_binomial

__all__ = ["RepeatPlan", "run_components", "plan_repeat", "repeat_and_select",
           "rule_alpha", "rule_bound", "rule_cache", "default_mean_runs", "RUNS_PER_CANDIDATE",
           "MIN_MEAN_RUNS", "SHAPES"]

#: The expected number of runs is ``max(RUNS_PER_CANDIDATE * m, MIN_MEAN_RUNS)`` for
#: ``m`` candidates (:func:`default_mean_runs`).
RUNS_PER_CANDIDATE = 1.5

#: The smallest default ``E[K]``. Pure runs get ``epsilon / 2`` whatever ``E[K]``;
#: more runs of a small grid choose among more noise draws of each candidate on the
#: validation part, which lowered the test error on every data set of
#: ``python -m benchmarks defaults`` (``docs/grid_search.rst``, "The default grid"),
#: at a wall time of about ``E[K]`` fits.
MIN_MEAN_RUNS = 8.0

#: The shapes ``eta`` of the law of ``K`` the planner tries (logarithmic, between,
#: geometric); it keeps the one that allows the largest per-run epsilon.
SHAPES = (Fraction(0), Fraction(1, 2), Fraction(1))

#: Seconds before the progress display appears (when tqdm is installed).
PROGRESS_DELAY = 5.0


class UnsupportedCandidateError(ValueError):
    """A candidate whose one fit has no Renyi curve the tuner can use."""


def rule_alpha(final, n_train, n_features, n_classes, epsilon, delta, multiplier=1.0):
    """``multiplier`` times the alpha ``final``'s rule gives one fit on ``n_train`` rows.

    The alpha ``alpha="auto"`` resolves to when ``final`` is fitted at
    ``(epsilon, delta)`` on ``n_train`` rows of ``n_features`` columns (the
    model's own input: after any pipeline steps): the rule reads the design's
    width, ``n_features`` plus the intercept column, or the number of random
    features of a kernel model. Public quantities only. Returns None when
    ``n_features`` is unknown.
    """
    if n_features is None:
        return None
    width = getattr(final, "n_components", n_features) + int(final.fit_intercept)
    cache = _RULE_CACHE.get()
    if cache is None:
        key = None
    else:
        # get_params is slow (signature inspection): one key per estimator object.
        if ("key", id(final)) not in cache:
            cache[("key", id(final))] = (type(final), _public_key(final))
        key = (cache[("key", id(final))], int(n_train), int(width), n_classes,
               float(epsilon), float(delta))
    if cache is None or key not in cache:
        auto = clone(final).set_params(alpha="auto")
        loss, loss_at = _rule_loss(final, n_train, n_features, n_classes)
        value = float(auto._resolve_alpha(int(n_train), int(width), loss, n_classes,
                                          epsilon, delta, loss_at))
        if cache is None:
            return float(multiplier) * value
        cache[key] = value
    return float(multiplier) * cache[key]


def _rule_loss(final, n_train, n_features, n_classes):
    """``(loss, loss_at)``: the loss constants ``final``'s alpha rule reads."""
    if hasattr(final, "_constants"):
        # Output-only models (robust, tilted): constants that depend on alpha.
        return final._constants(int(n_train), int(n_features))
    return final._make_loss(n_classes), None


def rule_bound(final, n_train, n_features, n_classes, epsilon, delta, alpha=None):
    """The alpha rule's excess-risk bound for one fit of ``final``: ``(alpha, bound)``.

    :func:`~dpsk.mechanisms._alpha.excess_risk_bound` of the fit
    :func:`rule_alpha` describes, at ``alpha``, or with ``alpha=None`` at the
    rule's own alpha (:func:`rule_alpha`, where the bound is smallest): what
    the rule promises for that fit, in nats of the loss, at the model's own
    budget (what the class counts and the prior check leave it). Public
    quantities only. None when
    ``n_features`` is unknown or ``final`` has no rule (no ``perturbation``
    or no loss constants).
    """
    if n_features is None or not all(hasattr(final, name) for name in
                                     ("perturbation", "tol", "fit_intercept")):
        return None
    width = int(getattr(final, "n_components", n_features) + int(final.fit_intercept))
    loss, loss_at = _rule_loss(final, n_train, n_features, n_classes)
    public = dict(loss=loss, perturbation=final.perturbation,
                  n_problems=problem_count(loss, n_classes), tol=final.tol, loss_at=loss_at)
    if alpha is None:
        # The rule's own alpha (cached like every rule_alpha of a search).
        alpha = rule_alpha(final, n_train, n_features, n_classes, epsilon, delta)
    model_epsilon = epsilon
    if getattr(final, "_spends_on_prior", lambda: False)():
        # The model runs at what the class counts and the prior check leave it, and
        # its rule's alpha is chosen for that budget: promise what that fit gets.
        model_epsilon = final._prior_budget(int(n_train), width, loss, n_classes, epsilon,
                                            delta, loss_at).model_epsilon
    return float(alpha), float(excess_risk_bound(alpha, int(n_train), width, model_epsilon,
                                                 delta, **public))


def _public_key(final):
    """The parameters the rule may read, as a hashable key (alpha, epsilon, ledger and
    seed aside: the epsilon is the fit's, given apart)."""
    params = final.get_params(deep=False)
    return repr(sorted((name, value) for name, value in params.items()
                       if name not in ("alpha", "epsilon", "accountant", "random_state")))


# The rule's alphas of one plan: its bisection asks for the same fits again
# (every multiple of the same candidate, the shapes' common midpoints).
_RULE_CACHE = contextvars.ContextVar("dpsk_rule_alpha_cache", default=None)


@contextlib.contextmanager
def rule_cache():
    """Within the block, :func:`rule_alpha` solves the rule once per distinct fit
    (public sizes, budget and parameters; nothing of the data)."""
    token = _RULE_CACHE.set({})
    try:
        yield
    finally:
        _RULE_CACHE.reset(token)


def _objective_components(final, n_train, n_classes, epsilon, delta, n_features=None,
                          multiplier=1.0):
    """Gaussian objective perturbation (``dpsk.mechanisms._erm._noise_plan``), per run.

    Each of the ``P`` released problems (``P = K`` one-vs-rest models, else 1)
    runs the Gaussian objective mechanism at ``((1 - s) epsilon / P, delta /
    P)`` plus a pure release at ``s epsilon / P`` that covers the solver's
    residual (``s = SOLVER_EPSILON_SHARE``); their curves add. A candidate of
    the default grid (``multiplier``) runs at ``multiplier`` times the rule's
    alpha for this very fit (:func:`rule_alpha`).
    """
    loss = final._make_loss(n_classes)
    if loss.n_outputs > 1:
        # The curve of gaussian_objective_rdp bounds the loss through two
        # normals <b, x>/sigma; for a softmax release the gradient difference
        # mixes K such terms with weights that depend on the release, so that
        # bound does not apply (docs/privacy.rst, "Objective perturbation: the
        # two proofs in full").
        raise UnsupportedCandidateError(
            "method='repeat' has no Renyi curve for multinomial Gaussian objective "
            "perturbation; use multi_class='ovr', perturbation='output' or "
            "'gradient', delta=0, or DPGridSearch(method='disjoint').")
    problems = n_classes if n_classes > 2 else 1
    alpha = final.alpha
    if isinstance(alpha, str) and alpha == "auto" and n_features is not None:
        # The alpha the run's fit will use: the rule reads the same public sizes.
        alpha = rule_alpha(final, n_train, n_features, n_classes, epsilon, delta, multiplier)
    if isinstance(alpha, bool) or not isinstance(alpha, Real):
        raise UnsupportedCandidateError(
            "method='repeat' needs a numeric alpha for Gaussian objective perturbation "
            "when the model's own number of features is unknown (alpha='auto' reads it).")
    counts = []
    if final._spends_on_prior():
        # The fit's noisy class counts and its prior check: pure releases at the shares
        # the fit gives them, the model at the rest (BaseDPLinearClassifier._prior_budget,
        # public sizes).
        if n_features is None:
            raise UnsupportedCandidateError(
                "method='repeat' needs the model's number of features to share a Gaussian "
                "objective fit's budget with its class counts; pass class_prior=None.")
        width = int(getattr(final, "n_components", n_features)) + 1
        budget = final._prior_budget(int(n_train), width, loss, n_classes, epsilon, delta)
        counts = [("pure", budget.pure_side_epsilon, 1)]
        epsilon = budget.model_epsilon
    eps_each, delta_each = epsilon / problems, delta / problems
    eps_solver = SOLVER_EPSILON_SHARE * eps_each
    cal = gaussian_objective_calibration(
        eps_each - eps_solver, delta_each, n_train, float(alpha), loss.curvature,
        lipschitz=loss.lipschitz, hessian_rank=loss.hessian_rank)
    return [("gaussian-objective", cal.sigma / loss.lipschitz, cal.epsilon_jacobian, problems),
            ("pure", eps_solver, problems), *counts]


def run_components(final, n_train, n_classes, epsilon, n_features=None, multiplier=1.0):
    """The Renyi components of one fit of ``final`` at ``epsilon`` on ``n_train`` rows.

    ``final`` is the private step of a candidate (its own ``delta``, its other
    parameters); only public quantities are read. Pure candidates (``delta =
    0``, whatever the mechanism) have the curve of an ``epsilon``-DP release;
    candidates recorded as a Gaussian mechanism have the Gaussian curve;
    Gaussian objective perturbation has the curve derived in
    :func:`dpsk.accounting._renyi.gaussian_objective_rdp`. Anything else
    (a generic ``(epsilon, delta)`` release) raises
    :class:`UnsupportedCandidateError`: it has no Renyi curve.
    """
    final = final.set_params(epsilon=epsilon)
    event = final._privacy_event()
    if isinstance(event, (PureDPEvent, ExponentialEvent)) or (
            isinstance(event, ApproxDPEvent) and event.delta == 0):
        return [("pure", event.epsilon, 1)]
    if isinstance(event, GaussianEvent):
        return [("gaussian", event.noise_multiplier, 1)]
    if (isinstance(final, BaseDPLinearClassifier) and final.perturbation == "objective"
            and isinstance(event, ApproxDPEvent)):
        return _objective_components(final, n_train, n_classes, event.epsilon, event.delta,
                                     n_features, multiplier)
    raise UnsupportedCandidateError(
        f"method='repeat' cannot tune {type(final).__name__} with these parameters: its "
        "release is only known as an (epsilon, delta) pair, which has no Renyi curve. "
        "Use delta=0, Gaussian output or objective perturbation, or noisy gradient descent."
    )


#: ``sigma2`` of a Gaussian score is rounded up to a multiple of ``1 / _SCORE_GRID``.
_SCORE_GRID = 1024


def score_noise(components):
    """The noise of a run's score, with a Renyi curve below the fit's at every order.

    A changed row is either a training row (the score is a function of the
    model and unchanged validation rows) or a validation row (the model's law
    is the same, the count moves by at most one): one run's curve is the
    larger of the fit's and the score's. The score costs nothing extra when
    its curve is below the fit's at every order of the grid:

    * a pure fit at ``epsilon``: discrete Laplace at that ``epsilon``, returned
      as ``("laplace", epsilon)`` (both releases are ``epsilon``-DP, and the
      accountant's curve for that is the worst one for ``epsilon``-DP);
    * any other fit: the discrete Gaussian of the smallest ``sigma2`` with
      ``alpha / (2 sigma2) <= rho(alpha)`` at every order, ``("gaussian",
      sigma2)``. A count of sensitivity 1 plus discrete Gaussian noise of
      variance parameter ``sigma2`` is ``(alpha, alpha / (2 sigma2))``-RDP at
      every ``alpha > 1`` (Canonne, Kamath and Steinke 2020, Section 2:
      ``1 / (2 sigma2)``-zCDP; derived in ``docs/grid_search.rst``, "One
      run's curve"). The discrete Laplace law allowed under the same
      condition (the largest ``e`` with ``alpha e^2 / 2 <= rho(alpha)``, by Bun
      and Steinke 2016, Proposition 1.4) has variance about ``2 / e^2 = 2
      sigma2``: the Gaussian score has ``sqrt 2`` less noise for the same
      privacy.

    The Gaussian's condition is checked on :data:`~dpsk.accounting._renyi.ORDERS`
    only; it holds at every order up to the largest because every curve a run
    can have (pure, Gaussian, Gaussian objective perturbation, and their sums)
    has ``rho(alpha) / alpha`` non-increasing in ``alpha`` (checked
    numerically for the pure curve), so the order that
    sets ``sigma2`` is the largest and lower orders have room to spare
    (``docs/grid_search.rst``, "One run's curve"). Above it the search's event
    reports no bound (:meth:`RepeatAndSelectEvent.rdp`).

    Returns
    -------
    (kind, parameter) : (str, Fraction)
        Rounded toward less privacy loss (``epsilon`` down, ``sigma2`` up) to an
        exact rational, so the exact samplers get an exact value.
    """
    if len(components) == 1 and components[0][0] == "pure" and components[0][2] == 1:
        return "laplace", Fraction(components[0][1])
    curve = sum(component_rdp(c, ORDERS) for c in components)
    sigma2 = float(np.max(ORDERS / (2.0 * curve))) * (1.0 + 1e-12)
    return "gaussian", Fraction(math.ceil(sigma2 * _SCORE_GRID), _SCORE_GRID)


def draw_score_noise(spec, rng):
    """One draw of the score noise ``spec`` (from :func:`score_noise`)."""
    kind, parameter = spec
    if kind == "laplace":
        return discrete_laplace(parameter, rng)
    return discrete_gaussian(parameter, rng)


@dataclass(frozen=True)
class RepeatPlan:
    """A planned search: everything in it is public (a function of the parameters).

    Attributes
    ----------
    run_epsilon : float
        The ``epsilon`` every run's fit gets (its ``delta`` is the candidate's own).
    eta, gamma : Fraction
        The law ``D_(eta, gamma)`` of the number of runs.
    score_noises : tuple of (str, Fraction)
        Per candidate, its score's noise (:func:`score_noise`): ``("laplace",
        epsilon)`` or ``("gaussian", sigma2)``.
    event : RepeatAndSelectEvent
        What the search spends.
    alphas : tuple of (float or None)
        Per candidate with ``alpha="auto"`` and a known number of features, the
        alpha its runs use (``multiplier`` times the rule's, :func:`rule_alpha`,
        the one the plan's curve was computed with); None otherwise.
    """

    run_epsilon: float
    eta: Fraction
    gamma: Fraction
    score_noises: tuple
    event: RepeatAndSelectEvent
    alphas: tuple = ()


def default_mean_runs(n_candidates):
    """``E[K]`` of a search over ``n_candidates``: ``max(1.5 m, 8)`` (public: ``m`` only)."""
    return max(RUNS_PER_CANDIDATE * int(n_candidates), MIN_MEAN_RUNS)


def _gamma_for_mean(eta, mean):
    """The ``gamma`` with ``E[K] <= mean`` for shape ``eta`` (bisection; mean > 1)."""
    lo, hi = 1e-12, 1.0 - 1e-12
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if tnb_mean(eta, mid) > mean:
            lo = mid
        else:
            hi = mid
    return Fraction(hi)


#: Relative tolerance of the per-run epsilon found by bisection: at most 1% below
#: the largest that meets the budget (each step of the bisection solves the
#: alpha rule once, which dominates the planning time).
_PLAN_RTOL = 1e-2


def _largest_meeting(fits, epsilon):
    """The largest ``eps0`` in ``[0, epsilon]`` with ``fits(eps0)``, to :data:`_PLAN_RTOL`
    (by bisection; ``fits`` is monotone: the total grows with the per-run epsilon)."""
    lo, hi = 0.0, epsilon
    if fits(hi):
        return hi
    while hi - lo > _PLAN_RTOL * hi:
        mid = 0.5 * (lo + hi)
        if fits(mid):
            lo = mid
        else:
            hi = mid
    return lo


def _total_epsilon(candidates, eta, gamma, delta):
    """The event's own epsilon at ``delta`` (:class:`RepeatAndSelectEvent`)."""
    return RepeatAndSelectEvent._epsilon_of(candidates, float(eta), float(gamma), delta)


def plan_repeat(finals, n_train, n_classes, epsilon, delta, mean_runs=None, n_features=None,
                multipliers=None):
    """Plan a search whose whole release is ``(epsilon, delta)``-DP.

    For each shape in :data:`SHAPES`, ``gamma`` is set so that ``E[K]`` is
    ``mean_runs`` (default :func:`default_mean_runs`) and the per-run epsilon
    is the largest (by bisection, to a relative 1e-2) at which the search's
    curve converts to at most ``epsilon`` at ``delta``; the shape with the
    largest per-run epsilon is kept. With ``delta = 0`` every candidate must be
    pure and the per-run epsilon is ``epsilon / (2 + eta)``.

    Parameters
    ----------
    finals : list of estimator
        The private step of each candidate (copies: their epsilon is changed).
    n_train, n_classes : int
        Public sizes: training rows of every run and declared classes.
    epsilon, delta : float
        The total budget of the search.
    mean_runs : float or None
        ``E[K]``, > 1.
    n_features : int, list of (int or None), or None
        The model's own number of input columns, per candidate (None: unknown).
    multipliers : list of float or None
        Per candidate, the factor of the rule's alpha it runs at (the default
        grid of :class:`~dpsk.model_selection.DPGridSearch`); None: 1 each.

    Returns
    -------
    RepeatPlan
    """
    m = len(finals)
    mean = float(mean_runs) if mean_runs is not None else default_mean_runs(m)
    if not mean > 1.0:
        raise ValueError(f"mean_runs must be > 1, got {mean_runs!r}.")

    if n_features is None or np.isscalar(n_features):
        n_features = [n_features] * len(finals)
    if multipliers is None:
        multipliers = [1.0] * len(finals)
    with rule_cache():
        return _plan(finals, n_train, n_classes, epsilon, delta, mean, n_features, multipliers)


def _plan(finals, n_train, n_classes, epsilon, delta, mean, n_features, multipliers):
    """:func:`plan_repeat` once its arguments are filled in."""

    memo = {}  # the shapes' bisections share their first midpoints

    def candidates_at(eps0):
        if eps0 not in memo:
            memo[eps0] = tuple(tuple(run_components(f, n_train, n_classes, eps0, n_features[i],
                                                    multipliers[i]))
                               for i, f in enumerate(finals))
        return memo[eps0]

    best = None
    for eta in SHAPES:
        gamma = _gamma_for_mean(eta, mean)
        if delta == 0:
            eps0 = epsilon / (2.0 + float(eta))
            if not math.isfinite(_total_epsilon(candidates_at(eps0), eta, gamma, 0.0)):
                raise UnsupportedCandidateError(
                    "With delta=0 method='repeat' needs pure candidates (delta=0); give the "
                    "search a total delta > 0 to tune Gaussian mechanisms.")
        else:
            def fits(eps0):
                return _total_epsilon(candidates_at(eps0), eta, gamma, delta) <= epsilon

            if best is not None and not fits(best[0] * (1 + _PLAN_RTOL)):
                # The total grows with the per-run epsilon: this shape cannot beat
                # the best so far by more than the tolerance; skip its bisection.
                continue
            eps0 = _largest_meeting(fits, epsilon)
        if eps0 > 0 and (best is None or eps0 > best[0]):
            best = (eps0, eta, gamma)
    if best is None:
        raise ValueError("No per-run epsilon meets this budget.")
    eps0, eta, gamma = best
    candidates = candidates_at(eps0)
    event = RepeatAndSelectEvent(candidates=candidates, eta=float(eta), gamma=float(gamma),
                                 delta=delta, claimed_epsilon=epsilon)
    alphas = tuple(
        rule_alpha(f, n_train, n_features[i], n_classes, eps0,
                   f.get_params(deep=False).get("delta", 0.0), multipliers[i])
        if isinstance(f.alpha, str) and f.alpha == "auto" else None
        for i, f in enumerate(finals))
    return RepeatPlan(run_epsilon=eps0, eta=eta, gamma=gamma,
                      score_noises=tuple(score_noise(c) for c in candidates), event=event,
                      alphas=alphas)


class _TimeProgress:
    """A progress display that counts seconds only, never runs (the number of runs is
    secret). Shown after :data:`PROGRESS_DELAY` seconds when tqdm is installed."""

    def __init__(self, desc):
        self._stop = threading.Event()
        self._thread = None
        self._desc = desc

    def __enter__(self):
        try:
            from tqdm.auto import tqdm
        except ImportError:  # optional
            return self
        # The search runs muted (dpsk._silence.muted); elapsed seconds reveal
        # nothing beyond the running time, so they go to the real console.
        stream = console_stderr()
        bar = tqdm(total=None, desc=self._desc, unit="s", delay=PROGRESS_DELAY,
                   leave=False, file=stream, bar_format="{desc}: {elapsed}")

        def tick():
            shown_from = time.monotonic() + PROGRESS_DELAY
            while not self._stop.wait(1.0):
                # tqdm's own ``delay`` holds back its updates, not ``refresh``.
                if time.monotonic() >= shown_from:
                    bar.refresh()
            bar.close()
            stream.close()

        self._thread = threading.Thread(target=tick, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        return False


def repeat_and_select(plan, make_candidate, train, validation, noise):
    """Run a planned search; return ``(best_estimator, best_index, best_noisy_count)``.

    Draws ``K ~ D_(eta, gamma)`` exactly; run ``j`` draws a candidate ``i``
    uniformly, fits ``make_candidate(i, j)`` (at ``plan.run_epsilon``, on its
    own noise) on ``train`` and releases its number of correct predictions on
    ``validation`` plus the noise ``plan.score_noises[i]`` (:func:`score_noise`).
    The earliest run with the highest noisy count wins. ``K`` and the runs'
    candidates are local and dropped before returning.

    Parameters
    ----------
    plan : RepeatPlan
    make_candidate : callable
        ``make_candidate(i, j)`` returns a fresh, unfitted estimator for
        candidate ``i`` (run ``j`` may seed a reproducible test run).
    train, validation : (X, y) pairs
        A public split. ``train`` may carry a third item, keyword arguments of
        every ``fit`` (the training rows' weights, split with the rows).
    noise : NoiseSource
    """
    X_train, y_train, *fit_params = train
    X_val, y_val = validation
    m = len(plan.score_noises)
    n_runs = truncated_negative_binomial(plan.eta, plan.gamma, noise)
    best = best_score = best_index = None
    # Output perturbation's minimiser is the same for every run of a candidate:
    # solved once per candidate (the release is bit for bit the same).
    with _TimeProgress("DPGridSearch"), reusing_solutions({}):
        for j in range(n_runs):
            i = noise.randbelow(m)
            estimator = make_candidate(i, j)
            with silenced(), one_process():
                estimator.fit(X_train, y_train, **(fit_params[0] if fit_params else {}))
                correct = int(np.sum(estimator.predict(X_val) == y_val))
            score = correct + draw_score_noise(plan.score_noises[i], noise)
            if best is None or score > best_score:
                best, best_score, best_index = estimator, score, i
            del estimator, correct
    del n_runs, i, j
    return best, best_index, best_score
