"""Sharing output perturbation's non-private solve between Monte Carlo fits.

``dpsk.utility`` fits one model many times on the same public data to estimate
error against epsilon. Output perturbation's minimiser depends on neither
epsilon nor the noise, so one solve can serve every draw. This module holds the
context in which fits look their solve up, keyed by the exact content of the
problem. No estimator's own fit ever runs inside it.
"""

import contextlib
import contextvars
import hashlib

import numpy as np
import scipy.sparse as sp

__all__ = ["reusing_solutions", "shared_solution"]

_STORE = contextvars.ContextVar("dpsk_reused_solutions", default=None)


@contextlib.contextmanager
def reusing_solutions(store):
    """Within the block, :func:`shared_solution` looks solves up in ``store``.

    The key is the exact content of the problem (loss, design ``Z``, ``y``,
    ``alpha``, ``tol``) and the solver is deterministic, so a fit inside the
    block releases bit for bit what it would release outside (tested).
    ``store`` is a dict that may be filled in one process and passed to joblib
    workers.
    """
    token = _STORE.set(store)
    try:
        yield store
    finally:
        _STORE.reset(token)


def shared_solution(problem, solve):
    """``solve()``, or a copy of its stored result when a store is active.

    Parameters
    ----------
    problem : tuple
        ``(loss, Z, y, alpha, tol)`` or ``(loss, Z, y, alpha, tol, linear)``
        (a public linear term, e.g. a centred regulariser's; None for none). A
        chunked design (``dpsk._data._design``) is never hashed, since its rows
        are not stored: it is always solved.
    solve : callable
        Returns the minimiser of ``problem``.
    """
    store = _STORE.get()
    Z = problem[1]
    if store is None or not (sp.issparse(Z) or isinstance(Z, np.ndarray)):
        return solve()
    key = _problem_key(*problem)
    if key not in store:
        store[key] = solve()
    return store[key].copy()


def _problem_key(loss, Z, y, alpha, tol, linear=None):
    digest = hashlib.blake2b(digest_size=20)
    digest.update(repr((repr(loss), float(alpha), float(tol), Z.shape,
                        linear is None)).encode())
    parts = (Z.data, Z.indices, Z.indptr) if sp.issparse(Z) else (Z,)
    extra = () if linear is None else (linear,)
    for part in (*parts, y, *extra):
        part = np.ascontiguousarray(part)
        digest.update(str(part.dtype).encode())
        digest.update(part.view(np.uint8).ravel())
    return digest.hexdigest()
