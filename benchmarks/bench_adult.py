"""Accuracy on Adult: Table 1 and Figure 2 of Chaudhuri, Monteleoni and Sarwate (2011).

Sub-commands (through ``python -m benchmarks``):

``table1``
    Test error on Adult at epsilon = 0.1 over the paper's grid of Lambda
    (``alpha = 10**-{10, 7, 4, 3.5, 3, 2.5, 2, 1.5}``) for non-private, output
    perturbation (Algorithm 1) and objective perturbation (Algorithm 2), with the
    logistic and Huber (h = 0.5) losses, no intercept; then the fixed-alpha
    acceptance check (objective at 10**-2.5, output at 10**-2, 10-fold CV x 3
    runs) with PASS/FAIL lines.
``epsilon``
    Test error against epsilon in [0.01, 1] (8 log-spaced values).

Pure objective perturbation is calibrated with Algorithm 2's own slack
``log(1 + 2c/(n Lambda) + c^2/(n Lambda)^2)`` by default (``--slack paper``,
through ``dpsk.mechanisms._erm.algorithm2_slack``), so that the table
reproduces the paper's algorithm; ``--slack dpsk`` uses the library's default,
``log(1 + c/(n Lambda))`` (``docs/privacy.rst``).

Protocol: stratified shuffled 10-fold CV on the 45,222 rows; each private model
is fitted ``--runs`` times per fold with independent noise; the reported error
is the mean over folds x runs (the paper: 10 folds x 50 runs). Non-private
models are deterministic and fitted once per fold.
"""

import argparse
import contextlib
import math
import time

import numpy as np

from . import _common as C

CHECK_BARS = (
    # (loss, method, log10 alpha, maximum mean error)
    ("logistic", "objective", -2.5, 0.225),
    ("huber", "objective", -2.5, 0.215),
    ("logistic", "output", -2.0, 0.245),
    ("huber", "output", -2.0, 0.245),
)
CHECK_FOLDS, CHECK_RUNS = 10, 3

QUICK_LOG10_ALPHAS = (-4.0, -3.0, -2.5, -2.0, -1.5)
EPSILONS = tuple(float(f"{e:.4g}") for e in np.logspace(-2, 0, 8))
QUICK_EPSILONS = EPSILONS
#: Small grid for ``epsilon --alpha-mode best``.
EPS_ALPHA_GRID = (-3.5, -3.0, -2.5, -2.0, -1.5)
METHOD_IDS = {("logistic", "nonprivate"): 0, ("logistic", "output"): 1,
              ("logistic", "objective"): 2, ("huber", "nonprivate"): 3,
              ("huber", "output"): 4, ("huber", "objective"): 5}

# ---------------------------------------------------------------------------- core
_DATA = {}


def _data():
    if "X" not in _DATA:
        _DATA["X"], _DATA["y"] = C.load_adult_data()
    return _DATA["X"], _DATA["y"]


def _slack_context(slack):
    """Algorithm 2's slack for ``"paper"``, dpsk's default for ``"dpsk"``."""
    from dpsk.mechanisms._erm import algorithm2_slack

    return algorithm2_slack() if slack == "paper" else contextlib.nullcontext()


def _cell(loss, method, log10_alpha, epsilon, fold, run, train, test, seed, tol,
          slack="paper"):
    X, y = _data()
    alpha = 10.0 ** log10_alpha
    ss = C.seed_for(seed, METHOD_IDS[(loss, method)], int(round(-log10_alpha * 10)),
                    int(round(epsilon * 1e6)), fold, run)
    # Set in the worker itself: the setting does not cross process boundaries.
    with _slack_context(slack):
        res = C.evaluate_cell(X, y, train, test, loss, method, alpha, epsilon, ss,
                              tol=tol)
    return dict(loss=loss, method=method, log10_alpha=log10_alpha, alpha=alpha,
                epsilon=epsilon, fold=fold, run=run, tol=tol, **res)


