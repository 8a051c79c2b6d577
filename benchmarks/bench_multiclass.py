"""One-vs-rest vs multinomial private logistic regression at the same total (epsilon, delta).

Sub-command ``python -m benchmarks multiclass``. Every method runs in one process
pool on the same folds, with the same alpha grid and the same noise-draw count.

Data sets (``fit_intercept=True``, the library default, everywhere):

* ``digits``: scikit-learn's ``load_digits`` (1797 x 64, 10 classes). Pixels
  are divided by 16 (their public maximum) and then every row is scaled to unit
  L2 norm, so ``data_norm=1``. The row normalisation uses that row alone, so it
  does not depend on the other rows. The public bound ``data_norm = 8 =
  sqrt(64)`` would also be valid, but actual row norms are 2-5, so the signal
  would shrink about 2x against the same noise. One trial split (80/20,
  one-vs-rest, Gaussian objective perturbation, epsilon = 5) gave error 0.56
  with normalised rows and 0.73 with the /8 bound. That look at test data
  informed the choice, so the choice itself is not private.
  Folds: stratified shuffled 5-fold CV. delta = 1e-5 (n_train ~ 1440, so delta
  < 1/n).
* ``synthetic``: ``make_classification(n_samples=50000, n_features=20,
  n_informative=10, n_redundant=0, n_classes=7, n_clusters_per_class=1,
  class_sep=1.5, random_state=12345)``. Rows are clipped by dpsk itself at the
  fixed radius ``data_norm=10``. That radius is a round number from the
  generator's scale (20 unit-variance features, class centres at +-1.5) and
  was not tuned; it clips about 10% of the rows. Folds: stratified shuffled
  3-fold CV. delta = 1e-6.

Methods, each for ``multi_class`` in {"ovr", "multinomial"}. "multinomial" runs
only if this checkout's ``DPLogisticRegression`` has a ``multi_class``
parameter; otherwise a line says it was skipped. Without the parameter, the
"ovr" rows use the library's built-in one-vs-rest, with K binary models
sharing the budget:

* ``pure-objective`` / ``pure-output``: ``delta=0`` (pure epsilon-DP);
* ``gauss-objective`` / ``gauss-output`` / ``gauss-gradient``: ``delta`` as above;
* ``nonprivate``: scikit-learn ``LogisticRegression(C=1/(n_train alpha))``. For
  "multinomial" this is its own (multinomial) fit. For "ovr" it is wrapped in
  ``OneVsRestClassifier``. It is fitted once per fold, over a wider alpha grid
  (10^-1 ... 10^-6). It is the floor, and in the CSV it has epsilon = inf;
* ``chance``: predict the training fold's majority class.

Protocol: epsilon in {0.1, 0.5, 1, 2, 5} (digits also 10), alpha in
10^{-4, -3, -2, -1}, ``--runs`` noise draws per fold (default 3). Each draw has
an int ``random_state`` derived from (seed, data set, method, multi_class,
alpha, epsilon, fold, run). ``--quick``: digits 2 folds, synthetic 1 fold,
1 run, alpha in 10^{-3, -2}, epsilon in {0.5, 5}, written under
``benchmarks/results/quick/`` (gitignored).

Alpha selection: per (data set, method, multi_class, epsilon), the alpha with the
lowest mean TEST error (an oracle, optimistic and not private, as in the
``gaussian`` benchmark). Standard errors: sd of the per-fold means /
sqrt(folds). The "multinomial - ovr" differences are paired by fold, each side
at its own best alpha.
"""

import argparse
import math
import os
import time
import warnings

import numpy as np

from . import _common as C

NAME = "multiclass"
LOG10_ALPHAS = (-1.0, -2.0, -3.0, -4.0)
NONPRIVATE_LOG10_ALPHAS = (-1.0, -2.0, -3.0, -4.0, -5.0, -6.0)
QUICK_LOG10_ALPHAS = (-2.0, -3.0)

