"""Private hyperparameter tuning on Adult: DPGridSearch against its candidates.

Setting of Chaudhuri, Monteleoni and Sarwate (2011), Section 7: the preprocessed
Adult data (45,222 rows, 105 features, row norm <= 1), logistic regression by
objective perturbation without intercept, the grid alpha in 10**-[1..5]
(m = 5 candidates), epsilon in {0.1, 0.5, 1}. Each repetition holds out a random
20% test set and tunes on the other 80%.

Reported per epsilon (mean and standard deviation over repetitions):

* ``tuned``: test error of ``DPGridSearch(refit=False)`` (cost epsilon);
* ``tuned_refit``: test error of ``DPGridSearch(refit=True)`` (cost 2 epsilon);
* ``best`` / ``worst``: test error of the best and worst candidate, each trained
  the way Algorithm 4 trains it (on one of the m + 1 parts, at epsilon);
* ``thm9``: Theorem 9's bound turned into an error rate. The theorem says that,
  with probability 1 - delta, the chosen candidate makes at most
  ``z_min + 2 log(m / delta) / epsilon`` mistakes on the held-out part; divided by
  the part size that is ``best + 2 log(m / delta) / (epsilon n_hold)``. We add the
  slack to the best candidate's test error (delta = 0.05);
* ``excess`` and ``slack``: for a run of Algorithm 4 replayed here step by step
  (the ``best``/``worst`` candidates above), the held-out mistakes of the chosen
  candidate minus ``z_min``, and Theorem 9's slack ``2 log(m / delta) / epsilon``;
  ``thm9_held`` is the fraction of repetitions where excess <= slack (the theorem
  says >= 1 - delta in expectation).

The candidate errors and mistake counts are computed for evaluation only:
``DPGridSearch`` never exposes them, they are not private.

Run ``python -m benchmarks.bench_grid_search [--quick]``; CSV and PNG go to
``benchmarks/results/`` (``benchmarks/results/quick/``, not committed, with ``--quick``).
"""

import argparse
import csv
import math
import time
from pathlib import Path

import numpy as np

from dpsk import BudgetAccountant, DPLogisticRegression
from dpsk.datasets import load_adult
from dpsk.mechanisms._random import NoiseSource
from dpsk.model_selection import DPGridSearch
from dpsk.model_selection._search import _select_candidate, _split_parts

ALPHAS = [10.0**-k for k in range(1, 6)]
EPSILONS = [0.1, 0.5, 1.0]
DELTA = 0.05  # failure probability in Theorem 9's bound
RESULTS_DIR = Path(__file__).resolve().parent / "results"
QUICK_RESULTS_DIR = RESULTS_DIR / "quick"  # git-ignored


def _int_seed(rng):
    """dpsk takes an int seed (reproducible, not private), never a Generator."""
    return int(rng.integers(2**31))


def _model(alpha, epsilon, random_state):
    return DPLogisticRegression(epsilon=epsilon, alpha=alpha, perturbation="objective",
                                fit_intercept=False, accountant=BudgetAccountant(),
                                random_state=random_state)


def _replay_algorithm4(X, y, X_test, y_test, epsilon, rng):
    """Algorithm 4 step by step, keeping what DPGridSearch hides (evaluation only)."""
    m = len(ALPHAS)
    split_rng, select_rng, *fit_rngs = rng.spawn(m + 2)
    parts = _split_parts(len(y), m + 1, split_rng)
    hold = parts[-1]
    test_err, z = [], []
    for alpha, part, child in zip(ALPHAS, parts[:-1], fit_rngs):
        clf = _model(alpha, epsilon, _int_seed(child)).fit(X[part], y[part])
        z.append(int(np.sum(clf.predict(X[hold]) != y[hold])))
        test_err.append(float(np.mean(clf.predict(X_test) != y_test)))
    chosen = _select_candidate(z, epsilon, NoiseSource.seeded(_int_seed(select_rng)))
    return test_err, z, chosen, len(hold)


