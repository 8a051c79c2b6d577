"""
Private prediction with a budget
================================

:class:`~dpsk.DPPredictionEnsemble` never releases a model: it trains
non-private *teachers* on disjoint parts of the data and answers each query
row by a private vote among them (Dwork and Feldman, 2018). Every answered row
costs ``epsilon``, charged to the ledger before the answer is given, so a
batch that would exceed the budget is refused whole.

The ``random_state`` integer makes this page reproducible: a fixed seed is for
documentation only.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.linear_model import LogisticRegression

from dpsk import BudgetAccountant, BudgetExceededError, DPPredictionEnsemble
from dpsk.datasets import load_adult

X, y = load_adult(return_X_y=True, preprocess=True)
X_train, y_train = X[:40_000], y[:40_000]
X_query, y_query = X[40_000:], y[40_000:]

accountant = BudgetAccountant(epsilon=10.0)
ensemble = DPPredictionEnsemble(
    LogisticRegression(), epsilon=0.1, classes=[0, 1], accountant=accountant,
    random_state=0,  # fixed seed: docs only
).fit(X_train, y_train)
print("teachers:", ensemble.n_teachers_)

# %%
# A batch of 60 query rows at epsilon 0.1 each spends 6 of the 10.
answers = ensemble.predict(X_query[:60])
print(f"accuracy of the private answers: {np.mean(answers == y_query[:60]):.3f}")
print("spent:", accountant.total(), "remaining:", accountant.remaining())

# %%
# A second batch of 60 rows would cost 6 more: it is refused before any
# answer is drawn, and nothing is charged.
try:
    ensemble.predict(X_query[60:120])
except BudgetExceededError as exc:
    print("refused:", exc)
print("spent after the refusal:", accountant.total())

# %%
# The ledger holds one event per answered row.
spent = np.cumsum([event.epsilon for event in accountant.events])
fig, ax = plt.subplots(figsize=(6, 3.5))
ax.plot(np.arange(1, len(spent) + 1), spent, label="spent")
ax.axhline(accountant.epsilon, color="k", ls="--", label="budget")
ax.set_xlabel("answered query rows")
ax.set_ylabel("epsilon spent")
ax.legend()
fig.tight_layout()
