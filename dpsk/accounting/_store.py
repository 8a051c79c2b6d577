"""A ledger kept in a database: the schema, and what every backend shares.

A stored ledger (:meth:`dpsk.BudgetAccountant.open`) keeps its budget, its
running totals (:class:`~dpsk.accounting._tally.Tally`) and one row per release
in three tables, the same in SQLite (``_sqlite``) and PostgreSQL
(``_postgres``):

``dpsk_meta``
    ``schema_version``, a random ``store_id`` and the creation time.
``dpsk_ledger``
    One row: the budget (fixed at creation) and the tally after the last
    release.
``dpsk_events``
    One row per release, numbered from 1: the event (its JSON form, which
    reads back to an equal event) and its meta record
    (:mod:`dpsk.accounting._history`), with ``epsilon`` and ``delta`` also as
    numbers for whoever queries the table.

A spend is one transaction (:meth:`Store.hold`): take the ledger's write lock
(SQLite ``BEGIN IMMEDIATE``, PostgreSQL ``SELECT ... FOR UPDATE`` on the ledger
row), read the tally, decide, insert the event and write the new tally,
commit. The estimator releases only after the commit returned, so a process
killed at any point leaves either no charge and no release, or the charge.

What is refused, never repaired: a file that is not a ledger, a damaged one
(the tally and the rows disagree, a row does not read back), one written by a
newer dpsk (a higher schema version), a read-only one opened to spend, and a
ledger whose count of releases went down since this process last read it (a
backup put back: the releases since would be spent again). Each refusal is a
:class:`LedgerStoreError` that says what was found and what to do.

Schema versions. A store records the version that wrote it. A newer dpsk
brings the steps from each older version to its own (:data:`MIGRATIONS`, empty
while there is one version) and applies them when it opens the store for
writing, all in one transaction; an older dpsk refuses a newer store.
"""

import json
import os
import secrets
import weakref
from contextlib import contextmanager
from datetime import datetime, timezone

from ._events import _event_from_dict
from ._journal import LedgerUnreachableError
from ._tally import Held, Tally

__all__ = ["LedgerStoreError", "SCHEMA_VERSION", "Store"]

#: The version of the tables this dpsk writes.
SCHEMA_VERSION = 1

#: ``{version: [SQL statements]}``: the steps from ``version`` to ``version + 1``,
#: run in order, in one transaction, by a dpsk whose SCHEMA_VERSION is higher.
MIGRATIONS = {}

TABLES = ("dpsk_events", "dpsk_ledger", "dpsk_meta")

