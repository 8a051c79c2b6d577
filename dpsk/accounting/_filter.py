r"""The privacy filter that enforces a budget under ``composition != "basic"``.

Why a filter
------------
The tight composition methods of :mod:`dpsk.accounting._composition` (advanced
composition, privacy loss distributions, Renyi DP with an optimised order) are
proven for a sequence of releases whose *privacy parameters are fixed in
advance*. A ledger that accepts a release whenever the composed total of the
releases so far stays within budget lets the analyst choose the next
parameters after seeing the earlier outputs; Rogers, Roth, Ullman and Vadhan
(2016, "Privacy odometers and filters: pay-as-you-go composition") show that
such a rule need not keep the budget. A *filter* is a stopping rule that does.

The rule
--------
Fixed at construction from the public budget ``(epsilon_B, delta_B)`` and
``approx_delta = delta_A``:

* a finite set of Renyi orders ``alpha`` (:data:`ORDERS`) with weights
  ``w_alpha`` summing to 1, and the order ``inf``;
* ``delta_R = delta_B - delta_A``.

Each event contributes a Renyi curve ``rho(alpha)``, a *max-divergence*
``rho(inf)`` and a *pair delta* (:func:`event_terms`). A sequence of events is
accepted when

1. the pair deltas add up to at most ``delta_A``, and
2. at some order ``alpha`` (one of ORDERS, or ``inf``) the filter epsilon
   ``e_alpha = S_alpha + (log(1 / (w_alpha delta_R)) + log(c_alpha)) / (alpha - 1)``
   (``S_alpha`` the sum of the curves, ``c_alpha = (1 - 1/alpha)^(alpha-1) / alpha``;
   ``e_inf = S_inf``) is at most ``epsilon_B``.

Theorem (proved in ``docs/accounting.rst``, "Enforcing a budget: the privacy
filter"): every interaction in which an analyst chooses each release after
seeing the outputs of the earlier ones, and runs only releases this rule
accepts, is
``(epsilon_B, delta_B)``-DP. It builds on the Renyi filter of Feldman and Zrnic
(2021, "Individual privacy accounting via a Renyi filter"): at one
fixed order, adaptively chosen releases whose curves add up to at most ``B``
are ``(alpha, B)``-Renyi DP. Several orders may be combined only because each
order pays for itself out of ``delta_R`` (its weight ``w_alpha``); the
approximate-DP part is paid out of ``delta_A``, fixed in advance.
"""

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

__all__ = ["ORDERS", "FilterState", "RenyiFilter", "event_terms"]

# Renyi orders the filter may enforce at: fixed for every budget, so nothing
# about the releases chooses them. The weights (below) depend on the budget only.
ORDERS = (1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 12.0, 16.0, 20.0,
          24.0, 32.0, 48.0, 64.0, 96.0, 128.0, 256.0, 512.0, 1024.0)

# Float sums of user-given epsilons: ten spends of 0.1 must fit a budget of 1.0
# (the same slack as basic composition in the ledger).
_RTOL = 1e-9


def _logaddexp(a, b):
    hi, lo = max(a, b), min(a, b)
    return hi + math.log1p(math.exp(lo - hi))


def randomized_response_renyi(epsilon, alpha):
    r"""Renyi divergence of order ``alpha`` of binary randomised response at ``epsilon``.

    ``(1/(alpha-1)) log((e^{alpha eps} + e^{(1-alpha) eps}) / (1 + e^eps))``. Every
    ``epsilon``-DP pair of output distributions is a post-processing of this
    pair (Kairouz, Oh and Viswanath 2015, Theorem 3.2 with delta = 0), and Renyi
    divergence cannot grow under post-processing, so it bounds the Renyi
    divergence of every ``epsilon``-DP mechanism. It is below both ``epsilon``
    and ``alpha epsilon^2 / 2`` (Bun and Steinke 2016, Proposition 1.4).
    """
    if epsilon == 0:
        return 0.0
    top = _logaddexp(alpha * epsilon, (1.0 - alpha) * epsilon)
    bottom = _logaddexp(0.0, epsilon)
    return max((top - bottom) / (alpha - 1.0), 0.0)


def laplace_renyi(epsilon, alpha):
    r"""Renyi divergence of order ``alpha`` of the Laplace mechanism with scale
    ``sensitivity / epsilon`` (Mironov 2017, "Renyi differential privacy", the
    table of basic mechanisms; checked by numerical integration in the tests):
    ``(1/(alpha-1)) log(alpha/(2 alpha - 1) e^{(alpha-1) eps}
    + (alpha-1)/(2 alpha - 1) e^{-alpha eps})``."""
    first = math.log(alpha / (2.0 * alpha - 1.0)) + (alpha - 1.0) * epsilon
    second = math.log((alpha - 1.0) / (2.0 * alpha - 1.0)) - alpha * epsilon
    return max(_logaddexp(first, second) / (alpha - 1.0), 0.0)


