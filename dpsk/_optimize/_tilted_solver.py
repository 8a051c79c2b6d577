"""A certified solver for tilted L2-regularised logistic regression.

    T(w) = (alpha/2) ||w||^2 + (1/t) log( (1/n) sum_i exp(t l(y_i w.x_i)) ),   t > 0,

the tilted empirical risk of Li, Beirami, Sanjabi and Smith (2021) with the
per-row losses ``f_i = l_i + (alpha/2) ||w||^2`` (the ridge term comes out of the
log-mean-exp unchanged). As ``t -> 0`` it tends to ordinary ERM; larger ``t``
weights the worst-off rows more.

Facts used (``l`` logistic, ``p = softmax(t l)`` the tilted weights, ``g_i =
l'_i y_i x_i``):

* Convexity. ``(1/t) log mean exp(t v)`` is convex and non-decreasing in each
  ``v_i`` (a log-sum-exp), and each ``l_i`` is convex in ``w``: their
  composition is convex, and ``T`` is ``alpha``-strongly convex.
* Gradient. ``grad T = sum_i p_i g_i + alpha w``; ``||g_i|| <= ||x_i||``.
* Hessian. ``sum_i p_i (l''_i + t l'_i^2) x_i x_i^T - t G G^T + alpha I`` with
  ``G = sum_i p_i g_i``; the loss part is between 0 and ``(1/4 + t) max
  ||x_i||^2``, so ``curvature = 1/4 + t``.

The machinery (L-BFGS-B, Newton, exact line search, certified stop and the
Nesterov fallback) is ``dpsk._optimize._solver``'s; only the objective and its rounding
certificate live here.
"""

import math

import numpy as np
import scipy.sparse as sp
from scipy.special import logsumexp, softmax

from ._losses import LogisticLoss
from ._solver import (
    _BOUND_SAFETY,
    _U,
    SolverResult,
    _CertifiedObjective,
    _check_domain,
    _derivative_error,
    _gamma,
    _solve,
    weighted_gram,
)

__all__ = ["minimize_tilted_logistic"]

# Relative error assumed for one float64 exp or log1p (as dpsk._optimize._multinomial_solver).
_FUNCTION_ERROR = 8.0 * _U


