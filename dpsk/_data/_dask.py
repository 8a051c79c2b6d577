"""Dask arrays as training data: the row sums of a fit computed on a cluster.

Noisy gradient descent (``perturbation="gradient"``, ``dpsk.mechanisms._gradient``) reads
the data only through the average loss gradient at each step, a sum over rows.
With a Dask array ``X`` (and ``y``) each step sends the current weights to the
workers, each worker returns the gradient sum of its blocks of rows
(:func:`_block_gradient_sum`, the design rows built there from the raw block,
``dpsk._data._design.design_block``), and the client adds the block sums in block
order. The noise of the step is drawn on the client, once, from the fit's
secure source, after the sum has arrived: no worker ever sees noise, a noise
seed or the budget, and the spend is recorded by the estimator on the client
(``dpsk._mixin``), before the first step, exactly as for an in-memory fit.

The block sums are the ones of an in-memory chunked fit with the same row
blocks (``dpsk._data._design.DesignRows(X, ..., block=chunk)``) and are added in the
same order, so a Dask fit releases the same bits as that in-memory fit for the
same noise draw (tested).

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

import numpy as np

from .._silence import silenced
from ._design import clip_factors, design_block, sum_in_order
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


def _block_clip_factors(X_block, y_block, kept, data_norm):
    """The clipping factors of one block's rows (kept on its worker for the whole fit)."""
    return clip_factors(X_block, data_norm)


def _block_gradient_sum(X_block, y_block, factors, w, loss, data_norm, fit_intercept):
    """The gradient sum of one block of rows, with the block's kept clipping factors."""
    Z = design_block(X_block, data_norm, fit_intercept, factors=factors)
    return loss.gradient_sum(Z, np.asarray(y_block), w)


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
        self._executor = self._executor_y = self._factors = None

    def row_blocks(self, y):
        """The row-block executor of ``(X, y)`` (``dpsk._optimize._block_solver``)."""
        return DaskRowBlocks(self.X, y)

    def mean_gradient(self, loss, y, w):
        """Average loss gradient: block sums on the workers, added here in block order.

        The first call for a ``y`` persists ``(X, y)`` block by block and keeps
        each block's clipping factors on its worker; every later step sends
        only ``w`` and brings back one gradient sum per block, as the certified
        solver's passes do (``dpsk._optimize._block_solver``).
        """
        if self._executor is None or self._executor_y is not y:
            self._executor, self._executor_y = DaskRowBlocks(self.X, y), y
            self._factors = self._executor.keep(_block_clip_factors, self.data_norm)
        parts = self._executor.map(_block_gradient_sum, w, loss, self.data_norm,
                                   self.fit_intercept, state=self._factors)
        return sum_in_order(parts) / self.shape[0]
