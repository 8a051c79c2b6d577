"""Private tuning for every mechanism: repeat-and-select vs the older methods.

``python -m benchmarks repeat [--quick] [--reps R] [--seed N] [--jobs J]``

Data: Adult (``load_adult(return_X_y=True, preprocess=True)``) and two
generated families, each row scaled to norm <= 1: ``linear`` (a logistic model
in 20 dimensions, 20,000 rows) and ``sparse-signal`` (100 dimensions, 5
informative, label noise 10%, 20,000 rows). For each total epsilon in {0.1,
0.5, 1, 2}, total delta 1e-6, and each repetition (a random 80/20 split, shared
by every method), the test error of:

* ``disjoint``: ``DPGridSearch(method="disjoint")``, pure grid (alpha, m = 5);
* ``stopping``: ``method="random-stopping"``, pure grid;
* ``repeat_pure``: ``method="repeat", delta=1e-6``, pure grid;
* ``repeat_all``: ``method="repeat", delta=1e-6`` on the grid alpha x
  {pure objective, Gaussian objective, noisy gradient descent} (m = 15);
* ``repeat_gauss5``: ``method="repeat"``, 5 alphas of Gaussian objective perturbation;
* ``default``: the untuned ``DPLogisticRegression(epsilon, delta=1e-6)``
  (Gaussian objective perturbation, ``alpha="auto"``) at the whole budget;
* ``oracle``: the best of the 15 candidates trained once on all training rows
  at the whole ``(epsilon, 1e-6)`` (chosen on the test set: not private).

And the wall time of ``repeat_gauss5`` (a 5-candidate search) over the mean
time of one fit of its candidates on the same rows (``time_ratio``).
``--quick``: 1 repetition at epsilon 1, Adult only.

``--timing``: wall time only. For each data set, epsilon in {0.1, 1} and
repetition, the search's time over the time of one fit of the untuned
``DPLogisticRegression(epsilon, delta)`` on the same rows, for the default
search (``DPGridSearch(DPLogisticRegression(delta=...))``, no grid, 3
candidates) and a 5-candidate alpha grid (``ALPHAS``), pure and ``delta=1e-6``;
median and mean ratio per search (``results/repeat_timing.csv``). The law of the
number of runs ``K`` has a heavy tail, so the mean of a few dozen searches is a
noisy estimate of the mean time; the time is affine in ``K``, so each search is
also timed once with ``K`` forced to ``E[K]`` (``ratio_at_mean_K``, a benchmark
hook only): that is the mean time over the law of ``K``, without its sampling noise.
"""

import argparse
import time

import numpy as np

from . import _common as C

ALPHAS = [10.0**-k for k in range(1, 6)]
EPSILONS = (0.1, 0.5, 1.0, 2.0)
DELTA = 1e-6
DATASETS = ("adult", "linear", "sparse-signal")
MECHANISMS = {"pure": {"perturbation": "objective", "delta": 0.0},
              "gauss-objective": {"perturbation": "objective", "delta": DELTA},
              "gradient": {"perturbation": "gradient", "delta": DELTA}}
METHODS = ("disjoint", "stopping", "repeat_pure", "repeat_gauss5", "repeat_all", "default")
COLUMNS = ("data", "epsilon", "rep", *METHODS, "oracle", "repeat_all_choice",
           "seconds_search", "seconds_one_fit", "time_ratio")

_DATA = {}


def _generated(name, seed=12345):
    rng = np.random.default_rng(seed)
    n = 20000
    if name == "linear":
        d = 20
        X = rng.standard_normal((n, d))
        w = rng.standard_normal(d)
        p = 1.0 / (1.0 + np.exp(-(X @ w) / 2.0))
        y = (rng.random(n) < p).astype(int)
    else:
        d = 100
        X = rng.standard_normal((n, d))
        y = (X[:, :5].sum(axis=1) > 0).astype(int)
        flip = rng.random(n) < 0.1
        y[flip] = 1 - y[flip]
    X /= np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1.0)
    return X, y


def _data(name):
    if name not in _DATA:
        _DATA[name] = C.load_adult_data() if name == "adult" else _generated(name)
    return _DATA[name]


def _seed(*parts):
    return int(np.random.SeedSequence([int(p) for p in parts]).generate_state(1)[0] >> 1)


def _error(model, X, y):
    return float(np.mean(model.predict(X) != y))


def _base(**params):
    from dpsk import DPLogisticRegression

    return DPLogisticRegression(fit_intercept=False, classes=[0, 1], **params)


