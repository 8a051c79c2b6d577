"""Choosing epsilon on Adult: recommended intervals against the truth, in one run.

Sub-command ``python -m benchmarks utility``. Adult (paper preprocessing) is split
in two stratified halves: A plays the *public* data, B the *private* data.

* Public mode: ``dpsk.utility.utility_curve`` on A (70/30 train/held-out split,
  ``--draws`` noise draws per epsilon) and ``UtilityCurve.recommend`` for target
  accuracies 0.78, 0.80 and 0.82.
* Truth: real private fits (``--truth-draws`` fresh seeds per epsilon) on a 70%
  training part of B, scored on the other 30% of B; the *true* epsilon of a
  target is where the mean of these fits crosses it (same crossing rule, same
  grid). Its own Monte Carlo interval is reported too.
* Probe mode (Li et al.): ``--probes`` probe fits on B's training part at each
  probe epsilon, extrapolated with the paper's tangent line and with the
  inverse (noise-scale) extrapolation; the public data of the probe is A's
  held-out part. Error against the Monte Carlo truth on the same rows (the
  real fits on B scored on A's held-out part): mean absolute log-ratio of
  the loss and mean absolute accuracy error over the grid.

Estimator: ``DPLogisticRegression(alpha=1e-3, classes=[0, 1])``, objective and
output perturbation, pure epsilon. ``--quick`` writes under
``benchmarks/results/quick/``.
"""

import argparse
import time
import warnings

import numpy as np
from sklearn.model_selection import train_test_split

from . import _common as C

NAME = "utility"
TARGETS = (0.78, 0.80, 0.82)
EPSILONS = np.logspace(-2, 2, 17)
PROBE_EPSILONS = (0.1, 1.0)
PERTURBATIONS = ("objective", "output")


def _truth(est, eps, X_tr, y_tr, evals, draws, seed, n_jobs):
    """Mean held-out accuracy/loss of real private fits, for each eval set."""
    from joblib import Parallel, delayed

    seeds = np.random.SeedSequence([seed, 7]).generate_state(len(eps) * draws) >> 1
    tasks = [(float(e), int(seeds[i * draws + j])) for i, e in enumerate(eps)
             for j in range(draws)]
    gen = Parallel(n_jobs=n_jobs, return_as="generator")(
        delayed(_truth_fit)(est, e, s, X_tr, y_tr, evals) for e, s in tasks)
    out = np.array(list(C.progress(gen, total=len(tasks), desc="truth")))
    return out.reshape(len(eps), draws, len(evals), 4)


