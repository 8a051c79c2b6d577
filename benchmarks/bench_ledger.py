"""What a stored ledger costs: the time of one charge, and of a fit on Adult.

* **Charge time.** ``acc.spend(PureDPEvent(1e-6))`` on a ledger opened with
  ``BudgetAccountant.open`` (a SQLite file in ``--dir``, default the system's
  temporary folder; PostgreSQL too with ``--postgres URL``): one transaction
  each (write lock, read the tally, decide, insert, write the tally, commit
  with ``synchronous=FULL``), under basic composition and under the privacy
  filter (``composition="rdp"``, whose per-order state is read and written in
  the same transaction), on a fresh ledger and on one that already holds
  ``--prior`` releases (a charge must not grow with the history). The same
  on an in-memory ledger for reference, and the floor the disk sets: a bare
  SQLite transaction (one insert, committed with ``synchronous=FULL``, so one
  ``fsync`` of the log) in the same folder, and the ledger's own work: the
  same charges with the flush left out (``synchronous=NORMAL``, set by this
  benchmark only; dpsk always commits with ``FULL``). Target: median <= 5 ms
  on SQLite.
* **A fit.** ``DPLogisticRegression(epsilon=1.0, classes=[0, 1])`` (defaults
  otherwise) on the Adult training split (80% of 45,222 rows), charging an
  in-memory ledger or a SQLite one, interleaved so that machine load hits both
  alike; the ratio of the medians. Target: <= 1.05.

Timings depend on the machine and on the file system under ``--dir`` (the
commit waits for ``fsync``); the CSV records both.
"""

import argparse
import os
import statistics
import subprocess
import tempfile
import time

import numpy as np

from . import _common as C

CHARGE_TARGET_MS = 5.0
FIT_TARGET = 1.05


def _charge_times(acc, n):
    from dpsk import PureDPEvent

    event = PureDPEvent(1e-6)
    acc.spend(event)  # warm-up: the connection, the caches
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        acc.spend(event)
        times.append(time.perf_counter() - t0)
    return times


def _bare_commit_times(folder, n):
    """One durable SQLite commit, nothing else: what the disk costs a charge."""
    import sqlite3

    conn = sqlite3.connect(os.path.join(folder, "bare.db"), isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = FULL")
    conn.execute("CREATE TABLE t (x TEXT)")
    times = []
    for i in range(n + 1):
        t0 = time.perf_counter()
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO t VALUES (?)", (str(i),))
        conn.execute("COMMIT")
        times.append(time.perf_counter() - t0)
    conn.close()
    return times[1:]


def _ledger(kind, where, composition, prior):
    from dpsk import BudgetAccountant, PureDPEvent
    from dpsk.accounting import _sqlite

    # Large enough never to refuse (its warning, that such a budget is weak, is
    # silenced by the caller: true, and beside the point here).
    budget = dict(epsilon=1e6, delta=1e-6, composition=composition)
    if kind == "memory":
        acc = BudgetAccountant(**budget)
    else:
        acc = BudgetAccountant.open(where, **budget)
    if kind == "sqlite, no flush":
        store = acc._store
        conn = store._connection()
        conn.execute("PRAGMA synchronous = NORMAL")
        assert isinstance(store, _sqlite.SQLiteStore)
    for start in range(0, prior, 1000):
        acc.spend_all([PureDPEvent(1e-6)] * min(1000, prior - start))
    return acc


def _filesystem(folder):
    try:
        out = subprocess.run(["df", "-T", folder], capture_output=True, text=True).stdout
        return out.splitlines()[1].split()[1]
    except (OSError, IndexError):
        return "unknown"


def _fresh_schema(url, tag):
    import psycopg

    schema = f"dpsk_bench_{tag}_{os.getpid()}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        conn.execute(f"CREATE SCHEMA {schema}")
    return url + ("&" if "?" in url else "?") + f"options=-csearch_path%3D{schema}"


def _quiet_ledger(make):
    import warnings

    from dpsk import PrivacyBudgetWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyBudgetWarning)
        return make()


