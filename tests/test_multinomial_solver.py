"""The multinomial solver is total and returns W within ``tol / lam`` of the exact minimiser.

The checks do not trust float64: ``mpmath`` at 50 digits, on the float inputs
taken exactly, evaluates the exact gradient at the returned point (strong
convexity: ``||grad F(W)|| <= tol`` implies ``||W - W*|| <= tol / lam``) and, on
tiny problems, finds ``W*`` itself by Newton's method.
"""

import math
import re

import mpmath
import numpy as np
import pytest
import scipy.sparse as sp

from dpsk import SolverError
from dpsk._optimize import _solver
from dpsk._optimize._binary import minimize_regularized_loss
from dpsk._optimize._losses import LogisticLoss
from dpsk._optimize._multinomial_solver import (
    _MultinomialObjective,
    minimize_multinomial_loss,
    multinomial_tolerance_floor,
)
from dpsk._optimize._solver import _accelerated_gradient

_DPS = 50


def _problem(n=300, d=5, K=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = np.argmax(X @ rng.standard_normal((d, K)) + 0.5 * rng.standard_normal((n, K)), axis=1)
    return X, y


# --- high-precision reference -------------------------------------------------------


def _mp_rows(X):
    X = X.toarray() if sp.issparse(X) else np.asarray(X)
    return [[mpmath.mpf(float(v)) for v in row] for row in X]


def _mp_probabilities(row, W):
    z = [mpmath.fsum(a * b for a, b in zip(row, wk)) for wk in W]
    m = max(z)
    e = [mpmath.exp(zk - m) for zk in z]
    s = mpmath.fsum(e)
    return [ek / s for ek in e]


def _exact_gradient(X, y, K, lam, linear, W):
    """Gradient of F at the float matrix ``W`` to ~50 digits, as K lists of mpf."""
    with mpmath.workdps(_DPS):
        rows, n = _mp_rows(X), len(y)
        Wm = [[mpmath.mpf(float(v)) for v in wk] for wk in np.asarray(W)]
        d = len(Wm[0])
        G = [[mpmath.mpf(0)] * d for _ in range(K)]
        for row, yi in zip(rows, y):
            p = _mp_probabilities(row, Wm)
            for k in range(K):
                r = p[k] - (1 if k == yi else 0)
                G[k] = [g + r * x for g, x in zip(G[k], row)]
        lin = np.zeros((K, d)) if linear is None else np.asarray(linear)
        lam = mpmath.mpf(float(lam))
        return [[g / n + lam * w + mpmath.mpf(float(c)) for g, w, c in zip(G[k], Wm[k], lin[k])]
                for k in range(K)]


def _mp_norm(M):
    with mpmath.workdps(_DPS):
        return mpmath.sqrt(mpmath.fsum(v * v for row in M for v in row))


def _exact_minimiser(X, y, K, lam, linear, W):
    """Newton's method at 50 digits from ``W``: the exact minimiser, K lists of mpf."""
    with mpmath.workdps(_DPS):
        rows, n = _mp_rows(X), len(y)
        d = len(rows[0])
        Wm = [[mpmath.mpf(float(v)) for v in wk] for wk in np.asarray(W)]
        lam_m = mpmath.mpf(float(lam))
        for _ in range(40):
            G = [[mpmath.mpf(0)] * d for _ in range(K)]
            H = mpmath.zeros(K * d, K * d)
            for row, yi in zip(rows, y):
                p = _mp_probabilities(row, Wm)
                for k in range(K):
                    r = p[k] - (1 if k == yi else 0)
                    G[k] = [g + r * x for g, x in zip(G[k], row)]
                    for m in range(K):
                        a = (p[k] if k == m else 0) - p[k] * p[m]
                        for i in range(d):
                            for j in range(d):
                                H[k * d + i, m * d + j] += a * row[i] * row[j] / n
            lin = np.zeros((K, d)) if linear is None else np.asarray(linear)
            g = mpmath.matrix([G[k][j] / n + lam_m * Wm[k][j] + mpmath.mpf(float(lin[k][j]))
                               for k in range(K) for j in range(d)])
            for i in range(K * d):
                H[i, i] += lam_m
            step = mpmath.lu_solve(H, -g)
            Wm = [[Wm[k][j] + step[k * d + j] for j in range(d)] for k in range(K)]
            if mpmath.norm(step) < mpmath.mpf(10) ** -40 * (1 + _mp_norm(Wm)):
                return Wm
        raise AssertionError("the reference did not converge")


def _mp_distance(W, Wm):
    with mpmath.workdps(_DPS):
        return _mp_norm([[mpmath.mpf(float(a)) - b for a, b in zip(wk, mk)]
                         for wk, mk in zip(np.asarray(W), Wm)])


def _assert_certified_exactly(X, y, K, lam, linear, W, tol):
    """``||grad F(W)|| <= tol`` at 50 digits, hence ``||W - W*|| <= tol / lam``."""
    assert np.isfinite(W).all()
    assert _mp_norm(_exact_gradient(X, y, K, lam, linear, W)) <= tol


# --- agreement with references ------------------------------------------------------


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
def test_distance_to_the_exact_minimiser(sparse):
    X, y = _problem(n=20, d=3, K=3, seed=1)
    linear = np.random.default_rng(1).standard_normal((3, 3)) / 20
    lam, tol = 1e-2, 1e-10
    res = minimize_multinomial_loss(sp.csr_matrix(X) if sparse else X, y, 3, lam,
                                    linear=linear, tol=tol)
    assert res.w.shape == (3, 3)
    W_star = _exact_minimiser(X, y, 3, lam, linear, res.w)
    assert _mp_distance(res.w, W_star) <= tol / lam
    _assert_certified_exactly(X, y, 3, lam, linear, res.w, tol)


@pytest.mark.parametrize("lam", [1e-1, 1e-3, 1e-6, 1e-8])
def test_fast_path_certifies_the_gradient_norm(lam):
    X, y = _problem(n=60, d=4, K=3, seed=2)
    tol = 1e-10
    res = minimize_multinomial_loss(X, y, 3, lam, tol=tol)
    assert res._path == "newton"
    _assert_certified_exactly(X, y, 3, lam, None, res.w, tol)


def test_agrees_with_sklearn():
    from sklearn.linear_model import LogisticRegression

    # sklearn minimises sum_i CE + ||W||^2 / (2C); with C = 1 / (n lam) that is n F.
    X, y = _problem(n=500, d=8, K=5, seed=3)
    lam = 1e-2
    clf = LogisticRegression(C=1.0 / (len(y) * lam), fit_intercept=False, tol=1e-12,
                             max_iter=10000, solver="lbfgs").fit(X, y)
    res = minimize_multinomial_loss(X, y, 5, lam, tol=1e-10)
    obj = _MultinomialObjective(X, y, 5, lam, None)
    assert obj.certified_bound(res.w.ravel()) <= 1e-10
    # sklearn stops on its own gradient test: its point is within ~1e-6 here.
    g_sklearn = np.linalg.norm(obj.grad(clf.coef_.ravel()))
    assert np.linalg.norm(clf.coef_ - res.w) <= max(g_sklearn / lam, 1e-10 / lam) * 1.01


def test_two_classes_match_the_binary_logistic_solver():
    # K = 2, no linear term: the gradient's two rows sum to lam (W_0 + W_1) (the
    # residuals of a row sum to zero), so W*_0 = -W*_1, and v = W_1 - W_0 minimises
    # (1/n) sum log(1 + exp(-s_i v.x_i)) + (lam/4) ||v||^2 (s_i = +1 for class 1,
    # -1 for class 0; ||W||^2 = ||v||^2 / 2): the binary problem at lam / 2.
    X, y = _problem(n=400, d=6, K=2, seed=4)
    lam, tol = 1e-2, 1e-10
    W = minimize_multinomial_loss(X, y, 2, lam, tol=tol).w
    v = minimize_regularized_loss(LogisticLoss(), X, np.where(y == 1, 1.0, -1.0), lam / 2,
                                  tol=tol).w
    # ||W - W*|| <= tol / lam moves v by <= sqrt(2) tol / lam; the binary point is
    # within tol / (lam / 2).
    assert np.linalg.norm((W[1] - W[0]) - v) <= (math.sqrt(2) + 2) * tol / lam
    assert np.linalg.norm(W[0] + W[1]) <= math.sqrt(2) * tol / lam


# --- the certificate ----------------------------------------------------------------


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
def test_rounding_bound_covers_the_actual_error(sparse):
    rng = np.random.default_rng(5)
    n, d, K = 30, 5, 4
    for scale, cancel in [(1.0, False), (1e3, False), (1e3, True), (1e6, True)]:
        X = rng.standard_normal((n, d)) * rng.choice([0.0, 1.0], size=(n, d), p=[0.3, 0.7])
        X[:, 0] += 0.1  # no row is all zeros
        X /= np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1.0)
        y = rng.integers(0, K, n)
        # scale 1e3: scores |z| ~ 1e3, probabilities at the edge of underflow.
        W = rng.standard_normal((K, d)) * scale
        lam = 10.0 ** rng.uniform(-4, -1)
        # cancel: objective perturbation near its optimum, linear ~ -lam W with
        # ||linear|| up to 1e4, leaving a gradient of ~1e-9.
        linear = (-lam * W + rng.standard_normal((K, d)) * 1e-9) if cancel else \
            rng.standard_normal((K, d)) / n
        Xs = sp.csr_matrix(X) if sparse else X
        g, err = _MultinomialObjective(Xs, y, K, lam, linear.ravel()).certificate(W.ravel())
        exact = float(_mp_norm(_exact_gradient(X, y, K, lam, linear, W)))
        assert abs(g - exact) <= err
        assert err < 1e-6 * max(1.0, scale * lam)  # and the bound is not vacuous


