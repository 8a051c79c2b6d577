"""
A private forest where a linear model cannot follow the data
============================================================

:class:`~dpsk.DPRandomForestClassifier` grows trees whose structure does not
read the data: split features and thresholds are drawn inside the declared
``bounds`` (here ``(0, 1)`` for every feature), and each leaf's class counts are
released with exact discrete noise. Only those noisy counts depend on the
rows, so the whole fit is one ``epsilon``-DP release, recorded as one ledger
event. The number of trees and their depth come from a public rule of ``n``,
the number of classes and ``epsilon`` (:doc:`/trees`, "Depth and number of
trees"); :class:`~dpsk.DPDecisionTreeClassifier` is the same with one tree.

On two interleaved half-moons, a boundary no line follows, we compare at
several ``epsilon`` (one 75/25 split, two fits per point):

* the private forest and the private tree at their defaults;
* :class:`~dpsk.DPLogisticRegression` at its defaults, which is as good as a
  line can be here;
* the majority class and scikit-learn's non-private ``RandomForestClassifier``.

``python -m benchmarks families`` measures the forest against diffprivlib's on
14 real tables (:doc:`/trees`, "Model families"). The ``random_state`` integers
make this page reproducible: a fixed seed is for documentation only.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import make_moons
from sklearn.ensemble import RandomForestClassifier
from sklearn.model_selection import train_test_split

from dpsk import (
    BudgetAccountant,
    DPDecisionTreeClassifier,
    DPLogisticRegression,
    DPRandomForestClassifier,
)

X, y = make_moons(n_samples=20_000, noise=0.25, random_state=0)
# A public affine map into the unit square: the declared bounds are (0, 1). It is
# fixed by the generator's known range, not read from these rows.
X = (X - np.array([-2.0, -1.5])) / np.array([5.0, 3.5])
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, random_state=0,
                                                    stratify=y)

# %%
# One fit, and what it spent. The plan (trees and depth) is public.
ledger = BudgetAccountant()
forest = DPRandomForestClassifier(epsilon=1.0, bounds=(0, 1), classes=[0, 1],
                                  accountant=ledger, random_state=0)
forest.fit(X_train, y_train)
print(f"{forest.n_estimators_} trees of depth {forest.max_depth_}, "
      f"accuracy {forest.score(X_test, y_test):.3f}, spent {ledger.total()}")

# %%
# Accuracy against epsilon.
epsilons = [0.1, 0.3, 1.0, 3.0]
models = {
    "private forest": lambda eps, seed: DPRandomForestClassifier(
        epsilon=eps, bounds=(0, 1), classes=[0, 1], random_state=seed),
    "private tree": lambda eps, seed: DPDecisionTreeClassifier(
        epsilon=eps, bounds=(0, 1), classes=[0, 1], random_state=seed),
    # Rows of the unit square have norm at most sqrt(2): a public row bound.
    "private logistic": lambda eps, seed: DPLogisticRegression(
        epsilon=eps, classes=[0, 1], data_norm=np.sqrt(2.0), random_state=seed),
}
scores = {name: [np.mean([make(eps, seed).fit(X_train, y_train).score(X_test, y_test)
                          for seed in (1, 2)])
                 for eps in epsilons]
          for name, make in models.items()}
majority = max(np.mean(y_test == 0), np.mean(y_test == 1))
nonprivate = RandomForestClassifier(random_state=0).fit(X_train, y_train).score(X_test,
                                                                                 y_test)

fig, ax = plt.subplots(figsize=(6, 4))
for name, values in scores.items():
    ax.plot(epsilons, values, marker="o", label=name)
ax.axhline(nonprivate, color="black", linestyle="--", label="non-private forest")
ax.axhline(majority, color="grey", linestyle=":", label="majority class")
ax.set_xscale("log")
ax.set_xlabel("epsilon")
ax.set_ylabel("test accuracy")
ax.set_title("Two moons, 15,000 training rows")
ax.legend()
plt.show()

for name, values in scores.items():
    print(f"{name:>16}: " + "  ".join(f"{v:.3f}" for v in values))
