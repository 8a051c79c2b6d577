"""The entry point for the binary problem: in memory, or by blocks of rows.

:func:`minimize_regularized_loss` minimises ``F(w) = (1/n) sum_i l(y_i w.x_i) +
(lam/2) ||w||^2 + linear.w`` with the certified solver of
:mod:`dpsk._optimize._solver`. A stored design (dense or CSR) is solved by the
in-memory objective of that module; a chunked (``dpsk._data._design``) or Dask
(``dpsk._data._dask``) design by per-block reductions
(:mod:`dpsk._optimize._block_solver`). It lives in a module of its own so that
the block solver, which builds on the certified objective, and the in-memory
solver both sit below it and neither imports the other back.
"""

import numpy as np
import scipy.sparse as sp

from ._block_solver import block_objective
from ._solver import SolverError, SolverResult, _check_domain, _Objective, _solve, check_row_weights

__all__ = ["minimize_regularized_loss"]


def minimize_regularized_loss(loss, X, y, lam, linear=None, tol=1e-10, max_iter=1000,
                              w0=None, sample_weight=None):
    """Return a point within ``tol / lam`` of the exact minimiser of F; never fail.

    See the module docstring for the guarantee, which parts of it hold in
    floating point and which in exact arithmetic.

    Parameters
    ----------
    loss : loss object from ``dpsk._optimize._losses``
    X : ndarray, sparse matrix, ``DesignRows`` or ``DaskDesignRows`` of shape (n, d)
        Finite; rows of L2 norm <= 1 in dpsk (the bounds use the actual norms).
        A chunked (``dpsk._data._design``) or Dask (``dpsk._data._dask``) design is solved
        by per-block reductions (``dpsk._optimize._block_solver``), with the same guarantee.
    y : ndarray of shape (n,), values in {-1, +1}
        A Dask array (chunked like the rows) with a ``DaskDesignRows``.
    lam : float
        Strong-convexity modulus (total L2 strength), finite and > 0.
    linear : ndarray of shape (d,) or None
        Linear term (objective perturbation's ``b / n``), finite.
    tol : float
        Gradient-norm scale of the guarantee: the point is within ``tol / lam``
        of the minimiser. Finite and > 0.
    max_iter : int
        Iteration cap for L-BFGS-B. It only shapes the fast path; the guarantee
        does not depend on it.
    w0 : ndarray of shape (d,) or None
        Starting point (zeros by default), finite.
    sample_weight : ndarray of shape (n,) or None
        Row weights ``s_i`` in [0, 1]: the loss part becomes ``(1/n) sum_i s_i
        l(y_i w.x_i)``, still divided by ``n`` (docs/privacy.rst, "Weights").
        None is the unweighted objective, computed exactly as before. Only for
        a stored design (dense or CSR); a chunked or Dask design is refused.

    Returns
    -------
    SolverResult
        Only ``.w`` is meant for callers.

    Raises
    ------
    SolverError
        Only for inputs outside the domain (non-finite values, ``lam <= 0``,
        ``tol <= 0``, labels outside {-1, +1}, inconsistent shapes, weights
        outside [0, 1] or with a chunked design). Never for a
        difficult problem: that decides nothing observable but ``w``.
    """
    linear = None if linear is None else np.asarray(linear, dtype=float).ravel()
    w0 = None if w0 is None else np.asarray(w0, dtype=float).ravel()
    lam, tol = float(lam), float(tol)
    if hasattr(X, "row_blocks"):
        if sample_weight is not None:
            raise SolverError("sample_weight needs a stored design (dense or CSR), not a "
                              "chunked or Dask one.")
        # Chunked (dpsk._data._design) and Dask (dpsk._data._dask) designs: every pass is a
        # sum of per-block reductions (dpsk._optimize._block_solver).
        obj = block_objective(loss, X, y, lam, linear, w0, tol)
        w_start = np.zeros(X.shape[1]) if w0 is None else w0.copy()
        return SolverResult(*_solve(obj, w_start, tol, max_iter))
    y = np.asarray(y, dtype=float)
    if sp.issparse(X) and X.format != "csr":
        X = sp.csr_matrix(X)  # row slices below need CSR
    obj = _Objective(loss, X, y, lam, linear, check_row_weights(sample_weight, X.shape[0]))
    _check_domain(obj, X, y, lam, linear, tol, w0)
    w_start = np.zeros(X.shape[1]) if w0 is None else w0.copy()
    w, path, n_iter = _solve(obj, w_start, tol, max_iter)
    return SolverResult(w, path, n_iter)