def _search(grid, method, epsilon, seed, delta=None, base=None):
    from dpsk import BudgetAccountant
    from dpsk.model_selection import DPGridSearch

    return DPGridSearch(base if base is not None else _base(), grid, epsilon=epsilon,
                        method=method, delta=delta, accountant=BudgetAccountant(),
                        random_state=seed)


def _cell(data, epsilon, rep, seed):
    from dpsk import BudgetAccountant

    X, y = _data(data)
    perm = np.random.default_rng(_seed(seed, rep)).permutation(len(y))
    n_test = len(y) // 5
    test, train = perm[:n_test], perm[n_test:]
    X_tr, y_tr, X_te, y_te = X[train], y[train], X[test], y[test]
    did, eid = DATASETS.index(data), int(round(epsilon * 100))
    row = {"data": data, "epsilon": epsilon, "rep": rep}
    alpha_grid = {"alpha": ALPHAS}
    full_grid = [{"alpha": ALPHAS, "perturbation": [m["perturbation"]], "delta": [m["delta"]]}
                 for m in MECHANISMS.values()]
    gauss = _base(perturbation="objective", delta=DELTA)
    runs = {
        "disjoint": lambda s: _search(alpha_grid, "disjoint", epsilon, s),
        "stopping": lambda s: _search(alpha_grid, "random-stopping", epsilon, s),
        "repeat_pure": lambda s: _search(alpha_grid, "repeat", epsilon, s, delta=DELTA),
        "repeat_gauss5": lambda s: _search(alpha_grid, "repeat", epsilon, s, base=gauss),
        "repeat_all": lambda s: _search(full_grid, "repeat", epsilon, s, delta=DELTA),
    }
    for k, (name, make) in enumerate(runs.items()):
        t0 = time.perf_counter()
        search = make(_seed(seed, rep, did, eid, k)).fit(X_tr, y_tr)
        seconds = time.perf_counter() - t0
        assert search.privacy_spent_[0] <= epsilon * (1 + 1e-9)
        row[name] = _error(search, X_te, y_te)
        if name == "repeat_gauss5":
            row["seconds_search"] = seconds
        if name == "repeat_all":
            row["repeat_all_choice"] = " ".join(str(v) for v in search.best_params_.values())
    default = _base(epsilon=epsilon, delta=DELTA, accountant=BudgetAccountant(),
                    random_state=_seed(seed, rep, did, eid, 99))
    row["default"] = _error(default.fit(X_tr, y_tr), X_te, y_te)
    errors, times = [], []
    for j, (mech, params) in enumerate(MECHANISMS.items()):
        for a, alpha in enumerate(ALPHAS):
            model = _base(epsilon=epsilon, alpha=alpha, accountant=BudgetAccountant(),
                          random_state=_seed(seed, rep, did, eid, 100 + 10 * j + a), **params)
            t0 = time.perf_counter()
            model.fit(X_tr, y_tr)
            if mech == "gauss-objective":
                times.append(time.perf_counter() - t0)
            errors.append(_error(model, X_te, y_te))
    row["oracle"] = min(errors)
    row["seconds_one_fit"] = float(np.mean(times))
    row["time_ratio"] = row["seconds_search"] / row["seconds_one_fit"]
    return row


TIMING_SEARCHES = ("default-grid pure", "default-grid delta", "5 alphas pure",
                   "5 alphas delta")


