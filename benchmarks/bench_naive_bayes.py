"""Private naive Bayes: dpsk's DPGaussianNB and DPCategoricalNB against diffprivlib 0.6.6.

Three parts, each on the same splits for every method:

* ``tables``: Adult (through the schema encoder) and the 13 real tables of
  :mod:`benchmarks._tables` (scikit-learn's breast cancer, digits and wine,
  ten R tables), every feature in declared, loose ``[0, 1]`` bounds;
  stratified 5-fold CV x 2 runs, epsilon 0.1 / 0.5 / 1 / 2. Methods: the
  majority class of the training part (the constant every private model must
  not fall behind), scikit-learn's ``GaussianNB`` (non-private),
  ``DPGaussianNB(bounds=(0, 1))`` at its defaults (pure), the same with
  diffprivlib's even budget split (``budget_split=(1, 1, 1)``) and with
  ``delta=1e-6`` (discrete Gaussian), diffprivlib 0.6.6's
  ``GaussianNB(bounds=(0, 1))`` in its own environment, and
  ``DPLogisticRegression`` at its defaults (``data_norm = sqrt(d)``, the bound
  of a row in ``[0, 1]^d``).
* ``families``: generated tables in ``[0, 1]`` (:func:`benchmarks._tables.unit_family`:
  n 500 / 5,000 / 20,000, d 4 / 32, 2 or 4 classes, weak or strong
  separation, balanced or not; the values fill 30% of the range), 3-fold CV x
  1 run, the same Gaussian naive Bayes methods.
* ``categorical``: ``DPCategoricalNB`` (ordinal codes, and one-hot blocks from
  the schema encoder) against scikit-learn's ``CategoricalNB`` and the majority
  class, on Adult's categorical columns and on generated categorical tables
  (n 1,000 / 10,000 / 50,000, 4 or 16 columns of 2 to 7 categories, weak or
  strong dependence on the class, 50% or 20% positives), 3-fold CV x 1 run.

The fold and run counts are ``--folds`` and ``--runs`` (for the real tables;
the other parts use fewer); the defaults keep a full run near an hour of one
core.

For every cell the paired differences over the same folds and runs give the
standard errors behind the two targets: dpsk's default at most
``max(0.005, 2 SE)`` above the majority class, and at most 0.005 above
diffprivlib. ``--from-csv`` prints the tables and their Markdown from the
stored results.
"""

import argparse
import itertools
import math
import time
import warnings

import numpy as np

from . import _common as C
from . import _diffprivlib as DPL
from ._tables import UNIT_TABLES, adult_schema, load_unit_table, unit_family

EPSILONS = (0.1, 0.5, 1.0, 2.0)
DELTA = 1e-6
# Method keys, in the order the tables show them.
MAJORITY, NONPRIVATE, DPSK, EVEN, GAUSS, DPL_GNB, LOGREG = (
    "majority", "GaussianNB", "dpsk", "dpsk even split", "dpsk delta=1e-6",
    "diffprivlib", "DPLogisticRegression")
GNB_METHODS = (MAJORITY, NONPRIVATE, DPSK, EVEN, GAUSS, DPL_GNB, LOGREG)
CAT_DPSK, CAT_ONEHOT, CAT_NONPRIVATE = ("dpsk", "dpsk one-hot", "CategoricalNB")
FAMILY_GRID = dict(n=(500, 5000, 20000), d=(4, 32), n_classes=(2, 4), separation=(0.3, 1.0),
                   balance=(1.0, 0.3))
FAMILY_FILL = 0.3
FLOOR = 0.005


