"""The default ledger: which ledger ``accountant=None`` means, where and when.

Resolution order (first match wins), evaluated when a fit runs:

1. the innermost ``with BudgetAccountant(...)`` block of the current context.
   The blocks live in a :mod:`contextvars` variable, so each thread and each
   asyncio task sees its own ``with`` blocks, and a forked child sees the
   blocks of the thread that forked;
2. a ``with`` block active in another thread of this process, when there is
   exactly one such ledger. Threads do not inherit context variables, so the
   worker threads of a pool (joblib's threading backend, a
   ``ThreadPoolExecutor``) started inside ``with acc:`` would otherwise charge
   the process-wide ledger and ``acc`` would miss their spends. Charging the
   only active ledger can over-count (a conservative error) but never loses a
   spend. With *several* different ledgers active in other threads the choice
   is ambiguous, and the fit is refused;
3. for an estimator unpickled in another process (a joblib worker), the default
   ledger of the process that pickled it, if that ledger is still reachable
   (see :meth:`dpsk.PrivacyAccountingMixin.__getstate__`);
4. the process-wide ledger with an infinite budget, which only records.
"""

import contextvars
import threading

__all__ = ["default_accountant"]

# The with-blocks of this context, innermost last. A tuple, never mutated, so a
# copied context (a new asyncio task) cannot change its parent's blocks.
_BLOCKS = contextvars.ContextVar("dpsk_ledger_blocks", default=())

# Process-wide count of open with-blocks per ledger, for rule 2.
_ACTIVE_LOCK = threading.Lock()
_ACTIVE = {}  # id(ledger) -> [ledger, number of open blocks]
_GLOBAL = []  # the process-wide ledger, created on first use
# The ledger class, registered by dpsk.accounting._ledger when it is imported, so
# that this module sits below the ledger and never imports it back.
_LEDGER_CLASS = []


class AmbiguousDefaultLedgerError(RuntimeError):
    """Raised when ``accountant=None`` could mean several ledgers of other threads."""


def _enter(ledger):
    _BLOCKS.set(_BLOCKS.get() + (ledger,))
    with _ACTIVE_LOCK:
        _ACTIVE.setdefault(id(ledger), [ledger, 0])[1] += 1


def _exit(ledger):
    blocks = _BLOCKS.get()
    # Remove the innermost occurrence: nested ``with`` of one ledger is fine.
    for i in range(len(blocks) - 1, -1, -1):
        if blocks[i] is ledger:
            _BLOCKS.set(blocks[:i] + blocks[i + 1:])
            break
    with _ACTIVE_LOCK:
        entry = _ACTIVE.get(id(ledger))
        if entry is not None:
            entry[1] -= 1
            if entry[1] <= 0:
                del _ACTIVE[id(ledger)]


def register_ledger_class(cls):
    """Make ``cls()`` the process-wide default ledger (called once by the ledger module)."""
    _LEDGER_CLASS[:] = [cls]


def _global_default():
    with _ACTIVE_LOCK:
        if not _GLOBAL:
            _GLOBAL.append(_LEDGER_CLASS[0]())
        return _GLOBAL[0]


def _context_ledger():
    """Rules 1 and 2: the ledger of a ``with`` block, or None."""
    blocks = _BLOCKS.get()
    if blocks:
        return blocks[-1]
    with _ACTIVE_LOCK:
        active = [ledger for ledger, _ in _ACTIVE.values()]
    if len(active) == 1:
        return active[0]
    if len(active) > 1:
        raise AmbiguousDefaultLedgerError(
            f"accountant=None is ambiguous here: this thread has no `with "
            f"BudgetAccountant(...)` block of its own, and {len(active)} different "
            "ledgers are active in other threads. Pass accountant=... explicitly, or "
            "enter the ledger in this thread."
        )
    return None


def default_accountant():
    """Return the ledger that estimators with ``accountant=None`` charge here.

    That is the innermost ledger entered as a context manager in the current
    thread or asyncio task; else the one ledger entered in another thread of
    this process (so pool threads started inside a ``with`` block charge it);
    else a process-wide ledger with an infinite budget, which records spends
    without limiting them.

    Returns
    -------
    BudgetAccountant

    Raises
    ------
    RuntimeError
        If the current context has no ``with`` block and several different
        ledgers are entered in other threads: which one is meant is ambiguous.

    Examples
    --------
    >>> from dpsk import BudgetAccountant, default_accountant
    >>> with BudgetAccountant(epsilon=1.0) as acc:
    ...     default_accountant() is acc
    True
    """
    ledger = _context_ledger()
    return ledger if ledger is not None else _global_default()


def _resolve_default(inherited):
    """The ledger an estimator with ``accountant=None`` charges (rules 1-4).

    ``inherited`` is what the estimator carried from the process that pickled
    it: a ledger, a refusal message (str), or None.
    """
    ledger = _context_ledger()
    if ledger is not None:
        return ledger
    if isinstance(inherited, str):
        raise AmbiguousDefaultLedgerError(inherited)
    if inherited is not None and inherited._reachable():
        return inherited
    return _global_default()


def _after_fork_in_child():
    global _ACTIVE_LOCK
    # Another thread may have held the lock when the parent forked.
    _ACTIVE_LOCK = threading.Lock()
