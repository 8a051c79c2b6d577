"""Benchmark DPKernelClassifier (Algorithm 3 of Chaudhuri et al. 2011) on concentric circles.

Data: ``make_circles(n_samples=20000, noise=0.08, factor=0.5, random_state=0)``
divided by 1.5 (a bound fixed from the generator's parameters: outer radius 1 plus
six noise standard deviations, not read from the data; ``data_norm=1`` clips any
row still outside the unit ball), first 15,000 rows to train, last 5,000 to test.

Reported: test accuracy of DPKernelClassifier against epsilon and n_components,
DPLogisticRegression at the same epsilon (a linear model cannot separate circles,
so it stays near 0.5), and a non-private RBFSampler + LogisticRegression (same
gamma and number of features, C=1e4) as a ceiling.

gamma and alpha were chosen with ``--tune``, which runs a small grid on a
*separate* draw (``random_state=1``, its own 15,000/5,000 split) at epsilon 0.1
and 1 with n_components=300 (3 repeats each), never on the test set.

Usage::

    python -m benchmarks.bench_kernel [--quick] [--repeats R] [--out-dir DIR]
    python -m benchmarks.bench_kernel --tune

Writes ``kernel_circles.csv`` (one row per fit) and ``kernel_circles.png``
(when matplotlib is importable) to ``benchmarks/results/`` (``benchmarks/results/quick/``,
not committed, with ``--quick``).
"""

import argparse
import csv
import os
import sys
import time
import warnings

import numpy as np
from sklearn.datasets import make_circles
from sklearn.kernel_approximation import RBFSampler
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline

from dpsk.kernel import DPKernelClassifier
from dpsk.linear_model import DPLogisticRegression

#: Chosen with --tune on the separate draw (see the module docstring).
GAMMA = 3.0
ALPHA = 1e-2
#: Public scale that maps the circles into the unit ball (1 + 6 * noise).
SCALE = 1.5
HEADLINE_N_COMPONENTS = 300

EPSILONS = (0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0)
N_COMPONENTS = (100, 300, 1000)
QUICK_EPSILONS = (0.1, 1.0, 5.0)
QUICK_N_COMPONENTS = (100, 300)

RESULTS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
QUICK_RESULTS_DIR = os.path.join(RESULTS_DIR, "quick")  # git-ignored
FIELDS = ["model", "kernel", "n_components", "epsilon", "gamma", "alpha", "repeat",
          "accuracy", "fit_seconds"]


def load_circles(random_state=0, n_train=15000):
    """The benchmark data: circles in the unit ball, split train/test."""
    X, y = make_circles(n_samples=20000, noise=0.08, factor=0.5, random_state=random_state)
    X = X / SCALE
    return X[:n_train], y[:n_train], X[n_train:], y[n_train:]


def _fit_score(model, X_train, y_train, X_test, y_test):
    start = time.perf_counter()
    with warnings.catch_warnings():
        # A handful of rows lie just outside the unit ball and are clipped.
        warnings.filterwarnings("ignore", message=".*data_norm", category=UserWarning)
        model.fit(X_train, y_train)
    seconds = time.perf_counter() - start
    return model.score(X_test, y_test), seconds


def _row(model, n_components, epsilon, repeat, accuracy, seconds, gamma=GAMMA, alpha=ALPHA,
         kernel="rbf"):
    return {"model": model, "kernel": kernel, "n_components": n_components,
            "epsilon": epsilon, "gamma": gamma, "alpha": alpha, "repeat": repeat,
            "accuracy": round(float(accuracy), 5), "fit_seconds": round(seconds, 3)}