# ---------------------------------------------------------------- one fold of a table
def _gnb_fold(X, y, train, test, epsilons, runs, seed, with_logreg, cell):
    """Errors of every dpsk and non-private method on one fold: list of records."""
    from sklearn.naive_bayes import GaussianNB

    from dpsk import BudgetAccountant, DPGaussianNB, DPLogisticRegression

    classes = np.unique(y)
    Xtr, ytr, Xte, yte = X[train], y[train], X[test], y[test]
    majority = classes[np.argmax([np.sum(ytr == c) for c in classes])]
    out = [dict(method=MAJORITY, epsilon=eps, run=r, error=float(np.mean(yte != majority)))
           for eps in epsilons for r in range(runs)]
    err = C.fit_and_score(GaussianNB(), Xtr, ytr, Xte, yte)[0]
    out += [dict(method=NONPRIVATE, epsilon=eps, run=r, error=err)
            for eps in epsilons for r in range(runs)]
    variants = {DPSK: {}, EVEN: {"budget_split": (1, 1, 1)}, GAUSS: {"delta": DELTA}}
    for eps, r in itertools.product(epsilons, range(runs)):
        for i, (name, params) in enumerate(variants.items()):
            model = DPGaussianNB(epsilon=eps, bounds=(0, 1), classes=classes,
                                 accountant=BudgetAccountant(),
                                 random_state=C.seed_for(seed, 11, *cell, i, r, eps * 1e4),
                                 **params)
            error, fit_time, status = C.fit_and_score(model, Xtr, ytr, Xte, yte)
            out.append(dict(method=name, epsilon=eps, run=r, error=error, fit_time=fit_time,
                            status=status))
        if with_logreg:
            model = DPLogisticRegression(epsilon=eps, classes=classes,
                                         data_norm=math.sqrt(X.shape[1]),
                                         accountant=BudgetAccountant(),
                                         random_state=C.seed_for(seed, 12, *cell, r, eps * 1e4))
            error, fit_time, status = C.fit_and_score(model, Xtr, ytr, Xte, yte)
            out.append(dict(method=LOGREG, epsilon=eps, run=r, error=error, fit_time=fit_time,
                            status=status))
    return out


def _run_gnb_table(name, X, y, n_folds, runs, seed, epsilons, with_logreg, folds_used=None,
                   diffprivlib=True):
    """Every method on every fold of one table (diffprivlib in its venv): records."""
    folds = C.cv_folds(y, n_folds, seed)
    used = range(len(folds)) if folds_used is None else range(folds_used)
    records = []
    for k in used:
        train, test = folds[k]
        cell = (_name_id(name), k)
        for rec in _gnb_fold(X, y, train, test, epsilons, runs, seed, with_logreg, cell):
            records.append(dict(table=name, fold=k, **rec))
    if not diffprivlib:
        return records
    fold_ids = C.fold_ids(folds, len(y))
    for rec in DPL.run_model(X, y, fold_ids, "GaussianNB", {"bounds": [0.0, 1.0]}, epsilons,
                             used, runs, seed):
        records.append(dict(table=name, method=DPL_GNB, fold=rec["fold"], run=rec["run"],
                            epsilon=rec["epsilon"], error=rec["error"], status=rec["status"],
                            fit_time=rec["fit_time"]))
    return records


def _name_id(name):
    """A stable int for a table's name (seeds differ between tables)."""
    return sum((i + 1) * ord(ch) for i, ch in enumerate(name))


# ---------------------------------------------------------------- categorical part
def _categorical_tables(seed, quick):
    """(name, codes, n_categories, y, onehot-or-None) for the categorical part."""
    tables = []
    for n, d, sep, positives in itertools.product(
            (1000, 10000) if quick else (1000, 10000, 50000), (4, 16), (0.5, 1.5), (0.5, 0.2)):
        rng = np.random.default_rng([seed, n, d, int(sep * 10), int(positives * 10)])
        levels = rng.integers(2, 8, size=d)
        y = (rng.random(n) < positives).astype(np.int64)
        codes = np.empty((n, d), dtype=np.int64)
        for j, c in enumerate(levels):
            logits = rng.normal(size=(2, c)) * sep
            logits[:, :] -= logits.max(axis=1, keepdims=True)
            p = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
            u = rng.random(n)
            codes[:, j] = (u[:, None] > np.cumsum(p[y], axis=1)).sum(axis=1).clip(0, c - 1)
        tables.append((f"cat n={n} d={d} sep={sep} pos={positives}", codes, levels, y, None))
    tables.append(_adult_categorical())
    return tables


def _adult_categorical():
    from sklearn.preprocessing import OrdinalEncoder

    from dpsk.datasets import load_adult
    from dpsk.preprocessing import make_table_encoder

    frame, y = load_adult(return_X_y=True, as_frame=True)
    _, categorical = adult_schema()
    lists = [values + ["__missing__"] for values in categorical.values()]
    columns = list(categorical)
    filled = frame[columns].astype(object).where(frame[columns].notna(), "__missing__")
    codes = OrdinalEncoder(categories=lists).fit_transform(filled).astype(np.int64)
    onehot = np.asarray(make_table_encoder(None, categorical).fit_transform(frame))
    return ("adult categorical", codes, np.array([len(v) for v in lists]),
            (np.asarray(y) == ">50K").astype(int), onehot)


