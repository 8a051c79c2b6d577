"""The safe search: select on a small share of the budget, refit on all rows with the rest.

The default method of :class:`~dpsk.model_selection.DPGridSearch`
(``method="safe"``), as plain functions of public quantities and of the
mistake counts:

* :func:`selection_share` -- the share ``s`` of the budget the selection
  gets, from the alpha rule's own excess-risk bound, so that refitting at
  ``(1 - s) epsilon`` costs at most :data:`REFIT_TOLERANCE` of that bound;
* :func:`default_bonus` -- the public head start of the untuned default in the
  exponential mechanism, so that among equally good candidates another one is
  chosen with probability at most :data:`SWITCH_PROBABILITY`;
* :func:`resolution` and :func:`can_pay` -- how much better than the default
  on the validation part a candidate must be to be chosen half the time, and
  whether that is small enough for a search to pay (the rule behind the
  "cannot pay" warning);
* :func:`plan_safe` -- all of the above for one search;
* :func:`select_with_bonus` -- the selection itself.

The mechanism (Algorithm 4 of Chaudhuri, Monteleoni and Sarwate 2011 for the
selection, then a refit): the rows are split at random into ``m + 1`` parts;
candidate ``i`` is fitted on part ``i`` at ``(s epsilon, s delta)``, with its
alpha a multiple of the rule's for that fit; the exponential mechanism at ``s
epsilon`` picks one by its mistakes on the last part, the default with a head
start; the chosen candidate is refitted on all rows at ``((1 - s) epsilon, (1 -
s) delta)``. The whole search is ``(epsilon, delta)``-DP: parallel composition
over the parts, then sequential composition with the refit
(``docs/grid_search.rst``, "The safe search", derives it and every rule here).
"""

import math
from dataclasses import dataclass

import numpy as np

from ..mechanisms._noise import exponential_mechanism

__all__ = ["SafePlan", "selection_share", "default_bonus", "resolution", "can_pay",
           "plan_safe", "select_with_bonus", "SAFE_MULTIPLIERS", "SWITCH_PROBABILITY",
           "REFIT_TOLERANCE", "REFIT_RELATIVE_TOLERANCE", "SHARE_RANGE", "PAY_RESOLUTION",
           "FIT_NOISE_CAP", "OTHER_SHARE"]

#: The default grid of the safe search: these multiples of the alpha rule's alpha,
#: each computed for the fit it is used in. A decade apart: the selection runs on a
#: small share of the budget, and only candidates that differ a lot can be told apart
#: there; the rule's oracle offsets spread over about a decade on real tables
#: (``docs/choosing_alpha.rst``), and a factor 10 costs ``(10 + 1/10) / 2 = 5``
#: times the rule's bound where the rule is that far off.
SAFE_MULTIPLIERS = (0.1, 1.0, 10.0)

#: With every candidate as good as the default on the validation part, another one
#: is chosen with at most this probability (:func:`default_bonus`).
SWITCH_PROBABILITY = 0.05

#: The cap of the selection fits' own noise in the default's head start, in error
#: (:func:`default_bonus`): the rule's bound for the default's selection fit, capped
#: at 1 for grids of alpha alone (a selection on fits whose bound is vacuous never
#: leaves the rule: their noise favours more regularisation than the refit wants),
#: at 0.1 for grids that change anything else (a kernel, a loss or a mechanism that
#: fits the data can be ten points better than the default at any budget).
FIT_NOISE_CAP = {"alpha": 1.0, "other": 0.1}

#: How much the refit may lose to the selection's share, by the rule's excess-risk
#: bound (nats of the loss): at most this much (the benchmarks' noise floor, 0.005
#: of test error, read on the scale of the bound, which overstates the excess
#: error), or this fraction of the bound itself, whichever is larger
#: (:func:`selection_share`).
REFIT_TOLERANCE = 0.005
REFIT_RELATIVE_TOLERANCE = 0.1

#: The smallest and the largest share of the budget the selection gets; a search
#: that cannot pay gets the smallest (:func:`plan_safe`).
SHARE_RANGE = (0.01, 0.5)