#: Data sets: id enters the noise seeds; epsilons / delta / folds per data set.
DATASETS = (
    dict(key="digits", id=1, n_folds=5, delta=1e-5, data_norm=1.0,
         epsilons=(0.1, 0.5, 1.0, 2.0, 5.0, 10.0), quick_folds=2,
         label="digits (1797x64, 10 classes, rows normalised, 5-fold)"),
    dict(key="synthetic", id=2, n_folds=3, delta=1e-6, data_norm=10.0,
         epsilons=(0.1, 0.5, 1.0, 2.0, 5.0), quick_folds=1,
         label="synthetic (50000x20, 7 classes, clipped at 10, 3-fold)"),
)
QUICK_EPSILONS = (0.5, 5.0)
SYNTHETIC_KW = dict(n_samples=50000, n_features=20, n_informative=10, n_redundant=0,
                    n_classes=7, n_clusters_per_class=1, class_sep=1.5, random_state=12345)

#: Private methods (``delta=None`` means the data set's delta).
METHODS = (
    dict(key="pure-objective", id=1, perturbation="objective", gaussian=False,
         label="pure eps, objective"),
    dict(key="pure-output", id=2, perturbation="output", gaussian=False,
         label="pure eps, output"),
    dict(key="gauss-objective", id=4, perturbation="objective", gaussian=True,
         label="(eps,delta) objective"),
    dict(key="gauss-output", id=3, perturbation="output", gaussian=True,
         label="(eps,delta) output"),
    dict(key="gauss-gradient", id=5, perturbation="gradient", gaussian=True,
         label="(eps,delta) gradient"),
)
MULTI_CLASS = (("ovr", 1), ("multinomial", 2))
REFERENCE_ROWS = (dict(key="nonprivate", label="non-private sklearn LR"),
                  dict(key="chance", label="majority class"))
ORACLE_NOTE = ("best alpha = the alpha of the grid with the lowest mean TEST error per "
               "(data set, method, multi_class, epsilon): an oracle choice made on the test "
               "folds, optimistic and NOT itself differentially private")


# ----------------------------------------------------------------------- data
_DATA = {}


def load_dataset(key):
    """X (float64, C-contiguous) and integer y of one data set, before any clipping."""
    if key == "digits":
        from sklearn.datasets import load_digits

        X, y = load_digits(return_X_y=True)
        X = X / 16.0  # public pixel bound
        norms = np.linalg.norm(X, axis=1, keepdims=True)
        X = X / np.where(norms > 0, norms, 1.0)  # per-row normalisation: data_norm = 1
    else:
        from sklearn.datasets import make_classification

        X, y = make_classification(**SYNTHETIC_KW)
    return np.ascontiguousarray(X, dtype=np.float64), np.asarray(y)


def _data(ds_key, n_folds, seed):
    """X, y and the folds of a data set, built once per (worker) process."""
    if ds_key not in _DATA:
        _DATA[ds_key] = load_dataset(ds_key)
    X, y = _DATA[ds_key]
    fk = ("folds", ds_key, n_folds, seed)
    if fk not in _DATA:
        _DATA[fk] = C.cv_folds(y, n_folds, seed)
    return X, y, _DATA[fk]


def has_multi_class():
    from dpsk import DPLogisticRegression

    return "multi_class" in DPLogisticRegression().get_params()


def method_available(method, multi_class, delta):
    """(True, "") if this checkout can run (method, multi_class), else (False, reason)."""
    from dpsk import DPLogisticRegression

    kwargs = dict(perturbation=method["perturbation"], delta=delta if method["gaussian"] else 0.0,
                  classes=[0, 1, 2])
    if multi_class != "ovr":
        if not has_multi_class():
            return False, "DPLogisticRegression has no multi_class parameter yet"
        kwargs["multi_class"] = multi_class
    elif has_multi_class():
        kwargs["multi_class"] = "ovr"
    try:
        DPLogisticRegression(**kwargs)._validate_params()
    except (ValueError, TypeError) as exc:
        return False, f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}"
    return True, ""


