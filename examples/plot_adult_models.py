"""
Error against epsilon on Adult for every model
==============================================

Every dpsk classifier that applies to the Adult census data, fitted on the same
training rows at several values of epsilon, against the non-private
scikit-learn models and against IBM's diffprivlib:

* :class:`~dpsk.DPLogisticRegression` with objective perturbation (pure
  epsilon, and ``(epsilon, 1e-6)`` with Gaussian noise) and with output
  perturbation;
* :class:`~dpsk.DPHuberSVM` (the Huber-smoothed hinge loss) with objective and
  output perturbation;
* :class:`~dpsk.DPKernelClassifier` (logistic regression on random Fourier
  features, objective perturbation).

**Where the diffprivlib numbers come from.** diffprivlib is not a dependency of
dpsk and is not installed to build these pages. Its curve is *read from the
committed file* ``benchmarks/results/diffprivlib.csv``, written by
``python -m benchmarks diffprivlib`` (``benchmarks/bench_diffprivlib.py``),
which runs ``diffprivlib.models.LogisticRegression`` (objective perturbation)
in its own virtual environment on the same preprocessed Adult data: stratified
10-fold cross-validation (seed 0), 3 noise draws per fold, no intercept,
``C = 1 / (n_train * alpha)``, i.e. the same objective as dpsk's ``alpha``. That
file also holds the benchmark's own dpsk objective-perturbation curve, drawn
here as a dotted line: both come from the benchmark run, averaged over
10 folds x 3 draws.

**The dpsk curves here come from this quick run**: one of the benchmark's ten
folds (fold 0 of the same split, about 40,700 training and 4,500 test rows),
2 noise draws per point, averaged (to keep the page quick). They are noisier
than the benchmark's, but on the same data and preprocessing. The protocol is
fixed before this run: the public regularisation ``alpha = 10**-2.5`` (one of
the benchmark's two values, the better one at epsilon >= 0.1 in the benchmark,
whose folds include these test rows, so it is an oracle choice as in the
paper's tables), no intercept for the linear models (as in the benchmark), and for the kernel model
``gamma = 1`` and 100 random features (the defaults; rows have norm at most 1,
so squared distances are at most 4 and ``gamma = 1`` makes the kernel vary
over that range) with its default intercept.

The ``random_state`` integers below make this page reproducible: a fixed seed
is for documentation only, never for a model you release.
"""

import csv
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold
from sklearn.svm import LinearSVC

from dpsk import BudgetAccountant, DPHuberSVM, DPKernelClassifier, DPLogisticRegression
from dpsk.datasets import load_adult

# %%
# The data and the split
# ----------------------
# The preprocessing of Chaudhuri et al. (2011): 105 features, every row scaled
# to norm at most 1. The split is fold 0 of the benchmark's stratified
# 10-fold cross-validation (``StratifiedKFold(10, shuffle=True,
# random_state=0)``, as in ``benchmarks/_common.py``).
X, y = load_adult(return_X_y=True, preprocess=True)
train, test = next(StratifiedKFold(n_splits=10, shuffle=True, random_state=0).split(X, y))
X_train, X_test, y_train, y_test = X[train], X[test], y[train], y[test]
n_train = len(y_train)
print(f"{n_train} training rows, {len(y_test)} test rows, {X.shape[1]} features")

# %%
# Non-private baselines
# ---------------------
# The same objectives without noise: scikit-learn's ``C`` is
# ``1 / (n_train * alpha)``. ``LinearSVC`` with the hinge loss is the
# non-private counterpart of the Huber SVM.
alpha = 10**-2.5
C = 1 / (n_train * alpha)
baselines = {
    "LogisticRegression": LogisticRegression(C=C, fit_intercept=False, max_iter=1000),
    "LinearSVC": LinearSVC(C=C, loss="hinge", fit_intercept=False, max_iter=10_000),
}
baseline_error = {
    name: 1 - model.fit(X_train, y_train).score(X_test, y_test)
    for name, model in baselines.items()
}

# %%
# Private fits
# ------------
# Every private fit is charged to one :class:`~dpsk.BudgetAccountant`.
accountant = BudgetAccountant()
common = dict(alpha=alpha, classes=[0, 1], accountant=accountant)
linear = dict(common, fit_intercept=False)
models = {
    "LogReg objective": lambda eps: DPLogisticRegression(epsilon=eps, **linear),
    "LogReg objective, delta=1e-6": lambda eps: DPLogisticRegression(
        epsilon=eps, delta=1e-6, **linear),
    "LogReg output": lambda eps: DPLogisticRegression(
        epsilon=eps, perturbation="output", **linear),
    "HuberSVM objective": lambda eps: DPHuberSVM(epsilon=eps, **linear),
    "HuberSVM output": lambda eps: DPHuberSVM(epsilon=eps, perturbation="output", **linear),
    "Kernel (RBF, 100 features)": lambda eps: DPKernelClassifier(
        epsilon=eps, gamma=1.0, n_components=100, **common),
}
epsilons = [0.05, 0.1, 0.3, 1.0, 10.0]
n_draws = 2
errors = {name: [] for name in models}
last_fit = {}  # the last fitted model of each kind
for name, make in models.items():
    for eps in epsilons:
        draws = []
        for draw in range(n_draws):
            model = make(eps).set_params(random_state=draw)  # fixed seed: docs only
            draws.append(1 - model.fit(X_train, y_train).score(X_test, y_test))
        errors[name].append(np.mean(draws))
    last_fit[name] = model