#: The smallest share of a search over more than alpha (a loss, a kernel, a
#: mechanism) that can pay: the rule's bound is the default's alone and says
#: nothing about how far a candidate of another kind can be from it, and such
#: candidates are told apart only by selection fits that are not dominated by
#: their noise (:func:`plan_safe`).
OTHER_SHARE = 0.25

#: A search pays only if a candidate that is this much more accurate than the
#: default on the validation part (in error, a fraction of its rows) is chosen at
#: least half the time (:func:`can_pay`). Grids of alpha alone: 0.03, what an
#: alpha a decade from the best costs in the benchmarks (``docs/grid_search.rst``,
#: "The default grid"); grids that change anything else (the loss, the kernel's
#: gamma, the mechanism) can differ by far more: 0.2.
PAY_RESOLUTION = {"alpha": 0.03, "other": 0.2}

# Bisection steps of selection_share: the share to about (0.5 - 0.01) / 2^8 = 0.002.
_SHARE_STEPS = 8

# The bonus is rounded up to a multiple of 1 / _BONUS_GRID, so that ``-z + bonus``
# is exact in floating point for every count z (the utilities' sensitivity stays 1).
_BONUS_GRID = 1024


@dataclass(frozen=True)
class SafePlan:
    """A planned safe search: everything in it is public (sizes, budget, grid).

    Attributes
    ----------
    share : float
        ``s``: the selection's share of ``epsilon`` (and ``delta``).
    select_epsilon, select_delta : float
        The budget of every candidate's fit on its part and of the selection.
    refit_epsilon, refit_delta : float
        The budget of the refit on all rows.
    bonus : float
        The default's head start, in mistakes (:func:`default_bonus`).
    default_index : int
        The untuned default's position among the candidates.
    part_sizes : tuple of int
        The ``m`` training parts' sizes, then the validation part's.
    select_bound : float or None
        The rule's bound for the default's selection fit (None: no rule).
    resolution : float
        :func:`resolution` of this plan.
    pays : bool
        :func:`can_pay` of this plan.
    """

    share: float
    select_epsilon: float
    select_delta: float
    refit_epsilon: float
    refit_delta: float
    bonus: float
    default_index: int
    part_sizes: tuple
    select_bound: float
    resolution: float
    pays: bool


def selection_share(bound, n_samples, epsilon, delta=0.0, tolerance=None, relative=None,
                    share_range=None):
    """The selection's share ``s`` of the budget, from the rule's bound.

    ``bound(n, epsilon, delta, alpha)`` is the alpha rule's excess-risk bound
    for one fit of the default on ``n`` rows at ``alpha`` (public), returned as
    ``(alpha, value)``; ``alpha=None`` means the rule's own alpha, where the
    bound is smallest. ``bound`` returns None where the default has no rule:
    then the smallest share.

    The refit runs at ``((1 - s) epsilon, (1 - s) delta)``; the rule then
    promises ``B*((1 - s) epsilon)`` instead of ``B*(epsilon)``, a loss ``L(s)``.
    ``B*`` is a minimum over alpha, so it is at most the bound at any one
    alpha; at ``a / (1 - s)``, ``a`` the rule's alpha at the whole budget,

        ``L(s) <= U(s) = B(a / (1 - s); (1 - s) epsilon) - B*(epsilon)``,

    which for pure objective perturbation is ``B*(epsilon) s / (1 - s)`` up to
    its small terms (both main terms of the bound scale by ``1 / (1 - s)``).
    ``s`` is the largest share in ``share_range`` with
    ``U(s) <= max(tolerance, relative B*(epsilon))`` (bisection on ``U``, which
    keeps the condition at the returned share), or the smallest share if none
    meets it: the refit's bound grows by at most ``relative`` (a tenth: about
    ``s = 0.09`` for pure objective perturbation) or, where the bound is small
    (large ``n epsilon``), by at most ``tolerance`` in absolute terms, which
    allows a larger share.

    Parameters
    ----------
    bound : callable
        ``bound(n, epsilon, delta, alpha) -> (alpha, value) or None``, public.
    n_samples : int
        All the rows: the refit's.
    epsilon, delta : float
        The search's budget.
    tolerance : float or None
        None: :data:`REFIT_TOLERANCE`.
    relative : float or None
        None: :data:`REFIT_RELATIVE_TOLERANCE`.
    share_range : (float, float) or None
        None: :data:`SHARE_RANGE`.

    Returns
    -------
    share : float
    """
    tolerance = REFIT_TOLERANCE if tolerance is None else float(tolerance)
    relative = REFIT_RELATIVE_TOLERANCE if relative is None else float(relative)
    low, high = SHARE_RANGE if share_range is None else share_range
    full = bound(n_samples, epsilon, delta, None)
    if full is None or not math.isfinite(full[1]):
        return low  # no rule: the smallest share
    alpha, best = full
    tolerance = max(tolerance, relative * best)

    def loss(share):
        keep = 1.0 - share
        return bound(n_samples, keep * epsilon, keep * delta, alpha / keep)[1] - best

    if loss(high) <= tolerance:
        return float(high)
    if loss(low) > tolerance:
        return float(low)
    for _ in range(_SHARE_STEPS):
        mid = 0.5 * (low + high)
        if loss(mid) <= tolerance:
            low = mid
        else:
            high = mid
    return float(low)


