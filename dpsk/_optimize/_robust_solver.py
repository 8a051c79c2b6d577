"""A certified solver for adversarially robust L2-regularised logistic regression.

    F(w) = (1/n) sum_i l(y_i w.x_i - r N(w)) + (lam/2) ||w||^2,
    N(w) = sqrt(||P w||^2 + s^2),

with ``l`` the logistic loss, ``P`` the projection on the first ``n_perturbed``
coordinates (the features; an intercept coordinate is not perturbed), ``r >= 0``
the perturbation radius in the units of the rows and ``s > 0`` a fixed
smoothing. For ``s -> 0`` the margin ``y w.x - r ||P w||`` is the worst case of
``y w.(x + e)`` over ``||e|| <= r`` with ``e`` in the feature coordinates
(Cauchy-Schwarz, attained at ``e = -r y P w / ||P w||``).

Why the smoothed norm: ``||P w||`` is not differentiable at ``P w = 0``;
``N`` is smooth, and the privacy analysis (``dpsk.mechanisms._beyond_erm``) is about the
exact minimiser of *this* ``F``, so the smoothing needs no accounting of its
own. It changes every margin by at most ``r s`` (``0 <= N(w) - ||P w|| <= s``).

Facts used (``u_w = P w / N(w)``, ``||u_w|| < 1``):

* Convexity. ``N`` is convex (the Euclidean norm of ``(P w, s)``), so the margin
  is concave; ``l`` is convex and non-increasing, so each term is convex and
  ``F`` is ``lam``-strongly convex.
* Gradient. ``grad F = (1/n) sum_i l'(m_i) (y_i x_i - r u_w) + lam w``; one
  row's gradient has norm ``<= |l'| (||x_i|| + r) <= ||x_i|| + r``.
* Hessian of the loss part: ``(1/n) sum_i [l''(m_i) g_i g_i^T + |l'(m_i)| r
  H_N]`` with ``g_i = y_i x_i - r u_w`` and ``H_N = (P - u_w u_w^T) / N``,
  ``0 <= H_N <= I / s``. So the gradient is Lipschitz with constant ``(1/4)
  (max ||x_i|| + r)^2 + r / s`` (:meth:`_RobustObjective.smoothness`).

The machinery (L-BFGS-B, Newton, exact line search, certified stop and the
Nesterov fallback with a proven iteration count) is ``dpsk._optimize._solver``'s; only the
objective and its rounding certificate live here.
"""

import math

import numpy as np
import scipy.sparse as sp

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
    check_row_weights,
    weighted_gram,
)

__all__ = ["minimize_robust_logistic", "robust_curvature", "ROBUST_SMOOTHING",
           "minimize_robust_logistic_linf", "robust_linf_curvature"]

#: The smoothing ``s`` of ``N(w) = sqrt(||P w||^2 + s^2)``, in the units of the
#: weights on rows of norm <= 1. Public and fixed: it moves a margin by at most
#: ``r s``, far below the noise of any private release.
ROBUST_SMOOTHING = 1e-2


def robust_curvature(radius, smoothing=ROBUST_SMOOTHING, row_bound=1.0):
    """Lipschitz constant of one row's loss gradient: ``(row_bound + r)^2 / 4 + r / s``."""
    return 0.25 * (row_bound + radius) ** 2 + radius / smoothing


