"""A certified solver for L2-regularised multinomial (softmax) logistic regression.

    F(W) = (1/n) sum_i CE(W x_i, y_i) + (lam/2) ||W||_F^2 + <linear, W>_F,

    CE(z, y) = logsumexp(z) - z_y,

with ``W`` of shape (K, d), ``K >= 2`` classes and labels ``y_i`` in
``{0, ..., K-1}``. The guarantee is that of ``dpsk._optimize._solver`` (read its module
docstring): :func:`minimize_multinomial_loss` is total on its domain, returns
only a point ``W``, and ``||W - W*||_F <= tol / lam`` holds in floating point
when the fast path's certificate passes (:meth:`_MultinomialObjective.certificate`),
and in exact arithmetic for the fallback's a-priori iteration count. The
machinery (L-BFGS-B, Newton with dense Cholesky or conjugate gradients, exact
line search, Nesterov fallback) is ``dpsk._optimize._solver``'s, run on the flat vector
``w = W.ravel()`` of length ``K d``; only the objective lives here.

Facts used (``p_i = softmax(W x_i)``, ``e_y`` the one-hot vector):

* Gradient. ``d CE / d z = p - e_y``, so ``grad F = (1/n) (P - Y)^T X + lam W
  + linear`` (``P``, ``Y`` the n x K matrices of ``p_i`` and ``e_{y_i}``).
  Each row contributes ``(p_i - e_{y_i}) x_i^T``, of Frobenius norm
  ``||p_i - e_{y_i}|| ||x_i|| <= sqrt(2) ||x_i||``: ``||p - e_y||^2 = (1 -
  p_y)^2 + sum_{k != y} p_k^2 <= 2 (1 - p_y)^2``.
* Hessian on ``vec(W)`` (class-major): ``(1/n) sum_i A_i (x) x_i x_i^T + lam
  I`` with ``A_i = diag(p_i) - p_i p_i^T``. ``v^T A v = sum_k p_k v_k^2 - (p.v)^2``
  is the variance of ``v`` under ``p``, at most ``(max v - min v)^2 / 4 <=
  (sqrt(2) ||v||)^2 / 4 = ||v||^2 / 2``. So ``lambda_max(A_i) <= 1/2``, the
  loss part's gradient is ``(1/2) max_i ||x_i||^2``-Lipschitz (``curvature =
  1/2``) and F is ``lam``-strongly convex with smoothness ``L <= (1/2) max
  ||x_i||^2 + lam``.
* Minimiser. ``lam ||W*|| <= sqrt(2) max ||x_i|| + ||linear||``.

Memory is O(n K + (K d)^2) beyond X: scores and probabilities are n x K, the
dense Hessian (only for ``K d <= _DENSE_HESSIAN_MAX_D``) is (K d)^2, and every
pass over X goes by row blocks.
"""

import math
import operator

import numpy as np
import scipy.sparse as sp

from .._data._design import DesignRows, row_slices
from ._solver import (
    _U,
    SolverError,
    SolverResult,
    _CertifiedObjective,
    _check_data,
    _check_scalars,
    _gamma,
    _solve,
    check_row_weights,
    tolerance_floor,
)

__all__ = ["minimize_multinomial_loss", "multinomial_tolerance_floor"]

# Relative error assumed for one float64 exp (4 ulps; glibc and numpy's SIMD
# versions are documented within a few ulps, mostly below one).
_EXP_ERROR = 8.0 * _U
# Absolute error floor per probability: covers underflow of exp (t below about
# -708) and subnormal quotients, whose absolute errors are below 1e-307.
_UNDERFLOW_FLOOR = 1e-300
# |t| beyond this has exp(t) == 0 in float64, so the relative error terms, which
# grow with |t|, only multiply zeros there; capping keeps them finite.
_T_CAP = 800.0


def _softmax_parts(Z):
    """``t = Z - max``, ``S = sum exp(t)`` and ``P = exp(t) / S``, row-wise.

    The shift makes ``exp`` overflow-free (``t <= 0``, the largest is exactly
    0 so ``S >= 1``); the error analysis in
    :meth:`_MultinomialObjective.certificate` is of exactly these operations.
    """
    t = Z - Z.max(axis=1, keepdims=True)
    E = np.exp(t)
    S = E.sum(axis=1)
    return t, S, E / S[:, None]