def default_bonus(n_candidates, select_epsilon, n_validation, select_bound=None,
                  alpha_only=True, switch_probability=None):
    """The default's public head start in the exponential mechanism, in mistakes.

    Two parts. The exponential mechanism's own noise: with utilities ``-z_i``
    plus ``b`` for the default, at ``e = select_epsilon`` and sensitivity 1,
    and every other candidate making no fewer mistakes than the default on the
    validation part, another candidate is chosen with probability at most
    ``(m - 1) / (m - 1 + exp(e b / 2))``; setting that to ``p =
    switch_probability`` gives

        ``b_1 = (2 / e) log((m - 1) (1 - p) / p)``.

    The selection fits' noise, which the exponential mechanism does not see:
    each candidate is one draw of a fit at a share of the budget on a part of
    the rows, far noisier than the refit. One draw of the default's fit can miss
    its expectation by much more than ``b_1`` mistakes, and where its expected
    excess is large the fits are dominated by their noise and favour more
    regularisation than the refit wants, so their ranking does not transfer
    to the refit. ``select_bound``, the rule's bound for the default's
    selection fit (its expected excess risk, in nats), read on the scale of
    the error as :data:`REFIT_TOLERANCE` is, and capped by
    :data:`FIT_NOISE_CAP`, gives

        ``b_2 = min(select_bound, cap) n_validation``:

    an advantage the default's own noise can explain does not move the
    selection, and a selection of alphas on fits whose bound is vacuous never
    leaves the rule. ``b_1 + b_2`` is rounded up to a multiple of 1/1024
    (exact in floating point). A public constant added to one utility leaves
    every utility's sensitivity at 1.

    ``switch_probability`` None is :data:`SWITCH_PROBABILITY`.

    Returns
    -------
    bonus : float
        0 for a single candidate.
    """
    m = int(n_candidates)
    if m < 2:
        return 0.0
    p = SWITCH_PROBABILITY if switch_probability is None else float(switch_probability)
    bonus = max(2.0 / select_epsilon * math.log((m - 1) * (1.0 - p) / p), 0.0)
    if select_bound is not None:
        cap = FIT_NOISE_CAP["alpha" if alpha_only else "other"]
        bonus += min(float(select_bound), cap) * int(n_validation)
    return math.ceil(bonus * _BONUS_GRID) / _BONUS_GRID


def resolution(n_candidates, select_epsilon, bonus, n_validation):
    """How much more accurate than the default a candidate must be to be chosen half
    the time, as a fraction of the validation part's rows.

    Candidate ``j`` with ``a`` fewer mistakes than the default, every other
    candidate as good as the default: ``j`` is chosen with probability at least
    1/2 when ``exp(e a / 2) >= exp(e bonus / 2) + m - 2`` (``e =
    select_epsilon``), that is from

        ``a = bonus + (2 / e) log(1 + (m - 2) exp(-e bonus / 2))``

    mistakes on; returned as ``a / n_validation``. Public.
    """
    m = int(n_candidates)
    if m < 2:
        return 0.0
    e = float(select_epsilon)
    advantage = bonus + 2.0 / e * math.log1p((m - 2) * math.exp(-e * bonus / 2.0))
    return float(advantage / n_validation)