def run(epsilons, n_components_list, repeats, log=print):
    """All fits of the benchmark; returns a list of CSV rows."""
    X_train, y_train, X_test, y_test = load_circles(0)
    n_clipped = int(np.sum(np.linalg.norm(np.vstack([X_train, X_test]), axis=1) > 1))
    log(f"circles: {len(y_train)} train / {len(y_test)} test rows, scaled by 1/{SCALE}; "
        f"{n_clipped} rows clipped to the unit ball; gamma={GAMMA:g}, alpha={ALPHA:g}")
    rows = []

    # DPLogisticRegression at every epsilon (the linear baseline).
    for epsilon in epsilons:
        for r in range(repeats):
            acc, sec = _fit_score(DPLogisticRegression(epsilon=epsilon, random_state=1000 + r),
                                  X_train, y_train, X_test, y_test)
            rows.append(_row("DPLogisticRegression", 0, epsilon, r, acc, sec,
                             gamma=float("nan"), alpha=1e-3, kernel="linear"))

    for n_components in n_components_list:
        # Non-private ceiling: the paper's random-feature map, same gamma and D.
        acc, sec = _fit_score(
            make_pipeline(RBFSampler(gamma=GAMMA, n_components=n_components, random_state=0),
                          LogisticRegression(C=1e4, max_iter=2000)),
            X_train, y_train, X_test, y_test,
        )
        rows.append(_row("RBFSampler+LogisticRegression", n_components, float("inf"), 0,
                         acc, sec))
        for epsilon in epsilons:
            accs = []
            for r in range(repeats):
                clf = DPKernelClassifier(epsilon=epsilon, gamma=GAMMA, alpha=ALPHA,
                                         n_components=n_components, random_state=r)
                acc_r, sec = _fit_score(clf, X_train, y_train, X_test, y_test)
                accs.append(acc_r)
                rows.append(_row("DPKernelClassifier", n_components, epsilon, r, acc_r, sec))
            log(f"  D={n_components:5d} epsilon={epsilon:<5g} DPKernelClassifier accuracy "
                f"{np.mean(accs):.3f} +- {np.std(accs):.3f} (n={repeats})")
    return rows


def summarize(rows, epsilons, n_components_list, log=print):
    """Print the accuracy table (mean over repeats)."""
    def mean_acc(model, n_components, epsilon):
        accs = [r["accuracy"] for r in rows if r["model"] == model
                and r["n_components"] == n_components and r["epsilon"] == epsilon]
        return np.mean(accs) if accs else float("nan")

    log("")
    log("Test accuracy (mean over repeats), make_circles(20000, noise=0.08, factor=0.5)")
    header = f"{'model':<34}" + "".join(f"{'eps=' + format(e, 'g'):>9}" for e in epsilons)
    header += f"{'non-priv':>10}"
    log(header)
    log(f"{'DPLogisticRegression':<34}" + "".join(
        f"{mean_acc('DPLogisticRegression', 0, e):9.3f}" for e in epsilons))
    for d in n_components_list:
        line = f"{'DPKernelClassifier D=' + str(d):<34}" + "".join(
            f"{mean_acc('DPKernelClassifier', d, e):9.3f}" for e in epsilons)
        line += f"{mean_acc('RBFSampler+LogisticRegression', d, float('inf')):10.3f}"
        log(line)

    d_head = HEADLINE_N_COMPONENTS if HEADLINE_N_COMPONENTS in n_components_list \
        else n_components_list[-1]
    kern = mean_acc("DPKernelClassifier", d_head, 1.0)
    lin = mean_acc("DPLogisticRegression", 0, 1.0)
    log("")
    log(f"Headline (epsilon=1, D={d_head}): DPKernelClassifier {kern:.3f} "
        f"[target >= 0.95: {'OK' if kern >= 0.95 else 'MISSED'}], "
        f"DPLogisticRegression {lin:.3f} [near 0.5: {'OK' if abs(lin - 0.5) < 0.1 else 'NO'}]")
    return kern, lin


def write_csv(rows, path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=FIELDS)
        writer.writeheader()
        writer.writerows(rows)


