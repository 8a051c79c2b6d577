"""Model families against diffprivlib 0.6.6: naive Bayes, forest, tree, PCA before a linear model.

Adult (through the schema encoder) and the 13 other real tables of
:mod:`benchmarks._tables` (scikit-learn's breast cancer, digits and wine, ten
R tables), every feature in declared, loose ``[0, 1]`` bounds;
the same stratified folds for every model (one fit per model, fold and
epsilon), epsilon 0.1 / 0.5 / 1 / 2. Four families, each as a user calls it:

* ``naive Bayes``: ``DPGaussianNB(epsilon, bounds=(0, 1), classes)`` against
  diffprivlib's ``GaussianNB(epsilon, bounds=(0, 1))`` and scikit-learn's
  ``GaussianNB``;
* ``forest``: ``DPRandomForestClassifier(epsilon, bounds=(0, 1), classes)``
  against diffprivlib's ``RandomForestClassifier(epsilon, bounds=(0, 1),
  classes)`` and scikit-learn's ``RandomForestClassifier(100)``;
* ``tree``: ``DPDecisionTreeClassifier`` against diffprivlib's
  ``DecisionTreeClassifier`` (the same declarations) and scikit-learn's
  ``DecisionTreeClassifier``;
* ``PCA + LR``: ``make_private_pipeline(DPPCA(epsilon / 2, data_norm=sqrt(d)),
  DPLogisticRegression(epsilon / 2, classes))`` (the model reads the step's row
  bound) against diffprivlib's ``Pipeline(PCA(epsilon / 2, bounds=(0, 1),
  data_norm=sqrt(d)), LogisticRegression(epsilon / 2, data_norm=sqrt(d)))`` and
  scikit-learn's ``PCA()`` then ``LogisticRegression()``.

Every other parameter is at its default (dpsk's ``"auto"`` rules, diffprivlib's
defaults: 10 trees, all principal components); ``sqrt(d)`` is the norm bound
of a row in ``[0, 1]^d``. Every family also shows the training part's
majority class and ``DPLogisticRegression``'s default (``data_norm =
sqrt(d)``). diffprivlib runs in its own environment
(:func:`benchmarks._diffprivlib.run_model`); the naive Bayes and tree fits
are those of ``python -m benchmarks naive-bayes`` and ``trees`` (their
runners, on the same folds).

The summary pairs dpsk with diffprivlib and with the majority class over the
folds (:func:`benchmarks.bench_naive_bayes.summarize`) and counts, per
family, the cells where dpsk is within 0.005 of diffprivlib or better, and
those where it is worse than the majority class beyond ``max(0.005, 2 SE)``
(diffprivlib's own count beside it). ``--from-csv`` reprints the tables from
``benchmarks/results/families.csv``; ``--refit forest tree`` fits dpsk's models
of those families anew on the stored run's tables, folds, epsilons and seeds and
takes every other record from ``benchmarks/results/families_records.csv`` (for a
change to those models alone). ``--generated`` instead checks the forest and the
tree against the majority-class floor on generated families
(:func:`generated_tables`; ``benchmarks/results/families_generated.csv``).
"""

import math
import time
import warnings

import numpy as np

from . import _common as C
from . import _diffprivlib as DPL
from . import bench_naive_bayes as NB
from . import bench_trees as TREES
from ._tables import UNIT_TABLES, load_unit_table

NAME = "families"
EPSILONS = (0.1, 0.5, 1.0, 2.0)
TABLES = UNIT_TABLES
QUICK_TABLES = ("wine", "biopsy")
NAIVE_BAYES, FOREST, TREE, PCA_LR = "naive Bayes", "forest", "tree", "PCA + LR"
FAMILIES = (NAIVE_BAYES, FOREST, TREE, PCA_LR)
MAJORITY, DPSK, DIFFPRIVLIB, LOGREG = NB.MAJORITY, NB.DPSK, NB.DPL_GNB, NB.LOGREG
NONPRIVATE = "non-private"
METHODS = (MAJORITY, NONPRIVATE, DPSK, DIFFPRIVLIB, LOGREG)
#: (family, method) of the runners' labels; family None: shown in every family.
#: Labels not listed (naive Bayes' variants) are left out.
NB_LABELS = {NB.NONPRIVATE: (NAIVE_BAYES, NONPRIVATE), NB.DPSK: (NAIVE_BAYES, DPSK),
             NB.DPL_GNB: (NAIVE_BAYES, DIFFPRIVLIB)}
