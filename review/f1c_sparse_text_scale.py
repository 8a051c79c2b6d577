"""FINDING 1 at text-classification scale: sparse X with d = 200,000 hashed
features, output perturbation, 4 declared classes (one-vs-rest, epsilon/4 each).
Counts released coordinates sitting at +-2^61*grid (+ the noise-free point)."""
import sys, time, warnings
import numpy as np
import scipy.sparse as sp
from dpsk import BudgetAccountant, DPLogisticRegression
from dpsk._mechanisms import _GRID_INT_LIMIT, release_grid

warnings.simplefilter("ignore")
eps = float(sys.argv[1]) if len(sys.argv) > 1 else 4e-3
n, d, K = 500, 200_000, 4
rng = np.random.default_rng(0)
X = sp.random(n, d, density=5e-4, format="csr", random_state=0)
y = rng.integers(0, K, n)
t = time.time()
clf = DPLogisticRegression(epsilon=eps, alpha=1e-2, perturbation="output", fit_intercept=False,
                           classes=list(range(K)), accountant=BudgetAccountant()).fit(X, y)
lim = _GRID_INT_LIMIT * release_grid(2.0 / (n * 1e-2), d)
at = np.isclose(np.abs(clf.coef_), lim, rtol=1e-6)
print(f"eps={eps:g} (eps/K={eps / K:g}), d={d}: coordinates at the clip {at.sum()} of "
      f"{at.size}; fit took {time.time() - t:.1f}s")
