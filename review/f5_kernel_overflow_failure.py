"""FINDING (low): DPKernelClassifier fails (charged PrivateFitError) on one
neighbour and not the other when X @ W^T overflows to inf (cos(inf) = NaN):
possible for in-domain rows with a large gamma (laplacian: Cauchy
frequencies) or a large data_norm. The fail/succeed bit is noise-free."""
import numpy as np
from dpsk import BudgetAccountant, PrivateFitError
from dpsk.kernel import DPKernelClassifier

rng = np.random.default_rng(0)
X = rng.uniform(-1, 1, size=(20, 2)); y = np.arange(20) % 2
X2 = X.copy(); X2[0] = [1e200, 0.0]            # neighbour: one row changed (finite)
for name, data in (("D ", X), ("D'", X2)):
    acc = BudgetAccountant()
    try:
        DPKernelClassifier(gamma=1e300, data_norm=1e200, classes=[0, 1],
                           accountant=acc, random_state=None).fit(data, y)
        out = "fitted"
    except PrivateFitError:
        out = "PrivateFitError"
    print(name, out, "spent", acc.total())
