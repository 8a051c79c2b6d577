"""Beyond ERM on Adult: robust accuracy of DPRobustLogisticRegression (and tilted ERM).

Sub-command ``python -m benchmarks beyond-erm``. One run, the same stratified
folds (``_common.cv_folds``) and the same (epsilon, delta) for every method.

Robust part. For each epsilon in {0.5, 1, 2} at delta = 1e-6 (Gaussian output
perturbation for both models), each alpha in {1e-2, 10^-2.5, 1e-3, 10^-3.5} and each
radius rho in {0.05, 0.1, 0.2} (rows of Adult have norm <= 1 after the paper's
preprocessing, so rho is a fraction of the largest row norm):

* ``plain``   ``DPLogisticRegression(perturbation="output")``, fitted once per
  (epsilon, alpha, fold, run) and scored at every radius;
* ``robust``  ``DPRobustLogisticRegression(radius=rho)``, trained at the radius
  it is scored at.

Reported per (epsilon, rho): clean accuracy and robust accuracy
(:func:`dpsk.robust_accuracy`, exact for linear models) of each, at the alpha
with the best mean robust test accuracy for that (method, epsilon, rho): an
oracle choice on the test folds (optimistic, not private; the same for both).

Tilted part: worst-group (sex) and average test error of
``DPTiltedLogisticRegression`` for t in {0.05, 0.1, 0.2, 0.5} against
``DPLogisticRegression(perturbation="output")`` at the same (epsilon, delta),
alpha in {1e-1, 10^-1.5, 1e-2, 10^-2.5} chosen per (method, t, epsilon) by the
oracle worst-group test error.

SVM part (``DPLinearSVC``, the exact hinge loss): test accuracy of
``DPLinearSVC``, ``DPHuberSVM(perturbation="output")`` and
``DPLogisticRegression(perturbation="output")`` at pure epsilon in {0.1, 0.5, 1}
(``delta = 0``, Gamma-norm noise), alpha in ``ALPHAS`` chosen per (method,
epsilon) by the oracle test accuracy, and at the fixed alpha 1e-3.

L-infinity part: ``DPRobustLogisticRegression(norm="inf")`` against the plain
model at epsilon 1, ``delta = 1e-6``, radii in {0.001, ..., 0.02} (Adult has
105 features, so an L-infinity radius rho is an L2 radius up to ``rho
sqrt(105) ~ 10 rho``), scored by ``robust_accuracy(..., norm="inf")``, oracle
alpha per (method, radius).

``--parts`` runs a subset (``robust tilted svc linf``); a subset writes its
records to ``beyond_erm_<parts>.csv`` instead of ``beyond_erm.csv``.
``--quick``: 2 folds, 1 run, written under ``benchmarks/results/quick/``.
"""

import argparse
import time
import warnings

import numpy as np

from . import _common as C

NAME = "beyond_erm"
DELTA = 1e-6
EPSILONS = (0.5, 1.0, 2.0)
ALPHAS = (1e-2, 10**-2.5, 1e-3, 10**-3.5)
RADII = (0.05, 0.1, 0.2)
TILTS = (0.05, 0.1, 0.2, 0.5)
#: Tilted ERM's sensitivity grows like e^{t L}, L ~ sqrt(2 log 2 / alpha): larger alphas.
TILT_ALPHAS = (1e-1, 10**-1.5, 1e-2, 10**-2.5)
FIXED_ALPHA = 1e-3
SVC_EPSILONS = (0.1, 0.5, 1.0)
LINF_EPSILON = 1.0
LINF_RADII = (0.001, 0.002, 0.005, 0.01, 0.02)
#: Test accuracy of the constant "<=50K" prediction: robust at every radius.
MAJORITY_NOTE = "the constant prediction (w = 0) scores about 0.752, clean and robust"
_DATA = {}


def _data(n_folds, seed):
    """Adult (paper preprocessing), the sex of each row (1 = female), folds."""
    if "X" not in _DATA:
        from dpsk.datasets import load_adult

        X, y = C.load_adult_data()
        raw, _ = load_adult(return_X_y=True, preprocess=False)
        complete = np.array([all(v is not None and v == v and str(v).strip() != "?"
                                 for v in row) for row in raw])
        female = (raw[complete, 9] == "Female").astype(int)
        assert len(female) == len(y)
        _DATA.update(X=X, y=y, group=female)
    key = ("folds", n_folds, seed)
    if key not in _DATA:
        _DATA[key] = C.cv_folds(_DATA["y"], 10, seed)[:n_folds]
    return _DATA["X"], _DATA["y"], _DATA["group"], _DATA[key]


