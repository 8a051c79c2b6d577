"""The running totals a ledger decides with, and their exact written form.

A ledger decides each spend from its totals, not from the events one by one:
how many releases, the exact sums of their epsilons and deltas (basic
composition) and, under a privacy filter, the filter's per-order state
(:class:`~dpsk.accounting._filter.FilterState`). A :class:`Tally` holds them.
An in-memory ledger keeps one up to date; a stored ledger
(:mod:`dpsk.accounting._store`) writes it in the transaction of every spend, so
a charge costs the same after a thousand releases as after one.

Everything is exact: the sums are rationals (they round to what
:func:`math.fsum` of the list gives), the per-order sums are the very floats
the filter adds, and :meth:`Tally.to_json` writes them without rounding (floats
by ``repr``, which reads back to the same float; rationals as
``"numerator/denominator"``). A tally read back is
equal to the one written, so every process decides as one would with the whole
list.
"""

import math
from dataclasses import dataclass
from fractions import Fraction

from ._filter import ORDERS, FilterState

__all__ = ["Tally"]


def _rational(text):
    return math.inf if text == "inf" else Fraction(text)


def _text(value):
    return "inf" if value == math.inf else f"{value.numerator}/{value.denominator}"


@dataclass(frozen=True)
class Tally:
    """Releases recorded so far, summed.

    Parameters
    ----------
    count : int
        Number of recorded releases.
    epsilon, delta : Fraction
        Exact sums of their epsilons and deltas.
    filter : FilterState or None
        The privacy filter's state, for a ledger enforced by the filter; None
        under basic composition.
    """

    count: int = 0
    epsilon: Fraction = Fraction(0)
    delta: Fraction = Fraction(0)
    filter: FilterState = None

    @classmethod
    def empty(cls, filtered):
        """No release yet; with a filter state when ``filtered``."""
        return cls(filter=FilterState() if filtered else None)

    @classmethod
    def of(cls, events, filtered):
        """The tally of ``events`` (oldest first)."""
        return cls.empty(filtered).plus_all(events)

    def plus(self, event):
        """The tally after one more ``event``."""
        return Tally(self.count + 1, self.epsilon + Fraction(event.epsilon),
                     self.delta + Fraction(event.delta),
                     None if self.filter is None else self.filter.plus(event))

    def plus_all(self, events):
        tally = self
        for event in events:
            tally = tally.plus(event)
        return tally

    def spent(self):
        """``(epsilon, delta)`` by basic composition, as floats (the sums of
        :func:`math.fsum`)."""
        return float(self.epsilon), float(self.delta)

    def to_json(self):
        """A JSON-ready dict that :meth:`from_json` reads back exactly."""
        data = {"count": self.count, "epsilon": _text(self.epsilon),
                "delta": _text(self.delta), "filter": None}
        if self.filter is not None:
            data["filter"] = {"orders": [repr(x) for x in self.filter.orders],
                              "loss": _text(self.filter.loss),
                              "pair": _text(self.filter.pair)}
        return data

    @classmethod
    def from_json(cls, data):
        """Inverse of :meth:`to_json`; raises ValueError on anything else."""
        try:
            state = data["filter"]
            if state is not None:
                orders = tuple(float(x) for x in state["orders"])
                if len(orders) != len(ORDERS):
                    raise ValueError("wrong number of Renyi orders")
                state = FilterState(orders, _rational(state["loss"]),
                                    Fraction(state["pair"]))
            count = data["count"]
            if isinstance(count, bool) or not isinstance(count, int) or count < 0:
                raise ValueError("bad count")
            return cls(count, Fraction(data["epsilon"]), Fraction(data["delta"]), state)
        except (KeyError, TypeError, ZeroDivisionError, AttributeError) as exc:
            raise ValueError(f"not a ledger tally ({type(exc).__name__})") from None


class Held:
    """A ledger while it is held (locked, or read in one snapshot).

    Parameters
    ----------
    tally : Tally
        The totals of the recorded releases.
    records : list or callable
        The recorded ``(event, meta)`` pairs, oldest first, or a function that
        reads them (a stored ledger reads them only when asked).
    append : callable or None
        ``append(entries, tally)`` writes the new ``(event, meta)`` pairs and the
        tally after them; None when the ledger is only read.
    """

    __slots__ = ("tally", "_records", "_append")

    def __init__(self, tally, records, append=None):
        self.tally = tally
        self._records = records
        self._append = append

    @property
    def records(self):
        """The recorded ``(event, meta)`` pairs, oldest first."""
        return self._records() if callable(self._records) else self._records

    @property
    def events(self):
        """The recorded events, oldest first."""
        return [event for event, _ in self.records]

    def record(self, entries):
        """Write ``entries`` (``(event, meta)`` pairs) and update the tally."""
        after = self.tally.plus_all(event for event, _ in entries)
        self._append(entries, after)
        self.tally = after
