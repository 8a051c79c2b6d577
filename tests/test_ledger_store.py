"""A privacy budget that outlives the process: the ledger in SQLite and PostgreSQL.

Every test that takes ``where`` runs on a fresh SQLite file and, when
``DPSK_TEST_POSTGRES_URL`` names a PostgreSQL database (CI starts one with
``.ci/postgres.sh``), on a fresh schema of it. What is checked: the budget and
the filter's state carry over to other objects and processes bit for bit;
events read back equal; concurrent processes never overspend; a process killed
after its charge leaves the charge, one killed inside the transaction leaves
nothing; damaged, truncated, foreign, newer and read-only stores are refused
and left as they were; a schema upgrade path; a lost PostgreSQL connection;
and that the history holds public parameters only.
"""

import gc
import json
import math
import multiprocessing
import os
import pickle
import random
import secrets
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import cross_val_score
from test_ledger_processes import _EXCEEDED, _OK, _exit_with_outcome

from dpsk import (
    ApproxDPEvent,
    BudgetAccountant,
    BudgetExceededError,
    DPLogisticRegression,
    ExponentialEvent,
    GaussianEvent,
    LedgerStoreError,
    LedgerUnreachableError,
    PureDPEvent,
    make_private_pipeline,
)
from dpsk.__main__ import main
from dpsk.accounting import _store
from dpsk.accounting._events import RepeatAndSelectEvent
from dpsk.accounting._filter import ORDERS, FilterState, event_terms
from dpsk.accounting._history import public_params
from dpsk.accounting._tally import Tally
from dpsk.model_selection import DPGridSearch, _search
from dpsk.preprocessing import RowNormClipper

pytestmark = pytest.mark.skipif(os.name != "posix", reason="fork and kill are POSIX")

POSTGRES = os.environ.get("DPSK_TEST_POSTGRES_URL")
BACKENDS = ["sqlite", pytest.param("postgresql", marks=pytest.mark.skipif(
    not POSTGRES, reason="set DPSK_TEST_POSTGRES_URL to a PostgreSQL database"))]


def _data(n=120, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3))
    X /= np.linalg.norm(X, axis=1, keepdims=True).max()
    return X, (X[:, 0] > 0).astype(int)


def _schema_url(schema):
    return POSTGRES + ("&" if "?" in POSTGRES else "?") + f"options=-csearch_path%3D{schema}"


