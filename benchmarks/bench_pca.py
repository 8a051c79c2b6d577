"""Private PCA before a private linear model, on a wide table: scikit-learn's digits.

Every method sees the same rows, scaled to unit L2 norm (``Normalizer``: row by
row, no statistic of the data), on the same stratified folds, at the same
total ``(epsilon, delta)``:

* ``DPLR``: ``DPLogisticRegression`` alone, at ``(epsilon, 0)`` (its default,
  pure) and at ``(epsilon, delta)``;
* ``DPPCA+DPLR``: ``DPPCA`` at ``(epsilon / 2, delta / 2)`` then the model at
  ``(epsilon / 2, delta / 2)``, one ledger; ``n_components="auto"`` and fixed
  5 and 10 for reference;
* the majority class, and non-private ``LogisticRegression`` with and without
  ``PCA`` (references, not private).

Ten declared classes; ``delta = 1e-5``. A second part, ``wide``, runs the
Gaussian methods on a generated wide table whose classes differ in a few
directions (``wide_family``: 12,500 rows, 100 columns, 4 classes whose means
lie in a 4-dimensional subspace, isotropic noise; 10,000 rows to train, the
rest to test, 3 draws), with ``DPPCA`` told the true rank as a reference.
Error rates (mean and standard error over the folds or draws) go to
``benchmarks/results/pca.csv``.
"""

import argparse
import time
import warnings

import numpy as np

from . import _common as C

NAME = "pca"
EPSILONS = (1.0, 2.0)
DELTA = 1e-5


def _methods(epsilon, classes, seed, rank=None):
    from sklearn.decomposition import PCA
    from sklearn.dummy import DummyClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import Normalizer

    from dpsk import BudgetAccountant, DPLogisticRegression
    from dpsk.pipeline import make_private_pipeline
    from dpsk.preprocessing import DPPCA

    def dplr(eps, delta):
        return DPLogisticRegression(epsilon=eps, delta=delta, classes=classes,
                                    accountant=BudgetAccountant(), random_state=seed)

    def pipe(k, delta):
        ledger = BudgetAccountant()
        return make_private_pipeline(
            Normalizer(),
            DPPCA(n_components=k, epsilon=epsilon / 2, delta=delta / 2, accountant=ledger,
                  random_state=seed),
            DPLogisticRegression(epsilon=epsilon / 2, delta=delta / 2, classes=classes,
                                 accountant=ledger, random_state=seed + 1))

    return {
        "majority": lambda: DummyClassifier(),
        "LogisticRegression (non-private)": lambda: make_pipeline(
            Normalizer(), LogisticRegression(max_iter=2000)),
        "PCA(10)+LogisticRegression (non-private)": lambda: make_pipeline(
            Normalizer(), PCA(10), LogisticRegression(max_iter=2000)),
        "DPLR pure": lambda: make_pipeline(Normalizer(), dplr(epsilon, 0.0)),
        f"DPLR delta={DELTA:g}": lambda: make_pipeline(Normalizer(), dplr(epsilon, DELTA)),
        "DPPCA(auto)+DPLR pure": lambda: pipe("auto", 0.0),
        f"DPPCA(auto)+DPLR delta={DELTA:g}": lambda: pipe("auto", DELTA),
        f"DPPCA(5)+DPLR delta={DELTA:g}": lambda: pipe(5, DELTA),
        f"DPPCA(10)+DPLR delta={DELTA:g}": lambda: pipe(10, DELTA),
        "rank": lambda: pipe(rank, DELTA),
    }


def wide_family(n, d, n_classes, rank, seed):
    """Rows ``latent @ basis.T + noise``: class means in a random ``rank``-dim subspace."""
    rng = np.random.default_rng(seed)
    basis = np.linalg.qr(rng.normal(size=(d, rank)))[0]
    means = rng.normal(size=(n_classes, rank))
    y = rng.integers(0, n_classes, size=n)
    X = (means[y] + rng.normal(size=(n, rank))) @ basis.T + rng.normal(size=(n, d)) * 0.3
    return X, y


def _wide_methods(methods, rank):
    keep = ("LogisticRegression (non-private)", f"DPLR delta={DELTA:g}",
            f"DPPCA(auto)+DPLR delta={DELTA:g}")
    out = {name: methods[name] for name in keep}
    out[f"DPPCA(true rank)+DPLR delta={DELTA:g}"] = methods["rank"]
    return out


def _evaluate(records, part, methods, X_train, y_train, X_test, y_test, **cell):
    for name, make in methods.items():
        model = make()
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(X_train, y_train)
        error = float(np.mean(model.predict(X_test) != y_test))
        k = getattr(model[-2], "n_components_", "") if hasattr(model, "steps") else ""
        records.append({"part": part, "method": name, **cell, "error": error,
                        "n_components": k, "fit_time": time.perf_counter() - start})


def run_wide(n_draws, seed, epsilons, n=12500, n_train=10000, d=100, n_classes=4, rank=4):
    records = []
    for draw in range(n_draws):
        X, y = wide_family(n, d, n_classes, rank, C.seed_for(seed, draw, 17))
        for epsilon in epsilons:
            cell_seed = C.seed_for(seed, draw, int(epsilon * 1000), 17)
            methods = _methods(epsilon, list(range(n_classes)), cell_seed, rank=rank)
            _evaluate(records, "wide", _wide_methods(methods, rank), X[:n_train],
                      y[:n_train], X[n_train:], y[n_train:], epsilon=epsilon, fold=draw)
    return records


def run(n_splits, seed, epsilons):
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    classes = list(range(10))
    records = []
    for fold, (train, test) in enumerate(C.cv_folds(y, n_splits=n_splits, seed=seed)):
        for epsilon in epsilons:
            cell_seed = C.seed_for(seed, fold, int(epsilon * 1000))
            methods = _methods(epsilon, classes, cell_seed)
            methods.pop("rank")
            _evaluate(records, "digits", methods, X[train], y[train], X[test], y[test],
                      epsilon=epsilon, fold=fold)
    return records


def summarize(records):
    rows = []
    for part in dict.fromkeys(r["part"] for r in records):
        these = [r for r in records if r["part"] == part]
        for name in dict.fromkeys(r["method"] for r in these):
            for epsilon in sorted({r["epsilon"] for r in these}):
                cell = [r for r in these if r["method"] == name and r["epsilon"] == epsilon]
                mean, sd, count = C.mean_std([r["error"] for r in cell])
                ks = sorted({r["n_components"] for r in cell if r["n_components"] != ""})
                rows.append({"part": part, "method": name, "epsilon": epsilon,
                             "error": mean, "se": sd / np.sqrt(count),
                             "k": ",".join(map(str, ks))})
    return C.format_table(rows, ["part", "method", "epsilon", "error", "se", "k"])


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks pca", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="2 folds, epsilon 1")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--splits", type=int, default=5)
    parser.add_argument("--draws", type=int, default=3, help="draws of the wide table")
    args = parser.parse_args(argv)
    C.set_quick(args.quick)
    epsilons = EPSILONS
    if args.quick:
        args.splits, args.draws, epsilons = 2, 1, (1.0,)
    C.limit_blas_threads()
    C.header("DPPCA + DPLogisticRegression vs DPLogisticRegression alone: digits, wide table")
    records = run(args.splits, args.seed, epsilons) + run_wide(args.draws, args.seed, epsilons)
    print(summarize(records))
    C.write_csv(NAME, records,
                columns=["part", "method", "epsilon", "fold", "error", "n_components",
                         "fit_time"],
                comment_lines=[C.command_line(), C.machine_line()])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
