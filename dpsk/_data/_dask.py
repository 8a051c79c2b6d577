"""Dask arrays as training data: the row sums of a fit computed on a cluster.

Noisy gradient descent (``perturbation="gradient"``, ``dpsk.mechanisms._gradient``) reads
the data only through the average loss gradient at each step, a sum over rows.
With a Dask array ``X`` (and ``y``) and a ``distributed.Client``, the first
step of a problem persists ``(X, y)`` and starts on every worker one actor
(:class:`_BlockGradients`) over the blocks of ``X`` that worker holds, the
matching blocks of ``y`` and their clipping factors (computed there, once).
Each step then calls every actor once, directly (no task graph, no
scheduler), with the current weights; each returns the gradient sums of its
blocks (:func:`dpsk._data._design.gradient_sum_by_chunks`, the design rows built
there from the raw block in 2 MiB chunks), and the client adds the block sums
in block order. Without a distributed client the same object runs in this
process. The noise of the step is drawn on the client, once, from the fit's
secure source, after the sum has arrived: no worker ever sees noise, a noise
seed or the budget, and the spend is recorded by the estimator on the client
(``dpsk._mixin``), before the first step, exactly as for an in-memory fit.

The block sums are the ones of an in-memory chunked fit with the same row
blocks (``dpsk._data._design.DesignRows(X, ..., block=chunk)``, whose
``mean_gradient`` uses the same kernel) and are added in the same order, so a
Dask fit releases the same bits as that in-memory fit for the same noise draw
(tested).

Output and objective perturbation (binary and one-vs-rest models) run the
certified solver (``dpsk._optimize._solver``) on a Dask design too: every pass it makes
(loss, gradient, Hessian, the certificate's error sums, the line search) is a
per-block reduction (``dpsk._optimize._block_solver``) that :class:`DaskRowBlocks` runs
on the workers, and the client adds the block results in block order, so the
solver's point is the one of the in-memory chunked solve with the same blocks,
bit for bit. Vectors of length ``n`` stay with their blocks on the workers.
The noise of the release is drawn on the client, from the secure source:
after the solve for output perturbation; before it for objective
perturbation, whose linear term ``b / n`` enters only the client-side part of
F (the regulariser, ``_CertifiedObjective._regulariser_gradient``), never a
task. What the workers do see is the solver's iterates ``w``: they are not
private (they approach the exact minimiser, and with objective perturbation
the whole data set and the last iterate determine ``b``), so the cluster is
inside the trust boundary, as the client's memory is for an in-memory fit; the
guarantee is about what leaves the fit. Noisy gradient descent sends only its
noisy iterates. The multinomial (softmax) solver refuses Dask input, for
free, before anything is spent. Dask is an optional dependency (``pip install
dpsk[dask]``); nothing here imports it unless a Dask array is passed.
"""

import threading

import numpy as np

from .._silence import silenced
from ._design import (
    clip_factors_by_chunks,
    gradient_chunk_rows,
    gradient_sum_by_chunks,
    sum_in_order,
)
from ._threads import single_threaded_blas
from ._validation import check_classes, check_declared_classes

__all__ = ["is_dask_array", "DaskDesignRows", "DaskRowBlocks", "validate_dask_input"]


def is_dask_array(X):
    """Whether ``X`` is a ``dask.array.Array`` (without importing dask)."""
    return type(X).__module__.split(".")[0] == "dask" and hasattr(X, "chunks")


_NO_MULTINOMIAL = (
    "Dask arrays are supported with output and objective perturbation for binary and "
    "one-vs-rest models only: the multinomial (softmax) certified solver works on data in "
    "this process. Use multi_class='ovr', perturbation='gradient', or compute X. Nothing "
    "was spent."
)


