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

``--default-grid``: where the default search (``param_grid=None``) wins and loses.
On cells ``data:epsilon:delta`` of ``python -m benchmarks defaults`` (its data
sets and folds), the test error of the untuned rule at ``epsilon``; of the rule
at the search's per-run epsilon on the search's training rows (``rule at
eps0``: the search without its selection, what the selection costs); and of
the default search with the shipped settings and with variants of its grid
(:data:`DEFAULT_GRID_VARIANTS`: multipliers, ``E[K]``, validation fraction; set
through the module constants, for this diagnosis only). Writes
``results/tuning_default_grid.csv``.
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


#: name: (multipliers of the rule's alpha, E[K] per candidate or None for the
#: shipped default, validation_fraction).
DEFAULT_GRID_VARIANTS = {
    "shipped (1/3,1,3)": (None, None, 0.1),
    "(1/9,1/3,1,3,9) E=1.5m": ((1 / 9, 1 / 3, 1.0, 3.0, 9.0), 1.5, 0.1),
    "(1/2,1,2)": ((0.5, 1.0, 2.0), None, 0.1),
    "(1/3,1,3) E=1.5m": ((1 / 3, 1.0, 3.0), 1.5, 0.1),
    "(1/3,1,3) v=0.2": ((1 / 3, 1.0, 3.0), None, 0.2),
}
DEFAULT_GRID_CELLS = ("adult:0.5:0", "adult:1:1e-6", "adult:0.1:1e-6", "dense-small:0.1:1e-6",
                      "dense-small:1:0", "imbalanced:2:0", "sparse-wide:1:0",
                      "sparse-wide:0.5:1e-6")


def _default_grid_cell(name, eps, delta, fold, seed):
    """Errors of the rule, the rule at the search's eps0, and every search variant."""
    from dpsk import BudgetAccountant, DPLogisticRegression
    from dpsk.model_selection import DPGridSearch, _repeat, _search

    from .bench_defaults import load

    X, y = load(name, 0)
    train, test = C.cv_folds(y, n_splits=5, seed=0)[fold % 5]
    Xtr, ytr, Xte, yte = X[train], y[train], X[test], y[test]

    def error(model):
        return float(np.mean(model.fit(Xtr, ytr).predict(Xte) != yte))

    def rule(epsilon, key):
        return DPLogisticRegression(epsilon=epsilon, delta=delta, classes=[0, 1],
                                    accountant=BudgetAccountant(),
                                    random_state=C.seed_for(seed, key))

    row = {"dataset": name, "epsilon": eps, "delta": delta, "fold": fold}
    row["rule"] = error(rule(eps, 1))
    shipped = (_search.DEFAULT_ALPHA_MULTIPLIERS, _repeat.RUNS_PER_CANDIDATE,
               _repeat.MIN_MEAN_RUNS)
    try:
        for k, (variant, (multipliers, per_candidate, fraction)) in enumerate(
                DEFAULT_GRID_VARIANTS.items()):
            if multipliers is not None:
                _search.DEFAULT_ALPHA_MULTIPLIERS = multipliers
            if per_candidate is not None:
                _repeat.RUNS_PER_CANDIDATE, _repeat.MIN_MEAN_RUNS = per_candidate, 1.0
            search = DPGridSearch(DPLogisticRegression(delta=delta, classes=[0, 1]),
                                  epsilon=eps, delta=delta, validation_fraction=fraction,
                                  accountant=BudgetAccountant(),
                                  random_state=C.seed_for(seed, 10 + k))
            row[variant] = error(search)
            if k == 0:  # the shipped search's own per-run epsilon and rows
                eps0 = search.best_estimator_.epsilon
                n_val = int(round(fraction * len(ytr)))
                rows = np.random.default_rng(C.seed_for(seed, 2)).permutation(len(ytr))
                keep = rows[n_val:]
                row["rule at eps0"] = float(np.mean(
                    rule(eps0, 2).fit(Xtr[keep], ytr[keep]).predict(Xte) != yte))
            (_search.DEFAULT_ALPHA_MULTIPLIERS, _repeat.RUNS_PER_CANDIDATE,
             _repeat.MIN_MEAN_RUNS) = shipped
    finally:
        (_search.DEFAULT_ALPHA_MULTIPLIERS, _repeat.RUNS_PER_CANDIDATE,
         _repeat.MIN_MEAN_RUNS) = shipped
    return row


def default_grid(cells, reps, seed, jobs):
    """The ``--default-grid`` diagnosis; prints mean errors (standard errors) per cell."""
    parsed = [(c.split(":")[0], float(c.split(":")[1]), float(c.split(":")[2])) for c in cells]
    tasks = [(n, e, d, r, C.seed_for(seed, r, int(e * 100), int(d > 0), i))
             for i, (n, e, d) in enumerate(parsed) for r in range(reps)]
    rows = C.run_tasks(_default_grid_cell, tasks, n_jobs=jobs, desc="default grid")
    columns = ["rule", "rule at eps0", *DEFAULT_GRID_VARIANTS]
    table = []
    for n, e, d in parsed:
        sel = [r for r in rows if (r["dataset"], r["epsilon"], r["delta"]) == (n, e, d)]
        out = {"cell": f"{n} eps={e:g} delta={d:g}"}
        for col in columns:
            values = [r[col] for r in sel]
            se = np.std(values, ddof=1) / np.sqrt(len(values)) if len(values) > 1 else 0.0
            out[col] = f"{np.mean(values):.4f} ({se:.4f})"
        table.append(out)
    print(C.format_table(table, ["cell", *columns]))
    return rows, ["dataset", "epsilon", "delta", "fold", *columns]


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks tuning",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="1 repetition at epsilon 1; writes tuning_quick.csv")
    parser.add_argument("--reps", type=int, default=None, help="repetitions (default 10)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--default-grid", action="store_true",
                        help="where the default search wins and loses (see above)")
    parser.add_argument("--cells", nargs="+", default=list(DEFAULT_GRID_CELLS),
                        help="--default-grid cells, data:epsilon:delta")
    args = parser.parse_args(argv)
    C.limit_blas_threads()
    if args.default_grid:
        start = time.perf_counter()
        rows, columns = default_grid(args.cells, args.reps or (2 if args.quick else 8),
                                     args.seed, args.jobs)
        path = C.write_csv("tuning_default_grid", rows, columns, comment_lines=[
            C.command_line(), C.machine_line(),
            f"wall time {time.perf_counter() - start:.0f} s"])
        print(f"wrote {path}")
        return 0
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
