"""
Private preprocessing of a mixed-type DataFrame, end to end
===========================================================

A private model protects the rows *it* sees; a preprocessing step that learns
from the training data (a mean to impute, a scale, the list of categories)
stores that statistic without noise and breaks the guarantee (see
:doc:`/privacy`). :func:`~dpsk.preprocessing.make_table_encoder` builds the
whole encoding of a mixed table from a declared schema instead: bounds for the
numeric columns, category lists for the others, fill values for missing
entries. Its fit learns nothing from the data, and
:func:`~dpsk.preprocessing.table_norm_bound` gives the bound on every encoded
row's norm, which the private model needs as ``data_norm``.

We use the raw Adult census records as a pandas DataFrame: numeric and string
columns, with missing entries (``"?"`` in the UCI files, ``None`` here) in
``workclass``, ``occupation`` and ``native-country``. The encoder treats
``None``, NaN and ``pandas.NA`` alike, whatever the pandas version.

The ``random_state`` integers make this page reproducible: a fixed seed is for
documentation only.
"""

import matplotlib.pyplot as plt
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline

from dpsk import BudgetAccountant, DPLogisticRegression, check_pipeline
from dpsk.datasets import load_adult
from dpsk.pipeline._private import make_private_pipeline
from dpsk.preprocessing import make_table_encoder, table_norm_bound

X, y = load_adult(return_X_y=True, as_frame=True)
X_train, X_test, y_train, y_test = train_test_split(
    X, y, test_size=0.3, random_state=0, stratify=y
)
print(X.dtypes.value_counts())
print("rows with a missing entry:", int(X.isna().any(axis=1).sum()), "of", len(X))

# %%
# The schema
# ----------
# Everything below comes from the data set's documentation (adult.names and the
# census code book), never from the rows: a bound or a category list read off
# the training data would reveal which values occur. The survey kept people
# older than 16, top-codes age at 90 and hours at 99; education-num codes 16
# levels. For the capital columns we *choose* bounds; larger values are
# clipped to them. ``fnlwgt`` (a sampling weight) and ``education`` (the same
# as ``education-num``) are not declared, so they are dropped.
numeric = {
    "age": (17, 90),
    "education-num": (1, 16),
    "hours-per-week": (1, 99),
    "capital-gain": (0, 20_000),
    "capital-loss": (0, 4_000),
}
# For native-country we declare one value only: every other country is outside
# the declared list and is encoded as a block of zeros (handle_unknown="ignore").
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
    "native-country": ["United-States"],
}
# A missing number becomes the midpoint of its bounds; a missing category
# becomes "missing", which gets its own indicator column.
encoder = make_table_encoder(numeric, categorical, fill_numeric="midpoint",
                             fill_categorical="missing")
bound = table_norm_bound(numeric, categorical)
print(f"row norm bound sqrt(5 + 7) = {bound:.3f}")

# %%
# The pipeline
# ------------
# ``check_pipeline`` reads only the steps and their parameters: an empty list
# means no step before the private model learns from the data. ``strict=True``
# makes the fit refuse a pipeline that does.
accountant = BudgetAccountant(epsilon=10.0)
pipe = make_private_pipeline(
    encoder,
    DPLogisticRegression(epsilon=1.0, data_norm=bound, classes=["<=50K", ">50K"],
                         accountant=accountant,
                         random_state=0),  # fixed seed: docs only
    strict=True,
)
leaks = check_pipeline(pipe)
print("check_pipeline:", leaks)
assert leaks == []

pipe.fit(X_train, y_train)
print(f"accuracy at epsilon 1: {pipe.score(X_test, y_test):.3f}")
print(accountant)

# %%
# The encoded columns keep their names, so the private coefficients can be
# read against them (they are part of the private release).
names = pipe[:-1].get_feature_names_out()
coef = pipe[-1].coef_.ravel()
for i in abs(coef).argsort()[::-1][:6]:
    print(f"{names[i]:>35}  {coef[i]:+.2f}")

# %%
# Accuracy against epsilon
# ------------------------
# Every fit is charged to the same ledger. The non-private model uses the same
# encoding, as a reference; predicting the majority class gives about 76%.
epsilons = [0.1, 0.3, 1.0, 3.0]
scores = []
for i, eps in enumerate(epsilons):
    pipe.set_params(dplogisticregression__epsilon=eps,
                    dplogisticregression__random_state=i)  # fixed seed: docs only
    scores.append(pipe.fit(X_train, y_train).score(X_test, y_test))
    print(f"epsilon={eps:>4}: accuracy {scores[-1]:.3f}")
print(accountant)

reference = make_pipeline(make_table_encoder(numeric, categorical), LogisticRegression())
baseline = reference.fit(X_train, y_train).score(X_test, y_test)
majority = (y_test == "<=50K").mean()
print(f"non-private: {baseline:.3f}, majority class: {majority:.3f}")

fig, ax = plt.subplots(figsize=(6, 4))
ax.plot(epsilons, scores, "o-", label="DPLogisticRegression")
ax.axhline(baseline, color="C1", ls="--", label="non-private, same encoding")
ax.axhline(majority, color="k", ls=":", label="majority class")
ax.set_xscale("log")
ax.set_xlabel("epsilon")
ax.set_ylabel("test accuracy")
ax.set_title("Adult as a raw DataFrame, encoded from a declared schema")
ax.legend()
fig.tight_layout()