def validate_dask_input(estimator, X, y):
    """Refuse Dask input outside the domain, for free; return ``(X, y, classes)``.

    ``X`` must be a 2-d float32 or float64 Dask array with known chunk sizes,
    finite; ``y`` a 1-d Dask array (or array-like) of the same length whose
    labels are among the declared classes. ``X`` is rechunked to whole rows
    and ``y`` to ``X``'s row blocks. One pass over the data (on the cluster)
    checks finiteness and the labels; only the yes/no answer comes back.
    """
    import dask
    import dask.array as da

    if X.ndim != 2 or X.dtype not in (np.float32, np.float64):
        raise ValueError("A Dask X must be a 2-d array of float32 or float64.")
    if any(np.isnan(c) for axis in X.chunks for c in axis):
        raise ValueError("A Dask X must have known chunk sizes (call X.compute_chunk_sizes()).")
    y = y if is_dask_array(y) else da.from_array(np.asarray(y), chunks=(X.chunks[0],))
    if y.ndim != 1 or y.shape[0] != X.shape[0]:
        raise ValueError("y must be 1-d with one label per row of X.")
    X = X.rechunk({1: -1})
    y = y.rechunk((X.chunks[0],))
    finite = da.isfinite(X).all()
    if estimator.classes is None:
        finite, labels = dask.compute(finite, da.unique(y))
        classes = check_classes(labels)
    else:
        classes = check_declared_classes(estimator.classes)
        finite, inside = dask.compute(finite, da.isin(y, classes).all())
        if not inside:
            raise ValueError(
                "y contains labels that are not among the declared classes (or of another "
                "type). Labels outside `classes` are outside the input domain; nothing was "
                "spent."
            )
    if not finite:
        raise ValueError("Input X contains NaN or infinity.")
    if estimator.perturbation != "gradient" and estimator._make_loss(len(classes)).n_outputs > 1:
        raise ValueError(_NO_MULTINOMIAL)
    estimator.n_features_in_ = X.shape[1]
    estimator.__dict__.pop("feature_names_in_", None)
    return X, y, classes


def class_indices(classes, y):
    """``np.searchsorted(classes, y)`` block by block on a Dask ``y``."""
    return y.map_blocks(lambda block: np.searchsorted(classes, block), dtype=np.intp)


def _single_threaded(kernel, *args):
    """Run ``kernel`` on a worker with one BLAS thread and silenced, as on the client.

    Silenced because a worker's warnings reach the analyst's console.
    """
    with single_threaded_blas(), silenced():
        return kernel(*args)


class DaskRowBlocks:
    """``dpsk._data._design.LocalRowBlocks`` on a cluster: kernels run where the blocks are.

    ``map`` sends one task per block (the arguments are small: weights, a
    direction, the public :class:`dpsk._optimize._block_solver.BlockSpec`) and brings
    back the per-block results in block order; ``keep`` persists per-block
    results (vectors of length ``n_b``) on the workers that computed them, so
    that later tasks find them there and they never travel to the client.
    """

    def __init__(self, X, y):
        import dask

        # The persisted arrays hold the futures of the blocks: keep them alive.
        self._arrays = dask.persist(X, y.rechunk((X.chunks[0],)))
        self._xs, self._ys = (a.to_delayed().ravel() for a in self._arrays)
        self.lengths = list(X.chunks[0])

    def _tasks(self, kernel, args, state):
        from dask import delayed

        task = delayed(_single_threaded, pure=True)
        state = [None] * len(self._xs) if state is None else state
        return [task(kernel, xb, yb, kept, *args)
                for xb, yb, kept in zip(self._xs, self._ys, state)]

    def map(self, kernel, *args, state=None):
        import dask

        return list(dask.compute(*self._tasks(kernel, args, state)))

    def keep(self, kernel, *args, state=None):
        import dask

        return list(dask.persist(*self._tasks(kernel, args, state)))

    def map_state(self, kernel, state, *args):
        import dask
        from dask import delayed

        task = delayed(_single_threaded, pure=True)
        return list(dask.compute(*[task(kernel, kept, *args) for kept in state]))


