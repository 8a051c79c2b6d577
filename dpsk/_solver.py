"""The one solver of dpsk: minimise a strongly convex regularised margin loss.

    F(w) = (1/n) sum_i l(y_i w.x_i) + (lam/2) ||w||^2 + linear.w

The privacy proofs of Chaudhuri et al. (2011) are about the *exact* minimiser.
dpsk releases a point whose gradient norm is at most ``tol`` (a number fixed
before the data is seen) and calibrates extra noise for that residual (see
``dpsk._mechanisms.solver_residual_beta`` and ``output_perturbation_beta``), so
the solver must *guarantee* ``||grad F(w)|| <= tol``; if it cannot, it raises
``SolverError`` and the fit fails without spending budget.

Strategy: L-BFGS-B (scipy, analytic gradient) gets close cheaply; Newton steps
then drive the gradient norm down to ``tol`` in a few iterations (quadratic
convergence for the logistic loss), with an exact dense Hessian for moderate d
and conjugate gradients beyond. Memory is O(n + d^2) per iteration beyond X
itself: no n x d temporaries.
"""

import numpy as np
import scipy.sparse as sp
from scipy.linalg import LinAlgError, cho_factor, cho_solve
from scipy.optimize import minimize
from scipy.sparse.linalg import LinearOperator, cg
from sklearn.utils import gen_batches

__all__ = ["SolverError", "SolverResult", "minimize_regularized_loss"]

_HANDOVER_GTOL = 1e-2
# Newton steps use the dense Hessian up to this dimension (d^2 doubles of memory).
_DENSE_HESSIAN_MAX_D = 2000
# A factorised Hessian is reused while each step cuts the gradient norm this much.
_REUSE_HESSIAN_RATE = 0.3
# Row blocks for accumulating the Hessian: bounded temporary memory.
_HESSIAN_BLOCK_BYTES = 4 * 2**20
# Relative size of a change in F that floating point cannot tell from noise.
_VALUE_RESOLUTION = 1e-12


class SolverError(RuntimeError):
    """The solver could not certify the gradient-norm bound the noise assumes."""


class SolverResult:
    """Minimiser ``w``, iterations used and the certified gradient norm."""

    def __init__(self, w, n_iter, grad_norm):
        self.w = w
        self.n_iter = n_iter
        self.grad_norm = grad_norm


