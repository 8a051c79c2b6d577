"""
DPGridSearch against GridSearchCV's true privacy cost
=====================================================

dpsk estimators work inside scikit-learn's
:class:`~sklearn.model_selection.GridSearchCV`, but tuning that way is
expensive: with ``m`` candidates and ``k`` folds it fits ``k * m`` models on
overlapping parts of the data, plus one refit on all of it, and every fit is a
release. A :class:`~dpsk.BudgetAccountant` shared by the estimators records
them all. Even that total understates the cost: GridSearchCV picks the
candidate with the best *exact* cross-validated score, a selection that reads
the validation folds without any noise and is not differentially private at
any epsilon.

:class:`~dpsk.model_selection.DPGridSearch` makes the whole search (selection
and released model included) cost the one ``epsilon`` it declares. We compare
both on Adult, at the same declared epsilon per fit and at the same total
spent. See :doc:`/grid_search` for the algorithms and their proofs.

The ``random_state`` integers make this page reproducible: a fixed seed is for
documentation only, never for a model you release.
"""

import importlib.util

import matplotlib.pyplot as plt
import numpy as np
from sklearn.model_selection import GridSearchCV, train_test_split

from dpsk import BudgetAccountant, DPLogisticRegression
from dpsk.datasets import load_adult
from dpsk.model_selection import DPGridSearch

X, y = load_adult(return_X_y=True, preprocess=True)
X_train, X_test, y_train, y_test = train_test_split(
    X, y, train_size=10_000, test_size=5_000, random_state=0, stratify=y
)
grid = {"alpha": [1e-1, 1e-2, 1e-3]}  # m = 3 candidates, fixed in advance
cv = 5  # GridSearchCV's default
n_fits = cv * len(grid["alpha"]) + 1  # fold fits and the refit


def grid_search_cv(epsilon, accountant, seed):
    """GridSearchCV over dpsk models that each spend ``epsilon``."""
    model = DPLogisticRegression(
        epsilon=epsilon, classes=[0, 1], accountant=accountant,
        random_state=seed,  # fixed seed: docs only
    )
    return GridSearchCV(model, grid, cv=cv).fit(X_train, y_train)


def dp_grid_search(epsilon, accountant, seed, method):
    """DPGridSearch whose whole search spends ``epsilon``."""
    search = DPGridSearch(
        DPLogisticRegression(classes=[0, 1]), grid, epsilon=epsilon, method=method,
        accountant=accountant, random_state=seed,  # fixed seed: docs only
    )
    return search.fit(X_train, y_train)


# %%
# Every model at epsilon 1
# ------------------------
# A user sets ``epsilon=1`` on the model and tunes it with GridSearchCV. The
# ledger records every fit: ``cv * m`` fold fits and the refit.
naive_ledger = BudgetAccountant(delta=1e-6)  # the delta only states tighter totals
naive = grid_search_cv(1.0, naive_ledger, seed=0)
naive_error = 1 - naive.score(X_test, y_test)
basic = naive_ledger.total()[0]
print(f"GridSearchCV: {len(naive_ledger.events)} ledger entries "
      f"({cv} folds x {len(grid['alpha'])} candidates + 1 refit), test error {naive_error:.3f}")
print(f"  basic composition:      epsilon = {basic:.2f}")
totals = {"GridSearchCV\n(basic)": basic}
advanced = naive_ledger.total("advanced")[0]
print(f"  advanced (KOV 2015):    epsilon = {advanced:.2f} at delta = 1e-6")
totals["GridSearchCV\n(advanced)"] = advanced
if importlib.util.find_spec("dp_accounting") is not None:  # optional extra
    pld = naive_ledger.total("pld")[0]
    print(f"  privacy loss dist.:     epsilon = {pld:.2f} at delta = 1e-6")
    totals["GridSearchCV\n(PLD)"] = pld