class _BlockGradients:
    """Blocks of ``(X, y)`` kept for a noisy gradient descent, with their clipping factors.

    Built once per problem, in the client process (no distributed client) or
    on each worker as a Dask actor holding the blocks that worker stores
    (:class:`_GradientBlocks`); :meth:`gradient_sums` is then the whole work of
    one step. An actor call goes from the client to the worker directly,
    without a task graph or the scheduler: about 2 ms a step on a two-worker
    LocalCluster, against 15 to 25 ms for a task per block (docs/scaling.rst).

    Parameters
    ----------
    xs, ys : lists of ndarray
        The raw blocks of ``X`` and of the labels, in block order.
    data_norm : float
    fit_intercept : bool
    threads : int
        Blocks computed at once (the worker's threads); 1 computes them in order.
    """

    def __init__(self, xs, ys, data_norm, fit_intercept, threads=1):
        self._xs, self._ys = list(xs), [np.asarray(y) for y in ys]
        self._data_norm, self._fit_intercept = float(data_norm), bool(fit_intercept)
        self._threads, self._local = max(1, int(threads)), threading.local()
        # Depend on each row alone: computed once, then every step reuses them.
        chunk = gradient_chunk_rows(self._xs[0].shape[1] + 1) if self._xs else 1
        with single_threaded_blas(), silenced():
            self._factors = [clip_factors_by_chunks(x, self._data_norm, chunk)
                             for x in self._xs]

    def _block_sum(self, index, loss, w):
        """One block's gradient sum, its design rows built in this thread's buffer."""
        X_b = self._xs[index]
        buffer = getattr(self._local, "buffer", None)
        if buffer is None:  # one per thread for the whole fit: no fresh pages per step
            columns = X_b.shape[1] + int(self._fit_intercept)
            rows = min(gradient_chunk_rows(columns), max(x.shape[0] for x in self._xs))
            buffer = self._local.buffer = np.empty((rows, columns))
        with silenced():  # numpy's error state is per thread
            return gradient_sum_by_chunks(loss, X_b, self._ys[index], w, self._data_norm,
                                          self._fit_intercept, self._factors[index], buffer)

    def gradient_sums(self, loss, w):
        """The gradient sums of the kept blocks, in their order (one step's work).

        One BLAS thread per block, as on the client; blocks run concurrently
        on at most ``threads`` threads, each block's sum the same bits either way.
        """
        with single_threaded_blas(), silenced():
            if self._threads == 1 or len(self._xs) < 2:
                return [self._block_sum(i, loss, w) for i in range(len(self._xs))]
            from concurrent.futures import ThreadPoolExecutor

            pool = getattr(self, "_pool", None)
            if pool is None:
                pool = self._pool = ThreadPoolExecutor(self._threads)
            return list(pool.map(lambda i: self._block_sum(i, loss, w), range(len(self._xs))))

    def __del__(self):
        # The actor is dropped at the end of its problem: stop its threads too.
        pool = getattr(self, "_pool", None)
        if pool is not None:
            pool.shutdown(wait=False)


def _distributed_client(collection):
    """The ``distributed.Client`` that would compute ``collection``, or None."""
    import dask.base

    scheduler = dask.base.get_scheduler(collections=[collection])
    owner = getattr(scheduler, "__self__", None)
    return owner if type(owner).__name__ == "Client" else None