# ----------------------------------------------------------------------- workers
def _fit_dpsk(ds, method, mc, mc_id, la, eps, k, runs, seed):
    """``runs`` noise draws of one (data set, method, multi_class, alpha, epsilon) on fold k."""
    from dpsk import BudgetAccountant, DPLogisticRegression

    X, y, folds = _data(ds["key"], ds["n_folds"], seed)
    train, test = folds[k]
    Xtr, ytr, Xte, yte = X[train], y[train], X[test], y[test]
    classes = np.unique(y)  # public: the label set of the task, not read from a fold
    delta = ds["delta"] if method["gaussian"] else 0.0
    extra = {"multi_class": mc} if has_multi_class() else {}
    out = []
    for r in range(runs):
        rs = C.seed_for(seed, 5151, ds["id"], method["id"], mc_id, int(round(-la * 10)),
                        int(round(eps * 1e4)), k, r)
        est = DPLogisticRegression(
            epsilon=eps, alpha=10.0 ** la, perturbation=method["perturbation"], delta=delta,
            data_norm=ds["data_norm"], classes=classes, accountant=BudgetAccountant(),
            random_state=rs, **extra)
        error, fit_time, status = C.fit_and_score(est, Xtr, ytr, Xte, yte)
        out.append(dict(dataset=ds["key"], method=method["key"], multi_class=mc,
                        perturbation=method["perturbation"], delta=delta, epsilon=eps,
                        log10_alpha=la, fold=k, run=r, error=error, fit_time=fit_time,
                        status=status))
    return out


