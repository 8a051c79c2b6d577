"""Chaudhuri and Monteleoni (2008), Section 6: the two synthetic experiments.

The paper's setting, as its text gives it: points uniform on the unit sphere in
``d = 10`` dimensions, labelled by a linear separator through the origin;

* **separable**: no mass within margin 0.03 of the separator;
* **unseparable**: in the band of margin <= 0.1 around the separator, each label
  is flipped with probability 0.2.

``N = 17,500`` points, five-fold cross-validation, ``epsilon = 0.1``, ``lambda =
0.01`` (the paper's objective ``(lambda/2)||w||^2 + mean logistic loss``, which is
dpsk's ``alpha``), no intercept. Compared: the sensitivity method (output
perturbation, the paper's Algorithm 1), the new method (objective perturbation,
Algorithm 2; dpsk uses the calibration of the 2011 journal version, which adds a
small slack for the loss's curvature, and a certified solver), and standard
logistic regression. The paper's Figure 1 reports test error (mean +/- standard
deviation over five folds):

=====================  ===================  ===================
method                 separable            unseparable
=====================  ===================  ===================
sensitivity method     0.2962 +/- 0.0617    0.3257 +/- 0.0536
new method             0.1426 +/- 0.1284    0.1903 +/- 0.1105
standard LR            0 +/- 0.0016         0.0530 +/- 0.1105
=====================  ===================  ===================

Also the two curves of its Figure 2: test error against the training-set size
(1,000 to 14,000 rows at epsilon 0.1) and against epsilon (0.02 to 0.2 at
``n = 10,000``).
"""

import argparse

import numpy as np

from . import _common as C

D = 10
N = 17_500
EPSILON = 0.1
ALPHA = 0.01
PAPER = {  # Figure 1 of the paper: (mean, standard deviation) of the test error
    ("separable", "output"): (0.2962, 0.0617),
    ("separable", "objective"): (0.1426, 0.1284),
    ("separable", "nonprivate"): (0.0, 0.0016),
    ("unseparable", "output"): (0.3257, 0.0536),
    ("unseparable", "objective"): (0.1903, 0.1105),
    ("unseparable", "nonprivate"): (0.0530, 0.1105),
}
METHODS = ("output", "objective", "nonprivate")
SIZES = tuple(range(1_000, 14_001, 1_000))
EPSILONS = (0.02, 0.04, 0.06, 0.08, 0.1, 0.12, 0.14, 0.16, 0.18, 0.2)


def make_data(kind, n, seed):
    """``n`` points uniform on the unit sphere of R^10 with labels in {0, 1}."""
    rng = np.random.default_rng(seed)
    w = np.zeros(D)
    w[0] = 1.0  # the generating separator; the sphere is symmetric, so any will do
    rows = []
    while sum(len(r) for r in rows) < n:
        X = rng.standard_normal((2 * n, D))
        X /= np.linalg.norm(X, axis=1, keepdims=True)
        if kind == "separable":
            X = X[np.abs(X @ w) >= 0.03]
        rows.append(X)
    X = np.vstack(rows)[:n]
    margin = X @ w
    y = (margin > 0).astype(np.int64)
    if kind == "unseparable":
        flip = (np.abs(margin) <= 0.1) & (rng.random(n) < 0.2)
        y[flip] = 1 - y[flip]
    return X, y


def _cell(X, y, train, test, method, epsilon, seed):
    rec = C.evaluate_cell(X, y, train, test, "logistic", method, ALPHA, epsilon, seed)
    return rec["error"]


def run(kinds, runs, seed, sizes, epsilons):
    """Figure 1 (all rows), Figure 2's learning and epsilon curves; a list of records."""
    records = []
    for kind in kinds:
        X, y = make_data(kind, N, C.seed_for(seed, len(kind)))
        folds = C.cv_folds(y, n_splits=5, seed=seed)
        tasks = []
        for k, (train, test) in enumerate(folds):
            for method in METHODS:
                reps = 1 if method == "nonprivate" else runs
                for r in range(reps):
                    tasks.append(("table", k, method, len(train), EPSILON, r))
                    for n in sizes:
                        tasks.append(("n", k, method, n, EPSILON, r))
                    if method != "nonprivate":
                        for eps in epsilons:
                            tasks.append(("epsilon", k, method, 10_000, eps, r))
        for what, k, method, n, eps, r in C.progress(tasks, desc=kind):
            train, test = folds[k]
            cell_seed = C.seed_for(seed, k, METHODS.index(method), n, int(eps * 1e4), r)
            error = _cell(X, y, train[:n], test, method, eps, cell_seed)
            records.append(dict(data=kind, curve=what, fold=k, method=method, n_train=n,
                                epsilon=eps, run=r, error=error))
    return records


