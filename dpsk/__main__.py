"""``python -m dpsk``: test error against epsilon on the embedded Adult data.

Trains the private models of Chaudhuri, Monteleoni and Sarwate (2011) on 80% of
Adult (their preprocessing) at several epsilons and prints the test error of
each next to non-private logistic regression, with the budget every run spent.
"""

import argparse
import sys
import time

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split

from . import BudgetAccountant, DPHuberSVM, DPLogisticRegression
from .datasets import load_adult

EPSILONS = (0.01, 0.05, 0.1, 0.5, 1.0)
# The regularisation the paper found best for each mechanism at epsilon = 0.1.
MODELS = {
    "logistic, objective": lambda eps, acc, seed: DPLogisticRegression(
        epsilon=eps, alpha=10**-2.5, fit_intercept=False, accountant=acc, random_state=seed,
        classes=[0, 1]),
    "logistic, output": lambda eps, acc, seed: DPLogisticRegression(
        epsilon=eps, alpha=1e-2, perturbation="output", fit_intercept=False, accountant=acc,
        random_state=seed, classes=[0, 1]),
    "huber SVM, objective": lambda eps, acc, seed: DPHuberSVM(
        epsilon=eps, alpha=10**-2.5, fit_intercept=False, accountant=acc, random_state=seed,
        classes=[0, 1]),
}


def main(argv=None):
    description = __doc__.split("\n")[0]
    parser = argparse.ArgumentParser(prog="python -m dpsk", description=description)
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

    baseline = LogisticRegression(C=1.0 / (n * 10**-2.5), fit_intercept=False, max_iter=1000)
    baseline.fit(X_train, y_train)
    print(f"non-private logistic regression: test error {1 - baseline.score(X_test, y_test):.4f}")
    majority_error = min(y_test.mean(), 1 - y_test.mean())
    print(f"majority class:                  test error {majority_error:.4f}")
    print()

    accountant = BudgetAccountant()
    header = f"{'model':<22}" + "".join(f"{'eps=' + format(e, 'g'):>10}" for e in EPSILONS)
    print("mean test error of private models over", args.repeats, "fits")
    print(header)
    start = time.perf_counter()
    rng = np.random.default_rng(args.seed)
    for name, make in MODELS.items():
        row = f"{name:<22}"
        for eps in EPSILONS:
            errors = []
            for _ in range(args.repeats):
                seed = int(rng.integers(2**32))
                model = make(eps, accountant, seed).fit(X_train, y_train)
                errors.append(1 - model.score(X_test, y_test))
            row += f"{np.mean(errors):>10.4f}"
        print(row, flush=True)
    eps_total, _ = accountant.total()
    print()
    print(f"{len(accountant.spends)} private fits spent epsilon = {eps_total:g} in total "
          f"(one BudgetAccountant; each fit's cost adds up) in "
          f"{time.perf_counter() - start:.1f} s.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
