"""Privacy events: what one release cost, described well enough to compose it.

A ledger that only kept ``(epsilon, delta)`` pairs could only add them up (basic
composition). Tighter accounting (advanced composition, privacy loss
distributions, Renyi DP) needs to know *which* mechanism ran: a Gaussian
mechanism with noise multiplier ``sigma`` composes much better than the
``(epsilon, delta)`` pair it is usually summarised by. So every release is
recorded as an immutable event, and the pair is derived from it.

Events are frozen dataclasses: hashable, picklable, comparable, and they cross
process boundaries, and go into a stored ledger, as small JSON objects
(:mod:`dpsk.accounting._journal`, :mod:`dpsk.accounting._store`) that read back
to equal events.
"""

import math
from dataclasses import asdict, dataclass, field
from numbers import Real

import numpy as np

from ._profiles import gaussian_delta
from ._renyi import ORDERS, mixture_rdp, rdp_to_dp, repeat_and_select_rdp, tnb_mean

__all__ = [
    "PrivacyEvent",
    "PureDPEvent",
    "ApproxDPEvent",
    "GaussianEvent",
    "ExponentialEvent",
    "RepeatAndSelectEvent",
]

_PURE_MECHANISMS = ("generic", "gamma-norm", "laplace")


def _real(value, name, *, low=0.0, low_open=False, high=math.inf, high_open=True):
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ValueError(f"{name} must be a real number, got {value!r}.")
    value = float(value)
    too_low = value <= low if low_open else value < low
    too_high = value >= high if high_open else value > high
    if math.isnan(value) or too_low or too_high:
        left = "(" if low_open else "["
        right = ")" if high_open else "]"
        raise ValueError(f"{name} must be in {left}{low:g}, {high:g}{right}, got {value!r}.")
    return value


@dataclass(frozen=True)
class PrivacyEvent:
    """Base class of the privacy events a :class:`~dpsk.BudgetAccountant` records.

    An event describes one release: which mechanism ran and with which privacy
    parameters. Every event has an ``(epsilon, delta)`` guarantee of its own,
    used by basic composition; composition methods that know the mechanism can
    do better (see :meth:`dpsk.BudgetAccountant.total`).

    Events are immutable and picklable. Every event has ``epsilon`` and
    ``delta`` attributes: its guarantee on its own.
    """

    @property
    def cost(self):
        """The ``(epsilon, delta)`` pair basic composition adds up."""
        return (self.epsilon, self.delta)

    def _to_dict(self):
        return {"kind": type(self).__name__, **asdict(self)}


@dataclass(frozen=True)
class PureDPEvent(PrivacyEvent):
    """A release that is ``epsilon``-differentially private (``delta = 0``).

    Parameters
    ----------
    epsilon : float
        The privacy parameter, > 0 and finite.
    mechanism : {"generic", "gamma-norm", "laplace"}, default="generic"
        Which pure mechanism ran. ``"gamma-norm"`` is the vector noise of
        output and objective perturbation (density proportional to
        ``exp(-epsilon * ||b|| / sensitivity)``); ``"laplace"`` is the scalar
        Laplace mechanism with scale ``sensitivity / epsilon``, whose privacy
        loss distribution is known exactly, so privacy-loss-distribution and
        Renyi accounting compose it more tightly. ``"generic"`` and
        ``"gamma-norm"`` are composed as an arbitrary ``epsilon``-DP mechanism,
        which is always valid.

    Examples
    --------
    >>> from dpsk import PureDPEvent
    >>> PureDPEvent(0.5)
    PureDPEvent(epsilon=0.5, mechanism='generic')
    >>> PureDPEvent(0.5).cost
    (0.5, 0.0)
    """

    epsilon: float
    mechanism: str = "generic"

    def __post_init__(self):
        object.__setattr__(self, "epsilon", _real(self.epsilon, "epsilon", low_open=True))
        if self.mechanism not in _PURE_MECHANISMS:
            raise ValueError(
                f"mechanism must be one of {_PURE_MECHANISMS}, got {self.mechanism!r}."
            )

    @property
    def delta(self):
        """Always 0.0 for a pure event."""
        return 0.0