class _MultinomialObjective(_CertifiedObjective):
    """Value, gradient, Hessian and certificate of the softmax F, on ``w = W.ravel()``.

    Parameters
    ----------
    X : ndarray or CSR matrix of shape (n, d)
    y : ndarray of shape (n,), integer labels in [0, K)
    n_classes : int
    lam : float
    linear : ndarray of shape (K d,) or None
    """

    #: ``lambda_max(diag(p) - p p^T) <= 1/2`` (module docstring).
    curvature = 0.5

    def __init__(self, X, y, n_classes, lam, linear, sample_weight=None):
        super().__init__(X, lam, linear)
        self.y, self.K = y, n_classes
        # Row weights in [0, 1] (docs/privacy.rst, "Weights"); None keeps the
        # unweighted arithmetic bit for bit.
        self.sample_weight = sample_weight
        # Shapes are checked after construction (the check reads row_norms).
        self.d = X.shape[1] if X.ndim == 2 else 0
        self._rows = np.arange(self.n)
        self._scores_at = (None, None)

    def _matrix(self, w):
        return w.reshape(self.K, self.d)

    def _times_transpose(self, M):
        """``X M^T`` for M of shape (K, d): n x K, no n x d temporary."""
        return np.asarray(self.X @ M.T)

    def _transpose_times(self, R):
        """``(X^T R)^T`` for R of shape (n, K), flat like ``w``."""
        return np.asarray(self.X.T @ R).T.ravel()

    def scores(self, w):
        # Newton asks for the scores at the point it just evaluated; remember the
        # last ones (keyed on a copy of w, since scipy reuses its arrays).
        at, Z = self._scores_at
        if at is not None and np.array_equal(at, w):
            return Z
        Z = self._times_transpose(self._matrix(w))
        self._scores_at = (np.array(w, copy=True), Z)
        return Z

    def _residuals(self, P):
        """``R = P - Y`` (a copy), each row times its weight when there are weights."""
        R = P.copy()
        R[self._rows, self.y] -= 1.0
        return self._weighted(R)

    def _weighted(self, per_row):
        """Rows of ``per_row`` (shape (n,) or (n, K)) times the row weights."""
        if self.sample_weight is None:
            return per_row
        weights = self.sample_weight
        return weights * per_row if per_row.ndim == 1 else weights[:, None] * per_row

    def grad(self, w):
        P = _softmax_parts(self.scores(w))[2]
        reg = self._regulariser_gradient(w)[0]
        return self._transpose_times(self._residuals(P)) / self.n + reg

    def value_and_grad(self, w):
        t, S, P = _softmax_parts(self.scores(w))
        # CE_i = logsumexp(z_i) - z_{i y_i} = log S_i - t_{i y_i}: no cancellation
        # between the max and z_y.
        # The mean over all n rows, also with weights: n is public, sum(w) is not.
        value = self._weighted(np.log(S) - t[self._rows, self.y]).mean()
        value += 0.5 * self.lam * (w @ w)
        if self.linear is not None:
            value += self.linear @ w
        reg = self._regulariser_gradient(w)[0]
        return value, self._transpose_times(self._residuals(P)) / self.n + reg

    def hessian_at(self, w):
        """Dense (K d) x (K d) Hessian, accumulated over row blocks.

        ``sum_i A_i (x) x_i x_i^T`` with ``A_i = diag(p_i) - p_i p_i^T`` splits
        into the block diagonal ``X^T diag(p_k) X`` and ``-B^T B`` where row
        ``i`` of ``B`` is ``p_i (x) x_i`` (length K d): one BLAS-3 product per
        row block, ``n (K d)^2`` flops in all. A block of ``b`` rows needs a
        ``b x K d`` temporary, kept under ``_HESSIAN_BLOCK_BYTES``.
        """
        P = _softmax_parts(self.scores(w))[2]
        if self.sample_weight is not None:
            # s_i A_i = diag(s_i p_i) - (sqrt(s_i) p_i)(sqrt(s_i) p_i)^T: the two parts
            # below take p_i scaled by s_i and by sqrt(s_i) respectively.
            root = np.sqrt(self.sample_weight)[:, None]
        K, d = self.K, self.d
        H = np.zeros((K * d, K * d))
        for rows in row_slices(self.n, self._block_rows(K * d)):
            block, Pb = self.X[rows], P[rows]
            Pd = Pb  # the block-diagonal part's probabilities
            if self.sample_weight is not None:
                Pb = root[rows] * Pb
                Pd = root[rows] * Pb
            if sp.issparse(block):
                parts = [sp.csr_matrix(block.multiply(Pb[:, [k]])) for k in range(K)]
                B = sp.hstack(parts, format="csr")
                H -= (B.T @ B).toarray()
                for k in range(K):
                    part = parts[k] if Pd is Pb else sp.csr_matrix(block.multiply(Pd[:, [k]]))
                    H[k * d:(k + 1) * d, k * d:(k + 1) * d] += (block.T @ part).toarray()
            else:
                B = (Pb[:, :, None] * block[:, None, :]).reshape(block.shape[0], K * d)
                H -= B.T @ B
                for k in range(K):
                    part = B[:, k * d:(k + 1) * d] if Pd is Pb else block * Pd[:, [k]]
                    H[k * d:(k + 1) * d, k * d:(k + 1) * d] += block.T @ part
        H /= self.n
        H[np.diag_indices_from(H)] += self.lam
        return H

    def hessp_at(self, w):
        """``v -> H v`` in O(n K) memory: ``A_i u_i = p_i * u_i - p_i (p_i . u_i)``."""
        P = _softmax_parts(self.scores(w))[2]
        n, lam = self.n, self.lam

        def hessp(v):
            A = self._times_transpose(self._matrix(v))
            PA = P * A
            Q = PA - P * PA.sum(axis=1, keepdims=True)
            return self._transpose_times(self._weighted(Q)) / n + lam * v

        return hessp

    def line_derivative(self, w, step):
        """``phi'(t) = <grad F(W + t S), S>_F``, O(n K) per call after one pass over X.

        With ``A = X S^T`` (n x K) and the scores ``Z`` at ``W``,
        ``phi'(t) = (1/n) sum_i [softmax(z_i + t a_i) . a_i - a_{i y_i}] + lam
        <W, S> + <linear, S> + t lam ||S||^2``.
        """
        A = self._times_transpose(self._matrix(step))
        Z = self.scores(w)
        c0 = self.lam * (w @ step) + (0.0 if self.linear is None else self.linear @ step)
        c0 -= self._weighted(A[self._rows, self.y]).mean()
        c1 = self.lam * (step @ step)
        n = self.n
        weighted_A = self._weighted(A)

        def dphi(t):
            P = _softmax_parts(Z + t * A)[2]
            return np.einsum("ik,ik->", P, weighted_A) / n + c0 + t * c1

        return dphi

    def certificate(self, w):
        """Computed gradient norm and a rigorous bound on its rounding error.

        Returns ``(g, E)``: the exact gradient of F at the float vector ``w``
        satisfies ``||grad F(W)||_F <= g + E``.

        Derivation (Higham 2002, Ch. 3-4, as for the binary
        ``_Objective.certificate``; ``u = 2^-53``, ``gamma_k = k u / (1 - k u)``;
        every bound holds for any summation order, so any BLAS and threading).
        Write ``z`` for the exact scores of the float ``W``, ``z~`` for the
        computed ones, ``p = softmax(z)``, ``p~ = softmax(z~)`` (exact) and
        ``p^`` for the computed probabilities.

        1. Scores. ``fl(x_i . w_k)`` is a sum of ``m <= d`` products (``m`` =
           the row's stored entries), so ``|z~_ik - z_ik| <= gamma_m rho_i
           ||w_k|| =: delta_ik``; let ``Delta_i = max_k delta_ik``.
        2. Softmax, Lipschitz part. With ``e = z - z~``, ``p_k / p~_k =
           e^{e_k} / sum_j p~_j e^{e_j}``; the numerator lies in
           ``e^{+-delta_ik}`` and the denominator (a ``p~``-average) in
           ``e^{+-Delta_i}``, so ``|p_k - p~_k| <= p~_k expm1(delta_ik +
           Delta_i)`` (``<= 2 Delta p~ e^{2 Delta}``).
        3. Softmax, evaluation. ``t_k = z~_k - max`` (``t <= 0``, the largest
           exactly 0) is rounded to ``t~_k = t_k + eps_k``, ``|eps_k| <= u
           |t_k|``; ``exp`` is assumed within ``_EXP_ERROR = 8u`` relative
           (``alpha_k``); the sum of the K non-negative terms errs by
           ``gamma_{K-1}`` relative (``beta``); the division by ``u``
           (``theta_k``). With ``S_t = sum_j e^{t_j} >= 1``:

           * the computed sum is ``S_t (1 + mu)``. Its terms are ``e^{t_j}
             (e^{eps_j} (1 + alpha_j))``, and ``e^{t_j} expm1(u |t_j|) <= u
             |t_j| e^{-(1-u)|t_j|} <= u / ((1-u) e) < 0.37 u`` (mean value
             theorem; ``s e^{-s} <= 1/e``: the ``p_k |z_k - max| <= 1/e`` of
             the subtraction). So ``|mu| <= mu_max = gamma_{K-1} + (8 + 0.37
             K) u (1 + gamma_{K-1})``.
           * ``p^_k = p~_k e^{eps_k} rho_k`` with ``rho_k = (1 + alpha_k)(1 +
             theta_k) / (1 + mu)``, ``|rho_k - 1| <= eta = (nu + mu_max) / (1 -
             mu_max)``, ``nu = 9.01 u >= (1 + 8u)(1 + u) - 1``.
           * Hence ``|p^_k - p~_k| = p~_k |e^{eps_k} rho_k - 1| <= p~_k (eta
             e^{|eps_k|} + expm1(|eps_k|))``, and ``p~_k = p^_k e^{-eps_k} /
             rho_k <= p^_k e^{|eps_k|} / (1 - eta)``. With ``tau_k = |t~_k| / (1
             - u) >= |t_k|``: ``|p^_k - p~_k| <= p^_k (eta e^{2 u tau_k} +
             e^{u tau_k} expm1(u tau_k)) / (1 - eta) =: V_ik``.

           Where ``exp`` underflows (``t < -708``) this relative model fails,
           but every absolute error there is below 1e-307; ``_UNDERFLOW_FLOOR``
           per entry covers it. ``tau`` is capped at ``_T_CAP`` (beyond it
           ``p^_k = 0`` and the term is zero anyway).
        4. Residual. ``r_ik = p^_ik - [k = y_i]`` rounds once, ``<= u |r_iy|``
           at ``k = y_i``. So the computed residual row differs from the exact
           ``p_i - e_{y_i}`` by at most ``D_ik = V_ik + (p^_ik + V_ik)
           expm1(delta_ik + Delta_i) + u |r_ik| [k = y_i]`` per entry, and the
           exact gradient with computed residuals in place of exact ones moves by
           at most ``(1/n) sum_i ||D_i|| rho_i`` (each row's term ``D_i x_i^T``
           has Frobenius norm ``||D_i|| ||x_i||``).
        5. ``X^T R`` in chunks (``_chunked_transpose_product``): every entry's
           error is at most its factor times ``(|X|^T |R|)_jk``, and
           ``|| |X|^T |R| ||_F <= sum_i || |x_i| |r_i|^T ||_F <= sum_i rho_i
           ||r_i||``.
        6. The division by ``n``, ``lam W + linear`` with error-free
           transformations, the final addition and the norm:
           ``_certificate_tail`` (dimension ``K d``).

        Row weights ``s_i`` in [0, 1]: the computed residual row is ``fl(s_i
        r~_i)``, off from the exact ``s_i (p_i - e_{y_i})`` by at most ``s_i D_i
        + u |s_i r~_i|`` per entry, and ``|s_i r~_i| <= (1 + u) |fl(s_i r~_i)|``;
        so ``D_i`` becomes ``s_i D_i + 2 u |R_i|`` with the weighted ``R``, and
        step 5 uses the weighted ``R``.

        The bound's own arithmetic (non-negative sums, norms of short vectors)
        is covered by ``_BOUND_SAFETY``; overflow is not modelled (within the
        domain the scores are far from it).
        """
        K, d, n = self.K, self.d, self.n
        rho = self.row_norms()
        Z = self.scores(w)
        t, _, P = _softmax_parts(Z)
        R = self._residuals(P)

        class_norms = np.linalg.norm(self._matrix(w), axis=1) * (1.0 + 2.0 * _gamma(d + 2))
        delta = _gamma(max(self.max_row_terms(), 1)) * rho[:, None] * class_norms[None, :]
        lip = np.expm1(delta + delta.max(axis=1, keepdims=True))

        mu = _gamma(K - 1) + (8.0 + 0.37 * K) * _U * (1.0 + _gamma(K - 1))
        eta = (9.01 * _U + mu) / (1.0 - mu)
        tau = np.minimum(np.abs(t), _T_CAP) / (1.0 - _U)
        V = P * (eta * np.exp(2.0 * _U * tau) + np.exp(_U * tau) * np.expm1(_U * tau))
        V = V / (1.0 - eta) + _UNDERFLOW_FLOOR
        D = V + (P + V) * lip
        if self.sample_weight is None:
            D[self._rows, self.y] += _U * np.abs(R[self._rows, self.y])
        else:
            # R is already weighted: unweight the label entry's rounding, then
            # weight D and add the product's rounding (docstring, last paragraph).
            residual_y = P[self._rows, self.y] - 1.0
            D[self._rows, self.y] += _U * np.abs(residual_y)
            D = self.sample_weight[:, None] * D + 2.0 * _U * np.abs(R)

        v, sum_factor = self._chunked_transpose_product(R)
        err = (np.linalg.norm(D, axis=1) @ rho) / n
        err += sum_factor * (np.linalg.norm(R, axis=1) @ rho) / n
        return self._certificate_tail(v.T.ravel() / n, w, err)


