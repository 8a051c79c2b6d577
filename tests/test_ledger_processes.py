"""Spends from forked children, worker processes and saved models reach the
ledger the user holds, or are refused; never lost, never charged to an orphan."""

import glob
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap

import joblib
import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import cross_val_score

from dpsk import (
    BudgetAccountant,
    BudgetExceededError,
    DPLogisticRegression,
    LedgerUnreachableError,
    PureDPEvent,
    default_accountant,
)

# These ledger tests fit with undeclared classes for brevity; the warning
# itself is tested in test_fit_protocol.py.
pytestmark = [pytest.mark.skipif(os.name != "posix", reason="fork and flock are POSIX"),
              pytest.mark.filterwarnings("ignore::dpsk.ClassesFromDataWarning")]

_OK, _EXCEEDED, _UNREACHABLE, _OTHER = 0, 3, 4, 1


def _make_data(n=120, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3))
    X /= np.linalg.norm(X, axis=1, keepdims=True).max()
    y = (X[:, 0] > 0).astype(int)
    return X, y


@pytest.fixture(scope="module")
def data():
    return _make_data()


def _child_fit(X, y, accountant):
    _exit_with_outcome(lambda: DPLogisticRegression(
        epsilon=1.0, accountant=accountant, random_state=0).fit(X, y))


def _exit_with_outcome(fit):
    """End this (child) process with the exit code of what ``fit()`` did."""
    try:
        fit()
        code = _OK
    except BudgetExceededError:
        code = _EXCEEDED
    except LedgerUnreachableError:
        code = _UNREACHABLE
    except BaseException:  # noqa: BLE001 - any other failure must show in the exit code
        code = _OTHER
    os._exit(code)


def _run_forked(n, X, y, accountant):
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_child_fit, args=(X, y, accountant)) for _ in range(n)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    return sorted(p.exitcode for p in procs)


# -- forks ---------------------------------------------------------------------------
@pytest.mark.parametrize("how", ["explicit", "with-block"])
def test_forked_children_spend_into_the_parents_ledger(how, data):
    X, y = data
    acc = BudgetAccountant(epsilon=5.0)
    if how == "explicit":
        codes = _run_forked(6, X, y, acc)
    else:
        with acc:
            codes = _run_forked(6, X, y, None)
    # Six concurrent epsilon-1 fits against a budget of 5: exactly one is refused.
    assert codes == [_OK] * 5 + [_EXCEEDED]
    assert acc.total() == (5.0, 0.0)
    assert acc.events == [PureDPEvent(1.0, mechanism="generic")] * 5
    with pytest.raises(BudgetExceededError):
        DPLogisticRegression(epsilon=1.0, accountant=acc, random_state=0).fit(X, y)


def test_fork_child_refuses_when_the_ledger_could_not_be_shared(data, monkeypatch):
    from dpsk.accounting import _journal

    def fail(cls, events):
        raise OSError("no temporary directory")

    monkeypatch.setattr(_journal._Journal, "create", classmethod(fail))
    X, y = data
    acc = BudgetAccountant(epsilon=5.0)
    assert _run_forked(1, X, y, acc) == [_UNREACHABLE]
    assert acc.total() == (0.0, 0.0)


# -- worker processes ----------------------------------------------------------------
def test_default_ledger_reaches_worker_processes(data):
    X, y = data
    before = default_accountant().total()[0]
    cross_val_score(DPLogisticRegression(epsilon=0.5), X, y, cv=4, n_jobs=2)
    assert default_accountant().total()[0] - before == pytest.approx(2.0, rel=1e-12)