class _TiltedObjective(_CertifiedObjective):
    """Value, gradient, Hessian and certificate of the tilted logistic ``T``."""

    def __init__(self, X, y, lam, tilt):
        super().__init__(X, lam, None)
        self.y, self.t = y, float(tilt)
        self.loss = LogisticLoss()
        self._at = (None, None)

    @property
    def curvature(self):
        return 0.25 + self.t

    def parts(self, w):
        """Margins ``m``, losses ``l``, ``l'`` and the tilted weights ``p`` at ``w``."""
        at, cached = self._at
        if at is not None and np.array_equal(at, w):
            return cached
        m = self.y * np.asarray(self.X @ w).ravel()
        losses = self.loss.value(m)
        parts = (m, losses, self.loss.derivative(m), softmax(self.t * losses))
        self._at = (np.array(w, copy=True), parts)
        return parts

    def grad(self, w):
        _, _, lp, p = self.parts(w)
        return np.asarray(self.X.T @ (self.y * p * lp)).ravel() + self.lam * w

    def value_and_grad(self, w):
        _, losses, _, _ = self.parts(w)
        value = (logsumexp(self.t * losses) - math.log(self.n)) / self.t
        return value + 0.5 * self.lam * (w @ w), self.grad(w)

    def _weights(self, w):
        _, _, lp, p = self.parts(w)
        m = self.parts(w)[0]
        c = p * (self.loss.second_derivative(m) + self.t * lp * lp)
        G = np.asarray(self.X.T @ (self.y * p * lp)).ravel()
        return c, G

    def hessian_at(self, w):
        c, G = self._weights(w)
        H = weighted_gram(self.X, c)
        H -= self.t * np.outer(G, G)
        H[np.diag_indices_from(H)] += self.lam
        return H

    def hessp_at(self, w):
        c, G = self._weights(w)
        X, t, lam = self.X, self.t, self.lam

        def hessp(v):
            return np.asarray(X.T @ (c * np.asarray(X @ v).ravel())).ravel() \
                - t * (G @ v) * G + lam * v

        return hessp

    def line_derivative(self, w, step):
        """``phi'(tau) = grad T(w + tau step).step``, O(n) per call after one pass over X."""
        a = self.y * np.asarray(self.X @ step).ravel()
        m0 = self.parts(w)[0]
        c0, c1 = self.lam * (w @ step), self.lam * (step @ step)
        loss, t = self.loss, self.t

        def dphi(tau):
            m = m0 + tau * a
            p = softmax(t * loss.value(m))
            return (p * loss.derivative(m)) @ a + c0 + tau * c1

        return dphi

    def certificate(self, w):
        """Computed gradient norm and a rigorous bound on its rounding error.

        Returns ``(g, E)`` with ``||grad T(w)|| <= g + E`` for the float ``w``
        (``u = 2^-53``, ``gamma_k = k u / (1 - k u)``; Higham 2002).

        1. Margins: ``|m~_i - m_i| <= delta_i = gamma_k rho_i ||w||``.
        2. ``l'``: ``D_i`` from ``dpsk._optimize._solver._derivative_error``.
        3. Scores ``s_i = t l_i``: ``|l(m~) - l(m)| <= delta_i`` (``|l'| <= 1``),
           the evaluation of ``l`` errs by ``<= 8u l~_i`` (assumed, as for
           ``exp``), the product by ``u t l~_i``: ``|s~_i - s_i| <= e_i = t
           (delta_i + 9.01 u l~_i) + 1e-300``, ``E = max e_i``.
        4. Weights, Lipschitz part. With ``p~ = softmax(s~)`` exact, ``|p_k -
           p~_k| <= p~_k expm1(e_k + E)`` (the ratio ``p_k / p~_k`` is
           ``e^{s_k - s~_k}`` over a ``p~``-average of ``e^{s_j - s~_j}``).
        5. Weights, evaluation. scipy's softmax computes ``tau = s~ - max``
           (error ``<= u |tau_k|``), ``exp`` (``8u`` relative), the sum of
           ``n`` non-negative terms (``gamma_{n-1}``) and the division
           (``u``). The sum's terms carry ``e^{tau_j} expm1(u |tau_j|) <= 1.01
           u |tau_j| e^{-|tau_j|} <= 0.38 u`` absolute each (``S >= 1``), so
           the computed sum is ``S (1 + nu)`` with ``|nu| <= nu_max = gamma_{n-1}
           + (8.01 + 0.38 n) u``, and ``p^_k / p~_k`` lies within ``e^{+-eta_k}``,
           ``eta_k = 1.01 (u |tau_k| + 9.01 u) + 2.01 nu_max``, plus an
           absolute ``1e-300`` for underflow. So ``|p^_k - p_k| <= P_k = p^_k
           e^{eta_k} (expm1(eta_k) + expm1(e_k + E)) + 1e-300``, and ``p_k <=
           p^_k e^{eta_k + e_k + E} + 1e-300``.
        6. ``r_i = p_i l'_i y_i``: ``|r^_i - r_i| <= P_i |l'^_i| + p_i D_i + u
           |r^_i|``; the gradient error is ``sum_i rho_i |r^_i - r_i|`` plus the
           chunked sum's factor times ``sum_i |r^_i| rho_i``.
        7. ``alpha w``, the final addition and the norm: ``_certificate_tail``.
        """
        y, n, t = self.y, self.n, self.t
        d = self.X.shape[1]
        rho = self.row_norms()
        m, losses, lp, p = self.parts(w)
        w_norm = float(np.linalg.norm(w)) * (1.0 + 2.0 * _gamma(d + 2))
        delta = _gamma(max(self.max_row_terms(), 1)) * rho * w_norm
        D = _derivative_error(self.loss, m, delta)
        e = t * (delta + 9.01 * _U * losses) + 1e-300
        E = float(e.max())
        tau = np.abs(t * losses - float((t * losses).max()))
        nu_max = _gamma(max(n - 1, 0)) + (8.01 + 0.38 * n) * _U
        eta = 1.01 * (_U * tau + 9.01 * _U) + 2.01 * nu_max
        P = p * np.exp(eta) * (np.expm1(eta) + np.expm1(e + E)) + 1e-300
        p_upper = p * np.exp(eta + e + E) + 1e-300
        r = y * p * lp
        err_r = P * np.abs(lp) + p_upper * D + _U * np.abs(r)
        v, sum_factor = self._chunked_transpose_product(r)
        err = err_r @ rho + sum_factor * (np.abs(r) @ rho)
        return self._certificate_tail(v, w, _BOUND_SAFETY * err)


def minimize_tilted_logistic(X, y, lam, tilt, tol=1e-10, max_iter=1000):
    """Return a point within ``tol / lam`` of the exact minimiser of the tilted ``T``.

    Total on its domain like ``dpsk._optimize._solver.minimize_regularized_loss`` (same
    guarantee, same two paths). ``tilt`` must be finite and > 0.

    Returns
    -------
    SolverResult
        Only ``.w`` is meant for callers.
    """
    y = np.asarray(y, dtype=float)
    lam, tol, tilt = float(lam), float(tol), float(tilt)
    if sp.issparse(X) and X.format != "csr":
        X = sp.csr_matrix(X)
    if not (math.isfinite(tilt) and tilt > 0):
        raise ValueError("tilt must be a finite number > 0.")
    obj = _TiltedObjective(X, y, lam, tilt)
    _check_domain(obj, X, y, lam, None, tol, None)
    w, path, n_iter = _solve(obj, np.zeros(X.shape[1]), tol, max_iter)
    return SolverResult(w, path, n_iter)
