"""Composition: the privacy guarantee of a sequence of releases.

Every function here takes a sequence of :class:`~dpsk.accounting._events.PrivacyEvent` and a
target total ``delta`` and returns an ``epsilon`` such that running all the
releases is ``(epsilon, delta)``-DP when the sequence of events is fixed in
advance (each mechanism may still depend on the earlier outputs, its privacy
parameters may not). ``math.inf`` means the method gives no bound at that
``delta``. These totals are reports: a budget is enforced with the privacy
filter of :mod:`dpsk.accounting._filter`, which is valid when the parameters
too are chosen after seeing outputs.

Methods
-------
``"basic"``
    Sequential composition (Dwork and Roth 2014, Theorem 3.16): the epsilons
    and deltas add up. Exact for one release, loose for many.
``"advanced"``
    The closed-form heterogeneous bound of Kairouz, Oh and Viswanath (2015,
    "The composition theorem for differential privacy", ICML / IEEE Trans. IT
    2017, Theorem 3.5); see :func:`_advanced_epsilon` for the statement.
``"pld"``
    Privacy loss distributions through Google's ``dp-accounting`` (Koskela et
    al. 2020; Doroshenko et al. 2022): numerically near-exact, with a
    pessimistic discretisation so the answer is an upper bound.
``"rdp"``
    Renyi DP through ``dp-accounting`` (Mironov 2017), with the improved
    conversion to ``(epsilon, delta)`` implemented there.
"""

import math
from collections import Counter

from ._events import (
    ApproxDPEvent,
    ExponentialEvent,
    GaussianEvent,
    PureDPEvent,
    RepeatAndSelectEvent,
)
from ._renyi import ORDERS

__all__ = ["COMPOSITION_METHODS", "compose_epsilon"]

COMPOSITION_METHODS = ("basic", "advanced", "pld", "rdp")


def _import_dp_accounting():
    try:
        import dp_accounting
        from dp_accounting.pld import common, privacy_loss_distribution
        from dp_accounting.rdp import rdp_privacy_accountant
    except ImportError as exc:
        raise ImportError(
            "Privacy-loss-distribution and Renyi accounting (method='pld' or 'rdp') "
            "use Google's dp-accounting package, which is not installed. Install it "
            "with `pip install dpsk[accounting]` (or `pip install dp-accounting`), or "
            "use method='basic' or 'advanced'."
        ) from exc
    return dp_accounting, common, privacy_loss_distribution, rdp_privacy_accountant


def _check_method(method):
    if method not in COMPOSITION_METHODS:
        raise ValueError(
            f"Unknown composition method {method!r}; choose one of {COMPOSITION_METHODS}."
        )


def _basic_epsilon(events, delta):
    if math.fsum(e.delta for e in events) > delta * (1 + 1e-9) + 1e-300:
        return math.inf
    return math.fsum(e.epsilon for e in events)


def _advanced_epsilon(events, delta):
    r"""Kairouz, Oh and Viswanath (2015), Theorem 3.5 (heterogeneous form).

    **Theorem.** For any :math:`\varepsilon_l > 0`, :math:`\delta_l \in [0, 1]`
    (:math:`l = 1..k`) and :math:`\tilde\delta \in (0, 1]`, the adaptive
    composition of an :math:`(\varepsilon_l, \delta_l)`-DP mechanism for each
    :math:`l` is :math:`(\tilde\varepsilon, 1 - (1 - \tilde\delta)\prod_l (1 - \delta_l))`-DP
    with

    .. math::

        \tilde\varepsilon = \min\Big\{ \sum_l \varepsilon_l,\;
            \mu + \sqrt{2 S \log\big(e + \sqrt{S} / \tilde\delta\big)},\;
            \mu + \sqrt{2 S \log(1 / \tilde\delta)} \Big\},
        \quad \mu = \sum_l \varepsilon_l \tanh(\varepsilon_l / 2),
        \quad S = \sum_l \varepsilon_l^2 .

    (:math:`\tanh(\varepsilon/2) = (e^\varepsilon - 1)/(e^\varepsilon + 1)`, the form
    the paper writes.) With all :math:`\varepsilon_l = \varepsilon` this is their
    Theorem 3.4, the homogeneous closed form; it is within a small factor of the
    *optimal* homogeneous bound of their Theorem 3.3, which the ``"pld"`` method
    computes numerically (a pure :math:`\varepsilon`-DP mechanism's privacy loss
    distribution is that of binary randomised response).

    **Derivation sketch.** Each :math:`(\varepsilon_l, \delta_l)` mechanism is a
    post-processing of a four-outcome mechanism (their Theorem 3.2); the
    privacy loss of the composed binary randomised responses is a sum of
    independent terms :math:`\pm\varepsilon_l` with mean at most :math:`\mu`, and
    Hoeffding's (resp. a refined Azuma-type) inequality bounds the probability
    that it exceeds :math:`\tilde\varepsilon` by :math:`\tilde\delta`. The
    :math:`\delta_l` enter only through the event that some mechanism leaves its
    :math:`\varepsilon_l` region, which has probability
    :math:`1 - \prod_l (1 - \delta_l)`.

    Here the target total ``delta`` is given, so
    :math:`\tilde\delta = 1 - (1 - \delta) / \prod_l (1 - \delta_l)`; if that is
    not positive the theorem gives nothing and basic composition is used.
    """
    if not events:
        return 0.0
    keep = 1.0
    for e in events:
        keep *= 1.0 - e.delta
    slack = 1.0 - (1.0 - delta) / keep if keep > 0 else -1.0
    basic = _basic_epsilon(events, delta)
    if slack <= 0:
        return basic
    eps = [e.epsilon for e in events]
    mu = math.fsum(x * math.tanh(x / 2.0) for x in eps)
    s = math.fsum(x * x for x in eps)
    bound_a = mu + math.sqrt(2.0 * s * math.log(math.e + math.sqrt(s) / slack))
    bound_b = mu + math.sqrt(2.0 * s * math.log(1.0 / slack))
    return min(math.fsum(eps), bound_a, bound_b)


