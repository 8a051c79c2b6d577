"""The default ledger per thread and per asyncio task (contextvars)."""

import asyncio
import pickle
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from joblib import parallel_backend
from sklearn.model_selection import cross_val_score

from dpsk import BudgetAccountant, DPLogisticRegression, default_accountant

# These ledger tests fit with undeclared classes for brevity; the warning
# itself is tested in test_fit_protocol.py.
pytestmark = pytest.mark.filterwarnings("ignore::dpsk.ClassesFromDataWarning")


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((120, 3))
    X /= np.linalg.norm(X, axis=1, keepdims=True).max()
    return X, (X[:, 0] > 0).astype(int)


def _fit(data, epsilon=0.5, accountant=None):
    X, y = data
    DPLogisticRegression(epsilon=epsilon, accountant=accountant, random_state=0).fit(X, y)


def test_two_threads_two_with_blocks(data):
    ledgers = [BudgetAccountant(epsilon=1.0), BudgetAccountant(epsilon=1.0)]
    barrier = threading.Barrier(2, timeout=30)
    errors = []

    def run(i):
        try:
            with ledgers[i]:
                barrier.wait()  # both with-blocks are open before anyone fits
                _fit(data)
                barrier.wait()
                _fit(data)
                barrier.wait()
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for ledger in ledgers:
        assert ledger.total() == (1.0, 0.0)
        assert len(ledger.spends) == 2


def test_asyncio_tasks_each_see_their_own_block(data):
    ledgers = [BudgetAccountant(), BudgetAccountant()]

    async def task(i, n):
        with ledgers[i]:
            for _ in range(n):
                await asyncio.sleep(0)  # let the other task run inside its own block
                assert default_accountant() is ledgers[i]
                _fit(data, epsilon=0.1)

    async def main():
        await asyncio.gather(task(0, 2), task(1, 3))

    asyncio.run(main())
    assert len(ledgers[0].spends) == 2
    assert len(ledgers[1].spends) == 3


@pytest.mark.filterwarnings("ignore::dpsk.NonPrivateSelectionWarning")
def test_pool_threads_charge_the_only_open_block(data):
    # Threads do not inherit context variables; pool threads serving a with-block
    # must still charge it rather than the process-wide ledger.
    X, y = data
    with BudgetAccountant(epsilon=5.0) as acc:
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(lambda _: _fit(data, epsilon=0.25), range(4)))
        with parallel_backend("threading", n_jobs=2):
            cross_val_score(DPLogisticRegression(epsilon=0.25), X, y, cv=3)
    assert acc.total()[0] == pytest.approx(1.75)
    assert len(acc.spends) == 7


def test_ambiguous_default_is_refused(data):
    ledgers = [BudgetAccountant(), BudgetAccountant()]
    inside, release = threading.Barrier(3, timeout=30), threading.Event()

    def hold(i):
        with ledgers[i]:
            inside.wait()
            release.wait(30)

    threads = [threading.Thread(target=hold, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    try:
        inside.wait()
        with pytest.raises(RuntimeError, match="ambiguous"):
            _fit(data)
        # A copy pickled now (for a worker) carries the refusal, not a guess.
        payload = pickle.dumps(DPLogisticRegression(epsilon=0.5))
        # An explicit ledger, or this thread's own block, is never ambiguous.
        mine = BudgetAccountant()
        _fit(data, accountant=mine)
        with mine:
            _fit(data)
        assert len(mine.spends) == 2
    finally:
        release.set()
        for t in threads:
            t.join()
    assert ledgers[0].spends == [] and ledgers[1].spends == []
    with pytest.raises(RuntimeError, match="ambiguous"):
        pickle.loads(payload).fit(*data)
