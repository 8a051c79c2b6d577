"""Dask arrays on a LocalCluster: noisy gradient descent and the certified solver.

Skipped without dask and distributed (``pip install dpsk[dask]``).
"""

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")

from sklearn import config_context  # noqa: E402

from dpsk import BudgetAccountant, DPHuberSVM, DPLogisticRegression  # noqa: E402
from dpsk._data._dask import DaskDesignRows, _BlockGradients  # noqa: E402
from dpsk._data._design import DesignRows, gradient_chunk_rows  # noqa: E402
from dpsk._optimize._losses import HuberLoss, LogisticLoss, MultinomialLoss  # noqa: E402
from dpsk._silence import silenced  # noqa: E402
from dpsk.mechanisms._erm import private_erm  # noqa: E402
from dpsk.mechanisms._gradient import _run, noisy_gd_schedule, noisy_gradient_descent  # noqa: E402
from dpsk.mechanisms._random import noise_source  # noqa: E402

CHUNK = 500


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(processes=True, n_workers=2, threads_per_worker=1,
                                  dashboard_address=None) as cluster:
        with distributed.Client(cluster) as c:
            yield c


def _data(n=3000, d=6, seed=0):
    rng = np.random.default_rng(seed)
    X = (rng.standard_normal((n, d)) * 0.6).astype(np.float32)
    y = np.digitize(X[:, 0] + 0.3 * rng.standard_normal(n), [-0.4, 0.4])  # 3 classes
    return X, y


def _dask(X, y):
    return da.from_array(X, chunks=(CHUNK, X.shape[1])), da.from_array(y, chunks=CHUNK)


@pytest.mark.parametrize("loss", [LogisticLoss(), MultinomialLoss(3)])
def test_dask_descent_is_the_chunked_descent_bit_for_bit(client, loss):
    X, y = _data()
    Xd, yd = _dask(X, y)
    if loss.n_outputs == 1:
        y, yd = np.where(y == 2, 1.0, -1.0), da.where(yd == 2, 1.0, -1.0)
    args = (loss, 1.0, 1e-6, 0.1)
    w_mem = noisy_gradient_descent(DesignRows(X, 1.5, True, block=CHUNK), y, *args,
                                   noise_source(11))
    w_dask = noisy_gradient_descent(DaskDesignRows(Xd, 1.5, True), yd, *args, noise_source(11))
    # Same blocks, same block sums, added in the same order, same noise: same bits.
    np.testing.assert_array_equal(w_dask, w_mem)


def test_dask_descent_in_chunks_is_the_chunked_descent_bit_for_bit(client):
    # 256 design columns: 1024 rows per 2 MiB chunk, so each block of 1300 rows is
    # summed in two chunks, on the worker and in DesignRows alike.
    X, y = _data(n=2600, d=255)
    y = np.where(y == 2, 1.0, -1.0)
    Xd, yd = da.from_array(X, chunks=(1300, 255)), da.from_array(y, chunks=1300)
    assert gradient_chunk_rows(256) == 1024
    args = (LogisticLoss(), 1.0, 1e-6, 0.1)
    w_mem = noisy_gradient_descent(DesignRows(X, 1.5, True, block=1300), y, *args,
                                   noise_source(3))
    w_dask = noisy_gradient_descent(DaskDesignRows(Xd, 1.5, True), yd, *args, noise_source(3))
    np.testing.assert_array_equal(w_dask, w_mem)


def test_dask_descent_without_a_distributed_client_runs_here_bit_for_bit(client):
    import dask

    X, y = _data()
    y = np.where(y == 2, 1.0, -1.0)
    Xd, yd = _dask(X, y)
    args = (LogisticLoss(), 1.0, 1e-6, 0.1)
    w_mem = noisy_gradient_descent(DesignRows(X, 1.5, True, block=CHUNK), y, *args,
                                   noise_source(4))
    client.run(_count_gradient_calls)
    with dask.config.set(scheduler="threads"):
        w_dask = noisy_gradient_descent(DaskDesignRows(Xd, 1.5, True), yd, *args,
                                        noise_source(4))
    np.testing.assert_array_equal(w_dask, w_mem)
    assert set(client.run(_counted_gradient_calls).values()) == {0}


def test_dask_descent_with_an_empty_block(client):
    # A filtered Dask array can have blocks of no rows: they add a zero sum.
    X, y = _data(n=1500)
    y = np.where(y == 2, 1.0, -1.0)
    Xd, yd = _dask(X, y)
    Xd, yd = Xd.rechunk(((500, 500, 0, 500), (6,))), yd.rechunk(((500, 500, 0, 500),))
    args = (LogisticLoss(), 1.0, 1e-6, 0.1)
    w_mem = noisy_gradient_descent(DesignRows(X, 1.5, True, block=CHUNK), y, *args,
                                   noise_source(5))
    w_dask = noisy_gradient_descent(DaskDesignRows(Xd, 1.5, True), yd, *args, noise_source(5))
    np.testing.assert_array_equal(w_dask, w_mem)


