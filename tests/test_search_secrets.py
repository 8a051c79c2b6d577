"""Nothing about a search's internals leaves it (issue 24, breaks 3 and 4).

Random stopping's guarantee (3 eps0) holds only while the number of runs ``K``
stays secret. The audit read ``K`` off the journal files that each run's
throwaway ledger created when it was pickled to a worker, and off the lines an
inner ``Pipeline(verbose=True)`` printed. Here, with ``K`` forced by replacing
the plan, every channel but time is checked to look the same for different
``K``: files created (in ``DPSK_JOURNAL_DIR`` and the temp dir, watched during
the search), joblib tasks, threads and worker processes, objects the ledgers
leave behind, stdout/stderr (file descriptors included) and logging, the
exception of a failed run, and the user's ledger (one event per search).
Also unit tests of the two pieces: :class:`ScratchLedger` and ``muted()``.
"""

import gc
import logging
import os
import pickle
import sys
import tempfile
import threading
import time
import warnings
import weakref

import joblib
import numpy as np
import pytest
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer

from dpsk import BudgetAccountant, DPLogisticRegression, PrivateFitError, PureDPEvent
from dpsk._silence import muted
from dpsk.accounting import _journal, _ledger
from dpsk.accounting._scratch import ScratchLedger
from dpsk.model_selection import DPGridSearch, _search

GRID = {"alpha": [1e-3, 1e-2, 1e-1]}
EPSILON = 0.9


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 3))
    X /= np.linalg.norm(X, axis=1, keepdims=True).max()
    y = (X[:, 0] + 0.1 * rng.standard_normal(200) > 0).astype(int)
    return X, y


def force_runs(monkeypatch, n_runs, candidates=None):
    """Replace the secret plan: ``n_runs`` runs (of the given candidates, or cycling)."""
    def plan(m, gamma, rng):
        if candidates is not None:
            return np.asarray(candidates, dtype=np.int64)
        return np.arange(n_runs, dtype=np.int64) % m
    monkeypatch.setattr(_search, "random_stopping_plan", plan)


def make_search(estimator=None, **kwargs):
    params = dict(param_grid=GRID, epsilon=EPSILON, method="random-stopping",
                  accountant=BudgetAccountant(), n_jobs=2)
    params.update(kwargs)
    return DPGridSearch(estimator or DPLogisticRegression(classes=[0, 1]), **params)


class Watcher(threading.Thread):
    """Polls, during a search, what a local user could list: files, threads, processes."""

    def __init__(self, directories):
        super().__init__(daemon=True)
        self.directories = directories
        self.files, self.threads, self.children = set(), 0, 0
        self.stop = threading.Event()

    def run(self):
        psutil = _psutil()
        while not self.stop.is_set():
            for directory in self.directories:
                self.files.update((directory, name) for name in os.listdir(directory))
            self.threads = max(self.threads, threading.active_count())
            if psutil is not None:
                self.children = max(self.children,
                                    len(psutil.Process().children(recursive=True)))
            time.sleep(0.001)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.join()


def settle(timeout=10.0):
    """Wait until the threads of earlier pools have ended (a pool's threads stop
    after its call returns), so that every search starts from the same state."""
    deadline = time.monotonic() + timeout
    count = threading.active_count()
    while time.monotonic() < deadline:
        time.sleep(0.05)
        now = threading.active_count()
        if now == count:
            break
        count = now
    gc.collect()


def _psutil():
    try:
        import psutil
    except ImportError:  # pragma: no cover - psutil is optional
        return None
    return psutil


@pytest.fixture
def private_dirs(tmp_path, monkeypatch):
    """A journal directory and a temp dir of this test's own, empty at the start."""
    journals, temp = tmp_path / "journals", tmp_path / "tmp"
    journals.mkdir()
    temp.mkdir()
    monkeypatch.setenv("DPSK_JOURNAL_DIR", str(journals))
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    return [str(journals), str(temp)]


@pytest.fixture
def journals_created(monkeypatch):
    """The number of journal files created, counted where they are made."""
    created = []
    real = _journal._Journal.create.__func__

    def counting(cls, events):
        created.append(1)
        return real(cls, events)

    monkeypatch.setattr(_journal._Journal, "create", classmethod(counting))
    return created


def _observe(search, X, y, directories, created):
    """Fit under a Watcher; return what an observer of the machine would see."""
    before_created = len(created)
    settle()
    with Watcher(directories) as watcher:
        search.fit(X, y)
    gc.collect()
    return {
        "journals created": len(created) - before_created,
        "files seen during": frozenset(watcher.files),
        "files after": frozenset((d, n) for d in directories for n in os.listdir(d)),
        "ledger events": tuple(search.accountant.events),
        "finalizers": len(weakref.finalize._registry),
        "tracked ledgers": len(_ledger._LEDGERS),
    }