def aggregate(records):
    """Mean, standard deviation and count of the error per (data, curve, method, n, epsilon)."""
    groups = {}
    for r in records:
        key = (r["data"], r["curve"], r["method"], int(r["n_train"]), float(r["epsilon"]))
        groups.setdefault(key, []).append(float(r["error"]))
    return [dict(data=k[0], curve=k[1], method=k[2], n_train=k[3], epsilon=k[4],
                 mean_error=float(np.mean(v)), std_error=float(np.std(v)), count=len(v))
            for k, v in groups.items()]


def summarize(records):
    lines = ["Figure 1: test error, mean +/- standard deviation over folds x runs "
             f"(n = {N:,}, 5 folds, epsilon = {EPSILON}, lambda = {ALPHA})",
             f"{'method':12s} {'data':12s} {'dpsk':>20s} {'paper':>20s}"]
    for kind in dict.fromkeys(r["data"] for r in records):
        for method in METHODS:
            errs = [r["error"] for r in records if r["data"] == kind and r["method"] == method
                    and r["curve"] == "table"]
            mean, std = float(np.mean(errs)), float(np.std(errs))
            pm, ps = PAPER[(kind, method)]
            lines.append(f"{method:12s} {kind:12s} {mean:>11.4f} +/- {std:.4f} "
                         f"{pm:>11.4f} +/- {ps:.4f}")
    for curve, key in (("n", "n_train"), ("epsilon", "epsilon")):
        lines.append(f"\nFigure 2, test error against {key} (mean over folds x runs)")
        for kind in dict.fromkeys(r["data"] for r in records):
            for method in METHODS:
                rows = [r for r in records if r["data"] == kind and r["method"] == method
                        and r["curve"] == curve]
                if not rows:
                    continue
                xs = sorted(set(r[key] for r in rows))
                means = [np.mean([r["error"] for r in rows if r[key] == x]) for x in xs]
                lines.append(f"{method:12s} {kind:12s} " + " ".join(
                    f"{x:g}:{m:.3f}" for x, m in zip(xs, means)))
    return "\n".join(lines)


def plot(records):
    plt = C.get_pyplot()
    if plt is None:
        return
    fig, axes = plt.subplots(2, 2, figsize=(10, 7))
    for col, kind in enumerate(("separable", "unseparable")):
        for row, (curve, key) in enumerate((("n", "n_train"), ("epsilon", "epsilon"))):
            ax = axes[row, col]
            for method in METHODS:
                rows = [r for r in records if r["data"] == kind and r["method"] == method
                        and r["curve"] == curve]
                if not rows:
                    continue
                xs = sorted(set(r[key] for r in rows))
                ax.plot(xs, [np.mean([r["error"] for r in rows if r[key] == x]) for x in xs],
                        marker="o", label=method)
            ax.set_xlabel(key)
            ax.set_ylabel("test error")
            ax.set_title(f"{kind}: error vs {key}")
            ax.legend()
    fig.tight_layout()
    C.save_figure(fig, "cm2008")


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks cm2008", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="1 run, 3 sizes, 3 epsilons")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--runs", type=int, default=20,
                        help="noise draws per fold (the paper: 200 random restarts)")
    parser.add_argument("--no-plot", action="store_true")
    args = parser.parse_args(argv)
    C.set_quick(args.quick)
    sizes, epsilons = SIZES, EPSILONS
    if args.quick:
        args.runs, sizes, epsilons = 1, (1_000, 5_000, 14_000), (0.02, 0.1, 0.2)
    C.limit_blas_threads()
    C.header("Chaudhuri and Monteleoni (2008), Section 6")
    records = run(("separable", "unseparable"), args.runs, args.seed, sizes, epsilons)
    print(summarize(records))
    C.write_csv("cm2008", aggregate(records),
                comment_lines=[C.command_line(), C.machine_line()])
    if not args.no_plot:
        plot(records)
    return 0