class _RobustObjective(_CertifiedObjective):
    """Value, gradient, Hessian and certificate of the robust logistic ``F``."""

    def __init__(self, X, y, lam, radius, n_perturbed, smoothing=ROBUST_SMOOTHING,
                 sample_weight=None):
        super().__init__(X, lam, None)
        self.y, self.r, self.s = y, float(radius), float(smoothing)
        self.k = int(n_perturbed)
        self.loss = LogisticLoss()
        # Row weights in [0, 1] (docs/privacy.rst, "Weights"); None: unweighted, as before.
        self.sample_weight = sample_weight
        self._margins_at = (None, None)

    def _lp(self, z):
        """``s_i l'(z_i)``: the (weighted) loss derivatives at the margins ``z``."""
        lp = self.loss.derivative(z)
        return lp if self.sample_weight is None else self.sample_weight * lp

    def _lpp(self, z):
        """``s_i l''(z_i)``: the (weighted) second derivatives."""
        lpp = self.loss.second_derivative(z)
        return lpp if self.sample_weight is None else self.sample_weight * lpp

    @property
    def curvature(self):
        return robust_curvature(self.r, self.s)

    def smoothness(self):
        """``L >= (max ||x_i|| + r)^2 / 4 + r / s + lam`` (module docstring)."""
        rho = float(self.row_norms().max(initial=0.0))
        return (robust_curvature(self.r, self.s, rho) + self.lam) * (1.0 + 8 * _U)

    def _norm(self, w):
        pw = w[:self.k]
        return math.sqrt(float(pw @ pw) + self.s * self.s), pw

    def margins(self, w):
        at, cached = self._margins_at
        if at is not None and np.array_equal(at, w):
            return cached
        N, _ = self._norm(w)
        z = self.y * np.asarray(self.X @ w).ravel() - self.r * N
        self._margins_at = (np.array(w, copy=True), (z, N))
        return z, N

    def _direction(self, w, N):
        """``r u_w`` as a full-length vector (zero on the unperturbed coordinates)."""
        v = np.zeros_like(w)
        v[:self.k] = self.r * w[:self.k] / N
        return v

    def grad(self, w):
        z, N = self.margins(w)
        lp = self._lp(z)
        g = np.asarray(self.X.T @ (self.y * lp)).ravel() / self.n
        return g - lp.mean() * self._direction(w, N) + self.lam * w

    def value_and_grad(self, w):
        z, _ = self.margins(w)
        loss = self.loss.value(z)
        if self.sample_weight is not None:  # still the mean over all n rows
            loss = self.sample_weight * loss
        value = loss.mean() + 0.5 * self.lam * (w @ w)
        return value, self.grad(w)

    def _hessian_parts(self, w):
        z, N = self.margins(w)
        c = self._lpp(z) / self.n
        ru = self._direction(w, N)
        t = float(-self._lp(z).mean()) * self.r / N
        return c, ru, t

    def hessian_at(self, w):
        """Dense Hessian: ``X^T C X - b ru^T - ru b^T + (sum c) ru ru^T + t (P - u u^T)``.

        ``b = X^T (c y)``; since ``y_i^2 = 1``, ``sum_i c_i g_i g_i^T`` expands
        into those four terms; ``t = r mean|l'| / N``.
        """
        c, ru, t = self._hessian_parts(w)
        H = weighted_gram(self.X, c)
        b = np.asarray(self.X.T @ (c * self.y)).ravel()
        H -= np.outer(b, ru) + np.outer(ru, b)
        H += c.sum() * np.outer(ru, ru)
        u = ru / self.r if self.r > 0 else ru
        idx = np.arange(self.k)
        H[idx, idx] += t
        H -= t * np.outer(u, u)
        H[np.diag_indices_from(H)] += self.lam
        return H

    def hessp_at(self, w):
        c, ru, t = self._hessian_parts(w)
        u = ru / self.r if self.r > 0 else ru
        X, y, k, lam = self.X, self.y, self.k, self.lam

        def hessp(v):
            a = y * np.asarray(X @ v).ravel() - ru @ v
            out = np.asarray(X.T @ (y * c * a)).ravel() - (c @ a) * ru
            pv = np.zeros_like(v)
            pv[:k] = v[:k]
            return out + t * (pv - (u @ v) * u) + lam * v

        return hessp

    def line_derivative(self, w, step):
        """``phi'(t) = grad F(w + t step).step`` in O(n + d) per call after one pass."""
        a = self.y * np.asarray(self.X @ step).ravel()
        b = self.y * np.asarray(self.X @ w).ravel()
        pw, ps = w[:self.k], step[:self.k]
        ww, ws, ss = float(pw @ pw), float(pw @ ps), float(ps @ ps)
        c0, c1 = self.lam * (w @ step), self.lam * (step @ step)
        r, s2, n, derivative = self.r, self.s * self.s, self.n, self._lp

        def dphi(t):
            N = math.sqrt(ww + 2 * t * ws + t * t * ss + s2)
            dN = (ws + t * ss) / N
            lp = derivative(b + t * a - r * N)
            return (lp @ a) / n - r * dN * lp.mean() + c0 + t * c1

        return dphi

    def certificate(self, w):
        """Computed gradient norm and a rigorous bound on its rounding error.

        Returns ``(g, E)`` with ``||grad F(w)|| <= g + E`` for the float ``w``.

        Derivation (``u = 2^-53``, ``gamma_k = k u / (1 - k u)``, Higham 2002):

        1. ``N``. ``fl(P w . P w)`` errs by ``gamma_k ||P w||^2``; adding ``s^2``
           (itself rounded, ``u s^2``) and the square root add ``2u``
           relative. So ``|N~ - N| <= gamma_{k+4} N =: e_N``.
        2. Margins. ``|fl(x_i.w) - x_i.w| <= gamma_m rho_i ||w||`` (``m`` terms),
           ``fl(r N~)`` errs by ``u r N~`` and the subtraction by ``u |z~_i|``:
           ``delta_i = gamma_m rho_i ||w|| + r (e_N + u N~) + u |z~_i|``, with
           ``e_N`` taken at its bound ``gamma_{k+4} N~ / (1 - gamma_{k+4})``.
        3. Derivatives ``l'``: ``D_i`` from ``dpsk._optimize._solver._derivative_error``
           (Lipschitz part over ``delta_i`` and evaluation error).
        4. ``X^T (y l')``: the chunked sum's factor times ``sum |l'_i| rho_i``
           plus ``sum D_i rho_i``, all over ``n``.
        5. The direction term ``mean(l') r P w / N``. With ``mu = mean l'``
           (exact, at exact margins) and ``mu~`` computed, ``|mu~ - mu| <=
           (sum D_i + gamma_n sum |l'_i|) / n =: e_mu``; ``||r P w / N|| <= r``
           and its computed value errs by ``r (e_N / N + gamma_{k+4})`` in norm
           (relative error of ``P w / N``, at most ``gamma_3`` per entry plus
           that of ``N``). The product's error is ``<= r e_mu + |mu~| r
           (2 e_N / N + gamma_{k+6})``, and the subtraction from the data part
           adds ``gamma_1 ||a||``.
        6. ``lam w``, the final addition and the norm: ``_certificate_tail``.

        Row weights ``s_i`` in [0, 1]: ``l'_i`` stands for the computed
        ``fl(s_i fl(l'(z~_i)))`` throughout, and ``D_i`` for ``s_i D_i + 2 u
        |l'_i|`` (the weight scales the derivative's error, the product rounds
        once); steps 4 and 5 are then unchanged.
        """
        y, n, r = self.y, self.n, self.r
        d = self.X.shape[1]
        rho = self.row_norms()
        z, N = self.margins(w)
        w_norm = float(np.linalg.norm(w)) * (1.0 + 2.0 * _gamma(d + 2))
        g_k = _gamma(self.k + 4)
        e_N_rel = g_k / (1.0 - g_k)
        delta = (_gamma(max(self.max_row_terms(), 1)) * rho * w_norm
                 + r * N * (e_N_rel + _U) + _U * np.abs(z))
        lp = self._lp(z)
        D = _derivative_error(self.loss, z, delta)
        if self.sample_weight is not None:
            D = self.sample_weight * D + 2.0 * _U * np.abs(lp)
        v, sum_factor = self._chunked_transpose_product(y * lp)
        err = (D @ rho) / n + sum_factor * (np.abs(lp) @ rho) / n
        mu = lp.mean()
        e_mu = (D.sum() + _gamma(n) * np.abs(lp).sum()) / n
        direction, direction_err = self._certified_direction(w, N, mu, e_mu, e_N_rel)
        err += direction_err
        a = v / n - direction
        err += _gamma(1) * float(np.linalg.norm(v / n)) + _gamma(1) * float(np.linalg.norm(a))
        return self._certificate_tail(a, w, _BOUND_SAFETY * err)

    def _certified_direction(self, w, N, mu, e_mu, e_N_rel):
        """``(mean(l') r P w / N, bound on its computed error)``: step 5 above."""
        r = self.r
        return (mu * self._direction(w, N),
                r * e_mu + abs(mu) * r * (2.0 * e_N_rel + _gamma(self.k + 6)))