class _GradientBlocks:
    """The blocks of ``(X, y)`` of one problem, where they are: one step, one round trip.

    With a ``distributed.Client``, ``(X, y)`` are persisted and every worker
    gets one :class:`_BlockGradients` actor over the blocks of ``X`` it holds
    (the matching blocks of ``y`` join them there); a step calls every actor
    once, directly, with the weights, and receives one gradient sum per block,
    which the client puts back in block order. Without one (the threaded or
    synchronous scheduler) the blocks are computed once in this process and
    the same object runs here. Either way the block sums are those of
    :meth:`dpsk._data._design.DesignRows.mean_gradient` with the same blocks.
    """

    def __init__(self, X, y, data_norm, fit_intercept):
        import dask

        client = _distributed_client(X)
        y = y.rechunk((X.chunks[0],))
        if client is None:
            xs, ys = dask.compute(list(X.to_delayed().ravel()), list(y.to_delayed().ravel()))
            self._groups = [(list(range(len(xs))),
                             _BlockGradients(xs, ys, data_norm, fit_intercept))]
            self._actors = False
            return
        self._actors = True
        # The futures of the persisted blocks: keep them for the fit.
        X, y = client.persist([X, y])
        self._arrays = (X, y)
        x_keys = [key for (key,) in X.__dask_keys__()]
        y_keys = list(y.__dask_keys__())
        futures = {f.key: f for f in _futures_of(X) + _futures_of(y)}
        xs = [futures[k] for k in x_keys]
        ys = [futures[k] for k in y_keys]
        from distributed import wait

        wait(xs + ys)
        holders = client.who_has(xs)
        threads = client.nthreads()
        by_worker = {}
        for index, future in enumerate(xs):
            by_worker.setdefault(sorted(holders[future.key])[0], []).append(index)
        made = [(indices, client.submit(_BlockGradients, [xs[i] for i in indices],
                                        [ys[i] for i in indices], data_norm, fit_intercept,
                                        threads.get(address, 1), workers=[address],
                                        allow_other_workers=False, actor=True, pure=False))
                for address, indices in by_worker.items()]
        self._futures = [future for _, future in made]
        self._groups = [(indices, future.result()) for indices, future in made]

    def gradient_sums(self, loss, w):
        """Every block's gradient sum at ``w``, in block order."""
        parts = [None] * sum(len(indices) for indices, _ in self._groups)
        calls = [(indices, holder.gradient_sums(loss, w)) for indices, holder in self._groups]
        for indices, call in calls:
            sums = call.result() if self._actors else call
            for index, part in zip(indices, sums):
                parts[index] = part
        return parts


def _futures_of(collection):
    from distributed import futures_of

    return futures_of(collection)


class DaskDesignRows:
    """The design matrix of a Dask ``X``, for noisy gradient descent (module docstring).

    Parameters
    ----------
    X : dask.array.Array of shape (n, d)
        Chunked along rows only (``validate_dask_input``).
    data_norm : float
    fit_intercept : bool
    """

    ndim = 2
    dtype = np.dtype(np.float64)

    def __init__(self, X, data_norm, fit_intercept):
        # Every solver makes many passes: the blocks stay in the workers' memory
        # for the fit (a no-op for an X the user persisted already).
        self.X = X.persist()
        self.data_norm, self.fit_intercept = float(data_norm), bool(fit_intercept)
        self.shape = (X.shape[0], X.shape[1] + int(fit_intercept))
        self._local = threading.local()

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("_local")  # the kept blocks belong to this process's fit
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._local = threading.local()

    def row_blocks(self, y):
        """The row-block executor of ``(X, y)`` (``dpsk._optimize._block_solver``)."""
        return DaskRowBlocks(self.X, y)

    def mean_gradient(self, loss, y, w):
        """Average loss gradient: block sums on the workers, added here in block order.

        The first call for a ``y`` keeps the blocks of ``(X, y)`` and their
        clipping factors where they are (:class:`_GradientBlocks`); every
        later step sends only ``w`` and ``loss`` and brings back one gradient
        sum per block. One problem per thread is kept (one-vs-rest problems
        run one after another, or one per joblib thread), so a new ``y`` in a
        thread releases the blocks of the previous one.
        """
        kept = getattr(self._local, "gradients", None)
        if kept is None or kept[0] is not y:
            # Release the previous problem's actors before starting the next ones.
            kept = self._local.gradients = None
            kept = self._local.gradients = (y, _GradientBlocks(self.X, y, self.data_norm,
                                                               self.fit_intercept))
        return sum_in_order(kept[1].gradient_sums(loss, w)) / self.shape[0]
