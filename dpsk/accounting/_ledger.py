"""The privacy ledger: :class:`BudgetAccountant` and budget validation.

Semantics
---------
* A :class:`BudgetAccountant` is a shared ledger, not a parameter value. Cloning
  an estimator (``sklearn.base.clone``, and so ``GridSearchCV`` and
  ``cross_val_score``) hands the clone the *same* ledger, and copying a ledger
  returns the ledger itself.
* It records one :class:`~dpsk.PrivacyEvent` per release. ``total()`` is basic
  composition (the ``(epsilon, delta)`` pairs add up); ``total(method=...)``
  gives tighter totals (:mod:`dpsk.accounting._composition`) for reporting.
  ``composition=...`` other than ``"basic"`` enforces the budget with the
  privacy filter of :mod:`dpsk.accounting._filter`, which stays valid when
  each release is chosen after seeing the earlier outputs; the tight totals
  are not (they assume parameters fixed in advance).
* ``check`` happens before any data is touched; ``spend`` records a release.
* Copies in other processes (pickled into joblib workers, or inherited by a
  forked child) check and spend through a journal file (:mod:`dpsk.accounting._journal`),
  so their spends reach the ledger the user holds, or are refused with
  :class:`~dpsk.LedgerUnreachableError` when that ledger is gone. Before every
  ``os.fork`` each live ledger of the process moves to its journal, so forked
  children share it too.
* Which ledger ``accountant=None`` means is decided in :mod:`dpsk.accounting._context`.
"""

import math
import os
import sys
import threading
import warnings
import weakref
from contextlib import contextmanager
from numbers import Real

from . import _context
from ._composition import _check_method, compose_epsilon
from ._context import default_accountant
from ._events import _KINDS, PrivacyEvent, _as_event
from ._filter import RenyiFilter
from ._history import export_rows, history_rows, release_meta, rows_frame
from ._journal import LedgerUnreachableError, _Journal, _remove_owned
from ._open import make_store, reattach
from ._store import LedgerStoreError
from ._tally import Held, Tally

__all__ = [
    "BudgetAccountant",
    "BudgetExceededError",
    "LedgerStoreError",
    "LedgerUnreachableError",
    "PrivacyBudgetWarning",
    "default_accountant",
]

# Relative slack for comparing float sums with a budget: ten spends of 0.1 must
# fit a budget of 1.0 although they sum to 0.9999999999999999 or 1.0000000000000002.
_BUDGET_RTOL = 1e-9

# Above these, a guarantee says little; see docs/accounting.rst. An epsilon of
# 10 lets an attacker's odds about any one person grow by e^10 ~ 22000. A delta
# is the probability of failing outright and should be far below 1/n; n is not
# known to the ledger, but a delta above 1e-3 is too large for any data set of
# more than a thousand rows, which covers every realistic use.
_WEAK_EPSILON = 10.0
_WEAK_DELTA = 1e-3


class BudgetExceededError(ValueError):
    """Raised when a release would spend more privacy budget than remains."""


class PrivacyBudgetWarning(UserWarning):
    """A budget or a spend is so large that its guarantee is weak."""


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


def _user_stacklevel():
    """The ``stacklevel`` that points a warning at the first frame outside dpsk."""
    package = os.path.dirname(os.path.abspath(__file__))
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package):
        frame, level = frame.f_back, level + 1
    return level


def _warn_if_weak(epsilon, delta, what):
    if math.isfinite(epsilon) and epsilon > _WEAK_EPSILON:
        warnings.warn(
            f"{what} has epsilon={epsilon:g} > {_WEAK_EPSILON:g}: the guarantee is weak "
            f"(an attacker's odds may grow by a factor up to e^{epsilon:g}).",
            PrivacyBudgetWarning,
            stacklevel=_user_stacklevel(),
        )
    if delta > _WEAK_DELTA:
        warnings.warn(
            f"{what} has delta={delta:g} > {_WEAK_DELTA:g}: delta is the probability "
            "that the guarantee fails outright and should be far below 1/n for n rows.",
            PrivacyBudgetWarning,
            stacklevel=_user_stacklevel(),
        )


_EVENT_TYPES = tuple(_KINDS.values())

# Every ledger of this process, so that a fork can move them to journals first.
_LEDGERS = weakref.WeakSet()