TREE_LABELS = {TREES.NONPRIVATE: (FOREST, NONPRIVATE), TREES.DPSK: (FOREST, DPSK),
               TREES.DIFFPRIVLIB: (FOREST, DIFFPRIVLIB), TREES.DPSK_TREE: (TREE, DPSK),
               TREES.DPL_TREE: (TREE, DIFFPRIVLIB), TREES.MAJORITY: (None, MAJORITY),
               TREES.LOGREG: (None, LOGREG)}


def _relabel(records, labels):
    """The runners' records under ``(family, method)``; shared rows copied to every family."""
    out = []
    for rec in records:
        if rec["method"] not in labels:
            continue
        family, method = labels[rec["method"]]
        for fam in FAMILIES if family is None else (family,):
            out.append(dict(rec, family=fam, method=method))
    return out


def _pca_pipeline(epsilon, classes, d, seed):
    from dpsk import BudgetAccountant, DPLogisticRegression
    from dpsk.pipeline import make_private_pipeline
    from dpsk.preprocessing import DPPCA

    ledger = BudgetAccountant()
    return make_private_pipeline(
        DPPCA(epsilon=epsilon / 2, data_norm=math.sqrt(d), accountant=ledger,
              random_state=seed),
        DPLogisticRegression(epsilon=epsilon / 2, classes=classes, accountant=ledger,
                             random_state=seed + 1))


#: diffprivlib's pipeline: [class name, params, share of epsilon] per step.
def _dpl_pca_steps(d):
    norm = math.sqrt(d)
    return [["PCA", {"bounds": [0.0, 1.0], "data_norm": norm}, 0.5],
            ["LogisticRegression", {"data_norm": norm}, 0.5]]


def run_own(name, X, y, folds, epsilons, seed):
    """What the runners do not fit: the PCA family and the non-private tree."""
    from sklearn.decomposition import PCA
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.tree import DecisionTreeClassifier

    classes = np.unique(y)
    table_id = UNIT_TABLES.index(name)
    records = []
    for k, (train, test) in enumerate(folds):
        data = X[train], y[train], X[test], y[test]
        for family, model in ((PCA_LR, make_pipeline(PCA(), LogisticRegression())),
                              (TREE, DecisionTreeClassifier(random_state=k))):
            error = C.fit_and_score(model, *data)[0]
            records += [dict(table=name, family=family, method=NONPRIVATE, fold=k, run=0,
                             epsilon=eps, error=error) for eps in epsilons]
        for eps in epsilons:
            model = _pca_pipeline(eps, classes, X.shape[1],
                                  C.seed_for(seed, 39, table_id, k, eps * 1e4) % 2**30)
            error, fit_time, status = C.fit_and_score(model, *data)
            records.append(dict(table=name, family=PCA_LR, method=DPSK, fold=k, run=0,
                                epsilon=eps, error=error, fit_time=fit_time, status=status,
                                n_components=model[0].n_components_ if status == "ok" else ""))
    return records


