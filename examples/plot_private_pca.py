"""
Private PCA before a private linear model
=========================================

:class:`~dpsk.preprocessing.DPPCA` learns principal directions from a noisy
second-moment matrix of rows clipped to a norm bound, and projects the rows onto
them. In a pipeline it is a private step: its fit is charged to the same ledger
as the model after it, and the model reads its row bound (``data_norm="auto"``).

It pays on a wide table whose classes differ in a few directions. Here a
generated table of 100 columns whose 4 classes differ in 4 directions, rows
scaled to unit norm (``Normalizer``: row by row, nothing learned); we compare
``DPLogisticRegression`` alone with ``DPPCA`` at half the budget followed by the
model at the other half, at the same total ``(epsilon, delta)``. On a small or
narrow table the step's half of the budget is usually better spent on the model
(on scikit-learn's digits, 1,437 rows, it does not help at epsilon 2 or below:
``python -m benchmarks pca``; ``docs/privacy.rst``, "Private PCA"). The
``random_state`` integers make this page reproducible: a fixed seed is for
documentation only.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import Normalizer

from dpsk import BudgetAccountant, DPLogisticRegression, check_pipeline
from dpsk.pipeline import make_private_pipeline
from dpsk.preprocessing import DPPCA

rng = np.random.default_rng(0)
n, d, n_classes, rank = 6000, 100, 4, 4
basis = np.linalg.qr(rng.normal(size=(d, rank)))[0]
means = rng.normal(size=(n_classes, rank))
y = rng.integers(0, n_classes, size=n)
X = (means[y] + rng.normal(size=(n, rank))) @ basis.T + rng.normal(size=(n, d)) * 0.3
X_train, X_test, y_train, y_test = X[:5000], X[5000:], y[:5000], y[5000:]
classes = list(range(n_classes))

# %%
# One pipeline, one ledger: the projection and the model each record one event.
ledger = BudgetAccountant()
pipe = make_private_pipeline(
    Normalizer(),
    DPPCA(epsilon=0.5, delta=5e-6, accountant=ledger, random_state=0),
    DPLogisticRegression(epsilon=0.5, delta=5e-6, classes=classes, accountant=ledger,
                         random_state=1),
)
print("steps that learn without noise:", check_pipeline(pipe))
pipe.fit(X_train, y_train)
print(f"components kept: {pipe[1].n_components_}, model's data_norm: {pipe[-1].data_norm_}")
print(f"error {1 - pipe.score(X_test, y_test):.3f}; ledger: {ledger.events}")

# %%
# Test error against the total epsilon, two fits per point.
epsilons = [0.5, 1.0, 2.0, 4.0]


def alone(eps, seed):
    return make_pipeline(Normalizer(), DPLogisticRegression(
        epsilon=eps, delta=1e-5, classes=classes, accountant=BudgetAccountant(),
        random_state=seed))


def projected(eps, seed):
    ledger = BudgetAccountant()
    return make_private_pipeline(
        Normalizer(),
        DPPCA(epsilon=eps / 2, delta=5e-6, accountant=ledger, random_state=seed),
        DPLogisticRegression(epsilon=eps / 2, delta=5e-6, classes=classes,
                             accountant=ledger, random_state=seed + 1))


errors = {name: [np.mean([1 - make(eps, seed).fit(X_train, y_train).score(X_test, y_test)
                          for seed in (0, 10)]) for eps in epsilons]
          for name, make in (("DPLogisticRegression alone", alone),
                             ("DPPCA + DPLogisticRegression", projected))}
reference = 1 - make_pipeline(Normalizer(), LogisticRegression(max_iter=2000)).fit(
    X_train, y_train).score(X_test, y_test)
for name, values in errors.items():
    print(f"{name:30s}", "  ".join(f"{v:.3f}" for v in values))
print(f"{'non-private':30s} {reference:.3f}")

fig, ax = plt.subplots(figsize=(6, 4))
for name, values in errors.items():
    ax.plot(epsilons, values, marker="o", label=name)
ax.axhline(reference, color="gray", linestyle="--", label="non-private")
ax.set_xscale("log")
ax.set_xlabel("total epsilon (delta = 1e-5)")
ax.set_ylabel("test error")
ax.legend()
fig.tight_layout()
plt.show()