def _pld_epsilon(events, delta):
    _, common, pld, _ = _import_dp_accounting()
    total = None
    for event, count in Counter(events).items():
        if isinstance(event, PureDPEvent) and event.mechanism == "laplace":
            dist = pld.from_laplace_mechanism(parameter=1.0 / event.epsilon, sensitivity=1.0)
        elif isinstance(event, GaussianEvent):
            dist = pld.from_gaussian_mechanism(
                standard_deviation=event.noise_multiplier, sensitivity=1.0
            )
        else:
            # The privacy loss distribution of the worst (epsilon, delta)-DP
            # mechanism (randomised response with a delta atom): valid for any
            # mechanism that only promises the pair.
            dist = pld.from_privacy_parameters(
                common.DifferentialPrivacyParameters(event.epsilon, event.delta)
            )
        if count > 1:
            dist = dist.self_compose(count)
        total = dist if total is None else total.compose(dist)
    if total is None:
        return 0.0
    return float(total.get_epsilon_for_delta(delta))


def _rdp_epsilon(events, delta):
    dp_accounting, _, _, rdp = _import_dp_accounting()
    # dpsk's own grid, not dp-accounting's default (equal today): a search's score
    # noise is sized on this grid (RepeatAndSelectEvent.rdp).
    accountant = rdp.RdpAccountant(orders=[float(a) for a in ORDERS])
    leftover = []  # events Renyi DP cannot describe: composed with the rest basically
    extra = 0.0  # curves dp-accounting cannot express, added order by order
    for event, count in Counter(events).items():
        if isinstance(event, RepeatAndSelectEvent):
            extra = extra + count * event.rdp(accountant.orders)
        elif isinstance(event, PureDPEvent) and event.mechanism == "laplace":
            accountant.compose(dp_accounting.LaplaceDpEvent(1.0 / event.epsilon), count)
        elif isinstance(event, GaussianEvent):
            accountant.compose(dp_accounting.GaussianDpEvent(event.noise_multiplier), count)
        elif isinstance(event, (PureDPEvent, ExponentialEvent)) or (
            isinstance(event, ApproxDPEvent) and event.delta == 0
        ):
            # epsilon-DP implies (epsilon^2 / 2)-zCDP (Bun and Steinke 2016,
            # Proposition 1.4), i.e. Renyi DP alpha * epsilon^2 / 2 at every order.
            accountant.compose(dp_accounting.ZCDpEvent(event.epsilon ** 2 / 2.0), count)
        else:
            leftover.extend([event] * count)
    rest_delta = math.fsum(e.delta for e in leftover)
    rest_eps = math.fsum(e.epsilon for e in leftover)
    if rest_delta >= delta:
        return math.inf
    if len(leftover) == len(events):
        return rest_eps
    total = accountant.rdp + extra
    return float(rdp.compute_epsilon(accountant.orders, total, delta - rest_delta)[0]) + rest_eps


_METHODS = {
    "basic": _basic_epsilon,
    "advanced": _advanced_epsilon,
    "pld": _pld_epsilon,
    "rdp": _rdp_epsilon,
}


def compose_epsilon(events, method, delta):
    """Epsilon of the composition of ``events`` at total ``delta`` under ``method``.

    Never more than basic composition when basic composition fits in ``delta``:
    every method here is a valid upper bound, so the smaller of the two is too.

    Parameters
    ----------
    events : sequence of PrivacyEvent
    method : {"basic", "advanced", "pld", "rdp"}
    delta : float
        Target total delta, in [0, 1).

    Returns
    -------
    float
        ``math.inf`` when the method gives no bound at ``delta``.
    """
    _check_method(method)
    # Releases that cost nothing (epsilon = delta = 0) need no accounting and
    # some libraries refuse them.
    events = [e for e in events if e.cost != (0.0, 0.0)]
    basic = _basic_epsilon(events, delta)
    if method == "basic" or not events:
        return basic
    return min(basic, _METHODS[method](events, delta))
