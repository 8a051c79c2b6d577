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


def make_synthetic(n, d=D, seed=0, chunk=10_000, dtype="float64"):
    """Rows in the unit ball and labels from a noisy linear rule (see module doc).

    Rows are generated ``chunk`` at a time (:func:`synthetic_chunk`) straight
    into one array of ``dtype``: no n x d temporary.
    """
    import numpy as np

    X = np.empty((n, d), dtype=dtype)
    y = np.empty(n, dtype=np.int64)
    for index, start in enumerate(range(0, n, chunk)):
        stop = min(n, start + chunk)
        X[start:stop], y[start:stop] = synthetic_chunk(seed, index, stop - start, d, dtype)
    return X, y


def synthetic_chunk(seed, index, rows, d=D, dtype="float64"):
    """Chunk ``index`` of the synthetic data: its own generator, so any process can make it.

    The same ``(seed, index, rows)`` gives the same rows in memory and on a Dask
    worker, so every mode of the benchmark fits the same data.
    """
    import numpy as np

    w_star = np.random.default_rng(seed).standard_normal(d)
    w_star /= np.linalg.norm(w_star)
    rng = np.random.default_rng([seed, index])
    block = rng.standard_normal((rows, d)) / math.sqrt(d)
    block /= np.maximum(np.sqrt(np.einsum("ij,ij->i", block, block)), 1.0)[:, None]
    score = block @ w_star + 0.5 / math.sqrt(d) * rng.standard_normal(rows)
    return block.astype(dtype, copy=False), (score > 0).astype(np.int64)


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


#: Rows per chunk of the float32 data of ``--modes`` (and per Dask block).
MODE_CHUNK = 100_000
#: Working memory (MiB) of the ``chunked`` mode: the design matrix is never stored.
CHUNKED_WORKING_MEMORY = 64
#: Largest n at which scikit-learn's LogisticRegression is timed for the ratio.
SKLEARN_MAX_N = 2_000_000
#: Modes that fit on a Dask LocalCluster (2 workers x 1 thread).
DASK_MODES = ("dask", "dask-threads")


def _load_note(loads, info):
    """One line saying whether the machine was loaded while the points were taken."""
    if max(loads) > 0.5 * (info["nproc"] or 1):
        return (f"MEASURED ON A LOADED MACHINE (1-min load up to {max(loads):.1f} on "
                f"{info['nproc']} cores): timings are noisy; memory is not affected")
    return f"machine quiet (max 1-min load {max(loads):.1f})"


def _dask_data(client, n, d, seed):
    """Float32 X and y as Dask arrays made chunk by chunk on the workers and kept there."""
    import dask.array as da
    import numpy as np
    from dask import delayed
    from distributed import wait

    xs, ys = [], []
    for index, start in enumerate(range(0, n, MODE_CHUNK)):
        rows = min(MODE_CHUNK, n - start)
        chunk = delayed(synthetic_chunk, pure=True, nout=2)(seed, index, rows, d, "float32")
        xs.append(da.from_delayed(chunk[0], shape=(rows, d), dtype=np.float32))
        ys.append(da.from_delayed(chunk[1], shape=(rows,), dtype=np.int64))
    X, y = client.persist([da.concatenate(xs), da.concatenate(ys)])
    wait([X, y])
    return X, y


def _reset_peak_rss():
    """Reset this process's peak RSS (Linux ``clear_refs``), so the fit's own peak is read."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def _peak_rss_mb():
    """Peak RSS since the last :func:`_reset_peak_rss` (VmHWM), else since start."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return _maxrss_mb()