def minimize_robust_logistic(X, y, lam, radius, n_perturbed=None, tol=1e-10, max_iter=1000,
                             smoothing=ROBUST_SMOOTHING, sample_weight=None):
    """Return a point within ``tol / lam`` of the exact minimiser of the robust ``F``.

    Total on its domain like ``dpsk._optimize._solver.minimize_regularized_loss`` (same
    guarantee, same two paths). ``n_perturbed`` (default: every coordinate) is
    the number of leading coordinates the perturbation acts on. ``sample_weight``
    (None, or one weight in [0, 1] per row) weights each row's loss; the mean
    stays over all ``n`` rows (docs/privacy.rst, "Weights").

    Returns
    -------
    SolverResult
        Only ``.w`` is meant for callers.
    """
    return _solve_robust(_RobustObjective, X, y, lam, radius, n_perturbed, tol, max_iter,
                         smoothing, sample_weight)


def _solve_robust(objective, X, y, lam, radius, n_perturbed, tol, max_iter, smoothing,
                  sample_weight):
    """Check the inputs, build ``objective`` and solve it from zero (both robust margins)."""
    y = np.asarray(y, dtype=float)
    lam, tol = float(lam), float(tol)
    if sp.issparse(X) and X.format != "csr":
        X = sp.csr_matrix(X)
    k = X.shape[1] if n_perturbed is None else int(n_perturbed)
    radius = float(radius)
    if not (math.isfinite(radius) and radius >= 0 and 0 <= k <= X.shape[1]):
        raise ValueError("radius must be a finite number >= 0 and n_perturbed in [0, d].")
    obj = objective(X, y, lam, radius, k, smoothing,
                    check_row_weights(sample_weight, X.shape[0]))
    _check_domain(obj, X, y, lam, None, tol, None)
    w, path, n_iter = _solve(obj, np.zeros(X.shape[1]), tol, max_iter)
    return SolverResult(w, path, n_iter)