def test_gradient_blocks_on_several_threads_give_the_same_bits():
    # A worker with several threads computes its blocks concurrently; each block's
    # sum is one thread's work, so the list of sums is the same bits.
    X, y = _data(n=2000)
    y = np.where(y == 2, 1.0, -1.0)
    xs, ys = np.split(X, 4), np.split(y, 4)
    w = np.linspace(-1.0, 1.0, X.shape[1] + 1)
    one = _BlockGradients(xs, ys, 1.5, True).gradient_sums(LogisticLoss(), w)
    two = _BlockGradients(xs, ys, 1.5, True, threads=2).gradient_sums(LogisticLoss(), w)
    for a, b in zip(one, two):
        np.testing.assert_array_equal(a, b)


def _count_gradient_calls():
    """On a worker: count the calls of the gradient actors made in that process."""
    from dpsk._data import _dask

    cls = _dask._BlockGradients
    original = cls.__dict__.get("_dpsk_original", cls.gradient_sums)
    cls._dpsk_original, _dask._dpsk_test_calls = original, [0]

    def counted(self, *args):
        _dask._dpsk_test_calls[0] += 1
        return original(self, *args)

    cls.gradient_sums = counted


def _counted_gradient_calls():
    from dpsk._data import _dask

    return _dask._dpsk_test_calls[0]


def _transitions(dask_scheduler):
    return dask_scheduler.transition_counter


def _quiet_transitions(client):
    """The scheduler's transition count once the earlier tests' releases are done."""
    import gc
    import time

    gc.collect()
    count = client.run_on_scheduler(_transitions)
    for _ in range(50):
        time.sleep(0.1)
        count, previous = client.run_on_scheduler(_transitions), count
        if count == previous:
            break
    return count


def test_dask_descent_makes_one_call_per_worker_per_step_and_no_task(client):
    # The per-step cost was a task graph per step; now a step is one direct call to
    # each worker's actor, and the scheduler sees only the setup of the fit.
    X, y = _data(n=6000)
    y = np.where(y == 2, 1.0, -1.0)
    Xd, yd = _dask(X, y)  # 12 blocks
    Xd, yd = client.persist([Xd, yd])
    client.run(_count_gradient_calls)
    loss, record = LogisticLoss(), []
    before = _quiet_transitions(client)
    with silenced():
        _run(DaskDesignRows(Xd, 1.5, True), yd, loss, 1.0, 1e-6, 0.01, noise_source(0), 1,
             record=record)
    transitions = client.run_on_scheduler(_transitions) - before
    steps = noisy_gd_schedule(6000, 7, 0.01, loss, 1.0, 1e-6).n_steps
    assert len(record) == steps > 50
    calls = client.run(_counted_gradient_calls)
    # Each worker holds blocks here, and its actor is called exactly once a step.
    assert sorted(calls.values()) == [steps, steps]
    # The setup makes a handful of transitions (two actors: 6 alone); a task per
    # block per step made several per block per step (thousands here).
    assert transitions < 2 * steps


@pytest.mark.parametrize("model", [
    DPLogisticRegression(multi_class="ovr"), DPLogisticRegression(multi_class="multinomial"),
])
def test_dask_fit_matches_in_memory_fit(client, model):
    X, y = _data()
    params = dict(epsilon=1.0, delta=1e-6, alpha=0.1, perturbation="gradient",
                  classes=[0, 1, 2], random_state=5)
    mem = model.set_params(**params, accountant=BudgetAccountant()).fit(X, y)
    coef_mem, icpt_mem = mem.coef_.copy(), mem.intercept_.copy()
    dask_fit = model.set_params(accountant=BudgetAccountant()).fit(*_dask(X, y))
    # Block sums added in another order than one BLAS sum: ~1e-16 relative per step,
    # invisible after each step's rounding to the release grid but for a rare grid step.
    np.testing.assert_allclose(dask_fit.coef_, coef_mem, rtol=0, atol=1e-9)
    np.testing.assert_allclose(dask_fit.intercept_, icpt_mem, rtol=0, atol=1e-9)
    assert dask_fit.n_features_in_ == X.shape[1]
    np.testing.assert_array_equal(dask_fit.predict(X), mem.predict(X))


