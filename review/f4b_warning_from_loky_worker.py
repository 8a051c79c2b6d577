"""FINDING: with n_jobs=2, DPGridSearch fits candidate pipelines in loky worker
processes. Pipeline steps are fitted by sklearn's Pipeline.fit, outside the
inner dpsk estimator's warning filter, and the outer filter does not exist in
the worker: a data-dependent warning is printed to the shared stderr.
Run: python review/f4b_warning_from_loky_worker.py 2>&1 | grep -c 'not strictly inverse'
The parent sets an 'ignore' filter (which also hides the validate-time warning
of f4), so whatever is printed comes from the workers. With one changed row the
warning appears whenever that row falls in a candidate's training part
(probability m/(m+1) = 2/3 here)."""
import sys, warnings
import numpy as np
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer
from dpsk import DPLogisticRegression, BudgetAccountant
from dpsk.model_selection import DPGridSearch

rng = np.random.default_rng(0)
X = np.abs(rng.normal(size=(60, 2))); y = np.arange(60) % 2
if sys.argv[1:] == ["neighbour"]:
    X[0, 0] = -1.0       # neighbour: one row changed
warnings.simplefilter("ignore")  # parent process: nothing should show
if True:
    DPGridSearch(make_pipeline(FunctionTransformer(np.square, inverse_func=np.sqrt),
                               DPLogisticRegression(classes=[0, 1], data_norm=10.0)),
                 {"dplogisticregression__alpha": [1e-2, 1e-1]}, epsilon=1.0, n_jobs=2,
                 accountant=BudgetAccountant()).fit(X, y)
print("done", file=sys.stderr)