# --- totality -----------------------------------------------------------------------


def _hard_cases():
    X, y = _problem(n=40, d=3, K=3, seed=6)
    rng = np.random.default_rng(6)
    big = rng.standard_normal((3, 3))
    big *= 1e4 / np.linalg.norm(big)
    return {
        "tiny-lam": (X, y, 3, 1e-8, None),
        "huge-linear": (X, y, 3, 1e-2, big),
        "absent-class": (X, np.where(y == 2, 0, y), 3, 1e-3, None),
        "one-row": (X[:1], y[:1], 3, 1e-3, None),
        "two-classes": (X, np.minimum(y, 1), 2, 1e-3, None),
        "csr": (sp.csr_matrix(np.where(np.abs(X) < 0.5, 0.0, X)), y, 3, 1e-3, None),
        "duplicated-rows": (np.vstack([X, X, X[:5]]), np.concatenate([y, y, y[:5]]), 3, 1e-3,
                            None),
        "identical-rows": (np.tile(X[:1], (30, 1)), rng.integers(0, 3, 30), 3, 1e-4, None),
    }


@pytest.mark.parametrize("case", list(_hard_cases()))
def test_hard_problems_return_within_the_radius(case):
    X, y, K, lam, linear = _hard_cases()[case]
    d = X.shape[1]
    norm = 0.0 if linear is None else float(np.linalg.norm(linear))
    tol = max(1e-10, multinomial_tolerance_floor(d, K, lam, norm))
    res = minimize_multinomial_loss(X, y, K, lam, linear=linear, tol=tol)
    Xd = X.toarray() if sp.issparse(X) else X
    _assert_certified_exactly(Xd, y, K, lam, linear, res.w, tol)