@pytest.mark.parametrize("loss, perturbation, delta", [
    (LogisticLoss(), "output", 0.0),
    (LogisticLoss(), "objective", 1e-6),
    (HuberLoss(0.5), "output", 1e-6),
    # Small h: continuation stages and exact line searches (margins kept on workers).
    (HuberLoss(0.005), "objective", 0.0),
])
def test_dask_certified_release_is_the_chunked_release_bit_for_bit(client, loss, perturbation,
                                                                    delta):
    X, y = _data()
    y = np.where(y == 2, 1.0, -1.0)
    Xd, yd = _dask(X, y)
    args = (loss, 1.0, 1e-2, perturbation)
    w_mem = private_erm(DesignRows(X, 1.5, True, block=CHUNK), y, *args, noise_source(11),
                        delta=delta)
    w_dask = private_erm(DaskDesignRows(Xd, 1.5, True), yd, *args, noise_source(11),
                         delta=delta)
    # Same kernels on the same blocks, block results added in the same order: the
    # solver's point, and with the same noise the release, are the same bits.
    np.testing.assert_array_equal(w_dask, w_mem)


def test_dask_hessian_vector_products_are_the_chunked_ones_bit_for_bit(client, monkeypatch):
    # Conjugate gradients (d > 2000 in real use), forced: each task gets the block's
    # kept clipping factors and curvatures together.
    import dpsk._optimize._solver as solver

    monkeypatch.setattr(solver, "_DENSE_HESSIAN_MAX_D", 0)
    X, y = _data()
    y = np.where(y == 2, 1.0, -1.0)
    Xd, yd = _dask(X, y)
    args = (HuberLoss(0.1), 1.0, 1e-2, "objective")
    w_mem = private_erm(DesignRows(X, 1.5, True, block=CHUNK), y, *args, noise_source(11))
    w_dask = private_erm(DaskDesignRows(Xd, 1.5, True), yd, *args, noise_source(11))
    np.testing.assert_array_equal(w_dask, w_mem)


@pytest.mark.parametrize("model", [
    DPLogisticRegression(perturbation="output", classes=[0, 1, 2], multi_class="ovr"),
    DPHuberSVM(perturbation="objective", classes=[0, 2]),
])
def test_dask_certified_fit_matches_in_memory_fit(client, model):
    X, y = _data()
    keep = np.isin(y, model.classes)
    X, y = X[keep], y[keep]
    params = dict(epsilon=1.0, alpha=0.1, random_state=5)
    mem = model.set_params(**params, accountant=BudgetAccountant()).fit(X, y)
    coef_mem, icpt_mem = mem.coef_.copy(), mem.intercept_.copy()
    dask_fit = model.set_params(accountant=BudgetAccountant()).fit(*_dask(X, y))
    # Both solver points are within tol / lambda of the same minimiser and the noise
    # is the same draw; the release grid can round them a grid step apart.
    np.testing.assert_allclose(dask_fit.coef_, coef_mem, rtol=0, atol=1e-8)
    np.testing.assert_allclose(dask_fit.intercept_, icpt_mem, rtol=0, atol=1e-8)
    np.testing.assert_array_equal(dask_fit.predict(X), mem.predict(X))


def _install_spies():
    """On a worker: record every spend and every noise draw made in that process."""
    import dpsk.accounting._ledger as accounting
    import dpsk.mechanisms._erm as erm
    import dpsk.mechanisms._gradient as gradient

    calls = []
    for owner, name in ((accounting.BudgetAccountant, "spend"),
                        (accounting.BudgetAccountant, "spend_all"),
                        (gradient, "gaussian_noise"),
                        (erm, "gaussian_noise"), (erm, "gamma_norm_noise")):
        original = getattr(owner, name)

        def spy(*args, _original=original, _name=name, **kwargs):
            calls.append(_name)
            return _original(*args, **kwargs)

        setattr(owner, name, spy)
    accounting._dpsk_test_calls = calls


def _spied_calls():
    import dpsk.accounting._ledger as accounting

    return list(accounting._dpsk_test_calls)


@pytest.mark.parametrize("perturbation, delta", [
    ("gradient", 1e-6), ("output", 0.0), ("objective", 1e-6),
])
def test_spend_and_noise_happen_on_the_client_only(client, perturbation, delta):
    client.run(_install_spies)
    X, y = _data()
    accountant = BudgetAccountant(epsilon=2.0, delta=1e-5)
    DPLogisticRegression(epsilon=1.0, delta=delta, alpha=0.1, perturbation=perturbation,
                         classes=[0, 1, 2], multi_class="ovr",
                         accountant=accountant).fit(*_dask(X, y))
    assert client.run(_spied_calls) == {addr: [] for addr in client.scheduler_info()["workers"]}
    assert len(accountant.spends) == 1
    assert accountant.spends[0] == pytest.approx((1.0, delta))