@dataclass(frozen=True)
class ApproxDPEvent(PrivacyEvent):
    """A release that is ``(epsilon, delta)``-differentially private.

    Nothing else is known about the mechanism, so tighter composition methods
    treat it as the worst ``(epsilon, delta)``-DP mechanism.

    Parameters
    ----------
    epsilon : float
        Epsilon, >= 0 and finite.
    delta : float
        Delta, in [0, 1).

    Examples
    --------
    >>> from dpsk import ApproxDPEvent
    >>> ApproxDPEvent(1.0, 1e-6).cost
    (1.0, 1e-06)
    """

    epsilon: float
    delta: float

    def __post_init__(self):
        object.__setattr__(self, "epsilon", _real(self.epsilon, "epsilon"))
        object.__setattr__(self, "delta", _real(self.delta, "delta", high=1.0))


def _gaussian_delta(epsilon, sigma):
    """delta(epsilon) of the Gaussian mechanism with noise multiplier ``sigma``
    (sensitivity 1; :func:`dpsk.accounting._profiles.gaussian_delta`, Balle and Wang 2018)."""
    return gaussian_delta(sigma, epsilon, 1.0)


def _gaussian_epsilon(sigma, delta):
    """Smallest epsilon at which the Gaussian mechanism is (epsilon, delta)-DP."""
    if _gaussian_delta(0.0, sigma) <= delta:
        return 0.0
    hi = 1.0
    while _gaussian_delta(hi, sigma) > delta:
        hi *= 2.0
    lo = 0.0
    # delta(epsilon) decreases in epsilon; bisect to a relative precision far
    # below anything that matters, rounding up so the pair stays valid.
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if _gaussian_delta(mid, sigma) > delta:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * hi:
            break
    return hi


@dataclass(frozen=True)
class GaussianEvent(PrivacyEvent):
    """A Gaussian mechanism: noise of standard deviation ``noise_multiplier`` times
    the L2 sensitivity.

    Parameters
    ----------
    noise_multiplier : float
        Noise standard deviation divided by the L2 sensitivity, > 0.
    delta : float
        The delta at which the release is summarised as an ``(epsilon, delta)``
        pair for basic composition, in (0, 1).
    claimed_epsilon : float or None, default=None
        The epsilon the release was calibrated for, if any: an estimator
        calibrated at ``(epsilon, delta)`` states that, so that the ledger and
        ``privacy_spent_`` agree to the last digit. It must be at least the
        exact epsilon (up to the root finder's relative 1e-9); it only makes
        the basic summary looser, never tighter.

    Attributes
    ----------
    epsilon : float
        ``claimed_epsilon`` if given, else the smallest epsilon at which the
        mechanism is ``(epsilon, delta)``-DP, from the exact analytic
        characterisation of Balle and Wang (2018, "Improving the Gaussian
        mechanism for differential privacy", Theorem 8). Tighter composition
        methods use ``noise_multiplier`` itself.

    Examples
    --------
    >>> from dpsk import GaussianEvent
    >>> event = GaussianEvent(noise_multiplier=2.0, delta=1e-6)
    >>> round(event.epsilon, 3)
    2.254
    """

    noise_multiplier: float
    delta: float
    claimed_epsilon: float = None
    _epsilon: float = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        sigma = _real(self.noise_multiplier, "noise_multiplier", low_open=True)
        delta = _real(self.delta, "delta", low_open=True, high=1.0)
        object.__setattr__(self, "noise_multiplier", sigma)
        object.__setattr__(self, "delta", delta)
        exact = _gaussian_epsilon(sigma, delta)
        if self.claimed_epsilon is not None:
            claimed = _real(self.claimed_epsilon, "claimed_epsilon", low_open=True)
            if claimed < exact * (1.0 - 1e-9):
                raise ValueError(
                    f"claimed_epsilon={claimed!r} is below the exact epsilon {exact!r} of "
                    "this Gaussian mechanism: the claim would understate the cost."
                )
            object.__setattr__(self, "claimed_epsilon", claimed)
            exact = claimed
        object.__setattr__(self, "_epsilon", exact)

    @property
    def epsilon(self):
        """Epsilon of the release at ``delta`` (Balle and Wang 2018)."""
        return self._epsilon

    def __repr__(self):
        return (f"GaussianEvent(noise_multiplier={self.noise_multiplier!r}, "
                f"delta={self.delta!r}; epsilon={self._epsilon:.6g})")

    def _to_dict(self):
        return {"kind": "GaussianEvent", "noise_multiplier": self.noise_multiplier,
                "delta": self.delta, "claimed_epsilon": self.claimed_epsilon}