def _categorical_fold(name, codes, levels, y, onehot, train, test, fold, epsilons, runs, seed):
    from sklearn.naive_bayes import CategoricalNB

    from dpsk import BudgetAccountant, DPCategoricalNB

    classes = np.unique(y)
    ytr, yte = y[train], y[test]
    majority = classes[np.argmax([np.sum(ytr == c) for c in classes])]
    base = dict(table=name, fold=fold)
    out = [dict(base, method=MAJORITY, epsilon=eps, run=r, error=float(np.mean(yte != majority)))
           for eps in epsilons for r in range(runs)]
    err = C.fit_and_score(CategoricalNB(min_categories=levels), codes[train], ytr, codes[test],
                          yte)[0]
    out += [dict(base, method=CAT_NONPRIVATE, epsilon=eps, run=r, error=err)
            for eps in epsilons for r in range(runs)]
    for eps, r in itertools.product(epsilons, range(runs)):
        state = C.seed_for(seed, 21, _name_id(name), fold, r, eps * 1e4)
        model = DPCategoricalNB(epsilon=eps, n_categories=levels, classes=classes,
                                accountant=BudgetAccountant(), random_state=state)
        error = C.fit_and_score(model, codes[train], ytr, codes[test], yte)[0]
        out.append(dict(base, method=CAT_DPSK, epsilon=eps, run=r, error=error))
        if onehot is not None:
            # The schema encoder's blocks hold the declared categories plus the fill one.
            model = DPCategoricalNB(epsilon=eps, n_categories=levels, encoding="onehot",
                                    classes=classes, accountant=BudgetAccountant(),
                                    random_state=state)
            error = C.fit_and_score(model, onehot[train], ytr, onehot[test], yte)[0]
            out.append(dict(base, method=CAT_ONEHOT, epsilon=eps, run=r, error=error))
    return out


# ---------------------------------------------------------------- summaries
def summarize(records, group_keys, methods, reference=DPSK):
    """Mean error per (group, epsilon, method) and the paired differences of ``reference``.

    ``excess`` is ``reference - majority`` and ``vs_dpl`` is ``reference -
    diffprivlib``, each with the standard error of its mean over the paired
    (fold, run) cells.
    """
    cells = {}
    for rec in records:
        key = tuple(rec[k] for k in group_keys) + (rec["epsilon"],)
        cells.setdefault(key, {}).setdefault(rec["method"], {})[(rec["fold"], rec["run"])] = \
            rec["error"]
    rows = []
    for key, by_method in cells.items():
        row = dict(zip(group_keys + ("epsilon",), key))
        for method in methods:
            if method in by_method:
                row[method] = float(np.nanmean(list(by_method[method].values())))
        for other, label in ((MAJORITY, "excess"), (DPL_GNB, "vs_dpl")):
            if reference in by_method and other in by_method:
                pairs = [(by_method[reference][c], by_method[other][c])
                         for c in by_method[reference] if c in by_method[other]]
                diff = np.array([a - b for a, b in pairs], dtype=float)
                row[label] = float(np.nanmean(diff))
                row[f"{label}_se"] = (float(np.nanstd(diff, ddof=1) / math.sqrt(len(diff)))
                                      if len(diff) > 1 else float("nan"))
        rows.append(row)
    return rows


def verdicts(rows):
    """Count the cells that miss each target; return (floor misses, diffprivlib misses)."""
    floor = [r for r in rows if "excess" in r
             and r["excess"] > max(FLOOR, 2.0 * r["excess_se"])]
    dpl = [r for r in rows if "vs_dpl" in r and r["vs_dpl"] > FLOOR]
    return floor, dpl


def markdown(rows, group_key, methods):
    """A Markdown table: one line per (group, epsilon), mean errors of ``methods``."""
    head = "| table | epsilon | " + " | ".join(methods) + " | dpsk - majority (SE) |"
    lines = [head, "|" + "---|" * (len(methods) + 3)]
    for r in rows:
        cells = [f"{r[m]:.3f}" if m in r else "" for m in methods]
        excess = f"{r['excess']:+.3f} ({r['excess_se']:.3f})" if "excess" in r else ""
        lines.append(f"| {r[group_key]} | {r['epsilon']:g} | " + " | ".join(cells)
                     + f" | {excess} |")
    return "\n".join(lines)


