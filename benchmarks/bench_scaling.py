"""Fit time and peak memory of DPLogisticRegression vs number of rows (synthetic).

Generator (``make_synthetic``): ``d = 120`` features; rows ``g / sqrt(d)`` with
``g ~ N(0, I_d)``, then projected into the unit ball (rows of norm > 1 scaled to
norm 1, as dpsk's ``data_norm=1`` clipping would); a unit-norm ``w* ~ N(0, I)``
direction and labels ``y = 1[x.w* + 0.5/sqrt(d) * N(0,1) > 0]`` (a noisy linear
rule, about 15% label noise). Rows are generated in chunks of 10,000 straight into one
float64 array, so generation needs no n x d temporary.

Each row count runs in a FRESH subprocess (``python -m benchmarks.bench_scaling
--worker ...``) that reports:

* ``fit_s``: median wall time of ``--repeats`` fits (epsilon=1, alpha=1e-3,
  objective perturbation, fit_intercept=False, 1 BLAS thread);
* ``data_mb``: size of X (n * d * 8 bytes);
* ``rss_before_fit_mb`` / ``peak_rss_mb``: ``resource.getrusage`` ru_maxrss after
  generating the data and after the fits (whole-process peaks, including the
  interpreter and libraries); ``fit_extra_rss_mb`` is their difference, i.e. the
  fit's own peak working memory;
* ``tracemalloc_peak_mb``: peak of Python-tracked allocations (numpy buffers are
  tracked) during one extra fit run under tracemalloc.

``fit_extra_rss_mb / data_mb`` staying flat as n grows means memory O(n d);
``fit_s / n`` staying flat means time linear in n.
"""

import argparse
import json
import math
import os
import subprocess
import sys
import time

from . import _common as C

SIZES = (10_000, 30_000, 100_000, 300_000, 1_000_000, 2_000_000)
QUICK_SIZES = (10_000, 30_000, 100_000, 200_000)
D = 120