# -- files, objects and the ledger --------------------------------------------------------
@pytest.mark.parametrize("backend", ["loky", "threading"])
def test_no_file_or_ledger_object_counts_the_runs(data, monkeypatch, private_dirs,
                                                  journals_created, backend):
    X, y = data
    seen = {}
    with joblib.parallel_config(backend=backend):
        make_search().fit(X, y)  # warm-up: a pool's one-off files and threads
        for n_runs in (1, 9, 2):
            force_runs(monkeypatch, n_runs)
            seen[n_runs] = _observe(make_search(), X, y, private_dirs, journals_created)
    assert seen[1] == seen[9] == seen[2]
    assert seen[1]["journals created"] == 0
    assert seen[1]["files seen during"] == frozenset()
    assert seen[1]["ledger events"] == (PureDPEvent(EPSILON),)


def test_the_file_count_sees_a_journal_when_one_is_made(data, monkeypatch, private_dirs,
                                                        journals_created):
    """Power: inner fits on ordinary ledgers, pickled to worker processes, are seen."""
    X, y = data
    force_runs(monkeypatch, 4)
    monkeypatch.setattr(_search, "ScratchLedger", BudgetAccountant)
    with joblib.parallel_config(backend="loky"):
        seen = _observe(make_search(), X, y, private_dirs, journals_created)
    assert seen["journals created"] > 0


@pytest.mark.parametrize("method", ["disjoint", "random-stopping"])
def test_one_event_for_the_whole_search_and_no_journal(data, monkeypatch, private_dirs,
                                                       journals_created, method):
    X, y = data
    force_runs(monkeypatch, 5)
    with BudgetAccountant(epsilon=2.0) as acc, joblib.parallel_config(backend="loky"):
        DPGridSearch(DPLogisticRegression(classes=[0, 1]), GRID, epsilon=EPSILON,
                     method=method, n_jobs=2, refit=True).fit(X, y)
    assert acc.events == [PureDPEvent(2 * EPSILON)]
    assert journals_created == []


# -- tasks, threads and processes ---------------------------------------------------------
def test_tasks_threads_and_processes_do_not_count_the_runs(data, monkeypatch, private_dirs,
                                                           journals_created):
    X, y = data
    tasks, started = [], []
    real_parallel, real_start = _search.Parallel, threading.Thread.start

    class CountingParallel(real_parallel):
        def __call__(self, iterable):
            iterable = list(iterable)
            tasks.append(len(iterable))
            return super().__call__(iterable)

    def counting_start(thread):
        started.append(type(thread).__name__)
        return real_start(thread)

    monkeypatch.setattr(_search, "Parallel", CountingParallel)
    for backend in ("threading", "loky"):
        seen = set()
        with joblib.parallel_config(backend=backend):
            make_search().fit(X, y)  # warm-up
            for n_runs in (1, 7):
                force_runs(monkeypatch, n_runs)
                tasks.clear()
                with Watcher(private_dirs) as watcher:
                    # Threads started, not alive: a finished pool's threads may
                    # linger for a while, whatever the search did.
                    monkeypatch.setattr(threading.Thread, "start", counting_start)
                    started.clear()
                    make_search().fit(X, y)
                    monkeypatch.setattr(threading.Thread, "start", real_start)
                seen.add((tuple(tasks), tuple(sorted(started)), watcher.children))
        assert len(seen) == 1, (backend, seen)
        assert next(iter(seen))[0] == (joblib.effective_n_jobs(2),)


# -- output and logging -------------------------------------------------------------------
@pytest.mark.parametrize("estimator", [
    Pipeline([("f", FunctionTransformer()), ("clf", DPLogisticRegression(classes=[0, 1]))],
             verbose=True),
    Pipeline([("outer", Pipeline([("f", FunctionTransformer()),
                                  ("clf", DPLogisticRegression(classes=[0, 1]))],
                                 verbose=True))]),
], ids=["pipeline", "nested"])
@pytest.mark.parametrize("method", ["disjoint", "random-stopping"])
def test_printing_inner_estimators_are_refused_free(data, monkeypatch, estimator, method):
    X, y = data
    monkeypatch.setattr(_search, "_fit_and_count", lambda *a: pytest.fail("fitted"))
    prefix = "clf__" if "clf" in estimator.named_steps else "outer__clf__"
    acc = BudgetAccountant()
    search = DPGridSearch(estimator, {prefix + "alpha": GRID["alpha"]}, accountant=acc,
                          method=method)
    with pytest.raises(ValueError, match="print as they fit"):
        search.fit(X, y)
    assert acc.spends == []


