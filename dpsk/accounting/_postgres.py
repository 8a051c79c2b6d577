"""A stored ledger in PostgreSQL, for a team: ``pip install dpsk[postgres]`` (psycopg 3).

The tables are those of :mod:`dpsk.accounting._store`, in the connection's
schema (libpq's ``search_path``: one ledger per schema, e.g.
``?options=-csearch_path%3Dadult`` in the URL). A spend is a transaction that
locks the ledger row (``SELECT ... FOR UPDATE``), so concurrent spenders on any
machine queue on it; reads take a repeatable-read snapshot and wait for no one.
Creating the tables is serialised by a transaction-level advisory lock, so two
processes that create the same ledger end with one.

Connections. A connection found dead when a transaction starts (the server
restarted, an idle connection was cut) is replaced once, which is safe because
nothing was sent yet. A connection lost *during* a spend is never retried:
PostgreSQL commits a transaction whole or not at all, but the client cannot
tell which when the answer to COMMIT is lost, and a retry could charge twice.
The spend is refused with :class:`~dpsk.accounting._store.LedgerStoreError`
and the estimator releases nothing; the history says, once the server is back,
whether the charge was recorded (a conservative error: a charge without a
release, never a release without a charge).

Passwords. The URL's password is used by this process only: the location
shown in messages, ``repr`` and history exports, and carried by a pickled copy
(a joblib worker, a saved model), has none. Copies in other processes find it
where libpq looks (``PGPASSWORD``, ``~/.pgpass``, a service file), as a team
server's credentials should be kept anyway.
"""

import os
from urllib.parse import urlsplit, urlunsplit

from ._store import LedgerStoreError, Store, _rollback_quietly

__all__ = ["PostgresStore", "without_password"]

# Any fixed number: the key of the advisory lock that serialises creating the tables.
_CREATE_LOCK = 0x6470736B


def _psycopg():
    try:
        import psycopg
    except ImportError as exc:
        raise ImportError(
            "A PostgreSQL ledger needs psycopg 3, which is not installed. Install it with "
            "`pip install dpsk[postgres]` (or `pip install \"psycopg[binary]\"`)."
        ) from exc
    return psycopg


def without_password(url):
    """``url`` with any password removed (from the user part and the query)."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        user, host = netloc.rsplit("@", 1)
        netloc = f"{user.split(':', 1)[0]}@{host}"
    query = "&".join(item for item in parts.query.split("&")
                     if item and not item.lower().startswith("password="))
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


class PostgresStore(Store):
    """A ledger in the PostgreSQL database at ``url``."""

    kind = "postgresql"
    lock_clause = " FOR UPDATE"

    def __init__(self, url, *, read_only=False, store_id=None):
        super().__init__(without_password(url), read_only=read_only, store_id=store_id)
        self._url = url

    @property
    def _driver(self):
        # Imported when first used, not when a copy is unpickled: loading a
        # saved model must work where psycopg is not installed.
        return _psycopg()

    @property
    def driver_errors(self):
        return (self._driver.Error,)

    def _sql(self, sql):
        return sql.replace("?", "%s")

    def _connect(self):
        options = {} if "connect_timeout" in self._url else {"connect_timeout": 10}
        conn = self._driver.connect(self._url, autocommit=True, application_name="dpsk",
                                    **options)
        if self.read_only:
            conn.execute("SET default_transaction_read_only = on")
        return conn

    def _detach(self, conn):
        # The socket is shared with the parent: point the child's descriptor at
        # /dev/null, so that dropping the connection here (at exit, say) sends
        # nothing on the parent's session and closes only the child's copy.
        null = os.open(os.devnull, os.O_RDWR)
        try:
            os.dup2(null, conn.fileno())
        finally:
            os.close(null)

    def _begin(self, conn, write):
        conn.execute("BEGIN" if write else "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")

    def _tables(self, conn):
        rows = conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = "
            "current_schema() AND table_name IN ('dpsk_meta', 'dpsk_ledger', 'dpsk_events')"
        ).fetchall()
        return {name for (name,) in rows}

    def _retryable(self, exc):
        return isinstance(exc, self._driver.OperationalError)

    def _problem(self, exc):
        text = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        if isinstance(exc, self._driver.OperationalError):
            return (
                f"The PostgreSQL ledger at {self.location} cannot be reached ({text}). "
                "Nothing was spent and nothing released. A spend under way when the "
                "connection was lost is recorded whole or not at all; once the server "
                "answers again, acc.history() shows which.")
        return (f"The PostgreSQL ledger at {self.location} refused the operation ({text}); "
                "nothing was spent.")

    def _not_there_hint(self):
        return (" Tables are looked up in the connection's schema (search_path): to keep a "
                "ledger per data set in one database, give each a schema, e.g. "
                "?options=-csearch_path%3Dadult in the URL.")

    def attach(self, budget=None):
        conn = self._guard(self._connect)
        try:
            if not self._guard(self._tables, conn):
                if budget is None or self.read_only:
                    raise LedgerStoreError(
                        f"There is no ledger at {self.location}. To create one, give its "
                        "budget: BudgetAccountant.open(url, epsilon=..., delta=...)."
                        + self._not_there_hint())
                self._guard(self._create_once, conn, budget)
        finally:
            conn.close()
        self._connection()
        self.check_rows()

    def _create_once(self, conn, budget):
        conn.execute("BEGIN")
        try:
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_CREATE_LOCK,))
            if not self._tables(conn):  # nobody created it while we waited
                self._create(conn, budget)
            conn.execute("COMMIT")
        except BaseException:
            _rollback_quietly(conn, self)
            raise

    def describe(self):
        return self.location
