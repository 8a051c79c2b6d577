"""Design rows in bounded memory: the clipped, scaled rows computed block by block.

The private linear fits see the data only through the design matrix ``Z``
(``dpsk._data._validation.design_matrix``: rows clipped to ``data_norm``, divided by
it, and, with an intercept, ``[x / data_norm, 1] / sqrt(2)``), and only through
sums over its rows: ``Z @ w``, ``Z.T @ r``, blocks of rows for the Hessian and
the certificate, and the mean loss gradient. :class:`DesignRows` provides exactly
those on the caller's ``X`` without storing ``Z``: each block of rows is built
when it is needed, so the memory beyond ``X`` is O(block x d) plus O(n)
vectors (margins, row norms, the per-row clipping factors).

Every row of ``Z`` is built by :func:`design_block` from the row of ``X``
alone, converted to float64 first. ``design_matrix`` fills its array with the
same function, so the stored and the chunked design hold the same float64
numbers bit for bit, and the privacy argument (rows of norm <= 1) is the one of
``design_matrix``.

Precision. ``X`` may be float32 and stays float32 (no float64 copy of it is
made); the rows of ``Z`` and every sum are float64, because the solver's
certificate bounds rounding with the float64 unit roundoff ``u = 2^-53``
(``dpsk._optimize._solver``). Computing in float32 would need ``u = 2^-24`` in the
certificate and would lift the tolerance floor ``tolerance_floor`` by 2^29,
about 5e8: for ``d = 100``, ``c = 1/4`` and ``lam = 1e-3`` the floor would move
from about 2e-10 to about 0.1, so the noise covering the solver's residual
(a distance ``tol / lam``) would dominate the privacy noise (docs/scaling.rst). Converting a
float32 value to float64 is exact, so the data the model is trained on is the
user's float32 data.
"""

import numpy as np
import scipy.sparse as sp
from sklearn import get_config

__all__ = ["INTERCEPT_SCALE", "row_norms", "clip_rows", "design_matrix", "unscale_coef",
           "DesignRows", "LocalRowBlocks", "design_block", "design_rows", "block_rows",
           "clip_factors", "clip_factors_by_chunks", "row_slices", "sum_in_order",
           "gradient_sum_by_chunks", "gradient_chunk_rows"]

#: Scale of the data block and of the constant column when an intercept is fitted.
INTERCEPT_SCALE = 1.0 / np.sqrt(2.0)


def row_norms(X):
    """L2 norm of every row of a dense array or sparse matrix, in O(n) extra memory.

    Squares overflow for rows longer than about 1e154; those rows (and only
    those, to keep the common case one pass) are recomputed after dividing by
    their largest entry, so a huge row is clipped, not zeroed.
    """
    if sp.issparse(X):
        norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    else:
        with np.errstate(over="ignore"):
            norms = np.sqrt(np.einsum("ij,ij->i", X, X))
    overflow = np.flatnonzero(np.isinf(norms))
    if overflow.size:
        rows = X[overflow]
        rows = np.abs(rows.toarray() if sp.issparse(rows) else rows)
        scale = rows.max(axis=1, keepdims=True)
        norms[overflow] = scale.ravel() * np.sqrt(np.sum((rows / scale) ** 2, axis=1))
    return norms


def clip_rows(X, data_norm):
    """Scale rows with norm above ``data_norm`` down to ``data_norm``.

    Clipping is silent: how many rows were clipped depends on the data, so a
    count (or even whether there was any) must not leave a private fit.

    Parameters
    ----------
    X : ndarray or sparse matrix of shape (n, d)
    data_norm : float
        The declared bound, > 0. It must come from domain knowledge, not from the
        data: a bound read off the data would itself leak.

    Returns
    -------
    X_clipped : same type as X
        X itself when no row exceeds the bound, else a new array; X is never
        modified.
    """
    norms = row_norms(X)
    too_long = norms > data_norm
    factors = np.ones_like(norms)
    factors[too_long] = data_norm / norms[too_long]
    if not np.any(too_long):
        return X  # nothing to clip: callers never write into X, so skip the copy
    if sp.issparse(X):
        return sp.diags(factors) @ X
    return X * factors[:, None]


