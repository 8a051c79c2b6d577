"""Private prediction (DPPredictionEnsemble, DPStabilityPredictor) against a published private
model, on Adult.

Sub-command ``python -m benchmarks prediction``. In one run, on the same
stratified shuffled folds (``_common.cv_folds``, Adult with the paper's
preprocessing, rows of norm <= 1):

* ``ensemble``: ``DPPredictionEnsemble(LogisticRegression(), n_teachers=r)`` for
  r in {10, 30, 100, 300}, and with the default rule for r (``r="rule"``:
  ``ceil(6 ln(4 / 0.05) / eps)`` capped at ``n // 100``). Each test row is one
  query answered at per-query epsilon in {0.05, 0.1, 0.5, 1, 2}. The teachers do
  not depend on epsilon, so one ensemble per (fold, r) serves every epsilon.
  ``accuracy`` is the exact expected accuracy over the vote's noise (the mean over
  test rows of the probability that the answer is the true label, from the
  vote's law); ``accuracy_drawn`` is one draw of the answers through the same
  function ``predict`` uses (a check of the first). ``majority`` is the
  noise-free majority vote (not private; a ceiling).
* ``dplr``: ``DPLogisticRegression(perturbation="objective", fit_intercept=False)``
  at total epsilon E in {0.05, ..., 100}, best alpha of 10^{-2, ..., -4} per E
  chosen on the test folds (the oracle of the paper's tables: optimistic for the
  published model, so conservative for the ensemble).
* ``nonprivate``: scikit-learn's ``LogisticRegression()`` on the whole training fold.
* ``stability``: ``DPStabilityPredictor(fit_intercept=False)`` (Dwork and Feldman
  2018, Section 4.4: one regularised model on all rows, discrete Laplace noise
  on each query's score) for alpha in 10^{-2, ..., -4}, each test row one
  query at per-query epsilon in ``EPSILONS``. One fit per (fold, alpha) serves
  every epsilon. ``accuracy`` is exact over the noise (from the discrete Laplace
  law of each row's gridded score); ``accuracy_drawn`` one real draw through
  ``predict``; ``nonprivate`` the noise-free sign of the same model. The
  reported alpha is the best per epsilon on the test folds (the same oracle as
  for DPLR).
* ``average`` (only with ``--parts average``, written to ``prediction_average.csv``):
  ``DPPredictionEnsemble(aggregation="average")``, Corollary 4.7's noisy share
  with randomised rounding, with its default ``r = ceil(1 / (0.05 eps))`` capped
  at ``n // 100``; accuracy exact over the noise.
* ``brier``: the Brier score of one draw of ``predict_proba`` per epsilon, for
  the stability route (sigmoid of the noisy score, alpha fixed at 10^-2.5) and
  for the ensemble's noisy vote shares (rule's r).

The comparison: Q queries at per-query epsilon eps0 cost E = Q eps0 by basic
composition. A published private model trained at E answers any number of
queries. The crossover Q* for (eps0, r) is the smallest Q at which
``DPLogisticRegression`` at ``Q eps0`` is at least as accurate as the ensemble at
eps0 (DPLR's accuracy interpolated linearly in log E between grid points).
Beyond Q*, publishing the private model is the better deal.

``--quick``: 2 folds, written under ``benchmarks/results/quick/`` (not committed).
"""

import argparse
import math
import time
import warnings

import numpy as np

from . import _common as C
from .bench_gaussian import _data  # Adult and its folds, loaded once per process

NAME = "prediction"
EPSILONS = (0.05, 0.1, 0.5, 1.0, 2.0)
TEACHERS = (10, 30, 100, 300)
TOTAL_EPSILONS = (0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0)
LOG10_ALPHAS = (-2.0, -2.5, -3.0, -3.5, -4.0)
QUERIES = (1, 10, 100, 1000, 10000)
TARGET_ERROR = 0.05
STABILITY_LOG10_ALPHAS = (-2.0, -2.5, -3.0, -3.5, -4.0)
BRIER_LOG10_ALPHA = -2.5