def rst_table(rows, group_key, methods, labels=None):
    """The same table as :func:`markdown`, as a reStructuredText simple table (for the docs)."""
    labels = labels or {}
    head = [group_key, "epsilon", *[labels.get(m, m) for m in methods], "dpsk - majority (SE)"]
    body = []
    for r in rows:
        excess = f"{r['excess']:+.3f} ({r['excess_se']:.3f})" if "excess" in r else ""
        body.append([str(r[group_key]), f"{r['epsilon']:g}",
                     *[f"{r[m]:.3f}" if m in r else "" for m in methods], excess])
    return rst_grid(head, body)


def rst_grid(head, body):
    """A reStructuredText simple table: ``head`` a list of titles, ``body`` lists of cells."""
    widths = [max(len(line[i]) for line in [head] + body) for i in range(len(head))]
    rule = "  ".join("=" * w for w in widths)
    lines = [rule, "  ".join(h.ljust(w) for h, w in zip(head, widths)).rstrip(), rule]
    lines += ["  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip() for line in body]
    return "\n".join(lines + [rule])


def _print_part(title, rows, group_key, methods):
    print(f"\n{title}")
    columns = [group_key, "epsilon", *methods, "excess", "excess_se", "vs_dpl", "vs_dpl_se"]
    print(C.format_table(rows, [c for c in columns if any(c in r for r in rows)], "{:.3f}"))
    floor, dpl = verdicts(rows)
    print(f"  dpsk default above the majority class by more than max({FLOOR}, 2 SE): "
          f"{len(floor)} of {sum('excess' in r for r in rows)} cells"
          + "".join(f"\n    {r[group_key]} eps={r['epsilon']:g}: {r['excess']:+.4f} "
                    f"(SE {r['excess_se']:.4f})" for r in floor))
    if any("vs_dpl" in r for r in rows):
        print(f"  dpsk default more than {FLOOR} behind diffprivlib: {len(dpl)} of "
              f"{sum('vs_dpl' in r for r in rows)} cells"
              + "".join(f"\n    {r[group_key]} eps={r['epsilon']:g}: {r['vs_dpl']:+.4f}"
                        for r in dpl))
    print("\n" + markdown(rows, group_key, methods))
    print("\n" + rst_table(rows, group_key, methods))


# ---------------------------------------------------------------- main
def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks naive-bayes", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="2 folds x 1 run, a few tables and families")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--parts", nargs="+", default=["tables", "families", "categorical"],
                        choices=["tables", "families", "categorical"])
    parser.add_argument("--tables", nargs="+", default=None, choices=list(UNIT_TABLES))
    parser.add_argument("--folds", type=int, default=5, help="folds of the real tables")
    parser.add_argument("--runs", type=int, default=2, help="runs per fold, real tables")
    parser.add_argument("--no-logreg", action="store_true",
                        help="leave out DPLogisticRegression (the slowest method on Adult)")
    parser.add_argument("--from-csv", action="store_true",
                        help="print the tables from the stored CSV files, run nothing")
    args = parser.parse_args(argv)
    C.set_quick(args.quick)
    C.limit_blas_threads()
    if args.from_csv:
        return _from_csv(args.parts)
    info = C.machine_info()
    C.header("naive-bayes: DPGaussianNB / DPCategoricalNB vs diffprivlib 0.6.6 and the majority "
             "class", info)
    dpl_version, dpl_sklearn = DPL.versions()
    print(f"diffprivlib {dpl_version} runs in its own venv (scikit-learn {dpl_sklearn}).",
          flush=True)
    cmd = "python -m benchmarks naive-bayes " + " ".join(argv or [])
    comments = [f"command: {cmd}", f"machine: {C.machine_line(info)}",
                f"diffprivlib {dpl_version} with scikit-learn {dpl_sklearn}"]
    t0 = time.time()
    if "tables" in args.parts:
        _tables_part(args, comments)
    if "families" in args.parts:
        _families_part(args, comments)
    if "categorical" in args.parts:
        _categorical_part(args, comments)
    print(f"\nWall time {time.time() - t0:.0f}s.")
    return 0