# Portable SQL: SQLite and PostgreSQL both read it as it is ("?" placeholders
# become "%s" for psycopg).
_SCHEMA = (
    "CREATE TABLE dpsk_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE dpsk_ledger (id INTEGER PRIMARY KEY CHECK (id = 1), "
    "budget TEXT NOT NULL, state TEXT NOT NULL)",
    "CREATE TABLE dpsk_events (seq BIGINT PRIMARY KEY, time TEXT NOT NULL, "
    "kind TEXT NOT NULL, epsilon DOUBLE PRECISION NOT NULL, "
    "delta DOUBLE PRECISION NOT NULL, event TEXT NOT NULL, estimator TEXT, "
    "params TEXT NOT NULL, label TEXT, username TEXT, host TEXT, pid BIGINT)",
)
_INSERT = ("INSERT INTO dpsk_events (seq, time, kind, epsilon, delta, event, estimator, "
           "params, label, username, host, pid) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
_SELECT = ("SELECT seq, event, time, estimator, params, label, username, host, pid "
           "FROM dpsk_events ORDER BY seq")

# Connections inherited through a fork: never used again, and never closed in
# the child either (closing could end the parent's locks or checkpoint its
# file, or tell the parent's server that its session is over).
_ABANDONED = []
# Stores of this process with a connection, for the fork hook.
_CONNECTED = weakref.WeakSet()


class LedgerStoreError(LedgerUnreachableError):
    """A stored ledger cannot be used as it is; nothing was spent.

    Raised when the store is missing, damaged, written by a newer dpsk,
    read-only, locked for too long, or its server cannot be reached. The
    message says what was found and what to do; dpsk never repairs, resets or
    re-creates a store by itself.
    """


def _number(value):
    return repr(float(value)) if value is not None else None


def encode_budget(epsilon, delta, composition, approx_delta):
    """The budget as stored: JSON with each number written by ``repr`` (exact)."""
    return json.dumps({"epsilon": _number(epsilon), "delta": _number(delta),
                       "composition": composition, "approx_delta": _number(approx_delta)},
                      sort_keys=True)


def decode_budget(text):
    """Inverse of :func:`encode_budget`: ``(epsilon, delta, composition, approx_delta)``."""
    data = json.loads(text)
    approx = data["approx_delta"]
    return (float(data["epsilon"]), float(data["delta"]), str(data["composition"]),
            None if approx is None else float(approx))


def _row(seq, event, meta):
    meta = meta or {}
    return (seq, meta.get("time") or "", type(event).__name__, event.epsilon, event.delta,
            json.dumps(event._to_dict(), sort_keys=True), meta.get("estimator"),
            json.dumps(meta.get("params") or {}, sort_keys=True), meta.get("label"),
            meta.get("user"), meta.get("host"), meta.get("pid"))


class Store:
    """One ledger in one database; a backend subclass says how to reach it.

    Parameters
    ----------
    location : str
        What is shown and pickled: a file's absolute path, or a URL without
        its password.
    read_only : bool
        Never write (reading a ledger: ``python -m dpsk ledger show``).
    store_id : str or None
        The id the store must carry: set for a copy of a ledger (unpickled),
        so that it refuses any other store found at the same place.
    """

    kind = None
    #: Appended to the read of the ledger row in a write transaction.
    lock_clause = ""

    def __init__(self, location, *, read_only=False, store_id=None):
        self.location = location
        self.read_only = read_only
        self.store_id = store_id
        self.budget = None
        self.created = None
        self._conn = None
        self._pid = None
        self._seen = 0  # most releases seen here: a ledger never loses one

    # -- what a backend provides ---------------------------------------------------------
    driver_errors = ()

    def _connect(self):
        """A new connection to the database (no check of what is there)."""
        raise NotImplementedError

    def _begin(self, conn, write):
        """Start a transaction; with ``write``, one that holds the write lock."""
        raise NotImplementedError

    def _tables(self, conn):
        """The names of the dpsk tables present."""
        raise NotImplementedError

    def _problem(self, exc):
        """A message for a driver error ``exc`` (what was found, what to do)."""
        raise NotImplementedError

    def _retryable(self, exc):
        """Whether a transaction that failed at its start may be tried once more."""
        return False

    def _sql(self, sql):
        return sql

    def _before_hold(self):
        """A check before each transaction (SQLite: is it still the same file?)."""

    def _detach(self, conn):
        """In a forked child: make the parent's connection harmless to drop."""

    def attach(self, budget=None):
        """Make sure a ledger is there (creating it with ``budget`` if allowed and
        absent), check it, and read its budget."""
        raise NotImplementedError

    # -- connections ---------------------------------------------------------------------
    def _run(self, conn, sql, params=()):
        return conn.execute(self._sql(sql), params)

    def _connection(self):
        """This process's connection, checked (identity, version) when new."""
        pid = os.getpid()
        if self._conn is not None and self._pid == pid:
            return self._conn
        if self._conn is not None:
            _ABANDONED.append(self._conn)
            self._conn = None
        conn = self._guard(self._connect)
        try:
            self._guard(self._identify, conn)
        except BaseException:
            _close_quietly(conn)
            raise
        self._conn, self._pid = conn, pid
        _CONNECTED.add(self)
        return conn

    def close(self):
        """Close this process's connection (a copy reconnects when next used)."""
        if self._conn is not None and self._pid == os.getpid():
            _close_quietly(self._conn)
        self._conn = None

    def _guard(self, func, *args):
        try:
            return func(*args)
        except self.driver_errors as exc:
            raise LedgerStoreError(self._problem(exc)) from None

    # -- what is there -------------------------------------------------------------------
    def _identify(self, conn):
        """Check that ``conn`` reaches a dpsk ledger of a known version (upgrading
        an older one when writing), the one this handle belongs to."""
        tables = self._tables(conn)
        if not tables:
            raise LedgerStoreError(
                f"{self.location} holds no dpsk ledger. dpsk does not write into a "
                "database that is not one of its ledgers (create a ledger in a new file, "
                "or another database or schema)." + self._not_there_hint())
        if tables != set(TABLES):
            raise self._damaged(f"only the tables {sorted(tables)} are there")
        try:
            meta = dict(self._run(conn, "SELECT key, value FROM dpsk_meta").fetchall())
            version = int(meta["schema_version"])
            store_id = meta["store_id"]
        except (KeyError, ValueError, TypeError):
            raise self._damaged("its version record cannot be read") from None
        if version > SCHEMA_VERSION:
            raise LedgerStoreError(
                f"The ledger at {self.location} was written by a newer dpsk (schema "
                f"version {version}; this dpsk reads up to {SCHEMA_VERSION}). Nothing was "
                "read or changed. Upgrade dpsk (`pip install -U dpsk`) to use it.")
        if version < SCHEMA_VERSION:
            self._upgrade(conn, version)
        if self.store_id is not None and store_id != self.store_id:
            raise LedgerStoreError(
                f"The ledger at {self.location} is not the one this BudgetAccountant was "
                "opened on (another ledger, or one put back from a copy), so spends "
                "through it are refused rather than recorded where its ledger would not "
                "see them. Open the ledger again with BudgetAccountant.open(...).")
        row = self._run(conn, "SELECT budget FROM dpsk_ledger WHERE id = 1").fetchone()
        try:
            budget = decode_budget(row[0])
        except (TypeError, ValueError, KeyError):
            raise self._damaged("its budget cannot be read") from None
        self.store_id, self.created, self.budget = store_id, meta.get("created"), budget

    def _not_there_hint(self):
        return ""

    def _damaged(self, what):
        return LedgerStoreError(
            f"The ledger at {self.location} is damaged: {what}. Its total is unknown, so "
            "nothing was read or spent, and dpsk will not repair or reset it. Restore it "
            "from a backup only if no release was made since that backup (or re-record "
            "them), since every release missing from it would be spent again.")

    def _upgrade(self, conn, version):
        if self.read_only:
            raise LedgerStoreError(
                f"The ledger at {self.location} has schema version {version}, older than "
                f"this dpsk's {SCHEMA_VERSION}; upgrading it needs write access. Open it "
                "once with BudgetAccountant.open(...) (not read-only) to upgrade it.")
        self._begin(conn, True)
        try:
            found = int(dict(self._run(conn, "SELECT key, value FROM dpsk_meta")
                             .fetchall())["schema_version"])
            for step in range(found, SCHEMA_VERSION):
                if step not in MIGRATIONS:
                    raise LedgerStoreError(
                        f"The ledger at {self.location} has schema version {step}, which "
                        "this dpsk cannot upgrade; nothing was changed.")
                for sql in MIGRATIONS[step]:
                    self._run(conn, sql)
            self._run(conn, "UPDATE dpsk_meta SET value = ? WHERE key = 'schema_version'",
                      (str(SCHEMA_VERSION),))
            self._run(conn, "COMMIT")
        except BaseException:
            _rollback_quietly(conn, self)
            raise

    def _create(self, conn, budget):
        """Write the tables of a new ledger with ``budget`` (inside a transaction)."""
        for sql in _SCHEMA:
            self._run(conn, sql)
        now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        for key, value in (("schema_version", str(SCHEMA_VERSION)),
                           ("store_id", secrets.token_hex(16)), ("created", now)):
            self._run(conn, "INSERT INTO dpsk_meta (key, value) VALUES (?, ?)", (key, value))
        filtered = budget[3] is not None
        self._run(conn, "INSERT INTO dpsk_ledger (id, budget, state) VALUES (1, ?, ?)",
                  (encode_budget(*budget), json.dumps(Tally.empty(filtered).to_json())))

    def check_rows(self):
        """The tally and the rows must agree on how many releases there are."""
        with self.hold(False) as held:
            count, low, high = self._guard(lambda: self._run(
                self._conn, "SELECT COUNT(*), COALESCE(MIN(seq), 1), "
                "COALESCE(MAX(seq), 0) FROM dpsk_events").fetchone())
            if (count, high) != (held.tally.count, held.tally.count) or low != 1:
                raise self._damaged(
                    f"its totals count {held.tally.count} releases but {count} rows are "
                    "there")

    # -- transactions --------------------------------------------------------------------
    @contextmanager
    def hold(self, write):
        """One transaction; yield a :class:`~dpsk.accounting._tally.Held`.

        With ``write`` the ledger's write lock is held until the transaction
        commits, when the ``with`` block ends without an exception; any
        exception rolls it back.
        """
        if write and self.read_only:
            raise LedgerStoreError(
                f"The ledger at {self.location} was opened read-only, so nothing can be "
                "spent through it. Open it with BudgetAccountant.open(...) to spend.")
        conn, tally = self._start(write)
        try:
            held = Held(tally, lambda: self._guard(self._records, conn),
                        self._appender(conn) if write else None)
            yield held
            self._guard(self._run, conn, "COMMIT")
        except BaseException as exc:
            _rollback_quietly(conn, self)
            if isinstance(exc, self.driver_errors):
                self._drop()
                raise LedgerStoreError(self._problem(exc)) from None
            if isinstance(exc, LedgerStoreError) and write:
                self._drop()
            raise
        self._seen = max(self._seen, held.tally.count)

    def _start(self, write):
        """Begin a transaction and read the tally; a connection found dead at the
        start (nothing written yet) is replaced once."""
        self._before_hold()
        for attempt in (1, 2):
            conn = self._connection()
            try:
                self._begin(conn, write)
                row = self._run(conn, "SELECT state FROM dpsk_ledger WHERE id = 1"
                                + (self.lock_clause if write else "")).fetchone()
                break
            except self.driver_errors as exc:
                _rollback_quietly(conn, self)
                self._drop()
                if attempt == 2 or not self._retryable(exc):
                    raise LedgerStoreError(self._problem(exc)) from None
        try:
            tally = Tally.from_json(json.loads(row[0]))
        except (TypeError, ValueError):
            _rollback_quietly(conn, self)
            raise self._damaged("its running totals cannot be read") from None
        if tally.count < self._seen:
            _rollback_quietly(conn, self)
            raise LedgerStoreError(
                f"The ledger at {self.location} now records {tally.count} releases, fewer "
                f"than the {self._seen} this process saw in it: it was put back from an "
                "older copy, and the missing releases would be spent again. Nothing was "
                "spent. Restore the newest copy, or re-record the missing releases.")
        return conn, tally

    def _drop(self):
        if self._conn is not None and self._pid == os.getpid():
            _close_quietly(self._conn)
        self._conn = None

    def _appender(self, conn):
        def append(entries, after):
            first = after.count - len(entries) + 1
            for seq, (event, meta) in enumerate(entries, start=first):
                self._run(conn, _INSERT, _row(seq, event, meta))
            self._run(conn, "UPDATE dpsk_ledger SET state = ? WHERE id = 1",
                      (json.dumps(after.to_json()),))
        return append

    def _records(self, conn):
        out = []
        for expected, row in enumerate(self._run(conn, _SELECT).fetchall(), start=1):
            seq, event, time, estimator, params, label, user, host, pid = row
            try:
                if seq != expected:
                    raise ValueError("a release is missing")
                event = _event_from_dict(json.loads(event))
                params = json.loads(params)
            except (TypeError, ValueError) as exc:
                raise self._damaged(f"release {seq} cannot be read ({exc})") from None
            out.append((event, {"time": time or None, "estimator": estimator,
                                "params": params, "label": label, "user": user,
                                "host": host, "pid": pid}))
        return out

    # -- copies --------------------------------------------------------------------------
    def ref(self):
        """What a pickled copy carries: where the store is and which one it is."""
        return {"kind": self.kind, "location": self.location, "store_id": self.store_id,
                "read_only": self.read_only}

    def reachable(self):
        """Whether a spend may work here, without I/O beyond a stat."""
        return True

    def describe(self):
        """A short name of the backend and place, for messages and ``repr``."""
        return f"{self.kind}:{self.location}"


def _after_fork_in_child():
    # The child's copies open their own connections when first used; the
    # inherited ones are detached now, before anything in the child (its exit
    # included) could close them.
    for store in list(_CONNECTED):
        conn, store._conn = store._conn, None
        if conn is not None:
            try:
                store._detach(conn)
            except Exception:  # noqa: BLE001 - a fork hook must not raise
                pass
            _ABANDONED.append(conn)
    _CONNECTED.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _close_quietly(conn):
    try:
        conn.close()
    except Exception:  # noqa: BLE001 - closing a broken connection may fail too
        pass


def _rollback_quietly(conn, store):
    try:
        store._run(conn, "ROLLBACK")
    except Exception:  # noqa: BLE001 - no transaction, or the connection is gone
        pass