@dataclass(frozen=True)
class ExponentialEvent(PrivacyEvent):
    """An exponential-mechanism selection that is ``epsilon``-DP.

    Parameters
    ----------
    epsilon : float
        The privacy parameter, > 0 and finite.

    Notes
    -----
    Composition methods treat it as an arbitrary ``epsilon``-DP mechanism. That
    is valid for every form of the exponential mechanism; the tighter
    bounded-range analysis (Durfee and Rogers 2019) depends on the exact form
    of the scores and is not used.

    Examples
    --------
    >>> from dpsk import ExponentialEvent
    >>> ExponentialEvent(1.0).cost
    (1.0, 0.0)
    """

    epsilon: float

    def __post_init__(self):
        object.__setattr__(self, "epsilon", _real(self.epsilon, "epsilon", low_open=True))

    @property
    def delta(self):
        """Always 0.0: the exponential mechanism is pure."""
        return 0.0


_COMPONENT_KINDS = {"pure": 1, "gaussian": 1, "gaussian-objective": 2}


def _components(candidates):
    """``candidates`` as a tuple (per candidate) of tuples of checked components."""
    out = []
    for cand in candidates:
        comps = []
        for comp in cand:
            kind, *params, count = comp
            if kind not in _COMPONENT_KINDS or len(params) != _COMPONENT_KINDS[kind]:
                raise ValueError(f"Bad Renyi component {comp!r}.")
            params = [_real(params[0], f"{kind} parameter", low_open=True),
                      *[_real(x, f"{kind} parameter") for x in params[1:]]]
            if isinstance(count, bool) or int(count) != count or count < 1:
                raise ValueError(f"Bad component count in {comp!r}.")
            comps.append((str(kind), *params, int(count)))
        if not comps:
            raise ValueError("Every candidate needs at least one component.")
        out.append(tuple(comps))
    if not out:
        raise ValueError("RepeatAndSelectEvent needs at least one candidate.")
    return tuple(out)


