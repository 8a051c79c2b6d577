"""The one solver of dpsk: minimise a strongly convex regularised margin loss.

    F(w) = (1/n) sum_i l(y_i w.x_i) + (lam/2) ||w||^2 + linear.w

The privacy proofs of Chaudhuri et al. (2011) are about the *exact* minimiser
``w*``. dpsk releases a point ``w`` with ``||w - w*|| <= tol / lam`` (``tol``
fixed before the data is seen) and calibrates extra noise for that distance
(``dpsk.mechanisms._noise.output_perturbation_beta`` and ``solver_residual_beta``).

The guarantee
-------------
:func:`dpsk._optimize._binary.minimize_regularized_loss` is *total* on its domain: for finite ``X``
(dense or CSR), labels in {-1, +1}, a finite ``linear``, finite ``lam > 0`` and
``tol > 0``, and a dpsk loss (convex, ``|l'| <= 1``, ``l'`` Lipschitz with
constant ``loss.curvature``), it returns a point and never raises. A
``SolverError`` means the input is outside that domain; the check looks only at
finiteness, shapes and the label set, and the message carries no data.

Whether the returned point came from the fast path or the fallback is not
visible to the caller: a data-dependent success/failure bit would be released
without noise, so the only output is ``w``.

Two paths lead to the point:

1. **Fast path, certified.** L-BFGS-B gets close cheaply, Newton steps (exact
   dense Hessian for ``d <= 2000``, conjugate gradients beyond; a full step
   when it lowers F, else an exact line search along the Newton direction)
   drive the gradient down. A Huber loss with ``h < 0.01`` is reached by
   continuation: solve for ``h = 0.5``, then shrink ``h`` eightfold per
   warm-started stage (:func:`_continuation_losses`). The point is returned
   only if a *rigorous* upper bound on the exact gradient norm,
   ``||fl(grad F)(w)|| + E(w)``, is at most ``tol``
   (see :meth:`_Objective.certificate`). Strong convexity then gives
   ``||w - w*|| <= ||grad F(w)|| / lam <= tol / lam`` for the floating-point
   vector ``w`` itself: this path's guarantee holds in floating point.
2. **Fallback, a priori.** Otherwise Nesterov's accelerated gradient method
   with constant momentum runs from the best point found, for an iteration
   count computed from that point's certified gradient bound, ``mu = lam`` and
   ``L = curvature * max_i ||x_i||^2 + lam``, aimed at the radius
   ``tol / (2 lam)`` (see :func:`_accelerated_gradient`). It stops early only
   when the certificate passes. The count is a theorem in exact arithmetic; the
   factor 2 between the target and the promised radius is room for the rounding
   of the iterations, which is *not* rigorously bounded. If the run ends with a
   passing certificate, the point is rigorously within ``tol / lam``.

Limits of floating point. The nearest float64 vector to ``w*`` can be
``u ||w*||`` away (``u = 2^-53``), and ``lam ||w*|| <= 1 + ||linear||``; so the
radius ``tol / lam`` can be out of reach of every float64 point unless ``tol``
is well above ``u (1 + ||linear||)``. For objective perturbation at very small
epsilon on few rows, ``linear = b / n`` can get there (``||b / n|| ~ 1e6`` for
``tol = 1e-10``); the solver still returns, but only the fallback's
exact-arithmetic statement may hold. The *certificate* reaches its limit
sooner: one ulp of ``w`` moves the gradient by up to about ``L u ||w*||``, so
with a large ``curvature`` (Huber, small ``h``), few rows and a large ``||w*||``
no float64 point may have ``||grad F|| <= tol`` although many lie within
``tol / lam``. Such problems go to the fallback (a test checks one in 60-digit
arithmetic: its distance to ``w*`` is below 1e-7 of the radius).

Memory is O(n + d^2) beyond X: no n x d temporaries (row blocks everywhere);
sparse X in a format other than CSR is converted to CSR once.

The machinery is generic: :func:`_solve` and the functions it calls see the
objective only through the methods of :class:`_CertifiedObjective`, on a flat
parameter vector. ``dpsk._optimize._multinomial_solver`` uses it for softmax regression.
"""

import math

import numpy as np
import scipy.sparse as sp
from scipy.linalg import LinAlgError, cho_factor, cho_solve
from scipy.optimize import minimize
from scipy.sparse.linalg import LinearOperator, cg

from .._data._design import row_slices
from ._losses import HuberLoss, LogisticLoss

__all__ = ["SolverError", "SolverResult", "check_row_weights", "tolerance_floor"]

