"""Where a stored ledger lives: a path or URL to a store of the right backend.

``where`` (for :meth:`dpsk.BudgetAccountant.open` and ``python -m dpsk
ledger``) is one of

* a file path (``"adult-budget.db"``, a :class:`pathlib.Path`): a SQLite
  file; relative paths are made absolute when the ledger is opened, so copies
  in worker processes reach the same file;
* ``sqlite:///relative/path.db`` or ``sqlite:////absolute/path.db`` (the form
  SQLAlchemy uses);
* ``postgresql://user@host:port/database`` (also ``postgres://`` and
  ``postgresql+psycopg://``): a PostgreSQL database, through psycopg 3.
"""

import os

from ._postgres import PostgresStore
from ._sqlite import SQLiteStore

__all__ = ["locate", "make_store", "reattach"]

_POSTGRES = ("postgresql", "postgres", "postgresql+psycopg")
_BACKENDS = {"sqlite": SQLiteStore, "postgresql": PostgresStore}


def locate(where):
    """``(kind, location)`` of a ledger: ``("sqlite", absolute path)`` or
    ``("postgresql", url)``. Raises ValueError for anything else."""
    if isinstance(where, os.PathLike):
        where = os.fspath(where)
    if not isinstance(where, str) or not where.strip():
        raise ValueError(
            f"A ledger's place must be a file path or a sqlite:/// or postgresql:// URL, "
            f"got {where!r}.")
    scheme, sep, rest = where.partition("://")
    if not sep:
        return "sqlite", os.path.abspath(os.path.expanduser(where))
    scheme = scheme.lower()
    if scheme == "sqlite":
        if not rest.startswith("/") or rest[1:] in ("", ":memory:"):
            raise ValueError(
                f"{where!r} names no file. Use sqlite:///relative/path.db or "
                "sqlite:////absolute/path.db; a ledger in memory is BudgetAccountant(...).")
        return "sqlite", os.path.abspath(os.path.expanduser(rest[1:]))
    if scheme in _POSTGRES:
        return "postgresql", "postgresql://" + rest
    raise ValueError(
        f"Unknown kind of ledger store {scheme!r} in {where!r}: use a file path, "
        "sqlite:///path or postgresql://...")


def make_store(where, *, read_only=False):
    """A store object for ``where`` (no I/O yet)."""
    kind, location = locate(where)
    return _BACKENDS[kind](location, read_only=read_only)


def reattach(ref):
    """The store a pickled copy named (see ``Store.ref``), without I/O: it
    connects, never creates, and checks it is the same store when first used."""
    return _BACKENDS[ref["kind"]](ref["location"], read_only=ref.get("read_only", False),
                                  store_id=ref["store_id"])
