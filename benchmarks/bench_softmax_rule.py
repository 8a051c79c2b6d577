"""The softmax's alpha against its oracle on generated multiclass families (issue 35).

``python -m benchmarks softmax-rule [--families ...] --output <name>`` fits, on
generated multiclass families (``bench_alpha_rule.generate_multiclass``; n 1e3
to 1e5, d 10 to 30, K 3 to 8, weak and strong separation, balanced and
imbalanced priors), the untuned default and every fixed alpha of
``bench_defaults.ORACLE_ALPHAS`` with the rows of ``bench_search.reference_rows``
(same seeds and row names as ``python -m benchmarks search``), pure and delta
1e-6, a fresh training set per fold and one test set of 10,000 rows.

``--from-csv --inputs <csvs>`` re-evaluates candidate factors over the bound's
minimiser on the stored curves (as ``defaults --rule-check`` does): the error
at a rule's alpha is the mean fixed-alpha curve interpolated in ``log alpha``;
a cell counts as near when within ``max(0.005, 2 SE)`` of the oracle (SE of
the paired difference at the nearest grid alpha). It reads the search
benchmark's CSVs of real tables too (``search_real_a``, ``search_real_b``),
which are the held-out check: no factor is fitted to them.
"""

import argparse
import math
import time
import warnings

import numpy as np

from dpsk.mechanisms._alpha import softmax_factor

from . import _common as C
from .bench_defaults import ORACLE_ALPHAS, _near, _worse, on_curve, paired_by_cell, stored_curve
from .bench_search import MECHANISMS, add_oracles, read_records, reference_rows

#: (name, training rows, d, separation, K, density[, extras]) as in
#: ``bench_alpha_rule.MULTICLASS``; none of them is one of its families.
FAMILIES = (
    ("s1-n1e3-d10-K3", 1_000, 10, 4.0, 3, 1.0),
    ("s2-n3e3-d20-K5-imb", 3_000, 20, 4.0, 5, 1.0, {"imbalance": 5.0}),
    ("s3-n1e4-d10-K4-weak", 10_000, 10, 2.0, 4, 1.0),
    ("s4-n1e4-d30-K8", 10_000, 30, 4.0, 8, 1.0),
    ("s5-n3e4-d10-K5-imb", 30_000, 10, 4.0, 5, 1.0, {"imbalance": 10.0}),
    ("s6-n3e4-d30-K3-weak", 30_000, 30, 2.0, 3, 1.0),
    ("s7-n1e5-d10-K5", 100_000, 10, 4.0, 5, 1.0),
    ("s8-n1e5-d20-K8-weak-imb", 100_000, 20, 2.0, 8, 1.0, {"imbalance": 5.0}),
)
EPSILONS = (0.1, 0.5, 1.0, 2.0)
TEST_ROWS = 10_000
#: The real multiclass tables of ``bench_search`` (held out).
REAL_MULTICLASS = ("DoctorAUS", "Car", "Cracker", "diamonds")
#: The binary tables of those CSVs, left out of the analysis.
BINARY = ("adult", "HI", "VietNamI", "rwm5yr", "flchain", "Benefits", "Males",
          "DoctorContacts")


def _family(name):
    return {f[0]: f for f in FAMILIES}[name]


def _draw(name, seed):
    from . import bench_alpha_rule as A

    family = _family(name)
    X, y = A.generate_multiclass(family, family[1] + TEST_ROWS, np.random.default_rng(seed))
    n = family[1]
    return X[:n], y[:n], X[n:], y[n:]


def run(names, epsilons, n_folds, seed, alphas=ORACLE_ALPHAS):
    """The default and the fixed-alpha rows (``alphas=()``: the default only, same seeds)."""
    records = []
    for name in names:
        t0 = time.perf_counter()
        for k in range(n_folds):
            X_train, y_train, X_test, y_test = _draw(name, C.seed_for(seed, k))
            classes = sorted(set(y_train.tolist()) | set(y_test.tolist()))
            values, counts = np.unique(y_train, return_counts=True)
            majority = float(np.mean(y_test != values[np.argmax(counts)]))
            records.append(dict(dataset=name, epsilon=0.0, fold=k, run=0,
                                row="majority class", error=majority, fit_time=0.0,
                                status="ok"))
            for eps in epsilons:
                for tag, delta in MECHANISMS:
                    cell_seed = C.seed_for(seed, k, int(eps * 1e4), 0, len(name),
                                           int(delta > 0))
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        rows = reference_rows(X_train, y_train, X_test, y_test, eps, delta,
                                              classes, cell_seed, tag, alphas=alphas)
                    for row, (error, seconds, status) in rows.items():
                        records.append(dict(dataset=name, epsilon=eps, fold=k, run=0,
                                            row=row, error=error, fit_time=seconds,
                                            status=status))
        print(f"{name}: {time.perf_counter() - t0:.0f}s", flush=True)
    return add_oracles(records, [tag for tag, _ in MECHANISMS]) if alphas else records