def evaluate_grid(configs, folds, n_folds, runs, seed, n_jobs, tol, desc, cache=None,
                  slack="paper"):
    """Evaluate (loss, method, log10_alpha, epsilon) configs on the first ``n_folds``.

    Returns the raw per-(fold, run) records. ``cache`` (a dict) lets two
    experiments share cells that have the same config, fold and run (and slack).
    """
    cache = {} if cache is None else cache
    tasks = []
    for loss, method, la, eps in configs:
        n_runs = 1 if method == "nonprivate" else runs
        eps_key = 0.0 if method == "nonprivate" else eps
        for k in range(n_folds):
            for r in range(n_runs):
                key = (loss, method, la, eps_key, k, r)
                if key not in cache:
                    cache[key] = None
                    train, test = folds[k]
                    tasks.append((loss, method, la, eps_key, k, r, train, test, seed, tol,
                                  slack))
    for rec in C.run_tasks(_cell, tasks, n_jobs=n_jobs, desc=desc):
        cache[(rec["loss"], rec["method"], rec["log10_alpha"], rec["epsilon"],
               rec["fold"], rec["run"])] = rec
    out = []
    for loss, method, la, eps in configs:
        n_runs = 1 if method == "nonprivate" else runs
        eps_key = 0.0 if method == "nonprivate" else eps
        out.extend(cache[(loss, method, la, eps_key, k, r)]
                   for k in range(n_folds) for r in range(n_runs))
    return out


def summarise(records, keys):
    groups = {}
    for rec in records:
        groups.setdefault(tuple(rec[k] for k in keys), []).append(rec)
    rows = []
    for key, recs in groups.items():
        m, s, n_ok = C.mean_std([r["error"] for r in recs])
        failures = [r["status"] for r in recs if r["status"] != "ok"]
        row = dict(zip(keys, key))
        row.update(mean_error=m, std_error=s, n_fits=len(recs), n_failed=len(failures),
                   mean_fit_time_s=C.mean_std([r["fit_time"] for r in recs])[0],
                   tol=recs[0]["tol"], failure=failures[0] if failures else "")
        rows.append(row)
    return rows


def _common_args(parser, default_runs):
    parser.add_argument("--quick", action="store_true",
                        help="fewer folds/runs/grid points (a few minutes on 2 cores)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the folds and the noise")
    parser.add_argument("--folds", type=int, default=None,
                        help="number of the 10 CV folds to evaluate (default 10; 3 with --quick)")
    parser.add_argument("--runs", type=int, default=None,
                        help=f"noise draws per fold (default {default_runs}; 1 with --quick)")
    parser.add_argument("--n-jobs", type=int, default=None,
                        help="worker processes (default: all cores)")
    parser.add_argument("--tol", type=float, default=1e-10,
                        help="dpsk solver tolerance (library default 1e-10)")
    parser.add_argument("--slack", choices=("paper", "dpsk"), default="paper",
                        help="pure objective perturbation's change-of-variables slack: "
                             "Algorithm 2's (paper, default) or dpsk's, half of it")
    parser.add_argument("--no-plot", action="store_true")


