"""
Where the clipping bounds sit: private bounds against leaky ones
================================================================

A private linear model needs every row to have a known norm, so each numeric
column must be mapped into a fixed range. With raw Adult columns (``fnlwgt``
runs to 1.5 million, ``capital-gain`` to 99,999) the choice of range decides
the accuracy:

* **raw, data_norm=1**: the columns as they are, the model's default
  ``data_norm=1``. Every row is scaled down to norm 1, dominated by
  ``fnlwgt``: the model predicts the majority class;
* **true min-max (leaky)**: the training minimum and maximum as bounds. Almost
  every value is squeezed into a sliver of ``[0, 1]``;
* **true p1-p99 (leaky)**: the training 1st and 99th percentiles. Good bounds,
  but read off the data: the fitted pipeline is not private;
* **private bounds**: :class:`~dpsk.preprocessing.PrivateBoundsScaler` learns
  each column's 5th and 95th percentile with the exponential mechanism
  (``bounds_epsilon=0.2``), and the model gets the remaining 0.8. The whole
  pipeline is private, at the same total epsilon of 1.

We use the six numeric columns alone, one 80/20 split and three fits per row
(``python -m benchmarks bounds`` is the full measurement, with the categorical
columns too; see :doc:`/privacy`, "Private bounds"). The ``random_state``
integers make this page reproducible: a fixed seed is for documentation only.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.compose import ColumnTransformer
from sklearn.model_selection import train_test_split

from dpsk import BudgetAccountant, DPLogisticRegression
from dpsk.datasets import load_adult
from dpsk.pipeline import make_private_pipeline
from dpsk.preprocessing import make_table_encoder, table_norm_bound

NUMERIC = ["age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week"]
CLASSES = ["<=50K", ">50K"]

X, y = load_adult(return_X_y=True, as_frame=True)
X_train, X_test, y_train, y_test = train_test_split(
    X[NUMERIC], y, test_size=0.2, random_state=0, stratify=y
)


def fit_score(numeric, bounds_epsilon, seed):
    """Accuracy of one private pipeline and the total it charged to its ledger."""
    ledger = BudgetAccountant()
    encoder = make_table_encoder(numeric, bounds_epsilon=bounds_epsilon,
                                 bounds_accountant=ledger)
    if bounds_epsilon is not None:
        encoder.set_params(numeric_private__bounds__random_state=seed)
    model_epsilon = 1.0 - (bounds_epsilon or 0.0)
    model = DPLogisticRegression(epsilon=model_epsilon, data_norm=table_norm_bound(numeric),
                                 classes=CLASSES, accountant=ledger, random_state=seed)
    pipe = make_private_pipeline(encoder, model, strict=True).fit(X_train, y_train)
    return pipe.score(X_test, y_test), ledger.total()[0], pipe


def raw_score(seed):
    ledger = BudgetAccountant()
    pipe = make_private_pipeline(
        ColumnTransformer([("numeric", "passthrough", NUMERIC)], sparse_threshold=0),
        DPLogisticRegression(epsilon=1.0, classes=CLASSES, accountant=ledger,
                             random_state=seed),
    ).fit(X_train, y_train)
    return pipe.score(X_test, y_test), ledger.total()[0], pipe


p1_p99 = {c: tuple(np.percentile(X_train[c], [1, 99])) for c in NUMERIC}
min_max = {c: (X_train[c].min(), X_train[c].max()) for c in NUMERIC}
rows = {
    "raw, data_norm=1": lambda s: raw_score(s),
    "true min-max (leaky)": lambda s: fit_score(min_max, None, s),
    "true p1-p99 (leaky)": lambda s: fit_score(p1_p99, None, s),
    "private bounds": lambda s: fit_score(dict.fromkeys(NUMERIC), 0.2, s),
}
results = {name: [run(seed) for seed in range(3)] for name, run in rows.items()}
for name, runs in results.items():
    accuracy = [a for a, _, _ in runs]
    print(f"{name:22s} accuracy {np.mean(accuracy):.3f}   epsilon spent {runs[0][1]:g}")

# %%
# The learned bounds, next to the true percentiles they aim at (5th and 95th)
# and the leaky 1st/99th. They sit on a grid of signed steps of 2^(1/16).
scaler = results["private bounds"][0][2][0].named_transformers_["numeric_private"][-1]
for j, column in enumerate(NUMERIC):
    p5, p95 = np.percentile(X_train[column], [5, 95])
    print(f"{column:15s} learned [{scaler.lower_[j]:>9,.4g}, {scaler.upper_[j]:>9,.4g}]   "
          f"true p5-p95 [{p5:>9,.4g}, {p95:>9,.4g}]   p1-p99 [{p1_p99[column][0]:>9,.4g}, "
          f"{p1_p99[column][1]:>9,.4g}]")

# %%
# Accuracy on the held-out rows, total epsilon 1 in every row.
names = list(results)
means = [np.mean([a for a, _, _ in results[n]]) for n in names]
majority = max(np.mean(y_test == c) for c in CLASSES)
fig, ax = plt.subplots(figsize=(6, 2.8))
ax.barh(names, means, color=["C7", "C7", "C7", "C0"])
ax.axvline(majority, color="k", linestyle=":", label="majority class")
ax.set_xlim(0.7, 0.82)
ax.set_xlabel("test accuracy (six numeric columns, epsilon 1 in total)")
ax.invert_yaxis()
ax.legend(loc="lower right")
fig.tight_layout()
plt.show()
