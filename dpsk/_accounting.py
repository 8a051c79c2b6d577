"""Privacy budget accounting: the ledger, the default ledger and the estimator mixin.

Semantics
---------
* A :class:`BudgetAccountant` is a shared ledger, not a parameter value. Cloning
  an estimator (``sklearn.base.clone``, and so ``GridSearchCV`` and
  ``cross_val_score``) hands the clone the *same* ledger, and copying a ledger
  returns the ledger itself.
* Budgets compose sequentially (basic composition): a run of releases with
  costs ``(eps_i, delta_i)`` costs ``(sum eps_i, sum delta_i)``.
* ``check`` happens before any data is touched; ``spend`` happens only after a
  fit succeeded, and the fitted model is attached to the estimator only after the
  spend went through. A failed fit spends nothing.
* Across processes (joblib's default ``loky`` backend pickles estimators into
  worker processes): the first time a ledger is pickled it moves its entries to
  a journal file guarded by an OS file lock, and every copy of it, in any
  process on this machine, checks and spends through that journal. Spends made
  in workers therefore reach the ledger the user holds. Where file locks are not
  available, pickling a ledger raises instead of silently losing spends.
"""

import math
import os
import tempfile
import threading
import weakref
from contextlib import contextmanager
from numbers import Real


try:  # POSIX only; without it, ledgers refuse to cross process boundaries.
    import fcntl
except ImportError:  # pragma: no cover - exercised on Windows only
    fcntl = None

__all__ = [
    "BudgetAccountant",
    "BudgetExceededError",
    "default_accountant",
]

# Relative slack for comparing float sums with a budget: ten spends of 0.1 must
# fit a budget of 1.0 although they sum to 0.9999999999999999 or 1.0000000000000002.
_BUDGET_RTOL = 1e-9


class BudgetExceededError(ValueError):
    """Raised when a release would spend more privacy budget than remains."""


def _validate_cost(epsilon, delta, *, allow_inf=False, what="epsilon"):
    """Return ``(float(epsilon), float(delta))`` or raise a ValueError naming the bad one."""
    if isinstance(epsilon, bool) or not isinstance(epsilon, Real):
        raise ValueError(f"{what} must be a real number, got {epsilon!r}.")
    if isinstance(delta, bool) or not isinstance(delta, Real):
        raise ValueError(f"delta must be a real number, got {delta!r}.")
    epsilon, delta = float(epsilon), float(delta)
    if math.isnan(epsilon) or epsilon < 0 or (math.isinf(epsilon) and not allow_inf):
        bound = "[0, inf]" if allow_inf else "[0, inf)"
        raise ValueError(f"{what} must be in {bound}, got {epsilon!r}.")
    if math.isnan(delta) or not 0.0 <= delta <= 1.0:
        raise ValueError(f"delta must be in [0, 1], got {delta!r}.")
    return epsilon, delta


