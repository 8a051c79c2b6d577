# TEMPORARY STUB (not committed): replaced by the certified solver from branch msolver.
import numpy as np
from scipy.optimize import minimize
from scipy.special import logsumexp, softmax
from ._solver import SolverResult


def minimize_multinomial_loss(X, y, n_classes, lam, linear=None, tol=1e-10, max_iter=1000, w0=None):
    n, d = X.shape
    K = n_classes
    Y = np.zeros((n, K)); Y[np.arange(n), y] = 1
    lin = np.zeros((K, d)) if linear is None else linear
    def f(v):
        W = v.reshape(K, d); S = np.asarray(X @ W.T)
        val = np.mean(logsumexp(S, axis=1) - S[np.arange(n), y]) + lam / 2 * (v @ v) + (lin.ravel() @ v)
        G = np.asarray(X.T @ (softmax(S, axis=1) - Y)).T / n + lam * W + lin
        return val, G.ravel()
    r = minimize(f, np.zeros(K * d), jac=True, method="L-BFGS-B", options={"gtol": 1e-12, "ftol": 0, "maxiter": 5000})
    return SolverResult(r.x.reshape(K, d), "stub", r.nit)


def multinomial_tolerance_floor(d, n_classes, lam, linear_norm_bound=0.0):
    return 64 * d * n_classes * 2.0**-53 * (0.5 + lam) * (2**0.5 + linear_norm_bound) / lam
