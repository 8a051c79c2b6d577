"""
Robust accuracy of a private model
==================================

:class:`~dpsk.DPRobustLogisticRegression` trains against the worst L2
perturbation of each training row of norm ``radius``, privately (output
perturbation). :func:`dpsk.robust_accuracy` counts a test row as correct only
if every input within a given L2 distance of it is classified correctly, which
for a linear model is exact. We compare it with
:class:`~dpsk.DPLogisticRegression` at the same budget on Adult.

The ``random_state`` integers make this page reproducible: a fixed seed is for
documentation only.
"""

import matplotlib.pyplot as plt
from sklearn.model_selection import train_test_split

from dpsk import DPLogisticRegression, DPRobustLogisticRegression, robust_accuracy
from dpsk.datasets import load_adult

X, y = load_adult(return_X_y=True, preprocess=True)
X_train, X_test, y_train, y_test = train_test_split(
    X, y, train_size=20_000, test_size=5_000, random_state=0, stratify=y
)

common = dict(epsilon=1.0, alpha=1e-3, classes=[0, 1], random_state=0)  # seed: docs only
models = {
    "DPLogisticRegression": DPLogisticRegression(**common),
    "DPRobustLogisticRegression (radius 0.1)": DPRobustLogisticRegression(radius=0.1, **common),
}
radii = [0.0, 0.02, 0.05, 0.1, 0.2]
fig, ax = plt.subplots(figsize=(6, 4))
for name, model in models.items():
    model.fit(X_train, y_train)
    accuracies = [robust_accuracy(model, X_test, y_test, r) for r in radii]
    print(name, " ".join(f"{a:.3f}" for a in accuracies))
    ax.plot(radii, accuracies, "o-", label=name)
ax.set_xlabel("attack radius (L2)")
ax.set_ylabel("robust test accuracy")
ax.set_title(r"Adult, $\epsilon = 1$")
ax.legend()
fig.tight_layout()