def _reference(X, y, K, lam, linear):
    """A point certified to 1e-13, so within 1e-13 / lam of W*."""
    res = minimize_multinomial_loss(X, y, K, lam, linear=linear, tol=1e-13)
    assert res._path == "newton"
    return res.w, 1e-13 / lam


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
def test_forced_fallback_reaches_the_radius(sparse, monkeypatch):
    X, y = _problem(n=200, d=4, K=3, seed=7)
    X = sp.csr_matrix(X) if sparse else X
    lam, tol = 1e-2, 1e-9
    linear = np.random.default_rng(7).standard_normal((3, 4)) / 200
    W_ref, slack = _reference(X, y, 3, lam, linear)
    with monkeypatch.context() as m:
        m.setattr(_solver, "_fast_path", lambda obj, w, tol, max_iter: (w, math.inf, 0))
        res = minimize_multinomial_loss(X, y, 3, lam, linear=linear, tol=tol)
    assert res._path == "fallback"
    assert np.linalg.norm(res.w - W_ref) + slack <= tol / lam


def test_broken_fast_path_falls_back_without_raising(monkeypatch):
    X, y = _problem(n=100, d=3, K=3, seed=8)
    lam, tol = 1e-2, 1e-9
    W_ref, slack = _reference(X, y, 3, lam, None)

    def broken(self, w):
        raise FloatingPointError

    with monkeypatch.context() as m:
        m.setattr(_MultinomialObjective, "hessian_at", broken)
        m.setattr(_MultinomialObjective, "hessp_at", broken)
        res = minimize_multinomial_loss(X, y, 3, lam, tol=tol)
    assert res._path == "fallback"
    assert np.linalg.norm(res.w - W_ref) + slack <= tol / lam