def design_matrix(X, data_norm, fit_intercept):
    """Clip, normalise and, if asked, append the intercept column.

    The returned rows have L2 norm <= 1, the condition of Algorithms 1 and 2 of
    Chaudhuri et al. (2011). Use :func:`unscale_coef` to map a weight vector on
    these rows back to ``coef_`` and ``intercept_`` on the user's features.

    Returns
    -------
    Z : ndarray or sparse CSR matrix of shape (n, d + fit_intercept)
    """
    scale = (INTERCEPT_SCALE if fit_intercept else 1.0) / data_norm
    if sp.issparse(X):
        X = clip_rows(X.astype(np.float64, copy=False), data_norm)
        Z = X * scale
        if fit_intercept:
            ones = np.full((X.shape[0], 1), INTERCEPT_SCALE)
            Z = sp.hstack([Z, sp.csr_matrix(ones)], format="csr")
        return sp.csr_matrix(Z)
    return _dense_design(X, data_norm, fit_intercept, scale)


def _dense_design(X, data_norm, fit_intercept, scale):
    """Fill a float64 design matrix block by block (``dpsk._data._design.design_block``).

    No temporary of the size of ``X``: a float32 ``X`` is converted one block
    at a time, straight into the result. A float64 ``X`` that needs no change
    (no intercept, ``data_norm = 1``, no row clipped) is returned as it is.
    """
    n, d = X.shape
    step = block_rows(d + 1)
    factors = np.empty(n)
    for rows in row_slices(n, step):
        factors[rows] = clip_factors(X[rows], data_norm)
    if X.dtype == np.float64 and scale == 1.0 and not fit_intercept and np.all(factors == 1.0):
        return X  # callers never write into Z
    Z = np.empty((n, d + int(fit_intercept)))
    for rows in row_slices(n, step):
        design_block(X[rows], data_norm, fit_intercept, out=Z[rows], factors=factors[rows])
    return Z


def unscale_coef(W, data_norm, fit_intercept):
    """Map weights on :func:`design_matrix` rows to ``(coef, intercept)``.

    Parameters
    ----------
    W : ndarray of shape (K, d + fit_intercept)

    Returns
    -------
    coef : ndarray of shape (K, d)
    intercept : ndarray of shape (K,)
    """
    if fit_intercept:
        return W[:, :-1] * (INTERCEPT_SCALE / data_norm), W[:, -1] * INTERCEPT_SCALE
    return W / data_norm, np.zeros(W.shape[0])


#: Bytes of one float64 block of design rows.
_BLOCK_BYTES = 8 * 2**20


def _working_memory_bytes():
    """``sklearn.get_config()["working_memory"]`` (MiB, may be a float) in bytes."""
    return int(get_config()["working_memory"] * 2**20)