def make_synthetic(n, d=D, seed=0, chunk=10_000):
    """Rows in the unit ball and labels from a noisy linear rule (see module doc)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    w_star = rng.standard_normal(d)
    w_star /= np.linalg.norm(w_star)
    X = np.empty((n, d))
    y = np.empty(n, dtype=np.int64)
    for start in range(0, n, chunk):
        stop = min(n, start + chunk)
        block = X[start:stop]
        block[...] = rng.standard_normal((stop - start, d))
        block /= math.sqrt(d)
        norms = np.sqrt(np.einsum("ij,ij->i", block, block))
        block /= np.maximum(norms, 1.0)[:, None]
        score = block @ w_star + 0.5 / math.sqrt(d) * rng.standard_normal(stop - start)
        y[start:stop] = score > 0
    return X, y


def _maxrss_mb():
    import resource

    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return kb / 1024 if sys.platform != "darwin" else kb / 1024**2


def worker(n, d, seed, repeats, perturbation, tracemalloc_run):
    """Runs in a fresh process: generate, fit, measure; print one JSON line."""
    import tracemalloc
    import warnings

    import numpy as np

    from dpsk import BudgetAccountant, DPLogisticRegression

    X, y = make_synthetic(n, d, seed)
    rss_before = _maxrss_mb()

    def fit():
        return DPLogisticRegression(epsilon=1.0, alpha=1e-3, perturbation=perturbation,
                                    fit_intercept=False, accountant=BudgetAccountant(),
                                    random_state=None, classes=[0, 1]).fit(X, y)

    times = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(repeats):
            t0 = time.perf_counter()
            model = fit()
            times.append(time.perf_counter() - t0)
        peak_rss = _maxrss_mb()
        tm_peak = float("nan")
        if tracemalloc_run:
            tracemalloc.start()
            fit()
            tm_peak = tracemalloc.get_traced_memory()[1] / 1024**2
            tracemalloc.stop()
    train_error = float(np.mean(model.predict(X[:100_000]) != y[:100_000]))
    print(json.dumps(dict(n=n, d=d, fit_s=float(np.median(times)), fit_times=times,
                          data_mb=X.nbytes / 1024**2,
                          rss_before_fit_mb=rss_before, peak_rss_mb=peak_rss,
                          fit_extra_rss_mb=peak_rss - rss_before,
                          tracemalloc_peak_mb=tm_peak, train_error=train_error)))


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks scaling", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="sizes up to 2e5")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sizes", type=int, nargs="+", default=None)
    parser.add_argument("--d", type=int, default=D)
    parser.add_argument("--repeats", type=int, default=None, help="default 3 (1 with --quick)")
    parser.add_argument("--perturbation", choices=("objective", "output"), default="objective")
    parser.add_argument("--no-tracemalloc", action="store_true",
                        help="skip the extra fit under tracemalloc")
    parser.add_argument("--no-plot", action="store_true")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    C.set_quick(args.quick)  # --quick writes to results/quick/, never over committed results
    repeats = args.repeats or (1 if args.quick else 3)
    if args.worker:
        worker(args.sizes[0], args.d, args.seed, repeats, args.perturbation,
               not args.no_tracemalloc)
        return 0
    cmd = "python -m benchmarks scaling " + " ".join(argv or [])
    sizes = args.sizes or (QUICK_SIZES if args.quick else SIZES)
    info = C.machine_info()
    C.header(f"scaling: DPLogisticRegression ({args.perturbation}) on synthetic data, d={args.d},"
             f" fresh subprocess per size, median of {repeats}", info)
    need_gb = max(sizes) * args.d * 8 * 3 / 1024**3
    if need_gb > 0.8 * info["ram_gb"]:
        print(f"WARNING: the largest size may need ~{need_gb:.1f} GB of {info['ram_gb']} GB RAM")
    rows, loads = [], [info["loadavg_1m"]]
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(C.REPO_ROOT), env.get("PYTHONPATH")]))
    for n in sizes:
        wcmd = [sys.executable, "-m", "benchmarks.bench_scaling", "--worker", "--sizes", str(n),
                "--d", str(args.d), "--seed", str(args.seed), "--repeats", str(repeats),
                "--perturbation", args.perturbation] + (
                    ["--no-tracemalloc"] if args.no_tracemalloc else [])
        t0 = time.time()
        res = subprocess.run(wcmd, capture_output=True, text=True, env=env, cwd=C.REPO_ROOT)
        if res.returncode != 0:
            print(res.stderr, file=sys.stderr)
            print(f"  n={n}: worker failed (exit {res.returncode}); stopping here.")
            break
        row = json.loads(res.stdout.strip().splitlines()[-1])
        row.pop("fit_times")
        row["us_per_row"] = row["fit_s"] / n * 1e6
        row["fit_extra_over_data"] = row["fit_extra_rss_mb"] / row["data_mb"]
        rows.append(row)
        loads.append(C.machine_info()["loadavg_1m"])
        print(f"  n={n:>9,d}: fit {row['fit_s']:.3f}s ({row['us_per_row']:.2f} us/row, "
              f"), data {row['data_mb']:.0f} MB, fit extra RSS "
              f"{row['fit_extra_rss_mb']:.0f} MB (x{row['fit_extra_over_data']:.2f} data), "
              f"tracemalloc peak {row['tracemalloc_peak_mb']:.0f} MB [{time.time() - t0:.0f}s]",
              flush=True)
    cols = ["n", "d", "fit_s", "us_per_row", "data_mb", "rss_before_fit_mb",
            "peak_rss_mb", "fit_extra_rss_mb", "fit_extra_over_data", "tracemalloc_peak_mb",
            "train_error"]
    print()
    print(C.format_table(rows, cols, floatfmt="{:.3f}"))
    if len(rows) >= 2:
        import numpy as np

        ln = np.log([r["n"] for r in rows])
        slope_t = np.polyfit(ln, np.log([r["fit_s"] for r in rows]), 1)[0]
        big = [r for r in rows if r["n"] >= 100_000] or rows
        slope_m = np.polyfit(np.log([r["n"] for r in big]),
                             np.log([max(r["fit_extra_rss_mb"], 1e-3) for r in big]), 1)[0]
        print(f"\nlog-log slope of fit time vs n: {slope_t:.2f} (1 = linear); "
              f"of fit extra RSS vs n (n >= 1e5): {slope_m:.2f}; "
              f"fit extra RSS / data size: "
              + ", ".join(f"{r['fit_extra_over_data']:.2f}" for r in rows))
    loaded = max(loads) > 0.5 * (info["nproc"] or 1)
    note = (f"MEASURED ON A LOADED MACHINE (1-min load up to {max(loads):.1f} on "
            f"{info['nproc']} cores): timings are noisy; memory is not affected"
            if loaded else f"machine quiet (max 1-min load {max(loads):.1f})")
    print(note)
    comments = [f"command: {cmd}", f"machine: {C.machine_line(info)}",
                f"DPLogisticRegression(epsilon=1, alpha=1e-3, perturbation={args.perturbation}, "
                f"fit_intercept=False), 1 BLAS thread, fresh subprocess per n, median of "
                f"{repeats}", note]
    print(f"wrote {C.write_csv('scaling', rows, cols, comments)}")
    _plot(rows, args)
    return 0


def _plot(rows, args):
    plt = C.get_pyplot()
    if plt is None or args.no_plot or not rows:
        return
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    n = [r["n"] for r in rows]
    axes[0].loglog(n, [r["fit_s"] for r in rows], "o-", label="fit time")
    axes[0].loglog(n, [rows[0]["fit_s"] * x / n[0] for x in n], "k:", label="linear")
    axes[0].set_ylabel("fit time (s)")
    axes[1].loglog(n, [r["data_mb"] for r in rows], "k:", label="X (n d 8 bytes)")
    axes[1].loglog(n, [max(r["fit_extra_rss_mb"], 1e-1) for r in rows], "o-",
                   label="fit extra peak RSS")
    axes[1].loglog(n, [r["tracemalloc_peak_mb"] for r in rows], "s--",
                   label="tracemalloc peak (fit)")
    axes[1].set_ylabel("MB")
    for ax in axes:
        ax.set_xlabel("rows n (d = %d)" % rows[0]["d"])
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=8)
    print(f"wrote {C.save_figure(fig, 'scaling')}")
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