_HANDOVER_GTOL = 1e-2
# Newton steps use the dense Hessian up to this dimension (d^2 doubles of memory).
_DENSE_HESSIAN_MAX_D = 2000
# A factorised Hessian is reused while each step cuts the gradient norm this much.
_REUSE_HESSIAN_RATE = 0.3
# Row blocks for accumulating the Hessian: bounded temporary memory.
_HESSIAN_BLOCK_BYTES = 4 * 2**20
# Relative size of a change in F that floating point cannot tell from noise.
_VALUE_RESOLUTION = 1e-12
# Newton steps before the fast path gives up (Huber with tiny h needs ~30).
_MAX_NEWTON = 100
# Huber widths below this are reached by continuation from _CONTINUATION_START_H.
_CONTINUATION_BELOW_H = 0.01
_CONTINUATION_START_H = 0.5
# Gradient norm at which an intermediate continuation stage hands over.
_STAGE_GTOL = 1e-7
# Certificates the fast path may try before handing over to the fallback.
_MAX_CERTIFICATES = 3
# Smallest row chunk of the certified sum X^T r (see _Objective.certificate).
_MIN_CHUNK = 1024
# Unit roundoff of IEEE double precision (round to nearest).
_U = 2.0**-53
# Covers the rounding of the error bound's own arithmetic (all of it is sums of
# non-negative terms, relative error far below 1e-6 for any realistic n and d).
_BOUND_SAFETY = 1.01
# Dekker's splitting constant for float64 (2^27 + 1).
_SPLITTER = 134217729.0


class SolverError(RuntimeError):
    """The input is outside the solver's domain.

    Raised only for non-finite values, ``lam <= 0``, ``tol <= 0``, labels
    outside the label set ({-1, +1}; {0, ..., K-1} for the multinomial solver)
    or inconsistent shapes. Within the domain the solver is
    total and never raises this.
    """


class SolverResult:
    """The solver's point ``w``.

    Only ``w`` is public. Whether the fast path certified the point or the
    fallback produced it depends on the data, so it is kept in private
    attributes for tests (``_path`` is ``"newton"`` or ``"fallback"``,
    ``_n_iter`` counts iterations) and must never be released.
    """

    def __init__(self, w, path, n_iter):
        self.w = w
        self._path = path
        self._n_iter = n_iter


def _gamma(k):
    """Higham's ``gamma_k = k u / (1 - k u)``."""
    ku = k * _U
    return ku / (1.0 - ku)


