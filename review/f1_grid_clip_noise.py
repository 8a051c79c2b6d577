"""FINDING: add_on_grid clips the *noise* integer at +-2^61; when the noise is
that large the release is w_rounded +- 2^61*grid, i.e. the exact (noise-free)
solver point is read off the release (mod float rounding of 2^8 grid units).

Two neighbouring data sets (one label flipped); small epsilon, moderate d.
"""
import sys
import numpy as np
from dpsk import DPLogisticRegression, BudgetAccountant
from dpsk._mechanisms import release_grid, _GRID_INT_LIMIT

rng = np.random.default_rng(0)
n, d = 200, int(sys.argv[1]) if len(sys.argv) > 1 else 1000
eps = float(sys.argv[2]) if len(sys.argv) > 2 else 1e-7
pert = sys.argv[3] if len(sys.argv) > 3 else "output"
tol = float(sys.argv[4]) if len(sys.argv) > 4 else 1e-10
X = rng.normal(size=(n, d)); X /= np.linalg.norm(X, axis=1, keepdims=True)
y = (X[:, 0] > 0).astype(int)
y2 = y.copy(); y2[0] = 1 - y2[0]          # neighbour: one label flipped

def fit(yy):
    clf = DPLogisticRegression(epsilon=eps, alpha=1e-2, perturbation=pert, tol=tol,
                               fit_intercept=False, classes=[0, 1],
                               accountant=BudgetAccountant()).fit(X, yy)
    return clf.coef_.ravel()  # = W / data_norm with data_norm = 1

alpha = 1e-2
grid = release_grid(2.0 / (n * alpha), d)   # output-perturbation grid (fit_intercept=False)
lim = _GRID_INT_LIMIT * grid
for name, yy in (("D", y), ("D'", y2)):
    c = fit(yy)
    clipped = np.isclose(np.abs(c), lim, rtol=1e-3)
    # the release minus the clipped noise: the noise-free point (up to 2^8 grid units)
    resid = c[clipped] - np.sign(c[clipped]) * lim
    print(f"{name}: grid={grid:.3g}, |coef| max={np.abs(c).max():.6g}, limit={lim:.6g}, "
          f"coordinates at the clip: {clipped.sum()}/{d}")
    print(f"   release - (+-limit) for first clipped coords: {resid[:4]}")
# the exact non-private minimiser for comparison
from dpsk._solver import minimize_regularized_loss
from dpsk._losses import LogisticLoss
for name, yy in (("D", y), ("D'", y2)):
    w = minimize_regularized_loss(LogisticLoss(), X, np.where(yy == 1, 1., -1.), alpha).w
    print(f"{name}: exact minimiser first coords {w[:4]}")