def _fit_reference(ds, mc, la, k, seed):
    """Non-private sklearn LR (multinomial or OvR) at one alpha; with la=None, chance."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.multiclass import OneVsRestClassifier

    X, y, folds = _data(ds["key"], ds["n_folds"], seed)
    train, test = folds[k]
    Xtr, ytr, Xte, yte = X[train], y[train], X[test], y[test]
    if ds["data_norm"] != 1.0:  # the same clipping as dpsk's data_norm
        def clip(Z):
            n = np.linalg.norm(Z, axis=1, keepdims=True)
            return Z * np.minimum(1.0, ds["data_norm"] / np.where(n > 0, n, 1.0))
        Xtr, Xte = clip(Xtr), clip(Xte)
    t0 = time.perf_counter()
    if la is None:
        values, counts = np.unique(ytr, return_counts=True)
        pred = np.full(len(yte), values[np.argmax(counts)])
        method, mc_out = "chance", ""
    else:
        lr = LogisticRegression(C=1.0 / (len(train) * 10.0 ** la), max_iter=2000)
        est = OneVsRestClassifier(lr) if mc == "ovr" else lr
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(Xtr, ytr)
        pred = est.predict(Xte)
        method, mc_out = "nonprivate", mc
    fit_time = time.perf_counter() - t0
    return [dict(dataset=ds["key"], method=method, multi_class=mc_out, perturbation="",
                 delta=0.0, epsilon=math.inf, log10_alpha=la if la is not None else math.nan,
                 fold=k, run=0, error=float(np.mean(pred != yte)), fit_time=fit_time,
                 status="ok")]


def _run_task(kind, *args):
    return _fit_reference(*args) if kind == "ref" else _fit_dpsk(*args)


# --------------------------------------------------------------------- summaries
def summarise(records):
    groups = {}
    for rec in records:
        la = rec["log10_alpha"]
        key = (rec["dataset"], rec["method"], rec["multi_class"], rec["epsilon"],
               None if la is None or (isinstance(la, float) and math.isnan(la)) else la)
        groups.setdefault(key, []).append(rec)
    labels = {m["key"]: m["label"] for m in METHODS + REFERENCE_ROWS}
    rows = []
    for (ds, key, mc, eps, la), recs in groups.items():
        by_fold = {}
        for r in recs:
            by_fold.setdefault(r["fold"], []).append(r["error"])
        fold_means = {f: float(np.nanmean(v)) for f, v in by_fold.items()
                      if not np.all(np.isnan(v))}
        m, sd, _ = C.mean_std([r["error"] for r in recs])
        fm = list(fold_means.values())
        se = float(np.std(fm, ddof=1)) / math.sqrt(len(fm)) if len(fm) > 1 else float("nan")
        failures = [r["status"] for r in recs if r["status"] != "ok"]
        rows.append(dict(
            dataset=ds, method=key, label=labels[key], multi_class=mc,
            perturbation=recs[0]["perturbation"], delta=recs[0]["delta"], epsilon=eps,
            log10_alpha=la if la is not None else "", alpha=10.0 ** la if la is not None else "",
            mean_error=m, se_error=se, sd_error=sd, n_fits=len(recs), n_folds=len(by_fold),
            n_failed=len(failures),
            mean_fit_time_s=C.mean_std([r["fit_time"] for r in recs])[0],
            max_fit_time_s=max(r["fit_time"] for r in recs),
            failure=failures[0] if failures else "", _fold_means=fold_means))
    order = {m["key"]: i for i, m in enumerate(METHODS + REFERENCE_ROWS)}
    ds_order = {d["key"]: i for i, d in enumerate(DATASETS)}
    rows.sort(key=lambda r: (ds_order[r["dataset"]], order[r["method"]], r["multi_class"],
                             r["epsilon"], -(r["log10_alpha"] if r["log10_alpha"] != "" else 0)))
    best = {}
    for r in rows:
        k = (r["dataset"], r["method"], r["multi_class"], r["epsilon"])
        if not math.isnan(r["mean_error"]) and (
                k not in best or r["mean_error"] < best[k]["mean_error"]):
            best[k] = r
    for r in rows:
        r["best_alpha"] = best.get((r["dataset"], r["method"], r["multi_class"],
                                    r["epsilon"])) is r
    return rows, best


def paired_difference(a, b):
    """Mean and s.e. over folds of (b - a), from two summary rows' per-fold means."""
    folds = sorted(set(a["_fold_means"]) & set(b["_fold_means"]))
    d = [b["_fold_means"][f] - a["_fold_means"][f] for f in folds]
    if not d:
        return float("nan"), float("nan")
    se = float(np.std(d, ddof=1)) / math.sqrt(len(d)) if len(d) > 1 else float("nan")
    return float(np.mean(d)), se


def _cell(row, with_alpha=False, with_se=True):
    if row is None or math.isnan(row["mean_error"]):
        return "-"
    se = f" ± {row['se_error']:.3f}" if with_se and not math.isnan(row["se_error"]) else ""
    al = (f" (10^{row['log10_alpha']:g})" if with_alpha and row["log10_alpha"] != "" else "")
    return f"{row['mean_error']:.3f}{se}{al}"


def table_rows(ds, methods, multi_classes):
    """(label, method key, multi_class, epsilon-or-inf getter) rows of one data set's table."""
    out = []
    for m in methods:
        for mc in multi_classes:
            out.append((f"{m['label']} [{mc}]", m["key"], mc))
    out.append(("non-private sklearn LR [ovr]", "nonprivate", "ovr"))
    out.append(("non-private sklearn LR [multinomial]", "nonprivate", "multinomial"))
    out.append(("majority class", "chance", ""))
    return out


def format_matrix(lines_spec, cell, epsilons, markdown=False):
    head = ["method [multi_class]"] + [f"eps={e:g}" for e in epsilons]
    lines = [head]
    for label, key, mc in lines_spec:
        lines.append([label] + [cell(key, mc, math.inf if key in ("nonprivate", "chance")
                                     else e) for e in epsilons])
    if markdown:
        out = ["| " + " | ".join(lines[0]) + " |", "|---|" + "---|" * len(epsilons)]
        out += ["| " + " | ".join(line) + " |" for line in lines[1:]]
        return "\n".join(out)
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    out = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in
                     enumerate(zip(line, widths))) for line in lines]
    out.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(out)