# %%
# The kernel model's non-private limit: the same objective, without noise, on
# the same design rows ``[cos(W x), sin(W x), 1] / sqrt(2)`` (the frequencies
# ``W`` of the last kernel fit above, which are public). It shows what 100
# random features at ``gamma = 1`` can reach on Adult at all.
W = last_fit["Kernel (RBF, 100 features)"].random_weights_
features = [np.hstack([np.cos(X_ @ W.T), np.sin(X_ @ W.T)]) / np.sqrt(len(W))
            for X_ in (X_train, X_test)]
Z_train, Z_test = (np.hstack([F, np.ones((len(F), 1))]) / np.sqrt(2) for F in features)
kernel_limit = LogisticRegression(C=C, fit_intercept=False, max_iter=1000)
baseline_error["LogisticRegression on the kernel's features"] = (
    1 - kernel_limit.fit(Z_train, y_train).score(Z_test, y_test))


# %%
# The benchmark's numbers
# -----------------------
# Read from the committed CSV. The example's ``__file__`` (set by
# sphinx-gallery too) locates the repository; its comment lines (``#``) record
# the command, machine and protocol of the run.
def find_results(filename="diffprivlib.csv"):
    """The committed benchmark results file, searched upwards from this example."""
    try:
        start = Path(__file__).resolve().parent
    except NameError:  # run interactively, e.g. as a notebook
        start = Path.cwd()
    for folder in (start, *start.parents):
        path = folder / "benchmarks" / "results" / filename
        if path.is_file():
            return path
    raise FileNotFoundError(f"benchmarks/results/{filename} not found above {start}")


def read_benchmark(path, log10_alpha):
    """{impl: (epsilons, mean errors)} at one alpha, from the benchmark's CSV."""
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(line for line in fh if not line.startswith("#")))
    curves = {}
    for row in rows:
        if float(row["log10_alpha"]) == log10_alpha:
            eps_list, err_list = curves.setdefault(row["impl"], ([], []))
            eps_list.append(float(row["epsilon"]))
            err_list.append(float(row["mean_error"]))
    return curves


benchmark = read_benchmark(find_results(), log10_alpha=np.log10(alpha))
# The benchmark also ran epsilon = 0.01; the plot keeps this example's range.
benchmark = {
    impl: tuple(zip(*[(e, err) for e, err in zip(*curve) if e >= min(epsilons)]))
    for impl, curve in benchmark.items()
}

# %%
# The plot
# --------
# Left: the logistic models, with diffprivlib and the benchmark's own dpsk
# curve (both from the CSV). Right: the Huber SVM and the kernel model.
fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.5), sharey=True)
for ax, names in (
    (left, [n for n in models if n.startswith("LogReg")]),
    (right, [n for n in models if not n.startswith("LogReg")]),
):
    for name in names:
        ax.semilogx(epsilons, errors[name], "o-", label=f"dpsk {name}")
for impl, style in (("diffprivlib", "s--"), ("dpsk objective", "k:")):
    eps_b, err_b = benchmark[impl]
    left.semilogx(eps_b, err_b, style, label=f"{impl} (benchmark CSV, 10 folds x 3)")
left.axhline(baseline_error["LogisticRegression"], color="k", ls="--",
             label="non-private LogisticRegression")
right.axhline(baseline_error["LinearSVC"], color="k", ls="--", label="non-private LinearSVC")
right.axhline(baseline_error["LogisticRegression on the kernel's features"], color="C2",
              ls=":", label="non-private, on the kernel's features")
left.set_ylabel("test error")
for ax, title in ((left, "logistic regression"), (right, "Huber SVM and kernel model")):
    ax.set_xlabel("epsilon")
    ax.set_title(f"Adult, alpha = 10^-2.5: {title}")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
fig.tight_layout()

# %%
# Reading the curves
# ------------------
# The benchmark's curves (10 folds x 3 draws) are the ones to compare
# implementations with: there dpsk's objective perturbation and diffprivlib's
# are within noise of each other at the same alpha, and output perturbation is
# clearly worse at epsilon 0.5 and below, with a much larger spread (a standard
# deviation of 0.14 over fits at epsilon 0.05).
#
# This quick run, one fold with 2 draws, is too noisy below epsilon 0.3 to rank
# the mechanisms; at 0.3 and 1 it shows objective perturbation ahead of output
# perturbation for both losses, and by 10 they meet. The Gaussian
# ``(epsilon, 1e-6)`` variant is the most accurate at small epsilon, for a
# small delta. The Huber SVM ends slightly below ``LinearSVC`` because its loss
# is not exactly the hinge loss. The kernel model stays around its non-private
# limit (dotted: the same objective without noise, on the frequencies of one
# draw; that limit itself moves by about a point from one draw of frequencies
# to another), which on Adult is worse than the linear models: 100 random
# features at ``gamma = 1`` do not capture more of Adult than its 105 linear
# features do, so a linear model is the better choice here.
#
# What the ledger recorded: every fit of this page, added up (basic
# composition). Releasing all these models would cost this much if each fit drew
# fresh noise (``random_state=None``, dpsk's default; the page reuses fixed
# seeds so that it prints the same numbers each time, and fits sharing a seed
# share their noise, which composition does not allow for). A real analysis
# fixes one model and one epsilon in advance.
total_epsilon, total_delta = accountant.total()
for name, err in baseline_error.items():
    print(f"non-private {name}: test error {err:.3f}")
print(f"{len(accountant.events)} private fits spent epsilon = {total_epsilon:.1f}, "
      f"delta = {total_delta:.1e}")