def charges(args, folder):
    times = np.array(_bare_commit_times(folder, args.charges)) * 1e3
    rows = [dict(measure="commit alone", ledger="sqlite", composition="", prior_releases=0,
                 n=args.charges, median_ms=float(np.median(times)),
                 p90_ms=float(np.percentile(times, 90)), target_ms=float("nan"), verdict="")]
    print(f"  a bare SQLite commit (synchronous=FULL): median {rows[0]['median_ms']:.3f} ms, "
          f"p90 {rows[0]['p90_ms']:.3f} ms", flush=True)
    places = [("memory", None), ("sqlite", None), ("sqlite, no flush", None)]
    if args.postgres:
        places.append(("postgresql", args.postgres))
    for kind, url in places:
        for composition in ("basic", "rdp"):
            for prior in (0, args.prior):
                tag = f"{composition}_{prior}"
                if kind.startswith("sqlite"):
                    where = os.path.join(folder, f"charge_{tag}_{len(rows)}.db")
                elif kind == "postgresql":
                    where = _fresh_schema(url, tag)
                else:
                    where = None
                acc = _quiet_ledger(lambda: _ledger(kind, where, composition, prior))
                times = np.array(_charge_times(acc, args.charges)) * 1e3
                median = float(np.median(times))
                target = CHARGE_TARGET_MS if kind == "sqlite" else float("nan")
                rows.append(dict(
                    measure="charge", ledger=kind, composition=composition,
                    prior_releases=prior, n=args.charges, median_ms=median,
                    p90_ms=float(np.percentile(times, 90)), target_ms=target,
                    verdict=("ok" if median <= target else "over") if kind == "sqlite" else ""))
                print(f"  charge  {kind:16s} {composition:5s} after {prior:6d} releases: "
                      f"median {median:.3f} ms, p90 {rows[-1]['p90_ms']:.3f} ms", flush=True)
    return rows


def fits(args, folder):
    from sklearn.model_selection import train_test_split

    from dpsk import BudgetAccountant, DPLogisticRegression

    X, y = C.load_adult_data()
    X_train, _, y_train, _ = train_test_split(X, y, test_size=0.2, random_state=args.seed,
                                              stratify=y)
    # Budgets that never run out (inf only records: the same checks and writes).
    ledgers = {"memory": BudgetAccountant(),
               "sqlite": BudgetAccountant.open(os.path.join(folder, "fit.db"),
                                               epsilon=float("inf"))}
    times = {name: [] for name in ledgers}
    for rep in range(args.fits + 1):
        order = list(ledgers) if rep % 2 == 0 else list(ledgers)[::-1]
        for name in order:
            model = DPLogisticRegression(epsilon=1.0, classes=[0, 1], accountant=ledgers[name])
            t0 = time.perf_counter()
            model.fit(X_train, y_train)
            if rep:  # the first round warms up
                times[name].append(time.perf_counter() - t0)
    medians = {name: statistics.median(t) for name, t in times.items()}
    ratio = medians["sqlite"] / medians["memory"]
    print(f"  fit     DPLogisticRegression on Adult ({X_train.shape[0]} rows): memory "
          f"{medians['memory']:.3f} s, sqlite {medians['sqlite']:.3f} s -> x{ratio:.3f}",
          flush=True)
    return [dict(measure="fit", ledger=name, composition="basic", prior_releases=0,
                 n=args.fits, median_ms=medians[name] * 1e3,
                 p90_ms=float(np.percentile(np.array(times[name]) * 1e3, 90)),
                 ratio_to_memory=medians[name] / medians["memory"],
                 target_ratio=FIT_TARGET if name == "sqlite" else float("nan"),
                 verdict=("ok" if ratio <= FIT_TARGET else "over") if name == "sqlite" else "")
            for name in ledgers]


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks ledger", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="100 charges, 200 prior releases, 3 fits")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--charges", type=int, default=None, help="default 1000")
    parser.add_argument("--prior", type=int, default=None, help="default 10000")
    parser.add_argument("--fits", type=int, default=None, help="per ledger; default 15")
    parser.add_argument("--dir", default=None, help="folder for the SQLite files")
    parser.add_argument("--postgres", default=os.environ.get("DPSK_TEST_POSTGRES_URL"),
                        help="a PostgreSQL URL to time too (default $DPSK_TEST_POSTGRES_URL)")
    args = parser.parse_args(argv)
    C.set_quick(args.quick)
    args.charges = args.charges or (100 if args.quick else 1000)
    args.prior = args.prior if args.prior is not None else (200 if args.quick else 10000)
    args.fits = args.fits or (3 if args.quick else 15)
    info = C.machine_info()
    C.header("ledger: the cost of a stored ledger (charges; a fit on Adult)", info)
    with tempfile.TemporaryDirectory(dir=args.dir) as folder:
        fs = _filesystem(folder)
        print(f"  SQLite files in {folder} ({fs})", flush=True)
        rows = charges(args, folder) + fits(args, folder)
    print()
    print(C.format_table(rows, ["measure", "ledger", "composition", "prior_releases", "n",
                                "median_ms", "p90_ms", "verdict"], floatfmt="{:.3f}"))
    note = C.load_warning() or f"machine quiet (1-min load {C.machine_info()['loadavg_1m']})"
    print(f"\n{note}")
    comments = [f"command: python -m benchmarks ledger {' '.join(argv or [])}".rstrip(),
                f"machine: {C.machine_line(info)}", f"SQLite file system: {fs}",
                "postgresql: " + ("timed" if args.postgres else "not timed"), note]
    print(f"wrote {C.write_csv('ledger', rows, None, comments)}")
    return 0
