"""Private tuning at equal total cost: disjoint parts (Algorithm 4) vs random stopping.

``python -m benchmarks tuning [--quick] [--reps R] [--seed N] [--jobs J]``

Adult (``load_adult(return_X_y=True, preprocess=True)``), logistic regression
without intercept, two grids:

* ``alpha``: the five alphas of ``bench_grid_search`` (10^-1 ... 10^-5),
  objective perturbation (m = 5);
* ``alpha x perturbation``: the same alphas x {objective, output} (m = 10).

For each total epsilon in {0.5, 1, 2} and each repetition (a random 80/20
split, shared by every method of that repetition), the test error of:

* ``disjoint``: ``DPGridSearch(method="disjoint", epsilon=eps)``;
* ``disjoint_refit``: ``method="disjoint", refit=True, epsilon=eps/2`` (total eps);
* ``stopping``: ``DPGridSearch(method="random-stopping", epsilon=eps)`` with the
  default ``stop_probability = 1/(10 m)`` and ``validation_fraction = 0.1``;
* ``stopping_refit``: ``method="random-stopping", refit=True, epsilon=eps/2``;
* ``best`` / ``worst``: every candidate trained once on all the training rows at
  ``eps``, best and worst test error (an oracle: choosing it needs the test set).

Every number is a mean over repetitions with fresh seeds. The full run writes
``benchmarks/results/tuning.csv``; ``--quick`` (1 repetition, epsilon 1) writes
``tuning_quick.csv`` and never overwrites the committed results.
"""

import argparse
import time

import numpy as np

from . import _common as C

ALPHAS = [10.0**-k for k in range(1, 6)]  # as benchmarks/bench_grid_search.py
EPSILONS = (0.5, 1.0, 2.0)
GRIDS = {
    "alpha": {"alpha": ALPHAS},
    "alpha x perturbation": {"alpha": ALPHAS, "perturbation": ["objective", "output"]},
}
METHODS = ("disjoint", "disjoint_refit", "stopping", "stopping_refit")
COLUMNS = ("grid", "epsilon", "rep", *METHODS, "best", "worst", "stopping_choice",
           "disjoint_choice", "seconds_stopping", "seconds_disjoint")

_DATA = {}


def _data():
    if not _DATA:
        _DATA["X"], _DATA["y"] = C.load_adult_data()
    return _DATA["X"], _DATA["y"]


def _seed(*parts):
    return int(np.random.SeedSequence([int(p) for p in parts]).generate_state(1)[0] >> 1)


def _error(model, X, y):
    return float(np.mean(model.predict(X) != y))


def _search(grid, method, epsilon, refit, seed):
    from dpsk import BudgetAccountant, DPLogisticRegression
    from dpsk.model_selection import DPGridSearch

    base = DPLogisticRegression(fit_intercept=False, perturbation="objective", classes=[0, 1])
    return DPGridSearch(base, grid, epsilon=epsilon, refit=refit, method=method,
                        accountant=BudgetAccountant(), random_state=seed)


def _cell(grid_name, epsilon, rep, seed):
    """One (grid, epsilon, repetition): every method on the same 80/20 split."""
    from sklearn.model_selection import ParameterGrid

    from dpsk import BudgetAccountant, DPLogisticRegression

    X, y = _data()
    perm = np.random.default_rng(_seed(seed, rep)).permutation(len(y))
    n_test = len(y) // 5
    test, train = perm[:n_test], perm[n_test:]
    X_tr, y_tr, X_te, y_te = X[train], y[train], X[test], y[test]
    grid = GRIDS[grid_name]
    eid = int(round(epsilon * 100))
    gid = list(GRIDS).index(grid_name)
    row = {"grid": grid_name, "epsilon": epsilon, "rep": rep}
    for k, name in enumerate(METHODS):
        method = "disjoint" if name.startswith("disjoint") else "random-stopping"
        refit = name.endswith("refit")
        t0 = time.perf_counter()
        search = _search(grid, method, epsilon / 2 if refit else epsilon, refit,
                         _seed(seed, rep, gid, eid, k)).fit(X_tr, y_tr)
        assert search.privacy_spent_ == (epsilon, 0.0)
        row[name] = _error(search, X_te, y_te)
        if not refit:
            key = "stopping" if method == "random-stopping" else "disjoint"
            row[f"{key}_choice"] = " ".join(f"{v}" for v in search.best_params_.values())
            row[f"seconds_{key}"] = time.perf_counter() - t0
    errors = []
    for j, params in enumerate(ParameterGrid(grid)):
        model = DPLogisticRegression(fit_intercept=False, classes=[0, 1], epsilon=epsilon,
                                     accountant=BudgetAccountant(),
                                     random_state=_seed(seed, rep, gid, eid, 100 + j),
                                     **{"perturbation": "objective", **params})
        errors.append(_error(model.fit(X_tr, y_tr), X_te, y_te))
    row["best"], row["worst"] = min(errors), max(errors)
    return row


def summarize(rows):
    out = []
    for grid_name in GRIDS:
        for epsilon in sorted({r["epsilon"] for r in rows}):
            sel = [r for r in rows if r["grid"] == grid_name and r["epsilon"] == epsilon]
            if not sel:
                continue
            s = {"grid": grid_name, "epsilon": epsilon, "reps": len(sel)}
            for col in (*METHODS, "best", "worst"):
                mean, std, _ = C.mean_std([r[col] for r in sel])
                s[col] = f"{mean:.4f} +- {std:.4f}"
            out.append(s)
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks tuning",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="1 repetition at epsilon 1; writes tuning_quick.csv")
    parser.add_argument("--reps", type=int, default=None, help="repetitions (default 10)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    args = parser.parse_args(argv)
    C.limit_blas_threads()
    reps = args.reps or (1 if args.quick else 10)
    epsilons = (1.0,) if args.quick else EPSILONS

    C.header("Private tuning on Adult: disjoint (Algorithm 4) vs random stopping, "
             "equal total epsilon")
    start = time.perf_counter()
    tasks = [(g, e, r, args.seed) for g in GRIDS for e in epsilons for r in range(reps)]
    rows = C.run_tasks(_cell, tasks, n_jobs=args.jobs, desc="tuning")
    elapsed = time.perf_counter() - start
    table = summarize(rows)
    print(C.format_table(table, ["grid", "epsilon", "reps", *METHODS, "best", "worst"]))
    name = "tuning_quick" if args.quick else "tuning"
    path = C.write_csv(name, rows, COLUMNS, comment_lines=[
        C.command_line(), C.machine_line(),
        f"{reps} repetitions x 80/20 split, epsilon = total cost of each method; "
        f"wall time {elapsed:.0f} s"])
    print(f"wrote {path} ({elapsed:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
