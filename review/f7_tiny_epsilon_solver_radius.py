"""Check (objective perturbation, tiny epsilon): is the solver's point within
tol / lambda of the exact perturbed minimiser, as the residual noise assumes?
The exact minimiser is computed with 60-digit Newton (mpmath), d = 3."""
import warnings
import mpmath as mp
import numpy as np
import dpsk._erm as erm
from dpsk import BudgetAccountant, DPLogisticRegression
from dpsk._solver import minimize_regularized_loss as solve

warnings.simplefilter("ignore")
mp.mp.dps = 60
calls = []
def spy(loss, Z, y, lam, linear=None, tol=1e-10, **k):
    r = solve(loss, Z, y, lam, linear=linear, tol=tol, **k)
    calls.append((np.array(Z), np.array(y), lam, np.array(linear), tol, r.w.copy(), r._path))
    return r
erm.minimize_regularized_loss = spy

def exact(Z, y, lam, lin, w0):
    n, d = Z.shape
    Zm = [[mp.mpf(float(v)) for v in row] for row in Z]
    w = [mp.mpf(float(v)) for v in w0]
    for _ in range(60):
        g = [lam * w[j] + mp.mpf(float(lin[j])) for j in range(d)]
        H = [[(lam if i == j else 0) for j in range(d)] for i in range(d)]
        for i in range(n):
            m = y[i] * sum(Zm[i][j] * w[j] for j in range(d))
            s = 1 / (1 + mp.exp(m))                  # -l'(m)
            for j in range(d):
                g[j] -= y[i] * s * Zm[i][j] / n
                for k in range(d):
                    H[j][k] += s * (1 - s) * Zm[i][j] * Zm[i][k] / n
        step = mp.lu_solve(mp.matrix(H), mp.matrix(g))
        w = [w[j] - step[j] for j in range(d)]
    return w

rng = np.random.default_rng(0)
X = rng.normal(size=(10, 2)); y = (X[:, 0] > 0).astype(int)
for eps in (1e-2, 1e-5, 1e-7, 1e-9):
    worst = 0.0; paths = []
    for _ in range(5):
        calls.clear()
        DPLogisticRegression(epsilon=eps, classes=[0, 1], accountant=BudgetAccountant()).fit(X, y)
        Z, yy, lam, lin, tol, w, path = calls[0]
        we = exact(Z, yy, mp.mpf(lam), lin, w)
        dist = float(mp.sqrt(sum((mp.mpf(float(w[j])) - we[j]) ** 2 for j in range(len(w)))))
        worst = max(worst, dist / (tol / lam)); paths.append(path)
    print(f"eps={eps:g}: ||b/n|| ~ {np.linalg.norm(lin):.3g}, worst distance / (tol/lambda) = "
          f"{worst:.3g}, paths {paths}")