def exact_stability_accuracy(model, Xte, truth, epsilon):
    """Expected accuracy of ``model.predict`` at ``epsilon``, exact over the noise.

    The answer is 1 when ``c + Z > 0``, ``c`` the row's gridded score and ``Z``
    discrete Laplace of scale ``t = k / epsilon`` (``a = exp(-1/t)``): ``P(Z <=
    -m) = a^m / (1 + a)`` for ``m >= 1``, so ``P(c + Z > 0)`` is ``1 - a^c / (1 +
    a)`` for ``c >= 1`` and ``a^(1 - c) / (1 + a)`` for ``c <= 0``.
    """
    from dpsk._data._design import design_matrix

    Z = design_matrix(Xte, float(model.data_norm), model.fit_intercept)
    c = np.rint((Z @ model._weights) / model.grid_)
    a = np.exp(-epsilon / model._row_sensitivities(Z).astype(float))
    tail = a ** np.where(c >= 1, c, 1.0 - c) / (1.0 + a)  # exponents >= 1: no overflow
    p_one = np.where(c >= 1, 1.0 - tail, tail)
    return float(np.mean(np.where(truth == 1, p_one, 1.0 - p_one))), float(
        np.mean((c > 0) == (truth == 1)))


def _stability_records(k, seed, Xtr, ytr, Xte, yte):
    """Every (alpha, epsilon) cell of the stability route on fold ``k``, and the Brier scores."""
    from sklearn.linear_model import LogisticRegression

    from dpsk import BudgetAccountant, DPPredictionEnsemble, DPStabilityPredictor

    out = []
    for la in STABILITY_LOG10_ALPHAS:
        t0 = time.perf_counter()
        model = DPStabilityPredictor(alpha=10.0 ** la, fit_intercept=False, classes=[0, 1],
                                     accountant=BudgetAccountant(),
                                     random_state=C.seed_for(seed, 18, k, int(-la * 10)))
        model.fit(Xtr, ytr)
        fit_time = time.perf_counter() - t0
        for eps in EPSILONS:
            expected, nonprivate = exact_stability_accuracy(model, Xte, yte, eps)
            drawn = model.set_params(epsilon=eps).predict(Xte)
            out.append(dict(kind="stability", log10_alpha=la, epsilon=eps, fold=k,
                            accuracy=expected, accuracy_drawn=float(np.mean(drawn == yte)),
                            majority=nonprivate, fit_time=fit_time))
    stab = DPStabilityPredictor(alpha=10.0 ** BRIER_LOG10_ALPHA, fit_intercept=False,
                                classes=[0, 1], accountant=BudgetAccountant(),
                                random_state=C.seed_for(seed, 19, k)).fit(Xtr, ytr)
    for eps in EPSILONS:
        ens = DPPredictionEnsemble(LogisticRegression(), epsilon=eps, target_error=TARGET_ERROR,
                                   classes=[0, 1], accountant=BudgetAccountant(),
                                   random_state=C.seed_for(seed, 20, k, int(eps * 1e4)))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the cap warning of the rule at small epsilon
            ens.fit(Xtr, ytr)
        for name, model in (("stability", stab.set_params(epsilon=eps)), ("ensemble", ens)):
            p_one = model.predict_proba(Xte)[:, 1]
            out.append(dict(kind="brier", r=name, epsilon=eps, fold=k,
                            accuracy=float(np.mean((p_one - yte) ** 2))))
    return out

def _ensemble_records(k, seed, Xtr, ytr, Xte, yte):
    """Every (r, epsilon) cell of fold ``k``."""
    from sklearn.linear_model import LogisticRegression

    from dpsk import BudgetAccountant, DPPredictionEnsemble
    from dpsk.prediction._vote import private_vote, vote_counts, vote_probabilities

    settings = [(r, r, None) for r in TEACHERS]  # (label, n_teachers, only this epsilon)
    settings += [("rule", None, eps) for eps in EPSILONS]
    out = []
    for label, n_teachers, only_eps in settings:
        ens = DPPredictionEnsemble(
            LogisticRegression(), epsilon=only_eps or 1.0, n_teachers=n_teachers,
            target_error=TARGET_ERROR, classes=[0, 1], accountant=BudgetAccountant(),
            random_state=C.seed_for(seed, 15, k, 0 if label == "rule" else label,
                                    int(round((only_eps or 0) * 1e4))))
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the cap warning of the rule at small epsilon
            ens.fit(Xtr, ytr)
        fit_time = time.perf_counter() - t0
        counts = vote_counts(ens._teachers, Xte, ens.classes_)
        majority = float(np.mean(ens.classes_[np.argmax(counts, axis=1)] == yte))
        truth = np.searchsorted(ens.classes_, yte)
        for eps in (EPSILONS if only_eps is None else (only_eps,)):
            expected = float(np.mean(vote_probabilities(counts, eps)[np.arange(yte.size),
                                                                     truth]))
            drawn = private_vote(counts, eps, Xte, C.seed_for(seed, 16, k, int(eps * 1e4)))
            out.append(dict(kind="ensemble", r=label, n_teachers=ens.n_teachers_,
                            epsilon=eps, fold=k, accuracy=expected,
                            accuracy_drawn=float(np.mean(drawn == truth)), majority=majority,
                            fit_time=fit_time))
    return out


