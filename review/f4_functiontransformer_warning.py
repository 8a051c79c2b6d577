"""FINDING: DPGridSearch._validate_input fits each candidate's (declared-safe)
pipeline steps on the full data, outside the mixin's warning filter (validate runs
before the release's catch_warnings). A FunctionTransformer with inverse_func (check_inverse=True,
the default) warns iff the sampled rows fail the round trip: a noise-free,
data-dependent warning seen by the analyst. Neighbours differ in one row (row 0)."""
import warnings
import numpy as np
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer
from dpsk import DPLogisticRegression, BudgetAccountant, check_pipeline
from dpsk.model_selection import DPGridSearch

rng = np.random.default_rng(0)
X = np.abs(rng.normal(size=(60, 2))); y = np.arange(60) % 2
X2 = X.copy(); X2[0, 0] = -1.0       # neighbour: row 0 has a negative value

def pipe():
    return make_pipeline(FunctionTransformer(np.square, inverse_func=np.sqrt),
                         DPLogisticRegression(classes=[0, 1], data_norm=10.0))
print("check_pipeline:", check_pipeline(pipe()))
for name, data in (("D ", X), ("D'", X2)):
    acc = BudgetAccountant(epsilon=5)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        DPGridSearch(pipe(), {"dplogisticregression__alpha": [1e-2, 1e-1]},
                     epsilon=1.0, accountant=acc).fit(data, y)
    print(name, "fit; warnings:", [str(x.message)[:60] for x in w])