class BudgetAccountant:
    """A privacy-budget ledger shared by any number of dpsk estimators.

    Each successful fit of a dpsk estimator records its release here as a
    :class:`~dpsk.PrivacyEvent`. By default costs add up (sequential
    composition, Dwork and Roth 2014, Theorem 3.16): the total is a valid
    guarantee for everything released through this ledger about one data set.
    A spend that would take the total past the budget raises
    :class:`BudgetExceededError`, and estimators check the budget before they
    touch the data.

    Parameters
    ----------
    epsilon : float, default=inf
        Total epsilon budget, >= 0. ``inf`` only records spends. Above 10 a
        :class:`PrivacyBudgetWarning` says the guarantee is weak.
    delta : float or None, default=None
        Total delta budget, in [0, 1). Above 1e-3 a
        :class:`PrivacyBudgetWarning` is issued (see the accounting docs).
        None means no limit when ``epsilon`` is infinite (a ledger that only
        records), and 0 otherwise (pure epsilon-DP releases only).
    composition : {"basic", "advanced", "pld", "rdp"}, default="basic"
        How the budget is enforced. ``"basic"`` adds costs up. The others
        enforce it with a Renyi privacy filter (Feldman and Zrnic 2021,
        extended to several orders and approximate-DP releases; proof in
        docs/accounting.rst), valid when releases are chosen adaptively. Many
        small releases then fit where basic composition stops; a few large
        Gaussian or approximate-DP releases may fit less. The value also names
        the tight method for reporting: ``total(composition)`` states it for
        the recorded sequence, which is valid only had that sequence been fixed
        in advance. ``"pld"`` and ``"rdp"`` need the optional ``dp-accounting``
        package (``pip install dpsk[accounting]``) for that report.
    approx_delta : float or None, default=None
        Under a filter, the share of ``delta`` fixed in advance for the deltas
        of approximate-DP releases (:class:`~dpsk.ApproxDPEvent`), which add
        up; the rest pays for the Renyi part. None means half of ``delta``.
        In [0, delta]. Ignored under ``"basic"``.

    Attributes
    ----------
    events : list of PrivacyEvent
        The recorded releases, oldest first (a copy).
    spends : list of (float, float)
        The ``(epsilon, delta)`` of each recorded release, oldest first (a copy).

    Notes
    -----
    Used as a context manager, the ledger becomes the default of every estimator
    whose ``accountant`` is ``None`` inside the ``with`` block, in the current
    thread or asyncio task (see :func:`default_accountant`)::

        with BudgetAccountant(epsilon=1.0) as acc:
            DPLogisticRegression(epsilon=0.5).fit(X, y)
        acc.total()  # (0.5, 0.0)

    Cloning an estimator keeps the same ledger (``__sklearn_clone__`` and
    ``copy.deepcopy`` return the ledger itself), so model selection in
    scikit-learn charges every fit to it. Copies in worker processes and forked
    children write to a shared journal file, so their spends are not lost; a
    copy whose ledger has gone (a model loaded after its process ended) refuses
    to spend with :class:`LedgerUnreachableError`.

    Examples
    --------
    >>> from dpsk import BudgetAccountant
    >>> acc = BudgetAccountant(epsilon=1.0)
    >>> acc.spend(0.25).spend(0.25).total()
    (0.5, 0.0)
    >>> acc.remaining()
    (0.5, 0.0)
    >>> acc.events
    [PureDPEvent(epsilon=0.25, mechanism='generic'), PureDPEvent(epsilon=0.25, mechanism='generic')]
    """

    def __init__(self, epsilon=float("inf"), delta=None, *, composition="basic",
                 approx_delta=None):
        if delta is None:
            # A ledger with no epsilon limit only records: it must not refuse an
            # (epsilon, delta) release either. With an epsilon limit, no delta
            # unless one is given.
            delta = 0.0
            unlimited_delta = isinstance(epsilon, Real) and epsilon == float("inf")
        else:
            unlimited_delta = False
        epsilon, delta = _validate_cost(epsilon, delta, allow_inf=True)
        if delta >= 1.0:
            raise ValueError(f"delta must be in [0, 1), got {delta!r}.")
        _check_method(composition)
        if composition in ("pld", "rdp"):
            from ._composition import _import_dp_accounting

            _import_dp_accounting()  # fail now, not at the first spend
        _warn_if_weak(epsilon, delta, "This budget")
        if unlimited_delta:
            delta = float("inf")
        self._epsilon, self._delta = epsilon, delta
        self._composition = composition
        self._approx_delta = self._check_approx_delta(approx_delta)
        self._start_empty()

    def _start_empty(self):
        """An empty ledger in memory, owned by this process."""
        self._filter = None
        self._records = []  # (event, meta) pairs, oldest first
        self._tally = Tally.empty(self._approx_delta is not None)
        self._journal = None
        self._journal_tally = None  # (count, tally) of the journal's first entries
        self._store = None
        self._label = None
        self._home_pid = os.getpid()
        self._lock = threading.RLock()
        _LEDGERS.add(self)

    @property
    def epsilon(self):
        """Total epsilon budget."""
        return self._epsilon

    @property
    def delta(self):
        """Total delta budget."""
        return self._delta

    @property
    def composition(self):
        """The composition method named at construction (see ``composition``)."""
        return self._composition

    @property
    def approx_delta(self):
        """Under a filter, the share of ``delta`` for approximate-DP releases (else None)."""
        return self._approx_delta

    def _check_approx_delta(self, approx_delta):
        if self._composition == "basic" or not math.isfinite(self._epsilon):
            return None
        if approx_delta is None:
            return self._delta / 2.0
        if isinstance(approx_delta, bool) or not isinstance(approx_delta, Real):
            raise ValueError(f"approx_delta must be a real number, got {approx_delta!r}.")
        approx_delta = float(approx_delta)
        if math.isnan(approx_delta) or not 0.0 <= approx_delta <= self._delta:
            raise ValueError(
                f"approx_delta must be in [0, delta] = [0, {self._delta:g}], got "
                f"{approx_delta!r}."
            )
        return approx_delta

    def _renyi_filter(self):
        """The filter enforcing this budget, or None under basic composition.

        A function of the public budget only, so every copy of the ledger (in
        any process) enforces the same one.
        """
        if self._approx_delta is None:
            return None
        if self._filter is None:
            self._filter = RenyiFilter(self._epsilon, self._delta, self._approx_delta)
        return self._filter

    # -- stored ledgers -------------------------------------------------------------------
    @classmethod
    def open(cls, where, epsilon=None, delta=None, *, composition=None, approx_delta=None,
             label=None, read_only=False):
        """Open a ledger kept in a database, creating it with the budget given.

        The budget of a data set is spent over weeks, by several people and
        processes; a stored ledger keeps it. Its events, running totals (the
        privacy filter's state included) and a history of who spent what stay
        in the database, and every spend is one transaction there: checked
        against the budget and committed before the release exists. See
        :doc:`/team`.

        Parameters
        ----------
        where : str or path-like
            A file path or ``sqlite:///path`` URL: a SQLite file (the standard
            library's ``sqlite3``; nothing to install). Or a
            ``postgresql://user@host:port/database`` URL, for a team
            (``pip install dpsk[postgres]``).
        epsilon, delta, composition, approx_delta : optional
            The budget, as for :class:`BudgetAccountant`. A new ledger needs
            ``epsilon`` (``delta`` defaults as there; ``composition`` to
            ``"basic"``). An existing ledger keeps the budget it was created
            with: each value given must equal the stored one (else ValueError),
            and those left out are read from it.
        label : str or None, default=None
            Written with every release spent through this object and its
            copies (for example the analyst and the purpose), in the history.
        read_only : bool, default=False
            Only read (totals, ``events``, :meth:`history`); spends are refused.
            Works on read-only files, and never creates or upgrades a ledger.

        Returns
        -------
        BudgetAccountant
            A ledger like any other: estimators, pipelines, searches, clones,
            pickles and worker processes spend through it.

        Raises
        ------
        ValueError
            If ``where`` is neither a path nor a known URL, or a budget value
            given differs from the stored one.
        LedgerStoreError
            If there is no ledger at ``where`` and no ``epsilon`` was given; or
            the ledger is damaged, written by a newer dpsk, read-only (unless
            ``read_only``), or its server cannot be reached. Nothing is created,
            repaired or reset then.

        Examples
        --------
        >>> import os, tempfile
        >>> from dpsk import BudgetAccountant
        >>> path = os.path.join(tempfile.mkdtemp(), "adult.db")
        >>> acc = BudgetAccountant.open(path, epsilon=3.0, label="doctest")
        >>> acc.spend(0.5).total()
        (0.5, 0.0)
        >>> BudgetAccountant.open(path).remaining()   # another day, another process
        (2.5, 0.0)
        >>> import shutil; shutil.rmtree(os.path.dirname(path))
        """
        if label is not None and not isinstance(label, str):
            raise TypeError(f"label must be a string or None, got {type(label).__name__}.")
        store = make_store(where, read_only=read_only)
        request = None
        if epsilon is not None:
            # Validated (and warned about) as any budget; used only if the store is new.
            probe = cls(epsilon, delta, composition=composition or "basic",
                        approx_delta=approx_delta)
            _LEDGERS.discard(probe)
            request = (probe._epsilon, probe._delta, probe._composition, probe._approx_delta)
        store.attach(request)
        _refuse_conflicts(store, epsilon=epsilon, delta=delta, composition=composition,
                          approx_delta=approx_delta)
        return cls._on_store(store, label)

    @classmethod
    def _on_store(cls, store, label):
        """A ledger object spending through ``store`` (its budget already read)."""
        self = cls.__new__(cls)
        self._epsilon, self._delta, self._composition, self._approx_delta = store.budget
        if self._composition in ("pld", "rdp"):
            from ._composition import _import_dp_accounting

            _import_dp_accounting()
        self._start_empty()
        self._records = self._tally = None
        self._store, self._label = store, label
        weakref.finalize(self, store.close)
        return self

    @property
    def location(self):
        """Where a stored ledger lives (a path, or a URL without its password);
        None for a ledger in memory."""
        return None if self._store is None else self._store.describe()

    @property
    def label(self):
        """The label written with each release spent through this object (or None)."""
        return self._label

    # -- the ledger ---------------------------------------------------------------
    def _tally_of_journal(self, entries):
        """The tally of a journal's entries, adding only those recorded since the
        last one this object summed (the journal only grows)."""
        count, tally = self._journal_tally or (0, None)
        if tally is None or count > len(entries):
            count, tally = 0, Tally.empty(self._approx_delta is not None)
        return tally.plus_all(event for event, _ in entries[count:])

    @contextmanager
    def _ledger(self, write=True):
        """Hold the ledger; yield a :class:`~dpsk.accounting._tally.Held`.

        In memory, the events and the tally are this object's. With a journal,
        they are read from it under an exclusive file lock, and recording
        writes there. With a store, the ``with`` block is one transaction
        (holding the write lock when ``write``), committed when it ends.
        """
        with self._lock:
            if self._store is not None:
                with self._store.hold(write) as held:
                    yield held
                return
            if self._journal is not None:
                with self._journal.locked() as (entries, append):
                    held = Held(self._tally_of_journal(entries), entries,
                                lambda new, _: [append(x) for x in new])
                    yield held
                    self._journal_tally = (len(entries), held.tally)
                return
            if os.getpid() != self._home_pid:
                # A fork copied the in-memory events but could not move them to
                # a journal first: the parent would never see a spend made here.
                raise LedgerUnreachableError(
                    "This BudgetAccountant was copied into a forked process before it "
                    "could be shared, so spends made here would not reach the parent's "
                    "ledger; they are refused. Pass the ledger to the child explicitly "
                    "(pickling it shares it), or use a ledger created in this process."
                )
            yield Held(self._tally, self._records, self._append_in_memory)

    def _append_in_memory(self, entries, tally):
        self._records.extend(entries)
        self._tally = tally

    def _as_tally(self, events):
        if isinstance(events, Tally):
            return events
        return Tally.of(events, self._approx_delta is not None)

    def _fits(self, events, new):
        """Whether the releases ``events`` (a list, or their Tally) followed by
        ``new`` (a list) may all run."""
        before = self._as_tally(events)
        after = before.plus_all(new)
        renyi = self._renyi_filter()
        if renyi is not None:
            # No "or basic composition fits": taking the better of two rules
            # after seeing the outputs is exactly what a filter must not do.
            # One exception is sound: the first release of a ledger is chosen
            # before any output exists, so its own exact (epsilon, delta) may
            # pay for it; the filter then refuses everything after it unless it
            # accepts the whole sequence (docs/accounting.rst, "A first release").
            return renyi.accepts(after.filter) or (before.count == 0 and len(new) == 1
                                                   and self._fits_alone(new[0]))
        eps, delta = after.spent()
        limit_eps = self._epsilon * (1 + _BUDGET_RTOL) + 1e-15
        limit_delta = self._delta * (1 + _BUDGET_RTOL) + 1e-15
        return eps <= limit_eps and delta <= limit_delta

    def _fits_alone(self, event):
        """Whether one release's own exact ``(epsilon, delta)`` fits the budget."""
        limit_eps = self._epsilon * (1 + _BUDGET_RTOL) + 1e-15
        limit_delta = self._delta * (1 + _BUDGET_RTOL) + 1e-15
        return event.epsilon <= limit_eps and event.delta <= limit_delta

    def _raise_exceeded(self, events, new):
        """Raise the refusal of ``new`` after ``events`` (or their Tally), quoting
        what was compared."""
        before = self._as_tally(events)
        after = before.plus_all(new)
        eps, delta = self._spent(new)
        what = (f"this release (epsilon={eps:g}, delta={delta:g})" if len(new) == 1 else
                f"a batch of {len(new)} releases (epsilon={eps:g}, delta={delta:g} in sum)")
        budget = f"(epsilon={self._epsilon:g}, delta={self._delta:g})"
        renyi = self._renyi_filter()
        if renyi is None:
            after_eps, after_delta = after.spent()
            compared = (f"by basic composition, {before.count} earlier releases and "
                        f"{what} add up to (epsilon={after_eps:g}, delta={after_delta:g})")
        else:
            after_eps, after_pair = renyi.state(after.filter)
            compared = (f"under the Renyi privacy filter (composition={self._composition!r}), "
                        f"{before.count} earlier releases and {what} would be certified at "
                        f"epsilon={after_eps:g} with approximate-DP deltas adding up to "
                        f"{after_pair:g} of the {renyi.approx_delta:g} set apart for them")
        left_eps, left_delta = self._remaining(before)
        raise BudgetExceededError(
            f"Privacy budget exceeded: {compared}, over the budget {budget}. "
            + ("Nothing in the batch was recorded: nothing was spent. " if len(new) > 1
               else "Nothing was spent. ")
            + f"Remaining: epsilon={left_eps:g}, delta={left_delta:g}"
            + (" (the largest pure release that still fits, and the delta left for "
               "approximate-DP releases)." if renyi is not None else ".")
        )

    def _spent(self, events):
        return (math.fsum(e.epsilon for e in events), math.fsum(e.delta for e in events))

    @staticmethod
    def _event(epsilon, delta):
        if isinstance(epsilon, PrivacyEvent):
            if type(epsilon) not in _EVENT_TYPES:
                # The journal and the composition methods know these kinds only;
                # an unknown one could not be shared or composed soundly.
                raise TypeError(
                    f"Unsupported privacy event {type(epsilon).__name__}; use one of "
                    f"{', '.join(t.__name__ for t in _EVENT_TYPES)}."
                )
            return epsilon
        epsilon, delta = _validate_cost(epsilon, delta)
        return _as_event(epsilon, delta)

    def _meta(self, source):
        """The meta record of a release by ``source`` (see ``dpsk.accounting._history``)."""
        return release_meta(source, self._label)

    def check(self, epsilon, delta=0.0):
        """Raise :class:`BudgetExceededError` unless a release fits the budget.

        Parameters
        ----------
        epsilon : float or PrivacyEvent
            Epsilon cost to test, >= 0, or the event of the release.
        delta : float, default=0.0
            Delta cost to test, in [0, 1]. Ignored when ``epsilon`` is an event.

        Returns
        -------
        True
            When the cost fits; nothing is recorded.
        """
        event = self._event(epsilon, delta)
        with self._ledger(write=False) as held:
            if not self._fits(held.tally, [event]):
                self._raise_exceeded(held.tally, [event])
        return True

    def spend(self, epsilon, delta=0.0, *, source=None):
        """Record a release.

        The budget is checked again under the ledger's lock (a file lock for a
        shared ledger, a transaction for a stored one), so concurrent fits in
        threads or processes cannot overspend together.

        Parameters
        ----------
        epsilon : float or PrivacyEvent
            Epsilon spent, >= 0, or the event of the release.
        delta : float, default=0.0
            Delta spent, in [0, 1]. Ignored when ``epsilon`` is an event.
        source : estimator, optional
            What made the release. Its class and public parameters go into the
            history (:meth:`history`); estimators pass themselves.

        Returns
        -------
        self : BudgetAccountant

        Raises
        ------
        BudgetExceededError
            If the spend does not fit; nothing is recorded then.
        LedgerUnreachableError
            If this is a copy of a ledger that no longer exists, or a stored
            ledger that cannot be used (:class:`LedgerStoreError`); nothing is
            recorded.

        Warns
        -----
        PrivacyBudgetWarning
            If the release alone has epsilon > 10 or delta > 1e-3.
        """
        event = self._event(epsilon, delta)
        meta = self._meta(source)
        with self._ledger() as held:
            if not self._fits(held.tally, [event]):
                self._raise_exceeded(held.tally, [event])
            held.record([(event, meta)])
        _warn_if_weak(event.epsilon, event.delta, "A release")
        return self

    def check_all(self, events):
        """Raise :class:`BudgetExceededError` unless several releases fit, in this order.

        What :meth:`spend_all` would accept, without recording anything: a
        pipeline checks the releases of all its private steps before the first
        one spends.

        Parameters
        ----------
        events : sequence of PrivacyEvent or (epsilon, delta) pairs

        Returns
        -------
        True
            When the batch fits; nothing is recorded.
        """
        batch = [self._event(*item) if isinstance(item, tuple) else self._event(item, 0.0)
                 for item in events]
        if batch:
            # A read of the ledger's current state (for a stored ledger, a
            # read-only transaction): nothing is written, nothing charged.
            with self._ledger(write=False) as held:
                if not self._fits(held.tally, batch):
                    self._raise_exceeded(held.tally, batch)
        return True

    def spend_all(self, events, *, source=None):
        """Record several releases at once, or none of them.

        The whole batch is checked against the budget and recorded under one
        hold of the ledger's lock (a file lock for a shared ledger, one
        transaction for a stored one), so a concurrent spender cannot take part
        of the budget between two of its events. Basic composition and the
        filter only grow with every event, so the batch fits exactly when all
        of it fits after the recorded releases.

        Parameters
        ----------
        events : sequence of PrivacyEvent or (epsilon, delta) pairs
            The releases, in order. An empty batch records nothing.
        source : estimator, optional
            What made the releases (see :meth:`spend`).

        Returns
        -------
        self : BudgetAccountant

        Raises
        ------
        BudgetExceededError
            If the batch does not fit; nothing is recorded then.
        """
        batch = [self._event(*item) if isinstance(item, tuple) else self._event(item, 0.0)
                 for item in events]
        if not batch:
            return self
        meta = self._meta(source)
        with self._ledger() as held:
            if not self._fits(held.tally, batch):
                self._raise_exceeded(held.tally, batch)
            held.record([(event, meta) for event in batch])
        worst = max(batch, key=lambda e: (e.epsilon, e.delta))
        _warn_if_weak(worst.epsilon, worst.delta, "A release")
        return self

    @property
    def events(self):
        """The recorded :class:`~dpsk.PrivacyEvent` list, oldest first (a copy)."""
        with self._ledger(write=False) as held:
            return held.events

    @property
    def spends(self):
        """The ``(epsilon, delta)`` of each recorded release, oldest first (a copy)."""
        return [event.cost for event in self.events]

    def history(self, as_frame=True):
        """The recorded releases with who, what and when, for an audit.

        One row per release, oldest first: ``seq`` (from 1), ``time`` (UTC, to
        the second), ``kind`` (the event's class), ``epsilon``, ``delta``,
        ``estimator`` (the class that released), ``params`` (its public
        parameters: the scalar entries of ``get_params(deep=False)`` except
        ``accountant`` and ``random_state``), ``label``, ``user``, ``host``,
        ``pid`` and ``event`` (the event's fields). Nothing in it depends on
        the data (:doc:`/team`, "What the history holds").

        Parameters
        ----------
        as_frame : bool, default=True
            A pandas DataFrame (pandas must be installed), else a list of dicts.

        Returns
        -------
        pandas.DataFrame or list of dict
        """
        with self._ledger(write=False) as held:
            rows = history_rows(held.records)
        return rows_frame(rows) if as_frame else rows

    def export(self, path=None, format=None):
        """Write the history (and, in JSON, the budget and totals) to a file.

        Parameters
        ----------
        path : str or path-like or None
            The file to write; None returns the text instead.
        format : {"json", "csv"} or None
            Default: from the file's suffix, else JSON.

        Returns
        -------
        str or None
            The text when ``path`` is None.
        """
        if format is None:
            suffix = os.path.splitext(os.fspath(path))[1].lower() if path is not None else ""
            format = "csv" if suffix == ".csv" else "json"
        with self._ledger(write=False) as held:
            rows = history_rows(held.records)
            summary = self._summary(held.tally)
        text = export_rows(rows, summary, format)
        if path is None:
            return text
        with open(path, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
        return None

    def _summary(self, tally):
        """Budget and totals, as plain numbers (an export's header, the CLI's report)."""
        spent_eps, spent_delta = tally.spent()
        left_eps, left_delta = self._remaining(tally)
        return {"location": self.location, "epsilon": self._epsilon, "delta": self._delta,
                "composition": self._composition, "approx_delta": self._approx_delta,
                "releases": tally.count, "spent_epsilon": spent_eps,
                "spent_delta": spent_delta, "remaining_epsilon": left_eps,
                "remaining_delta": left_delta}

    def total(self, method="basic", *, delta=None):
        """Return the total ``(epsilon, delta)`` guarantee of the recorded releases.

        Parameters
        ----------
        method : {"basic", "advanced", "pld", "rdp"}, default="basic"
            ``"basic"`` adds the costs up. ``"advanced"`` is the closed-form
            composition theorem of Kairouz, Oh and Viswanath (2015, Theorem
            3.5); ``"pld"`` (privacy loss distributions) and ``"rdp"`` (Renyi
            DP) use the optional ``dp-accounting`` package. Every method gives a
            valid guarantee for the recorded releases read as a sequence fixed
            in advance; the smaller of it and basic composition is returned.
            When releases were chosen after seeing earlier outputs, the
            guarantee is the budget the ledger enforced (basic composition or
            the privacy filter, see ``composition``), not this report.
        delta : float, optional
            The total delta at which tighter methods state epsilon, in [0, 1).
            Defaults to the budget's ``delta``. Ignored by ``"basic"``.

        Returns
        -------
        (epsilon, delta) : tuple of float
            All releases together are ``(epsilon, delta)``-DP. ``epsilon`` is
            ``inf`` when ``method`` gives no bound at that delta (for example
            approximate-DP releases whose deltas already exceed it).

        Examples
        --------
        >>> from dpsk import BudgetAccountant
        >>> acc = BudgetAccountant(delta=1e-6)
        >>> for _ in range(50):
        ...     _ = acc.spend(0.1)
        >>> [round(x, 2) for x in acc.total()]
        [5.0, 0.0]
        >>> round(acc.total("advanced")[0], 2)
        3.92
        """
        _check_method(method)
        with self._ledger(write=False) as held:
            basic = held.tally.spent()
            events = None if method == "basic" else held.events
        if method == "basic":
            return basic
        if delta is None and math.isinf(self._delta):
            raise ValueError(
                f"This ledger has no delta budget to report total({method!r}) at; pass "
                "one, e.g. total(method, delta=1e-6)."
            )
        target = self._delta if delta is None else _validate_cost(0.0, delta)[1]
        if target >= 1.0:
            raise ValueError(f"delta must be in [0, 1), got {delta!r}.")
        eps = compose_epsilon(events, method, target)
        if basic[1] <= target and basic[0] <= eps:
            return basic
        return (eps, target)

    def remaining(self):
        """Return the headroom ``(epsilon, delta)`` left in the budget (never negative).

        Under basic composition this is the budget minus :meth:`total`. Under
        the filter (``composition`` other than ``"basic"``) it is the largest
        epsilon of one more generic pure-DP release the filter accepts, and the
        delta left of ``approx_delta`` for approximate-DP releases.
        """
        with self._ledger(write=False) as held:
            return self._remaining(held.tally)

    def _remaining(self, events):
        tally = self._as_tally(events)
        renyi = self._renyi_filter()
        if renyi is not None:
            return renyi.remaining(tally.filter)
        eps, delta = tally.spent()
        return (max(self._epsilon - eps, 0.0), max(self._delta - delta, 0.0))

    def _reachable(self):
        """Whether check and spend can work here (no I/O beyond a stat)."""
        if self._store is not None:
            return self._store.reachable()
        if self._journal is None:
            return os.getpid() == self._home_pid
        return self._journal.problem() is None

    # -- the default ledger -------------------------------------------------------
    def __enter__(self):
        _context._enter(self)
        return self

    def __exit__(self, *exc_info):
        _context._exit(self)
        return False

    # -- identity under copying -------------------------------------------------
    def _identity(self):
        """What tells ledgers apart: objects on one store or journal are one ledger.

        A pipeline groups its releases by this before checking them together
        (two objects opened on one store share its budget).
        """
        if self._store is not None:
            return ("store", self._store.kind, self._store.store_id or self._store.location)
        if self._journal is not None:
            return ("journal", self._journal.path)
        return ("memory", id(self))

    def __sklearn_clone__(self):
        return self

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def _share(self):
        """Move the events to a journal so copies in other processes see them.

        Called with ``self._lock`` held. A stored ledger is shared already:
        copies connect to its store.
        """
        if self._journal is not None or self._store is not None:
            return
        if os.getpid() != self._home_pid:
            raise LedgerUnreachableError(
                "This BudgetAccountant was copied into a forked process before it could "
                "be shared, so it cannot be shared from here."
            )
        journal = _Journal.create(self._records)
        self._journal, self._records, self._tally = journal, None, None
        self._journal_tally = None
        # The owner removes the journal when its ledger dies (or at exit).
        weakref.finalize(self, _remove_owned, journal.path, journal.owner_pid)

    def __getstate__(self):
        with self._lock:
            self._share()
        state = {"epsilon": self._epsilon, "delta": self._delta,
                 "composition": self._composition, "approx_delta": self._approx_delta,
                 "journal": self._journal}
        if self._store is not None:
            # Where the store is and which one: never its password.
            state.update(store=self._store.ref(), label=self._label)
        return state

    def __setstate__(self, state):
        # No I/O here: loading a model must work even when its ledger is gone.
        self._epsilon, self._delta = state["epsilon"], state["delta"]
        self._composition = state.get("composition", "basic")
        # Pickles from before the filter carry no share: the default one.
        self._approx_delta = state.get("approx_delta")
        if self._approx_delta is None:
            self._approx_delta = self._check_approx_delta(None)
        journal = state["journal"]
        if isinstance(journal, str):
            # Saved by dpsk 0.1.0.dev0 before journals named their owner: it
            # cannot be told from an orphan, so it is treated as one.
            journal = _Journal(journal, None, None)
        self._start_empty()
        self._journal, self._records, self._tally = journal, None, None
        if state.get("store") is not None:
            self._store = reattach(state["store"])
            self._label = state.get("label")

    def __repr__(self):
        head = f"BudgetAccountant(epsilon={self._epsilon!r}, delta={self._delta!r}"
        if self._composition != "basic":
            head += f", composition={self._composition!r}"
            if self._approx_delta is not None:
                head += f", approx_delta={self._approx_delta:g}"
        if self._store is not None:
            head += f"; stored in {self._store.describe()!r}"
        try:
            with self._ledger(write=False) as held:
                tally = held.tally
        except LedgerStoreError:
            return head + "; store unreachable)"
        except LedgerUnreachableError:
            # repr must never fail: notebooks display loaded models.
            return head + "; unreachable: the process that owned it has ended)"
        except Exception as exc:  # noqa: BLE001 - same reason, any I/O trouble
            return head + f"; unreadable: {type(exc).__name__})"
        eps, delta = tally.spent()
        return f"{head}; spent epsilon={eps:g}, delta={delta:g} in {tally.count} releases)"


def _refuse_conflicts(store, **given):
    """ValueError if a budget value given to ``open`` differs from the stored one."""
    stored = dict(zip(("epsilon", "delta", "composition", "approx_delta"), store.budget))
    bad = [f"{name}={value!r}" for name, value in given.items()
           if value is not None and stored[name] is not None and value != stored[name]]
    if bad:
        budget = ", ".join(f"{name}={value!r}" for name, value in stored.items())
        raise ValueError(
            f"The ledger at {store.describe()} was created with {budget}; you asked for "
            f"{', '.join(bad)}. A stored ledger keeps the budget it was created with: "
            "leave these out to use it, or open another ledger.")


def _before_fork():
    # A forked child gets a copy of every in-memory ledger; its spends would be
    # lost. Sharing each ledger through a journal first makes the child's copy
    # write where the parent reads.
    for ledger in list(_LEDGERS):
        if (ledger._journal is not None or ledger._store is not None
                or ledger._home_pid != os.getpid()):
            continue
        if not ledger._lock.acquire(timeout=1.0):
            continue  # the child's copy refuses to spend (pid check in _ledger)
        try:
            ledger._share()
        except Exception:  # noqa: BLE001 - a fork hook must not raise; the child refuses
            pass
        finally:
            ledger._lock.release()


def _after_fork_in_child():
    # Locks held by other parent threads at the fork would never be released.
    for ledger in list(_LEDGERS):
        ledger._lock = threading.RLock()
    _context._after_fork_in_child()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_child=_after_fork_in_child)


_context.register_ledger_class(BudgetAccountant)