def _dplr_records(k, seed, Xtr, ytr, Xte, yte):
    from sklearn.linear_model import LogisticRegression

    from dpsk import BudgetAccountant, DPLogisticRegression

    out = []
    for E in TOTAL_EPSILONS:
        for la in LOG10_ALPHAS:
            est = DPLogisticRegression(
                epsilon=E, alpha=10.0 ** la, perturbation="objective", fit_intercept=False,
                classes=[0, 1], accountant=BudgetAccountant(),
                random_state=C.seed_for(seed, 17, k, int(E * 1e4), int(-la * 10)))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # weak-budget warnings at large E
                est.fit(Xtr, ytr)
            out.append(dict(kind="dplr", epsilon=E, log10_alpha=la, fold=k,
                            accuracy=float(np.mean(est.predict(Xte) == yte))))
    lr = LogisticRegression(max_iter=1000).fit(Xtr, ytr)
    out.append(dict(kind="nonprivate", fold=k, accuracy=float(np.mean(lr.predict(Xte) == yte))))
    return out


def _average_records(k, seed, Xtr, ytr, Xte, yte):
    """Corollary 4.7's averaging ensemble at each epsilon, accuracy exact over the noise."""
    from sklearn.linear_model import LogisticRegression

    from dpsk import BudgetAccountant, DPPredictionEnsemble
    from dpsk.prediction._laplace import discrete_laplace_pmf
    from dpsk.prediction._vote import vote_counts

    out = []
    for eps in EPSILONS:
        ens = DPPredictionEnsemble(LogisticRegression(), epsilon=eps, target_error=TARGET_ERROR,
                                   classes=[0, 1], accountant=BudgetAccountant(),
                                   aggregation="average",
                                   random_state=C.seed_for(seed, 21, k, int(eps * 1e4)))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the cap warning at small epsilon
            ens.fit(Xtr, ytr)
        r = ens.n_teachers_
        c1 = vote_counts(ens._teachers, Xte, ens.classes_)[:, 1]
        width = int(60 / eps) + 1  # the law's tail beyond is below e^-60
        z = np.arange(-width, width + 1)
        pmf = discrete_laplace_pmf(z, 1.0 / eps)
        p_one = np.array([np.sum(pmf * np.clip(c + z, 0, r)) / r for c in range(r + 1)])[c1]
        accuracy = float(np.mean(np.where(yte == 1, p_one, 1.0 - p_one)))
        out.append(dict(kind="average", n_teachers=r, epsilon=eps, fold=k, accuracy=accuracy))
    return out


def _run_fold(part, k, seed):
    X, y, folds = _data(seed)
    train, test = folds[k]
    args = (k, seed, X[train], y[train], X[test], y[test])
    return {"ensemble": _ensemble_records, "dplr": _dplr_records,
            "stability": _stability_records, "average": _average_records}[part](*args)


# ------------------------------------------------------------------- summaries
def _mean_se(values):
    values = np.asarray(values, dtype=float)
    se = values.std(ddof=1) / math.sqrt(values.size) if values.size > 1 else float("nan")
    return float(values.mean()), float(se)