def refit_check(stored, refit, names):
    """The stored default rows and the refitted ones against the stored oracle and majority,
    on the same splits and seeds: one line per cell, then the counts per mechanism."""
    old, new = paired_by_cell(stored), paired_by_cell(refit)
    for tag, _ in MECHANISMS:
        totals = np.zeros(4, dtype=int)
        cells_ = 0
        for name in names:
            for eps in sorted({k[1] for k in new if k[0] == name} - {0.0}):
                oracle = old[(name, eps, f"oracle, {tag}")]
                majority = old.get((name, eps, "majority class")) or old[(name, 0.0,
                                                                          "majority class")]
                if set(majority) != set(oracle):  # one majority row per fold (generated)
                    majority = {k: majority[(k[0], 0)] for k in oracle}
                a, b = old[(name, eps, f"dpsk default, {tag}")], new[(name, eps,
                                                                      f"dpsk default, {tag}")]
                flags = (_near(a, oracle), _near(b, oracle), _worse(a, majority),
                         _worse(b, majority))
                totals += np.array(flags, dtype=int)
                cells_ += 1
                print(f"{name} | {eps:g} | {tag} | before {np.mean(list(a.values())):.4f} | "
                      f"after {np.mean(list(b.values())):.4f} | oracle "
                      f"{np.mean(list(oracle.values())):.4f} | near {flags[0]:d} -> "
                      f"{flags[1]:d} | worse than majority {flags[2]:d} -> {flags[3]:d}")
        print(f"{tag}: near the oracle {totals[0]} -> {totals[1]} of {cells_}; worse than "
              f"the majority {totals[2]} -> {totals[3]}")


# --------------------------------------------------------------------- analysis
def public_sizes(name):
    """``(n, d, K, prior)`` of one training set: generated, or a 4/5 fold of a table."""
    if name in {f[0] for f in FAMILIES}:
        X, y, _, _ = _draw(name, C.seed_for(0, 0))
    else:
        from .bench_search import load

        X, y = load(name)[:2]
        X, y = X, y
        n = int(0.8 * len(y))
        prior = np.bincount(y) / len(y)
        return n, X.shape[1] + 1, len(prior), prior
    prior = np.bincount(y) / len(y)
    return len(y), X.shape[1] + 1, len(prior), prior


def minimisers(name, eps, delta):
    """The bound's minimiser at the model's budget, and that budget's epsilon."""
    from dpsk import DPLogisticRegression
    from dpsk.mechanisms._alpha import auto_alpha

    n, d, K, _ = public_sizes(name)
    model = DPLogisticRegression(epsilon=eps, delta=delta, classes=list(range(K)))
    loss = model._make_loss(K)
    budget = model._prior_budget(n, d, loss, K, eps, delta)
    alpha = auto_alpha(n, d, budget.model_epsilon, delta, loss=loss, perturbation="objective",
                       corrected=False)
    return alpha, budget.model_epsilon, n, d, K


def cells(records):
    """Per (data set, epsilon, tag): the curve, the rows by alpha, oracle and public sizes."""
    paired = paired_by_cell(records)
    out = []
    for name in dict.fromkeys(r["dataset"] for r in records):
        for eps in sorted({r["epsilon"] for r in records if r["dataset"] == name} - {0.0}):
            for tag, delta in MECHANISMS:
                found = stored_curve(paired, name, eps, tag)
                if found is None:
                    continue
                rows, means, oracle = found
                minimiser, model_eps, n, d, K = minimisers(name, eps, delta)
                out.append(dict(dataset=name, epsilon=eps, tag=tag, n=n, d=d, K=K,
                                model_eps=model_eps, minimiser=minimiser, rows=rows,
                                means=means, oracle=oracle,
                                default=paired.get((name, eps, f"dpsk default, {tag}"))))
    return out


def near_at(cell, alpha):
    """Whether ``alpha`` is within tolerance of the cell's oracle on the stored curve."""
    return _near(on_curve(cell["rows"], cell["means"], alpha), cell["oracle"])


def near_range(cell):
    """log10 of the smallest and largest grid alpha within tolerance of the oracle."""
    ok = [math.log10(a) for a, row in zip(ORACLE_ALPHAS, cell["rows"])
          if _near(row, cell["oracle"])]
    return (min(ok), max(ok)) if ok else (None, None)


#: Candidate rules: name -> factor(cell) over the bound's minimiser.
RULES = {
    "x1": lambda c: 1.0,
    "x2 (main)": lambda c: 2.0,
    "x4": lambda c: 4.0,
    "x0.5": lambda c: 0.5,
    "dpsk": lambda c: softmax_factor(c["n"], c["model_eps"]),
}


