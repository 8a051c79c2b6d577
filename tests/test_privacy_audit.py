"""Empirical privacy audits: lower-bound epsilon from the outputs of the mechanisms.

An epsilon-DP mechanism M satisfies ``P[M(D) in S] <= exp(eps) P[M(D') in S]``
for every event S and neighbours D, D'. An audit runs M many times on a fixed
pair (D, D'), picks an event S, and turns the two observed frequencies into a
lower bound on the epsilon M actually has (Jagielski, Ullman and Oprea 2020;
Nasr et al. 2021):

    eps_lb = log( p_lower(S | D) / p_upper(S | D') ),

with one-sided Clopper-Pearson bounds. If M is eps-DP, ``eps_lb > eps`` has
probability at most ``2 * (1 - CONFIDENCE)`` (a union bound over the two
one-sided intervals). The event is chosen on separate calibration runs, so the
evaluation runs give an honest bound.

What the audits can and cannot show
-----------------------------------
* They can show a mechanism is *not* private (eps_lb above the claim); they can
  never prove it is. Passing means "no violation found on this pair".
* Each audit's power is tested on deliberately broken variants (half the noise,
  i.e. beta doubled; noise reused across the two data sets through a fixed
  seed) which the same audit must flag. These run through the real
  ``private_erm``/``exponential_mechanism`` code with one function swapped.
* The neighbour pairs are chosen so the bound is (nearly) tight: n=10 rows of
  norm 1 in d=1 and one label flipped; for the Huber loss with ``alpha=1`` every
  margin stays in the linear zone, where the minimiser moves by exactly
  ``2/(n alpha)``. For the logistic loss the gradient of one row can only
  change by 1 (not 2) in d=1, so those audits are loose (roughly half the
  claimed epsilon) and would not catch halved noise: they are only a check
  against gross errors.

Run with ``pytest -m slow -s tests/test_privacy_audit.py`` to see the bounds.
"""

import dataclasses
import math
import time

import numpy as np
import pytest
from scipy import stats

import dpsk._erm as erm_module
from dpsk._erm import private_erm
from dpsk._losses import HuberLoss, LogisticLoss
from dpsk._mechanisms import exponential_mechanism

#: Confidence of each one-sided Clopper-Pearson bound. A correct mechanism whose
#: true epsilon equals the claim exactly (the Huber output-perturbation pair
#: below is such a case) fails an audit with probability at most 1% over seeds.
CONFIDENCE = 0.995
EPSILON = 1.0


# -- the statistics --------------------------------------------------------------------


def cp_lower(k, n, confidence=CONFIDENCE):
    """One-sided Clopper-Pearson lower bound on a binomial proportion."""
    return 0.0 if k == 0 else float(stats.beta.ppf(1 - confidence, k, n - k + 1))


def cp_upper(k, n, confidence=CONFIDENCE):
    """One-sided Clopper-Pearson upper bound on a binomial proportion."""
    return 1.0 if k == n else float(stats.beta.ppf(confidence, k + 1, n - k))


def epsilon_lower_bound(k_first, n_first, k_second, n_second, confidence=CONFIDENCE):
    """``log(p_lower(first) / p_upper(second))``, -inf when the event never occurred."""
    lower = cp_lower(k_first, n_first, confidence)
    if lower == 0.0:
        return -math.inf
    return math.log(lower / cp_upper(k_second, n_second, confidence))


def scalar_events(cal_a, cal_b):
    """Events ``s > t`` and ``s <= t`` for thresholds spread over the outputs."""
    pooled = np.concatenate([cal_a, cal_b])
    thresholds = np.unique(np.quantile(pooled, np.linspace(0.005, 0.995, 199)))
    events = []
    for t in thresholds:
        events.append((f"w > {t:.4g}", lambda s, t=t: s > t))
        events.append((f"w <= {t:.4g}", lambda s, t=t: s <= t))
    return events


def index_events(cal_a, cal_b):
    """Events ``i == k`` and ``i != k`` for every index seen."""
    events = []
    for k in np.unique(np.concatenate([cal_a, cal_b])):
        events.append((f"i == {k}", lambda s, k=k: s == k))
        events.append((f"i != {k}", lambda s, k=k: s != k))
    return events


