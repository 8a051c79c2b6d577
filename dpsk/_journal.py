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
"""

import json
import os
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

    __slots__ = ("path", "owner_pid", "owner_start")

    def __init__(self, path, owner_pid, owner_start):
        self.path = path
        self.owner_pid = owner_pid
        self.owner_start = owner_start

    @classmethod
    def create(cls, events):
        """Write a new journal owned by this process, holding ``events``."""
        _require_locks()
        pid = os.getpid()
        start = _process_state(pid)[1]
        fd, path = tempfile.mkstemp(prefix="dpsk-ledger-", suffix=".jsonl")
        header = {"dpsk_ledger_journal": _FORMAT, "owner_pid": pid, "owner_start": start}
        with os.fdopen(fd, "w") as handle:
            handle.write(json.dumps(header) + "\n")
            handle.writelines(json.dumps(e._to_dict()) + "\n" for e in events)
            handle.flush()
            os.fsync(handle.fileno())
        return cls(path, pid, start)

    def __getstate__(self):
        return {"path": self.path, "owner_pid": self.owner_pid,
                "owner_start": self.owner_start}

    def __setstate__(self, state):
        self.path = state["path"]
        self.owner_pid = state["owner_pid"]
        self.owner_start = state["owner_start"]

    def problem(self):
        """Why this journal cannot be used, or None. Reads no entries."""
        if self.owner_pid is None:
            return (
                f"This BudgetAccountant is a copy saved by an older dpsk whose journal "
                f"({self.path}) does not name its owner process, so it cannot be told "
                "from an orphan; spends through it are refused. " + _FIX
            )
        if not _owner_alive(self.owner_pid, self.owner_start):
            return (
                f"This BudgetAccountant is a copy of a ledger owned by process "
                f"{self.owner_pid}, which has ended without closing it (killed?). Its "
                f"journal ({self.path}) is orphaned: a spend recorded there would reach "
                "no ledger anybody holds, so spends are refused and the journal is left "
                "as it was. " + _FIX
            )
        if not os.path.exists(self.path):
            return (
                "This BudgetAccountant is a copy of a ledger whose journal no longer "
                f"exists ({self.path}): the process that owned it has ended. Spends "
                "through this copy cannot be recorded, so they are refused. " + _FIX
            )
        return None

    @contextmanager
    def locked(self):
        """Hold the journal exclusively; yield ``(events, append)``.

        ``append(event)`` writes one event and makes it durable before returning.
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
                lines = handle.read().splitlines()
                events = self._parse(lines[1:])

                def append(event):
                    handle.seek(0, os.SEEK_END)
                    handle.write(json.dumps(event._to_dict()) + "\n")
                    handle.flush()
                    os.fsync(handle.fileno())
                    events.append(event)

                yield events, append
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)

    def _parse(self, lines):
        try:
            return [_event_from_dict(json.loads(line)) for line in lines if line.strip()]
        except (ValueError, TypeError):
            # A half-written line means a writer died mid-spend: its cost is
            # unknown, so nothing can be checked against this ledger any more.
            raise LedgerUnreachableError(
                f"The ledger journal {self.path} is damaged (a process died while "
                "writing to it), so its total is unknown and spends are refused. " + _FIX
            ) from None


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