def _current_rss_mb():
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def worker_mode(n, d, seed, mode, perturbation, alpha, with_sklearn=True):
    """One (n, mode) point in a fresh process: generate float32 data, fit once, measure."""
    import warnings

    from sklearn import config_context

    from dpsk import BudgetAccountant, DPLogisticRegression

    client = cluster = None
    if mode in DASK_MODES:
        from distributed import Client, LocalCluster

        # "dask": two worker processes; "dask-threads": two workers in this process
        # (no pickling of w and of the sums, one GIL).
        cluster = LocalCluster(processes=mode == "dask", n_workers=2, threads_per_worker=1,
                               dashboard_address=None, memory_limit=0)
        client = Client(cluster)
        X, y = _dask_data(client, n, d, seed)
    else:
        X, y = make_synthetic(n, d, seed, chunk=MODE_CHUNK, dtype="float32")
    if client is not None:
        client.run(_reset_peak_rss)
    rss_before = _current_rss_mb()
    _reset_peak_rss()
    model = DPLogisticRegression(epsilon=1.0, alpha=alpha, perturbation=perturbation,
                                 delta=1e-6 if perturbation == "gradient" else 0.0,
                                 accountant=BudgetAccountant(), random_state=None,
                                 classes=[0, 1])
    # "memory": the design matrix is stored whatever its size.
    memory = CHUNKED_WORKING_MEMORY if mode == "chunked" else 2**20
    with warnings.catch_warnings(), config_context(working_memory=memory):
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        model.fit(X, y)
        fit_s = time.perf_counter() - t0
    row = dict(n=n, d=d, mode=mode, perturbation=perturbation, dtype="float32", fit_s=fit_s,
               data_mb=n * d * 4 / 1024**2, rss_before_fit_mb=rss_before,
               peak_rss_mb=_peak_rss_mb(), fit_extra_rss_mb=_peak_rss_mb() - rss_before)
    if client is not None:
        row["worker_peak_rss_mb"] = max(client.run(_peak_rss_mb).values())
        client.close()
        cluster.close()
    elif n <= SKLEARN_MAX_N and with_sklearn:
        from sklearn.linear_model import LogisticRegression

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t0 = time.perf_counter()
            LogisticRegression(C=1.0 / (n * alpha)).fit(X, y)
            row["sklearn_s"] = time.perf_counter() - t0
        row["ratio_to_sklearn"] = fit_s / row["sklearn_s"]
    print(json.dumps(row))


def run_modes(args):
    """``--modes``: the float32 table, in-memory vs chunked vs Dask, one process per point."""
    cmd = "python -m benchmarks scaling " + " ".join(args.argv)
    sizes = args.sizes or ((10_000, 100_000) if args.quick else (10_000, 100_000, 1_000_000))
    info = C.machine_info()
    C.header(f"scaling modes: DPLogisticRegression ({args.perturbation}) on float32 synthetic "
             f"data, d={args.d}, modes {', '.join(args.modes)}, one fit per point", info)
    env = dict(os.environ)
    if args.threads != "default":
        env.update(OMP_NUM_THREADS=args.threads, OPENBLAS_NUM_THREADS=args.threads,
                   MKL_NUM_THREADS=args.threads)
    else:
        for key in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            env.pop(key, None)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(C.REPO_ROOT), env.get("PYTHONPATH")]))
    rows, loads, started = [], [info["loadavg_1m"]], time.time()
    for n in sizes:
        # With --pairs k the modes alternate k times (memory, dask, memory, dask, ...),
        # so each Dask time has an in-memory time taken next to it on the same load.
        for pair, mode in [(p, m) for p in range(args.pairs) for m in args.modes]:
            if time.time() - started > args.budget_s:
                print(f"  n={n:,d} {mode}: skipped, time budget of {args.budget_s}s used up")
                continue
            wcmd = [sys.executable, "-m", "benchmarks.bench_scaling", "--worker-mode", mode,
                    "--sizes", str(n), "--d", str(args.d), "--seed", str(args.seed),
                    "--perturbation", args.perturbation, "--alpha", str(args.alpha)] + (
                        ["--no-sklearn"] if pair > 0 else [])
            t0 = time.time()
            res = subprocess.run(wcmd, capture_output=True, text=True, env=env, cwd=C.REPO_ROOT)
            if res.returncode != 0:
                print(res.stderr[-2000:], file=sys.stderr)
                print(f"  n={n:,d} {mode}: worker failed (exit {res.returncode})")
                continue
            row = json.loads(res.stdout.strip().splitlines()[-1])
            row["us_per_row"] = row["fit_s"] / n * 1e6
            row["pair"] = pair
            rows.append(row)
            loads.append(C.machine_info()["loadavg_1m"])
            row["load_1m"] = loads[-1]
            print(f"  n={n:>10,d} {mode:8s}: fit {row['fit_s']:.2f}s, peak RSS "
                  f"{row['peak_rss_mb']:.0f} MB (fit extra {row['fit_extra_rss_mb']:.0f} MB), "
                  f"data {row['data_mb']:.0f} MB"
                  + (f", worker peak {row['worker_peak_rss_mb']:.0f} MB"
                     if "worker_peak_rss_mb" in row else "")
                  + (f", x{row['ratio_to_sklearn']:.2f} sklearn" if "ratio_to_sklearn" in row
                     else "") + f" [{time.time() - t0:.0f}s]", flush=True)
    _paired_ratios(rows)
    cols = ["n", "mode", "pair", "fit_s", "us_per_row", "ratio_to_memory", "ratio_to_chunked",
            "data_mb", "rss_before_fit_mb", "peak_rss_mb", "fit_extra_rss_mb",
            "worker_peak_rss_mb", "sklearn_s", "ratio_to_sklearn", "load_1m"]
    print()
    print(C.format_table([{c: r.get(c, float("nan")) for c in cols} for r in rows], cols,
                         floatfmt="{:.2f}"))
    note = _load_note(loads, info)
    print(note)
    summary = _ratio_summary(rows)
    for line in summary:
        print(line)
    comments = [f"command: {cmd}", f"machine: {C.machine_line(info)}",
                f"DPLogisticRegression(epsilon=1, alpha={args.alpha}, "
                f"perturbation={args.perturbation}, fit_intercept=True), float32 X, "
                f"BLAS threads {args.threads} (dpsk's fit: 1), chunked = working_memory "
                f"{CHUNKED_WORKING_MEMORY} MiB, dask = LocalCluster(2 processes x 1 thread), "
                f"dask-threads = LocalCluster(processes=False, 2 workers x 1 thread), "
                f"data persisted on the workers; sklearn = LogisticRegression(C=1/(n alpha))",
                "ratio_to_memory / ratio_to_chunked: fit_s over the memory / chunked fit of "
                "the same n and pair (modes alternate within a pair, each in a fresh process)",
                "peak_rss_mb: the process's peak RSS during the fit (VmHWM reset before it); "
                "fit_extra_rss_mb = peak_rss_mb - RSS before the fit; worker_peak_rss_mb: the "
                "largest Dask worker's peak during the fit (holds its share of X)", note,
                *summary]
    print(f"wrote {C.write_csv(f'scaling_modes_{args.perturbation}', rows, cols, comments)}")
    return 0


