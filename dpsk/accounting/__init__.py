"""The ledger: what each release cost, and whether the next one fits the budget.

One job: record privacy events and enforce budgets. :class:`BudgetAccountant`
(``_ledger``) holds the events of one budget and checks each new spend;
``_events`` defines the events a release records; ``_composition`` adds them up
(basic, advanced, PLD, RDP) for reporting; ``_filter`` is the privacy filter
that enforces a budget under a non-basic ``composition``; ``_profiles`` holds
the basic mechanisms' privacy profiles; ``_journal`` keeps one ledger's
events in a file shared by processes, threads and machines; ``_context``
decides which ledger ``accountant=None`` means. A ledger that outlives its
process lives in a database: ``_tally`` (the running totals it decides with),
``_history`` (what is written about each release), ``_store`` (the schema and
transactions), ``_sqlite`` and ``_postgres`` (the backends) and ``_open``
(from a path or URL to a store); ``_cli`` is ``python -m dpsk ledger``. This
wing imports nothing else from dpsk. The public names are also exported from
:mod:`dpsk`.
"""

from ._context import default_accountant
from ._events import ApproxDPEvent, ExponentialEvent, GaussianEvent, PrivacyEvent, PureDPEvent
from ._journal import LedgerUnreachableError
from ._ledger import BudgetAccountant, BudgetExceededError, PrivacyBudgetWarning
from ._store import LedgerStoreError

__all__ = [
    "BudgetAccountant",
    "BudgetExceededError",
    "LedgerUnreachableError",
    "LedgerStoreError",
    "PrivacyBudgetWarning",
    "PrivacyEvent",
    "PureDPEvent",
    "ApproxDPEvent",
    "GaussianEvent",
    "ExponentialEvent",
    "default_accountant",
]