def run(reps, epsilons, seed=0, log=print):
    X, y = load_adult(return_X_y=True, preprocess=True)
    root = np.random.default_rng(seed)
    rows = []
    m = len(ALPHAS)
    for rep in range(reps):
        rep_rng = root.spawn(1)[0]
        perm = rep_rng.permutation(len(y))
        n_test = len(y) // 5
        test, train = perm[:n_test], perm[n_test:]
        X_tr, y_tr, X_te, y_te = X[train], y[train], X[test], y[test]
        for epsilon in epsilons:
            search_rng, refit_rng, replay_rng = rep_rng.spawn(3)
            acc = BudgetAccountant()
            grid = {"alpha": ALPHAS}
            base = DPLogisticRegression(fit_intercept=False, perturbation="objective")
            tuned = DPGridSearch(base, grid, epsilon=epsilon, accountant=acc,
                                 random_state=_int_seed(search_rng)).fit(X_tr, y_tr)
            tuned_refit = DPGridSearch(base, grid, epsilon=epsilon, refit=True, accountant=acc,
                                       random_state=_int_seed(refit_rng)).fit(X_tr, y_tr)
            assert acc.spends == [(epsilon, 0.0), (2 * epsilon, 0.0)]
            cand_err, z, chosen, n_hold = _replay_algorithm4(
                X_tr, y_tr, X_te, y_te, epsilon, replay_rng)
            slack = 2.0 * math.log(m / DELTA) / epsilon
            row = {
                "rep": rep,
                "epsilon": epsilon,
                "n_train": len(y_tr),
                "n_part": len(y_tr) // (m + 1),
                "n_hold": n_hold,
                "tuned": float(np.mean(tuned.predict(X_te) != y_te)),
                "tuned_alpha": tuned.best_params_["alpha"],
                "tuned_refit": float(np.mean(tuned_refit.predict(X_te) != y_te)),
                "refit_alpha": tuned_refit.best_params_["alpha"],
                "best": min(cand_err),
                "best_alpha": ALPHAS[int(np.argmin(cand_err))],
                "worst": max(cand_err),
                "worst_alpha": ALPHAS[int(np.argmax(cand_err))],
                "thm9": min(cand_err) + slack / n_hold,
                "excess": z[chosen] - min(z),
                "slack": slack,
            }
            row.update({f"err_alpha_1e-{k}": e for k, e in zip(range(1, 6), cand_err)})
            rows.append(row)
            log(f"rep {rep} eps {epsilon:g}: tuned {row['tuned']:.4f} "
                f"(alpha {row['tuned_alpha']:g}), refit {row['tuned_refit']:.4f}, "
                f"best {row['best']:.4f}, worst {row['worst']:.4f}, "
                f"thm9 {row['thm9']:.4f}, excess {row['excess']} <= {slack:.1f}")
    return rows


def summarize(rows, epsilons):
    cols = ["tuned", "tuned_refit", "best", "worst", "thm9"]
    lines = ["epsilon  " + "  ".join(f"{c:>17s}" for c in cols) + "  thm9_held"]
    summary = []
    for epsilon in epsilons:
        sel = [r for r in rows if r["epsilon"] == epsilon]
        stats = {c: (np.mean([r[c] for r in sel]), np.std([r[c] for r in sel])) for c in cols}
        held = np.mean([r["excess"] <= r["slack"] for r in sel])
        summary.append((epsilon, stats, held))
        lines.append(f"{epsilon:<7g}  " + "  ".join(
            f"{stats[c][0]:.4f} +- {stats[c][1]:.4f}" for c in cols) + f"  {held:9.2f}")
    return "\n".join(lines), summary


def _plot(summary, path):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    eps = [s[0] for s in summary]
    fig, ax = plt.subplots(figsize=(6, 4))
    for col, style in [("best", "g^-"), ("worst", "rv-"), ("tuned", "ko-"),
                       ("tuned_refit", "bs--"), ("thm9", "m:")]:
        mean = [s[1][col][0] for s in summary]
        std = [s[1][col][1] for s in summary]
        ax.errorbar(eps, mean, yerr=std, fmt=style, label=col, capsize=3)
    ax.set_xscale("log")
    ax.set_xlabel("epsilon")
    ax.set_ylabel("test error")
    ax.set_title("DPGridSearch on Adult (alpha in 1e-1..1e-5)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 repetition (about a minute)")
    parser.add_argument("--reps", type=int, default=None,
                        help="repetitions of the 80/20 split (default 10, quick 1)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out-dir", type=Path, default=None,
                        help="default benchmarks/results/, or benchmarks/results/quick/ (not "
                             "committed) with --quick")
    args = parser.parse_args(argv)
    reps = args.reps or (1 if args.quick else 10)

    start = time.perf_counter()
    rows = run(reps, EPSILONS, seed=args.seed)
    table, summary = summarize(rows, EPSILONS)
    elapsed = time.perf_counter() - start
    print(f"\nDPGridSearch on Adult, m={len(ALPHAS)} candidates, {reps} x 80/20 splits, "
          f"delta={DELTA} in Theorem 9 ({elapsed:.0f} s)")
    print(table)

    out_dir = args.out_dir or (QUICK_RESULTS_DIR if args.quick else RESULTS_DIR)
    out_dir.mkdir(parents=True, exist_ok=True)
    csv_path = out_dir / "grid_search.csv"
    with open(csv_path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    print(f"wrote {csv_path}")
    png = _plot(summary, out_dir / "grid_search.png")
    if png:
        print(f"wrote {png}")
    return 0  # an exit status, as the other sub-commands of python -m benchmarks


if __name__ == "__main__":
    raise SystemExit(main())