# --------------------------------------------------------------------------- table1
def table1(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks table1", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    _common_args(parser, default_runs=3)
    parser.add_argument("--check-only", action="store_true",
                        help="only the fixed-alpha acceptance check")
    args = parser.parse_args(argv)
    C.set_quick(args.quick)  # --quick writes to results/quick/, never over committed results
    cmd = "python -m benchmarks table1 " + " ".join(argv or [])
    C.limit_blas_threads()
    n_folds = args.folds or (3 if args.quick else 10)
    runs = args.runs or (1 if args.quick else 3)
    n_jobs = args.n_jobs or C.default_jobs()
    grid = QUICK_LOG10_ALPHAS if args.quick else C.PAPER_LOG10_ALPHAS
    info = C.machine_info()
    C.header(f"table1: Adult, epsilon=0.1, {n_folds} of 10 folds x {runs} runs, no intercept", info)
    X, y = _data()
    folds = C.cv_folds(y, 10, args.seed)
    cache = {}
    t0 = time.time()
    grid_rows = []
    if not args.check_only:
        configs = [(loss, method, la, 0.1) for loss in C.LOSSES for method in C.METHODS
                   for la in grid]
        records = evaluate_grid(configs, folds, n_folds, runs, args.seed, n_jobs, args.tol,
                                "table1 grid", cache, slack=args.slack)
        grid_rows = summarise(records, ["loss", "method", "log10_alpha"])
        for row in grid_rows:
            paper = C.PAPER_TABLE1[(row["loss"], row["method"])]
            row["paper_error"] = paper[C.PAPER_LOG10_ALPHAS.index(row["log10_alpha"])]
        _print_table1(grid_rows, grid, n_folds, runs)
    t_grid = time.time() - t0

    # Fixed-alpha acceptance check: always 10-fold CV x 3 runs.
    t1 = time.time()
    check_cfg = [(loss, method, la, 0.1) for loss, method, la, _ in CHECK_BARS]
    recs = evaluate_grid(check_cfg, folds, CHECK_FOLDS, CHECK_RUNS, args.seed, n_jobs,
                         args.tol, "fixed-alpha check", cache, slack=args.slack)
    check_rows = summarise(recs, ["loss", "method", "log10_alpha"])
    print(f"\nFixed-alpha check (epsilon=0.1, no intercept, {CHECK_FOLDS}-fold CV x "
          f"{CHECK_RUNS} runs, seed {args.seed}):")
    all_pass = True
    for row, (_, _, _, bar) in zip(check_rows, CHECK_BARS):
        ok = row["mean_error"] <= bar
        all_pass &= ok
        row["bar"] = bar
        row["result"] = "PASS" if ok else "FAIL"
        print(f"  {row['result']}  {row['loss']:8s} {row['method']:9s} alpha=10^{row['log10_alpha']:g}: "
              f"error {row['mean_error']:.4f} +/- {row['std_error']:.4f} (sd over {row['n_fits']} fits)"
              f" <= {bar}")
    print(f"  overall: {'PASS' if all_pass else 'FAIL'}")
    elapsed = time.time() - t0
    print(f"\nWall time: grid {t_grid:.0f}s, check {time.time() - t1:.0f}s, total {elapsed:.0f}s "
          f"({n_jobs} workers)")

    comments = [f"command: {cmd}", f"machine: {C.machine_line(info)}",
                f"protocol: Adult 45222x105 (paper preprocessing), stratified 10-fold CV seed "
                f"{args.seed}, first {n_folds} folds x {runs} runs (non-private: 1 run), "
                f"epsilon=0.1, fit_intercept=False, dpsk tol={args.tol:g}, "
                f"objective slack={args.slack}", f"wall time: {elapsed:.0f}s with {n_jobs} workers"]
    cols = ["loss", "method", "log10_alpha", "mean_error", "std_error", "paper_error", "n_fits",
            "n_failed", "mean_fit_time_s", "tol", "failure"]
    if grid_rows:
        path = C.write_csv("table1", grid_rows, cols, comments)
        print(f"wrote {path}")
        _plot_table1(grid_rows, args)
    path = C.write_csv("table1_check", check_rows,
                       ["loss", "method", "log10_alpha", "mean_error", "std_error", "bar", "result",
                        "n_fits", "n_failed", "mean_fit_time_s"],
                       [c.replace(f"first {n_folds} folds x {runs} runs",
                                  f"{CHECK_FOLDS} folds x {CHECK_RUNS} runs") for c in comments])
    print(f"wrote {path}")
    return 0 if all_pass else 1


def _print_table1(rows, grid, n_folds, runs):
    by = {(r["loss"], r["method"], r["log10_alpha"]): r for r in rows}
    print(f"\nTest error on Adult, epsilon=0.1 (mean over {n_folds} folds x {runs} runs; "
          "* = best of the row; paper's Table 1 below each row)")
    head = f"{'':22s}" + "".join(f"{'10^' + format(la, 'g'):>9s}" for la in grid)
    print(head)
    summary = []
    for loss in C.LOSSES:
        for method in C.METHODS:
            errs = [by[(loss, method, la)]["mean_error"] for la in grid]
            finite = [e for e in errs if not math.isnan(e)]
            best = min(finite) if finite else float("nan")
            cells = "".join(
                f"{('*' if e == best else '') + ('nan' if math.isnan(e) else format(e, '.4f')):>9s}"
                for e in errs)
            print(f"{loss + ' ' + method:22s}{cells}")
            paper = C.PAPER_TABLE1[(loss, method)]
            pcells = "".join(f"{paper[C.PAPER_LOG10_ALPHAS.index(la)]:>9.4f}" for la in grid)
            print(f"{'  (paper)':22s}{pcells}")
            best_la = grid[errs.index(best)] if finite else float("nan")
            summary.append(dict(loss=loss, method=method, best_error=best,
                                best_alpha=f"10^{best_la:g}", paper_best=min(paper),
                                paper_alpha=f"10^{C.PAPER_LOG10_ALPHAS[paper.index(min(paper))]:g}"))
    failed = [r for r in rows if r["n_failed"]]
    for r in failed:
        print(f"  note: {r['loss']} {r['method']} 10^{r['log10_alpha']:g}: {r['n_failed']} failed "
              f"fits ({r['failure']})")
    print("\nBest error per method over the grid (selected on the test folds, as in the paper):")
    print(C.format_table(summary, ["loss", "method", "best_error", "best_alpha", "paper_best",
                                   "paper_alpha"]))


def _plot_table1(rows, args):
    plt = C.get_pyplot()
    if plt is None or args.no_plot:
        return
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for ax, loss in zip(axes, C.LOSSES):
        for method, (color, marker) in zip(C.METHODS, (("k", "."), ("C0", "o"), ("C1", "s"))):
            rs = sorted((r for r in rows if r["loss"] == loss and r["method"] == method),
                        key=lambda r: r["log10_alpha"])
            ax.plot([r["log10_alpha"] for r in rs], [r["mean_error"] for r in rs], color=color,
                    marker=marker, label=f"{method} (dpsk)" if method != "nonprivate" else "non-private")
            paper = C.PAPER_TABLE1[(loss, method)]
            las = [r["log10_alpha"] for r in rs]
            ax.plot(las, [paper[C.PAPER_LOG10_ALPHAS.index(la)] for la in las],
                    color=color, ls=":", alpha=0.6, label=f"{method} (paper)")
        ax.set_title(f"{loss}, Adult, epsilon=0.1")
        ax.set_xlabel("log10(alpha)  (the paper's Lambda)")
        ax.set_ylim(0.1, 0.6)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("test error")
    axes[1].legend(fontsize=7)
    print(f"wrote {C.save_figure(fig, 'table1')}")
    plt.close(fig)


# -------------------------------------------------------------------------- epsilon
#: Lambda per method for ``--alpha-mode paper``: the best of the paper's Table 1
#: at epsilon = 0.1 (what the paper does for its Figure 2).
PAPER_BEST_LOG10_ALPHA = {("logistic", "nonprivate"): -7.0, ("logistic", "output"): -2.0,
                          ("logistic", "objective"): -2.5, ("huber", "nonprivate"): -7.0,
                          ("huber", "output"): -2.0, ("huber", "objective"): -2.5}


def epsilon(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks epsilon",
        description="Test error vs epsilon on Adult (Figure 2 of the paper).")
    _common_args(parser, default_runs=3)
    parser.add_argument("--alpha-mode", choices=("paper", "best"), default="paper",
                        help="paper: alpha fixed per method at the paper's Table 1 best "
                             "(as its Figure 2); best: per epsilon, the best alpha of "
                             f"10^{list(EPS_ALPHA_GRID)} chosen on the test folds (an oracle)")
    args = parser.parse_args(argv)
    C.set_quick(args.quick)  # --quick writes to results/quick/, never over committed results
    cmd = "python -m benchmarks epsilon " + " ".join(argv or [])
    C.limit_blas_threads()
    n_folds = args.folds or (3 if args.quick else 10)
    runs = args.runs or (1 if args.quick else 3)
    n_jobs = args.n_jobs or C.default_jobs()
    eps_grid = QUICK_EPSILONS if args.quick else EPSILONS
    info = C.machine_info()
    C.header(f"epsilon: Adult, error vs epsilon, {n_folds} of 10 folds x {runs} runs, "
             f"alpha mode '{args.alpha_mode}'", info)
    X, y = _data()
    folds = C.cv_folds(y, 10, args.seed)
    t0 = time.time()
    configs = []
    for loss in C.LOSSES:
        for method in C.METHODS:
            alphas = ([PAPER_BEST_LOG10_ALPHA[(loss, method)]] if args.alpha_mode == "paper"
                      else EPS_ALPHA_GRID)
            for la in alphas:
                for eps in (eps_grid if method != "nonprivate" else (0.0,)):
                    configs.append((loss, method, la, eps))
    records = evaluate_grid(configs, folds, n_folds, runs, args.seed, n_jobs, args.tol,
                            "epsilon sweep", slack=args.slack)
    rows = summarise(records, ["loss", "method", "log10_alpha", "epsilon"])
    # Keep, per (loss, method, epsilon), the best alpha (a no-op in paper mode).
    best = {}
    for r in rows:
        key = (r["loss"], r["method"], r["epsilon"])
        if key not in best or (r["mean_error"] < best[key]["mean_error"]):
            best[key] = r
    out = sorted(best.values(), key=lambda r: (r["loss"], C.METHODS.index(r["method"]),
                                               r["epsilon"]))
    label = ("alpha fixed per method = the paper's Table-1 best at epsilon=0.1"
             if args.alpha_mode == "paper" else
             "alpha = best of the small grid PER EPSILON, selected on the test folds (oracle, "
             "optimistic; the paper's figures fix the alpha chosen on test error at eps=0.1)")
    print(f"\nTest error vs epsilon ({label}); mean over {n_folds} folds x {runs} runs")
    for loss in C.LOSSES:
        npriv = best[(loss, "nonprivate", 0.0)]
        print(f"\n{loss}: non-private error {npriv['mean_error']:.4f} "
              f"(alpha=10^{npriv['log10_alpha']:g})")
        print(f"{'epsilon':>9s}" + "".join(f"{m:>22s}" for m in ("output", "objective")))
        for eps in eps_grid:
            cells = ""
            for m in ("output", "objective"):
                r = best[(loss, m, eps)]
                cells += f"{r['mean_error']:>12.4f} (10^{r['log10_alpha']:<4g})"
            print(f"{eps:>9g}{cells}")
    elapsed = time.time() - t0
    print(f"\nWall time {elapsed:.0f}s ({n_jobs} workers)")
    comments = [f"command: {cmd}", f"machine: {C.machine_line(info)}",
                f"protocol: Adult, stratified 10-fold CV seed {args.seed}, first {n_folds} folds x "
                f"{runs} runs, fit_intercept=False, dpsk tol={args.tol:g}, "
                f"objective slack={args.slack}",
                f"alpha selection: {label}", f"wall time: {elapsed:.0f}s with {n_jobs} workers"]
    cols = ["loss", "method", "epsilon", "log10_alpha", "mean_error", "std_error", "n_fits",
            "n_failed", "mean_fit_time_s"]
    name = "epsilon" if args.alpha_mode == "paper" else "epsilon_best_alpha"
    print(f"wrote {C.write_csv(name, out, cols, comments)}")
    _plot_epsilon(out, eps_grid, name, label, args)
    return 0


def _plot_epsilon(rows, eps_grid, name, label, args):
    plt = C.get_pyplot()
    if plt is None or args.no_plot:
        return
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for ax, loss in zip(axes, C.LOSSES):
        for method, style in (("output", "C0-o"), ("objective", "C1-s")):
            rs = [r for r in rows if r["loss"] == loss and r["method"] == method]
            ax.plot([r["epsilon"] for r in rs], [r["mean_error"] for r in rs], style,
                    label=method)
        npriv = [r for r in rows if r["loss"] == loss and r["method"] == "nonprivate"][0]
        ax.axhline(npriv["mean_error"], color="k", ls="--", label="non-private")
        ax.axhline(0.2478, color="gray", ls=":", label="always predict 0")
        ax.set_xscale("log")
        ax.set_xlabel("epsilon")
        ax.set_title(f"{loss}, Adult")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("test error")
    axes[1].legend(fontsize=8)
    fig.suptitle(label, fontsize=8)
    print(f"wrote {C.save_figure(fig, name)}")
    plt.close(fig)
