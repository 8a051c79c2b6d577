"""From the raw Adult table to a private model without declaring bounds.

Raw Adult (all 48,842 rows, numeric columns at their raw scale, categories
declared from adult.names, missing entries kept) through
:func:`dpsk.preprocessing.make_table_encoder` and ``DPLogisticRegression`` in a
:func:`dpsk.pipeline.make_private_pipeline`, at a total epsilon of 1. Stratified
5-fold CV, several runs per fold; accuracy on the held-out fold.

Rows (``bounds`` column):

* ``private eps_b``: the six numeric columns declared without bounds; a
  :class:`~dpsk.preprocessing.PrivateBoundsScaler` learns them with
  ``bounds_epsilon = eps_b`` and the model gets ``1 - eps_b`` (one ledger,
  total 1);
* ``true p1-p99 (leaky)``: the training fold's true 1st and 99th percentiles
  declared as bounds, model at epsilon 1: the reference the private bounds are
  measured against (it is not private: the percentiles are read off the data);
* ``true p5-p95 (leaky)``: the true quantiles the private bounds aim at
  (their default ``quantiles=(0.05, 0.95)``), epsilon 1: the gap to it is
  what learning the bounds privately costs (capital-loss is 0 at both, so
  its range is widened to ``(0, 1)``: an indicator of any loss);
* ``true min-max (leaky)``: the training fold's minimum and maximum, epsilon 1;
* ``raw, data_norm=1``: no scaling at all (numeric columns passed through, the
  categories one-hot), the model's default ``data_norm=1``: every row is
  clipped to norm 1, which is what a new user got;
* ``non-private``: scikit-learn's ``LogisticRegression`` on the p1-p99 encoding.

Each is run on two feature sets: ``numeric`` (the six numeric columns alone)
and ``all`` (numeric plus the eight categorical columns).
"""

import argparse
import warnings

import numpy as np

from . import _common as C

NUMERIC = ("age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week")
TOTAL_EPSILON = 1.0
BOUNDS_EPSILONS = (0.1, 0.2, 0.3)
#: The bounds_epsilon the summary compares with the leaky reference.
MAIN_BOUNDS_EPSILON = 0.2
CLASSES = ["<=50K", ">50K"]


def load_raw():
    """The raw Adult DataFrame and its labels (strings)."""
    from dpsk.datasets import load_adult

    X, y = load_adult(return_X_y=True, as_frame=True)
    return X, np.asarray(y, dtype=object)


def categories():
    """The declared category lists (adult.names), without ``education`` (= education-num)."""
    from dpsk.datasets._adult import CATEGORIES

    return {name: list(values) for name, values in CATEGORIES.items() if name != "education"}


def _pipeline(numeric, categorical, bounds_epsilon, model_epsilon, seed):
    from dpsk import BudgetAccountant, DPLogisticRegression
    from dpsk.pipeline import make_private_pipeline
    from dpsk.preprocessing import make_table_encoder, table_norm_bound

    ledger = BudgetAccountant()
    encoder = make_table_encoder(numeric, categorical, bounds_epsilon=bounds_epsilon,
                                 bounds_accountant=ledger)
    if bounds_epsilon is not None:
        encoder.set_params(numeric_private__bounds__random_state=C.seed_for(seed, 7))
    model = DPLogisticRegression(epsilon=model_epsilon, classes=CLASSES, accountant=ledger,
                                 data_norm=table_norm_bound(numeric, categorical),
                                 random_state=C.seed_for(seed, 8))
    return make_private_pipeline(encoder, model), ledger


def _raw_pipeline(categorical, seed):
    from sklearn.compose import ColumnTransformer
    from sklearn.preprocessing import OneHotEncoder

    from dpsk import BudgetAccountant, DPLogisticRegression
    from dpsk.pipeline import make_private_pipeline

    ledger = BudgetAccountant()
    parts = [("numeric", "passthrough", list(NUMERIC))]
    if categorical:
        parts.append(("categorical",
                      OneHotEncoder(categories=list(categorical.values()),
                                    handle_unknown="ignore", sparse_output=False),
                      list(categorical)))
    encoder = ColumnTransformer(parts, sparse_threshold=0)
    model = DPLogisticRegression(epsilon=TOTAL_EPSILON, classes=CLASSES, accountant=ledger,
                                 random_state=C.seed_for(seed, 9))
    return make_private_pipeline(encoder, model), ledger


def _leaky_bounds(X_train, low, high):
    """True percentiles of the training fold (not private); a tie (capital-loss is 0
    at both its 5th and 95th percentile) is widened to ``(low, low + 1)``."""
    bounds = {}
    for c in NUMERIC:
        a, b = (float(np.nanpercentile(X_train[c], p)) for p in (low, high))
        bounds[c] = (a, b if b > a else a + 1.0)
    return bounds


def _fill_missing(X):
    """Missing categories as a string: the raw one-hot reference has no imputer."""
    X = X.copy()
    for column in X.columns:
        if X[column].dtype == object:
            X[column] = X[column].fillna("__missing__")
    return X