def report(table):
    """Per cell: public sizes, the minimiser, the near range; then each rule's counts."""
    print("dataset | eps | tag | n | d | K | n eps | log10 minimiser | log10 oracle | "
          "near range | " + " | ".join(RULES))
    for c in table:
        best = ORACLE_ALPHAS[int(np.argmin(c["means"]))]
        lo, hi = near_range(c)
        marks = " | ".join("y" if near_at(c, min(f(c) * c["minimiser"], 1e2)) else "."
                           for f in RULES.values())
        print(f"{c['dataset']} | {c['epsilon']:g} | {c['tag']} | {c['n']} | {c['d']} | "
              f"{c['K']} | {c['n'] * c['model_eps']:.0f} | {math.log10(c['minimiser']):.2f} | "
              f"{math.log10(best):.1f} | {lo}..{hi} | {marks}")
    for tag, _ in MECHANISMS:
        sub = [c for c in table if c["tag"] == tag]
        counts = {k: sum(near_at(c, min(f(c) * c["minimiser"], 1e2)) for c in sub)
                  for k, f in RULES.items()}
        print(f"{tag}: " + ", ".join(f"{k} {v}/{len(sub)}" for k, v in counts.items()))


#: The pivots of the two sloped forms: the bound's minimiser and ``n epsilon``.
PIVOT_ALPHA = 1e-2
PIVOT_NEPS = 1e3


def sloped(cell, factor, slope, on="alpha"):
    """``factor * (minimiser / PIVOT_ALPHA)^slope`` (``on="alpha"``) or ``factor * (n
    epsilon / PIVOT_NEPS)^-slope`` (``on="neps"``) times the minimiser, capped."""
    ratio = (cell["minimiser"] / PIVOT_ALPHA if on == "alpha"
             else PIVOT_NEPS / (cell["n"] * cell["model_eps"]))
    return min(cell["minimiser"] * factor * ratio**slope, 1e2)


def fit_table(table, factors=(1.0, 1.4, 2.0, 2.8, 4.0),
              slopes=(0.0, 0.1, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.8)):
    """Near counts (pure, delta) of every (form, factor, slope) on ``table``."""
    out = {}
    for on in ("alpha", "neps"):
        for f in factors:
            for s in slopes:
                out[(on, f, s)] = tuple(
                    sum(near_at(c, sloped(c, f, s, on)) for c in table if c["tag"] == tag)
                    for tag, _ in MECHANISMS)
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks softmax-rule")
    parser.add_argument("--quick", action="store_true",
                        help="two small families, 2 folds, epsilon 0.5 and 2 (results/quick/)")
    parser.add_argument("--families", nargs="+", default=[f[0] for f in FAMILIES])
    parser.add_argument("--folds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--epsilons", type=float, nargs="+", default=list(EPSILONS))
    parser.add_argument("--output", default="softmax_rule")
    parser.add_argument("--from-csv", action="store_true")
    parser.add_argument("--inputs", nargs="+", default=None)
    parser.add_argument("--defaults-only", action="store_true",
                        help="fit the default rows only (same seeds), for --refit-check")
    parser.add_argument("--refit-check", nargs="+", default=None, metavar="CSV",
                        help="the refitted default rows of CSV against the stored rows, "
                             "oracle and majority of --inputs")
    parser.add_argument("--fit", action="store_true",
                        help="with --from-csv: the counts of every sloped rule")
    args = parser.parse_args(argv)
    C.set_quick(args.quick)
    if args.quick:
        args.families, args.folds, args.epsilons = [FAMILIES[0][0], FAMILIES[2][0]], 2, [0.5, 2.0]
    if args.refit_check:
        stored = [r for name in args.inputs for r in read_records(name)]
        refit = [r for name in args.refit_check for r in read_records(name)]
        names = list(dict.fromkeys(r["dataset"] for r in refit))
        refit_check(stored, refit, [n for n in names if n not in BINARY])
        return 0
    if args.from_csv:
        records = [r for name in (args.inputs or [args.output]) for r in read_records(name)]
        table = cells([r for r in records if r["dataset"] not in BINARY])
        report(table)
        if args.fit:
            for key, value in sorted(fit_table(table).items(), key=lambda kv: -sum(kv[1])):
                print(key, value)
        return 0
    C.limit_blas_threads()
    C.header("softmax-rule: the multinomial default's alpha against its oracle")
    records = run(args.families, args.epsilons, args.folds, args.seed,
                  alphas=() if args.defaults_only else ORACLE_ALPHAS)
    C.write_csv(args.output, records,
                columns=["dataset", "epsilon", "fold", "run", "row", "error", "fit_time",
                         "status", "oracle_of"],
                comment_lines=[C.command_line(), C.machine_line()])
    return 0