def _robust_fold(k, n_folds, runs, seed):
    from dpsk import (
        BudgetAccountant,
        DPLogisticRegression,
        DPRobustLogisticRegression,
        robust_accuracy,
    )

    X, y, _, folds = _data(n_folds, seed)
    train, test = folds[k]
    records = []
    for eps in EPSILONS:
        for ia, alpha in enumerate(ALPHAS):
            for run in range(runs):
                common = dict(epsilon=eps, delta=DELTA, alpha=alpha, classes=[0, 1],
                              accountant=BudgetAccountant())
                rs = C.seed_for(seed, 17, int(eps * 100), ia, k, run)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # rows clipped at 1 + 2e-16
                    plain = DPLogisticRegression(perturbation="output", random_state=rs,
                                                 **common).fit(X[train], y[train])
                clean = plain.score(X[test], y[test])
                for rho in RADII:
                    records.append(dict(part="robust", method="plain", epsilon=eps, alpha=alpha,
                                        radius=rho, fold=k, run=run, clean=clean,
                                        robust=robust_accuracy(plain, X[test], y[test], rho)))
                for ir, rho in enumerate(RADII):
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        model = DPRobustLogisticRegression(
                            radius=rho, random_state=C.seed_for(rs, ir), **common,
                        ).fit(X[train], y[train])
                    records.append(dict(part="robust", method="robust", epsilon=eps,
                                        alpha=alpha, radius=rho, fold=k, run=run,
                                        clean=model.score(X[test], y[test]),
                                        robust=model.robust_score(X[test], y[test])))
    return records


def _tilted_fold(k, n_folds, runs, seed):
    import dpsk

    X, y, group, folds = _data(n_folds, seed)
    train, test = folds[k]
    records = []
    for eps in EPSILONS:
        for ia, alpha in enumerate(TILT_ALPHAS):
            for run in range(runs):
                common = dict(epsilon=eps, delta=DELTA, alpha=alpha, classes=[0, 1],
                              accountant=dpsk.BudgetAccountant())
                rs = C.seed_for(seed, 29, int(eps * 100), ia, k, run)
                models = [("plain", 0.0, dpsk.DPLogisticRegression(
                    perturbation="output", random_state=rs, **common))]
                models += [("tilted", t, dpsk.DPTiltedLogisticRegression(
                    tilt=t, random_state=C.seed_for(rs, it), **common))
                    for it, t in enumerate(TILTS)]
                for method, t, model in models:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        model.fit(X[train], y[train])
                    wrong = model.predict(X[test]) != y[test]
                    g = group[test]
                    records.append(dict(part="tilted", method=method, tilt=t, epsilon=eps,
                                        alpha=alpha, fold=k, run=run,
                                        error=float(wrong.mean()),
                                        error_female=float(wrong[g == 1].mean()),
                                        error_male=float(wrong[g == 0].mean()),
                                        worst_group=float(max(wrong[g == 1].mean(),
                                                              wrong[g == 0].mean()))))
    return records


def _svc_fold(k, n_folds, runs, seed):
    import dpsk

    X, y, _, folds = _data(n_folds, seed)
    train, test = folds[k]
    records = []
    for eps in SVC_EPSILONS:
        for ia, alpha in enumerate(ALPHAS):
            for run in range(runs):
                common = dict(epsilon=eps, alpha=alpha, classes=[0, 1],
                              accountant=dpsk.BudgetAccountant())
                rs = C.seed_for(seed, 37, int(eps * 100), ia, k, run)
                models = [
                    ("linear_svc", dpsk.DPLinearSVC(random_state=rs, **common)),
                    ("huber_svm", dpsk.DPHuberSVM(perturbation="output",
                                                  random_state=C.seed_for(rs, 1), **common)),
                    ("logistic", dpsk.DPLogisticRegression(perturbation="output",
                                                           random_state=C.seed_for(rs, 2),
                                                           **common)),
                ]
                for method, model in models:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        model.fit(X[train], y[train])
                    records.append(dict(part="svc", method=method, epsilon=eps, alpha=alpha,
                                        fold=k, run=run, clean=model.score(X[test], y[test])))
    return records