def can_pay(resolution_, alpha_only):
    """Whether a search with this :func:`resolution` can pay (a public rule).

    It can when a candidate that is :data:`PAY_RESOLUTION` more accurate than
    the default on the validation part (``"alpha"`` for grids of alpha alone,
    ``"other"`` for the rest) is chosen at least half the time.
    """
    return bool(resolution_ <= PAY_RESOLUTION["alpha" if alpha_only else "other"])


def plan_safe(n_samples, n_candidates, default_index, epsilon, delta, bound, alpha_only,
              share=None):
    """Plan a safe search (public quantities only).

    Parameters
    ----------
    n_samples, n_candidates : int
        ``n`` rows, ``m`` candidates (the default included), ``n >= m + 1``.
    default_index : int
    epsilon, delta : float
        The whole search's budget.
    bound : callable
        ``bound(n, epsilon, delta, alpha)``: the rule's bound for the default
        on ``n`` rows (:func:`selection_share`), or None without a rule.
    alpha_only : bool
        Whether the candidates differ in alpha only (:func:`can_pay`).
    share : float or None
        A given share; None computes it: :func:`selection_share` (at least
        :data:`OTHER_SHARE` for grids over more than alpha), or the smallest
        share of :data:`SHARE_RANGE` when the selection cannot pay there.

    Returns
    -------
    SafePlan
    """
    n, m = int(n_samples), int(n_candidates)
    if share is not None:
        return _plan_at(float(share), n, m, default_index, epsilon, delta, bound, alpha_only)
    share = selection_share(bound, n, epsilon, delta)
    if not alpha_only:
        share = max(share, OTHER_SHARE)
    plan = _plan_at(share, n, m, default_index, epsilon, delta, bound, alpha_only)
    if plan.pays:
        return plan
    # A selection that cannot pay gets the smallest share: the refit keeps the rest.
    return _plan_at(SHARE_RANGE[0], n, m, default_index, epsilon, delta, bound, alpha_only)


def _plan_at(share, n, m, default_index, epsilon, delta, bound, alpha_only):
    """:func:`plan_safe` at a given share."""
    # The sizes of np.array_split of n rows into m + 1 parts, larger parts first;
    # the validation part is the last, so the smallest.
    sizes = tuple(n // (m + 1) + (1 if i < n % (m + 1) else 0) for i in range(m + 1))
    select_eps, select_delta = share * epsilon, share * delta
    at_select = bound(sizes[-1], select_eps, select_delta, None)
    select_bound = None if at_select is None else at_select[1]
    bonus = default_bonus(m, select_eps, sizes[-1], select_bound, alpha_only)
    res = resolution(m, select_eps, bonus, sizes[-1])
    return SafePlan(share=share, select_epsilon=select_eps, select_delta=select_delta,
                    refit_epsilon=(1.0 - share) * epsilon, refit_delta=(1.0 - share) * delta,
                    bonus=bonus, default_index=int(default_index), part_sizes=sizes,
                    select_bound=select_bound, resolution=res, pays=can_pay(res, alpha_only))


def select_with_bonus(mistakes, default_index, bonus, epsilon, rng):
    """The exponential mechanism on ``-mistakes``, the default ``bonus`` ahead.

    Index ``i`` is returned with probability proportional to ``exp(epsilon
    (-z_i + bonus [i = default]) / 2)``, drawn exactly
    (:func:`~dpsk.mechanisms._noise.exponential_mechanism`). ``epsilon``-DP
    when each count moves by at most one between neighbours (McSherry and
    Talwar 2007); the bonus is public and the same on both. Only the index is
    returned: the counts are not private.
    """
    utilities = -np.asarray(mistakes, dtype=float)
    if bonus:
        # Exact: the bonus is a multiple of 1/1024 and the counts are integers.
        utilities[int(default_index)] += float(bonus)
    index, _ = exponential_mechanism(utilities, epsilon, 1.0, rng)
    return int(index)
