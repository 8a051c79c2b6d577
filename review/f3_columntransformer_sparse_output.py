"""FINDING: a ColumnTransformer counts as DP-safe for check_pipeline and
DPGridSearch, but fitting it stores sparse_output_ = (density of the training
data < sparse_threshold): a noise-free, data-dependent bit that is released in
best_estimator_ (and its pickle). Neighbours differ in one row."""
import pickle
import numpy as np
import scipy.sparse as sp
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import make_pipeline
from dpsk import DPLogisticRegression, BudgetAccountant, check_pipeline
from dpsk.model_selection import DPGridSearch

n, d = 40, 5
rng = np.random.default_rng(0)
dense = np.zeros((n, d)); y = np.arange(n) % 2
nnz_target = int(0.3 * n * d)            # 60 nonzeros = density exactly 0.30
idx = rng.choice(n * d, nnz_target, replace=False)
dense.flat[idx] = 0.5
# D: density 0.30 (not < 0.3 -> dense output); D' (one row changed, one entry
# set to 0) has density 0.295 < 0.3 -> sparse output.
r = idx[0] // d
Xd = sp.csr_matrix(dense)
dense2 = dense.copy(); dense2.flat[idx[0]] = 0.0
Xd2 = sp.csr_matrix(dense2)

def pipe():
    return make_pipeline(ColumnTransformer([("keep", "passthrough", list(range(d)))],
                                           sparse_threshold=0.3),
                         DPLogisticRegression(classes=[0, 1]))
print("check_pipeline:", check_pipeline(pipe()))
for name, X in (("D ", Xd), ("D'", Xd2)):
    # refit=True: the released model is refitted on all rows (the same holds for
    # a single-candidate grid, and per part for refit=False)
    s = DPGridSearch(pipe(), {"dplogisticregression__alpha": [1e-2, 1e-1]}, epsilon=1.0,
                     refit=True, accountant=BudgetAccountant()).fit(X, y)
    ct = pickle.loads(pickle.dumps(s)).best_estimator_.steps[0][1]
    print(name, "released best_estimator_[0].sparse_output_ =", ct.sparse_output_)

# Second consequence: with a dense-only private step the same bit becomes a
# *free* refusal on one neighbour only (before anything is spent).
from dpsk.kernel import DPKernelClassifier
def kpipe():
    return make_pipeline(ColumnTransformer([("keep", "passthrough", list(range(d)))],
                                           sparse_threshold=0.3),
                         DPKernelClassifier(classes=[0, 1]))
print("check_pipeline (kernel):", check_pipeline(kpipe()))
for name, X in (("D ", Xd), ("D'", Xd2)):
    acc = BudgetAccountant()
    try:
        DPGridSearch(kpipe(), {"dpkernelclassifier__alpha": [1e-2, 1e-1]}, epsilon=1.0,
                     accountant=acc).fit(X, y)
        out = "fitted"
    except Exception as exc:
        out = f"{type(exc).__name__}: {str(exc)[:50]}"
    print(name, out, "| spent", acc.total())