def run_table(name, n_folds, epsilons, seed, diffprivlib=True):
    """Every family's records on one table, all on ``C.cv_folds(y, n_folds, seed)``."""
    X, y = load_unit_table(name)
    folds = C.cv_folds(y, n_folds, seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        records = _relabel(TREES.run_table(name, n_folds, epsilons, seed, diffprivlib),
                           TREE_LABELS)
        records += _relabel(NB._run_gnb_table(name, X, y, n_folds, 1, seed, epsilons, False,
                                              diffprivlib=diffprivlib), NB_LABELS)
        records += run_own(name, X, y, folds, epsilons, seed)
    if diffprivlib:
        for rec in DPL.run_model(X, y, C.fold_ids(folds, len(y)), _dpl_pca_steps(X.shape[1]),
                                 {}, epsilons, range(n_folds), 1, seed):
            records.append(dict(table=name, family=PCA_LR, method=DIFFPRIVLIB, **rec))
    return records


def generated_tables():
    """``(name, X, y)`` of 60 generated families in ``[0, 1]`` (fixed seeds).

    48 from ``make_classification`` (``n`` 300 / 2,000 / 10,000, ``d`` 4 or 20
    with at most 4 informative features, 2 or 3 classes, separation 0.3 or 1.5,
    balanced or 80% in the first class; features ``(x + 6) / 12`` clipped, so
    the declared ``[0, 1]`` is loose), and 12 whose labels are drawn
    independently of uniform rows (60% or 75% in one class, ``d`` 5 or 30):
    there only the majority class can be learned.
    """
    import itertools

    from sklearn.datasets import make_classification

    grid = itertools.product((300, 2000, 10000), (4, 20), (2, 3), (0.3, 1.5), (None, 0.8))
    for i, (n, d, k, sep, top) in enumerate(grid):
        weights = None if top is None else [top] + [(1 - top) / (k - 1)] * (k - 1)
        X, y = make_classification(n, d, n_informative=min(d, 4), n_redundant=0, n_classes=k,
                                   weights=weights, class_sep=sep, n_clusters_per_class=1,
                                   random_state=i)
        yield f"n{n}_d{d}_K{k}_sep{sep}_top{top}", np.clip((X + 6) / 12, 0, 1), y
    for i, (n, d, top) in enumerate(itertools.product((300, 2000, 10000), (5, 30), (0.6, 0.75))):
        rng = np.random.default_rng(100 + i)
        yield f"noise_n{n}_d{d}_top{top}", rng.random((n, d)), (rng.random(n) > top).astype(int)


def run_generated(n_folds, epsilons, seed):
    """Records of the majority class, the forest and the tree on :func:`generated_tables`."""
    from dpsk import BudgetAccountant, DPDecisionTreeClassifier, DPRandomForestClassifier

    records = []
    for table_id, (name, X, y) in enumerate(generated_tables()):
        classes = np.unique(y)
        for k, (train, test) in enumerate(C.cv_folds(y, n_folds, seed)):
            majority = classes[np.argmax([np.sum(y[train] == c) for c in classes])]
            for eps in epsilons:
                base = dict(table=name, fold=k, run=0, epsilon=eps)
                cell_seed = C.seed_for(seed, 77, table_id, k, eps * 1e4)
                for family, cls in ((FOREST, DPRandomForestClassifier),
                                    (TREE, DPDecisionTreeClassifier)):
                    records.append(dict(base, family=family, method=MAJORITY,
                                        error=float(np.mean(y[test] != majority))))
                    model = cls(eps, bounds=(0, 1), classes=classes, random_state=cell_seed,
                                accountant=BudgetAccountant())
                    error, fit_time, status = C.fit_and_score(model, X[train], y[train],
                                                              X[test], y[test])
                    records.append(dict(base, family=family, method=DPSK, error=error,
                                        fit_time=fit_time, status=status))
    return records


def generated_report(rows):
    """Per family: cells below the majority floor, and the mean error of dpsk."""
    lines = []
    for family in (FOREST, TREE):
        these = [r for r in rows if r["family"] == family]
        floor = NB.verdicts(these)[0]
        lines.append(f"  {family:7s} below the floor {len(floor)}/{len(these)}; mean error "
                     f"{np.mean([r[DPSK] for r in these]):.4f} (majority "
                     f"{np.mean([r[MAJORITY] for r in these]):.4f})")
        lines += [f"    {r['table']} at {r['epsilon']:g}: {r['excess']:+.3f} "
                  f"(SE {r['excess_se']:.3f})" for r in floor]
    return "\n".join(lines)


#: Families whose dpsk model ``--refit`` can fit anew (the runner's label of each).
REFIT = {FOREST: TREES.DPSK, TREE: TREES.DPSK_TREE}


def _stored_record(raw):
    """One row of ``families_records.csv`` with its numbers typed as a fresh run's."""
    rec = dict(raw, epsilon=float(raw["epsilon"]), fold=int(raw["fold"]), run=int(raw["run"]),
               error=float(raw["error"]))
    return {k: v for k, v in rec.items() if v not in ("", None)}


def refit(families, seed):
    """The stored records, with dpsk's model of each of ``families`` fitted anew.

    The tables, folds (``n_folds`` from the stored run), epsilons and seeds are
    those of the stored run, so every other method's records stay paired.
    """
    stored = [_stored_record(raw) for raw in C.read_csv(f"{NAME}_records")]
    kept = [r for r in stored if not (r["method"] == DPSK and r["family"] in families)]
    tables = list(dict.fromkeys(r["table"] for r in stored))
    epsilons = sorted({r["epsilon"] for r in stored})
    n_folds = 1 + max(r["fold"] for r in stored)
    fresh = []
    for table in tables:
        X, y = load_unit_table(table)
        folds = C.cv_folds(y, n_folds, seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fresh += _relabel(TREES.dpsk_records(table, X, y, folds, epsilons, seed,
                                                 methods=[REFIT[f] for f in families]),
                              TREE_LABELS)
    return kept + fresh, tables, n_folds


def summarize(records):
    """Rows per (family, table, epsilon): mean errors, dpsk's and diffprivlib's paired gaps.

    ``excess`` and ``vs_dpl`` (with standard errors) are dpsk minus the majority
    class and minus diffprivlib; ``dpl_excess`` is diffprivlib minus the
    majority class.
    """
    rows = NB.summarize(records, ("family", "table"), METHODS)
    theirs = {(r["family"], r["table"], r["epsilon"]): r
              for r in NB.summarize(records, ("family", "table"), (), reference=DIFFPRIVLIB)}
    for row in rows:
        other = theirs[(row["family"], row["table"], row["epsilon"])]
        if "excess" in other:
            row["dpl_excess"], row["dpl_excess_se"] = other["excess"], other["excess_se"]
    order = {f: i for i, f in enumerate(FAMILIES)}
    return sorted(rows, key=lambda r: order[r["family"]])


def counts(rows):
    """Per family: cells, dpsk within 0.005 of diffprivlib or better, each below the floor."""
    out = {}
    for family in FAMILIES:
        these = [r for r in rows if r["family"] == family]
        floor, behind = NB.verdicts(these)
        paired = [r for r in these if "vs_dpl" in r and not math.isnan(r["vs_dpl"])]
        dpl_floor = NB.verdicts([dict(excess=r["dpl_excess"], excess_se=r["dpl_excess_se"])
                                 for r in these if "dpl_excess" in r])[0]
        out[family] = dict(cells=len(these), paired=len(paired),
                           within=len(paired) - len([r for r in behind if r in paired]),
                           floor=len(floor), dpl_floor=len(dpl_floor))
    return out


def _cell(row):
    """``dpsk / diffprivlib / non-private``; ``*`` marks dpsk below the majority-class floor."""
    if row is None:
        return ""
    floor = "*" if NB.verdicts([row])[0] else ""
    return " / ".join(f"{row[m]:.3f}" if m in row and not math.isnan(row[m]) else "-"
                      for m in (DPSK, DIFFPRIVLIB, NONPRIVATE)).replace(" /", floor + " /", 1)


def docs_table(rows):
    """One line per (table, epsilon): the majority class, DPLogisticRegression, each family.

    A family's cell is ``dpsk / diffprivlib / non-private`` (:func:`_cell`).
    """
    cells = {}
    for r in rows:
        cells.setdefault((r["table"], r["epsilon"]), {})[r["family"]] = r
    head = ["table", "epsilon", MAJORITY, LOGREG,
            *FAMILIES]
    body = []
    for (table, epsilon), by_family in cells.items():
        first = next(iter(by_family.values()))
        body.append([table, f"{epsilon:g}",
                     *[f"{first[m]:.3f}" if m in first else "" for m in (MAJORITY, LOGREG)],
                     *[_cell(by_family.get(family)) for family in FAMILIES]])
    return NB.rst_grid(head, body)


def report(rows):
    """The per-family tables, the table for the docs and the counts, as printed."""
    lines = []
    for family in FAMILIES:
        these = [r for r in rows if r["family"] == family]
        if these:
            lines += [f"\n{family}", NB.rst_table(these, "table", METHODS)]
    lines += ["\nEvery family: dpsk / diffprivlib / non-private (* dpsk worse than the majority "
              "class beyond max(0.005, 2 SE))",
              docs_table(rows)]
    lines.append("\nPer family: dpsk within 0.005 of diffprivlib or better / cells where both "
                 "ran; worse than the majority class beyond max(0.005, 2 SE): dpsk, diffprivlib")
    for family, c in counts(rows).items():
        lines.append(f"  {family:12s} within or better {c['within']}/{c['paired']}; "
                     f"below the floor: dpsk {c['floor']}/{c['cells']}, "
                     f"diffprivlib {c['dpl_floor']}/{c['paired']}")
    return "\n".join(lines)


def _from_csv():
    rows = []
    for raw in C.read_csv(NAME):
        row = {"family": raw["family"], "table": raw["table"]}
        row.update({k: float(v) for k, v in raw.items()
                    if k not in ("family", "table") and v not in ("", None)})
        rows.append(row)
    print(report(rows))
    return 0


def main(argv=None):
    argv = list(argv or [])
    parser = TREES.table_parser(NAME, __doc__, "2 folds; wine and biopsy only (a smoke run)")
    parser.add_argument("--from-csv", action="store_true",
                        help=f"print the tables from results/{NAME}.csv, run nothing")
    parser.add_argument("--generated", action="store_true",
                        help="the forest and the tree against the majority class on 60 "
                             "generated families (3 folds unless --folds)")
    parser.add_argument("--refit", nargs="+", choices=tuple(REFIT), default=None,
                        help=f"fit only dpsk's model of these families anew; every other "
                             f"record from results/{NAME}_records.csv (same folds and seeds)")
    args = parser.parse_args(argv)
    C.set_quick(args.quick)
    C.limit_blas_threads()
    if args.from_csv:
        return _from_csv()
    if args.generated:
        return _generated_main(args, argv)
    tables = args.tables or list(QUICK_TABLES if args.quick else TABLES)
    n_folds = args.folds or (2 if args.quick else 5)
    info = C.machine_info()
    C.header(f"families: {len(tables)} tables, bounds (0, 1), stratified {n_folds}-fold CV", info)
    comments = [f"command: python -m benchmarks {NAME} {' '.join(argv)}".rstrip(),
                f"machine: {C.machine_line(info)}",
                f"protocol: bounds (0, 1), stratified {n_folds}-fold CV seed {args.seed}, one fit "
                "per method, fold and epsilon; excess = dpsk - majority, vs_dpl = dpsk - "
                "diffprivlib, dpl_excess = diffprivlib - majority, paired over the folds"]
    if not args.no_diffprivlib:
        comments.append("diffprivlib %s on scikit-learn %s" % DPL.versions())
    records, t0 = [], time.time()
    if args.refit:
        records, tables, n_folds = refit(args.refit, args.seed)
        comments.append(f"refit: dpsk's {' and '.join(args.refit)} fitted anew; every other "
                        f"record from the stored {NAME}_records.csv")
    for table in [] if args.refit else tables:
        t = time.time()
        records += run_table(table, n_folds, args.epsilons, args.seed,
                             diffprivlib=not args.no_diffprivlib)
        print(f"  {table}: {time.time() - t:.0f}s", flush=True)
    failed = [r for r in records if r.get("status", "ok") != "ok"]
    rows = summarize(records)
    print(report(rows))
    if failed:
        print(f"  {len(failed)} fits failed, e.g. {failed[0]['family']} {failed[0]['method']}: "
              f"{failed[0]['status']}")
    print(f"\nWall time {time.time() - t0:.0f}s. {C.load_warning(info) or ''}")
    columns = ["family", "table", "epsilon", *METHODS, "excess", "excess_se", "vs_dpl",
               "vs_dpl_se", "dpl_excess", "dpl_excess_se"]
    print(f"wrote {C.write_csv(NAME, rows, columns, comments)}")
    C.write_csv(f"{NAME}_records", records,
                ["family", "table", "method", "epsilon", "fold", "run", "error", "fit_time",
                 "status", "n_components"], comments)
    return 0


def _generated_main(args, argv):
    n_folds = args.folds or 3
    info = C.machine_info()
    C.header(f"families --generated: 60 generated families, stratified {n_folds}-fold CV", info)
    t0 = time.time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        records = run_generated(n_folds, args.epsilons, args.seed)
    rows = NB.summarize(records, ("family", "table"), (MAJORITY, DPSK))
    print(generated_report(rows))
    print(f"\nWall time {time.time() - t0:.0f}s.")
    comments = [f"command: python -m benchmarks {NAME} {' '.join(argv)}".rstrip(),
                f"machine: {C.machine_line(info)}",
                f"protocol: generated families, bounds (0, 1), stratified {n_folds}-fold CV seed "
                f"{args.seed}; excess = dpsk - majority, paired over the folds"]
    columns = ["family", "table", "epsilon", MAJORITY, DPSK, "excess", "excess_se"]
    print(f"wrote {C.write_csv(NAME + '_generated', rows, columns, comments)}")
    return 0
