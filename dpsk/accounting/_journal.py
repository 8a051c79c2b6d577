"""Cross-process transport of a ledger: a journal file under an OS file lock.

A :class:`~dpsk.BudgetAccountant` keeps its events in memory until a copy of it
must exist in another process (it is pickled, or the process forks). Then it
moves them to a journal: a private temporary file (mode 0600) whose first line
names the *owner* process (pid and start time) and whose other lines are the
events as JSON. Every copy, in any process on this machine, reads and appends
under an exclusive ``flock``, so checks and spends are atomic across processes.

The owner removes the journal when its ledger object dies. A copy whose journal
is gone, or whose owner process is gone (killed before it could clean up, or
its pid reused), refuses to check or spend: a spend it recorded would reach no
ledger anybody holds, and charging an orphaned file silently is exactly the
loss this module exists to prevent.

Copies on other machines (a fit submitted to a Dask worker, joblib's Dask
backend). The header also holds a random *journal id* and the owner's *host*
(host name and boot id), and a pickled copy carries both. A copy checks, before
anything else, that the file at the journal's path is *this* journal (same id):
on another machine the path is usually absent, or could be an unrelated file,
and either way the copy refuses rather than record a spend nobody would see.
Where the path names the same file on every machine (the journal directory on
shared storage with working ``flock``, chosen with the ``DPSK_JOURNAL_DIR``
environment variable in the owner's process), the id matches and the copy
spends through it under the same lock. On another host the owner's liveness
cannot be read from ``/proc``; there the journal's presence is the sign of life
(the owner removes it when its ledger dies; an owner *killed* without clean-up
leaves a journal that remote copies cannot tell from a live one).
"""

import json
import os
import secrets
import socket
import tempfile
from contextlib import contextmanager

try:  # POSIX only; without it, ledgers refuse to cross process boundaries.
    import fcntl
except ImportError:  # pragma: no cover - exercised on Windows only
    fcntl = None

from ._events import _event_from_dict

__all__ = ["LedgerUnreachableError"]

_FORMAT = 1

_FIX = (
    "To fit an estimator that holds this copy, give it a ledger of this process: "
    "`estimator.set_params(accountant=BudgetAccountant(...))`, or "
    "`set_params(accountant=None)` for the default ledger."
)
_KEEP = (
    " A budget that outlives the process that holds it is a stored ledger: "
    "`BudgetAccountant.open(path, epsilon=...)`."
)


class LedgerUnreachableError(RuntimeError):
    """Raised when a copy of a ledger cannot reach the ledger it was copied from.

    This happens to a model loaded (unpickled) after the process that owned its
    ledger has ended or been killed, and on platforms without POSIX file locks.
    Nothing is recorded; give the estimator a ledger of the current process with
    ``estimator.set_params(accountant=BudgetAccountant(...))``.
    """


def _process_state(pid):
    """Return ``(alive, start_time)`` of process ``pid``; ``start_time`` may be None.

    The start time (Linux ``/proc``) tells a live owner from an unrelated
    process that was given the same pid later. A zombie (killed, not yet
    reaped) counts as dead.
    """
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read().decode("ascii", "replace")
    except FileNotFoundError:
        if os.path.isdir("/proc/self"):
            return False, None
    except OSError:
        pass
    else:
        fields = stat[stat.rfind(")") + 2:].split()
        return fields[0] not in ("Z", "X"), fields[19]
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False, None
    except PermissionError:
        return True, None
    return True, None