def plot(rows, epsilons, n_components_list, path, log=print):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("matplotlib is not importable: skipping the plot.")
        return None
    fig, ax = plt.subplots(figsize=(7, 4.5))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for color, d in zip(colors, n_components_list):
        means = [np.mean([r["accuracy"] for r in rows if r["model"] == "DPKernelClassifier"
                          and r["n_components"] == d and r["epsilon"] == e]) for e in epsilons]
        ax.plot(epsilons, means, "o-", color=color, label=f"DPKernelClassifier D={d}")
        ceiling = [r["accuracy"] for r in rows if r["model"] == "RBFSampler+LogisticRegression"
                   and r["n_components"] == d]
        if ceiling:
            ax.axhline(ceiling[0], color=color, ls="--", lw=1,
                       label=f"non-private RBFSampler+LR D={d}")
    lin = [np.mean([r["accuracy"] for r in rows if r["model"] == "DPLogisticRegression"
                    and r["epsilon"] == e]) for e in epsilons]
    ax.plot(epsilons, lin, "s:", color="gray", label="DPLogisticRegression")
    ax.set_xscale("log")
    ax.set_xlabel("epsilon")
    ax.set_ylabel("test accuracy")
    ax.set_ylim(0.4, 1.02)
    ax.set_title(f"Concentric circles, rbf gamma={GAMMA:g}, alpha={ALPHA:g}")
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def tune(log=print):
    """The grid used to choose GAMMA and ALPHA, on a separate draw (random_state=1)."""
    X_train, y_train, X_val, y_val = load_circles(1)
    gammas, alphas = (1.0, 3.0, 10.0, 30.0), (3e-3, 1e-2, 3e-2, 1e-1)
    tune_epsilons, tune_d, tune_repeats = (0.1, 1.0), HEADLINE_N_COMPONENTS, 3
    log(f"Tuning on make_circles(random_state=1) (not the benchmark draw): mean validation "
        f"accuracy over epsilon in {tune_epsilons}, D={tune_d}, {tune_repeats} repeats")
    best = None
    for gamma in gammas:
        cells = []
        for alpha in alphas:
            accs = []
            for epsilon in tune_epsilons:
                for r in range(tune_repeats):
                    clf = DPKernelClassifier(epsilon=epsilon, gamma=gamma, alpha=alpha,
                                             n_components=tune_d, random_state=500 + r)
                    accs.append(_fit_score(clf, X_train, y_train, X_val, y_val)[0])
            score = float(np.mean(accs))
            cells.append(f"alpha={alpha:<6g} {score:.3f}")
            if best is None or score > best[0]:
                best = (score, gamma, alpha)
        log(f"  gamma={gamma:<4g} " + "  ".join(cells), )
    log(f"best: gamma={best[1]:g}, alpha={best[2]:g} (mean accuracy {best[0]:.3f})")
    return best


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="1 repeat, epsilon in (0.1, 1, 5), D in (100, 300): < 2 minutes")
    parser.add_argument("--repeats", type=int, default=None,
                        help="fits per setting (default 5, or 1 with --quick)")
    parser.add_argument("--out-dir", default=None,
                        help="where to write CSV and PNG (default benchmarks/results/, or "
                             "benchmarks/results/quick/, not committed, with --quick)")
    parser.add_argument("--tune", action="store_true",
                        help="rerun the gamma/alpha grid on the separate draw and exit")
    args = parser.parse_args(argv)

    if args.tune:
        tune()
        return 0
    epsilons = QUICK_EPSILONS if args.quick else EPSILONS
    n_components_list = QUICK_N_COMPONENTS if args.quick else N_COMPONENTS
    repeats = args.repeats or (1 if args.quick else 5)
    start = time.perf_counter()
    rows = run(epsilons, n_components_list, repeats)
    summarize(rows, epsilons, n_components_list)
    out_dir = args.out_dir or (QUICK_RESULTS_DIR if args.quick else RESULTS_DIR)
    os.makedirs(out_dir, exist_ok=True)
    csv_path = os.path.join(out_dir, "kernel_circles.csv")
    write_csv(rows, csv_path)
    print(f"\nwrote {csv_path}")
    png = plot(rows, epsilons, n_components_list, os.path.join(out_dir, "kernel_circles.png"))
    if png:
        print(f"wrote {png}")
    print(f"total time {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
