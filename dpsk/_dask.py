"""Dask arrays as training data: the row sums of a fit computed on a cluster.

Noisy gradient descent (``perturbation="gradient"``, ``dpsk._gradient``) reads
the data only through the average loss gradient at each step, a sum over rows.
With a Dask array ``X`` (and ``y``) each step sends the current weights to the
workers, each worker returns the gradient sum of its blocks of rows
(:func:`_block_gradient_sum`, the design rows built there from the raw block,
``dpsk._design.design_block``), and the client adds the block sums in block
order. The noise of the step is drawn on the client, once, from the fit's
secure source, after the sum has arrived: no worker ever sees noise, a noise
seed or the budget, and the spend is recorded by the estimator on the client
(``dpsk._mixin``), before the first step, exactly as for an in-memory fit.

The block sums are the ones of an in-memory chunked fit with the same row
blocks (``dpsk._design.DesignRows(X, ..., block=chunk)``) and are added in the
same order, so a Dask fit releases the same bits as that in-memory fit for the
same noise draw (tested).

Only noisy gradient descent runs on Dask. Output and objective perturbation
need the certified solver, whose Newton steps and certificate make many passes
with O(n) vectors (margins, row norms) that would travel between client and
workers at every pass; they refuse Dask input, for free, before anything is
spent. Dask is an optional dependency (``pip install dpsk[dask]``); nothing here
imports it unless a Dask array is passed.
"""

import numpy as np

from ._design import design_block
from ._threads import single_threaded_blas
from ._validation import check_classes, check_declared_classes

__all__ = ["is_dask_array", "DaskDesignRows", "validate_dask_input"]


def is_dask_array(X):
    """Whether ``X`` is a ``dask.array.Array`` (without importing dask)."""
    return type(X).__module__.split(".")[0] == "dask" and hasattr(X, "chunks")


_ONLY_GRADIENT = (
    "Dask arrays are supported with perturbation='gradient' (noisy gradient descent) "
    "only: output and objective perturbation need the certified solver, which works on "
    "data in this process. Nothing was spent."
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

    if estimator.perturbation != "gradient":
        raise ValueError(_ONLY_GRADIENT)
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
    estimator.n_features_in_ = X.shape[1]
    estimator.__dict__.pop("feature_names_in_", None)
    return X, y, classes


def class_indices(classes, y):
    """``np.searchsorted(classes, y)`` block by block on a Dask ``y``."""
    return y.map_blocks(lambda block: np.searchsorted(classes, block), dtype=np.intp)


def _block_gradient_sum(X_block, y_block, w, loss, data_norm, fit_intercept):
    """The gradient sum of one block of rows (runs on a worker, one BLAS thread)."""
    with single_threaded_blas():
        Z = design_block(X_block, data_norm, fit_intercept)
        return loss.gradient_sum(Z, np.asarray(y_block), w)


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
        self.X, self.data_norm, self.fit_intercept = X, float(data_norm), bool(fit_intercept)
        self.shape = (X.shape[0], X.shape[1] + int(fit_intercept))

    def mean_gradient(self, loss, y, w):
        """Average loss gradient: block sums on the workers, added here in block order."""
        import dask
        from dask import delayed

        block = delayed(_block_gradient_sum, pure=True)
        parts = [block(xb, yb, w, loss, self.data_norm, self.fit_intercept)
                 for xb, yb in zip(self.X.to_delayed().ravel(), y.to_delayed().ravel())]
        total = None
        for part in dask.compute(*parts):
            total = part if total is None else total + part
        return total / self.shape[0]
