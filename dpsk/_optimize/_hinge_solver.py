"""A certified solver for the L2-regularised hinge loss (the linear SVM).

    F(w) = (1/n) sum_i max(0, 1 - y_i w.x_i) + (lam/2) ||w||^2,   ||x_i|| <= 1.

``F`` is not differentiable, so the gradient certificate of ``dpsk._optimize._solver``
does not apply. A duality gap does. With ``beta`` in ``[0, 1]^n`` and ``v(beta)
= (1/n) sum_i beta_i y_i x_i``, the dual function is ``D(beta) = (1/n) sum_i
beta_i - ||v(beta)||^2 / (2 lam)`` (the conjugate of ``max(0, 1 - m)`` is ``s``
on ``[-1, 0]``; substitute ``beta = -s``). Weak duality gives ``D(beta) <=
F(w*)`` and strong convexity at the minimiser (``0`` is a subgradient there)
gives ``F(w) - F(w*) >= (lam/2) ||w - w*||^2``. Hence, for every ``w`` and every
feasible ``beta``,

    ||w - w*|| <= sqrt(2 (F(w) - D(beta)) / lam).

The gap in a form that can be bounded in floating point. With margins ``m_i =
y_i x_i.w`` and ``e = lam w - v(beta)``, expanding ``||v||^2 = ||lam w - e||^2``
and ``lam ||w||^2 = w.v + w.e = (1/n) sum beta_i m_i + w.e`` gives exactly

    F(w) - D(beta) = (1/n) sum_i t_i + ||e||^2 / (2 lam),
    t_i = max(0, 1 - m_i) - beta_i (1 - m_i) >= 0.

Each ``t_i`` is ``(1 - beta_i)(1 - m_i)`` for ``m_i < 1`` and ``beta_i (m_i - 1)``
otherwise: non-negative, and 1-Lipschitz in ``m_i``.

Row weights ``s_i`` in [0, 1] (docs/privacy.rst, "Weights"): ``F(w) = (1/n)
sum_i s_i max(0, 1 - m_i) + (lam/2) ||w||^2``. The conjugate of ``s max(0, 1 -
m)`` confines ``beta_i`` to ``[0, s_i]``, and the same expansion gives ``t_i =
s_i max(0, 1 - m_i) - beta_i (1 - m_i)``: ``(s_i - beta_i)(1 - m_i)`` below the
margin, ``beta_i (m_i - 1)`` above, still non-negative and 1-Lipschitz in
``m_i`` (both coefficients lie in ``[0, 1]``). Every step below holds with
``s_i`` in place of 1; without weights ``s_i = 1``. :func:`certified_gap`
bounds its rounding (:func:`certified_gap` docstring). The bound is the
computed gap plus terms of order ``d u ||w||``, so it certifies gaps far below
``1e-10`` at the regularisations dpsk uses.

The solver: liblinear's dual coordinate descent for ``w`` (through
scikit-learn), a dual point fitted to it, their certified gap. If the gap target is not
certified, :func:`minimize_hinge` falls back (see there).
"""

import math
import warnings

import numpy as np
import scipy.sparse as sp
from scipy.optimize import lsq_linear
from sklearn.svm import LinearSVC

from ._binary import minimize_regularized_loss
from ._losses import HuberLoss
from ._solver import (
    _BOUND_SAFETY,
    _U,
    SolverError,
    _CertifiedObjective,
    _gamma,
    check_row_weights,
)

__all__ = ["minimize_hinge", "certified_gap", "HingeResult", "fallback_huber_width"]

#: Widths of the margin band tried when fitting a dual point to liblinear's ``w``.
_BAND_WIDTHS = (1e-9, 1e-7, 1e-5, 1e-3)
#: Huber widths of the second attempt (each warm-started from the last).
_CONTINUATION_WIDTHS = (1e-3, 1e-5, 1e-6, 1e-7)
#: Most rows of a band fitted by dense bounded least squares.
_MAX_BAND_ROWS = 2000


class HingeResult:
    """The solver's point ``w`` (public) and, for tests only, how it was found.

    ``_path`` (``"dual"`` or ``"fallback"``) and ``_gap`` (the certified gap
    of the dual path, ``inf`` on the fallback) depend on the data: never release them.
    """

    def __init__(self, w, path, gap):
        self.w = w
        self._path = path
        self._gap = gap


def _weights_or_ones(sample_weight, n):
    """``s`` as floats, ones when None (the unweighted arithmetic: ``1.0 - b`` is unchanged)."""
    return np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=float)


