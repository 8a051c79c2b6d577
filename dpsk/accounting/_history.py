"""What a ledger writes about each release, and how a person reads it back.

Every recorded event comes with a *meta* record: when (UTC, to the second),
which estimator class released, its public parameters, the ledger's user label,
the login name, the host and the process id. :meth:`dpsk.BudgetAccountant.history`
turns events and meta into rows (a pandas DataFrame, or a list of dicts), and
:func:`export_rows` writes them as JSON or CSV.

The privacy rule for what is written
-------------------------------------
A stored ledger is read by more people, and kept longer, than any model. So
everything here is a function of public parameters and the spend only:

* **public parameters** are the entries of ``get_params(deep=False)`` whose
  value is ``None``, a bool, an integer, a real number or a string. Anything
  else (arrays, lists, dicts, estimators, the ledger itself) is left out,
  because a container can carry data a user put there (``classes=np.unique(y)``,
  a fitted transformer in a pipeline);
* ``accountant`` is left out (it is the ledger), and so is ``random_state``:
  an integer seed lets whoever reads it draw the release's noise again, and
  with the released model that gives the noise-free fit;
* nothing computed from the data (no ``n_samples``, no score, no time spent
  fitting) and nothing a mechanism keeps secret (a search's number of runs:
  a search spends once, before its runs, with its public event). The time of
  a spend is the one thing that moves with the data's running time, the side
  channel the docs leave open; it is written to the second only.
"""

import csv
import getpass
import io
import json
import math
import os
import socket
from datetime import datetime, timezone
from numbers import Integral, Real

import numpy as np

__all__ = ["COLUMNS", "export_rows", "history_rows", "public_params", "release_meta"]

#: The columns of a history, in order.
COLUMNS = ("seq", "time", "kind", "epsilon", "delta", "estimator", "params", "label",
           "user", "host", "pid", "event")

#: Parameters never written, whatever their type (see the module docstring).
_NEVER = frozenset({"accountant", "random_state"})
_SKIP = object()


def _scalar(value):
    """``value`` as a JSON scalar, or ``_SKIP`` if it is not a public scalar."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, Integral):
        return int(value)
    if isinstance(value, Real) and not isinstance(value, np.ndarray):
        value = float(value)
        return value if math.isfinite(value) else repr(value)
    return _SKIP


def public_params(source):
    """The parameters of ``source`` a history may hold (see the module docstring).

    Parameters
    ----------
    source : estimator or None
        Anything with ``get_params(deep=False)``.

    Returns
    -------
    dict
        Name to scalar, sorted by name; empty when ``source`` has no parameters.
    """
    get_params = getattr(source, "get_params", None)
    if get_params is None:
        return {}
    try:
        params = get_params(deep=False)
    except Exception:  # noqa: BLE001 - a history entry must never stop a spend
        return {}
    out = {}
    for name in sorted(params):
        if name in _NEVER:
            continue
        value = _scalar(params[name])
        if value is not _SKIP:
            out[name] = value
    return out


def _class_name(source):
    if source is None:
        return None
    cls = type(source)
    if cls.__module__.split(".")[0] == "dpsk":
        return cls.__name__
    return f"{cls.__module__}.{cls.__qualname__}"


def _user():
    try:
        return getpass.getuser()
    except Exception:  # noqa: BLE001 - no login name (a container without one)
        return None


def release_meta(source=None, label=None):
    """The meta record of a release made now, in this process, by ``source``."""
    return {
        "time": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "estimator": _class_name(source),
        "params": public_params(source),
        "label": label,
        "user": _user(),
        "host": socket.gethostname(),
        "pid": os.getpid(),
    }


def history_rows(records):
    """One dict per ``(event, meta)`` record, with the keys of :data:`COLUMNS`."""
    rows = []
    for seq, (event, meta) in enumerate(records, start=1):
        meta = meta or {}
        rows.append({
            "seq": seq,
            "time": meta.get("time"),
            "kind": type(event).__name__,
            "epsilon": event.epsilon,
            "delta": event.delta,
            "estimator": meta.get("estimator"),
            "params": dict(meta.get("params") or {}),
            "label": meta.get("label"),
            "user": meta.get("user"),
            "host": meta.get("host"),
            "pid": meta.get("pid"),
            "event": event._to_dict(),
        })
    return rows


def rows_frame(rows):
    """``rows`` as a pandas DataFrame (pandas is optional)."""
    try:
        import pandas as pd
    except ImportError as exc:
        raise ImportError(
            "BudgetAccountant.history() returns a pandas DataFrame, and pandas is not "
            "installed. Install it (`pip install pandas`), or call "
            "history(as_frame=False) for a list of dicts."
        ) from exc
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    if not rows:
        return frame
    frame["time"] = pd.to_datetime(frame["time"], utc=True)
    return frame


def export_rows(rows, summary, fmt):
    """The text of a history export.

    Parameters
    ----------
    rows : list of dict
        From :func:`history_rows`.
    summary : dict
        The ledger's budget and totals (JSON only: a CSV holds the releases).
    fmt : {"json", "csv"}

    Returns
    -------
    str
    """
    if fmt == "json":
        return json.dumps({"ledger": summary, "releases": rows}, indent=2, default=str) + "\n"
    if fmt != "csv":
        raise ValueError(f"format must be 'json' or 'csv', got {fmt!r}.")
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(COLUMNS), lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({**row, "params": json.dumps(row["params"], sort_keys=True),
                         "event": json.dumps(row["event"], sort_keys=True)})
    return out.getvalue()