def multinomial_tolerance_floor(d, n_classes, lam, linear_norm_bound=0.0):
    """The smallest ``tol`` to ask of :func:`minimize_multinomial_loss`, from public values.

    The reasoning of ``dpsk._optimize._solver.tolerance_floor`` (read it), with the
    softmax constants: the parameter has dimension ``K d`` (scores are sums of
    ``d`` products and the certified norm runs over ``K d`` entries, so ``K d``
    is the conservative count), the curvature is ``1/2`` (largest eigenvalue of
    ``diag(p) - p p^T``), and at the minimiser ``lam ||W*||_F <= sqrt(2) +
    ||linear||`` because each row's loss gradient ``(p - e_y) x^T`` has
    Frobenius norm ``<= sqrt(2) ||x|| <= sqrt(2)``. The floor is thus

        _FLOOR_FACTOR (K d) u (1/2 + lam) (sqrt(2) + linear_norm_bound) / lam,

    which is ``tolerance_floor(K d, 1/2, lam, linear_norm_bound + sqrt(2) - 1)``.

    Parameters
    ----------
    d : int
    n_classes : int
        ``K >= 2``.
    lam : float
        Strong convexity of the solved objective, > 0.
    linear_norm_bound : float, default=0.0
        A data-independent bound on the Frobenius norm of the linear term.

    Returns
    -------
    floor : float
    """
    return tolerance_floor(n_classes * d, _MultinomialObjective.curvature, lam,
                           linear_norm_bound + math.sqrt(2.0) - 1.0)