def block_rows(n_columns, block_bytes=_BLOCK_BYTES):
    """Rows per block so that one float64 block of ``n_columns`` takes ``block_bytes``."""
    return max(1, int(block_bytes // (8 * max(1, n_columns))))


def row_slices(n, size):
    """Consecutive slices of at most ``size`` of ``range(n)``: ``sklearn.utils.gen_batches``.

    The same slices, without its parameter validation (about 0.1 ms a call),
    which the solvers' passes over chunks of rows paid thousands of times per
    fit (about 9% of a chunked fit at one million rows).
    """
    for start in range(0, n, size):
        yield slice(start, min(start + size, n))


def clip_factors(X_block, data_norm):
    """Per-row factors ``min(1, data_norm / ||x_i||)``, computed in float64."""
    norms = row_norms(np.asarray(X_block, dtype=np.float64))
    factors = np.ones_like(norms)
    too_long = norms > data_norm
    factors[too_long] = data_norm / norms[too_long]
    return factors


def clip_factors_by_chunks(X, data_norm, chunk):
    """:func:`clip_factors` of every row of ``X``, ``chunk`` rows at a time (n floats).

    Each factor depends on its row alone, so any chunking gives the same bits;
    the chunks only bound the float64 temporary.
    """
    out = np.empty(X.shape[0])
    for rows in row_slices(X.shape[0], chunk):
        out[rows] = clip_factors(X[rows], data_norm)
    return out


def sum_in_order(parts):
    """Add per-block results one after another, in block order.

    ``parts`` is a list of arrays or numbers, or of tuples of them (added entry
    by entry). A fixed order of additions is what makes a Dask fit and the
    chunked in-memory fit with the same blocks give the same bits.
    """
    if isinstance(parts[0], tuple):
        return tuple(sum_in_order([part[k] for part in parts]) for k in range(len(parts[0])))
    total = parts[0]
    for part in parts[1:]:
        total = total + part
    return total


def design_block(X_block, data_norm, fit_intercept, out=None, factors=None):
    """The float64 design rows of ``X_block`` (dense), written into ``out`` if given.

    Rows longer than ``data_norm`` are multiplied by ``data_norm / ||x_i||``,
    then every row by ``scale = (1/sqrt(2) if fit_intercept else 1) /
    data_norm``, in that order (two roundings, as ``design_matrix`` always
    did); the intercept column is ``1/sqrt(2)``.
    """
    n, d = X_block.shape
    if out is None:
        out = np.empty((n, d + int(fit_intercept)))
    if factors is None:
        factors = clip_factors(X_block, data_norm)
    scale = (INTERCEPT_SCALE if fit_intercept else 1.0) / data_norm
    data = out[:, :d]
    clipped = np.flatnonzero(factors != 1.0)
    # Every branch gives every row ``(x * f) * scale`` in float64: for an unclipped
    # row ``x * 1 == x`` exactly, so one pass ``x * scale`` is the same bits, and
    # the clipped rows are redone with the two-pass formula when they are few.
    many = 8 * clipped.size > n
    if X_block.dtype == np.float64 and not many:
        np.multiply(X_block, scale, out=data)
    else:
        # Cast first (exact), then multiply in place. A ufunc with a cast, or a
        # fancy-indexed redo of many rows, allocates temporaries at every call,
        # which Dask workers (MALLOC_TRIM_THRESHOLD_=65536) hand back to the
        # system and fault in again at every chunk: 2 to 3 times slower there.
        np.copyto(data, X_block)
        if many:
            data *= factors[:, None]
        if scale != 1.0:
            data *= scale
    if clipped.size and not many:
        data[clipped] = X_block[clipped] * factors[clipped, None] * scale
    if fit_intercept:
        out[:, d] = INTERCEPT_SCALE
    return out


#: Bytes of float64 design rows built at once by :func:`gradient_sum_by_chunks`.
GRADIENT_CHUNK_BYTES = 2 * 2**20


def gradient_chunk_rows(n_columns):
    """Rows of one chunk of :func:`gradient_sum_by_chunks` (``n_columns`` design columns)."""
    return block_rows(n_columns, GRADIENT_CHUNK_BYTES)


def gradient_sum_by_chunks(loss, X_block, y_block, w, data_norm, fit_intercept, factors,
                           buffer=None):
    """``loss.gradient_sum`` of one block's design rows, in chunks added in order.

    The design rows are built :func:`gradient_chunk_rows` at a time (2 MiB of
    float64), into ``buffer`` if given (at least that many rows, or the whole
    block), and the chunk sums are added one after another. The chunks depend
    only on the block's length and the number of columns, never on a
    configuration, so :meth:`DesignRows.mean_gradient` and a Dask worker
    (``dpsk._data._dask``) add the same numbers in the same order. Why 2 MiB:
    a chunk built and then read twice (``Z @ w``, ``Z.T @ r``) while it is
    still in the cache costs about what the same rows of a stored design
    cost; measured at d = 120 for 1e5 rows, 14 ms in 2 MiB chunks, 22 ms in
    8 MiB ones, 43 ms as one fresh 97 MB block, 14 ms stored.
    """
    n_b, d = X_block.shape
    if n_b == 0:  # a Dask array may have empty blocks
        return np.zeros(np.shape(w))
    chunk = gradient_chunk_rows(d + int(fit_intercept))
    if buffer is None or buffer.shape[0] < min(chunk, n_b):
        buffer = np.empty((min(chunk, n_b), d + int(fit_intercept)))
    parts = []
    for rows in row_slices(n_b, chunk):
        Z = design_block(X_block[rows], data_norm, fit_intercept,
                         out=buffer[: rows.stop - rows.start], factors=factors[rows])
        parts.append(loss.gradient_sum(Z, y_block[rows], w))
    return sum_in_order(parts)


class _Transposed:
    """``Z.T`` of a :class:`DesignRows`, for ``Z.T @ r`` (``r`` of shape (n,) or (n, K))."""

    def __init__(self, design):
        self._design = design

    def __matmul__(self, r):
        r = np.asarray(r)
        out = np.zeros((self._design.shape[1],) + r.shape[1:])
        for rows, block in self._design.blocks():
            out += block.T @ r[rows]
        return out


class DesignRows:
    """The design matrix of dense ``X``, row blocks built on demand (module docstring).

    Supports what the solvers and noisy gradient descent use: ``shape``,
    ``ndim``, ``dtype``, ``Z @ w`` (``w`` of shape (d,) or (d, K)), ``Z.T @ r``,
    ``Z[rows]`` for a slice of rows, and :meth:`mean_gradient`.

    Parameters
    ----------
    X : ndarray of shape (n, d), float32 or float64
        Finite. Not copied and never written to.
    data_norm : float
    fit_intercept : bool
    block : int or None
        Rows per block (default: 8 MiB of float64 design rows, or a quarter of
        ``sklearn.get_config()["working_memory"]`` if that is smaller).
    """

    ndim = 2
    dtype = np.dtype(np.float64)

    def __init__(self, X, data_norm, fit_intercept, block=None):
        self.X, self.data_norm, self.fit_intercept = X, float(data_norm), bool(fit_intercept)
        n, d = X.shape
        self.shape = (n, d + int(fit_intercept))
        # A block is at most a quarter of scikit-learn's working memory.
        budget = min(_BLOCK_BYTES, _working_memory_bytes() // 4)
        self.block = int(block) if block else block_rows(self.shape[1], budget)
        self._clip = None

    @property
    def _factors(self):
        """The clipping factors of all rows, computed on first use and kept (n floats).

        They need a pass over ``X``; keeping them spares every later pass the
        row norms. The certified solver keeps its own per block
        (``dpsk._optimize._block_solver``) and never asks for these.
        """
        if self._clip is None:
            self._clip = clip_factors_by_chunks(self.X, self.data_norm, self.block)
        return self._clip

    def blocks(self):
        """Yield ``(rows, Z[rows])`` over consecutive blocks; one buffer is reused."""
        n = self.shape[0]
        buffer = np.empty((min(self.block, n), self.shape[1]))
        for rows in row_slices(n, self.block):
            out = buffer[: rows.stop - rows.start]
            yield rows, design_block(self.X[rows], self.data_norm, self.fit_intercept, out=out,
                                     factors=self._factors[rows])

    def __getitem__(self, rows):
        if not isinstance(rows, slice):
            raise TypeError("DesignRows supports row slices only.")
        rows = slice(*rows.indices(self.shape[0]))
        return design_block(self.X[rows], self.data_norm, self.fit_intercept,
                            factors=self._factors[rows])

    def __matmul__(self, w):
        w = np.asarray(w)
        out = np.empty((self.shape[0],) + w.shape[1:])
        for rows, block in self.blocks():
            out[rows] = block @ w
        return out

    @property
    def T(self):
        return _Transposed(self)

    def row_blocks(self, y):
        """The row-block executor of ``(X, y)`` (``dpsk._optimize._block_solver``)."""
        return LocalRowBlocks(self.X, y, self.block)

    def mean_gradient(self, loss, y, w):
        """``loss.mean_gradient``: block sums (:func:`gradient_sum_by_chunks`) in block order.

        Dask fits add the same block sums in the same order, so with the same
        blocks the two give the same bits.
        """
        rows = min(self.block, self.shape[0], gradient_chunk_rows(self.shape[1]))
        buffer = np.empty((rows, self.shape[1]))
        parts = [gradient_sum_by_chunks(loss, self.X[rows], y[rows], w, self.data_norm,
                                        self.fit_intercept, self._factors[rows], buffer)
                 for rows in row_slices(self.shape[0], self.block)]
        return sum_in_order(parts) / self.shape[0]


class LocalRowBlocks:
    """Runs per-block kernels on consecutive blocks of rows, in this process.

    ``kernel(X_b, y_b, state_b, *args)`` gets the raw rows and labels of one
    block (and what :meth:`keep` kept for it, or None); the results come back
    as a list in block order. ``dpsk._data._dask.DaskRowBlocks`` is the same on a
    cluster, so the same kernels give the same bits on the same blocks.
    """

    def __init__(self, X, y, block):
        self.X, self.y = X, np.asarray(y)
        self._slices = list(row_slices(X.shape[0], block))
        self.lengths = [rows.stop - rows.start for rows in self._slices]

    def map(self, kernel, *args, state=None):
        """``[kernel(X_b, y_b, state_b, *args) for every block]``."""
        state = [None] * len(self._slices) if state is None else state
        return [kernel(self.X[rows], self.y[rows], kept, *args)
                for rows, kept in zip(self._slices, state)]

    def keep(self, kernel, *args, state=None):
        """Per-block results to pass back as ``state`` or to :meth:`map_state`."""
        return self.map(kernel, *args, state=state)

    def map_state(self, kernel, state, *args):
        """``[kernel(state_b, *args) for every block]``: no rows read."""
        return [kernel(kept, *args) for kept in state]


#: The design matrix is stored only up to this share of scikit-learn's working memory.
_STORED_SHARE = 0.25


def design_rows(X, data_norm, fit_intercept):
    """The design matrix, stored when it takes at most a quarter of the working memory.

    Dense ``X`` whose float64 design matrix is larger than a quarter of
    ``sklearn.get_config()["working_memory"]`` MiB (default 1024, so 256 MiB;
    set it with ``sklearn.config_context(working_memory=...)``) gets a
    :class:`DesignRows` (bounded memory); smaller ``X`` and sparse ``X`` get
    the stored ``design_matrix`` (sparse stays sparse).
    """
    if sp.issparse(X):
        return design_matrix(X, data_norm, fit_intercept)
    n, d = X.shape
    # Why a quarter (docs/scaling.rst). A stored design is faster per pass (no
    # rows rebuilt), but it is n x (d + 1) float64 of fresh memory, and first
    # touching fresh memory can cost more than that: on our two-core Firecracker
    # VM, which hands freed pages back to the host within seconds, it costs about
    # 1.3 s per GiB, in a fresh process and again after a few seconds idle.
    # Measured (d = 120, float32, objective perturbation; stored fit fresh /
    # resident vs chunked): 231 MiB of design 0.58 / 0.36 s vs 0.50 s; 462 MiB
    # 1.6 / 0.67 s vs 0.88 s; 923 MiB 3.3 / 1.3 s vs 1.7 s, with 30 times less
    # memory chunked. Below the default quarter (256 MiB) the two are about even
    # and small data keep the stored design; above it the cost of fresh memory
    # grows to seconds and the design to gigabytes.
    if 8 * n * (d + int(fit_intercept)) > _STORED_SHARE * _working_memory_bytes():
        return DesignRows(X, data_norm, fit_intercept)
    return design_matrix(X, data_norm, fit_intercept)
