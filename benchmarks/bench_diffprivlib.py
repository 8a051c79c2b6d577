"""dpsk vs diffprivlib 0.6.6 on Adult: the same folds, preprocessing and alpha.

diffprivlib 0.6.6 does not import with scikit-learn >= 1.8, so it runs in its own
virtual environment, ``benchmarks/.venv-diffprivlib`` (created on first use with
``python -m venv`` and ``pip install diffprivlib==0.6.6 "scikit-learn<1.8" numpy
scipy``), through ``benchmarks/_diffprivlib_worker.py``. The data and the fold of
every row are passed in a temporary .npz file, results come back as JSON.

Compared, at each epsilon and alpha, no intercept, rows of norm <= 1:

* ``diffprivlib.models.LogisticRegression(epsilon, C=1/(n_train*alpha),
  data_norm=1.0, fit_intercept=False)`` - objective perturbation (the Vector
  mechanism: Algorithm 2 of Chaudhuri et al. 2011 with c = 1/4), solved by
  L-BFGS-B to its default ``tol=1e-4``, ``max_iter=100``.
  Its objective is ``mean logistic loss + 1/(2 C n) ||w||^2``, so
  ``C = 1/(n alpha)`` is exactly dpsk's ``alpha`` (the paper's Lambda).
* ``dpsk.DPLogisticRegression(epsilon, alpha, perturbation="objective"|"output",
  fit_intercept=False)`` with its defaults (``tol=1e-10``, certified).
"""

import argparse
import os
import tempfile
import time
import venv  # noqa: F401 - fail early on Pythons built without it

import numpy as np

from . import _common as C
from ._diffprivlib import REQUIREMENTS, VENV_DIR, call_worker, ensure_venv, venv_python  # noqa: F401

WORKER = C.BENCH_DIR / "_diffprivlib_worker.py"
EPSILONS = (0.01, 0.05, 0.1, 0.5, 1.0)
LOG10_ALPHAS = (-2.5, -2.0)