# ------------------------------------------------------------------------- main
def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks multiclass", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="digits 2 folds, synthetic 1 fold, 1 run, alpha 10^{-3,-2}, "
                             "epsilon {0.5, 5}; writes to benchmarks/results/quick/ "
                             "(not committed)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the folds and the noise")
    parser.add_argument("--runs", type=int, default=None,
                        help="noise draws per fold (default 3; 1 with --quick)")
    parser.add_argument("--datasets", nargs="+", default=[d["key"] for d in DATASETS],
                        choices=[d["key"] for d in DATASETS])
    parser.add_argument("--log10-alphas", type=float, nargs="+", default=None)
    parser.add_argument("--n-jobs", type=int, default=None,
                        help="worker processes (default min(2, cores))")
    parser.add_argument("--no-plot", action="store_true")
    args = parser.parse_args(argv)
    cmd = "python -m benchmarks multiclass " + " ".join(argv or [])
    C.limit_blas_threads()
    runs = args.runs or (1 if args.quick else 3)
    n_jobs = args.n_jobs or min(2, os.cpu_count() or 1)
    grid = tuple(args.log10_alphas or (QUICK_LOG10_ALPHAS if args.quick else LOG10_ALPHAS))
    np_grid = grid if args.quick else tuple(sorted(set(grid) | set(NONPRIVATE_LOG10_ALPHAS),
                                                   reverse=True))
    datasets = [dict(d, n_folds_used=(d["quick_folds"] if args.quick else d["n_folds"]),
                     epsilons=(QUICK_EPSILONS if args.quick else d["epsilons"]))
                for d in DATASETS if d["key"] in args.datasets]
    C.set_quick(args.quick)
    out_name = NAME  # C.results_dir() sends --quick runs to results/quick/
    info = C.machine_info()
    C.header(f"multiclass: one-vs-rest vs multinomial DPLogisticRegression, {runs} runs per "
             f"fold, alpha in 10^{list(grid)}, intercept", info)

    skipped, combos = [], {}
    for ds in datasets:
        combos[ds["key"]] = []
        for m in METHODS:
            for mc, mc_id in MULTI_CLASS:
                ok, why = method_available(m, mc, ds["delta"])
                if ok:
                    combos[ds["key"]].append((m, mc, mc_id))
                elif (m["key"], mc, why) not in skipped:
                    skipped.append((m["key"], mc, why))
    for key, mc, why in skipped:
        print(f"SKIPPED {key} [{mc}]: {why}", flush=True)
    mcs_run = [mc for mc, _ in MULTI_CLASS
               if any(c[1] == mc for cs in combos.values() for c in cs)]

    t0 = time.time()
    tasks = []
    for ds in datasets:
        _data(ds["key"], ds["n_folds"], args.seed)
        for k in range(ds["n_folds_used"]):
            tasks.append(("ref", ds, "", None, k, args.seed))
            tasks += [("ref", ds, mc, la, k, args.seed) for mc in ("ovr", "multinomial")
                      for la in np_grid]
            tasks += [("dpsk", ds, m, mc, mc_id, la, eps, k, runs, args.seed)
                      for m, mc, mc_id in combos[ds["key"]] for la in grid
                      for eps in ds["epsilons"]]
    # Slow cells (noisy gradient descent, small alpha, the big data set) first, so that the
    # pool does not end on one long task.
    def cost(t):
        if t[0] == "ref":
            return 0.0
        _, ds, m, mc, _, la, *_ = t
        return (10.0 if m["perturbation"] == "gradient" else 1.0) * (
            20.0 if ds["key"] == "synthetic" else 1.0) * 10.0 ** (-la / 2)
    tasks.sort(key=cost, reverse=True)
    n_fits = sum(t[8] if t[0] == "dpsk" else 1 for t in tasks)
    print(f"{n_fits} dpsk/sklearn fits in {len(tasks)} tasks on {n_jobs} workers", flush=True)
    records = [rec for recs in C.run_tasks(_run_task, tasks, n_jobs=n_jobs, desc="fits")
               for rec in recs]
    elapsed = time.time() - t0

    rows, best = summarise(records)
    failed = [r for r in rows if r["n_failed"]]
    private_methods = [m for m in METHODS if any(c[0] is m for cs in combos.values()
                                                 for c in cs)]
    markdown = []
    for ds in datasets:
        eps = ds["epsilons"]
        spec = [s for s in table_rows(ds, private_methods, mcs_run)
                if s[1] in ("nonprivate", "chance") or any(
                    c[0]["key"] == s[1] and c[1] == s[2] for c in combos[ds["key"]])]

        def get(key, mc, e, ds=ds):
            return best.get((ds["key"], key, mc, e))

        print(f"\n=== {ds['label']}: test error, mean ± s.e. over {ds['n_folds_used']} folds x "
              f"{runs} runs (non-private and majority: 1 fit per fold), delta = "
              f"{ds['delta']:g} for the (eps,delta) rows.")
        print(f"BEST ALPHA per cell over 10^{list(grid)} (non-private over "
              f"10^{list(np_grid)}): {ORACLE_NOTE}.\n")
        print(format_matrix(spec, lambda k, mc, e: _cell(get(k, mc, e)), eps))
        print("\nChosen alpha per cell:")
        print(format_matrix(spec, lambda k, mc, e: (
            f"10^{get(k, mc, e)['log10_alpha']:g}" if get(k, mc, e) and
            get(k, mc, e)["log10_alpha"] != "" else "-"), eps))
        if "multinomial" in mcs_run and "ovr" in mcs_run:
            print("\nmultinomial - ovr (each at its best alpha), paired by fold, mean ± s.e. "
                  "(negative = multinomial better):")
            diff_spec = [(m["label"], m["key"], "") for m in private_methods]

            def diff_cell(key, _mc, e, ds=ds):
                a, b = get(key, "ovr", e), get(key, "multinomial", e)
                if a is None or b is None:
                    return "-"
                d, se = paired_difference(a, b)
                return f"{d:+.3f} ± {se:.3f}" if not math.isnan(se) else f"{d:+.3f}"
            print(format_matrix(diff_spec, diff_cell, eps))
        markdown.append(f"**{ds['label']}**, delta = {ds['delta']:g}:\n\n" + format_matrix(
            spec, lambda k, mc, e: _cell(get(k, mc, e), True), eps, markdown=True))

    print("\nFit time (s) per data set, method and multi_class: mean / max over all its fits")
    for ds in datasets:
        for m in private_methods + [dict(key="nonprivate", label="non-private sklearn LR")]:
            for mc in ("ovr", "multinomial"):
                ts = [r["fit_time"] for r in records if r["dataset"] == ds["key"]
                      and r["method"] == m["key"] and r["multi_class"] == mc]
                if ts:
                    print(f"  {ds['key']:9s} {m['label']:26s} {mc:11s} "
                          f"{np.mean(ts):.3f} / {np.max(ts):.3f}  ({len(ts)} fits)")
    for r in failed:
        print(f"  FAILED FITS {r['dataset']} {r['method']} [{r['multi_class']}] "
              f"eps={r['epsilon']:g} 10^{r['log10_alpha']:g}: {r['n_failed']} of "
              f"{r['n_fits']} ({r['failure']})")
    print(f"\nWall time {elapsed:.0f}s on {n_jobs} workers. Load average at start "
          f"{info['loadavg_1m']}, now {os.getloadavg()[0]:.2f}.")

    comments = [
        f"command: {cmd}", f"machine: {C.machine_line(info)}",
        "protocol: digits (load_digits, X/16, rows L2-normalised, data_norm=1, stratified "
        f"5-fold, delta=1e-5) and synthetic (make_classification {SYNTHETIC_KW}, dpsk "
        "data_norm=10, stratified 3-fold, delta=1e-6); fit_intercept=True; classes = all "
        f"labels; seed {args.seed}; {runs} runs per fold (non-private/majority: 1 per fold, "
        "epsilon=inf); non-private ovr = OneVsRestClassifier(LogisticRegression)",
        f"alpha selection: best_alpha=True marks the {ORACLE_NOTE}",
        "se_error = sd of per-fold means / sqrt(n_folds); sd_error = sd over all fits",
        "skipped: " + ("; ".join(f"{k} [{mc}] ({why})" for k, mc, why in skipped) or "none"),
        f"wall time: {elapsed:.0f}s with {n_jobs} workers; load(1m) at end "
        f"{os.getloadavg()[0]:.2f}",
    ]
    cols = ["dataset", "method", "label", "multi_class", "perturbation", "delta", "epsilon",
            "log10_alpha", "alpha", "mean_error", "se_error", "sd_error", "n_fits", "n_folds",
            "best_alpha", "n_failed", "mean_fit_time_s", "max_fit_time_s", "failure"]
    (C.RESULTS_DIR / out_name).parent.mkdir(parents=True, exist_ok=True)
    print(f"wrote {C.write_csv(out_name, rows, cols, comments)}")
    print("\nMarkdown (best alpha):\n\n" + "\n\n".join(markdown))
    if not args.no_plot:
        _plot(best, datasets, private_methods, out_name, runs)
    return 1 if failed else 0


