"""A dry run: every check a fit makes before it spends, with nothing spent or released.

A pipeline with several private steps (private bounds, then the model) spends
at the first of them, so a refusal that only the model can make (an undeclared
label, a bad weight, a budget too small for both) would come after the bounds
were charged. :func:`dry_run` lets a caller fit a *copy* of the pipeline in a
mode where every dpsk estimator runs its fit protocol up to the spend (its
parameter checks, its budget check, its domain checks, all free) and then,
instead of spending and releasing, records the release it would have made
and takes public stand-in attributes (``_stand_in``), so that the steps after
it can run their own checks on input of the right shape and range.

The mode is a context variable read by :class:`dpsk.PrivacyAccountingMixin`;
nothing it records depends on the data beyond what the steps' refusals already
say (whether the input is in the domain) and public metadata.
"""

import contextvars
from contextlib import contextmanager

__all__ = ["dry_run", "dry_recorder", "PlannedRelease"]

_RECORDER = contextvars.ContextVar("dpsk_dry_run", default=None)


class PlannedRelease:
    """One release a fit would make: the step, the ledger it charges, its event.

    Attributes
    ----------
    step : estimator
        The private step (of the copy that was dry-run).
    accountant : BudgetAccountant
        The ledger the step would charge (resolved: ``accountant=None`` is the
        default ledger at fit time).
    event : PrivacyEvent
        What the step would record (for a search, its planned event).
    """

    __slots__ = ("step", "accountant", "event")

    def __init__(self, step, accountant, event):
        self.step, self.accountant, self.event = step, accountant, event

    def __repr__(self):
        return f"PlannedRelease({type(self.step).__name__}, {self.event!r})"


class _RecordingLedger:
    """Stands in for a ledger at the spend of a dry run: it records instead of spending."""

    def __init__(self, releases, step, accountant):
        self._releases, self._step, self._accountant = releases, step, accountant

    def spend(self, event, delta=0.0, *, source=None):
        # ``source`` names the spender in a stored ledger's history: a dry run
        # writes no history.
        self._releases.append(PlannedRelease(self._step, self._accountant, event))
        return self


class _Recorder(list):
    """The releases of one dry run, in the order the steps would spend."""

    def ledger_for(self, step, accountant):
        return _RecordingLedger(self, step, accountant)


@contextmanager
def dry_run():
    """Within the block, dpsk fits check and record instead of spending.

    Yields the list of :class:`PlannedRelease` the block's fits would make.
    Only the calling thread (and tasks that copy its context) is affected:
    fit copies whose steps run in parallel workers only after setting their
    ``n_jobs`` to None (:func:`dpsk.pipeline.check_before_fit` does).
    """
    recorder = _Recorder()
    token = _RECORDER.set(recorder)
    try:
        yield recorder
    finally:
        _RECORDER.reset(token)


def dry_recorder():
    """The recorder of the dry run in progress, or None in a normal fit."""
    return _RECORDER.get()