def _dpsk_cell(X, y, fold_ids, k, method, la, eps, run, seed):
    train, test = np.flatnonzero(fold_ids != k), np.flatnonzero(fold_ids == k)
    ss = C.seed_for(seed, 77, {"objective": 1, "output": 2}[method], int(round(-la * 10)),
                    int(round(eps * 1e4)), k, run)
    rec = C.evaluate_cell(X, y, train, test, "logistic", method, 10.0 ** la, eps, ss)
    return dict(impl=f"dpsk {method}", epsilon=eps, log10_alpha=la, fold=k, run=run, **rec)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks diffprivlib",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="3 folds x 1 run")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--folds", type=int, default=None, help="folds of 10 (default 10)")
    parser.add_argument("--runs", type=int, default=None, help="runs per fold (default 3)")
    parser.add_argument("--epsilons", type=float, nargs="+", default=list(EPSILONS))
    parser.add_argument("--log10-alphas", type=float, nargs="+", default=list(LOG10_ALPHAS))
    parser.add_argument("--dpl-max-iter", type=int, default=100,
                        help="diffprivlib max_iter (its default is 100)")
    parser.add_argument("--no-plot", action="store_true")
    args = parser.parse_args(argv)
    C.set_quick(args.quick)  # --quick writes to results/quick/, never over committed results
    cmd = "python -m benchmarks diffprivlib " + " ".join(argv or [])
    C.limit_blas_threads()
    n_folds = args.folds or (3 if args.quick else 10)
    runs = args.runs or (1 if args.quick else 3)
    info = C.machine_info()
    C.header(f"diffprivlib: dpsk vs diffprivlib on Adult, {n_folds} of 10 folds x {runs} runs, "
             "no intercept", info)
    py, versions = ensure_venv()
    print(f"diffprivlib {versions[0]} runs in its own venv ({py}, scikit-learn {versions[1]}); "
          f"dpsk runs here (scikit-learn {info['sklearn']}). Fits run one at a time, "
          "alternating implementations per fold, so fit times are comparable.", flush=True)

    X, y = C.load_adult_data()
    folds = C.cv_folds(y, 10, args.seed)
    fold_ids = C.fold_ids(folds, len(y))
    records = []
    t0 = time.time()
    with tempfile.TemporaryDirectory(prefix="dpsk-dpl-") as tmp:
        data_path = os.path.join(tmp, "data.npz")
        np.savez(data_path, X=X, y=y, fold_ids=fold_ids)
        for k in C.progress(range(n_folds), total=n_folds, desc="folds"):
            payload = call_worker(py, WORKER, data_path, tmp, dict(
                epsilons=args.epsilons, log10_alphas=args.log10_alphas, folds=[k], runs=runs,
                seed=args.seed, max_iter=args.dpl_max_iter))
            for rec in payload["records"]:
                records.append(dict(impl="diffprivlib", status="ok", **rec))
            for eps in args.epsilons:
                for la in args.log10_alphas:
                    for method in ("objective", "output"):
                        for r in range(runs):
                            records.append(_dpsk_cell(X, y, fold_ids, k, method, la, eps, r,
                                                      args.seed))
    elapsed = time.time() - t0

    impls = ("diffprivlib", "dpsk objective", "dpsk output")
    rows = []
    for eps in args.epsilons:
        for la in args.log10_alphas:
            for impl in impls:
                recs = [r for r in records if r["impl"] == impl and r["epsilon"] == eps
                        and r["log10_alpha"] == la]
                m, s, _ = C.mean_std([r["error"] for r in recs])
                row = dict(epsilon=eps, log10_alpha=la, impl=impl, mean_error=m, std_error=s,
                           n_fits=len(recs), median_fit_time_s=C.median(
                               [r["fit_time"] for r in recs]),
                           n_failed=sum(r.get("status", "ok") != "ok" for r in recs))
                if impl == "diffprivlib":
                    row["not_converged"] = sum(not r["converged"] for r in recs)
                    row["median_n_iter"] = C.median([float(r["n_iter"]) for r in recs])
                rows.append(row)
    print(f"\nTest error and median fit time (s), mean over {n_folds} folds x {runs} runs. "
          f"diffprivlib {versions[0]} ran in its own venv (scikit-learn {versions[1]}).")
    print(C.format_table(rows, ["epsilon", "log10_alpha", "impl", "mean_error", "std_error",
                                "median_fit_time_s", "not_converged", "median_n_iter"]))
    print("\ndpsk objective vs diffprivlib (same alpha): difference of mean error, "
          "and its standard error over folds x runs")
    losses = []
    for eps in args.epsilons:
        for la in args.log10_alphas:
            a = np.array([r["error"] for r in records if r["impl"] == "dpsk objective"
                          and r["epsilon"] == eps and r["log10_alpha"] == la])
            b = np.array([r["error"] for r in records if r["impl"] == "diffprivlib"
                          and r["epsilon"] == eps and r["log10_alpha"] == la])
            diff = np.nanmean(a) - np.nanmean(b)
            se = np.sqrt(np.nanvar(a, ddof=1) / len(a) + np.nanvar(b, ddof=1) / len(b)) \
                if len(a) > 1 else float("nan")
            verdict = ("dpsk better" if diff < -2 * se else "diffprivlib better"
                       if diff > 2 * se else "tie (within 2 s.e.)")
            if diff > 2 * se:
                losses.append((eps, la))
            print(f"  eps={eps:<5g} alpha=10^{la:<5g} dpsk - diffprivlib = {diff:+.4f} "
                  f"(s.e. {se:.4f}): {verdict}")
    if losses:
        print("  dpsk objective loses at", losses, "- see README 'diffprivlib' for why.")
    print(f"\nWall time {elapsed:.0f}s. {C.load_warning(info) or ''}")
    comments = [f"command: {cmd}", f"machine: {C.machine_line(info)}",
                f"diffprivlib {versions[0]} with scikit-learn {versions[1]} in "
                f"benchmarks/.venv-diffprivlib; max_iter={args.dpl_max_iter}, tol=1e-4 (defaults)",
                f"protocol: Adult, stratified 10-fold CV seed {args.seed}, first {n_folds} folds x "
                f"{runs} runs, fit_intercept=False, C=1/(n_train*alpha)",
                "fit times: " + ("measured on a loaded machine" if C.load_warning(info)
                                 else "machine looked idle at start")]
    print(f"wrote {C.write_csv('diffprivlib', rows, None, comments)}")
    _plot(rows, args)
    return 0


def _plot(rows, args):
    plt = C.get_pyplot()
    if plt is None or args.no_plot:
        return
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for la, ls in zip(args.log10_alphas, ("-", "--", ":", "-.")):
        for impl, color in (("diffprivlib", "C2"), ("dpsk objective", "C1"),
                            ("dpsk output", "C0")):
            rs = [r for r in rows if r["impl"] == impl and r["log10_alpha"] == la]
            axes[0].plot([r["epsilon"] for r in rs], [r["mean_error"] for r in rs], color=color,
                         ls=ls, marker="o", label=f"{impl}, alpha=10^{la:g}")
            axes[1].plot([r["epsilon"] for r in rs], [r["median_fit_time_s"] for r in rs],
                         color=color, ls=ls, marker="o")
    for ax in axes:
        ax.set_xscale("log")
        ax.set_xlabel("epsilon")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("test error (Adult)")
    axes[1].set_ylabel("median fit time (s)")
    axes[0].legend(fontsize=7)
    print(f"wrote {C.save_figure(fig, 'diffprivlib')}")
    plt.close(fig)