def _truth_fit(est, epsilon, seed, X_tr, y_tr, evals):
    from dpsk import BudgetAccountant
    from dpsk.utility._common import held_out_metrics

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fitted = type(est)(**{**est.get_params(), "epsilon": epsilon, "random_state": seed,
                              "accountant": BudgetAccountant()}).fit(X_tr, y_tr)
    return [held_out_metrics(fitted, X, y) for X, y in evals]


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks utility", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="8 draws, 2 probes; writes to benchmarks/results/quick/")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--draws", type=int, default=None, help="MC draws (default 30)")
    parser.add_argument("--truth-draws", type=int, default=None, help="default 30")
    parser.add_argument("--probes", type=int, default=None, help="probe fits (default 5)")
    parser.add_argument("--n-jobs", type=int, default=2)
    args = parser.parse_args(argv)
    draws = args.draws or (8 if args.quick else 30)
    truth_draws = args.truth_draws or (8 if args.quick else 30)
    n_probes = args.probes or (2 if args.quick else 5)
    out_name = f"quick/{NAME}" if args.quick else NAME
    C.limit_blas_threads()
    info = C.machine_info()
    C.header(f"utility: choosing epsilon on Adult (public half A, private half B), "
             f"{draws} MC draws, {truth_draws} truth draws, {n_probes} probes", info)

    from dpsk import BudgetAccountant, DPLogisticRegression
    from dpsk.utility import probe_curve, utility_curve
    from dpsk.utility._curve import _crossing

    X, y = C.load_adult_data()
    XA, XB, yA, yB = train_test_split(X, y, test_size=0.5, stratify=y, random_state=args.seed)
    # B's split: the same 70/30 protocol as the curve's split of A.
    XB_tr, XB_te, yB_tr, yB_te = train_test_split(XB, yB, test_size=0.3, stratify=yB,
                                                  random_state=args.seed + 1)
    XA_tr, XA_te, yA_tr, yA_te = train_test_split(XA, yA, test_size=0.3, stratify=yA,
                                                  random_state=args.seed + 2)
    rec_rows, probe_rows, curve_rows, figs = [], [], [], []
    t_start = time.time()
    for perturbation in PERTURBATIONS:
        est = DPLogisticRegression(alpha=1e-3, perturbation=perturbation, classes=[0, 1])
        t0 = time.time()
        curve = utility_curve(est, XA, yA, epsilons=EPSILONS, n_draws=draws,
                              random_state=args.seed, n_jobs=args.n_jobs, progress=True)
        t_curve = time.time() - t0
        t0 = time.time()
        truth = _truth(est, EPSILONS, XB_tr, yB_tr, [(XB_te, yB_te), (XA_te, yA_te)],
                       truth_draws, args.seed, args.n_jobs)
        t_truth = time.time() - t0
        truth_acc = truth[:, :, 0, 0]
        truth_mean = truth_acc.mean(axis=1)
        half = 1.645 * np.sqrt(truth_acc.var(axis=1, ddof=1) / truth_draws
                               + truth[:, :, 0, 2].mean(axis=1) / len(yB_te))
        print(f"\n{perturbation}: curve {t_curve:.0f}s ({len(EPSILONS) * draws} fits), "
              f"truth {t_truth:.0f}s ({len(EPSILONS) * truth_draws} fits)")
        for i, e in enumerate(EPSILONS):
            curve_rows.append({"perturbation": perturbation, "epsilon": float(e),
                               "mc_accuracy": float(curve.accuracy_mean[i]),
                               "mc_band_low": float(curve.accuracy_band[0, i]),
                               "mc_band_high": float(curve.accuracy_band[1, i]),
                               "mc_loss": float(curve.loss_mean[i]),
                               "truth_accuracy": float(truth_mean[i]),
                               "truth_loss": float(truth[:, :, 0, 1].mean(axis=1)[i])})
        probes = {}
        for pe in PROBE_EPSILONS:
            for k in range(n_probes):
                probe = DPLogisticRegression(alpha=1e-3, perturbation=perturbation,
                                             classes=[0, 1], epsilon=pe,
                                             random_state=args.seed * 1000 + k,
                                             accountant=BudgetAccountant())
                probe.fit(XB_tr, yB_tr)
                for ex in ("tangent", "inverse"):
                    probes[(pe, k, ex)] = probe_curve(probe, XA_te, yA_te,
                                                      n_samples=len(yB_tr),
                                                      epsilons=EPSILONS, extrapolation=ex)
        on_a_acc = truth[:, :, 1, 0].mean(axis=1)
        on_a_loss = truth[:, :, 1, 1].mean(axis=1)
        for pe in PROBE_EPSILONS:
            for ex in ("tangent", "inverse"):
                pcs = [probes[(pe, k, ex)] for k in range(n_probes)]
                loss_pred = np.array([p.loss_mean for p in pcs])
                with np.errstate(invalid="ignore", divide="ignore"):
                    log_err = np.abs(np.log(np.where(loss_pred > 0, loss_pred, np.nan)
                                            / on_a_loss))
                acc_err = np.abs(np.array([p.accuracy_mean for p in pcs]) - on_a_acc)
                row = {"perturbation": perturbation, "probe_epsilon": pe, "extrapolation": ex,
                       "loss_abs_log_ratio": float(np.nanmean(log_err)),
                       "loss_pred_nonpositive": float(np.mean(loss_pred <= 0)),
                       "accuracy_abs_error": float(np.mean(acc_err))}
                for t in TARGETS:
                    row[f"probe_eps_{t}"] = float(np.nanmedian(
                        [p.recommend(target_accuracy=t).epsilon for p in pcs]))
                probe_rows.append(row)
        for t in TARGETS:
            rec = curve.recommend(target_accuracy=t)
            true_eps = _crossing(EPSILONS, truth_mean, t)[0]
            true_lo = _crossing(EPSILONS, truth_mean + half, t)[0]
            true_hi = _crossing(EPSILONS, truth_mean - half, t)[0]
            covered = bool(rec.low <= true_eps <= rec.high) if np.isfinite(true_eps) else False
            rec_rows.append({"perturbation": perturbation, "target": t,
                             "rec_low": rec.low, "rec_epsilon": rec.epsilon,
                             "rec_high": rec.high, "rec_single_fit": rec.single_fit,
                             "true_epsilon": true_eps, "true_low": true_lo,
                             "true_high": true_hi, "covered": covered})
        figs.append((perturbation, curve, truth_mean, half, probes))
    elapsed = time.time() - t_start

    print("\nRecommended epsilon (public half A) vs the truth (real fits on half B)")
    print(C.format_table(rec_rows, ["perturbation", "target", "rec_low", "rec_epsilon",
                                    "rec_high", "rec_single_fit", "true_epsilon", "true_low",
                                    "true_high", "covered"], floatfmt="{:.3g}"))
    print("\nProbe extrapolation vs Monte Carlo truth (mean over the grid and the probes)")
    print(C.format_table(probe_rows, ["perturbation", "probe_epsilon", "extrapolation",
                                      "loss_abs_log_ratio", "loss_pred_nonpositive",
                                      "accuracy_abs_error"] +
                         [f"probe_eps_{t}" for t in TARGETS], floatfmt="{:.3g}"))
    print(f"\ntotal {elapsed:.0f}s")
    comments = [C.machine_line(info), f"python -m benchmarks utility {' '.join(argv or [])}",
                f"seed={args.seed} draws={draws} truth_draws={truth_draws} probes={n_probes}"]
    C.write_csv(out_name, rec_rows, comment_lines=comments)
    C.write_csv(f"{out_name}_probe", probe_rows, comment_lines=comments)
    C.write_csv(f"{out_name}_curve", curve_rows, comment_lines=comments)
    _plot(figs, out_name)
    return 0


def _plot(figs, out_name):
    plt = C.get_pyplot()
    if plt is None:
        return
    fig, axes = plt.subplots(1, len(figs), figsize=(6 * len(figs), 4.2), squeeze=False)
    for ax, (perturbation, curve, truth_mean, half, probes) in zip(axes[0], figs):
        curve.plot(axes=[ax], metrics=("accuracy",))
        ax.plot(curve.epsilons, truth_mean, "k--", label="truth (real fits, half B)")
        ax.fill_between(curve.epsilons, truth_mean - half, truth_mean + half, color="k",
                        alpha=0.1)
        for (pe, k, ex), p in probes.items():
            if k == 0 and ex == "inverse":
                ax.plot(p.epsilons, p.accuracy_mean, ":", label=f"probe at {pe:g} (inverse)")
        for t in TARGETS:
            ax.axhline(t, color="grey", lw=0.5)
        ax.set_ylim(0.4, 0.86)
        ax.set_title(f"Adult, DPLogisticRegression(alpha=1e-3), {perturbation}", fontsize=9)
        ax.legend(fontsize=7, loc="lower right")
    C.save_figure(fig, out_name)
