"""Empirical black-box privacy audit of every estimator family, with a mutant for each.

For every family in ``FAMILIES`` the slow tests run the real mechanism
``n_runs`` times on each of two neighbouring data sets and compute a lower bound
on epsilon at 98% confidence (Clopper-Pearson, ``tests/_audit.py``). Two checks
per family:

* the real mechanism's lower bound stays at or below its claimed epsilon;
* a **mutant** of it, the same code with only the noise scale changed at the
  family's one calibration point (monkeypatched), is caught: its lower bound
  exceeds the claim.

The neighbours are crafted so that the privacy loss is concentrated where the
threshold looks (``why`` of each entry). Where a pair can realise only part of
the bound, the mutant is stronger than noise x 0.8, by about the share the
pair cannot reach; each such entry says why. Print the table with::

    python -m pytest -m slow tests/test_empirical_audit.py -s

The fast tests at the end check the machinery itself (Clopper-Pearson values,
the exact power calculation, and the audit on the textbook Laplace mechanism).
Seeds are fixed and every sample size comes from the power calculation
(``Family.planned``), so the verdicts are deterministic and far from the line.
"""

import dataclasses
import math
import warnings

import numpy as np
import pytest
from _audit import (
    CONFIDENCE,
    Family,
    cp_lower,
    cp_upper,
    discrete_laplace_llr,
    discrete_laplace_llr_law,
    discrete_law,
    epsilon_lower_bound,
    expected_lower_bound,
    gaussian_law,
    laplace_law,
    power,
    run_audit,
)

import dpsk.mechanisms._counts as counts_module
import dpsk.mechanisms._erm as erm_module
import dpsk.mechanisms._forest as forest_module
import dpsk.mechanisms._gradient as gradient_module
import dpsk.mechanisms._moments as moments_module
import dpsk.mechanisms._prior_check as check_module
import dpsk.mechanisms._second_moment as second_moment_module
import dpsk.model_selection._safe as safe_module
import dpsk.model_selection._search as search_module
import dpsk.naive_bayes._categorical as categorical_module
import dpsk.naive_bayes._gaussian as gaussian_module
import dpsk.prediction._stability as stability_module
import dpsk.preprocessing._bounds as bounds_module
import dpsk.preprocessing._pca as pca_module
from dpsk import (
    BudgetAccountant,
    DPCategoricalNB,
    DPDecisionTreeClassifier,
    DPGaussianNB,
    DPKernelClassifier,
    DPRandomForestClassifier,
    DPStabilityPredictor,
)
from dpsk._optimize._binary import minimize_regularized_loss
from dpsk._optimize._losses import HuberLoss, LogisticLoss, MultinomialLoss
from dpsk._optimize._multinomial_solver import minimize_multinomial_loss
from dpsk._optimize._robust_solver import minimize_robust_logistic
from dpsk._optimize._solution_cache import reusing_solutions
from dpsk._optimize._tilted_solver import minimize_tilted_logistic
from dpsk.kernel._random_features import fourier_features, sample_frequencies
from dpsk.mechanisms._beyond_erm import (
    RobustLogisticConstants,
    TiltedLogisticConstants,
    private_robust_erm,
    private_tilted_erm,
)
from dpsk.mechanisms._erm import _noise_plan, private_erm
from dpsk.mechanisms._forest_rule import auto_split_share
from dpsk.mechanisms._gradient import noisy_gd_schedule
from dpsk.mechanisms._moments import RESOLUTION, noise_laws
from dpsk.mechanisms._prior import prior_budget
from dpsk.mechanisms._prior_check import release_prior_check
from dpsk.mechanisms._random import NoiseSource, public_rng
from dpsk.model_selection._safe import select_with_bonus
from dpsk.model_selection._search import _select_candidate
from dpsk.prediction._laplace import grid_sensitivity
from dpsk.preprocessing import DPPCA
from dpsk.preprocessing._bounds import PrivateBoundsScaler, bounds_grid, quantile_utilities

EXACT_TOL = 1e-13
TOL = 1e-10  # every estimator's default
HUBER = HuberLoss(0.5)


# -- mutants: scale one calibration point ---------------------------------------------------


def _scale_result(module, name, attribute=None, factor=1.0):
    """``mutate(monkeypatch)``: multiply ``module.name``'s result (or one field) by ``factor``."""
    def mutate(monkeypatch):
        original = getattr(module, name)

        def scaled(*args, **kwargs):
            result = original(*args, **kwargs)
            if attribute is None:
                return result * factor
            return dataclasses.replace(result, **{attribute: getattr(result, attribute) * factor})

        monkeypatch.setattr(module, name, scaled)
    return mutate


def _scale_epsilon_of(module, name, factor):
    """``mutate`` that calls ``module.name`` (an exponential mechanism) at ``epsilon * factor``."""
    def mutate(monkeypatch):
        original = getattr(module, name)

        def sharper(utilities, epsilon, sensitivity, rng):
            return original(utilities, epsilon * factor, sensitivity, rng)

        monkeypatch.setattr(module, name, sharper)
    return mutate


def _scale_count_noise_of(module, factor):
    """``mutate`` that calls ``module.laplace_noise`` at ``epsilon / factor``: scale x factor."""
    def mutate(monkeypatch):
        original = module.laplace_noise

        def smaller(l1_sensitivity, epsilon):
            return original(l1_sensitivity, epsilon / factor)

        monkeypatch.setattr(module, "laplace_noise", smaller)
    return mutate


# -- the pairs ------------------------------------------------------------------------------


def _flip_pair(n, positives):
    """``n`` rows ``x = 1`` (d = 1); D' turns the first row's label from +1 to -1."""
    Z = np.ones((n, 1))
    y_d = np.array([1.0] * positives + [-1.0] * (n - positives))
    y_dp = y_d.copy()
    y_dp[0] = -1.0
    return {"D": (Z, y_d), "D'": (Z, y_dp)}


def _thresholds(centre_d, centre_d_prime, scale):
    """Candidate thresholds: from the lower centre to a few scales past the upper one."""
    return np.linspace(min(centre_d, centre_d_prime) - scale, max(centre_d, centre_d_prime)
                       + 3.0 * scale, 41)


def _erm_sampler(pairs, loss, perturbation, epsilon, delta, alpha, statistic=None):
    """``sample``: ``private_erm`` on the pair, one seeded source for all runs.

    Output perturbation's solve does not depend on the noise: the runs share it
    through ``reusing_solutions``, the library's own store for repeated releases
    (``dpsk.utility``'s Monte Carlo), which releases bit for bit what a fit outside
    it releases. Every run still draws and rounds its own noise on the real path.
    """
    def sample(which, n_runs, seed):
        Z, y = pairs[which]
        rng = NoiseSource.seeded(seed)
        out = np.empty(n_runs)
        with reusing_solutions({}):
            for k in range(n_runs):
                w = private_erm(Z, y, loss, epsilon, alpha, perturbation, rng, tol=TOL,
                                delta=delta)
                out[k] = w[0] if statistic is None else statistic(w)
        return out
    return sample


def _centres(pairs, loss, lam):
    return [float(minimize_regularized_loss(loss, *pairs[w], lam, tol=EXACT_TOL).w[0])
            for w in ("D", "D'")]