class _Objective:
    """Value, gradient and Hessian-vector products of F, sharing the margins."""

    def __init__(self, loss, X, y, lam, linear):
        self.loss, self.X, self.y, self.lam = loss, X, y, lam
        self.linear = linear
        self.n = X.shape[0]

    def margins(self, w):
        return self.y * (self.X @ w)

    def value_and_grad(self, w):
        z = self.margins(w)
        value = self.loss.value(z).mean() + 0.5 * self.lam * (w @ w)
        grad = self.X.T @ (self.y * self.loss.derivative(z)) / self.n + self.lam * w
        if self.linear is not None:
            value += self.linear @ w
            grad += self.linear
        return value, np.asarray(grad).ravel()

    def hessian_at(self, w):
        """Dense Hessian, accumulated over row blocks so no n x d temporary exists."""
        # B.T @ B with B = diag(sqrt(l''/n)) X lets BLAS use its symmetric
        # rank-k update: half the flops of X.T @ diag(l''/n) @ X.
        root = np.sqrt(self.loss.second_derivative(self.margins(w)) / self.n)
        d = self.X.shape[1]
        H = np.zeros((d, d))
        for rows in gen_batches(self.n, max(1, _HESSIAN_BLOCK_BYTES // (8 * d))):
            block = self.X[rows]
            if sp.issparse(block):
                block = sp.csr_matrix(block.multiply(root[rows][:, None]))
                H += (block.T @ block).toarray()
            else:
                block = block * root[rows][:, None]
                H += block.T @ block
        H[np.diag_indices_from(H)] += self.lam
        return H

    def hessp_at(self, w):
        curv = self.loss.second_derivative(self.margins(w)) / self.n
        X, lam = self.X, self.lam

        def hessp(v):
            return np.asarray(X.T @ (curv * (X @ v))).ravel() + lam * v

        return hessp


def minimize_regularized_loss(loss, X, y, lam, linear=None, tol=1e-10, max_iter=1000,
                              w0=None):
    """Minimise F to a certified gradient norm ``<= tol``.

    Parameters
    ----------
    loss : loss object from ``dpsk._losses``
    X : ndarray or sparse matrix of shape (n, d)
    y : ndarray of shape (n,), values in {-1, +1}
    lam : float
        Strong-convexity modulus (total L2 strength), > 0.
    linear : ndarray of shape (d,) or None
        Linear term (objective perturbation's ``b / n``).
    tol : float
        Required bound on ``||grad F(w)||_2``.
    max_iter : int
        Iteration cap for L-BFGS-B; Newton polishing adds at most 50 steps.
    w0 : ndarray of shape (d,) or None
        Starting point (zeros by default).

    Returns
    -------
    SolverResult

    Raises
    ------
    SolverError
        If the gradient-norm bound is not reached.
    """
    obj = _Objective(loss, X, y, float(lam), linear)
    d = X.shape[1]
    w = np.zeros(d) if w0 is None else np.asarray(w0, dtype=float).copy()
    # L-BFGS-B is cheap far from the optimum but slow to polish; hand over to
    # Newton once the gradient is small, where Newton converges quadratically.
    res = minimize(
        obj.value_and_grad, w, jac=True, method="L-BFGS-B",
        options={"maxiter": max_iter, "gtol": max(tol, _HANDOVER_GTOL), "maxcor": 20},
    )
    # L-BFGS-B returns F and its gradient at res.x: no need to evaluate them again.
    w, value, grad = res.x, float(res.fun), np.asarray(res.jac, dtype=float)
    n_iter = int(res.nit)
    grad_norm = np.linalg.norm(grad)
    factor = None
    for _ in range(50):
        if grad_norm <= tol:
            break
        step, factor = _newton_step(obj, w, grad, grad_norm, factor)
        previous = grad_norm
        w, value, grad, grad_norm = _backtrack(obj, w, value, grad, grad_norm, step)
        n_iter += 1
        if grad_norm > _REUSE_HESSIAN_RATE * previous:
            factor = None  # slow progress: the Hessian has moved, form it again
    if not grad_norm <= tol:
        raise SolverError(
            f"The solver reached a gradient norm of {grad_norm:.3g}, above the bound "
            f"tol={tol:.3g} that the privacy noise was calibrated for. Increase tol or "
            f"max_iter, or the regularisation alpha."
        )
    return SolverResult(w, n_iter, grad_norm)


def _newton_step(obj, w, grad, grad_norm, factor=None):
    """Solve ``H step = -grad``: exactly for small d, by conjugate gradients otherwise.

    For d up to ``_DENSE_HESSIAN_MAX_D`` one Hessian costs a BLAS-3 pass over X
    (a few matrix-vector passes' worth of time) and its Cholesky solve is exact
    even when alpha is tiny and the problem ill-conditioned, where CG stalls.
    A Cholesky ``factor`` from an earlier, nearby point may be passed back in:
    such chord steps cost one gradient and still converge fast near the optimum.

    Returns
    -------
    step : ndarray of shape (d,)
    factor : Cholesky factor to reuse, or None
    """
    d = w.shape[0]
    if d <= _DENSE_HESSIAN_MAX_D:
        try:
            if factor is None:
                factor = cho_factor(obj.hessian_at(w))
            return cho_solve(factor, -grad), factor
        except LinAlgError:  # numerically indefinite: fall back to CG
            pass
    op = LinearOperator((d, d), matvec=obj.hessp_at(w), dtype=float)
    step, _ = cg(op, -grad, rtol=min(0.1, np.sqrt(grad_norm)), maxiter=max(50, d))
    return step, None


def _backtrack(obj, w, value, grad, grad_norm, step):
    """Armijo backtracking on F; accept a step that lowers F or the gradient norm.

    Near the optimum F stops resolving decreases in floating point (a Newton step
    that cuts the gradient norm a million-fold can raise F by a few ulps), so a
    step that leaves F flat to within rounding but shrinks the gradient norm is
    also accepted. Only the gradient norm is certified, so this is safe.
    """
    slope = grad @ step
    if not slope < 0:  # CG failed to give a descent direction: fall back to -grad
        step, slope = -grad, -(grad @ grad)
    t = 1.0
    for _ in range(40):
        w_new = w + t * step
        v_new, g_new = obj.value_and_grad(w_new)
        gn_new = np.linalg.norm(g_new)
        flat = v_new <= value + _VALUE_RESOLUTION * (1 + abs(value))
        if v_new <= value + 1e-4 * t * slope or (flat and gn_new < grad_norm):
            return w_new, v_new, g_new, gn_new
        t *= 0.5
    return w, value, grad, grad_norm
