"""What the prior check reads of the training rows.

The mechanism (its sensitivity, noise and guarantee) is
:mod:`dpsk.mechanisms._prior_check`; this module computes its exact input,
the margin ``M`` of the released weights over the prior model on the design
rows, block by block so that memory stays bounded (a stored design, the
blocks of :class:`dpsk._data._design.DesignRows`, or the blocks of a Dask
array on the workers). The prior model it may release instead is
:func:`dpsk.linear_model._base.prior_model_weights`.
"""

import numpy as np

from .._data._design import design_block, row_slices
from ..mechanisms._prior_check import WEIGHT_BITS

__all__ = ["training_margin", "predicted_indices"]

_ONE = 1 << WEIGHT_BITS
_BLOCK = 65536


def predicted_indices(scores):
    """The class index each row's scores pick: the sign for one column, else the argmax.

    As :meth:`BaseDPLinearClassifier.predict` decides on ``coef_`` and ``intercept_``.
    """
    scores = np.asarray(scores)
    if scores.shape[1] == 1:
        return (scores[:, 0] > 0).astype(np.intp)
    return np.argmax(scores, axis=1)


def _quantised(weights):
    """Row weights in [0, 1] as integer multiples of ``2^-WEIGHT_BITS``, rounded down."""
    return np.floor(np.asarray(weights, dtype=np.float64) * _ONE).astype(np.int64)


def _block_margin(Z_block, y_index, W, constant, weights):
    """The margin of one block of design rows, as an exact integer of ``2^-WEIGHT_BITS``."""
    right = predicted_indices(np.asarray(Z_block @ W.T)) == y_index
    terms = right.astype(np.int64) - (y_index == constant).astype(np.int64)
    if weights is None:
        return int(terms.sum()) * _ONE
    return int(np.dot(terms, _quantised(weights)))


def _raw_block_margin(X_block, y_block, _state, W, classes, constant, data_norm,
                      fit_intercept):
    """:func:`_block_margin` of raw rows, building their design rows here (a worker's task)."""
    Z_block = design_block(X_block, data_norm, fit_intercept)
    return _block_margin(Z_block, np.searchsorted(classes, y_block), W, constant, None)


def training_margin(Z, y, W, classes, constant, weights=None):
    """``M = sum_i s_i ([W predicts y_i] - [y_i = constant])``, exactly.

    Parameters
    ----------
    Z : ndarray, sparse matrix, DesignRows or DaskDesignRows of shape (n, d)
        The fit's design rows.
    y : ndarray or dask array of shape (n,)
        The labels.
    W : ndarray of shape (1 or K, d)
        The released weights on ``Z``'s columns.
    classes : ndarray of shape (K,)
    constant : int
        The index of the class the prior model predicts.
    weights : ndarray of shape (n,) or None
        Row weights in [0, 1], quantised down to multiples of ``2^-WEIGHT_BITS``
        (a stored design only: weighted fits store theirs).

    Returns
    -------
    margin : float
        ``M``, a multiple of ``2^-WEIGHT_BITS`` (exact in float64 below ``2^33`` rows).
    """
    W = np.atleast_2d(np.asarray(W, dtype=np.float64))
    if hasattr(Z, "row_blocks"):
        if weights is not None:  # pragma: no cover - weighted fits store their design
            raise ValueError("Weighted fits need a stored design.")
        parts = Z.row_blocks(y).map(_raw_block_margin, W, np.asarray(classes), int(constant),
                                    Z.data_norm, Z.fit_intercept)
    else:
        y_index = np.searchsorted(classes, np.asarray(y))
        parts = [_block_margin(Z[rows], y_index[rows], W, int(constant),
                               None if weights is None else weights[rows])
                 for rows in row_slices(Z.shape[0], _BLOCK)]
    return sum(int(p) for p in parts) / _ONE