def _primal_point(X, y, lam, max_iter, sample_weight=None):
    """liblinear's dual coordinate descent (Hsieh et al. 2008) through scikit-learn.

    ``LinearSVC`` minimises ``(1/2) ||w||^2 + C sum_i max(0, 1 - y_i w.x_i)``,
    which is ``F / lam`` at ``C = 1 / (n lam)``. Only a starting point: the
    certificate decides. No intercept: an intercept
    column, if any, is part of ``X`` and regularised like the other weights.
    """
    if np.all(y == y[0]):
        # liblinear needs both labels; a one-label problem (a declared class
        # absent from the data, one-vs-rest) starts from a smoothed solve.
        return minimize_regularized_loss(HuberLoss(1e-4), X, y, lam, tol=1e-10,
                                         sample_weight=sample_weight).w
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        svc = LinearSVC(loss="hinge", dual=True, fit_intercept=False, C=1.0 / (X.shape[0] * lam),
                        tol=1e-10, max_iter=max_iter, random_state=0)
        # liblinear weights each row's C, C s_i: the weighted objective over lam.
        svc.fit(X, y, **({} if sample_weight is None else {"sample_weight": sample_weight}))
    return np.asarray(svc.coef_, dtype=float).ravel().copy()


def _dual_from_primal(X, y, lam, w, band_width, sample_weight=None):
    """A dual point for ``w``: ``beta_i`` = 1 below the margin band, 0 above, fitted inside.

    Rows with ``|m_i - 1| <= band_width`` get the ``beta`` in ``[0, 1]`` that
    makes ``v(beta)`` closest to ``lam w`` (bounded least squares); the others
    take the value that makes their ``t_i`` zero. ``None`` if the band holds
    too many rows for a dense fit.
    """
    n, d = X.shape
    s = _weights_or_ones(sample_weight, n)
    m = y * np.asarray(X @ w).ravel()
    beta = s * (m < 1.0)
    band = np.flatnonzero(np.abs(m - 1.0) <= band_width)
    if band.size > _MAX_BAND_ROWS:
        return None
    beta[band] = 0.0
    if band.size:
        rest = lam * w - np.asarray(X.T @ (beta * y)).ravel() / n
        rows = X[band]
        A = np.asarray((rows.toarray() if sp.issparse(rows) else rows) * y[band, None]).T / n
        method = "bvls" if band.size <= 4 * d else "trf"
        upper = s[band] if sample_weight is not None else 1.0
        lower = 0.0
        if sample_weight is not None:
            # lsq_linear wants lower < upper: rows of weight 0 are fixed at 0 below.
            upper = np.maximum(upper, 1e-300)
        beta[band] = np.clip(lsq_linear(A, rest, bounds=(lower, upper), method=method,
                                        tol=1e-15, max_iter=1000).x, 0.0, s[band])
    return beta


def _polish(X, y, lam, w, band_width, sample_weight=None):
    """Solve the optimality conditions on the margin band exactly (a small linear system).

    With ``beta`` fixed at 1 below the band and 0 above, the optimality
    conditions ``lam w = v(beta)`` and ``m_i = 1`` on the band ``S`` are linear
    in ``beta_S``: ``w = (c + B beta_S / n) / lam`` with ``c`` the fixed rows'
    part and ``B``'s columns ``y_i x_i``, and ``B^T w = 1`` becomes ``(B^T B /
    n) beta_S = lam 1 - B^T c``. liblinear leaves band margins about ``1e-11``
    off, which the gap counts; this removes that. The result is only a
    candidate: :func:`certified_gap` decides. Returns ``(w, beta)`` or ``None``.
    """
    n = X.shape[0]
    s = _weights_or_ones(sample_weight, n)
    m = y * np.asarray(X @ w).ravel()
    beta = s * (m < 1.0)
    band = np.flatnonzero(np.abs(m - 1.0) <= band_width)
    if band.size == 0 or band.size > _MAX_BAND_ROWS:
        return None
    beta[band] = 0.0
    c = np.asarray(X.T @ (beta * y)).ravel() / n
    rows = X[band]
    B = np.asarray((rows.toarray() if sp.issparse(rows) else rows) * y[band, None]).T
    beta_s = np.linalg.lstsq(B.T @ B / n, lam - B.T @ c, rcond=None)[0]
    beta[band] = np.clip(beta_s, 0.0, s[band])
    w_new = np.asarray(X.T @ (beta * y)).ravel() / n / lam
    return w_new, beta


