"""The protocol every private fit follows: check, validate, spend, release, attach.

``PrivacyAccountingMixin`` is the one place where an estimator turns its privacy
parameters into a charge on a :class:`~dpsk.BudgetAccountant` and decides what a
failed fit may reveal. The order is the privacy argument:

1. **check** the budget (parameters only, free);
2. **validate** the input against the declared domain (finite features, shapes,
   labels among the declared classes). A refusal here depends only on whether
   the input is in the domain, so it is free;
3. **spend** the cost. From here on the data is read for real;
4. **release**: the mechanism runs. If it raises, the budget stays spent, the
   estimator is restored, and a :class:`PrivateFitError` with a fixed message
   (a function of the estimator's class and cost only) replaces the original
   exception, whose text and traceback could carry data-dependent values.
   Warnings raised during the checks and the release are dropped for the same
   reason (``dpsk._silence``: process-wide, so threads cannot undo it);
5. **attach** the fitted attributes and ``privacy_spent_``.

In a dry run (``dpsk.pipeline._dry``: a pipeline checking all its private
steps before the first spends) steps 1 and 2 run as usual, step 3 records the
event instead of spending it, and step 4 is replaced by public stand-in
attributes (``_stand_in``, for private preprocessing steps) or skipped.
"""

from ._silence import silenced
from .accounting import _context
from .accounting._events import ApproxDPEvent, PureDPEvent
from .accounting._ledger import BudgetAccountant, _validate_cost
from .pipeline._check import warn_from_calling_pipeline
from .pipeline._dry import dry_recorder

__all__ = ["PrivacyAccountingMixin", "PrivateFitError"]


class PrivateFitError(RuntimeError):
    """A private fit failed after it had read the data; its budget was charged.

    The message names only the estimator and its cost: the original error could
    depend on the data, so it is not chained (``__cause__`` and ``__context__``
    are ``None``).
    """