@dataclass(frozen=True)
class RepeatAndSelectEvent(PrivacyEvent):
    """Private selection by repetition: the best of a random number of private runs.

    The mechanism (Papernot and Steinke 2022, "Hyperparameter tuning with Renyi
    differential privacy", ICLR): draw ``K`` from the truncated negative
    binomial law ``D_(eta, gamma)`` (``eta = 0``: logarithmic, ``eta = 1``:
    geometric); run ``K`` times, each run picking one of the candidates
    uniformly and releasing it privately; release the best run only. ``K``
    and the other runs stay secret. Recorded as one event.

    Guarantee: Renyi DP with :meth:`rdp` at every order of the public grid
    (Theorem 2 of the paper applied to the run's curve, the log-mean-exp of the
    candidates' curves), hence ``(epsilon, delta)``-DP by the conversion of
    :func:`dpsk.accounting._renyi.rdp_to_dp`; with ``delta = 0`` every
    component must be pure and the guarantee is ``(2 + eta)`` times the largest
    candidate epsilon (the theorem as both orders grow). The derivations are in
    ``docs/grid_search.rst``.

    Parameters
    ----------
    candidates : tuple of tuple of component
        One tuple per candidate of components ``("pure", epsilon, count)``,
        ``("gaussian", noise_multiplier, count)`` or ``("gaussian-objective",
        unit_sigma, epsilon_jacobian, count)`` (see
        :func:`dpsk.accounting._renyi.component_rdp`): the curve of one run of
        that candidate, its private score included.
    eta : float
        Shape of the law of ``K``, in [0, 1].
    gamma : float
        Its other parameter, in (0, 1).
    delta : float
        The delta at which the event is summarised, in [0, 1).
    claimed_epsilon : float
        The epsilon the search was planned for; must be at least the epsilon
        the curve gives at ``delta`` (up to a relative 1e-9).
    """

    candidates: tuple
    eta: float
    gamma: float
    delta: float
    claimed_epsilon: float

    def __post_init__(self):
        object.__setattr__(self, "candidates", _components(self.candidates))
        object.__setattr__(self, "eta", _real(self.eta, "eta", high=1.0, high_open=False))
        object.__setattr__(self, "gamma", _real(self.gamma, "gamma", low_open=True, high=1.0))
        object.__setattr__(self, "delta", _real(self.delta, "delta", high=1.0))
        claimed = _real(self.claimed_epsilon, "claimed_epsilon", low_open=True)
        exact = self._exact_epsilon()
        if claimed < exact * (1.0 - 1e-9):
            raise ValueError(
                f"claimed_epsilon={claimed!r} is below the epsilon {exact!r} this "
                "repeat-and-select search has at its delta: the claim would understate it."
            )
        object.__setattr__(self, "claimed_epsilon", claimed)

    @property
    def epsilon(self):
        """The planned epsilon at ``delta``."""
        return self.claimed_epsilon

    @property
    def mean_runs(self):
        """``E[K]``: public (a function of ``eta`` and ``gamma``)."""
        return tnb_mean(self.eta, self.gamma)

    def _is_pure(self):
        return all(comp[0] == "pure" for cand in self.candidates for comp in cand)

    @staticmethod
    def _epsilon_of(candidates, eta, gamma, delta):
        """Epsilon at ``delta``: the Renyi conversion, or for pure candidates the
        pure bound ``(2 + eta)`` times the largest candidate epsilon if smaller."""
        pure = all(comp[0] == "pure" for cand in candidates for comp in cand)
        bound = math.inf
        if pure:
            bound = (2.0 + eta) * max(math.fsum(c[1] * c[2] for c in cand)
                                      for cand in candidates)
        if delta > 0:
            run = mixture_rdp(candidates, ORDERS)
            bound = min(bound, rdp_to_dp(repeat_and_select_rdp(run, eta, gamma, ORDERS),
                                         delta, ORDERS))
        return bound

    def _exact_epsilon(self):
        return self._epsilon_of(self.candidates, self.eta, self.gamma, self.delta)

    def rdp(self, orders=ORDERS):
        """The Renyi DP of the whole search at each of ``orders`` (each > 1).

        ``inf`` (a valid, empty bound) above the largest order of
        :data:`~dpsk.accounting._renyi.ORDERS`: a run's score noise is sized so
        that its curve stays below the fit's up to that order only
        (``dpsk.model_selection._repeat.score_noise``), and the candidates'
        curves here are the fits'.
        """
        orders = np.asarray(orders, dtype=float)
        run = mixture_rdp(self.candidates, orders)
        run = np.where(orders <= ORDERS.max(), run, np.inf)
        return repeat_and_select_rdp(run, self.eta, self.gamma, orders)

    def _to_dict(self):
        return {"kind": "RepeatAndSelectEvent",
                "candidates": [[list(c) for c in cand] for cand in self.candidates],
                "eta": self.eta, "gamma": self.gamma, "delta": self.delta,
                "claimed_epsilon": self.claimed_epsilon}


_KINDS = {
    cls.__name__: cls for cls in (PureDPEvent, ApproxDPEvent, GaussianEvent, ExponentialEvent,
                                  RepeatAndSelectEvent)
}


def _event_from_dict(data):
    """Inverse of ``PrivacyEvent._to_dict`` (how journals and stores write events)."""
    data = dict(data)
    kind = data.pop("kind", None)
    if kind not in _KINDS:
        raise ValueError(f"Unknown privacy event kind {kind!r} in a ledger.")
    return _KINDS[kind](**data)


def _as_event(epsilon, delta=0.0):
    """The event of a release known only by its ``(epsilon, delta)`` pair."""
    if isinstance(epsilon, PrivacyEvent):
        return epsilon
    if delta == 0 and epsilon > 0:
        return PureDPEvent(epsilon)
    return ApproxDPEvent(epsilon, delta)