def event_terms(event):
    """What one event costs the filter: ``(curve, max_divergence, pair_delta)``.

    Parameters
    ----------
    event : PrivacyEvent

    Returns
    -------
    curve : tuple of float
        For each order of :data:`ORDERS`, a bound on the Renyi divergence of
        that order of the event's mechanism (for an approximate-DP event: of
        the part left once its ``delta`` is set apart, see the docs).
    max_divergence : float
        A bound on the privacy loss itself (``inf`` for Gaussian noise).
    pair_delta : float
        The delta the event draws from the filter's ``approx_delta`` share.
    """
    return _event_terms(event)


@lru_cache(maxsize=4096)
def _event_terms(event):
    # Imported here: the filter is written against the event kinds, and the
    # events module must not depend on it.
    from ._events import ApproxDPEvent, GaussianEvent, PureDPEvent

    rdp = getattr(event, "rdp", None)
    if rdp is not None:
        # An event that carries its own Renyi curve (the repeat tuner's search,
        # Papernot and Steinke 2022): its curve bounds its Renyi divergence at
        # every order. With delta > 0 its pair is a conversion of that curve,
        # not a bound on the privacy loss; with delta = 0 it claims pure DP.
        max_div = event.epsilon if event.delta == 0 else math.inf
        return tuple(float(v) for v in rdp(ORDERS)), max_div, 0.0
    if isinstance(event, GaussianEvent):
        # Renyi divergence of N(0, s^2) and N(1, s^2) is alpha / (2 s^2),
        # exactly (Mironov 2017, the table of basic mechanisms).
        sigma2 = event.noise_multiplier ** 2
        return tuple(alpha / (2.0 * sigma2) for alpha in ORDERS), math.inf, 0.0
    eps = event.epsilon
    if isinstance(event, PureDPEvent) and event.mechanism == "laplace":
        return tuple(laplace_renyi(eps, alpha) for alpha in ORDERS), eps, 0.0
    pair_delta = event.delta if isinstance(event, ApproxDPEvent) else 0.0
    # PureDPEvent of any other mechanism, ExponentialEvent (treated as an
    # arbitrary eps-DP mechanism, as everywhere in the ledger) and the pure part
    # of an ApproxDPEvent.
    return _pure_curve(eps), eps, pair_delta


@lru_cache(maxsize=4096)
def _pure_curve(epsilon):
    return tuple(randomized_response_renyi(epsilon, alpha) for alpha in ORDERS)


def _log_c(alpha):
    # c_alpha = sup_{x >= 0} (1 - e^{-x}) e^{-(alpha-1) x} = (1-1/alpha)^(alpha-1) / alpha.
    return (alpha - 1.0) * math.log1p(-1.0 / alpha) - math.log(alpha)


def _centre_order(epsilon, tail_delta):
    """The order at which a zCDP-like sequence (Gaussian noise, many small pure
    releases) reaches the budget: where the filter puts most of its weight.

    A sequence that is rho-zCDP has Renyi curve rho alpha; its epsilon at order
    alpha is rho alpha + L/(alpha - 1) (L = log(1/tail_delta)), smallest at
    alpha - 1 = sqrt(L / rho), and the rho that just fits solves
    epsilon = rho + 2 sqrt(rho L).
    """
    log_inv = math.log(1.0 / tail_delta)
    root = math.sqrt(log_inv + epsilon) - math.sqrt(log_inv)
    rho = root * root
    return 1.0 + math.sqrt(log_inv / rho) if rho > 0 else ORDERS[-1]


