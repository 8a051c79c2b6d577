"""``python -m dpsk``: test error against epsilon on the embedded Adult data.

See ``DESCRIPTION`` (what ``python -m dpsk --help`` prints, as plain text).
``python -m dpsk ledger show|export PATH-or-URL`` reads a stored ledger instead
(:mod:`dpsk.accounting._cli`).
"""

import argparse
import sys
import textwrap
import time

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split

from . import BudgetAccountant, DPHuberSVM, DPLogisticRegression
from ._optimize._binary import minimize_regularized_loss
from ._optimize._losses import HuberLoss
from .accounting import _cli
from .datasets import load_adult

EPSILONS = (0.01, 0.05, 0.1, 0.5, 1.0)
#: The regularisation (Lambda of the paper, scikit-learn's C = 1 / (n alpha)) that
#: Chaudhuri et al. (2011) found best for each mechanism at epsilon = 0.1.
ALPHA_OBJECTIVE = 10**-2.5
ALPHA_OUTPUT = 1e-2
MODELS = {
    "logistic, objective": (DPLogisticRegression, ALPHA_OBJECTIVE, "objective"),
    "logistic, output": (DPLogisticRegression, ALPHA_OUTPUT, "output"),
    "huber SVM, objective": (DPHuberSVM, ALPHA_OBJECTIVE, "objective"),
}
#: The non-private baseline's own choice of alpha is made on a validation split
#: of the training rows, over this grid (the paper's, without the two smallest).
NONPRIVATE_ALPHAS = tuple(10.0**e for e in (-7, -6, -5, -4, -3.5, -3, -2.5, -2, -1.5))

DESCRIPTION = """\
Test error against epsilon on the embedded Adult data.

Trains the private models of Chaudhuri, Monteleoni and Sarwate (2011) on 80% of
Adult (their preprocessing) at several epsilons and prints the test error of
each, with the budget all the runs spent. For reference it first prints the
non-private models at the private models' own alphas (the like-for-like
comparison: at these alphas the Huber loss beats the logistic loss, private or
not), and non-private logistic regression at the alpha that does best on a
validation split of the training rows (what a non-private model can reach).

To read a privacy ledger kept in a database instead:
python -m dpsk ledger show|export PATH-or-URL (see python -m dpsk ledger --help).
"""


def alpha_label(alpha):
    """'10^-2.5' for an alpha on the half-decade grid."""
    return f"10^{np.log10(alpha):g}"


def nonprivate_error(alpha, X_train, y_train, X_test, y_test, loss="logistic"):
    """Test error of the exact, noise-free minimiser at ``alpha``, without intercept.

    Logistic: scikit-learn's ``LogisticRegression(C=1 / (n alpha))``. Huber:
    dpsk's own solver on the Huber SVM objective (``h`` as ``DPHuberSVM``'s).
    """
    if loss == "huber":
        y_pm = np.where(y_train == 1, 1.0, -1.0)
        w = minimize_regularized_loss(HuberLoss(DPHuberSVM().h), X_train, y_pm, alpha,
                                      tol=1e-6).w
        return float(np.mean((X_test @ w > 0).astype(y_test.dtype) != y_test))
    model = LogisticRegression(C=1.0 / (X_train.shape[0] * alpha), fit_intercept=False,
                               max_iter=1000)
    return 1.0 - model.fit(X_train, y_train).score(X_test, y_test)


def best_nonprivate_alpha(X_train, y_train, seed):
    """The alpha of ``NONPRIVATE_ALPHAS`` with the lowest error on a 25% validation split."""
    X_fit, X_val, y_fit, y_val = train_test_split(
        X_train, y_train, test_size=0.25, random_state=seed, stratify=y_train)
    errors = [nonprivate_error(a, X_fit, y_fit, X_val, y_val) for a in NONPRIVATE_ALPHAS]
    return NONPRIVATE_ALPHAS[int(np.argmin(errors))]


def make_model(name, epsilon, accountant, seed):
    cls, alpha, perturbation = MODELS[name]
    # The paper's preprocessing gives every row norm at most 1: data_norm=1 is declared.
    return cls(epsilon=epsilon, alpha=alpha, perturbation=perturbation, fit_intercept=False,
               data_norm=1.0, accountant=accountant, random_state=seed, classes=[0, 1])


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["ledger"]:
        return _cli.main(argv[1:])
    parser = argparse.ArgumentParser(
        prog="python -m dpsk", description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3,
                        help="private fits averaged per cell (default 3)")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed for the split and the noise (reproducibility only)")
    args = parser.parse_args(argv)

    X, y = load_adult(return_X_y=True, preprocess=True)
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.2, random_state=args.seed, stratify=y)
    n = X_train.shape[0]
    print(f"UCI Adult (Becker and Kohavi, 1996; CC BY 4.0), paper preprocessing: "
          f"{n} training rows, {X_test.shape[0]} test rows, {X.shape[1]} features")
    print()

    print("test error of non-private models (no intercept; scikit-learn's C = 1 / (n alpha)):")
    best = best_nonprivate_alpha(X_train, y_train, args.seed)
    baselines = [
        ("logistic", ALPHA_OBJECTIVE, "the alpha of logistic, objective"),
        ("logistic", ALPHA_OUTPUT, "the alpha of logistic, output"),
        ("huber", ALPHA_OBJECTIVE, "the alpha of huber SVM, objective"),
        ("logistic", best, "best alpha on a validation split"),
    ]
    for loss, alpha, why in baselines:
        error = nonprivate_error(alpha, X_train, y_train, X_test, y_test, loss)
        setting = f"{loss:<9} alpha {alpha_label(alpha):<8} (C {1.0 / (n * alpha):.3g})"
        print(f"  {setting:<36} {why:<34} {error:.4f}")
    majority_error = min(y_test.mean(), 1 - y_test.mean())
    print(f"  {'majority class':<71} {majority_error:.4f}")
    print()

    accountant = BudgetAccountant()
    header = f"{'model':<22}{'alpha':>9}" + "".join(
        f"{'eps=' + format(e, 'g'):>10}" for e in EPSILONS)
    print("mean test error of private models over", args.repeats, "fits")
    print(header)
    start = time.perf_counter()
    rng = np.random.default_rng(args.seed)
    for name in MODELS:
        row = f"{name:<22}{alpha_label(MODELS[name][1]):>9}"
        for eps in EPSILONS:
            errors = []
            for _ in range(args.repeats):
                seed = int(rng.integers(2**32))
                model = make_model(name, eps, accountant, seed).fit(X_train, y_train)
                errors.append(1 - model.score(X_test, y_test))
            row += f"{np.mean(errors):>10.4f}"
        print(row, flush=True)
    eps_total, _ = accountant.total()
    print()
    print(f"{len(accountant.spends)} private fits spent epsilon = {eps_total:g} in total "
          f"(one BudgetAccountant; each fit's cost adds up) in "
          f"{time.perf_counter() - start:.1f} s.")
    print(ledger_note(len(MODELS), len(EPSILONS), args.repeats))
    return 0


def ledger_note(n_models, n_epsilons, repeats):
    """What the ledger's total means here (it is not any model's epsilon), wrapped."""
    return textwrap.fill(
        f"That total is the sum over all {n_models * n_epsilons * repeats} fits of this "
        f"demo ({n_models} models x {n_epsilons} epsilons x {repeats} repeats), as one "
        "ledger counts them on one data set; each model in the table spent only the "
        "epsilon of its column. On your data you would fit once, at the epsilon you "
        "chose.", 88)


if __name__ == "__main__":
    sys.exit(main())