# %%
# What these totals mean. With independent noise in every fit
# (``random_state=None``, dpsk's default; this page fixes seeds only to print
# the same numbers each time) they are guarantees for the 16 fitted models
# together (5 folds x 3 candidates + the refit), counted as if every fit had
# read every row: the ledger does not know which rows a fit read. A changed row
# lies in one validation fold, so it is in the training data of ``(k - 1) * m +
# 1 = 13`` of the fits, and a count per row would give 13 instead of 16.
# Tighter composition does not help here: 16 releases at epsilon 1 are too few
# and too large for the advanced or PLD bounds (which grow like
# :math:`\sqrt{k}\,\varepsilon` for many small releases) to beat the sum.
#
# Neither number is the cost of the search. GridSearchCV also releases, without
# noise, which candidate won (``best_params_``, chosen on exact validation
# scores) and those scores themselves (``cv_results_``). One row can change the
# winner, so the search as a whole has no finite privacy guarantee: the ledger
# total is a lower bound on what it really costs.
#
# DPGridSearch with the same ``epsilon=1``, for the whole search, both methods:
errors = {"GridSearchCV": naive_error}
for method in ["random-stopping", "disjoint"]:
    ledger = BudgetAccountant()
    search = dp_grid_search(1.0, ledger, seed=0, method=method)
    errors[method] = 1 - search.score(X_test, y_test)
    totals[f"DPGridSearch\n({method})"] = ledger.total()[0]
    print(f"DPGridSearch({method}): {len(ledger.events)} ledger entry, "
          f"epsilon = {ledger.total()[0]:.2f}, chose {search.best_params_}, "
          f"test error {errors[method]:.3f}")

# %%
# At equal total spend
# --------------------
# Now give each approach the same total epsilon, as the ledger counts it:
# GridSearchCV's models get ``epsilon / 16`` each (its ledger total, still a
# lower bound on its cost because of the non-private selection), DPGridSearch
# gets ``epsilon`` for the whole search. Test errors are averaged over two
# seeds, so the curves are still noisy.
budgets = [0.5, 2.0, 10.0]
seeds = [0, 1]
curves = {"GridSearchCV": [], "random-stopping": [], "disjoint": []}
for total in budgets:
    runs = {name: [] for name in curves}
    for seed in seeds:
        ledger = BudgetAccountant(epsilon=total)  # refuses any fit past the total
        runs["GridSearchCV"].append(
            1 - grid_search_cv(total / n_fits, ledger, seed).score(X_test, y_test))
        for method in ["random-stopping", "disjoint"]:
            ledger = BudgetAccountant(epsilon=total)
            search = dp_grid_search(total, ledger, seed, method)
            runs[method].append(1 - search.score(X_test, y_test))
    for name in curves:
        curves[name].append(np.mean(runs[name]))
    print(f"total epsilon {total:>4}: " + ", ".join(
        f"{name} {curves[name][-1]:.3f}" for name in curves))

# %%
# Left: what each approach spends when every model is declared at epsilon 1
# (GridSearchCV's bars are lower bounds: its selection is not private). Right:
# test error at equal total spend. Predicting the majority class gives an
# error of about 0.25.
fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
names = list(totals)
colors = ["tab:red" if name.startswith("GridSearchCV") else "tab:blue" for name in names]
bars = left.bar(range(len(names)), [totals[n] for n in names], color=colors)
bar_errors = [errors["GridSearchCV"] if name.startswith("GridSearchCV")
              else errors[name.split("(")[1].rstrip(")")] for name in names]
left.bar_label(bars, [f"{totals[n]:.1f}\nerror {e:.3f}" for n, e in zip(names, bar_errors)],
               fontsize=8)
left.set_xticks(range(len(names)), names, fontsize=8)
left.set_ylim(0, 1.2 * max(totals.values()))
left.set_ylabel("total epsilon spent (ledger)")
left.set_title("epsilon = 1 per model (GridSearchCV) or per search")

right.semilogx(budgets, curves["GridSearchCV"], "o-", color="tab:red",
               label=f"GridSearchCV, {n_fits} fits at epsilon / {n_fits}")
right.semilogx(budgets, curves["random-stopping"], "s-", color="tab:blue",
               label="DPGridSearch, random-stopping")
right.semilogx(budgets, curves["disjoint"], "^-", color="tab:cyan",
               label="DPGridSearch, disjoint")
right.set_xlabel("total epsilon spent (ledger, basic composition)")
right.set_ylabel("test error")
right.set_title("Adult, 10,000 training rows, 3 values of alpha")
right.legend(fontsize=8)
fig.tight_layout()