def _tables_part(args, comments):
    n_folds, runs = (2, 1) if args.quick else (args.folds, args.runs)
    names = args.tables or (("adult", "breast_cancer", "biopsy") if args.quick else UNIT_TABLES)
    records = []
    for name in names:
        X, y = load_unit_table(name)
        t = time.time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            records += _run_gnb_table(name, X, y, n_folds, runs, args.seed, EPSILONS,
                                      not args.no_logreg)
        print(f"  {name}: {X.shape}, {time.time() - t:.0f}s", flush=True)
    rows = summarize(records, ("table",), GNB_METHODS)
    for r in rows:
        r["part"] = "tables"
    _print_part(f"Real tables, declared [0, 1] bounds: test error, stratified {n_folds}-fold "
                f"CV x {runs} runs", rows, "table", GNB_METHODS)
    print(f"wrote {C.write_csv('naive_bayes', rows, None, comments + [_protocol(n_folds, runs)])}")


def _protocol(n_folds, runs):
    return (f"protocol: stratified {n_folds}-fold CV x {runs} runs, every feature in declared "
            "[0, 1] bounds; excess = dpsk - majority, vs_dpl = dpsk - diffprivlib, paired over "
            "(fold, run), with standard errors")


def _families_part(args, comments):
    n_folds, runs = (2, 1) if args.quick else (3, 1)
    grid = dict(FAMILY_GRID, n=(500, 5000)) if args.quick else FAMILY_GRID
    records = []
    keys = list(grid)
    for i, values in enumerate(itertools.product(*grid.values())):
        spec = dict(zip(keys, values))
        X, y = unit_family(fill=FAMILY_FILL, seed=args.seed * 1000 + i, **spec)
        name = ("n={n} d={d} K={n_classes} sep={separation} bal={balance}").format(**spec)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            records += _run_gnb_table(name, X, y, n_folds, runs, args.seed, EPSILONS, False)
    methods = tuple(m for m in GNB_METHODS if m != LOGREG)
    rows = summarize(records, ("table",), methods)
    for r in rows:
        r["part"] = "families"
    _print_part(f"Generated families in [0, 1] (values fill {FAMILY_FILL:.0%} of the range): "
                f"test error, {n_folds}-fold CV x {runs} runs", rows, "table", methods)
    path = C.write_csv("naive_bayes_families", rows, None,
                       comments + [_protocol(n_folds, runs)])
    print(f"wrote {path}")


def _categorical_part(args, comments):
    n_folds, runs = (2, 1) if args.quick else (3, 1)
    records = []
    for name, codes, levels, y, onehot in _categorical_tables(args.seed, args.quick):
        folds = C.cv_folds(y, n_folds, args.seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for k, (train, test) in enumerate(folds):
                records += _categorical_fold(name, codes, levels, y, onehot, train, test, k,
                                             EPSILONS, runs, args.seed)
    methods = (MAJORITY, CAT_NONPRIVATE, CAT_DPSK, CAT_ONEHOT)
    rows = summarize(records, ("table",), methods)
    for r in rows:
        r["part"] = "categorical"
    _print_part(f"Categorical naive Bayes: test error, {n_folds}-fold CV x {runs} runs", rows,
                "table", methods)
    path = C.write_csv("naive_bayes_categorical", rows, None,
                       comments + [_protocol(n_folds, runs)])
    print(f"wrote {path}")


def _from_csv(parts):
    names = {"tables": ("naive_bayes", GNB_METHODS),
             "families": ("naive_bayes_families", tuple(m for m in GNB_METHODS if m != LOGREG)),
             "categorical": ("naive_bayes_categorical",
                             (MAJORITY, CAT_NONPRIVATE, CAT_DPSK, CAT_ONEHOT))}
    for part in parts:
        csv_name, methods = names[part]
        rows = []
        for raw in C.read_csv(csv_name, missing_ok=True):
            row = {"table": raw["table"], "epsilon": float(raw["epsilon"])}
            for key, value in raw.items():
                if key not in ("table", "epsilon", "part") and value not in ("", None):
                    row[key] = float(value)
            rows.append(row)
        _print_part(f"{part} (from {csv_name}.csv)", rows, "table", methods)
    return 0