def _cell(X, y, train, test, features, seed, bounds_epsilons):
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    from dpsk.preprocessing import make_table_encoder

    categorical = categories() if features == "all" else {}
    X_train, X_test, y_train, y_test = X.iloc[train], X.iloc[test], y[train], y[test]
    out = []

    def record(name, pipe, ledger, X_tr=X_train, X_te=X_test):
        error, fit_time, status = C.fit_and_score(pipe, X_tr, y_train, X_te, y_test)
        spent = ledger.total()[0] if ledger is not None else float("nan")
        out.append(dict(features=features, bounds=name, accuracy=1.0 - error, spent=spent,
                        fit_time=fit_time, status=status))

    for eps_b in bounds_epsilons:
        pipe, ledger = _pipeline(dict.fromkeys(NUMERIC), categorical, eps_b,
                                 TOTAL_EPSILON - eps_b, C.seed_for(seed, int(eps_b * 1000)))
        record(f"private {eps_b:g}", pipe, ledger)
    p1_p99 = _leaky_bounds(X_train, 1, 99)
    pipe, ledger = _pipeline(p1_p99, categorical, None, TOTAL_EPSILON, C.seed_for(seed, 1))
    record("true p1-p99 (leaky)", pipe, ledger)
    pipe, ledger = _pipeline(_leaky_bounds(X_train, 5, 95), categorical, None, TOTAL_EPSILON,
                             C.seed_for(seed, 4))
    record("true p5-p95 (leaky)", pipe, ledger)
    pipe, ledger = _pipeline(_leaky_bounds(X_train, 0, 100), categorical, None, TOTAL_EPSILON,
                             C.seed_for(seed, 2))
    record("true min-max (leaky)", pipe, ledger)
    pipe, ledger = _raw_pipeline(categorical, C.seed_for(seed, 3))
    record("raw, data_norm=1", pipe, ledger, _fill_missing(X_train), _fill_missing(X_test))
    pipe = make_pipeline(make_table_encoder(p1_p99, categorical), LogisticRegression(max_iter=500))
    record("non-private", pipe, None)
    return out


def run(n_folds, runs, seed, feature_sets, bounds_epsilons):
    X, y = load_raw()
    folds = C.cv_folds(y, n_splits=n_folds, seed=seed)
    tasks = [(k, r, f) for k in range(n_folds) for r in range(runs) for f in feature_sets]
    records = []
    for k, r, features in C.progress(tasks, desc="bounds"):
        train, test = folds[k]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cells = _cell(X, y, train, test, features, C.seed_for(seed, k, r), bounds_epsilons)
        for cell in cells:
            records.append(dict(fold=k, run=r, **cell))
    return records


def summarize(records):
    lines = [f"Accuracy on held-out folds at total epsilon {TOTAL_EPSILON:g} "
             "(mean +- sd over folds x runs)"]
    names = list(dict.fromkeys(r["bounds"] for r in records))
    for features in dict.fromkeys(r["features"] for r in records):
        lines.append(f"\nfeatures: {features}")
        means = {}
        for name in names:
            acc = [r["accuracy"] for r in records if r["features"] == features
                   and r["bounds"] == name and np.isfinite(r["accuracy"])]
            if not acc:
                continue
            means[name] = float(np.mean(acc))
            spent = [r["spent"] for r in records if r["features"] == features
                     and r["bounds"] == name]
            lines.append(f"  {name:22s} {means[name]:.4f} +- {np.std(acc):.4f}   "
                         f"epsilon spent {np.mean(spent):g}")
        main = f"private {MAIN_BOUNDS_EPSILON:g}"
        for reference in ("true p1-p99 (leaky)", "true p5-p95 (leaky)"):
            if main in means and reference in means:
                gap = means[reference] - means[main]
                lines.append(f"  {reference} minus private at bounds_epsilon "
                             f"{MAIN_BOUNDS_EPSILON:g}: {gap:+.4f} "
                             f"({'within' if gap <= 0.01 else 'NOT within'} 0.01)")
    return "\n".join(lines)


def plot(records):
    plt = C.get_pyplot()
    if plt is None:
        return None
    names = list(dict.fromkeys(r["bounds"] for r in records))
    feature_sets = list(dict.fromkeys(r["features"] for r in records))
    fig, axes = plt.subplots(1, len(feature_sets), figsize=(5 * len(feature_sets), 3.5),
                             squeeze=False)
    for ax, features in zip(axes[0], feature_sets):
        means = [np.nanmean([r["accuracy"] for r in records
                             if r["features"] == features and r["bounds"] == n]) for n in names]
        ax.barh(names, means, color=["C0" if n.startswith("private") else "C7" for n in names])
        ax.set_xlim(0.7, 0.86)
        ax.set_title(f"Adult, {features} columns, total epsilon 1")
        ax.set_xlabel("accuracy")
        ax.invert_yaxis()
    fig.tight_layout()
    return C.save_figure(fig, "bounds")


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks bounds", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="2 folds, 1 run, one split")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    C.set_quick(args.quick)
    feature_sets, bounds_epsilons = ("numeric", "all"), BOUNDS_EPSILONS
    if args.quick:
        args.folds, args.runs, bounds_epsilons = 2, 1, (MAIN_BOUNDS_EPSILON,)
    C.limit_blas_threads()
    C.header("Raw Adult to a private model: private bounds against leaky ones")
    records = run(args.folds, args.runs, args.seed, feature_sets, bounds_epsilons)
    print(summarize(records))
    C.write_csv("bounds", records,
                columns=["features", "bounds", "fold", "run", "accuracy", "spent", "fit_time",
                         "status"],
                comment_lines=[C.command_line(), C.machine_line()])
    plot(records)
    return 0
