"""Privacy events: what one release cost, described well enough to compose it.

A ledger that only kept ``(epsilon, delta)`` pairs could only add them up (basic
composition). Tighter accounting (advanced composition, privacy loss
distributions, Renyi DP) needs to know *which* mechanism ran: a Gaussian
mechanism with noise multiplier ``sigma`` composes much better than the
``(epsilon, delta)`` pair it is usually summarised by. So every release is
recorded as an immutable event, and the pair is derived from it.

Events are frozen dataclasses: hashable, picklable, comparable, and they cross
process boundaries as small JSON objects (see :mod:`dpsk.accounting._journal`).
"""

import math
from dataclasses import asdict, dataclass, field
from numbers import Real

from ._profiles import gaussian_delta

__all__ = [
    "PrivacyEvent",
    "PureDPEvent",
    "ApproxDPEvent",
    "GaussianEvent",
    "ExponentialEvent",
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


_KINDS = {
    cls.__name__: cls for cls in (PureDPEvent, ApproxDPEvent, GaussianEvent, ExponentialEvent)
}


def _event_from_dict(data):
    """Inverse of ``PrivacyEvent._to_dict`` (the journal's wire format)."""
    data = dict(data)
    kind = data.pop("kind", None)
    if kind not in _KINDS:
        raise ValueError(f"Unknown privacy event kind {kind!r} in a ledger journal.")
    return _KINDS[kind](**data)


def _as_event(epsilon, delta=0.0):
    """The event of a release known only by its ``(epsilon, delta)`` pair."""
    if isinstance(epsilon, PrivacyEvent):
        return epsilon
    if delta == 0 and epsilon > 0:
        return PureDPEvent(epsilon)
    return ApproxDPEvent(epsilon, delta)
