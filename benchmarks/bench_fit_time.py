"""Fit time of dpsk relative to its non-private counterpart on Adult (all 45,222 rows).

* ``DPLogisticRegression(alpha, perturbation=...)`` vs
  ``sklearn.linear_model.LogisticRegression(solver="lbfgs", C=1/(n*alpha))``
  (scikit-learn defaults otherwise: tol=1e-4, max_iter=100), ``fit_intercept``
  matched.
* ``DPHuberSVM(alpha, h=0.5, perturbation=...)`` vs a scipy L-BFGS-B solve of the
  SAME Huber objective ``mean l_h(y w.x) + alpha/2 ||w||^2`` (vectorised
  value+gradient, scipy defaults: gtol=1e-5, maxiter=15000; with an intercept,
  a column of ones is appended). ``SGDClassifier(loss="modified_huber",
  alpha=alpha)`` (a different loss, tol=1e-3) is timed as a second reference.

dpsk certifies a gradient norm <= 1e-10 (its default ``tol``) where the
baselines stop at scikit-learn's / scipy's default tolerances; that is part of
what is measured. ``--threads default`` leaves BLAS at its default thread
count (one per core) for the baselines; dpsk limits its own fits to one BLAS
thread whatever the setting (``dpsk._data._threads``), so that ratio is what a user
with default settings sees. Each timing is the median of ``--repeats`` fits after one
warm-up fit; the ratio is median(dpsk) / median(baseline). Goal: <= 1.5.
Timings are sensitive to machine load: rerun on a quiet machine.
"""

import argparse
import time
import warnings

import numpy as np

from . import _common as C


def _huber_lbfgs(X, y01, alpha, fit_intercept, h=C.HUBER_H):
    from scipy.optimize import minimize

    if fit_intercept:
        X = np.hstack([X, np.ones((X.shape[0], 1))])
    y = np.where(y01 > 0, 1.0, -1.0)
    n = X.shape[0]

    def fg(w):
        z = y * (X @ w)
        val = np.where(z < 1 - h, 1.0 - z, np.where(z > 1 + h, 0.0, (1 + h - z) ** 2 / (4 * h)))
        der = np.clip(-(1 + h - z) / (2 * h), -1.0, 0.0)
        return val.mean() + 0.5 * alpha * (w @ w), X.T @ (y * der) / n + alpha * w

    return minimize(fg, np.zeros(X.shape[1]), jac=True, method="L-BFGS-B").x


def _fit_fn(kind, X, y, alpha, fit_intercept, perturbation, seed):
    from sklearn.linear_model import LogisticRegression, SGDClassifier

    from dpsk import BudgetAccountant, DPHuberSVM, DPLogisticRegression

    n = X.shape[0]
    if kind == "sklearn LogisticRegression(lbfgs)":
        return lambda: LogisticRegression(solver="lbfgs", C=1.0 / (n * alpha),
                                          fit_intercept=fit_intercept).fit(X, y)
    if kind == "scipy L-BFGS-B Huber":
        return lambda: _huber_lbfgs(X, y, alpha, fit_intercept)
    if kind == "sklearn SGDClassifier(modified_huber)":
        return lambda: SGDClassifier(loss="modified_huber", alpha=alpha,
                                     fit_intercept=fit_intercept, random_state=seed).fit(X, y)
    cls = DPLogisticRegression if kind == "DPLogisticRegression" else DPHuberSVM
    # random_state=None: the production path, secure noise read from the OS.
    return lambda: cls(epsilon=0.1, alpha=alpha, perturbation=perturbation,
                       fit_intercept=fit_intercept, accountant=BudgetAccountant(),
                       random_state=None).fit(X, y)