def audit(sample_a, sample_b, make_events, n_calibration, n_evaluation):
    """Lower-bound the epsilon of a mechanism from its outputs on two neighbours.

    Parameters
    ----------
    sample_a, sample_b : callable
        ``sample(N)`` returns N outputs of the mechanism on D (resp. D').
    make_events : callable
        Candidate events from the calibration outputs.
    n_calibration, n_evaluation : int
        Runs per data set to choose the event, then to bound its probabilities.

    Returns
    -------
    eps_lb : float
    description : str
    """
    cal_a, cal_b = sample_a(n_calibration), sample_b(n_calibration)
    best = (-math.inf, None, None)
    for name, event in make_events(cal_a, cal_b):
        k_a, k_b = int(np.sum(event(cal_a))), int(np.sum(event(cal_b)))
        for order, (k1, k2) in (("D vs D'", (k_a, k_b)), ("D' vs D", (k_b, k_a))):
            lb = epsilon_lower_bound(k1, n_calibration, k2, n_calibration)
            if lb > best[0]:
                best = (lb, (name, event), order)
    _, (name, event), order = best
    # Fresh runs: the event was fixed before they were drawn.
    k_a = int(np.sum(event(sample_a(n_evaluation))))
    k_b = int(np.sum(event(sample_b(n_evaluation))))
    k1, k2 = (k_a, k_b) if order == "D vs D'" else (k_b, k_a)
    eps_lb = epsilon_lower_bound(k1, n_evaluation, k2, n_evaluation)
    description = (f"event {name!r} ({order}): {k1}/{n_evaluation} vs {k2}/{n_evaluation}, "
                   f"eps_lb={eps_lb:.3f}")
    return eps_lb, description


def _report(label, eps_lb, description, started):
    print(f"\n[audit] {label}: eps_lb = {eps_lb:.3f} at claimed epsilon = {EPSILON} "
          f"({description}; {time.perf_counter() - started:.0f} s)")


# -- the neighbouring data sets ----------------------------------------------------------

# n = 10 rows x = 1 (the extreme point of the unit ball in d = 1), balanced labels.
# D' replaces the first row (x=1, y=+1) by (x=1, y=-1), equivalently (x=-1, y=+1).
N_ROWS = 10
Z_AUDIT = np.ones((N_ROWS, 1))
Y_D = np.array([1.0] * 5 + [-1.0] * 5)
Y_D_PRIME = Y_D.copy()
Y_D_PRIME[0] = -1.0
ALPHA = 1.0  # keeps every Huber margin in the linear zone, where the bound is tight


def _erm_sampler(y, loss, perturbation, seed, fixed_seed=False):
    """``sample(N)``: first coordinate of N releases of private_erm on (Z_AUDIT, y)."""
    rng = np.random.default_rng(seed)

    def sample(n_runs):
        out = np.empty(n_runs)
        for k in range(n_runs):
            # fixed_seed: every release re-seeds its generator, as a model fitted
            # with a known random_state does: the noise is the same for D and D'.
            generator = np.random.default_rng(seed) if fixed_seed else rng
            w, _ = private_erm(Z_AUDIT, y, loss, EPSILON, ALPHA, perturbation, generator)
            out[k] = w[0]
        return out

    return sample


def _run_erm_audit(loss, perturbation, n_calibration, n_evaluation, seeds, fixed_seed=False):
    sample_a = _erm_sampler(Y_D, loss, perturbation, seeds[0], fixed_seed)
    sample_b = _erm_sampler(Y_D_PRIME, loss, perturbation, seeds[1], fixed_seed)
    return audit(sample_a, sample_b, scalar_events, n_calibration, n_evaluation)


def _double_beta(module, name, monkeypatch):
    """Swap ``module.name`` for a version whose noise rate is doubled (half the noise)."""
    original = getattr(module, name)

    def doubled(*args, **kwargs):
        result = original(*args, **kwargs)
        if dataclasses.is_dataclass(result):
            return dataclasses.replace(result, beta=2 * result.beta)
        return 2 * result

    monkeypatch.setattr(module, name, doubled)


# -- the audit machinery itself (fast, in the default run) -----------------------------------


def test_clopper_pearson_bounds():
    # Known values: 0 of 100 has an exact upper bound 1 - (1-conf)^(1/100).
    assert cp_upper(0, 100, 0.95) == pytest.approx(1 - 0.05 ** (1 / 100), rel=1e-9)
    assert cp_lower(100, 100, 0.95) == pytest.approx(0.05 ** (1 / 100), rel=1e-9)
    assert cp_lower(0, 10) == 0.0 and cp_upper(10, 10) == 1.0
    assert cp_lower(50, 100) < 0.5 < cp_upper(50, 100)
    assert epsilon_lower_bound(0, 10, 0, 10) == -math.inf


@pytest.mark.parametrize("factor, should_pass", [(1.0, True), (2.0, False)])
def test_audit_on_exact_laplace_samples(factor, should_pass):
    # The audit applied to the textbook Laplace mechanism (numpy draws, so it is
    # fast): shift 1, scale 1/eps is eps-DP; scale 1/(2 eps) is 2 eps-DP.
    # Fixed seed; false-failure rate <= 1% over seeds for factor 1.
    rng = np.random.default_rng(123)

    def sampler(centre):
        return lambda n: centre + rng.laplace(scale=1.0 / (factor * EPSILON), size=n)

    eps_lb, description = audit(sampler(0.0), sampler(1.0), scalar_events, 20000, 100000)
    print(f"\n[audit] Laplace, noise / {factor:g}: {description}")
    assert (eps_lb <= EPSILON) == should_pass, description
    assert eps_lb > 0.85 * factor * EPSILON  # the audit is nearly tight here


