"""When can a private search over multiples of the alpha rule pay? The rule's own bound.

No data: every number is the excess-risk bound that ``alpha="auto"`` minimises
(:func:`dpsk.mechanisms._alpha.excess_risk_bound`), at public sizes and budgets.
For each configuration:

* ``split``: the bound of the default search's run (the rule's alpha at the
  planned per-run epsilon ``eps0`` on the training part, ``0.9 n`` rows) over
  the bound of one fit of the rule at the whole budget on ``n`` rows: what the
  selection costs, even when it picks the best candidate every time;
* ``rule, truth x3`` / ``x1/3``: if the comparator norm is 3 times (a third of)
  the rule's prior guess, the bound at the rule's alpha over the bound at the
  alpha that is best for that truth: what an untuned rule loses;
* ``search, truth x3`` / ``x1/3``: the search's run with the alpha best for that
  truth (a perfect selection) over the same reference;
* ``break-even alpha``: how far the best alpha must be from the rule's (a
  factor, below or above) before a perfect search at ``eps0`` beats the rule.

The derivation is in ``docs/grid_search.rst`` ("What a search can gain: the
rule's bound").
"""

import argparse
import math
import warnings

import numpy as np

from . import _common as C

CONFIGS = tuple((n, d, eps, delta, perturbation)
                for perturbation in ("objective", "output")
                for delta in (0.0, 1e-6)
                for n, d in ((36_177, 105), (4_000, 10))
                for eps in (0.1, 1.0))
MULTIPLIERS = (1 / 3, 1.0, 3.0)


def _setup(n, d, eps, delta, perturbation):
    from dpsk import DPLogisticRegression
    from dpsk.model_selection._repeat import plan_repeat

    def model():
        return DPLogisticRegression(delta=delta, perturbation=perturbation, classes=[0, 1])

    plan = plan_repeat([model() for _ in MULTIPLIERS], int(0.9 * n), 2, eps, delta,
                       n_features=d, multipliers=list(MULTIPLIERS))
    return model()._make_loss(2), plan.run_epsilon


def _costs(n, d, eps, delta, perturbation, factor, loss, eps0):
    """``(rule, search)``: bounds over the best one-fit bound, truth ``factor`` x prior."""
    from dpsk.mechanisms._alpha import PRIOR_NORM, auto_alpha, excess_risk_bound

    n0 = int(0.9 * n)
    prior = PRIOR_NORM[perturbation] * factor

    def bound(alpha, rows, budget, r=prior):
        return excess_risk_bound(alpha, rows, d + 1, budget, delta, loss=loss,
                                 perturbation=perturbation, prior_norm=r)

    def best(rows, budget, r=prior):
        return auto_alpha(rows, d + 1, budget, delta, loss=loss, perturbation=perturbation,
                          prior_norm=r)

    rule = best(n, eps, PRIOR_NORM[perturbation])
    truth = best(n, eps)
    reference = bound(truth, n, eps)
    return (bound(rule, n, eps) / reference, bound(best(n0, eps0), n0, eps0) / reference,
            truth / rule)


def break_even(n, d, eps, delta, perturbation, loss, eps0, direction):
    """The alpha factor (best over rule) at which a perfect search starts to win."""
    for k in np.exp(np.linspace(0.0, math.log(100.0), 400))[1:]:
        factor = k if direction > 0 else 1.0 / k
        rule, search, ratio = _costs(n, d, eps, delta, perturbation, factor, loss, eps0)
        if rule > search:
            return ratio
    return float("nan")


def run(configs=CONFIGS):
    rows = []
    for n, d, eps, delta, perturbation in configs:
        loss, eps0 = _setup(n, d, eps, delta, perturbation)
        row = dict(perturbation=perturbation, delta=delta, n=n, d=d, epsilon=eps,
                   eps0_over_eps=round(eps0 / eps, 3))
        for tag, factor in (("x3", 3.0), ("x1/3", 1 / 3)):
            rule, search, _ = _costs(n, d, eps, delta, perturbation, factor, loss, eps0)
            row[f"rule_truth_{tag}"], row[f"search_truth_{tag}"] = round(rule, 3), round(
                search, 3)
        row["split"] = round(_costs(n, d, eps, delta, perturbation, 1.0, loss, eps0)[1], 3)
        row["break_even_alpha_below"] = round(
            break_even(n, d, eps, delta, perturbation, loss, eps0, +1), 3)
        row["break_even_alpha_above"] = round(
            break_even(n, d, eps, delta, perturbation, loss, eps0, -1), 3)
        rows.append(row)
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks search-bound",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="the first two configurations")
    args = parser.parse_args(argv)
    C.set_quick(args.quick)
    C.header("What a search over multiples of the rule can gain, by the rule's bound")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows = run(CONFIGS[:2] if args.quick else CONFIGS)
    columns = list(rows[0])
    print(" ".join(f"{c:>12s}" for c in columns))
    for row in rows:
        print(" ".join(f"{row[c]!s:>12s}" for c in columns))
    C.write_csv("search_bound", rows, columns,
                comment_lines=("command: python -m benchmarks search-bound",))
    return 0