def _paired_ratios(rows):
    """Add ``ratio_to_memory`` / ``ratio_to_chunked``: time over the same pair's reference."""
    for reference in ("memory", "chunked"):
        times = {(r["n"], r["pair"]): r["fit_s"] for r in rows if r["mode"] == reference}
        for r in rows:
            if r["mode"] != reference and (r["n"], r["pair"]) in times:
                r[f"ratio_to_{reference}"] = r["fit_s"] / times[(r["n"], r["pair"])]


def _ratio_summary(rows):
    """One line per (n, mode): the median of its paired ratios."""
    import numpy as np

    lines = []
    for n in sorted({r["n"] for r in rows}):
        for mode in sorted({r["mode"] for r in rows if r["n"] == n}):
            for reference in ("memory", "chunked"):
                ratios = [r[f"ratio_to_{reference}"] for r in rows
                          if r["n"] == n and r["mode"] == mode and f"ratio_to_{reference}" in r]
                if ratios:
                    lines.append(f"n={n}: {mode} / {reference}: median {np.median(ratios):.2f} "
                                 f"over {len(ratios)} pairs (" + ", ".join(
                                     f"{x:.2f}" for x in ratios) + ")")
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks scaling", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="sizes up to 2e5")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sizes", type=int, nargs="+", default=None)
    parser.add_argument("--d", type=int, default=D)
    parser.add_argument("--repeats", type=int, default=None, help="default 3 (1 with --quick)")
    parser.add_argument("--perturbation", choices=("objective", "output", "gradient"),
                        default="objective")
    parser.add_argument("--no-tracemalloc", action="store_true",
                        help="skip the extra fit under tracemalloc")
    parser.add_argument("--no-plot", action="store_true")
    parser.add_argument("--modes", nargs="+",
                        choices=("memory", "chunked") + DASK_MODES,
                        default=None, help="float32 data; in-memory vs chunked design vs Dask "
                        "LocalCluster (Dask: binary models, any perturbation; dask-threads: "
                        "workers in the fitting process)")
    parser.add_argument("--pairs", type=int, default=1, help="--modes only: run the modes "
                        "this many times, alternating, and report paired ratios to memory")
    parser.add_argument("--alpha", type=float, default=1e-2, help="--modes only")
    parser.add_argument("--threads", default="default", help="--modes only: BLAS threads of "
                        "the processes ('default' or an int); dpsk's fit always uses 1")
    parser.add_argument("--budget-s", type=float, default=600,
                        help="--modes only: start no new point after this many seconds")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--worker-mode", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--no-sklearn", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.argv = list(argv or [])
    C.set_quick(args.quick)  # --quick writes to results/quick/, never over committed results
    repeats = args.repeats or (1 if args.quick else 3)
    if args.worker_mode:
        worker_mode(args.sizes[0], args.d, args.seed, args.worker_mode, args.perturbation,
                    args.alpha, with_sklearn=not args.no_sklearn)
        return 0
    if args.modes:
        return run_modes(args)
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
    note = _load_note(loads, info)
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