def _two_product(a, b):
    """``a * b = p + e`` exactly (Dekker 1971), barring overflow and underflow."""
    p = a * b
    t = _SPLITTER * a
    a_hi = t - (t - a)
    a_lo = a - a_hi
    t = _SPLITTER * b
    b_hi = t - (t - b)
    b_lo = b - b_hi
    e = ((a_hi * b_hi - p) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo
    return p, e


def _two_sum(a, b):
    """``a + b = s + e`` exactly (Knuth), barring overflow."""
    s = a + b
    bb = s - a
    e = (a - (s - bb)) + (b - bb)
    return s, e


def row_norm_bounds(block):
    """Upper bounds ``rho_i >= ||x_i||_2`` of the rows of a dense or CSR ``block``.

    ``fl(sum_j x_ij^2)`` has relative error at most ``gamma_d`` and the square
    root adds ``u``; the factor ``1 + 4 gamma_{d+2}`` covers both with room.
    Each bound depends on its row only, so any blocking gives the same bits.
    """
    if sp.issparse(block):
        sq = np.asarray(block.multiply(block).sum(axis=1)).ravel()
    else:
        sq = np.einsum("ij,ij->i", block, block)
    return np.sqrt(sq) * (1.0 + 4.0 * _gamma(block.shape[1] + 2))


def certificate_chunk_rows(n):
    """Rows per chunk of the certificate's sum ``X^T r``: ``max(1024, ceil(sqrt(n)))``."""
    return max(_MIN_CHUNK, math.isqrt(max(n - 1, 0)) + 1)


def chunked_sum_factor(chunk, m):
    """Relative error factor of a sum of ``m`` chunk sums of at most ``chunk`` rows each.

    Each chunk's sum (BLAS, any order) errs by at most ``gamma_chunk`` times the
    sum of its terms' absolute values. Adding the ``m`` chunk sums, in *any*
    order and grouping (one after another, or per block on Dask workers and
    then the block totals on the client), is a binary tree of ``m - 1``
    additions in which every chunk sum takes part in at most ``m - 1``
    roundings; so that stage errs by at most ``gamma_{m-1}`` times the sum of
    the absolute chunk sums (Higham 2002, Sec. 4.2, which bounds every
    recursive summation ordering this way), each at most ``1 + gamma_chunk``
    times its exact absolute sum. Total: ``gamma_chunk + gamma_{m-1} (1 +
    gamma_chunk)``.
    """
    g_chunk = _gamma(chunk)
    return g_chunk + _gamma(max(m - 1, 0)) * (1.0 + g_chunk)


class _CertifiedObjective:
    """What every certified objective shares: data, row norms, regulariser, certificate tail.

    ``F(w) = (loss part)(w) + (lam/2) ||w||^2 + linear.w`` on a flat parameter
    vector ``w``. The machinery below (:func:`_solve`, :func:`_fast_path`,
    :func:`_newton`, :func:`_line_search`, :func:`_exact_step`,
    :func:`_accelerated_gradient`) sees only these methods, which a subclass
    provides for its loss part:

    * ``value_and_grad(w)``, ``grad(w)``: F and its gradient, flat.
    * ``hessian_at(w)``: the dense Hessian (used when ``w.size <=
      _DENSE_HESSIAN_MAX_D``); ``hessp_at(w)``: a Hessian-vector product.
    * ``line_derivative(w, step)``: ``t -> d/dt F(w + t step)``, cheap once the
      direction's effect on the data is known (one pass over X).
    * ``certificate(w)``: ``(g, E)`` with ``||grad F(w)|| <= g + E`` rigorously.
    * ``curvature``: a bound ``c`` such that the loss part's gradient is
      ``c max_i ||x_i||^2``-Lipschitz (see :meth:`smoothness`).
    * ``continuation_stages()``: easier objectives to solve first (default none).

    ``linear`` is flat like ``w`` (or None).
    """

    def __init__(self, X, lam, linear):
        self.X, self.lam, self.linear = X, lam, linear
        self.n = X.shape[0]
        self._row_norms = None

    def continuation_stages(self):
        """Objectives to solve in turn, warm-started, ending with ``self``."""
        return [self]

    def _regulariser_gradient(self, w):
        """``lam w + linear`` and its two error-free parts (see ``_certificate_tail``).

        With objective perturbation at small epsilon, ``lam w`` and ``linear``
        are huge and nearly cancel; summing them naively leaves an error of
        ``u (lam ||w|| + ||linear||)`` that can exceed ``tol``. Splitting the
        product and the sum exactly (Dekker, Knuth) costs O(dim w).
        """
        if self.linear is None:
            p = self.lam * w
            return p, p, p
        p, e_p = _two_product(self.lam, w)
        s1, e_s = _two_sum(p, self.linear)
        return s1 + (e_p + e_s), p, s1

    def row_norms(self):
        """Upper bounds ``rho_i >= ||x_i||_2`` (computed once, in row blocks;
        :func:`row_norm_bounds`)."""
        if self._row_norms is None:
            rho = np.empty(self.n)
            for rows in row_slices(self.n, self._block_rows(self.X.shape[1])):
                rho[rows] = row_norm_bounds(self.X[rows])
            self._row_norms = rho
        return self._row_norms

    def max_row_norm(self):
        """``max_i rho_i`` (0 without rows)."""
        return float(self.row_norms().max(initial=0.0))

    def _block_rows(self, width):
        """Rows per block of a ``width``-column float64 temporary.

        At most ``_HESSIAN_BLOCK_BYTES``, and at most the block of a chunked
        design (``dpsk._data._design.DesignRows.block``), whose blocks are built on demand.
        """
        rows = max(1, _HESSIAN_BLOCK_BYTES // (8 * width))
        return min(rows, getattr(self.X, "block", rows))

    def max_row_terms(self):
        """Most terms in one row's dot product: ``d``, or the densest CSR row."""
        if sp.issparse(self.X):
            return int(np.diff(self.X.indptr).max(initial=0))
        return self.X.shape[1]

    def _chunked_transpose_product(self, r):
        """``X^T r`` summed over row chunks, and the relative factor of its error.

        ``r`` has shape (n,) or (n, K). Rows are summed in chunks of ``k_c =
        max(1024, ceil(sqrt(n)))`` by BLAS (error ``<= gamma_{k_c} sum_i |x_ij|
        |r_i.|`` per entry), and the ``m`` chunk sums are added one after another
        (``<= gamma_{m-1}`` times the sum of their absolute values). This avoids
        the ``gamma_n`` of one long sum: the returned factor ``gamma_{k_c} +
        gamma_{m-1}(1 + gamma_{k_c})`` is ``O(sqrt(n) u)``, and the error of every
        entry is at most that factor times ``(|X|^T |r|)``.
        """
        chunk = certificate_chunk_rows(self.n)
        v = np.zeros((self.X.shape[1],) + r.shape[1:])
        m = 0
        for rows in row_slices(self.n, chunk):
            v += np.asarray(self.X[rows].T @ r[rows]).reshape(v.shape)
            m += 1
        return v, chunked_sum_factor(chunk, m)

    def _certificate_tail(self, a, w, err):
        """Add the regulariser to the data gradient ``a`` and finish the certificate.

        ``a`` is the computed data gradient (flat, laid out like ``w``) and
        ``err`` the bound on its rounding error *before* the division by ``n``
        that formed it. The remaining steps:

        * the division by ``n``: ``u ||a||``;
        * ``lam w + linear`` is formed with an exact product and an exact sum
          plus one final rounding: error ``<= gamma_1 ||s|| + u^2 (||p|| +
          ||s_1||)``, not the ``u ||linear||`` of the naive sum
          (``_regulariser_gradient``);
        * the final addition ``a + s``: ``gamma_1 ||g||``;
        * ``||g||`` itself is computed with relative error below
          ``gamma_{D+2}`` (``D = w.size``); the bound inflates it by ``1 + 2
          gamma_{D+2}``.

        The terms' own arithmetic (non-negative sums) is covered by the factor
        ``_BOUND_SAFETY``. Returns ``(g, E)``.
        """
        s, p, s1 = self._regulariser_gradient(w)
        g = a + s
        g_norm = float(np.linalg.norm(g))
        err += _gamma(1) * float(np.linalg.norm(a))
        if self.linear is None:
            err += _gamma(1) * float(np.linalg.norm(s))
        else:
            err += _gamma(1) * float(np.linalg.norm(s)) + _U**2 * (
                float(np.linalg.norm(p)) + float(np.linalg.norm(s1)))
        err += _gamma(1) * g_norm
        err = _BOUND_SAFETY * err + 2.0 * _gamma(w.size + 2) * g_norm
        return g_norm, err

    def certified_bound(self, w):
        """Rigorous upper bound on ``||grad F(w)||`` (inf if anything overflowed)."""
        g, e = self.certificate(w)
        bound = g + e
        return bound if math.isfinite(bound) else math.inf

    def smoothness(self):
        """``L >= curvature * max_i ||x_i||^2 + lam``: a Lipschitz constant of grad F."""
        rho_max = self.max_row_norm()
        return (self.curvature * rho_max * rho_max + self.lam) * (1.0 + 4 * _U)

    def gradient_bound_at_zero(self):
        """A bound on ``||grad F(0)||`` that evaluates nothing but the row norms.

        Valid when every row's loss gradient at ``w = 0`` has norm at most
        ``||x_i||`` (``|l'(0)| <= 1`` for the margin losses; ``||p - e_y|| =
        sqrt((K-1)/K) < 1`` for softmax at uniform ``p``): then ``||grad F(0)||
        <= max rho + ||linear||``.
        """
        bound = self.max_row_norm() * (1.0 + 4 * _U)
        if self.linear is not None:
            bound += float(np.linalg.norm(self.linear)) * (1.0 + 2.0 * _gamma(self.linear.size + 2))
        return bound


class _Objective(_CertifiedObjective):
    """Value, gradient, Hessian and gradient certificate of F, sharing the margins."""

    def __init__(self, loss, X, y, lam, linear, sample_weight=None):
        super().__init__(X, lam, linear)
        self.loss, self.y = loss, y
        # Row weights in [0, 1] (docs/privacy.rst, "Weights"), or None for all ones.
        # None keeps the unweighted arithmetic, so an unweighted fit's bits do not change.
        self.sample_weight = sample_weight
        self._margins_at = (None, None)

    def _weighted(self, per_row):
        """``per_row`` times the row weights (itself without weights)."""
        return per_row if self.sample_weight is None else self.sample_weight * per_row

    @property
    def curvature(self):
        return self.loss.curvature

    def continuation_stages(self):
        """Huber of small width: wider stages first (:func:`_continuation_losses`)."""
        return [_Objective(stage_loss, self.X, self.y, self.lam, self.linear, self.sample_weight)
                for stage_loss in _continuation_losses(self.loss)[:-1]] + [self]

    def margins(self, w):
        # Newton asks for the margins at the point it just evaluated (Hessian,
        # line search, certificate): remembering the last ones saves a pass over
        # X each time. The key is a copy of w, since scipy reuses its arrays.
        at, z = self._margins_at
        if at is not None and np.array_equal(at, w):
            return z
        z = self.y * (self.X @ w)
        self._margins_at = (np.array(w, copy=True), z)
        return z

    def grad(self, w):
        z = self.margins(w)
        reg = self._regulariser_gradient(w)[0]
        r = self.y * self._weighted(self.loss.derivative(z))
        return np.asarray(self.X.T @ r).ravel() / self.n + reg

    def value_and_grad(self, w):
        z = self.margins(w)
        # The mean over all n rows, also with weights: n is public, sum(w) is not.
        value = self._weighted(self.loss.value(z)).mean() + 0.5 * self.lam * (w @ w)
        reg = self._regulariser_gradient(w)[0]
        r = self.y * self._weighted(self.loss.derivative(z))
        grad = np.asarray(self.X.T @ r).ravel() / self.n + reg
        if self.linear is not None:
            value += self.linear @ w
        return value, grad

    def hessian_at(self, w):
        """Dense Hessian, accumulated over row blocks so no n x d temporary exists."""
        c = self._weighted(self.loss.second_derivative(self.margins(w))) / self.n
        H = weighted_gram(self.X, c, self._block_rows(self.X.shape[1]))
        H[np.diag_indices_from(H)] += self.lam
        return H

    def hessp_at(self, w):
        curv = self._weighted(self.loss.second_derivative(self.margins(w))) / self.n
        X, lam = self.X, self.lam

        def hessp(v):
            return np.asarray(X.T @ (curv * (X @ v))).ravel() + lam * v

        return hessp

    def line_derivative(self, w, step):
        """``phi'(t) = d/dt F(w + t step)``, O(n) per call after one pass over X.

        With the directional margins ``a = y * (X @ step)``, ``phi'(t) = (1/n)
        sum_i l'(z_i + t a_i) a_i + lam w.step + linear.step + t lam ||step||^2``.
        """
        a = self.y * (self.X @ step)
        z0 = self.margins(w)
        # With weights the slope of row i is w_i l'(z_i + t a_i) a_i: fold w_i into a.
        weighted_a = self._weighted(a)
        c0 = self.lam * (w @ step) + (0.0 if self.linear is None else self.linear @ step)
        c1 = self.lam * (step @ step)
        n, derivative = self.n, self.loss.derivative

        def dphi(t):
            return (derivative(z0 + t * a) @ weighted_a) / n + c0 + t * c1

        return dphi

    def certificate(self, w):
        """Computed gradient norm and a rigorous bound on its rounding error.

        Returns ``(g, E)``: the exact gradient of F at the float vector ``w``
        satisfies ``||grad F(w)|| <= g + E``.

        Derivation (Higham, *Accuracy and Stability of Numerical Algorithms*,
        2002, Ch. 3-4; ``u = 2^-53``, ``gamma_k = k u / (1 - k u)``; every bound
        below holds for any summation order, so any BLAS and threading):

        1. Margins. ``fl(x_i . w)`` is a sum of ``k <= d`` products (``k`` = the
           row's stored entries), so ``|fl(x_i.w) - x_i.w| <= gamma_k sum_j
           |x_ij| |w_j| <= gamma_k rho_i ||w|| =: delta_i`` (Cauchy-Schwarz on the
           absolute values; ``rho_i`` bounds the row norm). Multiplying by
           ``y_i = +-1`` is exact.
        2. Derivative. ``|fl(l'(z~_i)) - l'(z_i)| <= D_i``: the Lipschitz part,
           ``delta_i`` times the largest ``l''`` within ``delta_i`` of ``z~_i``,
           plus the error of evaluating ``l'`` in floating point, a few ulps
           (:func:`_derivative_error` spells it out per loss). So the exact
           gradient with the computed ``r_i = y_i fl(l'(z~_i))`` in place of the
           exact ones moves by at most ``(1/n) sum_i D_i rho_i``.
        3. The sum ``X^T r`` in chunks (:meth:`_chunked_transpose_product`):
           error at most its factor times ``|X|^T |r|``, and in norm ``|| |X|^T
           |r| || <= sum_i |r_i| rho_i`` (triangle inequality over rows).
        4. The division by ``n``, ``lam w + linear`` with error-free
           transformations, the final addition and norm:
           :meth:`_certificate_tail`.

        Row weights ``s_i`` in [0, 1] (exact floats) give ``r_i = y_i fl(s_i
        fl(l'(z~_i)))``: the exact ``s_i l'(z_i)`` is off by at most ``s_i D_i``
        before the product and the product rounds once (``u |s_i fl(l')|``,
        and ``|s_i fl(l')| <= (1 + u) |r_i|``), so ``D_i`` becomes ``s_i D_i +
        2 u |r_i|``; steps 3 and 4 are unchanged with these ``r_i``.

        Under- and overflow are not modelled: within the domain every quantity
        here is far from both.
        """
        y, n = self.y, self.n
        d = self.X.shape[1]
        rho = self.row_norms()
        z = self.margins(w)
        w_norm = float(np.linalg.norm(w)) * (1.0 + 2.0 * _gamma(d + 2))
        delta = _gamma(max(self.max_row_terms(), 1)) * rho * w_norm
        r = y * self._weighted(self.loss.derivative(z))
        D = _derivative_error(self.loss, z, delta)
        if self.sample_weight is not None:
            D = self.sample_weight * D + 2.0 * _U * np.abs(r)
        v, sum_factor = self._chunked_transpose_product(r)
        err = (D @ rho) / n
        err += sum_factor * (np.abs(r) @ rho) / n
        return self._certificate_tail(v / n, w, err)


def weighted_gram(X, c, block_rows=None):
    """``X^T diag(c) X`` for ``c >= 0``, accumulated over row blocks (no n x d temporary).

    ``B^T B`` with ``B = diag(sqrt(c)) X`` lets BLAS use its symmetric rank-k
    update: half the flops of ``X^T diag(c) X``. ``block_rows`` defaults to
    ``_HESSIAN_BLOCK_BYTES`` worth of rows.
    """
    d = X.shape[1]
    if block_rows is None:
        block_rows = max(1, _HESSIAN_BLOCK_BYTES // (8 * d))
    root = np.sqrt(c)
    H = np.zeros((d, d))
    for rows in row_slices(X.shape[0], block_rows):
        block = X[rows]
        if sp.issparse(block):
            block = sp.csr_matrix(block.multiply(root[rows][:, None]))
            H += (block.T @ block).toarray()
        else:
            block = block * root[rows][:, None]
            H += block.T @ block
    return H


def _derivative_error(loss, z, delta):
    """Per-row bound ``D_i >= |fl(l'(z~_i)) - l'(z_i)|`` when ``|z~_i - z_i| <= delta_i``.

    ``z~`` are the computed margins, ``z`` the exact ones.

    * Logistic, ``l'(z) = -expit(-z)``. Lipschitz part: ``l''(t) = s(1 - s) <=
      min(1/4, exp(-|t|))``, so over ``|t - z~| <= delta`` it is at most
      ``delta min(1/4, exp(delta - |z~|))``. Evaluation: ``expit`` is
      ``1 / (1 + exp(-x))`` (or the mirrored form): an ``exp`` within one ulp
      (glibc), one addition and one division, under ``4u`` relative; ``8u
      |fl(l')|`` plus a subnormal floor is used.
    * Huber, ``l'(z) = clip(-((1 + h) - z) / (2h), -1, 0)`` evaluated in that
      order. ``fl(1 + h)`` errs by ``<= u (1 + h)``, the subtraction by ``<=
      gamma_1 |t2|``, the division by ``<= u |q~|``; clipping is 1-Lipschitz. So
      the evaluation error is ``<= c u (1 + h) + 2.01 u |q~|`` with ``c =
      1/(2h)``. Rows whose computed margin lies farther than ``delta_i + 4u (1 +
      h + |z~_i|)`` outside the quadratic zone ``|z - 1| <= h`` have the exact
      and the computed derivative equal to the same constant (0 or -1), so
      ``D_i = 0``; for the others ``D_i = c delta_i`` plus the evaluation error.
    * Any other loss: ``curvature * delta`` plus an assumed ``16 u``.
    """
    if isinstance(loss, LogisticLoss):
        lip = delta * np.minimum(0.25, np.exp(np.minimum(delta - np.abs(z), 0.0)))
        return lip + 8.0 * _U * np.abs(loss.derivative(z)) + 1e-300
    if isinstance(loss, HuberLoss):
        h, c = loss.h, loss.curvature
        q = -((1.0 + h) - z) / (2.0 * h)
        near = np.abs(z - 1.0) <= h + delta + 4.0 * _U * (1.0 + h + np.abs(z))
        inside = c * delta + c * _U * (1.0 + h) + 2.01 * _U * np.abs(q) + 1e-300
        return np.where(near, inside, 0.0)
    return loss.curvature * delta + 16.0 * _U


def _check_domain(obj, X, y, lam, linear, tol, w0):
    """Raise SolverError for inputs outside the domain; messages carry no data.

    The finiteness of X is read off the row norms, which the certificate needs
    anyway: one pass over X serves both.
    """
    _check_data(obj, X, y)
    if not np.all((y == 1.0) | (y == -1.0)):
        raise SolverError("y must contain only the labels -1 and +1.")
    _check_scalars(lam, tol)
    check_vectors(X.shape[1], linear, w0)


def check_row_weights(sample_weight, n):
    """Row weights as a float vector of length ``n`` in [0, 1], or None; SolverError else.

    The privacy proofs with weights (docs/privacy.rst, "Weights") need each
    row's weight in [0, 1]; the estimators refuse anything else earlier, for
    free. The message carries no data.
    """
    if sample_weight is None:
        return None
    weights = np.asarray(sample_weight, dtype=float)
    if weights.shape != (n,) or not np.all((weights >= 0.0) & (weights <= 1.0)):
        raise SolverError("sample_weight must be a vector with one weight in [0, 1] per row.")
    return weights


def check_vectors(d, linear, w0):
    """``linear`` and ``w0`` are None or finite vectors of length ``d``."""
    for name, vec in (("linear", linear), ("w0", w0)):
        if vec is not None and (vec.shape != (d,) or not np.isfinite(vec).all()):
            raise SolverError(f"{name} must be a finite vector with one entry per column of X.")


def _check_data(obj, X, y):
    """Shapes of X and y, and finiteness of X; shared by every solver of dpsk."""
    if not (X.ndim == 2 and y.ndim == 1 and y.shape[0] == X.shape[0] >= 1):
        raise SolverError("X must be a matrix with at least one row, and y a vector "
                          "with one label per row of X.")
    if not np.isfinite(obj.row_norms()).all():
        raise SolverError("X must contain only finite values, with rows of moderate norm.")


def _check_scalars(lam, tol):
    if not (math.isfinite(lam) and lam > 0):
        raise SolverError("lam must be a finite number > 0.")
    if not (math.isfinite(tol) and tol > 0):
        raise SolverError("tol must be a finite number > 0.")


#: Safety factor of :func:`tolerance_floor` over the rounding error it scales with.
_FLOOR_FACTOR = 64.0


def tolerance_floor(d, curvature, lam, linear_norm_bound=0.0):
    """The smallest ``tol`` the solver is asked for, from public quantities only.

    Below about ``d u c ||w*||`` (``u = 2^-53``, ``c`` the curvature bound) the
    rounding error of the gradient exceeds ``tol`` and no certificate can pass,
    and the fallback's exact-arithmetic rate stops describing its
    floating-point iterates: an audit measured a solver point 844 times the
    covered radius away at epsilon 1e-9, where ``||b / n||`` (and with it
    ``||w*||``) is huge. ``||w*|| <= (1 + linear_norm_bound) / lam`` (at the
    minimiser ``lam ||w*|| <= ||grad loss|| + ||linear|| <= 1 + ||linear||``),
    so ``_FLOOR_FACTOR d u (c + lam) (1 + linear_norm_bound) / lam`` is a floor
    on ``tol`` computed without the data (the mechanisms pass the largest norm
    their noise sampler can produce, ``dpsk.mechanisms._noise.noise_norm_bound``).
    Raising ``tol`` only adds noise; the guarantee is unchanged.

    Parameters
    ----------
    d : int
    curvature : float
        The loss constant ``c`` (``l'' <= c``).
    lam : float
        Strong convexity of the solved objective, > 0.
    linear_norm_bound : float, default=0.0
        A data-independent bound on the norm of the linear term.

    Returns
    -------
    floor : float
    """
    u = 2.0**-53
    return _FLOOR_FACTOR * d * u * (curvature + lam) * (1.0 + linear_norm_bound) / lam


def _solve(obj, w_start, tol, max_iter):
    """Fast path, else fallback, for any :class:`_CertifiedObjective`; never raises.

    Returns ``(w, path, n_iter)`` with ``w`` flat. Overflow or ``0 * inf`` inside
    the fast path only sends it to the fallback; numpy's warnings would otherwise
    announce a data-dependent event, so all are silenced here.
    """
    with np.errstate(all="ignore"):
        w, bound, n_iter = _fast_path(obj, w_start, tol, max_iter)
        if bound <= tol:
            return w, "newton", n_iter
        if not math.isfinite(bound) and np.isfinite(w).all():
            bound = obj.certified_bound(w)
        if not math.isfinite(bound):
            # The fast path broke down: start the fallback from its start.
            w, bound = w_start, obj.certified_bound(w_start)
        if not math.isfinite(bound):
            # Even that overflowed: from 0 a bound needs no evaluation of F.
            w = np.zeros_like(w_start)
            bound = obj.gradient_bound_at_zero()
        w, k = _accelerated_gradient(obj, w, bound, tol)
    return w, "fallback", n_iter + k


def _continuation_losses(loss):
    """Huber losses of decreasing width ending with ``loss`` (just ``[loss]`` if wide).

    For a small ``h`` the quadratic zone holds few margins, the generalised
    Hessian is nearly ``lam I`` and Newton degrades to steepest descent (100
    steps were not enough on Adult at ``h = 1e-4``). Solving for ``h = 0.5``
    first and shrinking ``h`` eightfold per stage, each stage warm-started at the
    previous solution, keeps every stage a few Newton steps away from its optimum.
    """
    if not (isinstance(loss, HuberLoss) and loss.h < _CONTINUATION_BELOW_H):
        return [loss]
    widths, h = [], _CONTINUATION_START_H
    while h > loss.h:
        widths.append(h)
        h /= 8.0
    return [HuberLoss(width) for width in widths] + [loss]


def _fast_path(obj, w, tol, max_iter):
    """L-BFGS-B then Newton; return ``(point, certified gradient bound, iterations)``.

    The bound is ``inf`` when the path broke down; the caller then looks at the
    point it came from.
    """
    n_iter = 0
    try:
        stages = obj.continuation_stages()
        first = stages[0]
        # L-BFGS-B is cheap far from the optimum but slow to polish; hand over to
        # Newton once the gradient is small, where Newton converges quadratically.
        res = minimize(
            first.value_and_grad, w, jac=True, method="L-BFGS-B",
            options={"maxiter": max_iter, "gtol": max(tol, _HANDOVER_GTOL), "maxcor": 20},
        )
        # L-BFGS-B returns F and its gradient at res.x: no need to evaluate them again.
        w, value, grad = res.x, float(res.fun), np.asarray(res.jac, dtype=float)
        n_iter = int(res.nit)
        for stage in stages[:-1]:
            if stage is not first:
                value, grad = stage.value_and_grad(w)
            w, value, grad, k = _newton(stage, w, value, grad, _STAGE_GTOL, _MAX_NEWTON)
            n_iter += k
        if len(stages) > 1:
            value, grad = obj.value_and_grad(w)
        grad_norm = float(np.linalg.norm(grad))
        if not (np.isfinite(w).all() and math.isfinite(grad_norm) and math.isfinite(value)):
            return w, math.inf, n_iter
        target, bound = tol, math.inf
        for _ in range(_MAX_CERTIFICATES):
            w, value, grad, k = _newton(obj, w, value, grad, target, _MAX_NEWTON)
            n_iter += k
            grad_norm = float(np.linalg.norm(grad))
            g, err = obj.certificate(w)
            bound = g + err
            if bound <= tol or err >= tol or grad_norm > target:
                break
            # The rounding bound eats part of tol: aim below what is left.
            target = 0.5 * min(tol - err, grad_norm)
        return w, bound, n_iter
    except MemoryError:
        raise
    except Exception:  # noqa: BLE001 - any breakdown is handled by the fallback
        return w, math.inf, n_iter


def _newton(obj, w, value, grad, target, max_steps):
    """Newton steps until the computed gradient norm is ``<= target``.

    Returns the point with the smallest gradient norm seen, its value and
    gradient, and the number of steps taken.
    """
    grad_norm = float(np.linalg.norm(grad))
    best = (w, value, grad, grad_norm)
    factor, k = None, 0
    while grad_norm > target and k < max_steps:
        step, factor = _newton_step(obj, w, grad, grad_norm, factor)
        previous = grad_norm
        w_new, value, grad, grad_norm = _line_search(obj, w, value, grad, grad_norm, step)
        k += 1
        if w_new is w:
            break  # no acceptable step from here
        w = w_new
        if grad_norm < best[3]:
            best = (w, value, grad, grad_norm)
        if grad_norm > _REUSE_HESSIAN_RATE * previous:
            factor = None  # slow progress: the Hessian has moved, form it again
    return best[0], best[1], best[2], k


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


def _line_search(obj, w, value, grad, grad_norm, step):
    """Take the full step if it is good enough, else an exact line search.

    Near the optimum F stops resolving decreases in floating point (a Newton step
    that cuts the gradient norm a million-fold can raise F by a few ulps), so a
    step that leaves F flat to within rounding but shrinks the gradient norm is
    also accepted; only the gradient is certified, so this is safe. When the full
    step fails (typically Huber with small ``h``, whose generalised Hessian does
    not see the kinks the step crosses), halving stalls; minimising F along the
    direction instead keeps Newton's progress. Returns the old ``w`` object
    unchanged when no acceptable step exists.
    """
    slope = grad @ step
    if not slope < 0:  # CG failed to give a descent direction: fall back to -grad
        step, slope = -grad, -(grad @ grad)
    resolution = _VALUE_RESOLUTION * (1 + abs(value))
    w_new = w + step
    v_new, g_new = obj.value_and_grad(w_new)
    gn_new = float(np.linalg.norm(g_new))
    if v_new <= value + 1e-4 * slope or (v_new <= value + resolution and gn_new < grad_norm):
        return w_new, v_new, g_new, gn_new
    t = _exact_step(obj, w, step, slope)
    if t > 0:
        w_new = w + t * step
        v_new, g_new = obj.value_and_grad(w_new)
        gn_new = float(np.linalg.norm(g_new))
        if v_new <= value + resolution or gn_new < grad_norm:
            return w_new, v_new, g_new, gn_new
    return w, value, grad, grad_norm


def _exact_step(obj, w, step, slope):
    """Root of ``phi'(t) = d/dt F(w + t step)`` by safeguarded regula falsi.

    ``phi'`` is non-decreasing (F is convex); ``obj.line_derivative`` makes it
    cheap (one pass over X, then O(n) or O(nK) vector work per evaluation).
    For the Huber loss ``phi'`` is piecewise linear and regula falsi lands on
    the root of the right piece.
    """
    dphi = obj.line_derivative(w, step)
    lo, f_lo = 0.0, slope
    hi = 1.0
    f_hi = dphi(hi)
    for _ in range(60):
        if f_hi >= 0:
            break
        lo, f_lo, hi = hi, f_hi, 2.0 * hi
        f_hi = dphi(hi)
    if not (f_hi >= 0 and f_lo < 0):
        return lo
    side = 0
    for _ in range(100):
        t = hi - f_hi * (hi - lo) / (f_hi - f_lo)
        if not lo < t < hi:
            t = 0.5 * (lo + hi)
        f_t = dphi(t)
        if f_t == 0:
            return t
        # Illinois modification: halve the stale end's value so the bracket
        # shrinks from both sides.
        if f_t < 0:
            lo, f_lo = t, f_t
            if side == -1:
                f_hi *= 0.5
            side = -1
        else:
            hi, f_hi = t, f_t
            if side == 1:
                f_lo *= 0.5
            side = 1
        if hi - lo <= 4 * _U * hi:
            break
    return lo if lo > 0 else hi


def _accelerated_gradient(obj, w, bound, tol):
    """Nesterov's method from ``w``, run long enough to be within ``tol / (2 lam)``.

    Scheme (constant momentum, Nesterov, *Introductory Lectures on Convex
    Optimization*, 2004, Section 2.2.1, constant step scheme for strongly convex
    functions; 2nd ed. 2018 likewise): with ``q = 1 - sqrt(mu / L)`` and
    ``beta = (sqrt L - sqrt mu) / (sqrt L + sqrt mu)``,

        x_{k+1} = y_k - grad F(y_k) / L,   y_{k+1} = x_{k+1} + beta (x_{k+1} - x_k),

    from ``y_0 = x_0``; Theorem 2.2.3 (with ``gamma_0 = mu``) gives

        F(x_k) - F* <= q^k (F(x_0) - F* + (mu/2) ||x_0 - x*||^2).

    Iteration count. Let ``G >= ||grad F(x_0)||`` be the certified bound at the
    start. Strong convexity gives ``||x_0 - x*|| <= G / mu`` and ``F(x_0) - F*
    <= G^2 / (2 mu)``, so the bracket is at most ``G^2 / mu``; and ``||x_k -
    x*||^2 <= 2 (F(x_k) - F*) / mu <= 2 q^k G^2 / mu^2``. This is at most
    ``r^2`` with ``r = tol / (2 mu)`` once

        k >= K = ceil( log(8 G^2 / tol^2) / (-log q) ).

    Here ``mu = lam`` and ``L = curvature * max ||x_i||^2 + lam`` (``l'`` is
    ``curvature``-Lipschitz, and ``||X^T D X|| / n <= c max ||x_i||^2`` for
    ``0 <= D <= c``; for softmax see ``dpsk._optimize._multinomial_solver``). K depends
    on the data, but only ``w`` leaves the solver.

    Exact arithmetic versus rounding: K is a theorem in exact arithmetic. The
    iterations are rounded; the target ``tol / (2 lam)`` leaves half the
    promised radius for that, which is not proved. The run stops early only on a
    passing certificate (checked at geometrically spaced iterations, so
    O(log K) extra gradient passes), which *is* rigorous in floating point.

    Returns
    -------
    w : ndarray, flat like the start
    n_iter : int
    """
    mu = obj.lam
    L = max(obj.smoothness(), mu)
    ratio = 8.0 * bound * bound / (tol * tol)
    if not ratio > 1.0:
        return w, 0
    root = math.sqrt(mu / L)
    contraction = -math.log1p(-root) if root < 1.0 else math.inf
    n_steps = math.ceil(math.log(ratio) / contraction) if contraction > 0 else 0
    momentum = (math.sqrt(L) - math.sqrt(mu)) / (math.sqrt(L) + math.sqrt(mu))
    x = w.copy()
    y = x.copy()
    next_check = 50
    for k in range(1, n_steps + 1):
        x_new = y - obj.grad(y) / L
        y = x_new + momentum * (x_new - x)
        x = x_new
        if k == next_check and k < n_steps:
            next_check = max(next_check + 1, int(1.5 * next_check))
            if obj.certified_bound(x) <= tol:
                return x, k
    return x, n_steps