class PrivacyAccountingMixin:
    """Budget handling shared by every dpsk estimator (see the module docstring).

    Subclasses call :meth:`_fit_with_budget` from ``fit`` with two functions:
    ``validate(*args)`` checks the input domain and returns the prepared data,
    and ``release(data, epsilon=..., delta=...)`` runs the mechanism and returns
    the fitted attributes as a dict. They define ``_privacy_cost()`` if their
    cost is not simply their ``epsilon`` and ``delta`` parameters.
    """

    #: The tag by which :func:`dpsk.check_pipeline` recognises a private step
    #: without importing this class (the pipeline check sits below the mixin).
    _dpsk_private_step = True

    def _privacy_cost(self):
        """The (epsilon, delta) one fit of this estimator spends."""
        epsilon = getattr(self, "epsilon")
        delta = getattr(self, "delta", 0.0)
        epsilon, delta = _validate_cost(epsilon, delta)
        if epsilon == 0:
            raise ValueError("epsilon must be > 0, got 0.")
        if delta >= 1:
            raise ValueError(f"delta must be in [0, 1), got {delta!r}.")
        return epsilon, delta

    def _privacy_event(self):
        """The :class:`~dpsk.PrivacyEvent` one fit of this estimator records.

        Built from :meth:`_privacy_cost`: a pure epsilon-DP event when delta is
        0, else a generic ``(epsilon, delta)`` event. Estimators whose mechanism
        composes better than its pair (a Gaussian mechanism) override this.
        """
        epsilon, delta = self._privacy_cost()
        if delta == 0:
            return PureDPEvent(epsilon)
        return ApproxDPEvent(epsilon, delta)

    def _resolve_accountant(self):
        accountant = getattr(self, "accountant", None)
        if accountant is None:
            # A copy unpickled in a worker carries the default ledger of the
            # process that pickled it (see __getstate__); dpsk.accounting._context decides
            # when that one applies.
            accountant = _context._resolve_default(self.__dict__.get("_inherited_accountant"))
        if not isinstance(accountant, BudgetAccountant):
            raise TypeError(
                f"accountant must be a dpsk.BudgetAccountant or None, got "
                f"{type(accountant).__name__}."
            )
        return accountant

    def _spend(self, accountant, event):
        """Record this fit's release on ``accountant``, as its privacy event."""
        # The event, not the pair: the ledger composes it by its mechanism. The
        # spend checks the budget again, under the ledger's lock, so concurrent
        # fits cannot overspend together. ``source``: the history records this
        # class and its public parameters, nothing else of the fit.
        accountant.spend(event, source=self)

    def _fit_with_budget(self, validate, release, *args):
        """Check, validate (free), spend, release (charged), attach.

        Parameters
        ----------
        validate : callable
            ``validate(*args)`` refuses inputs outside the declared domain and
            returns the prepared data. It may set public metadata such as
            ``n_features_in_`` on the estimator.
        release : callable
            ``release(data, epsilon=..., delta=...)`` runs the mechanism at the
            validated cost, which it must spend in full, and returns the fitted
            attributes as a dict.
        *args
            Passed to ``validate``.

        Returns
        -------
        self
        """
        warn_from_calling_pipeline(self)
        epsilon, delta = self._privacy_cost()
        event = self._privacy_event()
        accountant = self._resolve_accountant()
        accountant.check(event)
        # A refused or failed fit must leave an earlier fitted model as it was.
        snapshot = dict(self.__dict__)
        recorder = dry_recorder()
        try:
            # The domain checks read every row: what they might warn about (a
            # user's transformer inspecting values, say) could depend on the data.
            with silenced():
                data = validate(*args)
            self._spend(accountant if recorder is None
                        else recorder.ledger_for(self, accountant), event)
        except BaseException:
            self._restore(snapshot)
            raise
        if recorder is not None:
            return self._dry_fitted(snapshot, data)
        failed = False
        try:
            with silenced():
                fitted = release(data, epsilon=epsilon, delta=delta)
        except Exception:  # the exception object may hold data: do not keep it
            failed = True
        except BaseException:  # KeyboardInterrupt, SystemExit: the user's doing
            self._restore(snapshot)
            raise
        if failed:
            self._restore(snapshot)
            raise PrivateFitError(
                f"The private fit of {type(self).__name__} failed after reading the "
                f"data. Its budget (epsilon={epsilon:g}, delta={delta:g}) has been "
                "charged, because whether a fit fails can depend on the data. The "
                "cause is not shown for the same reason."
            )
        for name, value in fitted.items():
            setattr(self, name, value)
        self.privacy_spent_ = (epsilon, delta)
        self.privacy_event_ = event
        return self

    def _dry_fitted(self, snapshot, data):
        """A dry run's end: public stand-ins for the release, nothing spent.

        A private step whose output feeds later steps (private bounds) defines
        ``_stand_in(data)``: fitted attributes that depend on public metadata
        only (shapes, declared parameters), so that the steps after it can run
        their own domain checks. The others keep their state as it was.
        """
        stand_in = getattr(self, "_stand_in", None)
        if stand_in is None:
            self._restore(snapshot)
            return self
        for name, value in stand_in(data).items():
            setattr(self, name, value)
        return self

    def _restore(self, snapshot):
        self.__dict__.clear()
        self.__dict__.update(snapshot)

    def __getstate__(self):
        state = super().__getstate__()
        if getattr(self, "accountant", None) is None and "_inherited_accountant" not in state:
            # A worker process has no ``with`` block of its own and a default
            # ledger nobody reads: carry the one this process would charge, so
            # spends in the worker reach it.
            try:
                inherited = _context._resolve_default(None)
            except _context.AmbiguousDefaultLedgerError as exc:
                inherited = str(exc)  # the copy refuses to fit with this message
            state = dict(state, _inherited_accountant=inherited)
        return state