class RenyiFilter:
    """The filter of a budget: a pure function of public numbers.

    Parameters
    ----------
    epsilon, delta : float
        The budget, ``epsilon`` finite and > 0, ``delta`` in [0, 1).
    approx_delta : float
        The share of ``delta`` paid for the deltas of approximate-DP events,
        in [0, delta].
    """

    def __init__(self, epsilon, delta, approx_delta):
        self.epsilon = float(epsilon)
        self.delta = float(delta)
        self.approx_delta = float(approx_delta)
        tail = self.delta - self.approx_delta
        # offsets[i] = e_alpha - S_alpha at ORDERS[i]: what converting that
        # order at its share w_alpha * tail of delta costs in epsilon. inf
        # (the order is never used) when there is no tail to share.
        self.offsets = [math.inf] * len(ORDERS)
        if tail > 0 and self.epsilon > 0:
            centre = math.log(_centre_order(self.epsilon, tail) - 1.0)
            nearest = min(range(len(ORDERS)),
                          key=lambda i: abs(math.log(ORDERS[i] - 1.0) - centre))
            raw = [2.0 ** -abs(i - nearest) for i in range(len(ORDERS))]
            total = math.fsum(raw)
            self.offsets = [(math.log(1.0 / (weight / total * tail)) + _log_c(alpha))
                            / (alpha - 1.0) for alpha, weight in zip(ORDERS, raw)]

    def _sums(self, events):
        return FilterState.of(events).totals()

    def _epsilon_of(self, sums, pure):
        return min([pure] + [s + o for s, o in zip(sums, self.offsets)])

    def _within(self, eps, pair):
        return (eps <= self.epsilon * (1 + _RTOL) + 1e-15
                and pair <= self.approx_delta * (1 + _RTOL) + 1e-300)

    def _totals(self, events):
        if isinstance(events, FilterState):
            return events.totals()
        return self._sums(events)

    def state(self, events):
        """``(epsilon, pair_delta)``: the filter's epsilon of ``events`` (the
        smallest ``e_alpha``, ``inf`` included) and the pair deltas they draw.

        ``events`` is a sequence of events, oldest first, or their
        :class:`FilterState` (the same answer, to the last bit).
        """
        sums, pure, pair = self._totals(events)
        return self._epsilon_of(sums, pure), pair

    def accepts(self, events):
        """Whether the filter lets ``events`` (oldest first, or their
        :class:`FilterState`) all run."""
        return self._within(*self.state(events))

    def remaining(self, events):
        """``(epsilon, delta)``: the largest epsilon of one more generic pure
        release the filter accepts, and the pair delta still unspent (after
        ``events``, or their :class:`FilterState`)."""
        sums, pure, pair = self._totals(events)
        left_delta = max(self.approx_delta - pair, 0.0)

        def fits(eps):
            more = [s + randomized_response_renyi(eps, a) for s, a in zip(sums, ORDERS)]
            return self._within(self._epsilon_of(more, pure + eps), pair)

        if not fits(0.0):
            return 0.0, left_delta
        lo, hi = 0.0, self.epsilon
        if fits(hi):
            return hi, left_delta
        # The filter epsilon grows with the release's epsilon: bisect.
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if fits(mid) else (lo, mid)
            if hi - lo <= 1e-12 * hi:
                break
        # Below the comparison's float slack, nothing is left in fact.
        return (lo if lo > 10 * _RTOL * self.epsilon else 0.0), left_delta


@dataclass(frozen=True)
class FilterState:
    """What the filter knows of a sequence of events: all it needs to decide.

    The state is what a ledger keeps (and a stored ledger writes, in the
    transaction of each spend) instead of reading every event again:

    * ``orders``: for each order of :data:`ORDERS`, the sum of the events'
      curves, added in the order of the events (float additions, as the
      filter has always made them, so the decisions are bit for bit those of
      the list of events);
    * ``loss``: the exact sum of the loss bounds (a :class:`~fractions.Fraction`,
      or ``inf`` once a Gaussian release is in);
    * ``pair``: the exact sum of the pair deltas.

    The two exact sums round to what :func:`math.fsum` of the list gives
    (both are the correctly rounded exact sum). Releases that cost nothing are
    skipped, as the filter skips them.
    """

    orders: tuple = (0.0,) * len(ORDERS)
    loss: object = Fraction(0)
    pair: Fraction = Fraction(0)

    @classmethod
    def of(cls, events):
        """The state of ``events`` (oldest first) from the empty one."""
        state = cls()
        for event in events:
            state = state.plus(event)
        return state

    def plus(self, event):
        """The state after one more ``event``."""
        if event.cost == (0.0, 0.0):
            return self
        curve, max_div, pair_delta = event_terms(event)
        if self.loss == math.inf or math.isinf(max_div):
            loss = math.inf
        else:
            loss = self.loss + Fraction(max_div)
        return FilterState(tuple(a + b for a, b in zip(self.orders, curve)),
                           loss, self.pair + Fraction(pair_delta))

    def totals(self):
        """``(sums, pure, pair)``: the per-order sums (a list), and the sums of the
        loss bounds and of the pair deltas, as floats."""
        return list(self.orders), float(self.loss), float(self.pair)
