"""Imbalanced classes: class_weight from a declared prevalence, against no weights.

Sub-command ``python -m benchmarks weights``. A generated family with about 5%
positives (``n_features = 10``, a logistic model with a shifted intercept, rows
scaled into the unit ball, 20000 training and 20000 test rows per draw of the
data). Methods, all ``DPLogisticRegression`` with the defaults (``alpha="auto"``,
objective perturbation, pure epsilon, ``classes=[0, 1]``):

* ``none``       no weights;
* ``declared``   ``class_weight={0: p, 1: 1 - p}`` with ``p = 0.05``, the declared
  (public) prevalence of positives: the positives get weight 1, the negatives
  ``p / (1 - p)`` after dpsk's normalisation;
* ``nonprivate`` and ``nonprivate-balanced``: scikit-learn's
  ``LogisticRegression`` without weights and with ``class_weight="balanced"``
  (which reads the class counts: a reference, not a private method).

Metrics on the test rows: balanced accuracy (the mean of the two recalls),
accuracy and the recall of the positives; mean and standard deviation over
``--runs`` draws of data and noise, at epsilon in {0.5, 1, 2}. ``--quick``: 2
runs, epsilon 1 only, 5000 rows, written under ``benchmarks/results/quick/``.
"""

import argparse
import time

import numpy as np

from . import _common as C

NAME = "weights"
PREVALENCE = 0.05
EPSILONS = (0.5, 1.0, 2.0)
N_FEATURES = 10


def make_family(n, seed):
    """``(X, y)``: rows in the unit ball, about ``PREVALENCE`` positives."""
    rng = np.random.default_rng(seed)
    direction = np.random.default_rng(12345).normal(size=N_FEATURES)  # fixed task
    direction /= np.linalg.norm(direction)
    X = rng.normal(size=(n, N_FEATURES)) / np.sqrt(N_FEATURES)
    X /= np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1.0)
    # Intercept chosen once (offline) so that about 5% of rows are positive.
    logits = 8.0 * (X @ direction) - 4.8
    y = (rng.uniform(size=n) < 1.0 / (1.0 + np.exp(-logits))).astype(int)
    return X, y


def _scores(y_true, y_pred):
    from sklearn.metrics import accuracy_score, balanced_accuracy_score, recall_score

    return {"balanced_accuracy": balanced_accuracy_score(y_true, y_pred),
            "accuracy": accuracy_score(y_true, y_pred),
            "recall_pos": recall_score(y_true, y_pred, zero_division=0.0)}


def run(n, runs, seed, epsilons):
    from sklearn.linear_model import LogisticRegression

    from dpsk import BudgetAccountant, DPLogisticRegression

    records = []
    declared = {0: PREVALENCE, 1: 1.0 - PREVALENCE}
    for r in range(runs):
        X, y = make_family(n, C.seed_for(seed, 1, r))
        X_test, y_test = make_family(n, C.seed_for(seed, 2, r))
        for name, cw in (("nonprivate", None), ("nonprivate-balanced", "balanced")):
            model = LogisticRegression(class_weight=cw).fit(X, y)
            records.append({"method": name, "epsilon": float("inf"), "run": r,
                            "positives": float(y.mean()), "fit_time": float("nan"),
                            **_scores(y_test, model.predict(X_test))})
        for epsilon in epsilons:
            for tag, (name, cw) in enumerate((("none", None), ("declared", declared))):
                noise_seed = C.seed_for(seed, 3 + tag, int(10 * epsilon), r)
                model = DPLogisticRegression(epsilon=epsilon, classes=[0, 1], class_weight=cw,
                                             accountant=BudgetAccountant(),
                                             random_state=noise_seed)
                t0 = time.perf_counter()
                model.fit(X, y)
                records.append({"method": name, "epsilon": epsilon, "run": r,
                                "positives": float(y.mean()),
                                "fit_time": time.perf_counter() - t0,
                                **_scores(y_test, model.predict(X_test))})
    return records


def summarize(records):
    rows = []
    keys = sorted({(rec["epsilon"], rec["method"]) for rec in records})
    for epsilon, method in keys:
        cell = [rec for rec in records if rec["epsilon"] == epsilon and rec["method"] == method]
        row = {"epsilon": epsilon, "method": method}
        for metric in ("balanced_accuracy", "accuracy", "recall_pos"):
            m, s, k = C.mean_std([rec[metric] for rec in cell])
            row[metric] = m
            row[metric + "_sd"] = s
        row["runs"] = len(cell)
        rows.append(row)
    columns = ["epsilon", "method", "balanced_accuracy", "balanced_accuracy_sd", "accuracy",
               "recall_pos", "runs"]
    return C.format_table(rows, columns), rows


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks weights", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="2 runs, epsilon 1, 5000 rows")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--n", type=int, default=20000)
    args = parser.parse_args(argv)
    C.set_quick(args.quick)
    epsilons = EPSILONS
    if args.quick:
        args.runs, args.n, epsilons = 2, 5000, (1.0,)
    C.limit_blas_threads()
    C.header("Imbalanced classes (5% positives): class_weight from the declared prevalence")
    records = run(args.n, args.runs, args.seed, epsilons)
    table, _ = summarize(records)
    print(table)
    C.write_csv(NAME, records,
                columns=["method", "epsilon", "run", "positives", "balanced_accuracy",
                         "accuracy", "recall_pos", "fit_time"],
                comment_lines=[C.command_line(), C.machine_line()])
    return 0