# -- output perturbation (Algorithm 1) ----------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("loss", [HuberLoss(0.5), LogisticLoss()], ids=["huber", "logistic"])
def test_output_perturbation_audit(loss):
    started = time.perf_counter()
    eps_lb, description = _run_erm_audit(loss, "output", 5000, 25000, seeds=(1, 2))
    _report(f"output perturbation, {loss!r}", eps_lb, description, started)
    assert eps_lb <= EPSILON, description
    if loss.name == "huber":
        # The pair is tight for Huber, so the audit should come close to the claim.
        assert eps_lb > 0.8 * EPSILON, description


@pytest.mark.slow
def test_output_perturbation_audit_detects_halved_noise(monkeypatch):
    _double_beta(erm_module, "output_perturbation_beta", monkeypatch)
    started = time.perf_counter()
    eps_lb, description = _run_erm_audit(HuberLoss(0.5), "output", 5000, 25000, seeds=(3, 4))
    _report("output perturbation, BROKEN beta x2", eps_lb, description, started)
    assert eps_lb > EPSILON, description


@pytest.mark.slow
def test_output_perturbation_audit_detects_reused_noise():
    started = time.perf_counter()
    eps_lb, description = _run_erm_audit(
        HuberLoss(0.5), "output", 200, 1000, seeds=(5, 5), fixed_seed=True
    )
    _report("output perturbation, BROKEN reused noise (fixed seed)", eps_lb, description, started)
    assert eps_lb > EPSILON, description


# -- objective perturbation (Algorithm 2) -------------------------------------------------------
# With alpha=1, n=10: Huber (c=1) keeps eps' = 0.99 - log(1.21) = 0.80 for the
# noise, so the tight pair shows about 0.8; logistic (c=1/4) keeps 0.94, of which
# its d=1 gradient change of 1 realises about half.


@pytest.mark.slow
@pytest.mark.parametrize("loss", [HuberLoss(0.5), LogisticLoss()], ids=["huber", "logistic"])
def test_objective_perturbation_audit(loss):
    started = time.perf_counter()
    eps_lb, description = _run_erm_audit(loss, "objective", 4000, 20000, seeds=(6, 7))
    _report(f"objective perturbation, {loss!r}", eps_lb, description, started)
    assert eps_lb <= EPSILON, description


@pytest.mark.slow
def test_objective_perturbation_audit_detects_halved_noise(monkeypatch):
    _double_beta(erm_module, "objective_perturbation_calibration", monkeypatch)
    started = time.perf_counter()
    eps_lb, description = _run_erm_audit(HuberLoss(0.5), "objective", 4000, 20000, seeds=(8, 9))
    _report("objective perturbation, BROKEN beta x2", eps_lb, description, started)
    assert eps_lb > EPSILON, description


@pytest.mark.slow
def test_objective_perturbation_audit_detects_reused_noise():
    started = time.perf_counter()
    eps_lb, description = _run_erm_audit(
        HuberLoss(0.5), "objective", 200, 1000, seeds=(10, 10), fixed_seed=True
    )
    _report("objective perturbation, BROKEN reused noise (fixed seed)", eps_lb, description,
            started)
    assert eps_lb > EPSILON, description


# -- the exponential mechanism ----------------------------------------------------------------
# m = 20 candidates; D favours candidate 0 by 1, D' disfavours it by 1 (every
# utility moves by the sensitivity 1, in the direction that makes the
# normaliser move against candidate 0). P(0|D)/P(0|D') = e^0.948 at eps = 1:
# the factor 2 in exp(eps u / (2 sens)) is nearly used up.

U_D = np.array([1.0] + [0.0] * 19)
U_D_PRIME = np.array([0.0] + [1.0] * 19)


def _exp_sampler(utilities, seed, sensitivity):
    rng = np.random.default_rng(seed)

    def sample(n_runs):
        return np.array(
            [exponential_mechanism(utilities, EPSILON, sensitivity, rng)[0] for _ in range(n_runs)]
        )

    return sample


@pytest.mark.slow
@pytest.mark.parametrize("broken", [False, True], ids=["correct", "BROKEN-sensitivity-halved"])
def test_exponential_mechanism_audit(broken):
    # The broken variant claims sensitivity 1/2 for utilities that move by 1.
    sensitivity = 0.5 if broken else 1.0
    started = time.perf_counter()
    eps_lb, description = audit(
        _exp_sampler(U_D, 11, sensitivity), _exp_sampler(U_D_PRIME, 12, sensitivity),
        index_events, 50000, 200000,
    )
    _report(f"exponential mechanism{', BROKEN sensitivity / 2' if broken else ''}", eps_lb,
            description, started)
    if broken:
        assert eps_lb > EPSILON, description
    else:
        assert eps_lb <= EPSILON, description
        assert eps_lb > 0.8 * EPSILON, description