def _timing_cell(data, epsilon, rep, seed):
    """Seconds of one fit and of each search on the same 80% of the rows."""
    from dpsk import BudgetAccountant, DPLogisticRegression
    from dpsk.model_selection import DPGridSearch, _repeat, _search

    X, y = _data(data)
    perm = np.random.default_rng(_seed(seed, rep)).permutation(len(y))
    train = perm[len(y) // 5:]
    X_tr, y_tr = X[train], y[train]
    rows = []
    for tag, delta in (("pure", 0.0), ("delta", DELTA)):
        def one_fit(s):
            return DPLogisticRegression(epsilon=epsilon, delta=delta, classes=[0, 1],
                                        accountant=BudgetAccountant(), random_state=s)
        t0 = time.perf_counter()
        one_fit(_seed(seed, rep, 1)).fit(X_tr, y_tr)
        fit_seconds = time.perf_counter() - t0
        for name, grid in ((f"default-grid {tag}", None), (f"5 alphas {tag}", {"alpha": ALPHAS})):
            def timed():
                search = DPGridSearch(DPLogisticRegression(delta=delta, classes=[0, 1]), grid,
                                      epsilon=epsilon, accountant=BudgetAccountant(),
                                      random_state=_seed(seed, rep, 2))
                t0 = time.perf_counter()
                search.fit(X_tr, y_tr)
                return time.perf_counter() - t0

            seconds = timed()
            m = len(ALPHAS) if grid else len(_search.DEFAULT_ALPHA_MULTIPLIERS)
            draw = _repeat.truncated_negative_binomial
            _repeat.truncated_negative_binomial = (
                lambda *a, k=int(round(_repeat.default_mean_runs(m))): k)
            try:
                at_mean = timed()
            finally:
                _repeat.truncated_negative_binomial = draw
            rows.append({"data": data, "epsilon": epsilon, "rep": rep, "search": name,
                         "seconds_search": seconds, "seconds_one_fit": fit_seconds,
                         "time_ratio": seconds / fit_seconds,
                         "ratio_at_mean_K": at_mean / fit_seconds})
    return rows


def timing(datasets, reps, seed, jobs):
    """Time ratios of the searches; prints the median and mean per search."""
    tasks = [(d, e, r, seed) for d in datasets for e in (0.1, 1.0) for r in range(reps)]
    rows = [row for cell in C.run_tasks(_timing_cell, tasks, n_jobs=jobs, desc="timing")
            for row in cell]
    table = []
    for name in TIMING_SEARCHES:
        ratios = [r["time_ratio"] for r in rows if r["search"] == name]
        at_mean = [r["ratio_at_mean_K"] for r in rows if r["search"] == name]
        table.append({"search": name, "searches": len(ratios),
                      "median_ratio": f"{np.median(ratios):.1f}",
                      "mean_ratio": f"{np.mean(ratios):.1f}",
                      "max_ratio": f"{np.max(ratios):.1f}",
                      "ratio_at_mean_K": f"{np.mean(at_mean):.1f}"})
    print(C.format_table(table, ["search", "searches", "median_ratio", "mean_ratio",
                                 "max_ratio", "ratio_at_mean_K"]))
    return rows


def summarize(rows):
    out = []
    for data in DATASETS:
        for epsilon in sorted({r["epsilon"] for r in rows}):
            sel = [r for r in rows if r["data"] == data and r["epsilon"] == epsilon]
            if not sel:
                continue
            s = {"data": data, "epsilon": epsilon, "reps": len(sel)}
            for col in (*METHODS, "oracle"):
                s[col] = f"{np.mean([r[col] for r in sel]):.4f}"
            s["time_ratio"] = f"{np.median([r['time_ratio'] for r in sel]):.1f}"
            out.append(s)
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks repeat",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="1 repetition at epsilon 1 on Adult; writes results/quick/")
    parser.add_argument("--reps", type=int, default=None, help="repetitions (default 3)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    parser.add_argument("--timing", action="store_true",
                        help="wall time of the searches over one fit only (see above)")
    args = parser.parse_args(argv)
    C.limit_blas_threads()
    if args.timing:
        reps = args.reps or (2 if args.quick else 5)
        start = time.perf_counter()
        rows = timing(("adult",) if args.quick else DATASETS, reps, args.seed, args.jobs)
        path = C.write_csv("repeat_timing", rows,
                           ["data", "epsilon", "rep", "search", "seconds_search",
                            "seconds_one_fit", "time_ratio", "ratio_at_mean_K"],
                           comment_lines=[C.command_line(), C.machine_line()])
        print(f"wrote {path} ({time.perf_counter() - start:.0f} s)")
        return 0
    reps = args.reps or (1 if args.quick else 3)
    epsilons = (1.0,) if args.quick else EPSILONS
    datasets = ("adult",) if args.quick else DATASETS
    C.header("Private tuning: repeat-and-select (Papernot and Steinke 2022) vs disjoint and "
             "random stopping, equal total (epsilon, 1e-6)")
    start = time.perf_counter()
    tasks = [(d, e, r, args.seed) for d in datasets for e in epsilons for r in range(reps)]
    rows = C.run_tasks(_cell, tasks, n_jobs=args.jobs, desc="repeat")
    elapsed = time.perf_counter() - start
    print(C.format_table(summarize(rows),
                         ["data", "epsilon", "reps", *METHODS, "oracle", "time_ratio"]))
    path = C.write_csv("repeat", rows, COLUMNS, comment_lines=[
        C.command_line(), C.machine_line(),
        f"{reps} repetitions x 80/20 split, total (epsilon, delta=1e-6) for every method "
        f"(disjoint and stopping spend (epsilon, 0)); wall time {elapsed:.0f} s"])
    print(f"wrote {path} ({elapsed:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
