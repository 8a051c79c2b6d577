"""Measure how often add_on_grid clips the noise (FINDING 1), by wrapping it.
Usage: python review/f1b_clip_frequency.py  (prints one line per configuration)."""
import warnings
import numpy as np
import dpsk._erm as erm
from dpsk import BudgetAccountant, DPLogisticRegression
from dpsk._mechanisms import _GRID_INT_LIMIT, add_on_grid

warnings.simplefilter("ignore")
record = []
def spy(point, noise, grid):
    record.append(int(np.sum(np.abs(np.asarray(noise) / grid) > _GRID_INT_LIMIT)))
    return add_on_grid(point, noise, grid)
erm.add_on_grid = spy

rng = np.random.default_rng(0)
for n, d, eps, pert, tol in [(200, 1000, 1e-5, "output", 1e-10), (200, 1000, 2e-6, "output", 1e-10),
                             (200, 1000, 1e-6, "output", 1e-10), (200, 100, 1e-7, "output", 1e-10),
                             (200, 100, 1e-2, "objective", 1.0), (200, 100, 1e-1, "objective", 1.0),
                             (200, 1000, 1.0, "objective", 1e-10), (200, 1000, 1e-3, "objective", 1e-10)]:
    X = rng.normal(size=(n, d)); X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = (X[:, 0] > 0).astype(int)
    record.clear()
    for _ in range(20):
        DPLogisticRegression(epsilon=eps, alpha=1e-2, perturbation=pert, tol=tol,
                             fit_intercept=False, classes=[0, 1],
                             accountant=BudgetAccountant()).fit(X, y)
    hit = np.array(record)
    print(f"n={n} d={d} eps={eps:g} {pert:9s} tol={tol:g}: fits with a clipped noise "
          f"coordinate {np.mean(hit > 0):.2f}, mean clipped coords {hit.mean():.1f}/{d}")