# -- saved models --------------------------------------------------------------------
_SAVER = textwrap.dedent(
    """
    import sys
    import joblib
    sys.path.insert(0, {tests!r})
    from test_ledger_processes import _make_data
    from dpsk import BudgetAccountant, DPLogisticRegression

    X, y = _make_data()
    acc = BudgetAccountant(epsilon=2.0)
    model = DPLogisticRegression(epsilon=0.5, accountant=acc, random_state=0).fit(X, y)
    default_model = DPLogisticRegression(epsilon=0.25, random_state=0).fit(X, y)
    joblib.dump((model, default_model), sys.argv[1])
    print(acc._journal.path, flush=True)
    if sys.argv[2] == "wait":
        sys.stdin.read()  # stay alive until the test kills this process
    """
)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """Two saving processes started together: one exits, one is SIGKILLed."""
    folder = tmp_path_factory.mktemp("saved")
    script = folder / "saver.py"
    script.write_text(_SAVER.format(tests=os.path.dirname(__file__)))
    run = {}
    for mode in ("exit", "wait"):
        run[mode] = subprocess.Popen(
            [sys.executable, str(script), str(folder / f"{mode}.joblib"), mode],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )
    journals = {mode: proc.stdout.readline().strip() for mode, proc in run.items()}
    assert run["exit"].wait(timeout=60) == 0
    os.kill(run["wait"].pid, signal.SIGKILL)
    run["wait"].wait(timeout=60)  # reaped: the owner is gone for good
    for proc in run.values():
        proc.stdout.close()
        proc.stdin.close()
    yield {mode: (folder / f"{mode}.joblib", journals[mode]) for mode in run}
    # The killed saver left orphans (its ledger's and its default ledger's journals).
    killed = run["wait"].pid
    for orphan in glob.glob(os.path.join(os.path.dirname(journals["wait"]), "dpsk-ledger-*")):
        try:
            with open(orphan) as handle:
                owner = json.loads(handle.readline()).get("owner_pid")
        except (OSError, ValueError):
            continue  # another ledger's journal, removed by its owner meanwhile
        if owner == killed:
            os.remove(orphan)


def test_model_saved_by_an_ended_process_displays_and_clones(saved, data):
    path, journal = saved["exit"]
    assert not os.path.exists(journal)  # its owner removed it on exit
    model, _ = joblib.load(path)
    assert "unreachable" in repr(model)
    assert "DPLogisticRegression" in model._repr_html_()
    acc = model.get_params()["accountant"]
    assert clone(model).accountant is acc
    assert model.privacy_spent_ == (0.5, 0.0)
    assert model.privacy_event_ == PureDPEvent(0.5, mechanism="generic")
    X, y = data
    with pytest.raises(LedgerUnreachableError, match=r"set_params\(accountant="):
        model.fit(X, y)
    mine = BudgetAccountant(epsilon=1.0)
    model.set_params(accountant=mine).fit(X, y)
    assert mine.total() == (0.5, 0.0)


def test_saved_model_with_default_ledger_charges_the_loaders_default(saved, data):
    path, _ = saved["exit"]
    _, default_model = joblib.load(path)
    X, y = data
    with BudgetAccountant(epsilon=1.0) as mine:
        default_model.fit(X, y)
    assert mine.total() == (0.25, 0.0)


def test_killed_owner_journal_is_never_charged(saved, data):
    path, journal = saved["wait"]
    with open(journal) as handle:
        before = handle.read()
    model, default_model = joblib.load(path)
    assert "unreachable" in repr(model)
    X, y = data
    with pytest.raises(LedgerUnreachableError, match=r"ended.*set_params\(accountant=") as info:
        model.fit(X, y)
    assert "orphaned" in str(info.value)
    # A default-ledger model whose saver was killed charges this process's default.
    with BudgetAccountant(epsilon=1.0) as mine:
        default_model.fit(X, y)
    assert mine.total() == (0.25, 0.0)
    with open(journal) as handle:
        assert handle.read() == before


def test_legacy_pickled_ledger_loads_and_refuses(tmp_path):
    # Pickles of the base version named only the journal path.
    acc = BudgetAccountant.__new__(BudgetAccountant)
    acc.__setstate__({"epsilon": 1.0, "delta": 0.0, "journal": str(tmp_path / "old.txt")})
    assert "unreachable" in repr(acc)
    with pytest.raises(LedgerUnreachableError, match="older dpsk"):
        acc.spend(0.1)


# -- copies on other machines --------------------------------------------------------
def test_a_copy_whose_journal_path_holds_another_file_refuses_before_the_data(data):
    X, y = data
    acc = BudgetAccountant(epsilon=1.0)
    copy = joblib.load(_dumped(acc))
    path = acc._journal.path
    other = BudgetAccountant(epsilon=1.0)
    other_path = joblib.load(_dumped(other))._journal.path
    os.replace(path, path + ".moved")
    try:
        # Another machine's file at the same path (or a replaced one): not this journal.
        with open(other_path) as src, open(path, "w") as dst:
            dst.write(src.read())
        with pytest.raises(LedgerUnreachableError, match="not its journal"):
            copy.spend(0.1)
        X_bad = X.copy()
        X_bad[0, 0] = np.nan  # refused for the ledger before the data is looked at
        with pytest.raises(LedgerUnreachableError):
            DPLogisticRegression(epsilon=0.5, classes=[0, 1], accountant=copy).fit(X_bad, y)
    finally:
        os.replace(path + ".moved", path)
    assert acc.spends == [] and other.spends == []