# Huber (h = 0.5) on n rows x = 1: with |w| < 0.5 every margin is in the linear zone,
# where l' = -1 and the exact minimiser moves by exactly 2 / (n alpha) when one label
# flips: Algorithm 1's sensitivity is attained, and in d = 1 the Gamma-norm noise is
# Laplace, whose privacy loss is the whole epsilon on the tail {w > t}.


def _huber_family(name, perturbation, n, alpha, claim, mutate, mutant, noise_factor, n_runs,
                  seeds, why):
    """Output or objective perturbation of the Huber flip pair, with its analytic law.

    The release is Laplace (delta = 0) or Gaussian around the exact minimiser of the
    solved objective; for objective perturbation the noise b enters as b / (n Lambda).
    """
    epsilon, delta = claim
    pairs = _flip_pair(n, n // 2)
    plan = _noise_plan(HUBER, n, 1, epsilon, delta, alpha, perturbation, TOL)
    c_d, c_dp = _centres(pairs, HUBER, plan.strong_convexity)
    scale = 1.0 / plan.beta if delta == 0 else plan.sigma
    if perturbation == "objective":
        scale /= n * plan.strong_convexity
    law = (laplace_law if delta == 0 else gaussian_law)(c_d, c_dp, scale)
    return Family(
        name=name, claim=claim,
        sample=_erm_sampler(pairs, HUBER, perturbation, epsilon, delta, alpha),
        law=law, thresholds=_thresholds(c_d, c_dp, scale), mutate=mutate, mutant=mutant,
        noise_factor=noise_factor, n_runs=n_runs, seeds=seeds, why=why)


def output_pure():
    return _huber_family(
        "output perturbation (pure)", "output", 10, 1.0, (2.0, 0.0),
        _scale_result(erm_module, "output_perturbation_beta", factor=1 / 0.8),
        "noise x 0.8 (beta / 0.8)", 0.8, 3000, (11, 12),
        why="Huber, n=10, d=1, alpha=1, one label flipped: the minimiser moves by exactly "
            "the sensitivity (tight).")


def output_gaussian():
    return _huber_family(
        "output perturbation (Gaussian)", "output", 10, 1.0, (1.0, 0.1),
        _scale_result(erm_module, "analytic_gaussian_sigma", factor=0.8),
        "noise x 0.8 (sigma x 0.8)", 0.8, 5000, (21, 22),
        why="As the pure pair; delta = 0.1 so that the event {w > t} has the probability "
            "the (epsilon, delta) bound needs at a few thousand runs.")


# Objective perturbation: in the linear zone the perturbed minimiser is
# w = (sum y - b) / (n Lambda), an affine image of the noise b, and flipping a label
# moves b's preimage by exactly 2 = 2 lipschitz: the noise part eps' of the budget is
# attained. The change-of-variables slack log(1 + c / (n Lambda)) is not (l'' = 0 in
# the linear zone), so n = 100 keeps it at 0.01: the pair realises 98% of the claim
# and the 0.8 mutant is caught, instead of only a halved sensitivity at n = 10.


def objective_pure():
    return _huber_family(
        "objective perturbation (pure)", "objective", 100, 1.0, (2.0, 0.0),
        _scale_result(erm_module, "objective_perturbation_calibration", "beta", 1 / 0.8),
        "noise x 0.8 (beta / 0.8)", 0.8, 3000, (31, 32),
        why="Huber, n=100, d=1: every margin in the linear zone, so the noise share "
            "eps' = 0.98 eps is attained; the Jacobian slack (0.01) is not.")


def objective_gaussian():
    return _huber_family(
        "objective perturbation (Gaussian)", "objective", 100, 1.0, (1.0, 0.1),
        _scale_result(erm_module, "gaussian_objective_calibration", "sigma", 0.6),
        "noise x 0.6 (sigma x 0.6)", 0.6, 3000, (41, 42),
        why="As the pure pair. The calibration bounds delta by a sum of two Gaussian "
            "hockey-stick terms of which a d = 1 pair attains one, so the pair's real delta "
            "is about half the claim: sigma x 0.8 is still (1, 0.1)-DP on it, sigma x 0.7 "
            "barely not, so the mutant is sigma x 0.6.")


def gradient():
    n, alpha, epsilon, delta = 10, 10.0, 1.0, 0.1
    pairs = _flip_pair(n, n // 2)
    schedule = noisy_gd_schedule(n, 1, alpha, HUBER, epsilon, delta)
    assert schedule.n_steps == 1  # one step: the last iterate is the Gaussian release itself
    # w_1 = -eta (g_0 + xi) with g_0 = -(sum y) / n (every margin 0, l' = -1).
    centres = [schedule.step_size * float(np.sum(pairs[w][1])) / n for w in ("D", "D'")]
    sigma = schedule.step_size * schedule.sigma
    return Family(
        name="noisy gradient descent", claim=(epsilon, delta),
        sample=_erm_sampler(pairs, HUBER, "gradient", epsilon, delta, alpha),
        law=gaussian_law(*centres, sigma), thresholds=_thresholds(*centres, sigma),
        mutate=_scale_result(gradient_module, "noisy_gd_schedule", "sigma", 0.8),
        mutant="noise x 0.8 (sigma x 0.8)", noise_factor=0.8, n_runs=5000, seeds=(51, 52),
        why="Huber, n=10, alpha=10: the schedule takes one step, so the released iterate "
            "is one Gaussian mechanism of the gradient, which moves by exactly 2/n.")


# Multinomial (softmax, K = 5): one row's gradient (p - e_y) x has norm up to sqrt 2,
# but near W = 0 (p uniform) replacing (x, y) by (-x, y) changes it by 2 (p - e_y),
# of norm 2 sqrt((K - 1) / K) = 1.79 against the bound 2 sqrt 2: with alpha = 100 the
# minimiser moves by 63% of the sensitivity. Halving the sensitivity is then a noise
# 1.26 times too small for this pair, which the audit catches; noise x 0.8 would not
# exceed the claim on any pair we could construct.

K_CLASSES = 5


def multinomial():
    alpha, epsilon, delta = 100.0, 1.0, 0.1
    loss = MultinomialLoss(K_CLASSES)
    base = np.ones((K_CLASSES, 1))
    labels = np.append(np.arange(K_CLASSES), 0)
    pairs = {"D": (np.vstack([base, [[1.0]]]), labels),
             "D'": (np.vstack([base, [[-1.0]]]), labels)}
    n = labels.size
    c_d, c_dp = (minimize_multinomial_loss(*pairs[w], K_CLASSES, alpha, tol=EXACT_TOL).w
                 for w in ("D", "D'"))
    direction = (c_d - c_dp) / np.linalg.norm(c_d - c_dp)
    plan = _noise_plan(loss, n, 1, epsilon, delta, alpha, "output", TOL)

    def statistic(W):
        return float(np.sum((W - c_dp) * direction))

    shift = float(np.linalg.norm(c_d - c_dp))
    return Family(
        name=f"multinomial (K={K_CLASSES}, Gaussian output)", claim=(epsilon, delta),
        sample=_erm_sampler(pairs, loss, "output", epsilon, delta, alpha, statistic),
        law=gaussian_law(shift, 0.0, plan.sigma), thresholds=_thresholds(shift, 0.0, plan.sigma),
        mutate=_scale_result(erm_module, "analytic_gaussian_sigma", factor=0.5),
        mutant="sensitivity halved (sigma x 0.5)", noise_factor=0.5, n_runs=5000,
        seeds=(61, 62),
        why="Softmax, d=1, one row x=+1 vs x=-1 with the same label: the minimiser moves by "
            "63% of the bound 2 sqrt(2)/(n alpha), so the mutant halves the sensitivity.")


def kernel():
    n, alpha, epsilon, delta, x = 10, 1.0, 1.0, 0.1, 0.5
    seed_features = 7
    model = DPKernelClassifier(epsilon=epsilon, delta=delta, n_components=2, loss="huber",
                               perturbation="output", alpha=alpha, fit_intercept=False,
                               classes=[-1, 1])
    X = np.full((n, 1), x)
    pairs = _flip_pair(n, n // 2)
    # The kernel's own feature map (its public frequencies): every row maps to one
    # unit vector z, and the release is the Huber pair of the linear models along z.
    weights = sample_frequencies(model.kernel, model.gamma, 1, 1, public_rng(seed_features))
    Z = fourier_features(X, weights, n_components=2)
    z = Z[0] / np.linalg.norm(Z[0])
    c_d, c_dp = (float(minimize_regularized_loss(HUBER, Z, pairs[w][1], alpha,
                                                 tol=EXACT_TOL).w @ z) for w in ("D", "D'"))
    plan = _noise_plan(HUBER, n, 2, epsilon, delta, alpha, "output", TOL)

    def sample(which, n_runs, seed):
        y = np.where(pairs[which][1] > 0, 1, -1)
        out = np.empty(n_runs)
        # The frequencies are public randomness: the auditor fixes them (random_state
        # seeds the public generator); the noise is the k-th stream of the audit's seed.
        fitted = DPKernelClassifier(**{**model.get_params(), "random_state": seed_features})
        with reusing_solutions({}):
            for k in range(n_runs):
                release = _kernel_release(fitted, X, y, epsilon, delta,
                                          NoiseSource.seeded([seed, k]))
                out[k] = float(release["coef_"][0] @ z)
        return out

    return Family(
        name="kernel (random features, Gaussian output)", claim=(epsilon, delta),
        sample=sample, law=gaussian_law(c_d, c_dp, plan.sigma),
        thresholds=_thresholds(c_d, c_dp, plan.sigma),
        mutate=_scale_result(erm_module, "analytic_gaussian_sigma", factor=0.8),
        mutant="noise x 0.8 (sigma x 0.8)", noise_factor=0.8, n_runs=5000, seeds=(71, 72),
        why="DPKernelClassifier, 2 Fourier features, Huber, every row at one x: the rows "
            "share one unit feature vector and the minimiser moves by the sensitivity.")


def _kernel_release(model, X, y, epsilon, delta, rng):
    """DPKernelClassifier's release with the noise source given (its frequencies public).

    The kernel draws its noise in the linear models' shared fit, so the source is
    swapped there."""
    import dpsk.linear_model._base as shared_fit

    original = shared_fit.noise_source
    shared_fit.noise_source = lambda random_state: rng
    try:
        return model._release((X, y, np.array([-1, 1]), None), epsilon=epsilon, delta=delta)
    finally:
        shared_fit.noise_source = original


# Robust logistic regression: the logistic derivative satisfies l'(m) + l'(-m) = -1,
# so flipping one label moves one row's gradient by at most 1 (plus the radius term)
# against the bound 2 (1 + r): no pair we could construct realises more than half of
# the sensitivity (here 49%). The mutant halves the sensitivity *and* scales the noise
# by 0.8 (noise x 0.4): on this pair that is the 0.8 mutant of a tight family.


def _logistic_output_family(name, pairs, centre, constants, release, epsilon, alpha, seeds,
                            why):
    """A pure output-perturbation family beyond ERM (robust, tilted) with the x 0.4 mutant.

    ``centre(Z, y)`` is the exact minimiser, ``release(Z, y, rng)`` the mechanism.
    """
    c_d, c_dp = (float(centre(*pairs[w])[0]) for w in ("D", "D'"))
    n = pairs["D"][1].size
    plan = _noise_plan(constants, n, 1, epsilon, 0.0, alpha, "output", TOL)

    def sample(which, n_runs, seed):
        Z, y = pairs[which]
        rng = NoiseSource.seeded(seed)
        return np.array([release(Z, y, rng)[0] for _ in range(n_runs)])

    return Family(
        name=name, claim=(epsilon, 0.0), sample=sample,
        law=laplace_law(c_d, c_dp, 1.0 / plan.beta),
        thresholds=_thresholds(c_d, c_dp, 1.0 / plan.beta),
        mutate=_scale_result(erm_module, "output_perturbation_beta", factor=1 / 0.4),
        mutant="sensitivity halved, noise x 0.8 (x 0.4)", noise_factor=0.4, n_runs=6000,
        seeds=seeds, why=why)


def robust():
    n, alpha, epsilon, radius = 10, 10.0, 2.0, 0.05
    return _logistic_output_family(
        "robust logistic (pure output)", _flip_pair(n, n),
        lambda Z, y: minimize_robust_logistic(Z, y, alpha, radius, tol=EXACT_TOL).w,
        RobustLogisticConstants(radius),
        lambda Z, y, rng: private_robust_erm(Z, y, radius, 1, epsilon, alpha, rng, tol=TOL),
        epsilon, alpha, seeds=(81, 82),
        why="Robust logistic, r=0.05, n=10 rows x=1, all labels +1, one flipped: a "
            "logistic pair, which realises under half the sensitivity (l'(m) + l'(-m) = -1).")

# DPGridSearch: when the replaced row is in the held-out part the candidates are the
# same on both sides and the selection's whole epsilon rests on the exponential
# mechanism over the mistake counts, the function the search calls
# (``_select_candidate`` of method="disjoint"; ``select_with_bonus`` of the safe
# search, the default ``bonus`` mistakes ahead). The worst case for the index:
# candidate 0 gains a mistake while every other loses one (utilities move by the
# sensitivity 1, in opposite directions).

N_CANDIDATES = 20


def _selection_family(name, select, module, mistakes, bonus, n_runs, seeds, why):
    """The audit of one selection: ``select(mistakes, epsilon, rng)`` returns an index;
    ``mistakes[which]`` are the counts on each side, candidate 0 is the one a head
    start of ``bonus`` puts ahead (the safe search's default), and the statistic is
    whether the candidate that gains on ``D`` (0 if it has fewer mistakes there,
    else 1) is chosen."""
    epsilon = 2.0
    mistakes = {which: np.asarray(z, dtype=float) for which, z in mistakes.items()}
    event = int(mistakes["D"][0] > mistakes["D'"][0])
    ahead = np.zeros(len(mistakes["D"]))
    ahead[0] = bonus

    def chosen(which, factor):
        logits = epsilon * factor * (ahead - mistakes[which]) / 2.0
        p = np.exp(logits - logits.max())
        p /= p.sum()
        return {1: p[event], 0: 1.0 - p[event]}

    def sample(which, n_runs, seed):
        rng = NoiseSource.seeded(seed)
        return np.array([float(select(mistakes[which], epsilon, rng) == event)
                         for _ in range(n_runs)])

    return Family(
        name=name, claim=(epsilon, 0.0), sample=sample,
        law=discrete_law(lambda f: chosen("D", 1 / f), lambda f: chosen("D'", 1 / f),
                         lambda outcome: outcome),
        thresholds=[0.5],
        mutate=_scale_epsilon_of(module, "exponential_mechanism", 1 / 0.8),
        mutant="noise x 0.8 (epsilon / 0.8)", noise_factor=0.8, n_runs=n_runs, seeds=seeds,
        why=why)


def search():
    return _selection_family(
        "DPGridSearch (disjoint: selection)", _select_candidate, search_module,
        {"D": [0] + [1] * (N_CANDIDATES - 1), "D'": [1] + [0] * (N_CANDIDATES - 1)},
        0.0, 20000, (91, 92),
        f"{N_CANDIDATES} candidates, the replaced row held out: candidate 0's mistake "
        "count rises by one while every other falls by one.")


def safe_search():
    # The head start is public and the same on both sides. With two candidates and
    # no head start a pair realises at most about epsilon / 2; with the default 3
    # mistakes ahead the other candidate's chance moves by nearly exp(epsilon)
    # (the default's mass is near 1 on both sides, so the normaliser barely moves):
    # the head start is where the selection's bound is reached, and it holds there.
    return _selection_family(
        "DPGridSearch (safe: selection)",
        lambda z, epsilon, rng: select_with_bonus(z, 0, 3.0, epsilon, rng),
        safe_module, {"D": [1, 0], "D'": [0, 1]}, 3.0, 30000, (95, 96),
        "2 candidates, the default 3 mistakes ahead, the replaced row held out: the "
        "default's count falls by one while the other's rises by one.")


# DPStabilityPredictor: the secret model is the exact logistic minimiser (no noise);
# each answer is its score plus discrete Laplace noise at the score sensitivity,
# 2 / (n alpha) plus rounding terms. As for every logistic pair the score moves by at
# most half of that (here 49.9% with alpha = 100), so the mutant is noise x 0.4, as
# for robust logistic regression. Answers to distinct query rows draw independent
# noise, so one call answers n_runs rows x_j = 1 - j 2^-40 (the score moves by under
# 1e-12 across them, a millionth of a grid cell).


def stability():
    n, alpha, epsilon = 10, 100.0, 1.0
    pairs = _flip_pair(n, n // 2)
    c_d, c_dp = _centres(pairs, LogisticLoss(), alpha)

    def sample(which, n_runs, seed):
        # Fitted here, not once for all: the fit fixes the grid and so the noise scale
        # (score_sensitivity), which the mutant changes.
        model = DPStabilityPredictor(epsilon=epsilon, alpha=alpha, fit_intercept=False,
                                     classes=[-1, 1], accountant=BudgetAccountant(),
                                     random_state=seed).fit(*pairs[which])
        queries = 1.0 - np.arange(n_runs)[:, None] * 2.0**-40
        return model.decision_function(queries)

    sensitivity = stability_module.score_sensitivity(n, 1, alpha, TOL)
    grid = sensitivity / 1000
    cells = float(grid_sensitivity(np.array([1.0]))[0])
    scale = cells * grid / epsilon
    return Family(
        name="DPStabilityPredictor (one answer)", claim=(epsilon, 0.0), sample=sample,
        law=laplace_law(c_d, c_dp, scale), thresholds=_thresholds(c_d, c_dp, scale),
        mutate=_scale_result(stability_module, "score_sensitivity", factor=0.4),
        mutant="sensitivity halved, noise x 0.8 (x 0.4)", noise_factor=0.4, n_runs=6000,
        seeds=(101, 102),
        why="Logistic, n=10 rows x=1, one label flipped, query x=1: the score moves by "
            "49.9% of its sensitivity (l'(m) + l'(-m) = -1).")


# PrivateBoundsScaler: two exponential mechanisms (each end at epsilon / 2) on quantile
# utilities of sensitivity 1, on the grid [-2, -1, 0, 1, 2]. Moving one row from -3 to
# +3 raises the utility of every candidate right of the lower quartile and lowers the
# others, so the normaliser moves against the candidates left of it, and likewise for
# the upper end: the joint release realises 1.46 of the claimed 2 on its most telling
# outcomes (an exponential mechanism pays for utilities that move in both directions,
# and quantile utilities never all do). Noise x 0.8 would realise 1.82 < 2, so the
# mutant halves the sensitivity. The statistic is the claimed law's log-likelihood
# ratio of the released pair, computed exactly by the auditor.

BOUNDS_GRID_ARGS = {"magnitude_range": (1.0, 2.0), "steps_per_octave": 1}


def _bounds_law(values, quantiles, epsilon):
    """Exact law of (lower_, upper_) for one column: a function of the noise factor."""
    grid = bounds_grid(**BOUNDS_GRID_ARGS)
    column = np.sort(np.asarray(values, dtype=float))

    def choice(utilities, eps):
        logits = eps * utilities / 2.0
        p = np.exp(logits - logits.max())
        return p / p.sum()

    def law(factor=1.0):
        eps_end = epsilon / 2.0 / factor
        out = {}
        lows = choice(quantile_utilities(column, grid[:-1], quantiles[0]), eps_end)
        for low, p_low in zip(grid[:-1], lows):
            above = grid[grid > low]
            highs = choice(quantile_utilities(column, above, quantiles[1]), eps_end)
            for high, p_high in zip(above, highs):
                out[(float(low), float(high))] = p_low * p_high
        return out
    return law


def bounds():
    epsilon, quantiles = 2.0, (0.25, 0.75)
    columns = {"D": [-1.5, -0.5, -0.5, -3.0], "D'": [-1.5, -0.5, -0.5, 3.0]}
    laws = {w: _bounds_law(columns[w], quantiles, epsilon) for w in columns}
    real_d, real_dp = laws["D"](), laws["D'"]()
    llr = {pair: math.log(real_d[pair] / real_dp[pair]) for pair in real_d}

    def sample(which, n_runs, seed):
        X = np.array(columns[which])[:, None]
        out = np.empty(n_runs)
        for k in range(n_runs):
            scaler = PrivateBoundsScaler(epsilon, quantiles=quantiles, method="quantiles",
                                         random_state=seed * 10**6 + k,
                                         accountant=BudgetAccountant(), **BOUNDS_GRID_ARGS)
            scaler.fit(X)
            out[k] = llr[(float(scaler.lower_[0]), float(scaler.upper_[0]))]
        return out

    return Family(
        name="PrivateBoundsScaler (one column)", claim=(epsilon, 0.0), sample=sample,
        law=discrete_law(laws["D"], laws["D'"], llr.get),
        thresholds=sorted(set(llr.values()))[:-1] + [max(llr.values()) - 1e-9],
        mutate=_scale_epsilon_of(bounds_module, "exponential_mechanism", 2.0),
        mutant="sensitivity halved (epsilon x 2)", noise_factor=0.5, n_runs=4000,
        seeds=(111, 112),
        why="4 rows, quartiles, grid [-2..2]: one row moved from -3 to +3 realises 73% of "
            "the claim, so the mutant halves the sensitivity.")


def tilted():
    n, alpha, epsilon, tilt = 2, 10.0, 2.0, 0.1
    return _logistic_output_family(
        "tilted logistic (pure output)", _flip_pair(n, n // 2),
        lambda Z, y: minimize_tilted_logistic(Z, y, alpha, tilt, tol=EXACT_TOL).w,
        TiltedLogisticConstants(tilt, n, alpha),
        lambda Z, y, rng: private_tilted_erm(Z, y, tilt, epsilon, alpha, rng, tol=TOL),
        epsilon, alpha, seeds=(121, 122),
        why="Tilted logistic, t=0.1, n=2 rows x=1, one label flipped: a logistic pair, "
            "under half of the sensitivity 2q/alpha is realised, hence noise x 0.4.")


# Naive Bayes: the releases are integers with discrete Laplace noise, and the auditor
# thresholds the claimed law's log-likelihood ratio of every released integer
# (``discrete_laplace_llr``), whose law is exact (``discrete_laplace_llr_law``). The
# public estimator is fitted once per run; a recorder around the one mechanism call it
# makes hands the released integers to the auditor (the fit itself is unchanged).


def _recording_all(module, name, fit, released):
    """Run ``fit()`` with ``module.name`` wrapped: ``released(args, result)`` of every call."""
    original = getattr(module, name)
    out = []

    def recorder(*args, **kwargs):
        result = original(*args, **kwargs)
        out.append(released(args, result))
        return result

    setattr(module, name, recorder)
    try:
        fit()
    finally:
        setattr(module, name, original)
    return out


def _recording(module, name, fit, released):
    """Run ``fit()`` with ``module.name`` wrapped; ``released(result)`` maps its one release."""
    (value,) = _recording_all(module, name, fit, lambda args, result: released(result))
    return value


def categorical_nb():
    # One categorical column with 2 levels, classes [0, 1]: D' moves row 0 from class 0
    # to class 1 (its level unchanged), so two cells of the histogram move by one, the
    # whole L1 sensitivity 2 m (m = 1): the pair is tight.
    n, epsilon = 10, 1.0
    X = np.zeros((n, 1), dtype=int)
    labels = {"D": np.array([0, 1] * (n // 2)), "D'": np.array([1, 1] + [0, 1] * (n // 2 - 1))}
    scale = float(counts_module.laplace_noise(2, epsilon).parameter)
    # cells: class * levels + level; level 0 for every row
    centres = {w: np.bincount(labels[w] * 2, minlength=4) for w in labels}

    def sample(which, n_runs, seed):
        out = np.empty(n_runs)
        for k in range(n_runs):
            model = DPCategoricalNB(epsilon, n_categories=2, classes=[0, 1],
                                    accountant=BudgetAccountant(),
                                    random_state=seed * 10**6 + k)
            counts = _recording(categorical_module, "noisy_histogram",
                                lambda: model.fit(X, labels[which]), lambda r: r[0])
            out[k] = discrete_laplace_llr(counts, centres["D"], centres["D'"], scale)
        return out

    return Family(
        name="DPCategoricalNB (histogram)", claim=(epsilon, 0.0), sample=sample,
        law=discrete_laplace_llr_law([(1, scale), (1, scale)]), thresholds=[1.0 / scale],
        mutate=_scale_count_noise_of(counts_module, 0.8), mutant="noise x 0.8 (epsilon / 0.8)",
        noise_factor=0.8, n_runs=5000, seeds=(131, 132),
        why="One 2-level column, n=10, one row's class changed: two cells move by one, the "
            "whole sensitivity (tight); the statistic is the release's log-likelihood ratio.")


def gaussian_nb():
    # d = 1, bounds (0, 1), classes [0, 1], n = 10: at this n the split gives the counts
    # half the budget. D has row 0 at x = 1 in class 0, D' at x = 0 in class 1: both
    # counts move by one and both class sums by G (the sums' whole L1 bound 2 G); the
    # square sum does not move. No row realises the sums and the squares at once (the
    # squares need |z| = 1 against z = 0, the sums z = 1 against z = -1), so the pair
    # realises counts + sums = 84% of the claim. Its largest ratio needs both class sums'
    # noise on their far side at once, so a threshold a few thousand runs can resolve
    # sees about 57% of the claim (Family.planned): the mutant is noise x 0.5.
    n, epsilon, G = 10, 1.0, RESOLUTION
    pairs = {"D": (np.vstack([[1.0], np.full((n - 1, 1), 0.5)]), np.array([0, 1] * (n // 2))),
             "D'": (np.vstack([[0.0], np.full((n - 1, 1), 0.5)]),
                    np.array([1, 1] + [0, 1] * (n // 2 - 1)))}
    laws = noise_laws(n, 1, 2, epsilon)
    scales = np.array([float(laws[i].parameter) for i in (0, 0, 1, 1, 2)])
    grid = {w: np.rint((pairs[w][0][:, 0] - 0.5) * 2 * G).astype(np.int64) for w in pairs}
    centres = {w: np.concatenate([np.bincount(pairs[w][1], minlength=2),
                                  np.bincount(pairs[w][1], grid[w], minlength=2),
                                  [np.sum(grid[w] ** 2)]]) for w in pairs}

    def integers(result):
        moments, _ = result
        return np.concatenate([moments.counts, moments.sums[:, 0] * G,
                               moments.squares * G * G])

    def sample(which, n_runs, seed):
        X, y = pairs[which]
        out = np.empty(n_runs)
        for k in range(n_runs):
            model = DPGaussianNB(epsilon, bounds=(0, 1), classes=[0, 1],
                                 accountant=BudgetAccountant(), random_state=seed * 10**6 + k)
            released = _recording(gaussian_module, "class_moments", lambda: model.fit(X, y),
                                  integers)
            out[k] = discrete_laplace_llr(released, centres["D"], centres["D'"], scales)
        return out

    shifts = np.abs(centres["D"] - centres["D'"])
    coordinates = [(int(j), s) for j, s in zip(shifts, scales) if j]
    realised = float(np.sum(shifts / scales))
    return Family(
        name="DPGaussianNB (counts, sums, squares)", claim=(epsilon, 0.0), sample=sample,
        law=discrete_laplace_llr_law(coordinates),
        thresholds=np.linspace(0.0, realised, 81)[:-1],
        mutate=_scale_count_noise_of(moments_module, 0.5), mutant="noise x 0.5 (epsilon / 0.5)",
        noise_factor=0.5, n_runs=4000, seeds=(141, 142),
        why="d=1, n=10, row 0 from (x=1, class 0) to (x=0, class 1): counts and class sums "
            "move by their whole bounds, the square sum not: 84% of the claim, of which "
            "4000 runs resolve about 57%, so the mutant is noise x 0.5.")


def prior_check():
    # The prior check's release on its own, as the linear families audit private_erm: the
    # model and the prior's class k* are fixed by the fit's earlier releases. D' replaces
    # a row in class k* that the model gets wrong (term -1) by one outside k* that it gets
    # right (term +1): the margin moves by 2, the whole sensitivity (tight). The release
    # is the exact Laplace draw's cell on the grid 2^-8; the statistic is the release.
    budget = prior_budget(0.2, 2.5, 0.0, gaussian=False, check=0.4)  # check_epsilon = 1
    epsilon = budget.check_epsilon
    centres = {"D": 12.0, "D'": 10.0}

    def sample(which, n_runs, seed):
        return np.array([release_prior_check(centres[which], budget,
                                             NoiseSource.seeded([seed, k]))
                         for k in range(n_runs)])

    def mutate(monkeypatch):
        original = check_module.gamma_norm_noise
        monkeypatch.setattr(check_module, "gamma_norm_noise",
                            lambda d, beta, rng: original(d, beta / 0.8, rng))

    return Family(
        name="prior check (noisy margin)", claim=(epsilon, 0.0), sample=sample,
        law=laplace_law(centres["D"], centres["D'"], 2.0 / epsilon),
        thresholds=np.linspace(10.0, 16.0, 61), mutate=mutate,
        mutant="noise x 0.8", noise_factor=0.8, n_runs=4000, seeds=(151, 152),
        why="The margin of a fixed model moves by 2 (a wrong row in class k* replaced by a "
            "right one outside it), the whole sensitivity; the statistic is the release.")


# Trees and forests: the structure is drawn from public randomness (and, with
# ``split_share > 0``, from the released split statistics), so a fit releases one
# or two noisy histograms (``forest_module.noisy_histogram``): the split statistics
# at ``split_share * epsilon`` and every tree's leaf-by-class counts at the rest.
# All rows sit at x = 0.5 and D' moves row 0 from class 0 to class 1: in every block
# of every histogram a count of class 0 loses one and its class-1 neighbour gains
# one, the whole L1 sensitivity 2 m of each call (m blocks per row: 1 for the split
# statistics at d = 1 and for disjoint trees, T for trees sharing the rows), so the
# pair realises the whole claim. A recorder around ``noisy_histogram`` takes each
# call's cells (a function of the public structure and the rows) and released
# counts; the auditor rebuilds both neighbours' exact counts on those cells and
# thresholds the claimed law's log-likelihood ratio of the whole release, whose law
# is exact (``discrete_laplace_llr_law``): given the released split statistics, the
# leaves' ratio has the same law whatever structure they produced.

FOREST_ROWS = 10


def _histogram_centres(which):
    """``released(args, result)`` for the recorder: one ``noisy_histogram`` call's
    noisy counts and both neighbours' exact counts on its cells."""
    def released(args, result):
        codes, n_bins = np.asarray(args[0]), args[1]
        if codes.ndim == 1:
            codes = codes[:, None]
        sizes = np.atleast_1d(n_bins)
        cells = codes + np.concatenate([[0], np.cumsum(sizes)[:-1]])
        here = np.bincount(cells.ravel(), minlength=int(np.sum(sizes)))
        # Row 0's cells hold class 0 on D and class 1 on D' (classes are the low digit).
        step = 1 if which == "D" else -1
        other = here.copy()
        np.subtract.at(other, cells[0], 1)
        np.add.at(other, cells[0] + step, 1)
        c_d, c_dp = (here, other) if which == "D" else (other, here)
        return result[0], c_d, c_dp
    return released


def _forest_family(name, estimator, params, mutant_factor, n_runs, seeds, why):
    """``estimator(epsilon=1, **params)`` fit on the class-flip pair, row by row.

    The law has two unit shifts per block of each release at its claimed scale
    (``laplace_noise`` of ``2 m`` at its share of epsilon): the row adds to one leaf of
    each of the ``n_estimators`` trees when they share the rows, of one otherwise,
    and to one cell of the split statistics (d = 1) when ``split_share > 0``.
    """
    epsilon, split_share = 1.0, params["split_share"]
    if split_share == "auto":  # the public rule's value for this n, d and K
        split_share = auto_split_share(FOREST_ROWS, 1, 2, epsilon)
    shared = params.get("partition", "shared") == "shared"
    blocks = params.get("n_estimators", 1) if shared else 1
    X = np.full((FOREST_ROWS, 1), 0.5)
    labels = {"D": np.array([0, 1] * (FOREST_ROWS // 2)),
              "D'": np.array([1, 1] + [0, 1] * (FOREST_ROWS // 2 - 1))}
    # The claimed scales, one per release in the order of the fit (split statistics
    # first): the statistic is the claimed law's ratio, also when a mutant runs.
    scales = [float(counts_module.laplace_noise(2 * blocks, (1 - split_share) * epsilon)
                    .parameter)]
    if split_share:
        scales.insert(0, float(counts_module.laplace_noise(2, split_share * epsilon)
                               .parameter))
    coordinates = [(1, scales[-1])] * (2 * blocks) + [(1, scales[0])] * (2 if split_share
                                                                         else 0)

    def sample(which, n_runs, seed):
        out = np.empty(n_runs)
        for k in range(n_runs):
            model = estimator(epsilon, max_depth=2, bounds=(0.0, 1.0), classes=[0, 1],
                              accountant=BudgetAccountant(), random_state=seed * 10**6 + k,
                              **params)
            releases = _recording_all(forest_module, "noisy_histogram",
                                      lambda: model.fit(X, labels[which]),
                                      _histogram_centres(which))
            assert len(releases) == len(scales)
            out[k] = sum(discrete_laplace_llr(*release, scale)
                         for release, scale in zip(releases, scales))
        return out

    return Family(
        name=name, claim=(epsilon, 0.0), sample=sample,
        law=discrete_laplace_llr_law(coordinates),
        thresholds=np.linspace(0.0, epsilon, 201)[:-1],
        mutate=_scale_count_noise_of(counts_module, mutant_factor),
        mutant=f"noise x {mutant_factor:g} (epsilon / {mutant_factor:g})",
        noise_factor=mutant_factor, n_runs=n_runs, seeds=seeds, why=why)


def tree():
    # With the split statistics (d = 1: one block) and the leaves (one tree) each at
    # half the budget, four counts move by one at scale 4: the largest ratio needs all
    # four noises on their far side, so noise x 0.8 is caught with only 20-40% power
    # at a few thousand runs (Family.planned). Noise x 0.6 needs 3500 runs, over a
    # minute of CPU here (the exact sampler draws 24 cells a fit); 3000 runs catch
    # noise x 0.55.
    return _forest_family(
        "DPDecisionTreeClassifier (split stats + leaves)", DPDecisionTreeClassifier,
        {"split_share": 0.5}, 0.55, 3000, (151, 152),
        why="d=1, n=10, depth 2, split_share=0.5, row 0's class changed: two split counts "
            "and two leaf counts move by one, the whole sensitivity of both releases "
            "(tight); four coordinates dilute the ratio, so the mutant is noise x 0.55.")


def forest_shared():
    # Two trees sharing the rows (the default partition; split_share="auto" is 0 at
    # n = 10): the row adds to one leaf of each tree, four counts at scale 2 T / epsilon.
    return _forest_family(
        "DPRandomForestClassifier (T=2, shared rows)", DPRandomForestClassifier,
        {"n_estimators": 2, "partition": "shared", "split_share": "auto"}, 0.6, 4000,
        (161, 162),
        why="T=2 trees sharing the rows, depth 2, n=10, row 0's class changed: one leaf of "
            "each tree moves by the whole sensitivity 2 T (tight); noise x 0.6 as for the "
            "tree.")


def forest_disjoint():
    # Disjoint rows: each tree counts its own rows at the whole epsilon (parallel
    # composition), so the row moves two counts of the one tree it was dealt to, at
    # scale 2 / epsilon: the pair is as tight as the categorical histogram's.
    return _forest_family(
        "DPRandomForestClassifier (T=2, disjoint rows)", DPRandomForestClassifier,
        {"n_estimators": 2, "partition": "disjoint", "split_share": 0.0}, 0.8, 5000,
        (171, 172),
        why="T=2 trees on disjoint rows (each at the whole epsilon), row 0's class "
            "changed: two counts of the tree it was dealt to move by one (tight); a "
            "parallel composition that spent too little would show here.")


# DPPCA releases the upper triangle of the integer matrix sum m m^T with exact
# discrete noise; the components are its eigenvectors (post-processing), so the
# auditor records the noisy matrix (``pca_module.noisy_second_moment``) and recovers
# its integers (A n G^2 / R^2, exact). d = 2, n = 4, R = 1, the other rows 0: D has
# row 0 = (1, 0), D' has (0, 1), so both diagonal entries move by G^2 and the
# off-diagonal entry not.
# * Gaussian: the L2 shift sqrt(2) G^2 is the whole L2 sensitivity (tight); the
#   statistic is the projection (M11 - M22) / sqrt(2), whose noise is the sum of two
#   discrete Gaussians of sigma about 3e7 grid steps: its law is the continuous
#   Gaussian's far below the audit's resolution, and it only chooses the threshold
#   and the power (the counts are the real releases'). The claim goes through the
#   zCDP conversion, whose (epsilon, delta) is loose for one Gaussian: sigma x 0.7 is
#   barely caught, so the mutant is sigma x 0.6.
# * Pure: the L1 shift 2 G^2 is 2/3 of the bound (d + 1) G^2 (the diagonal cannot
#   move both ways at once: for d = 2 no pair exceeds sqrt(5) G^2, 75%). The statistic
#   is the claimed log-likelihood ratio; the shifts are 2^24 grid steps, so its law is
#   computed only at the top (both noises on D's side of their centres: ratio 2 G^2 /
#   scale exactly), whose probabilities are geometric tails. The pair realises 2/3 of
#   the claim, so the mutant is noise x 0.5.

PCA_ROWS, PCA_NORM = 4, 1.0


def _pca_pair():
    X = np.zeros((PCA_ROWS, 2))
    X_prime = X.copy()
    X[0, 0] = X_prime[0, 1] = PCA_NORM
    return {"D": X, "D'": X_prime}


def _pca_integers(which, epsilon, delta, n_runs, seed):
    """The released upper triangle (integers) of ``n_runs`` DPPCA fits on one neighbour."""
    G = second_moment_module.RESOLUTION
    scale = PCA_NORM**2 / (G * G * PCA_ROWS)
    out = np.empty((n_runs, 3))
    for k in range(n_runs):
        model = DPPCA(n_components=1, epsilon=epsilon, delta=delta, data_norm=PCA_NORM,
                      accountant=BudgetAccountant(), random_state=seed * 10**6 + k)
        A = _recording(pca_module, "noisy_second_moment", lambda: model.fit(_pca_pair()[which]),
                       lambda result: result[0])
        out[k] = np.rint(A[np.triu_indices(2)] / scale)
    return out


def _scale_gaussian_noise_of(module, factor):
    """``mutate`` that calls ``module.gaussian_noise_for_rho`` at ``rho / factor^2``."""
    def mutate(monkeypatch):
        original = module.gaussian_noise_for_rho

        def smaller(l2_sensitivity_squared, rho):
            return original(l2_sensitivity_squared, rho / factor**2)

        monkeypatch.setattr(module, "gaussian_noise_for_rho", smaller)
    return mutate


def pca_gaussian():
    epsilon, delta = 1.0, 0.1
    G2 = second_moment_module.RESOLUTION ** 2
    sigma = math.sqrt(float(second_moment_module.second_moment_noise(2, epsilon, delta)
                            .parameter))
    centre = G2 / math.sqrt(2.0)  # D: M11 = G^2, M22 = 0; D' mirrored

    def sample(which, n_runs, seed):
        M = _pca_integers(which, epsilon, delta, n_runs, seed)
        return (M[:, 0] - M[:, 2]) / math.sqrt(2.0)

    return Family(
        name="DPPCA (Gaussian, delta > 0)", claim=(epsilon, delta), sample=sample,
        law=gaussian_law(centre, -centre, sigma), thresholds=_thresholds(centre, -centre, sigma),
        mutate=_scale_gaussian_noise_of(second_moment_module, 0.6),
        mutant="noise x 0.6 (rho / 0.36)", noise_factor=0.6, n_runs=3000, seeds=(181, 182),
        why="d=2, n=4, row 0 = e1 vs e2: the two diagonal entries move by G^2, the whole L2 "
            "sensitivity sqrt(2) G^2 (tight); the zCDP conversion's slack leaves sigma x 0.7 "
            "barely caught, so the mutant is sigma x 0.6.")


def _top_llr_law(shifts, scale):
    """``law(t, factor)`` of the claimed discrete Laplace ratio at its top value only.

    The ratio reaches ``sum shifts / scale`` exactly when every coordinate's noise
    lies on D's side of D's centre: probability ``prod 1 / (1 + a)`` on D and
    ``prod a^j / (1 + a)`` on D', ``a = exp(-1 / (scale factor))``; the next value
    lies ``2 / scale`` lower, so any threshold within ``1 / scale`` below the top
    selects exactly this event.
    """
    top = sum(shifts) / scale

    def law(t, factor=1.0):
        assert top - 1.0 / scale <= t < top
        b = scale * factor
        a = math.exp(-1.0 / b)
        p = q = 1.0
        for j in shifts:
            p *= 1.0 / (1.0 + a)
            q *= math.exp(-j / b) / (1.0 + a)
        return p, q
    return law, top


def pca_pure():
    epsilon = 2.0
    G2 = second_moment_module.RESOLUTION ** 2
    scale = float(second_moment_module.second_moment_noise(2, epsilon).parameter)
    centres = {"D": [G2, 0, 0], "D'": [0, 0, G2]}
    law, top = _top_llr_law([G2, G2], scale)

    def sample(which, n_runs, seed):
        M = _pca_integers(which, epsilon, 0.0, n_runs, seed)
        return [discrete_laplace_llr(m, centres["D"], centres["D'"], scale) for m in M]

    return Family(
        name="DPPCA (pure, delta = 0)", claim=(epsilon, 0.0), sample=sample, law=law,
        thresholds=[top - 0.5 / scale], mutate=_scale_count_noise_of(second_moment_module, 0.5),
        mutant="noise x 0.5 (epsilon / 0.5)", noise_factor=0.5, n_runs=4000, seeds=(191, 192),
        why="d=2, n=4, row 0 = e1 vs e2: the diagonal moves by 2 G^2, 2/3 of the L1 bound "
            "3 G^2 (no pair exceeds 75% at d=2); the statistic is the claimed ratio at its "
            "top value, so the mutant is noise x 0.5.")


FAMILY_BUILDERS = {
    "output-pure": output_pure,
    "output-gaussian": output_gaussian,
    "objective-pure": objective_pure,
    "objective-gaussian": objective_gaussian,
    "gradient": gradient,
    "multinomial": multinomial,
    "kernel": kernel,
    "robust": robust,
    "search": search,
    "safe-search": safe_search,
    "stability": stability,
    "bounds": bounds,
    "tilted": tilted,
    "categorical-nb": categorical_nb,
    "gaussian-nb": gaussian_nb,
    "tree": tree,
    "forest-shared": forest_shared,
    "forest-disjoint": forest_disjoint,
    "pca-pure": pca_pure,
    "pca-gaussian": pca_gaussian,
    "prior-check": prior_check,
}


#: The registry: one entry per family (built lazily, the builders solve small problems).
FAMILIES = list(FAMILY_BUILDERS)
_BUILT = {}


def family(name):
    if name not in _BUILT:
        _BUILT[name] = FAMILY_BUILDERS[name]()
    return _BUILT[name]


def _report(result, family_):
    plan = family_.planned()
    print(f"\n[audit] {result.line()}  (planned: real {plan['real']['expected_lb']:.3f}, "
          f"mutant {plan['mutant']['expected_lb']:.3f}, power {plan['mutant']['power']:.4f})")


@pytest.mark.slow
@pytest.mark.parametrize("name", FAMILIES)
def test_real_mechanism_stays_below_its_claim(name):
    family_ = family(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = run_audit(family_, "real")
    _report(result, family_)
    assert result.eps_lb <= family_.epsilon, result.line()
    # The pair is informative: the real bound is not vacuous.
    assert result.eps_lb > 0.0, result.line()


@pytest.mark.slow
@pytest.mark.parametrize("name", FAMILIES)
def test_mutant_is_caught(name, monkeypatch):
    family_ = family(name)
    family_.mutate(monkeypatch)
    seeds = tuple(s + 1000 for s in family_.seeds)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = run_audit(family_, f"mutant: {family_.mutant}", seeds=seeds)
    _report(result, family_)
    assert result.eps_lb > family_.epsilon, result.line()


@pytest.mark.slow
@pytest.mark.parametrize("name", FAMILIES)
def test_sample_size_has_the_planned_power(name):
    # The power calculation the sample sizes rest on: the mutant exceeds the claim
    # with probability >= 99.9% under the family's law, the real mechanism with < 1e-3.
    plan = family(name).planned()
    assert plan["mutant"]["power"] >= 0.999, plan
    assert plan["real"]["power"] < 1e-3, plan


# -- the machinery itself (fast, in the default run) -----------------------------------------


def test_clopper_pearson_known_values():
    # 0 of n has the exact upper bound 1 - (1 - c)^(1/n); n of n the lower c-complement.
    assert float(cp_upper(0, 100, 0.95)) == pytest.approx(1 - 0.05 ** (1 / 100), rel=1e-9)
    assert float(cp_lower(100, 100, 0.95)) == pytest.approx(0.05 ** (1 / 100), rel=1e-9)
    assert float(cp_lower(0, 10)) == 0.0 and float(cp_upper(10, 10)) == 1.0
    # 50 of 100 at 97.5% one-sided: the two-sided 95% interval (0.3983, 0.6017).
    assert float(cp_lower(50, 100, 0.975)) == pytest.approx(0.39832, abs=1e-5)
    assert float(cp_upper(50, 100, 0.975)) == pytest.approx(0.60168, abs=1e-5)
    assert epsilon_lower_bound(0, 0, 10) == -math.inf
    assert epsilon_lower_bound(5, 5, 10, delta=0.9) == -math.inf


def test_lower_bound_coverage_on_binomials():
    # Coverage: with p = e q exactly (a mechanism whose epsilon is 1 on this event)
    # the bound exceeds 1 with probability at most 2 (1 - CONFIDENCE), computed exactly.
    q = 0.1
    assert power(math.e * q, q, 2000, 1.0) <= 2 * (1 - CONFIDENCE)
    # With delta: p = e q + delta.
    assert power(math.e * q + 0.05, q, 2000, 1.0, delta=0.05) <= 2 * (1 - CONFIDENCE)
    # And power grows with the gap and the sample size.
    assert power(math.exp(1.5) * q, q, 4000, 1.0) > power(math.exp(1.5) * q, q, 1000, 1.0)


@pytest.mark.parametrize("factor, caught", [(1.0, False), (0.8, True)])
def test_audit_on_the_exact_laplace_mechanism(factor, caught):
    # The audit applied to the textbook Laplace mechanism (numpy draws, fast): centres
    # 0 and 1, scale 1 / epsilon is epsilon-DP; scale 0.8 / epsilon is 1.25 epsilon-DP.
    epsilon = 2.0
    rng = np.random.default_rng(5)
    family_ = Family(
        name="Laplace", claim=(epsilon, 0.0),
        sample=lambda which, n, seed: (which == "D") + rng.laplace(scale=factor / epsilon,
                                                                   size=n),
        law=laplace_law(1.0, 0.0, 1.0 / epsilon), thresholds=np.linspace(0, 2, 41),
        mutate=None, mutant="noise x 0.8", noise_factor=0.8, n_runs=3000)
    plan = family_.planned()
    assert plan["mutant"]["power"] > 0.999 and plan["real"]["power"] < 2 * (1 - CONFIDENCE)
    result = run_audit(family_)
    assert (result.eps_lb > epsilon) == caught, result.line()
    assert result.eps_lb > 0.8 * factor ** -1 * epsilon * 0.85, result.line()


def test_expected_lower_bound_matches_the_law():
    # At the expected counts of a Laplace tail the bound sits just below the truth.
    p, q = 0.5, 0.5 * math.exp(-1.0)
    assert 0.8 < expected_lower_bound(p, q, 20000) < 1.0


def test_discrete_laplace_llr_law_closed_form():
    # Two cells moved by one, scale t: the ratio is 2/t exactly when the first cell's
    # noise is >= 0 and the second's <= -1 (measured from D's centres), of
    # probability (1/(1+a))^2 on D and (a/(1+a))^2 on D', a = exp(-1/t).
    t = 2.0
    a = math.exp(-1.0 / t)
    law = discrete_laplace_llr_law([(1, t), (1, t)])
    assert law(1.0 / t) == pytest.approx(((1 / (1 + a)) ** 2, (a / (1 + a)) ** 2), rel=1e-12)
    assert law(-3.0 / t) == pytest.approx((1.0, 1.0), rel=1e-12)
    # A wide shift: the probabilities sum to one and D' mirrors D.
    wide = discrete_laplace_llr_law([(50, 20.0), (1, 2.0)])
    p, q = wide(-10.0)
    assert p == pytest.approx(1.0, abs=1e-12) and q == pytest.approx(1.0, abs=1e-12)
    p, q = wide(0.0)
    assert p > q
    # The statistic: released at D's centres gives the largest ratio, sum j / scale.
    assert discrete_laplace_llr([5, 3], [5, 3], [4, 4], [t, t]) == pytest.approx(2.0 / t)