def certified_gap(X, y, lam, w, beta, sample_weight=None):
    """A rigorous upper bound on ``F(w) - D(beta)`` in floating point.

    Derivation (``u = 2^-53``, ``gamma_k = k u / (1 - k u)``, Higham 2002;
    ``rho_i >= ||x_i||`` the rounded-up row norms, ``k`` the terms of a row's dot product):

    1. Margins. ``|fl(x_i.w) - x_i.w| <= gamma_k rho_i ||w||``; ``t_i`` is
       1-Lipschitz in ``m_i``, so using the computed margins costs at most
       ``(gamma_k ||w|| / n) sum_i rho_i`` in the mean.
    2. Each ``t_i`` at the computed margin takes three roundings (``1 -
       beta_i``, ``1 - m_i`` or ``m_i - 1``, the product) of relative error
       ``u`` each: relative ``gamma_3``, and ``t_i >= 0``.
    3. The sum is ``math.fsum`` (correctly rounded, relative ``u``), the
       division by ``n`` another ``u``.
    4. ``e = lam w - v(beta)`` with ``v`` exact. ``v~``, the chunked sum
       divided by ``n``, errs entrywise by the chunk factor times
       ``(|X|^T beta)_j / n`` (``_CertifiedObjective._chunked_transpose_product``)
       plus ``u |v~_j|``; so ``||e|| <= ||fl(lam w - v~)|| (1 + gamma_{d+3}) +
       factor sum_i beta_i rho_i / n + u ||v~||`` (the norm of a vector of
       non-negative column sums is at most the sum of the rows' norms).
       ``||e||^2 / (2 lam)`` is then rounded up.

    With weights ``beta`` is clipped to ``[0, s_i]`` and ``1 - beta_i`` becomes
    ``s_i - beta_i`` (one rounding, as before).

    The bound's own arithmetic is on non-negative terms; ``_BOUND_SAFETY``
    covers it. Returns ``inf`` if anything is not finite.
    """
    n, d = X.shape
    w = np.asarray(w, dtype=float)
    s = _weights_or_ones(sample_weight, n)
    beta = np.clip(np.asarray(beta, dtype=float), 0.0, s)
    obj = _CertifiedObjective(X, lam, None)
    rho = obj.row_norms()
    m = y * np.asarray(X @ w).ravel()
    below = m < 1.0
    t = np.where(below, (s - beta) * (1.0 - m), beta * (m - 1.0))
    if not (np.all(np.isfinite(t)) and np.all(np.isfinite(w))):
        return math.inf
    w_norm = float(np.linalg.norm(w)) * (1.0 + 2.0 * _gamma(d + 2))
    k = max(obj.max_row_terms(), 1)
    mean_t = math.fsum(t) * (1.0 + _gamma(3)) * (1.0 + _gamma(2)) / n
    margin_err = _gamma(k) * w_norm * math.fsum(rho) * (1.0 + _gamma(2)) / n
    v, factor = obj._chunked_transpose_product(beta * y)
    v = v / n
    e_norm = (float(np.linalg.norm(lam * w - v)) * (1.0 + _gamma(d + 3))
              + factor * math.fsum(beta * rho) * (1.0 + _gamma(2)) / n
              + _U * float(np.linalg.norm(v)) * (1.0 + _gamma(d + 2)))
    gap = _BOUND_SAFETY * (mean_t + margin_err + e_norm * e_norm / (2.0 * lam))
    return gap if math.isfinite(gap) else math.inf


def fallback_huber_width(gap):
    """The Huber width ``h = 2 g`` of the fallback for a gap target ``g``.

    dpsk's Huber loss ``l_h`` (``dpsk._optimize._losses.HuberLoss``) satisfies ``0 <=
    l_h - hinge <= h / 4`` (the largest difference is at the margin 1). For
    the exact minimisers ``w_h`` and ``w*`` of the Huber and hinge objectives,
    strong convexity at each gives ``(F_h - F)(w*) - (F_h - F)(w_h) >= lam
    ||w_h - w*||^2``, and the left side is at most ``h / 4``: ``||w_h - w*|| <=
    sqrt(h / (4 lam)) = sqrt(g / (2 lam))``, half of ``sqrt(2 g / lam)``.
    """
    return 2.0 * float(gap)