def _linf_fold(k, n_folds, runs, seed):
    import dpsk

    X, y, _, folds = _data(n_folds, seed)
    train, test = folds[k]
    records = []
    for ia, alpha in enumerate(ALPHAS):
        for run in range(runs):
            common = dict(epsilon=LINF_EPSILON, delta=DELTA, alpha=alpha, classes=[0, 1],
                          accountant=dpsk.BudgetAccountant())
            rs = C.seed_for(seed, 41, ia, k, run)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                plain = dpsk.DPLogisticRegression(perturbation="output", random_state=rs,
                                                  **common).fit(X[train], y[train])
            for ir, rho in enumerate(LINF_RADII):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    model = dpsk.DPRobustLogisticRegression(
                        radius=rho, norm="inf", random_state=C.seed_for(rs, ir), **common,
                    ).fit(X[train], y[train])
                for method, m in (("plain", plain), ("robust_inf", model)):
                    records.append(dict(
                        part="linf", method=method, epsilon=LINF_EPSILON, alpha=alpha,
                        radius=rho, fold=k, run=run, clean=m.score(X[test], y[test]),
                        robust=dpsk.robust_accuracy(m, X[test], y[test], rho, norm="inf")))
    return records


def svc_table(records):
    rows = []
    svc = [r for r in records if r["part"] == "svc"]
    best = _best(svc, ("method", "epsilon"), "clean")
    for eps in SVC_EPSILONS:
        row = dict(epsilon=eps)
        for method in ("linear_svc", "huber_svm", "logistic"):
            alpha, recs = best[(method, eps)]
            row[f"{method}_alpha"] = C.log10_label(alpha)
            row[f"{method}_acc"] = float(np.mean([r["clean"] for r in recs]))
            fixed = [r["clean"] for r in svc if r["method"] == method and r["epsilon"] == eps
                     and r["alpha"] == FIXED_ALPHA]
            row[f"{method}_acc_1e-3"] = float(np.mean(fixed))
        rows.append(row)
    return rows


def linf_table(records):
    rows = []
    best = _best([r for r in records if r["part"] == "linf"], ("method", "radius"), "robust")
    for rho in LINF_RADII:
        row = dict(epsilon=LINF_EPSILON, radius=rho)
        for method in ("plain", "robust_inf"):
            alpha, recs = best[(method, rho)]
            row[f"{method}_alpha"] = C.log10_label(alpha)
            row[f"{method}_clean"] = float(np.mean([r["clean"] for r in recs]))
            row[f"{method}_robust"] = float(np.mean([r["robust"] for r in recs]))
        rows.append(row)
    return rows


def _best(records, keys, score, larger=True):
    """Per ``keys`` cell, the alpha with the best mean ``score``; returns {cell: rows}."""
    cells = {}
    for rec in records:
        cells.setdefault(tuple(rec[k] for k in keys), {}).setdefault(rec["alpha"], []).append(rec)
    best = {}
    for cell, by_alpha in cells.items():
        sign = 1.0 if larger else -1.0
        alpha = max(by_alpha, key=lambda a: sign * np.mean([r[score] for r in by_alpha[a]]))
        best[cell] = (alpha, by_alpha[alpha])
    return best


def robust_table(records):
    rows = []
    best = _best([r for r in records if r["part"] == "robust"], ("method", "epsilon", "radius"),
                 "robust")
    for eps in EPSILONS:
        for rho in RADII:
            row = dict(epsilon=eps, radius=rho)
            for method in ("plain", "robust"):
                alpha, recs = best[(method, eps, rho)]
                row[f"{method}_alpha"] = C.log10_label(alpha)
                row[f"{method}_clean"] = float(np.mean([r["clean"] for r in recs]))
                row[f"{method}_robust"] = float(np.mean([r["robust"] for r in recs]))
            rows.append(row)
    return rows


def robust_fixed_alpha_table(records, alpha=FIXED_ALPHA):
    """The same comparison at one fixed alpha, where neither model is the constant one."""
    rows = []
    recs = [r for r in records if r["part"] == "robust" and r["alpha"] == alpha]
    for eps in EPSILONS:
        for rho in RADII:
            row = dict(epsilon=eps, radius=rho)
            for method in ("plain", "robust"):
                cell = [r for r in recs if r["method"] == method and r["epsilon"] == eps
                        and r["radius"] == rho]
                row[f"{method}_clean"] = float(np.mean([r["clean"] for r in cell]))
                row[f"{method}_robust"] = float(np.mean([r["robust"] for r in cell]))
            rows.append(row)
    return rows