@pytest.mark.parametrize("case", ["multinomial", "nan", "label", "nan-output", "chunks"])
def test_dask_refusals_are_free(client, case):
    X, y = _data()
    kwargs = dict(epsilon=1.0, delta=1e-6, alpha=0.1, perturbation="gradient",
                  classes=[0, 1, 2])
    Xd, yd = _dask(X, y)
    if case == "multinomial":  # the softmax certified solver needs data in this process
        kwargs["perturbation"] = "output"
    elif case.startswith("nan"):
        X = X.copy()
        X[1234, 2] = np.nan
        Xd = _dask(X, y)[0]
        if case == "nan-output":
            kwargs.update(perturbation="output", multi_class="ovr")
    elif case == "label":
        yd = _dask(X, np.where(y == 2, 7, y))[1]
    else:
        Xd, yd = Xd[Xd[:, 0] > -100.0], yd[Xd[:, 0] > -100.0]  # unknown chunk sizes
        kwargs.update(perturbation="objective", multi_class="ovr")
    accountant = BudgetAccountant()
    with pytest.raises(ValueError, match="multinomial" if case == "multinomial" else None):
        DPLogisticRegression(**kwargs, accountant=accountant).fit(Xd, yd)
    assert accountant.spends == []


def test_chunked_in_memory_fit_matches_stored_fit():
    X, y = _data()
    params = dict(epsilon=1.0, delta=1e-6, perturbation="gradient", classes=[0, 1, 2],
                  random_state=5, accountant=BudgetAccountant())
    stored = DPLogisticRegression(**params).fit(X, y)
    with config_context(working_memory=0.01):
        chunked = DPLogisticRegression(**params).fit(X, y)
    np.testing.assert_allclose(chunked.coef_, stored.coef_, rtol=0, atol=1e-9)


def _fit_on_worker(X, y, accountant):
    model = DPLogisticRegression(epsilon=0.5, alpha=0.1, classes=[0, 1, 2],
                                 accountant=accountant)
    return model.fit(X, y).coef_.shape


def test_a_fit_run_on_a_worker_spends_on_the_users_ledger(client):
    # joblib's Dask backend (or client.submit) runs whole fits on workers: their
    # spends go through the ledger's journal file to the ledger held here.
    X, y = _data(n=300)
    accountant = BudgetAccountant(epsilon=1.0)
    assert client.submit(_fit_on_worker, X, y, accountant, pure=False).result() == (3, 6)
    assert accountant.spends == [(0.5, 0.0)]


def test_joblib_dask_backend_runs_parallel_parts_and_the_ledger_is_exact(client):
    # One-vs-rest problems and DPGridSearch candidates run as Dask tasks on the
    # workers; every spend lands once on the ledger held here.
    import joblib

    from dpsk import DPGridSearch

    X, y = _data(n=900)
    grid = {"alpha": [0.05, 0.2]}

    def fits(accountant):
        ovr = DPLogisticRegression(epsilon=0.6, alpha=0.1, classes=[0, 1, 2], multi_class="ovr",
                                   n_jobs=2, random_state=3, accountant=accountant).fit(X, y)
        search = DPGridSearch(DPLogisticRegression(classes=[0, 1, 2], multi_class="ovr"), grid,
                              epsilon=0.4, random_state=0, method="disjoint", n_jobs=2,
                              accountant=accountant).fit(X, y)
        return ovr.coef_, search.best_estimator_.coef_

    local = BudgetAccountant(epsilon=1.0)
    expected = fits(local)
    client.run(_count_releases)
    accountant = BudgetAccountant(epsilon=1.0)
    with joblib.parallel_backend("dask"):
        got = fits(accountant)
    # 3 one-vs-rest problems, then 2 candidates of 3 problems each, on the workers.
    assert sum(client.run(_counted_releases).values()) == 9
    assert accountant.spends == local.spends
    assert sum(e for e, _ in accountant.spends) == pytest.approx(1.0)
    for a, b in zip(got, expected):
        np.testing.assert_array_equal(a, b)


def _count_releases():
    """On a worker: count the private_erm calls made in that process."""
    import dpsk.linear_model._base as base
    import dpsk.mechanisms._erm as erm

    original, erm._dpsk_test_releases = erm.private_erm, [0]

    def counted(*args, **kwargs):
        erm._dpsk_test_releases[0] += 1
        return original(*args, **kwargs)

    erm.private_erm = base.private_erm = counted


def _counted_releases():
    import dpsk.mechanisms._erm as erm

    return erm._dpsk_test_releases[0]