def test_a_printing_later_candidate_is_refused_and_quiet_ones_run(data):
    X, y = data
    pipe = Pipeline([("f", FunctionTransformer()), ("clf", DPLogisticRegression(classes=[0, 1]))])
    acc = BudgetAccountant()
    with pytest.raises(ValueError, match=r"Candidate 1 has \['verbose'\]"):
        DPGridSearch(pipe, {"verbose": [False, True]}, accountant=acc).fit(X, y)
    assert acc.spends == []
    DPGridSearch(pipe, {"verbose": [False], "clf__alpha": [0.1, 1.0]}, accountant=acc,
                 stop_probability=0.5).fit(X, y)
    assert len(acc.spends) == 1


def _output_targets():
    """Where this process's output goes now: descriptors 1 and 2, sys streams, logging."""
    return (os.readlink("/proc/self/fd/1"), os.readlink("/proc/self/fd/2"),
            getattr(sys.stdout, "name", None), getattr(sys.stderr, "name", None),
            logging.root.manager.disable >= logging.CRITICAL)


class LoudLogisticRegression(DPLogisticRegression):
    """A dpsk estimator that prints, logs and warns in every way as it fits.

    It also notes where its output went (``output_targets_``): in a worker
    process started before the test, pytest cannot see the descriptors.
    """

    def fit(self, X, y, **fit_params):
        if os.path.isdir("/proc/self/fd"):
            self.output_targets_ = _output_targets()
        print("LOUD print")
        sys.stderr.write("LOUD stderr\n")
        os.write(1, b"LOUD fd1\n")
        os.write(2, b"LOUD fd2\n")
        logging.getLogger("loud").error("LOUD log")
        warnings.warn("LOUD warning")
        return super().fit(X, y, **fit_params)


@pytest.mark.parametrize("backend", ["sequential", "threading", "loky"])
def test_nothing_printed_or_logged_by_inner_fits_gets_out(data, monkeypatch, capfd, caplog,
                                                          backend):
    X, y = data
    force_runs(monkeypatch, 4)
    caplog.set_level(logging.DEBUG)
    previous = logging.root.manager.disable
    print("before")
    with joblib.parallel_config(backend=backend), warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        search = make_search(LoudLogisticRegression(classes=[0, 1])).fit(X, y)
    print("after")
    out, err = capfd.readouterr()
    assert (out, err) == ("before\nafter\n", "")
    assert caplog.records == [] and seen == []
    assert logging.root.manager.disable == previous
    assert search.accountant.events == [PureDPEvent(EPSILON)]
    if os.path.isdir("/proc/self/fd"):
        assert search.best_estimator_.output_targets_ == (os.devnull,) * 4 + (True,)


# -- a failed run -------------------------------------------------------------------------
class FailingLogisticRegression(DPLogisticRegression):
    """Fails, with a message quoting the data, when trained with alpha = 0.1."""

    def fit(self, X, y, **fit_params):
        if self.alpha == 0.1:
            print("FAILING")
            raise ArithmeticError(f"secret first row {float(np.asarray(X)[0, 0])!r}")
        return super().fit(X, y, **fit_params)


@pytest.mark.parametrize("backend", ["sequential", "loky"])
def test_a_failed_run_does_not_say_which(data, monkeypatch, capfd, backend):
    X, y = data
    messages = set()
    plans = [[2], [0, 1, 0, 2, 1], [1, 1, 1, 1, 1, 1, 1, 2]]  # the failing run moves
    for plan in plans if backend == "sequential" else plans[1:2]:
        force_runs(monkeypatch, len(plan), candidates=plan)
        acc = BudgetAccountant()
        search = make_search(FailingLogisticRegression(classes=[0, 1]), accountant=acc)
        with joblib.parallel_config(backend=backend), pytest.raises(PrivateFitError) as info:
            search.fit(X, y)
        assert info.value.__cause__ is None and info.value.__context__ is None
        assert "secret" not in str(info.value)
        assert acc.events == [PureDPEvent(EPSILON)]
        assert not hasattr(search, "best_estimator_")
        messages.add(str(info.value))
    assert len(messages) == 1
    assert capfd.readouterr() == ("", "")