def minimize_hinge(X, y, lam, gap=1e-10, max_iter=50000, sample_weight=None):
    """Return a point within ``sqrt(2 gap / lam)`` of the exact hinge minimiser.

    Two paths; which one ran depends on the data and stays private:

    * dual: liblinear's dual coordinate descent gives ``w``; a dual point is
      fitted to it (:func:`_dual_from_primal`, a few band widths), or both
      are refined on the band (:func:`_polish`); else Huber continuation
      (widths ``1e-3`` to ``1e-7``, the Huber minimiser with its own dual point
      ``beta_i = -l_h'(m_i)``); a pair is accepted iff :func:`certified_gap`
      ``<= gap`` (then the distance bound is the module's inequality, in
      floating point).
    * fallback: the Huber-smoothed objective with ``h = 2 gap``
      (:func:`fallback_huber_width`: its minimiser is within ``sqrt(2 gap /
      lam) / 2``) solved by ``dpsk._optimize._binary.minimize_regularized_loss`` to
      ``tol = lam sqrt(2 gap / lam) / 2`` (the other half). That solver is
      total; its guarantee holds in floating point when its certificate
      passes and in exact arithmetic on its Nesterov path (its module
      docstring), and with the curvature ``1 / (2h)`` of so small an ``h``
      its certificate rarely passes: the dual path is the one meant to run.
      The fallback's point is checked against the duality gap too (with
      ``beta_i = -l_h'(m_i)``, the smoothed problem's dual point), and kept
      only as the last resort.

    Parameters
    ----------
    X : ndarray or CSR matrix of shape (n, d), rows of norm <= 1
    y : ndarray of shape (n,), labels in {-1, +1}
    lam : float
        ``> 0``.
    gap : float
        The duality gap to certify, ``> 0``. Public: fixed before the data.
    max_iter : int
        liblinear's iteration cap.
    sample_weight : ndarray of shape (n,) or None
        Row weights in [0, 1] (module docstring); None is unweighted, as before.

    Returns
    -------
    HingeResult
        Only ``.w`` is meant for callers.
    """
    y = np.asarray(y, dtype=float)
    lam, gap = float(lam), float(gap)
    if sp.issparse(X) and X.format != "csr":
        X = sp.csr_matrix(X)
    if not (math.isfinite(lam) and lam > 0 and math.isfinite(gap) and gap > 0):
        raise SolverError("lam and gap must be finite numbers > 0.")
    if X.shape[0] != y.shape[0] or not np.all(np.isin(y, (-1.0, 1.0))):
        raise SolverError("y must hold one label in {-1, +1} per row.")
    data = X.data if sp.issparse(X) else X
    if not np.all(np.isfinite(data)):
        raise SolverError("X must be finite.")
    sw = check_row_weights(sample_weight, X.shape[0])
    w = _primal_point(X, y, lam, max_iter, sw)
    for width in _BAND_WIDTHS:
        beta = _dual_from_primal(X, y, lam, w, width, sw)
        certified = math.inf if beta is None else certified_gap(X, y, lam, w, beta, sw)
        if certified <= gap:
            return HingeResult(w, "dual", certified)
        polished = _polish(X, y, lam, w, width, sw)
        if polished is not None:
            certified = certified_gap(X, y, lam, *polished, sample_weight=sw)
            if certified <= gap:
                return HingeResult(polished[0], "dual", certified)
    # Second attempt: Huber continuation. The Huber minimiser's own dual point
    # (beta = -l_h'(m)) has a gap of order h, and Newton handles moderate h well.
    w_h = w
    for h in _CONTINUATION_WIDTHS:
        loss = HuberLoss(h)
        w_h = minimize_regularized_loss(loss, X, y, lam, tol=1e-10, w0=w_h, sample_weight=sw).w
        beta_h = -_weights_or_ones(sw, len(y)) * loss.derivative(y * np.asarray(X @ w_h).ravel())
        certified = certified_gap(X, y, lam, w_h, beta_h, sw)
        if certified <= gap:
            return HingeResult(w_h, "dual", certified)
    loss = HuberLoss(fallback_huber_width(gap))
    w_h = minimize_regularized_loss(loss, X, y, lam,
                                    tol=0.5 * lam * math.sqrt(2.0 * gap / lam),
                                    sample_weight=sw).w
    beta_h = -_weights_or_ones(sw, len(y)) * loss.derivative(y * np.asarray(X @ w_h).ravel())
    if certified_gap(X, y, lam, w_h, beta_h, sw) <= gap:
        return HingeResult(w_h, "dual", gap)
    return HingeResult(w_h, "fallback", math.inf)
