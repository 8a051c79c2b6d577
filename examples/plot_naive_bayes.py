"""
Private naive Bayes on a mixed table
====================================

:class:`~dpsk.DPGaussianNB` releases noisy class counts, class sums and square
sums of features with declared bounds, and builds a Gaussian naive Bayes model
from them; :class:`~dpsk.DPCategoricalNB` releases one noisy histogram of
categories per class. Both need the domain declared, never read from the data.

On the raw Adult records, the schema encoder
(:func:`~dpsk.preprocessing.make_table_encoder`) maps every numeric column from
its code-book range to ``[0, 1]`` and one-hot encodes the categorical columns,
so every feature lies in ``[0, 1]``: ``bounds=(0, 1)``. We compare, on one
80/20 split and three fits per point:

* **dpsk**: ``DPGaussianNB`` at its defaults (the budget split derived for
  accuracy, shrunk class means, a variance shared by the classes);
* **even split**: the same with diffprivlib's even split of the budget
  (``budget_split=(1, 1, 1)``);
* **categorical**: ``DPCategoricalNB`` on the categorical columns alone, as
  one-hot blocks from the same kind of encoder;
* the majority class and scikit-learn's non-private ``GaussianNB``.

``python -m benchmarks naive-bayes`` is the full measurement, against
diffprivlib and on 13 more tables (:doc:`/naive_bayes`). The ``random_state``
integers make this page reproducible: a fixed seed is for documentation only.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.model_selection import train_test_split
from sklearn.naive_bayes import GaussianNB

from dpsk import BudgetAccountant, DPCategoricalNB, DPGaussianNB, check_pipeline
from dpsk.datasets import load_adult
from dpsk.datasets._adult import CATEGORIES, NUMERIC_MAX_ABS
from dpsk.pipeline import make_private_pipeline
from dpsk.preprocessing import make_table_encoder

CLASSES = ["<=50K", ">50K"]
# The code book: numeric ranges and category lists (education-num repeats education).
numeric = {name: (0.0, top) for name, top in NUMERIC_MAX_ABS.items()}
numeric["age"] = (17.0, 90.0)
categorical = {name: list(values) for name, values in CATEGORIES.items()
               if name != "education"}

X, y = load_adult(return_X_y=True, as_frame=True)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2, random_state=0,
                                                    stratify=y)

# %%
# The private pipeline: a schema encoder that learns nothing, then the model.
ledger = BudgetAccountant()
pipe = make_private_pipeline(
    make_table_encoder(numeric, categorical),
    DPGaussianNB(epsilon=1.0, bounds=(0, 1), classes=CLASSES, accountant=ledger,
                 random_state=0),
    strict=True,
)
print("steps that learn from the data:", check_pipeline(pipe))
pipe.fit(X_train, y_train)
print(f"accuracy {pipe.score(X_test, y_test):.3f}, spent {ledger.total()}")

# %%
# Accuracy against epsilon. The encoder learns nothing, so the tables are encoded
# once and the models fitted on the encoded arrays: the same fits as the pipeline's.
encoder = make_table_encoder(numeric, categorical)
Z_train, Z_test = encoder.fit_transform(X_train), encoder.transform(X_test)
onehot = make_table_encoder(None, categorical)
C_train, C_test = onehot.fit_transform(X_train), onehot.transform(X_test)
blocks = [len(values) + 1 for values in categorical.values()]  # + the "missing" category

epsilons = [0.05, 0.1, 0.3, 1.0, 3.0]
models = {
    "dpsk": lambda eps, seed: DPGaussianNB(epsilon=eps, bounds=(0, 1), classes=CLASSES,
                                           random_state=seed),
    "even split": lambda eps, seed: DPGaussianNB(epsilon=eps, bounds=(0, 1),
                                                 classes=CLASSES, budget_split=(1, 1, 1),
                                                 random_state=seed),
    "categorical": lambda eps, seed: DPCategoricalNB(epsilon=eps, n_categories=blocks,
                                                     encoding="onehot", classes=CLASSES,
                                                     random_state=seed),
}
accuracy = {name: [] for name in models}
for name, make in models.items():
    train, test = (C_train, C_test) if name == "categorical" else (Z_train, Z_test)
    for eps in epsilons:
        scores = [make(eps, seed).set_params(accountant=BudgetAccountant())
                  .fit(train, y_train).score(test, y_test) for seed in range(3)]
        accuracy[name].append(np.mean(scores))
        print(f"{name:12s} epsilon={eps:<5g} accuracy {accuracy[name][-1]:.3f}")

majority = np.mean(y_test == CLASSES[0])
nonprivate = GaussianNB().fit(Z_train, y_train).score(Z_test, y_test)

fig, ax = plt.subplots(figsize=(6, 4))
for name, values in accuracy.items():
    ax.plot(epsilons, values, marker="o", label=name)
ax.axhline(majority, color="grey", ls="--", label="majority class")
ax.axhline(nonprivate, color="black", ls=":", label="GaussianNB (non-private)")
ax.set_xscale("log")
ax.set_xlabel("epsilon")
ax.set_ylabel("test accuracy (Adult)")
ax.legend(fontsize=8)
ax.grid(alpha=0.3)
plt.show()

# %%
# The even split gives a third of the budget to the class counts, which need a
# few percent at 36,000 rows, and a third to the variances: its means are
# noisier, and it falls back on the majority class sooner (at epsilon 0.3 it
# predicts the majority class where the derived split reaches about 0.81).
#
# Naive Bayes counts the one-hot columns of related attributes (marital status,
# relationship, sex) as independent evidence. Non-private ``GaussianNB``, with a
# variance per class that rare categories make tiny, is far below the majority
# class on this table (about 0.60). The private model's shrinkage of the class
# means and its shared, floored variance temper that over-counting, which is why
# it does best at moderate epsilon and not at the largest. On Adult a linear
# model is the better choice (``DPLogisticRegression``; the benchmark prints both).
