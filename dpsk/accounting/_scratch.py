"""A scratch ledger for the inner fits of a search: in memory, never shared, never on disk.

A private search (``DPGridSearch``) charges the user's ledger once for the
whole search and hands every inner fit a throwaway ledger of its own. A plain
:class:`~dpsk.BudgetAccountant` is the wrong tool for that: pickling it to a
joblib worker, or a fork while it is alive, moves it to a journal *file*, and
with random stopping the number of such files is the secret number of runs.

:class:`ScratchLedger` is a :class:`~dpsk.BudgetAccountant` (so estimators
accept it) that keeps its events in memory in whatever process holds it:

* it has no budget (``epsilon = delta = inf``): the search checks what each
  inner fit spent from the fitted estimator's ``privacy_spent_``;
* pickling it sends no state: the copy is a new, empty scratch ledger, so no
  journal is created and nothing is written anywhere;
* it is not one of the ledgers moved to a journal before a fork, and a forked
  copy keeps recording in its own memory (its spends need reach no one);
* it is never a default ledger (``with`` is refused).

Its events are bookkeeping only; they are never reported anywhere.
"""

import os
import threading
import weakref
from contextlib import contextmanager

from . import _ledger
from ._ledger import BudgetAccountant
from ._tally import Held

__all__ = ["ScratchLedger"]

# Scratch ledgers of this process (only to renew their locks after a fork).
_SCRATCH = weakref.WeakSet()


def _forget(ledger):
    """Take ``ledger`` out of the set the fork hook moves to journals (if it is there)."""
    ledgers = getattr(_ledger, "_LEDGERS", None)
    if isinstance(ledgers, weakref.WeakSet):
        ledgers.discard(ledger)


class ScratchLedger(BudgetAccountant):
    """An unlimited in-memory ledger for inner fits that never writes a file.

    Pickles and forks give independent, empty scratch ledgers; nothing of it
    is ever shared with the user's ledger or written to disk. Used by
    :class:`~dpsk.DPGridSearch` for every inner fit.
    """

    def __init__(self):
        super().__init__()  # unlimited: epsilon = delta = inf, basic composition
        _forget(self)
        _SCRATCH.add(self)

    @contextmanager
    def _ledger(self, write=True):
        # In memory in every process: no journal, no store, no pid check (a
        # forked copy's spends are its own bookkeeping and need reach nobody).
        with self._lock:
            yield Held(self._tally, self._records, self._append_in_memory)

    def _meta(self, source):
        """None: the inner fits' releases are bookkeeping, with no history."""
        return None

    def _share(self):
        """Never: a scratch ledger has no journal (the fork hook skips it too)."""

    def _reachable(self):
        return True

    def __reduce__(self):
        # No state crosses a pickle: the copy is a fresh, empty scratch ledger.
        return (ScratchLedger, ())

    def __enter__(self):
        raise TypeError(
            "A ScratchLedger records the inner fits of a search only; it cannot be a "
            "default ledger. Use a BudgetAccountant in a `with` block."
        )

    def __repr__(self):
        return f"ScratchLedger(releases={len(self._records)})"


def _after_fork_in_child():
    # The ledger module's fork hook renews the locks of the ledgers it knows; a
    # scratch ledger's lock may have been held by another thread at the fork.
    for ledger in list(_SCRATCH):
        ledger._lock = threading.RLock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
