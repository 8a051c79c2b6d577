"""How many rows: test error against the training-set size on Adult, at fixed epsilon.

The shape of Figures 4-5 of Chaudhuri et al. (2011) and Figure 2 of Chaudhuri
and Monteleoni (2008): error against n at a fixed epsilon. On each fold the
training rows are put in a random order and the fits at size ``n`` use the first
``n`` of them (nested subsamples); every fit is scored on the fold's test rows.

Rows, at each (n, epsilon):

* ``default``: ``DPLogisticRegression(epsilon=eps, classes=[0, 1])``;
* ``tuned``: ``DPGridSearch`` over :data:`bench_defaults.SEARCH_GRID` at the same
  total epsilon (private tuning at each n, as a user would);
* ``non-private``: scikit-learn's ``LogisticRegression()``.

A second table reports :meth:`dpsk.utility.LearningCurve.rows_needed`, computed by
:func:`dpsk.utility.learning_curve` on the first fold's training part (treated
as public data), for the accuracy targets 0.78 / 0.80 / 0.82.
"""

import argparse
import warnings

import numpy as np

from . import _common as C
from .bench_defaults import SEARCH_GRID

SIZES = (2_500, 5_000, 10_000, 20_000, 36_177)
EPSILONS = (0.1, 0.5, 1.0)
TARGETS = (0.78, 0.80, 0.82)


def _fit_rows(Xtr, ytr, Xte, yte, eps, seed):
    from sklearn.linear_model import LogisticRegression

    from dpsk import BudgetAccountant, DPGridSearch, DPLogisticRegression

    rows = {}
    model = DPLogisticRegression(epsilon=eps, classes=[0, 1], accountant=BudgetAccountant(),
                                 random_state=C.seed_for(seed, 1))
    rows["default"] = C.fit_and_score(model, Xtr, ytr, Xte, yte)
    search = DPGridSearch(DPLogisticRegression(classes=[0, 1]), SEARCH_GRID, epsilon=eps,
                          accountant=BudgetAccountant(), random_state=C.seed_for(seed, 2))
    rows["tuned"] = C.fit_and_score(search, Xtr, ytr, Xte, yte)
    rows["non-private"] = C.fit_and_score(LogisticRegression(max_iter=1000), Xtr, ytr, Xte,
                                          yte)
    return rows


def run(sizes, epsilons, n_folds, runs, seed):
    X, y = C.load_adult_data()
    folds = C.cv_folds(y, n_splits=n_folds, seed=seed)
    records = []
    tasks = [(k, n, eps, r) for k in range(n_folds) for n in sizes for eps in epsilons
             for r in range(runs)]
    orders = [np.random.default_rng(C.seed_for(seed, k)).permutation(len(train))
              for k, (train, _) in enumerate(folds)]
    for k, n, eps, r in C.progress(tasks, desc="learning curve"):
        train, test = folds[k]
        rows = train[orders[k][:min(n, len(train))]]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = _fit_rows(X[rows], y[rows], X[test], y[test], eps,
                            C.seed_for(seed, k, n, int(eps * 1e4), r))
        for row, (error, fit_time, status) in out.items():
            records.append(dict(n_train=len(rows), epsilon=eps, fold=k, run=r, row=row,
                                error=error, fit_time=fit_time, status=status))
    return records, (X, y, folds)


def rows_needed(X, y, folds, epsilons, seed):
    from dpsk import DPLogisticRegression
    from dpsk.utility import learning_curve

    train, _ = folds[0]
    curve = learning_curve(DPLogisticRegression(classes=[0, 1]), X[train], y[train],
                           epsilons=epsilons, n_draws=10, random_state=seed)
    return [(eps, target, curve.rows_needed(eps, target_accuracy=target))
            for eps in epsilons for target in TARGETS]


def summarize(records, needed):
    lines = ["Test error against training rows (mean over folds x runs)",
             f"{'row':12s} {'epsilon':>8s} " + " ".join(
                 f"{n:>9,d}" for n in sorted({r['n_train'] for r in records}))]
    for row in ("default", "tuned", "non-private"):
        for eps in sorted({r["epsilon"] for r in records}):
            cells = []
            for n in sorted({r["n_train"] for r in records}):
                errs = [r["error"] for r in records if r["row"] == row and r["epsilon"] == eps
                        and r["n_train"] == n and np.isfinite(r["error"])]
                cells.append(f"{np.mean(errs):9.4f}" if errs else f"{'-':>9s}")
            lines.append(f"{row:12s} {eps:8g} " + " ".join(cells))
            if row == "non-private":
                break
    lines.append("\nRows needed (learning_curve on the first fold's training part):")
    for eps, target, rec in needed:
        lines.append(f"  epsilon={eps:g}, accuracy >= {target:g}: {rec}")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks learning-curve",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="2 folds, 1 run, 3 sizes")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args(argv)
    C.set_quick(args.quick)
    sizes, epsilons = SIZES, EPSILONS
    if args.quick:
        args.folds, args.runs, sizes, epsilons = 2, 1, (2_500, 10_000, 22_611), (0.1, 1.0)
    C.limit_blas_threads()
    C.header("Learning curve on Adult: error against n at fixed epsilon")
    records, (X, y, folds) = run(sizes, epsilons, args.folds, args.runs, args.seed)
    needed = rows_needed(X, y, folds, epsilons, args.seed)
    print(summarize(records, needed))
    C.write_csv("learning_curve", records,
                columns=["n_train", "epsilon", "fold", "run", "row", "error", "fit_time",
                         "status"],
                comment_lines=[C.command_line(), C.machine_line()])
    return 0