def summarise(records):
    """Mean accuracy per ensemble (r, eps), per DPLR E (best alpha), non-private."""
    ens = {}
    for rec in (r for r in records if r["kind"] == "ensemble"):
        ens.setdefault((rec["r"], rec["epsilon"]), []).append(rec)
    ensemble = {key: dict(zip(("accuracy", "se"), _mean_se([r["accuracy"] for r in recs])),
                          drawn=_mean_se([r["accuracy_drawn"] for r in recs])[0],
                          majority=_mean_se([r["majority"] for r in recs])[0],
                          n_teachers=recs[0]["n_teachers"],
                          fit_time=_mean_se([r["fit_time"] for r in recs])[0])
                for key, recs in ens.items()}
    cells = {}
    for rec in (r for r in records if r["kind"] == "dplr"):
        cells.setdefault((rec["epsilon"], rec["log10_alpha"]), []).append(rec["accuracy"])
    dplr = {}
    for (E, la), accs in cells.items():
        m, se = _mean_se(accs)
        if E not in dplr or m > dplr[E]["accuracy"]:
            dplr[E] = dict(accuracy=m, se=se, log10_alpha=la)
    nonprivate = _mean_se([r["accuracy"] for r in records if r["kind"] == "nonprivate"])
    return ensemble, dplr, nonprivate


def summarise_stability(records):
    """Per epsilon: the stability route at its best alpha; per (route, epsilon): Brier."""
    cells = {}
    for rec in (r for r in records if r["kind"] == "stability"):
        cells.setdefault((rec["epsilon"], rec["log10_alpha"]), []).append(rec)
    stability = {}
    for (eps, la), recs in cells.items():
        m, se = _mean_se([r["accuracy"] for r in recs])
        if eps not in stability or m > stability[eps]["accuracy"]:
            stability[eps] = dict(accuracy=m, se=se, log10_alpha=la,
                                  drawn=_mean_se([r["accuracy_drawn"] for r in recs])[0],
                                  nonprivate=_mean_se([r["majority"] for r in recs])[0],
                                  fit_time=_mean_se([r["fit_time"] for r in recs])[0])
    brier = {}
    for rec in (r for r in records if r["kind"] == "brier"):
        brier.setdefault((rec["r"], rec["epsilon"]), []).append(rec["accuracy"])
    return stability, {key: _mean_se(v) for key, v in brier.items()}


def stability_table(stability, brier, ensemble, dplr):
    """The stability route against the ensemble and DPLR; crossover Q* against DPLR."""
    lines = ["", "DPStabilityPredictor (fit_intercept=False, best alpha per eps; exact over "
             "the noise):",
             "eps0   log10a  accuracy  (drawn)  noise-free  ensemble best  ensemble rule  "
             "DPLR Q=1  crossover Q*"]
    rows = []
    for e in EPSILONS:
        st = stability[e]
        q_star = crossover(dplr, e, st["accuracy"])
        ens_best = ensemble[(best_r(ensemble, e), e)]["accuracy"]
        ens_rule = ensemble[("rule", e)]["accuracy"]
        lines.append(f"{e:<6g} {st['log10_alpha']:>6g}  {st['accuracy']:.4f}±{st['se']:.4f}"
                     f" ({st['drawn']:.4f})  {st['nonprivate']:.4f}      {ens_best:.4f}"
                     f"         {ens_rule:.4f}         {dplr_at(dplr, e):.4f}    {q_star:>6}")
        rows.append(dict(eps0=e, stability=st["accuracy"], stability_se=st["se"],
                         stability_log10_alpha=st["log10_alpha"], stability_q_star=q_star))
    lines += ["", f"Brier score of one predict_proba draw (stability alpha=10^"
              f"{BRIER_LOG10_ALPHA:g}; ensemble rule r):",
              "eps0   stability  ensemble"]
    for e in EPSILONS:
        lines.append(f"{e:<6g} {brier[('stability', e)][0]:.4f}     "
                     f"{brier[('ensemble', e)][0]:.4f}")
    return "\n".join(lines), rows


def dplr_at(dplr, E):
    """DPLR's best-alpha accuracy at total epsilon E, linear in log E (clamped at the grid)."""
    grid = np.array(sorted(dplr))
    accs = np.array([dplr[e]["accuracy"] for e in grid])
    return float(np.interp(math.log(E), np.log(grid), accs))


