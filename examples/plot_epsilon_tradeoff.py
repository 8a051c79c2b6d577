"""
Test error against epsilon on Adult
===================================

How much accuracy does privacy cost? We fit :class:`~dpsk.DPLogisticRegression`
with objective perturbation on the Adult census data at several values of
epsilon, once with pure epsilon-DP (``delta=0``, Gamma-norm noise) and once
with ``(epsilon, 1e-6)``-DP (Gaussian noise, whose norm grows like the square
root of the number of features instead of linearly), and compare with the
non-private scikit-learn model. Every fit is charged to one
:class:`~dpsk.BudgetAccountant`, which reports the total spent at the end.

The ``random_state`` integers below make this page reproducible: a fixed seed
is for documentation only, never for a model you release.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split

from dpsk import BudgetAccountant, DPLogisticRegression
from dpsk.datasets import load_adult

# %%
# The data: 105 features, rows scaled to norm at most 1 by the preprocessing
# of Chaudhuri et al. (2011). We keep 15,000 rows so the page builds quickly.
X, y = load_adult(return_X_y=True, preprocess=True)
X_train, X_test, y_train, y_test = train_test_split(
    X, y, train_size=10_000, test_size=5_000, random_state=0, stratify=y
)

# %%
# The non-private baseline, at the same regularisation (scikit-learn's ``C``
# is ``1 / (n_samples * alpha)``).
alpha = 1e-3
baseline = LogisticRegression(C=1 / (len(y_train) * alpha), max_iter=1000)
baseline_error = 1 - baseline.fit(X_train, y_train).score(X_test, y_test)

# %%
# Private fits, all charged to one ledger.
accountant = BudgetAccountant()
epsilons = [0.05, 0.1, 0.2, 0.5, 1.0, 2.0]
errors = {0.0: [], 1e-6: []}
for delta in errors:
    for i, eps in enumerate(epsilons):
        model = DPLogisticRegression(
            epsilon=eps, delta=delta, alpha=alpha, classes=[0, 1],
            accountant=accountant, random_state=i,  # fixed seed: docs only
        )
        errors[delta].append(1 - model.fit(X_train, y_train).score(X_test, y_test))

fig, ax = plt.subplots(figsize=(6, 4))
ax.semilogx(epsilons, errors[0.0], "o-", label=r"pure $\epsilon$-DP")
ax.semilogx(epsilons, errors[1e-6], "s-", label=r"$(\epsilon, 10^{-6})$-DP")
ax.axhline(baseline_error, color="k", ls="--", label="non-private")
ax.set_xlabel("epsilon")
ax.set_ylabel("test error")
ax.set_title("DPLogisticRegression on Adult (objective perturbation)")
ax.legend()
fig.tight_layout()

# %%
# What the ledger recorded: the sum of every fit's epsilon and delta (basic
# composition). One noise draw per epsilon: the curves are noisy, see
# :doc:`/auto_examples/plot_choosing_epsilon` for bands.
total_epsilon, total_delta = accountant.total()
print(f"non-private test error: {baseline_error:.3f}")
print(f"{len(accountant.events)} fits spent epsilon = {total_epsilon:.2f}, "
      f"delta = {total_delta:.1e}")
print(f"sum of the epsilons: {2 * np.sum(epsilons):.2f}")