def _host_identity():
    """This machine: host name and kernel boot id (containers differ by host name)."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as handle:
            boot = handle.read().strip()
    except OSError:
        boot = ""
    return f"{socket.gethostname()}|{boot}"


def _journal_dir():
    """Where new journals go: ``$DPSK_JOURNAL_DIR`` (shared storage), else the temp dir."""
    return os.environ.get("DPSK_JOURNAL_DIR") or None


def _owner_alive(pid, start):
    if pid == os.getpid():
        return True
    alive, now_start = _process_state(pid)
    return alive and (start is None or now_start is None or now_start == start)


def _require_locks():
    if fcntl is None:  # pragma: no cover - Windows
        raise LedgerUnreachableError(
            "A BudgetAccountant cannot be shared with another process on this platform "
            "(no POSIX file locks), and a copy would lose its spends. Use n_jobs=1 or "
            "joblib's threading backend."
        )


class _Journal:
    """One journal file and the owner process recorded in its header."""

    __slots__ = ("path", "owner_pid", "owner_start", "journal_id", "host", "_read")

    def __init__(self, path, owner_pid, owner_start, journal_id=None, host=None):
        self.path = path
        self.owner_pid = owner_pid
        self.owner_start = owner_start
        self.journal_id = journal_id
        self.host = host
        # (position, entries): what this object has parsed so far. The file only
        # grows, so each lock reads just the lines appended since; re-parsing the
        # whole journal on every spend made a long session's fits quadratic.
        self._read = None

    @classmethod
    def create(cls, entries):
        """Write a new journal owned by this process, holding ``entries``
        (``(event, meta)`` pairs, oldest first)."""
        _require_locks()
        pid = os.getpid()
        start = _process_state(pid)[1]
        journal_id, host = secrets.token_hex(16), _host_identity()
        fd, path = tempfile.mkstemp(prefix="dpsk-ledger-", suffix=".jsonl", dir=_journal_dir())
        header = {"dpsk_ledger_journal": _FORMAT, "owner_pid": pid, "owner_start": start,
                  "journal_id": journal_id, "host": host}
        with os.fdopen(fd, "w") as handle:
            handle.write(json.dumps(header) + "\n")
            handle.writelines(_line(entry) for entry in entries)
            handle.flush()
            os.fsync(handle.fileno())
        return cls(path, pid, start, journal_id, host)

    def __getstate__(self):
        return {"path": self.path, "owner_pid": self.owner_pid,
                "owner_start": self.owner_start, "journal_id": self.journal_id,
                "host": self.host}

    def __setstate__(self, state):
        self.path = state["path"]
        self.owner_pid = state["owner_pid"]
        self.owner_start = state["owner_start"]
        # Copies saved before journals had an id: same machine, no id check.
        self.journal_id = state.get("journal_id")
        self.host = state.get("host")
        self._read = None

    def _file_id(self):
        """The journal id written in the header of the file at ``path`` (None if none)."""
        try:
            with open(self.path) as handle:
                header = json.loads(handle.readline())
            return header.get("journal_id") if isinstance(header, dict) else None
        except (OSError, ValueError):
            return None

    def problem(self):
        """Why this journal cannot be used, or None. Reads the header, no entries."""
        if self.owner_pid is None:
            return (
                f"This BudgetAccountant is a copy saved by an older dpsk whose journal "
                f"({self.path}) does not name its owner process, so it cannot be told "
                "from an orphan; spends through it are refused. " + _FIX
            )
        if self.host is not None and self.host != _host_identity():
            return self._remote_problem()
        if not _owner_alive(self.owner_pid, self.owner_start):
            if not os.path.exists(self.path):
                # The owner closed its ledger (removed the journal) and then ended.
                return (
                    f"This BudgetAccountant is a copy of a ledger owned by process "
                    f"{self.owner_pid}, which has ended; it closed the ledger and removed "
                    f"its journal ({self.path}), so the ledger no longer exists and spends "
                    "through this copy are refused. " + _FIX + _KEEP
                )
            return (
                f"This BudgetAccountant is a copy of a ledger owned by process "
                f"{self.owner_pid}, which has ended without closing it (killed?). Its "
                f"journal ({self.path}) is orphaned: a spend recorded there would reach "
                "no ledger anybody holds, so spends are refused and the journal is left "
                "as it was. " + _FIX + _KEEP
            )
        if not os.path.exists(self.path):
            # The owner runs, but the ledger this copy was made from is gone.
            return (
                "This BudgetAccountant is a copy of a ledger that no longer exists: its "
                f"owner, process {self.owner_pid}, dropped it and removed its journal "
                f"({self.path}). Spends through this copy cannot be recorded, so they are "
                "refused. " + _FIX + _KEEP
            )
        return self._id_problem()

    def _id_problem(self):
        if self.journal_id is not None and self._file_id() != self.journal_id:
            return (
                f"The file at this BudgetAccountant's journal path ({self.path}) is not its "
                "journal (another ledger's, or replaced), so spends through this copy are "
                "refused rather than recorded where its ledger would not see them. " + _FIX
            )
        return None

    def _remote_problem(self):
        """On another machine: the journal must be reachable there (shared storage)."""
        if not os.path.exists(self.path):
            return (
                "This BudgetAccountant is a copy of a ledger held on another machine, and "
                f"its journal ({self.path}) is not reachable here, so spends through it are "
                "refused, never recorded to a stray local file. Fit on the client with Dask "
                "arrays (the data stays on the cluster, the spend on the client), give the "
                "estimator a ledger of this machine, or create the ledger with its journal "
                "on shared storage (DPSK_JOURNAL_DIR). " + _FIX
            )
        return self._id_problem()

    @contextmanager
    def locked(self):
        """Hold the journal exclusively; yield ``(entries, append)``.

        ``entries`` are the recorded ``(event, meta)`` pairs; ``append(entry)``
        writes one and makes it durable before returning.
        """
        _require_locks()
        problem = self.problem()
        if problem is not None:
            raise LedgerUnreachableError(problem)
        try:
            handle = open(self.path, "r+")
        except FileNotFoundError:
            raise LedgerUnreachableError(self.problem() or _FIX) from None
        except OSError as exc:
            # Another user's journal (mode 0600), or a full or read-only disk.
            raise LedgerUnreachableError(
                f"The ledger journal {self.path} cannot be opened ({exc.strerror}), so "
                "spends through this copy are refused. " + _FIX
            ) from None
        with handle:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
            try:
                # The owner may have died between the check above and the lock.
                problem = self.problem()
                if problem is not None:
                    raise LedgerUnreachableError(problem)
                entries = self._entries(handle)

                def append(entry):
                    handle.seek(0, os.SEEK_END)
                    handle.write(_line(entry))
                    handle.flush()
                    os.fsync(handle.fileno())
                    entries.append(entry)
                    self._read = (handle.tell(), entries)

                yield entries, append
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)

    def _entries(self, handle):
        """Every recorded entry, parsing only what was appended since the last read.

        The list is this object's own, extended in place (copying it on every
        lock would keep the session quadratic); the ledger only reads it, and
        ``append`` extends it.
        """
        end = handle.seek(0, os.SEEK_END)
        if self._read is not None and self._read[0] <= end:
            position, entries = self._read
            handle.seek(position)
            entries.extend(self._parse(handle.read().splitlines()))
        else:
            handle.seek(0)
            entries = self._parse(handle.read().splitlines()[1:])
        self._read = (handle.tell(), entries)
        return entries

    def _parse(self, lines):
        try:
            return [_entry(json.loads(line)) for line in lines if line.strip()]
        except (ValueError, TypeError, AttributeError):
            # A half-written line means a writer died mid-spend: its cost is
            # unknown, so nothing can be checked against this ledger any more.
            raise LedgerUnreachableError(
                f"The ledger journal {self.path} is damaged (a process died while "
                "writing to it), so its total is unknown and spends are refused. " + _FIX
            ) from None


def _line(entry):
    """One journal line: the event's fields, and its meta record under ``"meta"``."""
    event, meta = entry
    return json.dumps({**event._to_dict(), "meta": meta}) + "\n"


def _entry(data):
    meta = data.pop("meta", None)
    return _event_from_dict(data), meta


def _remove_owned(path, owner_pid):
    """Finalizer of the owner's ledger: remove the journal, in the owner only.

    Forked children inherit the owner's finalizers; they must not remove a
    journal their parent still uses when they exit.
    """
    if os.getpid() != owner_pid:
        return
    try:
        os.remove(path)
    except OSError:
        pass