def crossover(dplr, eps0, accuracy):
    """Smallest Q >= 1 with DPLR(Q eps0) >= accuracy; inf if not within the grid."""
    grid = sorted(dplr)
    if dplr_at(dplr, eps0) >= accuracy:
        return 1
    # Search Q on a fine geometric grid up to the largest E of the grid.
    q_max = grid[-1] / eps0
    for q in np.unique(np.round(np.geomspace(1, max(q_max, 1), 2000))):
        if dplr_at(dplr, q * eps0) >= accuracy:
            return int(q)
    return math.inf


def best_r(ensemble, eps):
    keys = [key for key in ensemble if key[1] == eps]
    return max(keys, key=lambda key: ensemble[key]["accuracy"])[0]


def tables(ensemble, dplr, nonprivate):
    rs = [*TEACHERS, "rule"]
    lines = ["Ensemble accuracy (expected over the vote noise, mean ± s.e. over folds):",
             "r \\ eps  " + "".join(f"{e:>16g}" for e in EPSILONS)]
    for r in rs:
        cells = []
        for e in EPSILONS:
            c = ensemble.get((r, e))
            cells.append(f"{c['accuracy']:.4f}±{c['se']:.4f}".rjust(16) if c else "-".rjust(16))
        lines.append(f"{str(r):8s} " + "".join(cells))
    lines.append("rule r   " + "".join(f"{ensemble[('rule', e)]['n_teachers']:>16d}"
                                       for e in EPSILONS))
    lines.append("majority " + "".join(f"{ensemble[(best_r(ensemble, e), e)]['majority']:>16.4f}"
                                       for e in EPSILONS) + "   (noise-free vote of best r)")
    lines += ["", "DPLogisticRegression (objective, best alpha), accuracy at total epsilon E:"]
    lines.append("  ".join(f"E={E:g}: {dplr[E]['accuracy']:.4f}" for E in sorted(dplr)))
    lines.append(f"non-private LogisticRegression: {nonprivate[0]:.4f} ± {nonprivate[1]:.4f}")
    lines += ["", "Q queries at eps0 each vs DPLR at E = Q eps0 (basic composition); best r:",
              "eps0   best r   ensemble  " + "".join(f"{'Q=' + str(q):>10s}" for q in QUERIES)
              + "   crossover Q*   Q* (rule r)"]
    rows = []
    for e in EPSILONS:
        r = best_r(ensemble, e)
        acc = ensemble[(r, e)]["accuracy"]
        q_star = crossover(dplr, e, acc)
        q_rule = crossover(dplr, e, ensemble[("rule", e)]["accuracy"])
        lines.append(f"{e:<6g} {str(r):>6s}   {acc:.4f}    "
                     + "".join(f"{dplr_at(dplr, q * e):>10.4f}" for q in QUERIES)
                     + f"   {q_star:>12}   {q_rule:>11}")
        rows.append(dict(eps0=e, best_r=r, ensemble=acc, q_star=q_star, q_star_rule=q_rule))
    return "\n".join(lines), rows