def minimize_multinomial_loss(X, y, n_classes, lam, linear=None, tol=1e-10, max_iter=1000,
                              w0=None, sample_weight=None):
    """Return ``W`` within ``tol / lam`` (Frobenius) of the exact minimiser of F; never fail.

    See the module docstrings of this module and of ``dpsk._optimize._solver`` for the
    guarantee, which parts of it hold in floating point and which in exact
    arithmetic.

    Parameters
    ----------
    X : ndarray or sparse matrix of shape (n, d)
        Finite; rows of L2 norm <= 1 in dpsk (the bounds use the actual norms).
    y : array-like of shape (n,)
        Integer class indices in ``{0, ..., n_classes - 1}`` (integer or
        integral float dtype). Classes absent from ``y`` are allowed.
    n_classes : int
        ``K >= 2``.
    lam : float
        Strong-convexity modulus (total L2 strength), finite and > 0.
    linear : ndarray of shape (n_classes, d) or None
        Linear term (objective perturbation's ``B / n``), finite.
    tol : float
        Gradient-norm scale of the guarantee: ``||W - W*||_F <= tol / lam``.
        Finite and > 0; see :func:`multinomial_tolerance_floor`.
    max_iter : int
        Iteration cap for L-BFGS-B. It only shapes the fast path; the guarantee
        does not depend on it.
    w0 : ndarray of shape (n_classes, d) or None
        Starting point (zeros by default), finite.
    sample_weight : ndarray of shape (n,) or None
        Row weights in [0, 1]: the loss part becomes ``(1/n) sum_i s_i CE(W x_i,
        y_i)`` (docs/privacy.rst, "Weights"). None: unweighted, bit for bit as
        before. Only with a stored design (dense or CSR).

    Returns
    -------
    SolverResult
        ``.w`` of shape (n_classes, d); only ``.w`` is meant for callers.

    Raises
    ------
    SolverError
        Only for inputs outside the domain (non-finite values, ``lam <= 0``,
        ``tol <= 0``, labels not integers in ``[0, n_classes)``, fewer than two
        classes, inconsistent shapes). Never for a difficult problem.
    """
    K = _check_n_classes(n_classes)
    if sp.issparse(X) and X.format != "csr":
        X = sp.csr_matrix(X)  # row slices below need CSR
    if not (sp.issparse(X) or isinstance(X, DesignRows)):
        X = np.asarray(X, dtype=float)
    labels = _check_labels(y, K)
    lam, tol = float(lam), float(tol)
    d = X.shape[1] if X.ndim == 2 else 0
    linear = _check_matrix("linear", linear, K, d)
    w0 = _check_matrix("w0", w0, K, d)
    if sample_weight is not None and isinstance(X, DesignRows):
        raise SolverError("sample_weight needs a stored design (dense or CSR), not a "
                          "chunked one.")
    n = X.shape[0] if X.ndim == 2 else 0
    obj = _MultinomialObjective(X, labels, K, lam, linear, check_row_weights(sample_weight, n))
    _check_data(obj, X, labels)
    _check_scalars(lam, tol)
    w_start = np.zeros(K * d) if w0 is None else w0.copy()
    w, path, n_iter = _solve(obj, w_start, tol, max_iter)
    return SolverResult(w.reshape(K, d), path, n_iter)


def _check_n_classes(n_classes):
    try:
        K = operator.index(n_classes)
    except TypeError:
        K = None
    if K is None or isinstance(n_classes, bool) or K < 2:
        raise SolverError("n_classes must be an integer, at least two.")
    return K


def _check_labels(y, K):
    """Labels as an intp vector; SolverError unless integers in [0, K). No data in messages."""
    y = np.asarray(y)
    message = "y must be a vector of integer class indices, each below n_classes and not negative."
    if y.ndim != 1 or y.dtype.kind not in "iuf":
        raise SolverError(message)
    if y.dtype.kind == "f":
        with np.errstate(invalid="ignore"):
            ok = np.isfinite(y) & (y == np.floor(y))
        if not ok.all():
            raise SolverError(message)
    if y.size and not (y.min() >= 0 and y.max() < K):
        raise SolverError(message)
    return y.astype(np.intp)


def _check_matrix(name, M, K, d):
    """``M`` (linear or w0) flattened, after checking shape (K, d) and finiteness."""
    if M is None:
        return None
    M = np.asarray(M, dtype=float)
    if M.shape != (K, d) or not np.isfinite(M).all():
        raise SolverError(f"{name} must be a finite matrix with one row per class and one "
                          "column per column of X.")
    return M.ravel()