class BudgetAccountant:
    """A privacy-budget ledger shared by any number of dpsk estimators.

    Each successful fit of a dpsk estimator records its cost ``(epsilon, delta)``
    here. Costs add up (sequential composition, Dwork and Roth 2014, Theorem
    3.16): the total is a valid guarantee for everything released through this
    ledger about one data set. A spend that would take the total past the budget
    raises :class:`BudgetExceededError`, and estimators check the budget before
    they touch the data.

    Parameters
    ----------
    epsilon : float, default=inf
        Total epsilon budget, >= 0. ``inf`` only records spends.
    delta : float, default=0.0
        Total delta budget, in [0, 1].

    Attributes
    ----------
    spends : list of (float, float)
        The recorded costs, oldest first (a copy).

    Notes
    -----
    Used as a context manager, the ledger becomes the default of every estimator
    whose ``accountant`` is ``None`` inside the ``with`` block::

        with BudgetAccountant(epsilon=1.0) as acc:
            DPLogisticRegression(epsilon=0.5).fit(X, y)
        acc.total()  # (0.5, 0.0)

    Cloning an estimator keeps the same ledger (``__sklearn_clone__`` and
    ``copy.deepcopy`` return the ledger itself), so model selection in
    scikit-learn charges every fit to it. Copies pickled into joblib worker
    processes write to a shared journal file, so their spends are not lost.

    Examples
    --------
    >>> from dpsk import BudgetAccountant
    >>> acc = BudgetAccountant(epsilon=1.0)
    >>> acc.spend(0.25).spend(0.25).total()
    (0.5, 0.0)
    >>> acc.remaining()
    (0.5, 0.0)
    """

    def __init__(self, epsilon=float("inf"), delta=0.0):
        self._epsilon, self._delta = _validate_cost(epsilon, delta, allow_inf=True)
        self._entries = []
        self._lock = threading.RLock()
        self._journal = None

    @property
    def epsilon(self):
        """Total epsilon budget."""
        return self._epsilon

    @property
    def delta(self):
        """Total delta budget."""
        return self._delta

    # -- the ledger ---------------------------------------------------------------
    @contextmanager
    def _ledger(self):
        """Hold the ledger exclusively and yield its entries list.

        Without a journal the entries live in memory. With one, they are read from
        the journal under an exclusive file lock, and the yielded list is a fresh
        copy; ``_record`` appends to it and to the file.
        """
        with self._lock:
            if self._journal is None:
                yield self._entries, None
                return
            try:
                handle = open(self._journal, "r+")
            except FileNotFoundError:
                raise RuntimeError(
                    "This BudgetAccountant is a copy of a ledger whose journal no longer "
                    f"exists ({self._journal}): the process that owned it has ended. "
                    "Spends through this copy cannot be recorded, so they are refused."
                ) from None
            with handle:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
                try:
                    entries = [tuple(map(float, line.split())) for line in handle
                               if line.strip()]
                    yield entries, handle
                finally:
                    fcntl.flock(handle.fileno(), fcntl.LOCK_UN)

    def _would_exceed(self, entries, epsilon, delta):
        eps_total = math.fsum([e for e, _ in entries] + [epsilon])
        delta_total = math.fsum([d for _, d in entries] + [delta])
        return (eps_total > self._epsilon * (1 + _BUDGET_RTOL) + 1e-15
                or delta_total > self._delta * (1 + _BUDGET_RTOL) + 1e-15)

    def _raise_exceeded(self, entries, epsilon, delta):
        spent_eps = math.fsum(e for e, _ in entries)
        spent_delta = math.fsum(d for _, d in entries)
        raise BudgetExceededError(
            f"Privacy budget exceeded: this release costs (epsilon={epsilon:g}, "
            f"delta={delta:g}) but only (epsilon={max(self._epsilon - spent_eps, 0.0):g}, "
            f"delta={max(self._delta - spent_delta, 0.0):g}) of the budget "
            f"(epsilon={self._epsilon:g}, delta={self._delta:g}) remains."
        )

    def check(self, epsilon, delta=0.0):
        """Raise :class:`BudgetExceededError` unless ``(epsilon, delta)`` fits the budget.

        Parameters
        ----------
        epsilon : float
            Epsilon cost to test, >= 0.
        delta : float, default=0.0
            Delta cost to test, in [0, 1].

        Returns
        -------
        True
            When the cost fits; nothing is recorded.
        """
        epsilon, delta = _validate_cost(epsilon, delta)
        with self._ledger() as (entries, _):
            if self._would_exceed(entries, epsilon, delta):
                self._raise_exceeded(entries, epsilon, delta)
        return True

    def spend(self, epsilon, delta=0.0):
        """Record a release that cost ``(epsilon, delta)``.

        The budget is checked again under the ledger's lock, so concurrent fits
        cannot overspend together.

        Parameters
        ----------
        epsilon : float
            Epsilon spent, >= 0.
        delta : float, default=0.0
            Delta spent, in [0, 1].

        Returns
        -------
        self : BudgetAccountant

        Raises
        ------
        BudgetExceededError
            If the spend does not fit; nothing is recorded then.
        """
        epsilon, delta = _validate_cost(epsilon, delta)
        with self._ledger() as (entries, handle):
            if self._would_exceed(entries, epsilon, delta):
                self._raise_exceeded(entries, epsilon, delta)
            entries.append((epsilon, delta))
            if handle is not None:
                handle.seek(0, os.SEEK_END)
                handle.write(f"{epsilon!r} {delta!r}\n")
                handle.flush()
                os.fsync(handle.fileno())
        return self

    @property
    def spends(self):
        with self._ledger() as (entries, _):
            return list(entries)

    def total(self):
        """Return the total ``(epsilon, delta)`` spent so far."""
        entries = self.spends
        return (math.fsum(e for e, _ in entries), math.fsum(d for _, d in entries))

    def remaining(self):
        """Return the ``(epsilon, delta)`` still available (never negative)."""
        eps, delta = self.total()
        return (max(self._epsilon - eps, 0.0), max(self._delta - delta, 0.0))

    # -- the default ledger -------------------------------------------------------
    def __enter__(self):
        with _DEFAULT_LOCK:
            _DEFAULT_STACK.append(self)
        return self

    def __exit__(self, *exc_info):
        with _DEFAULT_LOCK:
            # Remove the innermost occurrence: nested ``with`` of one ledger is fine.
            for i in range(len(_DEFAULT_STACK) - 1, -1, -1):
                if _DEFAULT_STACK[i] is self:
                    del _DEFAULT_STACK[i]
                    break
        return False

    # -- identity under copying -------------------------------------------------
    def __sklearn_clone__(self):
        return self

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __getstate__(self):
        if fcntl is None:  # pragma: no cover - Windows
            raise TypeError(
                "A BudgetAccountant cannot be shared with another process on this "
                "platform (no POSIX file locks), and a copy would lose its spends. "
                "Use n_jobs=1 or joblib's threading backend."
            )
        with self._lock:
            if self._journal is None:
                fd, path = tempfile.mkstemp(prefix="dpsk-ledger-", suffix=".txt")
                with os.fdopen(fd, "w") as handle:
                    handle.writelines(f"{e!r} {d!r}\n" for e, d in self._entries)
                self._journal = path
                self._entries = None
                # The process that created the journal removes it when the ledger dies.
                weakref.finalize(self, _remove_quietly, path)
        return {"epsilon": self._epsilon, "delta": self._delta, "journal": self._journal}

    def __setstate__(self, state):
        self._epsilon, self._delta = state["epsilon"], state["delta"]
        self._journal = state["journal"]
        self._entries = None
        self._lock = threading.RLock()

    def __repr__(self):
        eps, delta = self.total()
        return (f"BudgetAccountant(epsilon={self._epsilon!r}, delta={self._delta!r}; "
                f"spent epsilon={eps:g}, delta={delta:g} in {len(self.spends)} releases)")


def _remove_quietly(path):
    try:
        os.remove(path)
    except OSError:
        pass


_DEFAULT_LOCK = threading.Lock()
_DEFAULT_STACK = []
_GLOBAL_DEFAULT = BudgetAccountant()


def default_accountant():
    """Return the ledger that estimators with ``accountant=None`` charge.

    That is the innermost ledger entered as a context manager, or else a
    process-wide ledger with an infinite budget (it records spends without
    limiting them).

    Returns
    -------
    BudgetAccountant
    """
    with _DEFAULT_LOCK:
        return _DEFAULT_STACK[-1] if _DEFAULT_STACK else _GLOBAL_DEFAULT