def _dumped(acc):
    import io

    buffer = io.BytesIO()
    joblib.dump(acc, buffer)
    buffer.seek(0)
    return buffer


_REMOTE = textwrap.dedent(
    """
    import sys
    import joblib
    sys.path.insert(0, {tests!r})
    import dpsk.accounting._journal
    from test_ledger_processes import _make_data
    from dpsk import DPLogisticRegression, LedgerUnreachableError

    dpsk.accounting._journal._host_identity = lambda: "another-machine|another-boot"
    X, y = _make_data()
    acc = joblib.load(sys.argv[1])
    try:
        DPLogisticRegression(epsilon=0.25, classes=[0, 1], accountant=acc).fit(X, y)
    except LedgerUnreachableError as exc:
        print("refused:", exc)
    else:
        print("spent")
    """
)


@pytest.mark.parametrize("journal", ["local", "shared"])
def test_a_copy_on_another_machine_refuses_unless_the_journal_is_shared(tmp_path, journal):
    # The child process claims another host identity: its /proc says nothing about
    # the owner, and the journal path means something only on shared storage.
    script = tmp_path / "remote.py"
    script.write_text(_REMOTE.format(tests=os.path.dirname(__file__)))
    acc = BudgetAccountant(epsilon=1.0)
    joblib.dump(acc, tmp_path / "acc.joblib")
    path = acc._journal.path
    if journal == "local":
        os.replace(path, path + ".elsewhere")  # the other machine's /tmp lacks it
    try:
        out = subprocess.run([sys.executable, str(script), str(tmp_path / "acc.joblib")],
                             capture_output=True, text=True, check=True).stdout
    finally:
        if journal == "local":
            os.replace(path + ".elsewhere", path)
    if journal == "local":
        assert out.startswith("refused:") and "another machine" in out
        assert acc.spends == []
    else:
        assert out.startswith("spent")
        assert acc.spends == [(0.25, 0.0)]


def test_journal_directory_for_shared_storage(tmp_path, monkeypatch):
    monkeypatch.setenv("DPSK_JOURNAL_DIR", str(tmp_path))
    acc = BudgetAccountant(epsilon=1.0)
    path = joblib.load(_dumped(acc))._journal.path
    assert os.path.dirname(path) == str(tmp_path)
    with open(path) as handle:
        header = json.loads(handle.readline())
    assert header["journal_id"] == acc._journal.journal_id and len(header["journal_id"]) == 32


# -- a long session's journal ---------------------------------------------------------
def test_each_spend_reads_only_the_lines_appended_since(data, monkeypatch):
    # Re-parsing the whole journal on every check made a session's fits quadratic
    # once its ledger had been shared (hours for thousands of fits).
    from dpsk.accounting import _journal

    acc = BudgetAccountant(epsilon=10.0)
    copy = joblib.load(_dumped(acc))  # a second object on the same journal
    parsed = []
    real = _journal._Journal._parse
    monkeypatch.setattr(_journal._Journal, "_parse",
                        lambda self, lines: parsed.append(len(lines)) or real(self, lines))
    for i in range(30):
        (acc if i % 2 else copy).spend(PureDPEvent(0.25))
    # Each object reads the other's lines once, and its own never again.
    assert sum(parsed) <= 30
    assert acc.total() == copy.total() == (7.5, 0.0)
    with pytest.raises(BudgetExceededError):
        copy.spend(PureDPEvent(2.75))
    assert len(acc.events) == len(copy.events) == 30


def test_a_half_written_line_after_earlier_reads_is_still_refused(data):
    acc = BudgetAccountant(epsilon=10.0)
    copy = joblib.load(_dumped(acc))
    acc.spend(PureDPEvent(1.0))
    assert copy.total() == (1.0, 0.0)  # the copy has read the journal this far
    with open(acc._journal.path, "a") as handle:
        handle.write('{"kind": "pure", "epsi')  # a writer killed mid-line
    for ledger in (acc, copy):
        with pytest.raises(LedgerUnreachableError, match="damaged"):
            ledger.spend(PureDPEvent(1.0))