def _empty_schema():
    """A URL to a new, empty PostgreSQL schema, dropped when the test is done."""
    import psycopg

    schema = "dpsk_test_" + secrets.token_hex(6)
    with psycopg.connect(POSTGRES, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    yield _schema_url(schema)
    gc.collect()  # ledgers of the test close their connections
    with psycopg.connect(POSTGRES, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA {schema} CASCADE")


@pytest.fixture(params=BACKENDS)
def where(request, tmp_path):
    """A place for a new ledger: a SQLite file, or an empty PostgreSQL schema."""
    if request.param == "sqlite":
        yield str(tmp_path / "ledger.db")
    else:
        yield from _empty_schema()


@pytest.fixture
def path(tmp_path):
    return str(tmp_path / "ledger.db")


def _fit(acc, epsilon=1.0, **params):
    X, y = _data()
    return DPLogisticRegression(epsilon=epsilon, classes=[0, 1], accountant=acc,
                                **params).fit(X, y)


# -- the budget carries over -------------------------------------------------------------
def test_a_new_ledger_is_created_with_its_budget_and_kept(where):
    acc = BudgetAccountant.open(where, epsilon=3.0, delta=1e-6, label="alice")
    assert (acc.epsilon, acc.delta, acc.composition, acc.label) == (3.0, 1e-6, "basic",
                                                                    "alice")
    _fit(acc, 0.5)
    acc.spend(ApproxDPEvent(0.25, 1e-7))
    again = BudgetAccountant.open(where)  # another object, as another process would
    assert (again.epsilon, again.delta) == (3.0, 1e-6)
    assert again.total() == acc.total() == (0.75, 1e-7)
    assert again.remaining() == acc.remaining() == (2.25, 1e-6 - 1e-7)
    assert again.events == [PureDPEvent(0.5, mechanism="gamma-norm"),
                            ApproxDPEvent(0.25, 1e-7)]
    assert BudgetAccountant.open(where, epsilon=3.0).total() == (0.75, 1e-7)
    with pytest.raises(BudgetExceededError, match="Nothing was spent"):
        again.spend(2.5)
    assert acc.total() == (0.75, 1e-7)


def test_a_missing_ledger_needs_a_budget_and_a_conflicting_one_is_refused(where):
    with pytest.raises(LedgerStoreError, match="no ledger at.*epsilon="):
        BudgetAccountant.open(where)
    BudgetAccountant.open(where, epsilon=1.0)
    with pytest.raises(ValueError, match="created with epsilon=1.0.*asked for epsilon=2"):
        BudgetAccountant.open(where, epsilon=2)
    with pytest.raises(ValueError, match="composition='rdp'"):
        BudgetAccountant.open(where, composition="rdp")
    with pytest.raises(ValueError, match="delta=1e-06"):
        BudgetAccountant.open(where, epsilon=1.0, delta=1e-6)


@pytest.mark.parametrize("bad", ["mysql://host/db", "sqlite://", "sqlite:///:memory:", "", 3])
def test_places_that_are_not_ledgers_are_refused(bad):
    with pytest.raises(ValueError, match="ledger"):
        BudgetAccountant.open(bad, epsilon=1.0)


def test_sqlite_urls_and_relative_paths(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    acc = BudgetAccountant.open("sqlite:///rel.db", epsilon=1.0)
    assert acc.location == str(tmp_path / "rel.db")
    acc.spend(0.5)
    assert BudgetAccountant.open(f"sqlite:///{tmp_path / 'rel.db'}").total() == (0.5, 0.0)
    assert BudgetAccountant.open(tmp_path / "rel.db").total() == (0.5, 0.0)


_EVENTS = [
    PureDPEvent(0.1), PureDPEvent(0.2, mechanism="laplace"),
    PureDPEvent(0.3, mechanism="gamma-norm"), ApproxDPEvent(0.5, 1e-7), ApproxDPEvent(0.0, 0.0),
    GaussianEvent(3.0, 1e-7), GaussianEvent(4.0, 1e-7, claimed_epsilon=2.5),
    ExponentialEvent(0.05),
    RepeatAndSelectEvent(candidates=((("gaussian", 3.0, 1),), (("pure", 0.2, 2),)), eta=1.0,
                         gamma=0.1, delta=1e-6, claimed_epsilon=6.0),
]


def test_every_kind_of_event_reads_back_equal(where):
    BudgetAccountant.open(where, epsilon=float("inf")).spend_all(_EVENTS)
    back = BudgetAccountant.open(where).events
    assert back == _EVENTS
    assert [e.epsilon for e in back] == [e.epsilon for e in _EVENTS]
    assert [type(e) for e in back] == [type(e) for e in _EVENTS]


def test_the_filter_state_decides_as_the_list_of_events_would(where):
    # Each spend goes through a fresh object that reads only the stored state;
    # an in-memory ledger given the same sequence must decide, refuse and
    # report exactly alike (bit for bit, the messages included).
    budget = dict(epsilon=1.0, delta=1e-5, composition="rdp")
    memory = BudgetAccountant(**budget)
    BudgetAccountant.open(where, **budget)
    menu = [PureDPEvent(0.05), PureDPEvent(0.04, mechanism="laplace"), GaussianEvent(9.0, 1e-6),
            ApproxDPEvent(0.02, 1e-7), ExponentialEvent(0.03)]
    rng = random.Random(0)
    refused = 0
    for _ in range(40):
        event = rng.choice(menu)
        outcomes = []
        for acc in (memory, BudgetAccountant.open(where)):
            try:
                acc.spend(event)
                outcomes.append("ok")
            except BudgetExceededError as exc:
                outcomes.append(str(exc))
        assert outcomes[0] == outcomes[1]
        refused += outcomes[0] != "ok"
    stored = BudgetAccountant.open(where)
    assert 0 < refused < 40
    assert stored.events == memory.events
    assert stored.remaining() == memory.remaining()
    assert stored._store is not None and memory._store is None


def test_two_processes_one_after_the_other_see_the_same_budget(where, tmp_path):
    script = tmp_path / "spend.py"
    script.write_text(textwrap.dedent("""
        import sys
        sys.path.insert(0, {tests!r})
        from test_ledger_store import _fit
        from dpsk import BudgetAccountant
        acc = BudgetAccountant.open(sys.argv[1], epsilon=2.0, label="first process")
        _fit(acc, 0.5)
        print(repr((acc.total(), acc.remaining())))
    """).format(tests=os.path.dirname(__file__)))
    out = subprocess.run([sys.executable, str(script), where], capture_output=True, text=True,
                         check=True, env={**os.environ, "PYTHONPATH": os.getcwd()}).stdout
    acc = BudgetAccountant.open(where)
    assert out.strip() == repr((acc.total(), acc.remaining()))
    assert acc.total() == (0.5, 0.0) and acc.remaining() == (1.5, 0.0)
    assert acc.history(as_frame=False)[0]["label"] == "first process"


# -- estimators, copies, workers ---------------------------------------------------------
def test_estimators_searches_clones_pickles_and_workers_spend_through_it(where):
    X, y = _data()
    acc = BudgetAccountant.open(where, epsilon=5.0)
    model = DPLogisticRegression(epsilon=0.5, classes=[0, 1], accountant=acc)
    assert clone(model).accountant is acc
    cross_val_score(model, X, y, cv=2, n_jobs=2)  # two worker processes, pickled copies
    DPGridSearch(DPLogisticRegression(classes=[0, 1]), {"alpha": [1e-2, 1e-1]}, epsilon=0.5,
                 accountant=acc, random_state=0).fit(X, y)
    copy = pickle.loads(pickle.dumps(acc))
    copy.spend(0.25)
    assert copy.location == acc.location and copy._store is not acc._store
    with acc:
        make_private_pipeline(RowNormClipper(),
                              DPLogisticRegression(epsilon=0.25, classes=[0, 1])).fit(X, y)
    assert acc.total() == pytest.approx((2.0, 0.0), rel=1e-12)
    # Two folds, one search, one spend, one pipeline.
    assert len(acc.events) == 5
    assert [r["estimator"] for r in acc.history(as_frame=False)] == [
        "DPLogisticRegression", "DPLogisticRegression", "DPGridSearch", None,
        "DPLogisticRegression"]


def test_a_model_saved_with_a_stored_ledger_charges_it_after_its_process_ended(where):
    model = _fit(BudgetAccountant.open(where, epsilon=2.0), 0.5)
    blob = pickle.dumps(model)
    del model
    gc.collect()
    loaded = pickle.loads(blob)  # tomorrow, in another session
    assert "spent epsilon=0.5" in repr(loaded.accountant)
    X, y = _data()
    loaded.fit(X, y)
    assert BudgetAccountant.open(where).total() == (1.0, 0.0)


def test_a_copy_never_creates_a_ledger_and_refuses_another_one(tmp_path):
    first = tmp_path / "ledger.db"
    acc = BudgetAccountant.open(first, epsilon=1.0)
    copy = pickle.loads(pickle.dumps(acc))
    acc._store.close()
    os.replace(first, tmp_path / "moved.db")
    with pytest.raises(LedgerStoreError, match="no ledger file"):
        copy.spend(0.1)
    assert not first.exists()
    assert "store unreachable" in repr(copy)
    BudgetAccountant.open(first, epsilon=1.0)  # a different ledger at the same path
    with pytest.raises(LedgerStoreError, match="not the one this BudgetAccountant was opened"):
        copy.spend(0.1)
    assert BudgetAccountant.open(first).events == []


def test_read_only_reads_and_refuses_spends(where):
    BudgetAccountant.open(where, epsilon=1.0).spend(0.25)
    reader = BudgetAccountant.open(where, read_only=True)
    assert reader.total() == (0.25, 0.0) and len(reader.history(as_frame=False)) == 1
    with pytest.raises(LedgerStoreError, match="opened read-only"):
        reader.spend(0.1)
    with pytest.raises(LedgerStoreError, match="opened read-only"):
        _fit(reader, 0.1)
    assert BudgetAccountant.open(where).total() == (0.25, 0.0)


# -- concurrency -------------------------------------------------------------------------
def _child_fit(where, acc, barrier):
    def fit():
        barrier.wait(30)
        # Half the children use the inherited object, half open the ledger themselves.
        _fit(acc if os.getpid() % 2 else BudgetAccountant.open(where), 1.0)

    _exit_with_outcome(fit)


def test_eight_processes_never_overspend(where):
    acc = BudgetAccountant.open(where, epsilon=5.0)
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(8)
    procs = [ctx.Process(target=_child_fit, args=(where, acc, barrier)) for _ in range(8)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(120)
    # Eight epsilon-1 fits against a budget of 5: exactly five succeed.
    assert sorted(p.exitcode for p in procs) == [_OK] * 5 + [_EXCEEDED] * 3
    assert acc.total() == (5.0, 0.0)
    assert len(BudgetAccountant.open(where).events) == 5
    assert len({row["pid"] for row in acc.history(as_frame=False)}) == 5


def _child_spend_until_refused(where, barrier, conn):
    count = 0
    try:
        acc = BudgetAccountant.open(where)
        barrier.wait(30)
        while True:
            acc.spend(PureDPEvent(0.02))
            count += 1
    except BudgetExceededError:
        conn.send(count)
    except BaseException as exc:  # noqa: BLE001 - reported to the test
        conn.send(repr(exc))
    os._exit(0)


@pytest.mark.slow
def test_eight_processes_under_the_filter_spend_exactly_what_one_would(where):
    budget = dict(epsilon=1.0, delta=1e-6, composition="rdp")
    alone = BudgetAccountant(**budget)
    fits = 0
    while True:
        try:
            alone.spend(PureDPEvent(0.02))
        except BudgetExceededError:
            break
        fits += 1
    assert fits > 50  # the filter lets more through than basic composition (50)
    BudgetAccountant.open(where, **budget)
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(8)
    pipes = [ctx.Pipe() for _ in range(8)]
    procs = [ctx.Process(target=_child_spend_until_refused, args=(where, barrier, child))
             for _, child in pipes]
    for proc in procs:
        proc.start()
    counts = [parent.recv() for parent, _ in pipes]
    for proc in procs:
        proc.join(120)
    assert sum(counts) == fits
    assert BudgetAccountant.open(where).remaining() == alone.remaining()


# -- processes killed --------------------------------------------------------------------
def _charge_then_hang(acc, conn):
    def hang(self, *args, **kwargs):
        conn.send("charged")
        time.sleep(600)

    DPLogisticRegression._release = hang  # in this child only
    _fit(acc, 0.5)


def _hold_then_hang(acc, conn):
    with acc._ledger() as held:
        held.record([(PureDPEvent(1.0), None)])
        conn.send("inside")
        time.sleep(600)


def _kill_when(target, acc, message):
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=target, args=(acc, child))
    proc.start()
    assert parent.poll(60) and parent.recv() == message
    os.kill(proc.pid, signal.SIGKILL)
    proc.join(60)
    assert proc.exitcode == -signal.SIGKILL


def test_a_process_killed_between_charge_and_release_leaves_the_charge(where):
    acc = BudgetAccountant.open(where, epsilon=2.0)
    _kill_when(_charge_then_hang, acc, "charged")
    after = BudgetAccountant.open(where)
    assert after.events == [PureDPEvent(0.5, mechanism="gamma-norm")]
    _fit(after, 0.5)  # nothing is left locked
    assert acc.total() == (1.0, 0.0)


def test_a_process_killed_inside_the_transaction_leaves_nothing_and_no_lock(where):
    acc = BudgetAccountant.open(where, epsilon=2.0)
    acc.spend(0.25)
    _kill_when(_hold_then_hang, acc, "inside")
    after = BudgetAccountant.open(where)
    assert after.events == [PureDPEvent(0.25)]
    after.spend(0.5)
    assert acc.total() == (0.75, 0.0)


# -- damaged, foreign, newer and read-only stores ----------------------------------------
def _snapshot(path):
    with open(path, "rb") as handle:
        return handle.read()


def _filled(path, n=300):
    acc = BudgetAccountant.open(path, epsilon=float("inf"))
    acc.spend_all([PureDPEvent(0.01)] * n)
    acc._store.close()  # the last connection checkpoints the log into the file
    del acc
    gc.collect()
    assert not os.path.exists(path + "-wal")


@pytest.mark.parametrize("damage, message", [
    ("garbage", "damaged or not a dpsk ledger"),
    ("truncated", "damaged"),
    ("empty", "is empty"),
    ("foreign", "holds no dpsk ledger"),
    ("newer", r"newer dpsk \(schema version 99"),
    ("row missing", "totals count 300 releases but 299 rows"),
    ("bad tally", "running totals cannot be read"),
])
def test_damaged_foreign_and_newer_files_are_refused_and_left_alone(path, damage, message):
    if damage == "garbage":
        with open(path, "wb") as handle:
            handle.write(b"this is not a database, and certainly not a ledger\n" * 200)
    elif damage == "empty":
        open(path, "wb").close()
    elif damage == "foreign":
        with sqlite3.connect(path) as conn:
            conn.execute("CREATE TABLE users (name TEXT)")
        conn.close()
    else:
        _filled(path)
        if damage == "truncated":
            os.truncate(path, os.path.getsize(path) // 2)
        else:
            conn = sqlite3.connect(path, isolation_level=None)
            if damage == "newer":
                conn.execute("UPDATE dpsk_meta SET value = '99' WHERE key = 'schema_version'")
            elif damage == "row missing":
                conn.execute("DELETE FROM dpsk_events WHERE seq = 300")
            else:
                conn.execute("UPDATE dpsk_ledger SET state = '{\"count\": 1}'")
            conn.close()
    before = _snapshot(path)
    for _ in range(2):  # refused again, never repaired in between
        with pytest.raises(LedgerStoreError, match=message):
            BudgetAccountant.open(path, epsilon=1.0)
    with pytest.raises(LedgerStoreError, match=message):
        BudgetAccountant.open(path, read_only=True)
    assert _snapshot(path) == before
    assert not os.path.exists(path + "-wal") or damage != "empty"


def test_a_read_only_file_is_refused_for_spending_and_read(path, capsys):
    BudgetAccountant.open(path, epsilon=1.0).spend(0.25)
    gc.collect()
    os.chmod(path, 0o444)
    before = _snapshot(path)
    with pytest.raises(LedgerStoreError, match="read-only.*read_only=True"):
        BudgetAccountant.open(path)
    assert BudgetAccountant.open(path, read_only=True).total() == (0.25, 0.0)
    assert main(["ledger", "show", path]) == 0
    assert "spent      epsilon=0.25" in capsys.readouterr().out
    assert _snapshot(path) == before


def test_a_ledger_put_back_from_an_older_copy_is_refused(path, tmp_path):
    acc = BudgetAccountant.open(path, epsilon=2.0)
    acc.spend(0.5)
    backup = tmp_path / "backup.db"
    with sqlite3.connect(path) as src, sqlite3.connect(backup) as dst:
        src.backup(dst)
    src.close()
    dst.close()
    acc.spend(0.5)
    acc._store.close()  # the log is folded into the file, as when every process is done
    os.replace(backup, path)  # a restore: the second release is gone
    with pytest.raises(LedgerStoreError, match="fewer than the 2 this process saw"):
        acc.spend(0.5)


def test_an_older_schema_is_upgraded_by_a_newer_dpsk_in_one_step(where, monkeypatch):
    acc = BudgetAccountant.open(where, epsilon=1.0)
    acc.spend(0.25)
    acc._store.close()
    # A dpsk with schema 2, whose migration from 1 adds a column.
    monkeypatch.setattr(_store, "SCHEMA_VERSION", 2)
    monkeypatch.setattr(_store, "MIGRATIONS",
                        {1: ["ALTER TABLE dpsk_events ADD COLUMN note TEXT"]})
    with pytest.raises(LedgerStoreError, match="upgrading it needs write access"):
        BudgetAccountant.open(where, read_only=True)
    newer = BudgetAccountant.open(where)
    assert newer.events == [PureDPEvent(0.25)]
    newer.spend(0.25)
    newer._store.close()
    # The older dpsk (schema 1) refuses the upgraded store and changes nothing.
    monkeypatch.setattr(_store, "SCHEMA_VERSION", 1)
    with pytest.raises(LedgerStoreError, match="newer dpsk.*version 2"):
        BudgetAccountant.open(where)
    with pytest.raises(LedgerStoreError, match="newer dpsk"):
        acc.spend(0.1)
    monkeypatch.setattr(_store, "SCHEMA_VERSION", 2)
    assert BudgetAccountant.open(where).total() == (0.5, 0.0)


def test_an_upgrade_with_no_path_is_refused(where, monkeypatch):
    BudgetAccountant.open(where, epsilon=1.0)._store.close()
    gc.collect()
    monkeypatch.setattr(_store, "SCHEMA_VERSION", 2)
    with pytest.raises(LedgerStoreError, match="version 1, which this dpsk cannot upgrade"):
        BudgetAccountant.open(where)


# -- PostgreSQL connections --------------------------------------------------------------
postgres_only = pytest.mark.skipif(not POSTGRES, reason="set DPSK_TEST_POSTGRES_URL")


@pytest.fixture
def pg_where():
    yield from _empty_schema()


def _terminate(backend_pid):
    import psycopg

    with psycopg.connect(POSTGRES, autocommit=True) as conn:
        conn.execute("SELECT pg_terminate_backend(%s)", (backend_pid,))
    time.sleep(0.2)


@postgres_only
def test_a_connection_lost_while_idle_is_replaced_and_charges_once(pg_where):
    acc = BudgetAccountant.open(pg_where, epsilon=1.0)
    acc.spend(0.25)
    _terminate(acc._store._conn.info.backend_pid)
    acc.spend(0.25)
    assert BudgetAccountant.open(pg_where).events == [PureDPEvent(0.25)] * 2


@postgres_only
def test_a_connection_lost_during_a_spend_is_refused_and_never_half_done(pg_where):
    acc = BudgetAccountant.open(pg_where, epsilon=1.0)
    acc.spend(0.25)
    store = acc._store
    real = store._appender

    def cut_then_append(conn):
        append = real(conn)

        def cut(entries, tally):
            _terminate(conn.info.backend_pid)
            append(entries, tally)
        return cut

    store._appender = cut_then_append
    X, y = _data()
    model = DPLogisticRegression(epsilon=0.5, classes=[0, 1], accountant=acc)
    with pytest.raises(LedgerStoreError, match="cannot be reached.*history"):
        model.fit(X, y)
    assert not hasattr(model, "coef_")  # nothing released
    store._appender = real
    assert BudgetAccountant.open(pg_where).events == [PureDPEvent(0.25)]
    acc.spend(0.25)  # a new connection
    assert acc.total() == (0.5, 0.0)


@postgres_only
def test_an_unreachable_server_is_refused_with_a_clear_message():
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"postgresql://postgres@127.0.0.1:{port}/dpsk?connect_timeout=2"
    with pytest.raises(LedgerStoreError, match="cannot be reached.*Nothing was spent"):
        BudgetAccountant.open(url, epsilon=1.0)


@postgres_only
def test_the_password_stays_in_the_process(pg_where):
    # The test server trusts local connections, so any password is accepted.
    url = pg_where.replace("postgresql://postgres@", "postgresql://postgres:s3cret@")
    acc = BudgetAccountant.open(url, epsilon=1.0)
    acc.spend(0.25)
    assert "s3cret" not in acc.location and "s3cret" not in repr(acc)
    blob = pickle.dumps(acc)
    assert b"s3cret" not in blob
    assert "s3cret" not in acc.export(format="json")
    pickle.loads(blob).spend(0.25)  # the copy finds its way without it (here: trust)
    assert acc.total() == (0.5, 0.0)


@postgres_only
def test_a_forked_child_leaves_the_parents_session_alone(pg_where):
    acc = BudgetAccountant.open(pg_where, epsilon=1.0)
    acc.spend(0.25)
    backend = acc._store._conn.info.backend_pid
    pid = os.fork()
    if pid == 0:  # the child drops everything it inherited, then spends on its own
        code = 1
        try:
            _store._ABANDONED.clear()
            gc.collect()
            acc.spend(0.25)
            code = 0
        finally:
            os._exit(code)
    assert os.waitpid(pid, 0)[1] == 0
    acc.spend(0.25)
    assert acc._store._conn.info.backend_pid == backend  # the same session, unharmed
    assert acc.total() == (0.75, 0.0)


# -- the history -------------------------------------------------------------------------
def test_the_history_holds_public_scalar_parameters_only(where):
    acc = BudgetAccountant.open(where, epsilon=2.0, label="alice: churn")
    model = _fit(acc, 0.5, random_state=7, alpha=1e-2)
    row = acc.history(as_frame=False)[0]
    assert row["estimator"] == "DPLogisticRegression" and row["label"] == "alice: churn"
    assert row["params"]["epsilon"] == 0.5 and row["params"]["alpha"] == 1e-2
    assert "random_state" not in row["params"] and "accountant" not in row["params"]
    assert "classes" not in row["params"]  # a list: containers are never written
    assert row["pid"] == os.getpid() and row["user"] and row["host"]
    assert row["event"] == model.privacy_event_._to_dict()
    frame = acc.history()
    assert list(frame["epsilon"]) == [0.5] and str(frame["time"].dt.tz) == "UTC"


def test_public_params_rule():
    class Source:
        def get_params(self, deep=False):
            return {"a": np.float64(0.5), "b": np.int64(3), "c": np.bool_(True), "d": "x",
                    "e": None, "f": np.arange(3), "g": [1, 2], "h": {"k": 1},
                    "random_state": 0, "accountant": BudgetAccountant(), "i": float("inf")}

    assert public_params(Source()) == {"a": 0.5, "b": 3, "c": True, "d": "x", "e": None,
                                       "i": "inf"}
    assert public_params(object()) == {}


def test_a_search_writes_one_row_whatever_its_secret_number_of_runs(tmp_path, monkeypatch):
    X, y = _data(200)
    written = {}
    for n_runs in (1, 9):
        def plan(m, gamma, rng, n_runs=n_runs):
            return np.arange(n_runs, dtype=np.int64) % m

        monkeypatch.setattr(_search, "random_stopping_plan", plan)
        folder = tmp_path / str(n_runs)
        folder.mkdir()
        acc = BudgetAccountant.open(folder / "ledger.db", epsilon=3.0)
        DPGridSearch(DPLogisticRegression(classes=[0, 1]), {"alpha": [1e-3, 1e-2, 1e-1]},
                     epsilon=0.9, method="random-stopping", accountant=acc).fit(X, y)
        rows = acc.history(as_frame=False)
        assert [(r["kind"], r["epsilon"], r["estimator"]) for r in rows] == [
            ("PureDPEvent", 0.9, "DPGridSearch")]
        written[n_runs] = {k: v for k, v in rows[0].items() if k not in ("time", "pid")}
        assert sorted(os.listdir(folder)) == ["ledger.db", "ledger.db-shm", "ledger.db-wal"]
    # What is written does not depend on the runs (the time and pid aside).
    assert written[1] == written[9]


def test_export_json_and_csv(where, tmp_path):
    acc = BudgetAccountant.open(where, epsilon=2.0, delta=1e-6, label="bob")
    _fit(acc, 0.5)
    acc.spend(GaussianEvent(5.0, 1e-7))
    data = json.loads(acc.export(format="json"))
    assert data["ledger"]["releases"] == 2 and data["ledger"]["epsilon"] == 2.0
    assert data["ledger"]["remaining_epsilon"] == pytest.approx(2.0 - acc.total()[0])
    assert [r["kind"] for r in data["releases"]] == ["PureDPEvent", "GaussianEvent"]
    acc.export(tmp_path / "history.csv")
    lines = (tmp_path / "history.csv").read_text().splitlines()
    assert lines[0].startswith("seq,time,kind,epsilon,delta,estimator,params,label")
    assert len(lines) == 3 and ",bob," in lines[1]


def test_history_of_a_ledger_in_memory_and_through_a_journal():
    acc = BudgetAccountant(epsilon=2.0)
    _fit(acc, 0.5)
    copy = pickle.loads(pickle.dumps(acc))  # moves it to a journal
    _fit(copy, 0.25)
    rows = acc.history(as_frame=False)
    assert [r["epsilon"] for r in rows] == [0.5, 0.25]
    assert {r["estimator"] for r in rows} == {"DPLogisticRegression"}


# -- the command -------------------------------------------------------------------------
def test_ledger_show_and_export_commands(where, tmp_path, capsys):
    acc = BudgetAccountant.open(where, epsilon=3.0, delta=1e-6, label="carol")
    _fit(acc, 0.5)
    acc.spend(0.25)
    assert main(["ledger", "show", where, "--last", "1"]) == 0
    out = capsys.readouterr().out
    assert "budget     epsilon=3, delta=1e-06, composition=basic" in out
    assert "spent      epsilon=0.75, delta=0 in 2 releases" in out
    assert "remaining  epsilon=2.25, delta=1e-06" in out
    assert "last 1 of 2 releases" in out
    table = out.split("releases:\n")[1].splitlines()
    assert len(table) == 2 and table[1].split()[:4] == ["2", table[1].split()[1], "0.25", "0"]
    assert "carol" in table[1]
    assert main(["ledger", "export", where, "-o", str(tmp_path / "h.csv")]) == 0
    assert (tmp_path / "h.csv").read_text().count("\n") == 3
    assert main(["ledger", "export", where]) == 0
    assert json.loads(capsys.readouterr().out)["ledger"]["releases"] == 2


def test_ledger_command_on_a_missing_ledger_exits_2(tmp_path, capsys):
    assert main(["ledger", "show", str(tmp_path / "none.db")]) == 2
    assert "no ledger at" in capsys.readouterr().err
    assert not (tmp_path / "none.db").exists()


# -- the tally and the journal's messages ------------------------------------------------
def test_the_tally_is_exact_and_reads_back_equal():
    rng = random.Random(1)
    kinds = [lambda: PureDPEvent(rng.uniform(1e-3, 1.0)),
             lambda: ApproxDPEvent(rng.uniform(0, 1.0), rng.uniform(0, 1e-6)),
             lambda: GaussianEvent(rng.uniform(1.0, 20.0), 1e-7),
             lambda: ExponentialEvent(rng.uniform(1e-3, 0.1))]
    events = [rng.choice(kinds)() for _ in range(200)]
    for prefix in (events[:30], [e for e in events if not isinstance(e, GaussianEvent)],
                   events):
        tally = Tally.of(prefix, filtered=True)
        assert tally.spent() == (math.fsum(e.epsilon for e in prefix),
                                 math.fsum(e.delta for e in prefix))
        # The filter's totals, as the filter summed them before the state existed.
        sums = [0.0] * len(ORDERS)
        pure, pair = [], []
        for event in prefix:
            if event.cost == (0.0, 0.0):
                continue
            curve, max_div, pair_delta = event_terms(event)
            sums = [a + b for a, b in zip(sums, curve)]
            pure.append(max_div)
            pair.append(pair_delta)
        assert FilterState.of(prefix).totals() == (sums, math.fsum(pure), math.fsum(pair))
        assert Tally.from_json(json.loads(json.dumps(tally.to_json()))) == tally


def _ledger_in_child(conn):
    acc = BudgetAccountant(epsilon=1.0)
    conn.send(pickle.dumps(acc))
    del acc
    gc.collect()  # the owner closes its ledger: the journal is removed
    os._exit(0)


def test_a_copy_of_a_ledger_closed_by_its_ended_owner_says_so():
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_ledger_in_child, args=(child,))
    proc.start()
    copy = pickle.loads(parent.recv())
    proc.join(60)
    with pytest.raises(LedgerUnreachableError, match="has ended; it closed the ledger") as info:
        copy.spend(0.1)
    assert "killed" not in str(info.value) and "BudgetAccountant.open" in str(info.value)


def test_a_copy_of_a_ledger_dropped_by_its_running_owner_says_so():
    acc = BudgetAccountant(epsilon=1.0)
    copy = pickle.loads(pickle.dumps(acc))
    del acc
    gc.collect()
    with pytest.raises(LedgerUnreachableError, match="no longer exists: its owner, process"):
        copy.spend(0.1)


def test_threads_with_their_own_objects_never_overspend(where):
    import threading

    BudgetAccountant.open(where, epsilon=1.0)
    counts = []

    def spend_until_refused():
        acc, count = BudgetAccountant.open(where), 0
        try:
            while True:
                acc.spend(0.1)
                count += 1
        except BudgetExceededError:
            counts.append(count)

    threads = [threading.Thread(target=spend_until_refused) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert len(counts) == 6 and sum(counts) == 10
    assert BudgetAccountant.open(where).total() == pytest.approx((1.0, 0.0), rel=1e-12)