def time_fit(fn, repeats):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fn()  # warm-up (imports, caches)
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
    return float(np.median(times)), times


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks fit-time", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="3 repeats, one alpha")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=None, help="default 7 (3 with --quick)")
    parser.add_argument("--log10-alphas", type=float, nargs="+", default=None,
                        help="default -3 -2 (-2.5 with --quick)")
    parser.add_argument("--intercept", choices=("both", "no", "yes"), default="both")
    parser.add_argument("--threads", default="1",
                        help="BLAS threads during the timings: an int (default 1, so ratios "
                             "do not depend on thread scheduling) or 'default' (no limit)")
    parser.add_argument("--models", choices=("all", "logistic"), default="all",
                        help="'logistic': DPLogisticRegression vs LogisticRegression only")
    parser.add_argument("--no-plot", action="store_true")
    args = parser.parse_args(argv)
    C.set_quick(args.quick)  # --quick writes to results/quick/, never over committed results
    cmd = "python -m benchmarks fit-time " + " ".join(argv or [])
    repeats = args.repeats or (3 if args.quick else 7)
    las = args.log10_alphas or ([-2.5] if args.quick else [-3.0, -2.0])
    intercepts = {"both": (False, True), "no": (False,), "yes": (True,)}[args.intercept]
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - threadpoolctl ships with scikit-learn
        threadpool_limits = None
    info = C.machine_info()
    C.header(f"fit-time: dpsk / non-private on Adult (n=45222, d=105), median of {repeats}", info)
    X, y = C.load_adult_data()
    pairs = [("DPLogisticRegression", "sklearn LogisticRegression(lbfgs)"),
             ("DPHuberSVM", "scipy L-BFGS-B Huber"),
             ("DPHuberSVM", "sklearn SGDClassifier(modified_huber)")]
    if args.models == "logistic":
        pairs = pairs[:1]
    rows = []
    loads = [info["loadavg_1m"]]
    threads = None if args.threads == "default" else int(args.threads)
    limiter = threadpool_limits(threads) if threadpool_limits and threads else None
    try:
        for fi in intercepts:
            for la in las:
                alpha = 10.0 ** la
                base_cache = {}
                for dp_kind, base_kind in pairs:
                    if base_kind not in base_cache:
                        base_cache[base_kind] = time_fit(
                            _fit_fn(base_kind, X, y, alpha, fi, None, args.seed), repeats)
                    t_base, _ = base_cache[base_kind]
                    for pert in ("objective", "output"):
                        t_dp, _ = time_fit(_fit_fn(dp_kind, X, y, alpha, fi, pert, args.seed),
                                           repeats)
                        rows.append(dict(model=dp_kind, perturbation=pert, baseline=base_kind,
                                         blas_threads=args.threads,
                                         fit_intercept=fi, log10_alpha=la,
                                         dpsk_median_s=t_dp, baseline_median_s=t_base,
                                         ratio=t_dp / t_base,
                                         goal="ok" if t_dp / t_base <= 1.5 else "> 1.5"))
                        print(f"  {dp_kind:20s} {pert:9s} intercept={fi!s:5s} alpha=10^{la:g}: "
                              f"{t_dp:.3f}s vs {base_kind} {t_base:.3f}s -> x{t_dp / t_base:.2f}",
                              flush=True)
                loads.append(C.machine_info()["loadavg_1m"])
    finally:
        if limiter is not None:
            limiter.restore_original_limits()
    print()
    print(C.format_table(rows, ["model", "perturbation", "baseline", "blas_threads",
                                "fit_intercept",
                                "log10_alpha", "dpsk_median_s", "baseline_median_s", "ratio",
                                "goal"], floatfmt="{:.3f}"))
    loaded = max(loads) > 0.5 * (info["nproc"] or 1)
    note = (f"MEASURED ON A LOADED MACHINE (1-min load average up to {max(loads):.1f} on "
            f"{info['nproc']} cores): rerun on a quiet machine" if loaded
            else f"machine quiet (max 1-min load {max(loads):.1f})")
    print(f"\n{note}")
    comments = [f"command: {cmd}", f"machine: {C.machine_line(info)}",
                f"median of {repeats} fits after 1 warm-up, BLAS threads: {args.threads} "
                "(dpsk's own fits: 1, dpsk._data._threads), "
                "epsilon=0.1, dpsk tol=1e-10", note]
    name = "fit_time" if args.threads == "1" else f"fit_time_threads_{args.threads}"
    print(f"wrote {C.write_csv(name, rows, None, comments)}")
    _plot(rows, args)
    return 0


def _plot(rows, args):
    plt = C.get_pyplot()
    if plt is None or args.no_plot:
        return
    fig, ax = plt.subplots(figsize=(9, 0.35 * len(rows) + 1))
    labels = [f"{r['model']} {r['perturbation']} vs {r['baseline'].split('(')[0]}"
              f" (icpt={int(r['fit_intercept'])}, a=10^{r['log10_alpha']:g})" for r in rows]
    ax.barh(range(len(rows)), [r["ratio"] for r in rows])
    ax.axvline(1.5, color="r", ls="--", label="goal 1.5x")
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(labels, fontsize=7)
    ax.set_xlabel("fit time ratio dpsk / non-private")
    ax.legend()
    print(f"wrote {C.save_figure(fig, 'fit_time')}")
    plt.close(fig)