def test_fallback_iteration_count_alone_suffices():
    # No early exit on a certificate: the a-priori count with L = max rho^2 / 2 + lam
    # must reach tol / (2 lam).
    X, y = _problem(n=200, d=4, K=3, seed=9)
    lam, tol = 1e-2, 1e-9
    W_ref, slack = _reference(X, y, 3, lam, None)

    class NeverCertified(_MultinomialObjective):
        def certified_bound(self, w):
            return math.inf

    obj = NeverCertified(X, y, 3, lam, None)
    start = np.zeros(12)
    w, n_iter = _accelerated_gradient(obj, start, _MultinomialObjective.certified_bound(obj, start),
                                      tol)
    assert n_iter > 0
    assert np.linalg.norm(w.reshape(3, 4) - W_ref) + slack <= tol / (2 * lam)


def test_conjugate_gradient_path_when_the_hessian_is_large():
    # K d = 2500 > 2000: Newton steps by conjugate gradients, no dense Hessian.
    rng = np.random.default_rng(10)
    n, d, K = 200, 500, 5
    X = sp.random(n, d, density=0.02, format="csr", random_state=rng)
    X = sp.csr_matrix(X.multiply(1.0 / np.maximum(sp.linalg.norm(X, axis=1), 1.0)[:, None]))
    y = rng.integers(0, K, n)
    linear = rng.standard_normal((K, d)) / n
    res = minimize_multinomial_loss(X, y, K, 1e-2, linear=linear, tol=1e-10)
    assert res._path == "newton"
    assert _MultinomialObjective(X, y, K, 1e-2, linear.ravel()).certified_bound(
        res.w.ravel()) <= 1e-10


def test_tolerance_floor_formula():
    u = 2.0**-53
    floor = multinomial_tolerance_floor(65, 10, 1e-3, 5.0)
    expected = _solver._FLOOR_FACTOR * 650 * u * (0.5 + 1e-3) * (math.sqrt(2) + 5.0) / 1e-3
    assert floor == pytest.approx(expected, rel=1e-12)


# --- the domain ---------------------------------------------------------------------


def test_inputs_outside_the_domain_raise_without_data_in_the_message():
    X, y = _problem(n=50, d=3, K=3)
    bad_X = X.copy()
    bad_X[7, 1] = np.nan
    cases = [
        dict(X=bad_X, y=y, n_classes=3, lam=1e-2),
        dict(X=sp.csr_matrix(bad_X), y=y, n_classes=3, lam=1e-2),
        dict(X=X, y=y, n_classes=2, lam=1e-2),  # a label equals n_classes
        dict(X=X, y=y - 1, n_classes=3, lam=1e-2),  # negative labels
        dict(X=X, y=y + 0.5, n_classes=4, lam=1e-2),  # not integers
        dict(X=X, y=np.where(y == 0, np.nan, y), n_classes=3, lam=1e-2),
        dict(X=X, y=y.astype(str), n_classes=3, lam=1e-2),
        dict(X=X, y=y[:, None], n_classes=3, lam=1e-2),
        dict(X=X, y=np.zeros(50, dtype=int), n_classes=1, lam=1e-2),
        dict(X=X, y=y, n_classes=3.0, lam=1e-2),
        dict(X=X, y=y, n_classes=3, lam=0.0),
        dict(X=X, y=y, n_classes=3, lam=np.inf),
        dict(X=X, y=y, n_classes=3, lam=1e-2, tol=0.0),
        dict(X=X, y=y, n_classes=3, lam=1e-2, tol=np.nan),
        dict(X=X, y=y, n_classes=3, lam=1e-2, linear=np.full((3, 3), np.inf)),
        dict(X=X, y=y, n_classes=3, lam=1e-2, linear=np.zeros(9)),
        dict(X=X, y=y, n_classes=3, lam=1e-2, w0=np.zeros((2, 3))),
        dict(X=X, y=y[:-1], n_classes=3, lam=1e-2),
        dict(X=X[0], y=y[:1], n_classes=3, lam=1e-2),
    ]
    for kwargs in cases:
        with pytest.raises(SolverError) as info:
            minimize_multinomial_loss(**kwargs)
        # Fixed text only: "> 0" and the parameter name w0 are the numbers allowed.
        message = str(info.value).replace("> 0", "").replace("w0", "")
        assert not re.search(r"\d|\bnan\b|\binf\b", message), message


def test_no_numpy_warnings_escape():
    X, y = _problem(n=40, d=3, K=3, seed=11)
    with np.errstate(all="raise"):
        res = minimize_multinomial_loss(X * 1e-3, y, 3, 1e-8,
                                        linear=np.full((3, 3), 1e3), tol=1e-6)
    assert np.isfinite(res.w).all()