def tilted_table(records):
    rows = []
    tilted = [r for r in records if r["part"] == "tilted"]
    best = _best(tilted, ("method", "tilt", "epsilon"), "worst_group", larger=False)
    for eps in EPSILONS:
        for method, t in [("plain", 0.0)] + [("tilted", t) for t in TILTS]:
            alpha, recs = best[(method, t, eps)]
            rows.append(dict(epsilon=eps, method=method, tilt=t, alpha=C.log10_label(alpha),
                             error=float(np.mean([r["error"] for r in recs])),
                             error_female=float(np.mean([r["error_female"] for r in recs])),
                             error_male=float(np.mean([r["error_male"] for r in recs])),
                             worst_group=float(np.mean([r["worst_group"] for r in recs]))))
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks beyond-erm", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="2 folds, 1 run; writes to benchmarks/results/quick/")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--folds", type=int, default=None, help="folds of 10 used (default 5)")
    parser.add_argument("--runs", type=int, default=None, help="noise draws per fold (default 2)")
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--parts", nargs="+", default=None,
                        choices=["robust", "tilted", "svc", "linf"],
                        help="run only these parts (default all)")
    args = parser.parse_args(argv)
    C.set_quick(args.quick)
    C.limit_blas_threads()
    n_folds = args.folds or (2 if args.quick else 5)
    runs = args.runs or (1 if args.quick else 2)
    info = C.machine_info()
    C.header(f"dpsk benchmark: {NAME} ({n_folds} folds of 10, {runs} runs)", info)
    t0 = time.time()
    import dpsk

    chosen = args.parts or ["robust", "tilted", "svc", "linf"]
    parts = [_robust_fold] if "robust" in chosen else []
    if "tilted" in chosen:
        if hasattr(dpsk, "DPTiltedLogisticRegression"):
            parts.append(_tilted_fold)
        else:
            print("tilted part skipped: this checkout has no DPTiltedLogisticRegression")
    if "svc" in chosen:
        parts.append(_svc_fold)
    if "linf" in chosen:
        parts.append(_linf_fold)
    tasks = [(part, k) for part in parts for k in range(n_folds)]
    results = C.run_tasks(_task, [(part, k, n_folds, runs, args.seed) for part, k in tasks],
                          n_jobs=args.n_jobs, desc=NAME)
    records = [rec for batch in results for rec in batch]
    comments = [C.machine_line(info), C.command_line()]
    if _robust_fold in parts:
        rows = robust_table(records)
        print(f"\nRobust accuracy (delta={DELTA}, oracle alpha per method by robust accuracy)")
        print(C.format_table(rows, list(rows[0])))
        C.write_csv(NAME + "_robust", rows, comment_lines=comments)
        rows = robust_fixed_alpha_table(records)
        print(f"\nSame, at fixed alpha = {FIXED_ALPHA:g}; {MAJORITY_NOTE}")
        print(C.format_table(rows, list(rows[0])))
        C.write_csv(NAME + "_robust_fixed_alpha", rows, comment_lines=comments)
    if _svc_fold in parts:
        rows = svc_table(records)
        print("\nLinear SVMs and logistic regression, output perturbation, pure epsilon "
              "(oracle alpha by accuracy; and at alpha = 1e-3)")
        print(C.format_table(rows, list(rows[0])))
        C.write_csv(NAME + "_svc", rows, comment_lines=comments)
    if _linf_fold in parts:
        rows = linf_table(records)
        print(f"\nL-infinity robust accuracy (epsilon={LINF_EPSILON}, delta={DELTA}, oracle "
              "alpha per method by robust accuracy)")
        print(C.format_table(rows, list(rows[0])))
        C.write_csv(NAME + "_linf", rows, comment_lines=comments)
    if _tilted_fold in parts:
        rows = tilted_table(records)
        print(f"\nTilted ERM, group = sex (delta={DELTA}, oracle alpha by worst-group error)")
        print(C.format_table(rows, list(rows[0])))
        C.write_csv(NAME + "_tilted", rows, comment_lines=comments)
    records_name = NAME if args.parts is None else "_".join([NAME] + sorted(set(chosen)))
    C.write_csv(records_name, records, comment_lines=comments)
    print(f"\n({time.time() - t0:.0f} s; {C.command_line()})")
    return 0


def _task(part, k, n_folds, runs, seed):
    return part(k, n_folds, runs, seed)