def robust_linf_curvature(radius, n_perturbed, smoothing=ROBUST_SMOOTHING, row_bound=1.0):
    """Lipschitz constant of one row's loss gradient for the L-infinity margin.

    ``(row_bound + r sqrt(k))^2 / 4 + r k / s``: the row's gradient direction
    ``g = y x - r u`` has ``||u|| < sqrt(k)``, and the Hessian of ``N_1`` is
    diagonal with entries ``s_1^2 / (w_j^2 + s_1^2)^(3/2) <= 1 / s_1 = k / s``
    (:class:`_RobustLinfObjective`).
    """
    k = max(int(n_perturbed), 1)
    return 0.25 * (row_bound + radius * math.sqrt(k)) ** 2 + radius * k / smoothing


class _RobustLinfObjective(_RobustObjective):
    """The robust logistic ``F`` against L-infinity perturbations.

    ``min_{||e||_inf <= r} y w.(x + e) = y w.x - r ||P w||_1`` (Hoelder, attained
    at ``e = -r y sign(P w)``). ``||P w||_1`` is smoothed coordinatewise as
    ``N_1(w) = sum_{j < k} sqrt(w_j^2 + s_1^2)`` with ``s_1 = s / k``, so that
    ``0 <= N_1 - ||P w||_1 <= s`` (a margin moves by at most ``r s``, as in the
    L2 case). ``N_1`` is convex, so every fact of :class:`_RobustObjective`
    holds with ``u = grad N_1``, ``u_j = w_j / sqrt(w_j^2 + s_1^2)``: now
    ``||u|| < sqrt(k)`` (not 1) and ``H_N = diag(s_1^2 / (w_j^2 +
    s_1^2)^(3/2))``, ``0 <= H_N <= (k / s) I``.
    """

    def __init__(self, X, y, lam, radius, n_perturbed, smoothing=ROBUST_SMOOTHING,
                 sample_weight=None):
        super().__init__(X, y, lam, radius, n_perturbed, smoothing, sample_weight)
        self.s1 = self.s / max(self.k, 1)

    @property
    def curvature(self):
        return robust_linf_curvature(self.r, self.k, self.s)

    def smoothness(self):
        rho = float(self.row_norms().max(initial=0.0))
        return (robust_linf_curvature(self.r, self.k, self.s, rho) + self.lam) * (1.0 + 8 * _U)

    def _norm(self, w):
        pw = w[:self.k]
        return float(np.sqrt(pw * pw + self.s1 * self.s1).sum()), pw

    def _unit(self, w):
        """``u = grad N_1`` as a full-length vector (zero on the unperturbed coordinates)."""
        u = np.zeros_like(w)
        pw = w[:self.k]
        u[:self.k] = pw / np.sqrt(pw * pw + self.s1 * self.s1)
        return u

    def _direction(self, w, N):
        return self.r * self._unit(w)

    def _curvature_diagonal(self, w):
        pw = w[:self.k]
        return self.s1 * self.s1 / (pw * pw + self.s1 * self.s1) ** 1.5

    def _hessian_parts(self, w):
        z, N = self.margins(w)
        c = self._lpp(z) / self.n
        ru = self._direction(w, N)
        t = float(-self._lp(z).mean()) * self.r
        return c, ru, t

    def hessian_at(self, w):
        """``X^T C X - b ru^T - ru b^T + (sum c) ru ru^T + t diag(H_N) + lam I``.

        ``t = r mean|l'|``; the other terms as in the L2 objective.
        """
        c, ru, t = self._hessian_parts(w)
        H = weighted_gram(self.X, c)
        b = np.asarray(self.X.T @ (c * self.y)).ravel()
        H -= np.outer(b, ru) + np.outer(ru, b)
        H += c.sum() * np.outer(ru, ru)
        idx = np.arange(self.k)
        H[idx, idx] += t * self._curvature_diagonal(w)
        H[np.diag_indices_from(H)] += self.lam
        return H

    def hessp_at(self, w):
        c, ru, t = self._hessian_parts(w)
        h = t * self._curvature_diagonal(w)
        X, y, k, lam = self.X, self.y, self.k, self.lam

        def hessp(v):
            a = y * np.asarray(X @ v).ravel() - ru @ v
            out = np.asarray(X.T @ (y * c * a)).ravel() - (c @ a) * ru
            out[:k] += h * v[:k]
            return out + lam * v

        return hessp

    def line_derivative(self, w, step):
        """``phi'(t)``; ``N_1`` along the line costs O(k) per call."""
        a = self.y * np.asarray(self.X @ step).ravel()
        b = self.y * np.asarray(self.X @ w).ravel()
        pw, ps = w[:self.k], step[:self.k]
        c0, c1 = self.lam * (w @ step), self.lam * (step @ step)
        r, s2, n, derivative = self.r, self.s1 * self.s1, self.n, self._lp

        def dphi(t):
            q = pw + t * ps
            root = np.sqrt(q * q + s2)
            N, dN = float(root.sum()), float((q * ps / root).sum())
            lp = derivative(b + t * a - r * N)
            return (lp @ a) / n - r * dN * lp.mean() + c0 + t * c1

        return dphi

    def certificate(self, w):
        """As :meth:`_RobustObjective.certificate`, with the L1 smoothing's rounding.

        Differences from the L2 derivation:

        1. ``N_1``: each term ``sqrt(w_j^2 + s_1^2)`` takes four roundings
           (square, ``s_1^2``, sum, root: relative ``gamma_4``) and the sum of
           ``k`` positive terms ``gamma_{k-1}``: ``|N~ - N| <= gamma_{k+4} N /
           (1 - gamma_{k+4})``, the same bound as the L2 case.
        5. The direction ``r u``: ``||u|| < sqrt(k)`` and each computed
           ``u_j`` (a square, an addition, a root, a division) errs by at most
           ``gamma_5 |u_j|``. So ``||mu~ r u~ - mu r u|| <= r sqrt(k) e_mu +
           |mu~| r ||u~|| gamma_6``.
        """
        return super().certificate(w)

    def _certified_direction(self, w, N, mu, e_mu, e_N_rel):
        """``(mean(l') r u, bound on its computed error)``: step 5 above."""
        r = self.r
        u = self._unit(w)
        u_norm = float(np.linalg.norm(u)) * (1.0 + 2.0 * _gamma(self.X.shape[1] + 2))
        return (mu * r * u,
                r * math.sqrt(max(self.k, 1)) * e_mu + abs(mu) * r * u_norm * _gamma(6))


def minimize_robust_logistic_linf(X, y, lam, radius, n_perturbed=None, tol=1e-10, max_iter=1000,
                                  smoothing=ROBUST_SMOOTHING, sample_weight=None):
    """Return a point within ``tol / lam`` of the exact minimiser of the L-infinity robust ``F``.

    Same guarantee, paths and ``sample_weight`` as :func:`minimize_robust_logistic`,
    for the objective of :class:`_RobustLinfObjective`.
    """
    return _solve_robust(_RobustLinfObjective, X, y, lam, radius, n_perturbed, tol, max_iter,
                         smoothing, sample_weight)