# -- the scratch ledger -------------------------------------------------------------------
def test_scratch_ledger_pickles_empty_and_writes_nothing(private_dirs, journals_created):
    ledger = ScratchLedger()
    DPLogisticRegression(classes=[0, 1], accountant=ledger).fit([[0.1], [-0.1]], [0, 1])
    assert [e.epsilon for e in ledger.events] == [1.0]
    copy = pickle.loads(pickle.dumps(ledger))
    assert type(copy) is ScratchLedger and copy is not ledger and copy.events == []
    # Before os.fork, the ledgers in _LEDGERS move to journals: not this one.
    assert ledger not in _ledger._LEDGERS
    ledger._share()
    assert ledger._journal is None and journals_created == []
    assert os.listdir(private_dirs[0]) == []
    assert "ScratchLedger" in repr(ledger)


def test_scratch_ledger_works_in_a_forked_copy_and_is_never_a_default():
    ledger = ScratchLedger()
    ledger._home_pid = -1  # as seen from a forked child
    ledger.spend(0.5)  # its own bookkeeping: nobody else needs to see it
    assert ledger.total() == (0.5, 0.0)
    with pytest.raises(TypeError, match="default ledger"):
        with ledger:
            pass


# -- muted() ------------------------------------------------------------------------------
def test_muted_discards_everything_and_restores(capfd, caplog):
    caplog.set_level(logging.DEBUG)
    streams, level = (sys.stdout, sys.stderr), logging.root.manager.disable
    targets = [os.fstat(fd).st_ino for fd in (1, 2)]
    print("kept", end="")  # buffered before the block: must not be swallowed
    with muted():
        print("lost")
        os.write(1, b"lost")
        os.write(2, b"lost")
        logging.getLogger("x").critical("lost")
        with muted():  # re-entrant
            print("lost")
        print("lost")
    print("!")
    assert capfd.readouterr() == ("kept!\n", "")
    assert caplog.records == []
    assert (sys.stdout, sys.stderr) == streams
    assert logging.root.manager.disable == level
    assert [os.fstat(fd).st_ino for fd in (1, 2)] == targets


def test_muted_flushes_compiled_code_output_into_the_void(capfd):
    ctypes = pytest.importorskip("ctypes")
    try:
        libc = ctypes.CDLL(None)
    except OSError:  # pragma: no cover - no C library handle
        pytest.skip("no C library")
    with muted():
        libc.printf(b"lost in C\n")  # sits in the C buffer until flushed
    libc.fflush(None)
    assert "lost" not in capfd.readouterr().out


def test_muted_holds_until_the_last_thread_leaves(capfd):
    inside, release = threading.Event(), threading.Event()

    def other():
        with muted():
            inside.set()
            release.wait(10)

    thread = threading.Thread(target=other)
    thread.start()
    inside.wait(10)
    with muted():
        pass  # this thread leaves first: the other one is still muted
    print("lost")
    release.set()
    thread.join()
    print("seen")
    assert capfd.readouterr().out == "seen\n"


def test_console_stderr_reaches_the_real_console_inside_a_muted_block():
    import os

    from dpsk._silence import console_stderr, muted

    read_end, write_end = os.pipe()
    saved = os.dup(2)
    os.dup2(write_end, 2)
    try:
        with muted():
            os.write(2, b"secret\n")  # descriptor 2 goes nowhere here
            stream = console_stderr()
            stream.write("elapsed 3s\n")
            stream.close()
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(write_end)
    with os.fdopen(read_end) as pipe:
        assert pipe.read() == "elapsed 3s\n"


# -- shared memory and joblib's folders (issue 34, break 1) -------------------------------
# A design over joblib's max_nbytes (1 MB): a pool started for it memory-maps it into a
# folder of its own, under /dev/shm (named with the process id) or JOBLIB_TEMP_FOLDER.
BIG_SHAPE = (11_000, 13)


@pytest.fixture(scope="module")
def big_data():
    rng = np.random.default_rng(3)
    X = rng.standard_normal(BIG_SHAPE)
    X /= np.linalg.norm(X, axis=1, keepdims=True).max()
    y = (X[:, 0] + 0.1 * rng.standard_normal(BIG_SHAPE[0]) > 0).astype(int)
    assert X.nbytes > 1_000_000
    return X, y


class ShmWatcher(Watcher):
    """Counts the entries that appear during a search: everything in a private joblib
    temp folder, and the entries of /dev/shm that carry this process's id (other
    processes of the machine write there too)."""

    def __init__(self, temp_folder):
        super().__init__([])
        self.temp_folder, self.pid = temp_folder, str(os.getpid())
        self.seen = set()

    def listing(self):
        entries = {os.path.join(root, n) for root, dirs, names in os.walk(self.temp_folder)
                   for n in dirs + names}
        if os.path.isdir("/dev/shm"):
            entries.update(os.path.join("/dev/shm", n) for n in os.listdir("/dev/shm")
                           if self.pid in n)
        return entries

    def run(self):
        while not self.stop.is_set():
            self.seen.update(self.listing())
            time.sleep(0.0005)

    def __enter__(self):
        self.before = self.listing()  # what earlier pools left: not this search's doing
        return super().__enter__()

    def new(self):
        return self.seen - self.before