def _plot(best, datasets, methods, out_name, runs):
    plt = C.get_pyplot()
    if plt is None:
        return
    fig, axes = plt.subplots(1, len(datasets), figsize=(6.5 * len(datasets), 4.8), squeeze=False)
    colours = {"pure-objective": ("C1", "s"), "pure-output": ("C0", "o"),
               "gauss-objective": ("C3", "^"), "gauss-output": ("C2", "D"),
               "gauss-gradient": ("C4", "v")}
    for ax, ds in zip(axes[0], datasets):
        for m in methods:
            for mc, ls in (("ovr", "--"), ("multinomial", "-")):
                pts = [(e, best.get((ds["key"], m["key"], mc, e))) for e in ds["epsilons"]]
                pts = [(e, p) for e, p in pts if p is not None]
                if not pts:
                    continue
                ax.errorbar([e for e, _ in pts], [p["mean_error"] for _, p in pts],
                            yerr=[0 if math.isnan(p["se_error"]) else p["se_error"]
                                  for _, p in pts],
                            color=colours[m["key"]][0], marker=colours[m["key"]][1], ls=ls,
                            capsize=2, ms=4, label=f"{m['label']} [{mc}]")
        for mc, ls in (("ovr", "--"), ("multinomial", "-")):
            r = best.get((ds["key"], "nonprivate", mc, math.inf))
            if r:
                ax.axhline(r["mean_error"], color="k", ls=ls, lw=0.8,
                           label=f"non-private [{mc}] (10^{r['log10_alpha']:g})")
        r = best.get((ds["key"], "chance", "", math.inf))
        if r:
            ax.axhline(r["mean_error"], color="gray", ls=":", lw=1, label="majority class")
        ax.set_xscale("log")
        ax.set_xlabel("total epsilon")
        ax.set_ylabel("test error")
        ax.set_title(f"{ds['label']}, delta={ds['delta']:g}", fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6)
    fig.suptitle(f"One-vs-rest (dashed) vs multinomial (solid), best alpha per point (oracle), "
                 f"{runs} runs per fold; error bars = s.e. over folds", fontsize=9)
    print(f"wrote {C.save_figure(fig, out_name)}")
    plt.close(fig)
