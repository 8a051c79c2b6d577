"""
From a CSV file to a private model
==================================

The whole path a new user takes, private end to end: read a CSV file with
pandas, declare a schema, and fit a private pipeline that charges one ledger.

* The **schema** comes from the data set's documentation (here adult.names),
  never from the rows: the category lists of the categorical columns, and for
  each numeric column either declared bounds or ``None``.
* A numeric column declared ``None`` gets its clipping range from a
  :class:`~dpsk.preprocessing.PrivateBoundsScaler` inside the encoder: an
  exponential-mechanism quantile per end, paid with ``bounds_epsilon``.
* The encoded rows' norm bound is known before anything is fitted
  (:func:`~dpsk.preprocessing.table_norm_bound`); the model's default
  ``data_norm="auto"`` reads it from the encoder.
* :func:`~dpsk.make_private_pipeline` with ``strict=True`` refuses any step that
  learns without noise; both the bounds and the model charge the same
  :class:`~dpsk.BudgetAccountant`, and every refusal (a bad label, a missing
  column, a budget too small for both) comes before either spends.
* A class that is rare gets its weight from a prevalence declared from public
  sources, not from the labels.

The ``random_state`` integers make this page reproducible: a fixed seed is for
documentation only, never for a model you release.
"""

import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from sklearn.metrics import balanced_accuracy_score
from sklearn.model_selection import train_test_split

from dpsk import BudgetAccountant, DPLogisticRegression, check_pipeline
from dpsk.datasets import load_adult
from dpsk.pipeline import make_private_pipeline
from dpsk.preprocessing import make_table_encoder, table_norm_bound

# %%
# The CSV file
# ------------
# We write the raw Adult records to a temporary CSV file to stand in for yours.
# Missing entries ("?" in the UCI files) are empty cells.
with tempfile.TemporaryDirectory() as workdir:
    path = Path(workdir) / "adult.csv"
    load_adult(as_frame=True).frame.to_csv(path, index=False)
    frame = pd.read_csv(path)
y = frame.pop("income")
X_train, X_test, y_train, y_test = train_test_split(
    frame, y, test_size=0.2, random_state=0, stratify=y
)
print(frame.head(3).T)

# %%
# The schema
# ----------
# Ages and hours have documented ranges, so we declare them (free). The
# sampling weight ``fnlwgt`` and the capital amounts have none: ``None`` asks
# for private bounds. ``education`` repeats ``education-num`` and is left out
# (columns not in the schema are dropped).
numeric = {
    "age": (17, 90),
    "hours-per-week": (1, 99),
    "education-num": (1, 16),
    "fnlwgt": None,
    "capital-gain": None,
    "capital-loss": None,
}
categorical = {
    "workclass": ["Federal-gov", "Local-gov", "Never-worked", "Private", "Self-emp-inc",
                  "Self-emp-not-inc", "State-gov", "Without-pay"],
    "marital-status": ["Divorced", "Married-AF-spouse", "Married-civ-spouse",
                       "Married-spouse-absent", "Never-married", "Separated", "Widowed"],
    "occupation": ["Adm-clerical", "Armed-Forces", "Craft-repair", "Exec-managerial",
                   "Farming-fishing", "Handlers-cleaners", "Machine-op-inspct",
                   "Other-service", "Priv-house-serv", "Prof-specialty",
                   "Protective-serv", "Sales", "Tech-support", "Transport-moving"],
    "relationship": ["Husband", "Not-in-family", "Other-relative", "Own-child",
                     "Unmarried", "Wife"],
    "race": ["Amer-Indian-Eskimo", "Asian-Pac-Islander", "Black", "Other", "White"],
    "sex": ["Female", "Male"],
    "native-country": ["United-States"],  # every other country: a block of zeros
}

# %%
# The private pipeline
# --------------------
# Total epsilon 1: 0.2 for the three learned ranges, 0.8 for the model. The
# model's ``data_norm`` is left at its default, ``"auto"``: it reads the
# encoder's row bound.


def private_pipeline(ledger, class_weight=None):
    """The schema encoder with private bounds, then the model, on one ledger."""
    encoder = make_table_encoder(numeric, categorical, bounds_epsilon=0.2,
                                 bounds_accountant=ledger)
    encoder.set_params(numeric_private__bounds__random_state=0)
    model = DPLogisticRegression(epsilon=0.8, classes=["<=50K", ">50K"],
                                 class_weight=class_weight, accountant=ledger,
                                 random_state=0)
    return make_private_pipeline(encoder, model, strict=True)


ledger = BudgetAccountant(epsilon=1.0)
pipe = private_pipeline(ledger)
print("steps that learn without noise:", check_pipeline(pipe))
pipe.fit(X_train, y_train)
print(f"test accuracy {pipe.score(X_test, y_test):.3f}, balanced accuracy "
      f"{balanced_accuracy_score(y_test, pipe.predict(X_test)):.3f}")
print("ledger:", ledger.spends, "total", ledger.total())
print("the model's data_norm_:", pipe[-1].data_norm_,
      "= table_norm_bound:", table_norm_bound(numeric, categorical))

# %%
# A refusal costs nothing
# -----------------------
# A label outside the declared classes is refused before the bounds spend.
# The ledger is unchanged (here a fresh one of the same budget).
check_ledger = BudgetAccountant(epsilon=1.0)
try:
    private_pipeline(check_ledger).fit(X_train, y_train.replace(">50K", ">50k"))  # a typo
except ValueError as exc:
    print("refused:", str(exc)[:90], "...")
print("ledger after the refusal:", check_ledger.spends)

# %%
# Rare positives: a declared prevalence
# -------------------------------------
# adult.names documents the share of ``>50K`` records: about 24%. With a class
# that rare a private model drifts towards the majority class; weights from
# the *documented* prevalence (never from the training labels, which are
# private) balance it: the balanced accuracy rises and the plain accuracy
# falls, as more ``<=50K`` records are called ``>50K``; choose by which errors
# matter to you. This is a second model on the same rows, so it has its own
# budget here; on your data, choose the weights before the one fit.
p = 0.24
weighted = private_pipeline(BudgetAccountant(epsilon=1.0),
                            class_weight={"<=50K": p, ">50K": 1 - p}).fit(X_train, y_train)
print(f"with class_weight: accuracy {weighted.score(X_test, y_test):.3f}, balanced accuracy "
      f"{balanced_accuracy_score(y_test, weighted.predict(X_test)):.3f}")

# %%
# What was learned
# ----------------
# The learned ranges are the private release of the encoder. Values outside
# them are clipped. Each histogram shows the training column on a symmetric
# log scale with the learned range shaded.
bounds = pipe[0].named_transformers_["numeric_private"][-1]
learned = [c for c, b in numeric.items() if b is None]
fig, axes = plt.subplots(1, len(learned), figsize=(9, 2.6))
for ax, column, low, high in zip(axes, learned, bounds.lower_, bounds.upper_):
    values = X_train[column].to_numpy(float)
    ax.hist(np.log10(1 + values), bins=40, color="C7")
    ax.axvspan(np.log10(1 + max(low, 0)), np.log10(1 + high), color="C0", alpha=0.3)
    ax.set_title(f"{column}\nlearned [{low:,.4g}, {high:,.4g}]", fontsize=9)
    ax.set_xlabel("log10(1 + value)")
fig.tight_layout()
plt.show()