def force_any_runs(monkeypatch, method, n_runs):
    """Fix the secret number of runs of ``method`` (disjoint has none: m runs)."""
    if method == "random-stopping":
        force_runs(monkeypatch, n_runs)
    elif method == "repeat":
        from dpsk.model_selection import _repeat
        monkeypatch.setattr(_repeat, "truncated_negative_binomial", lambda *a: n_runs)


def _entries_during(search, X, y, temp_folder):
    settle()
    with ShmWatcher(temp_folder) as watcher:
        search.fit(X, y)
    return len(watcher.new())


#: setup: (the candidate's parameters, the user's parallel_config, whether the search's
#: own pool may leave files: a process pool does, once, whatever the number of runs)
INNER_PARALLELISM = {
    # the candidate asks for two workers; the search itself runs in this thread
    "estimator n_jobs=2": (dict(n_jobs=2), dict(), False),
    # every parameter at its default, inside a parallel_config of the user's
    "parallel_config(n_jobs=2)": (dict(), dict(n_jobs=2), True),
    "threads, n_jobs=2 inside": (dict(n_jobs=2), dict(backend="threading", n_jobs=2), False),
}


@pytest.mark.parametrize("method", ["repeat", "random-stopping", "disjoint"])
@pytest.mark.parametrize("setup", sorted(INNER_PARALLELISM))
def test_inner_parallelism_leaves_no_folder_counting_the_runs(big_data, monkeypatch, tmp_path,
                                                              method, setup):
    X, y = big_data
    estimator_params, config, own_pool_files = INNER_PARALLELISM[setup]
    temp_folder = tmp_path / "joblib"
    temp_folder.mkdir()
    monkeypatch.setenv("JOBLIB_TEMP_FOLDER", str(temp_folder))
    def search():
        return DPGridSearch(DPLogisticRegression(classes=[0, 1], **estimator_params),
                            {"alpha": [1e-2, 1e-1]}, epsilon=EPSILON, method=method,
                            refit=method != "repeat", accountant=BudgetAccountant())

    seen = {}
    with joblib.parallel_config(**config):
        search().fit(X, y)  # warm-up: a pool's one-off files
        for n_runs in (1, 5, 1):
            force_any_runs(monkeypatch, method, n_runs)
            seen.setdefault(n_runs, set()).add(_entries_during(search(), X, y, temp_folder))
    assert seen[1] == seen[5] and len(seen[1]) == 1, seen
    if not own_pool_files:
        assert seen[1] == {0}, seen  # no process pool at all: nothing was created


def test_the_shm_watch_sees_inner_pools_when_they_are_made(big_data, monkeypatch, tmp_path):
    """Power: without ``one_process`` each run's inner pool leaves its folder."""
    from contextlib import nullcontext

    from dpsk.model_selection import _repeat
    X, y = big_data
    temp_folder = tmp_path / "joblib"
    temp_folder.mkdir()
    monkeypatch.setenv("JOBLIB_TEMP_FOLDER", str(temp_folder))
    monkeypatch.setattr(_repeat, "one_process", nullcontext)
    counts = []
    for n_runs in (1, 4):
        force_any_runs(monkeypatch, "repeat", n_runs)
        search = DPGridSearch(DPLogisticRegression(classes=[0, 1], n_jobs=2),
                              {"alpha": [1e-2, 1e-1]}, epsilon=EPSILON, method="repeat",
                              accountant=BudgetAccountant())
        counts.append(_entries_during(search, X, y, temp_folder))
    assert counts[1] > counts[0], counts


def test_one_process_is_thread_local():
    """The search's own pool, entered outside the block in another thread, keeps its
    backend while a run in this thread is forced to be sequential."""
    from dpsk._silence import one_process
    inside, release, backends = threading.Event(), threading.Event(), {}

    def other():
        with one_process():
            backends["run"] = type(joblib.parallel.get_active_backend()[0]).__name__
            inside.set()
            release.wait(10)

    thread = threading.Thread(target=other)
    thread.start()
    inside.wait(10)
    with joblib.parallel_config(backend="threading"):
        backends["own"] = type(joblib.parallel.get_active_backend()[0]).__name__
    release.set()
    thread.join()
    assert backends == {"run": "SequentialBackend", "own": "ThreadingBackend"}
