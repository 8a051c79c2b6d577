"""FINDING (race): warnings.catch_warnings() is process-global in Python 3.11,
so when two private fits run concurrently in threads, the first to finish
restores the filters while the other is still inside its release: warnings
raised in that release (here FunctionTransformer's check_inverse warning from
DPGridSearch's candidate fits, a function of the part's rows) reach the user.
The validate-time path (finding 3) is patched out so that only release-time
warnings are counted."""
import threading, warnings
from unittest import mock
import numpy as np
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer
import dpsk.model_selection._search as S
from dpsk import BudgetAccountant, DPLogisticRegression
from dpsk.model_selection import DPGridSearch

rng = np.random.default_rng(0)
X = np.abs(rng.normal(size=(60, 2))); y = np.arange(60) % 2
X[:, 0] = -X[:, 0]   # every part fails the round trip, so every candidate fit warns
seen = []
warnings.simplefilter("always")
warnings.showwarning = lambda message, *a, **k: seen.append(str(message)[:40])

def work():
    for _ in range(30):
        DPGridSearch(make_pipeline(FunctionTransformer(np.square, inverse_func=np.sqrt),
                                   DPLogisticRegression(classes=[0, 1], data_norm=10.0)),
                     {"dplogisticregression__alpha": [1e-2, 1e-1]},
                     accountant=BudgetAccountant()).fit(X, y)

with mock.patch.object(S, "_validate_through", lambda *a: None):
    work()
    print("one thread : release-time warnings seen", len(seen))
    seen.clear()
    threads = [threading.Thread(target=work) for _ in range(4)]
    [t.start() for t in threads]; [t.join() for t in threads]
    print("four threads: release-time warnings seen", len(seen))