def plot(ensemble, dplr, nonprivate, name, stability=None):
    plt = C.get_pyplot()
    if plt is None:
        return None
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    for r in [*TEACHERS, "rule"]:
        left.plot(EPSILONS, [ensemble[(r, e)]["accuracy"] for e in EPSILONS], marker="o",
                  label=f"ensemble r={r}" if r != "rule" else "ensemble, rule for r",
                  linestyle="--" if r == "rule" else "-")
    left.plot(EPSILONS, [dplr_at(dplr, e) for e in EPSILONS], color="k", marker="s",
              label="DPLogisticRegression at the same eps (1 query)")
    if stability:
        left.plot(EPSILONS, [stability[e]["accuracy"] for e in EPSILONS], color="m",
                  marker="^", linewidth=2, label="DPStabilityPredictor (best alpha)")
    left.axhline(nonprivate[0], color="grey", linestyle=":", label="non-private LR")
    left.set_xscale("log")
    left.set_xlabel("per-query epsilon")
    left.set_ylabel("accuracy of answered queries (Adult)")
    left.legend(fontsize=8)
    qs = np.geomspace(1, 1e5, 200)
    for e, color in zip((0.1, 0.5, 1.0), ("C0", "C1", "C2")):
        acc = ensemble[(best_r(ensemble, e), e)]["accuracy"]
        right.plot(qs, [dplr_at(dplr, q * e) for q in qs], color=color,
                   label=f"DPLR at Q x {e:g}")
        right.axhline(acc, color=color, linestyle="--", label=f"ensemble at {e:g}/query")
        if stability:
            right.axhline(stability[e]["accuracy"], color=color, linestyle="-.",
                          label=f"stability route at {e:g}/query")
        q_star = crossover(dplr, e, acc)
        if math.isfinite(q_star):
            right.axvline(q_star, color=color, linestyle=":", alpha=0.6)
    right.set_xscale("log")
    right.set_xlabel("number of answered queries Q (total epsilon = Q x eps0)")
    right.set_ylabel("accuracy")
    right.legend(fontsize=8)
    fig.suptitle("Private prediction vs a published private model (Adult, 10-fold)")
    return C.save_figure(fig, name)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks prediction", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="2 folds; writes to benchmarks/results/quick/ (not committed)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--folds", type=int, default=None, help="folds of 10 (default 10)")
    parser.add_argument("--n-jobs", type=int, default=None, help="workers (default 2)")
    parser.add_argument("--parts", default=None,
                        help="'average': only Corollary 4.7's averaging ensemble "
                             "(written to prediction_average.csv)")
    args = parser.parse_args(argv)
    if args.parts == "average":
        return _main_average(args)
    C.limit_blas_threads()
    n_folds = args.folds or (2 if args.quick else 10)
    out_name = f"quick/{NAME}" if args.quick else NAME
    (C.RESULTS_DIR / "quick").mkdir(parents=True, exist_ok=True)
    info = C.machine_info()
    C.header(f"dpsk benchmark: {NAME} ({n_folds} folds)", info)
    t0 = time.time()
    tasks = [(part, k, args.seed) for k in range(n_folds)
             for part in ("ensemble", "dplr", "stability")]
    results = C.run_tasks(_run_fold, tasks, n_jobs=args.n_jobs or 2, desc=NAME)
    records = [rec for batch in results for rec in batch]
    ensemble, dplr, nonprivate = summarise(records)
    text, rows = tables(ensemble, dplr, nonprivate)
    stability, brier = summarise_stability(records)
    stab_text, stab_rows = stability_table(stability, brier, ensemble, dplr)
    text += "\n" + stab_text
    rows = [dict(row, **extra) for row, extra in zip(rows, stab_rows)]
    print(text)
    print(f"\n({time.time() - t0:.0f} s; {C.command_line()})")
    C.write_csv(out_name, records, comment_lines=[C.machine_line(info), C.command_line()])
    C.write_csv(out_name + "_crossover", rows, comment_lines=[C.machine_line(info)])
    path = plot(ensemble, dplr, nonprivate, out_name, stability)
    if path:
        print(f"plot: {path}")
    return 0


def _main_average(args):
    """``--parts average``: Corollary 4.7's averaging ensemble alone."""
    C.limit_blas_threads()
    n_folds = args.folds or (2 if args.quick else 10)
    out_name = f"quick/{NAME}_average" if args.quick else f"{NAME}_average"
    (C.RESULTS_DIR / "quick").mkdir(parents=True, exist_ok=True)
    info = C.machine_info()
    C.header(f"dpsk benchmark: {NAME} --parts average ({n_folds} folds)", info)
    t0 = time.time()
    tasks = [("average", k, args.seed) for k in range(n_folds)]
    records = [rec for batch in C.run_tasks(_run_fold, tasks, n_jobs=args.n_jobs or 2,
                                            desc=NAME) for rec in batch]
    print("Corollary 4.7 averaging (default r), accuracy exact over the noise:")
    for eps in EPSILONS:
        recs = [r for r in records if r["epsilon"] == eps]
        m, se = _mean_se([r["accuracy"] for r in recs])
        print(f"eps={eps:g}  r={recs[0]['n_teachers']}  accuracy={m:.4f}±{se:.4f}")
    print(f"\n({time.time() - t0:.0f} s; {C.command_line()})")
    C.write_csv(out_name, records, comment_lines=[C.machine_line(info), C.command_line()])
    return 0
