"""
One-vs-rest or multinomial at the same budget
=============================================

With more than two classes, :class:`~dpsk.DPLogisticRegression` can fit one
binary model per class (``multi_class="ovr"``), which must share the budget
between the classes, or a single softmax model (``multi_class="multinomial"``)
whose whole weight matrix is one private release at the whole budget. We
compare them on the digits data (10 classes, 64 features, about 1,800 rows) at
``delta=1e-5``.

Digits is small: at epsilon 1 a private model is close to chance. Private
models need many rows per feature and per class (see :doc:`/user_guide`).

The ``random_state`` integers make this page reproducible: a fixed seed is for
documentation only.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import normalize

from dpsk import BudgetAccountant, DPLogisticRegression

X, y = load_digits(return_X_y=True)
# Rows scaled to unit norm: data_norm=1 then clips nothing. Scaling a row by its
# own norm uses that row alone, so it learns nothing from the others.
X = normalize(X)
X_train, X_test, y_train, y_test = train_test_split(
    X, y, test_size=0.3, random_state=0, stratify=y
)

# %%
# Epsilon 20 is far too large for a meaningful guarantee: dpsk says so with a
# PrivacyBudgetWarning, shown below. It is here to show where the two
# strategies meet.
accountant = BudgetAccountant()
epsilons = [1.0, 5.0, 20.0]
scores = {"ovr": [], "multinomial": []}
for strategy in scores:
    for i, eps in enumerate(epsilons):
        model = DPLogisticRegression(
            epsilon=eps, delta=1e-5, alpha=1e-2, multi_class=strategy,
            classes=np.arange(10), accountant=accountant,
            random_state=i,  # fixed seed: docs only
        )
        scores[strategy].append(model.fit(X_train, y_train).score(X_test, y_test))
        print(f"{strategy:>11}  epsilon={eps:>4}: accuracy {scores[strategy][-1]:.3f}")

fig, ax = plt.subplots(figsize=(6, 4))
width = 0.35
positions = np.arange(len(epsilons))
ax.bar(positions - width / 2, scores["ovr"], width, label="one-vs-rest")
ax.bar(positions + width / 2, scores["multinomial"], width, label="multinomial")
ax.axhline(0.1, color="k", ls=":", label="chance")
ax.set_xticks(positions, [f"{e:g}" for e in epsilons])
ax.set_xlabel(r"epsilon ($\delta = 10^{-5}$)")
ax.set_ylabel("test accuracy")
ax.set_title("Digits: one-vs-rest against multinomial")
ax.legend()
fig.tight_layout()

# %%
print("total spent:", accountant.total())
