"""A stored ledger in a SQLite file: the default, in the standard library.

The file is in WAL mode (readers do not wait for a spend) with
``synchronous=FULL`` (a committed spend survives a power cut, not only a
killed process). A spend takes SQLite's write lock with ``BEGIN IMMEDIATE``;
processes that find it taken wait up to :data:`BUSY_SECONDS`.

A new ledger is written whole in a temporary file beside the target and then
linked to the target name, which fails if the name exists: the file at the
path is either absent or a complete ledger, never a half-made one, and of two
processes creating the same ledger one wins and the other opens it. So a file
that is there but empty or unreadable is refused, never taken for a ledger to
create: it may be a ledger that was truncated.

SQLite's locks are those of the local file system: several processes and
threads on one machine share a ledger file safely; machines that share a
network file system should share a PostgreSQL ledger instead (SQLite's own
documentation warns against WAL over a network).
"""

import os
import secrets
import sqlite3
from urllib.parse import quote

from ._store import LedgerStoreError, Store

__all__ = ["BUSY_SECONDS", "SQLiteStore"]

#: How long a spend waits for the write lock held by another process.
BUSY_SECONDS = 30.0


class SQLiteStore(Store):
    """A ledger in the SQLite file at ``location`` (an absolute path)."""

    kind = "sqlite"
    driver_errors = (sqlite3.Error,)

    def __init__(self, location, *, read_only=False, store_id=None):
        super().__init__(location, read_only=read_only, store_id=store_id)
        self._file = None  # (device, inode) of the file the connection opened

    def _connect(self):
        mode = "ro" if self.read_only else "rw"  # "rw" never creates a file
        conn = sqlite3.connect(f"file:{quote(self.location)}?mode={mode}", uri=True,
                               timeout=BUSY_SECONDS, isolation_level=None,
                               check_same_thread=False)
        try:
            if not self.read_only:
                conn.execute("PRAGMA synchronous = FULL")
            info = os.stat(self.location)
        except BaseException:
            conn.close()
            raise
        self._file = (info.st_dev, info.st_ino)
        return conn

    def _begin(self, conn, write):
        conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")

    def _tables(self, conn):
        rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
        return {name for (name,) in rows if name.startswith("dpsk_")}

    def _before_hold(self):
        if self._conn is None or self._pid != os.getpid():
            return
        try:
            info = os.stat(self.location)
        except FileNotFoundError:
            self._drop()
            raise LedgerStoreError(
                f"The ledger file {self.location} is gone (moved or removed), so nothing "
                "can be spent through it. Put it back, or open the ledger where it is "
                "now.") from None
        if (info.st_dev, info.st_ino) != self._file:
            # Replaced (a copy moved over it): reconnect, and check it is this ledger.
            self._drop()

    def _problem(self, exc):
        text = str(exc)
        where = self.location
        if "locked" in text or "busy" in text:
            return (f"The ledger {where} stayed locked by another process for more than "
                    f"{BUSY_SECONDS:g} s; nothing was spent. Try again.")
        if "readonly" in text or "read-only" in text:
            return (f"The ledger {where} cannot be written (SQLite: {text}); nothing was "
                    "spent. " + _READ_ONLY_HINT)
        if "unable to open" in text:
            if not os.path.exists(where):
                return (f"There is no ledger file at {where} (moved or removed?); nothing "
                        "was spent.")
            return (f"The ledger file {where} cannot be opened (SQLite: {text}); nothing "
                    "was spent. Check its permissions and those of its folder.")
        if not isinstance(exc, sqlite3.OperationalError):
            return (f"The file {where} is damaged or not a dpsk ledger (SQLite: {text}). "
                    "Its total is unknown, so nothing was read or spent, and dpsk will not "
                    "repair or re-create it.")
        return f"The ledger {where} could not be used (SQLite: {text}); nothing was spent."

    def attach(self, budget=None):
        path = self.location
        if not os.path.exists(path):
            if budget is None or self.read_only:
                raise LedgerStoreError(
                    f"There is no ledger at {path}. To create one, give its budget: "
                    "BudgetAccountant.open(path, epsilon=..., delta=...).")
            self._create_file(budget)
        info = os.stat(path)
        if info.st_size == 0:
            raise LedgerStoreError(
                f"The file {path} is empty: not a ledger, or a ledger truncated to "
                "nothing. dpsk does not create a new budget over a file that is there "
                "(it could hide spends); remove the file yourself to start a new ledger.")
        if not self.read_only:
            self._check_writable(info)
        conn = self._connection()
        report = self._guard(lambda: conn.execute("PRAGMA quick_check").fetchall())
        if report != [("ok",)]:
            raise self._damaged(f"SQLite's integrity check reports {report[0][0]!r}")
        self.check_rows()

    def _check_writable(self, info):
        path = self.location
        if not info.st_mode & 0o222 or not os.access(path, os.W_OK):
            raise LedgerStoreError(f"The ledger file {path} is read-only. " + _READ_ONLY_HINT)
        folder = os.path.dirname(path)
        if not os.access(folder, os.W_OK | os.X_OK):
            raise LedgerStoreError(
                f"The folder of the ledger {path} cannot be written, and SQLite keeps its "
                "write-ahead log beside the file. " + _READ_ONLY_HINT)

    def _create_file(self, budget):
        """Write a complete new ledger beside ``location``, then link it into place."""
        path = self.location
        folder = os.path.dirname(path)
        if not os.path.isdir(folder):
            raise LedgerStoreError(f"Cannot create the ledger {path}: no folder {folder}.")
        temp = os.path.join(folder, f".{os.path.basename(path)}.{secrets.token_hex(8)}.tmp")
        try:
            os.close(os.open(temp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))
            conn = sqlite3.connect(temp, isolation_level=None)
            try:
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute("PRAGMA synchronous = FULL")
                conn.execute("BEGIN IMMEDIATE")
                self._create(conn, budget)
                conn.execute("COMMIT")
            finally:
                conn.close()
            try:
                os.link(temp, path)
            except FileExistsError:
                pass  # created by another process meanwhile: that one is opened
            _sync_folder(folder)
        except (OSError, sqlite3.Error) as exc:
            raise LedgerStoreError(
                f"Cannot create the ledger {path} ({exc}); nothing was created.") from None
        finally:
            for leftover in (temp, temp + "-wal", temp + "-shm"):
                try:
                    os.remove(leftover)
                except OSError:
                    pass

    def reachable(self):
        return os.path.exists(self.location)

    def describe(self):
        return self.location


_READ_ONLY_HINT = (
    "Spends could not be recorded, so none is made: read it with "
    "BudgetAccountant.open(path, read_only=True) or `python -m dpsk ledger show PATH`, "
    "or make the file and its folder writable to spend."
)


def _sync_folder(folder):
    """Make the new name durable (POSIX; elsewhere the rename is left to the OS)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
