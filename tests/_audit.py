"""Black-box privacy audit: a statistically valid lower bound on epsilon from releases.

An ``(epsilon, delta)``-DP mechanism ``M`` satisfies, for every event ``S`` and
neighbouring data sets ``D, D'``,

    P[M(D) in S] <= exp(epsilon) P[M(D') in S] + delta.

The audit runs ``M`` ``N`` times on each of ``D`` and ``D'``, counts how often
an event ``S`` fixed *in advance* occurs (``k`` and ``k'`` times), and bounds
the two probabilities with one-sided Clopper-Pearson intervals at confidence
``c`` each (Clopper and Pearson 1934; the recipe of Jagielski, Ullman and Oprea
2020 and Nasr et al. 2021):

    eps_lb = log((p_lo - delta) / q_hi),  p_lo <= P[M(D) in S],  P[M(D') in S] <= q_hi.

If ``M`` is ``(epsilon, delta)``-DP then ``eps_lb <= epsilon`` unless one of the
two intervals fails, which has probability at most ``2 (1 - c)``: ``eps_lb`` is
a lower bound on the mechanism's epsilon at confidence ``2c - 1`` (98% here).
It can show that a mechanism is *not* as private as claimed; it can never show
that it is.

The event ``S`` is a threshold ``{s > t}`` on a one-dimensional statistic ``s``
of the release (the coefficient, a projection of it, a log-likelihood ratio of
the claimed law, an index). ``t`` is computed before any run from public
quantities only: the two neighbours, the claimed calibration and the family's
analytic law (:meth:`Family.law`), chosen to maximise the exact power of the
test against the family's mutant. The choice of ``t`` can only cost power, never
validity, because it does not look at the runs that are counted.

Power. For two independent binomial counts the probability that ``eps_lb``
exceeds the claim is a finite sum (:func:`power`): for every ``k`` the largest
``k'`` with ``(p_lo(k) - delta) / q_hi(k') > exp(epsilon)``, weighted by the
binomial laws. Each family's ``n_runs`` is the smallest of a few sizes for which
the power against its mutant is at least 99.9% under the family's law
(``docs/privacy.rst``, "Empirical audit", prints the numbers), and the seeds are
fixed, so the verdict is deterministic.

The registry
------------
A family is one :class:`Family`: how to run the real mechanism ``n`` times on
``D`` or ``D'`` (returning the statistic), the claimed ``(epsilon, delta)``, the
analytic law of the statistic used to choose the threshold and to compute the
power, and the mutant: a function that monkeypatches the one calibration point
the family uses, so that the mutant runs the real code with only the scale
changed. ``tests/test_empirical_audit.py`` holds the registry ``FAMILIES``.

Adding a family (the tree, forest and PCA families were added this way) is one
more entry there:

1. build two neighbouring data sets where the privacy loss is concentrated (one
   row replaced; tiny ``n`` and ``d``);
2. ``sample(which, n_runs, seed)`` runs the public estimator (or the one
   mechanism function it calls) with fresh seeded noise per run and returns one
   number per run, larger on ``D`` (for a noisy count: the released count; for a
   tree: the index of the released split; for PCA: a projection of the released
   component);
3. ``law(threshold, noise_factor)`` gives ``(P[s > t | D], P[s > t | D'])`` for
   the claimed calibration (``noise_factor = 1``) and for the mutant's;
4. ``mutate(monkeypatch)`` scales the noise at the family's calibration point
   (its ``_noise_plan``-like function, or the sensitivity it divides by);
5. run ``python -m pytest -m slow tests/test_empirical_audit.py -s`` and copy the
   table into the docs.
"""

import math
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
from scipy import stats

#: Confidence of each one-sided Clopper-Pearson bound; the lower bound on
#: epsilon holds with probability at least 2 * CONFIDENCE - 1 = 98%.
CONFIDENCE = 0.99
#: Power the sample sizes are chosen for, against each family's mutant.
TARGET_POWER = 0.999


# -- the statistics --------------------------------------------------------------------


def cp_lower(k, n, confidence=CONFIDENCE):
    """One-sided Clopper-Pearson lower bound on a binomial proportion (0 when ``k = 0``)."""
    k = np.asarray(k)
    value = stats.beta.ppf(1.0 - confidence, np.maximum(k, 1), n - k + 1)
    return np.where(k == 0, 0.0, value)


def cp_upper(k, n, confidence=CONFIDENCE):
    """One-sided Clopper-Pearson upper bound on a binomial proportion (1 when ``k = n``)."""
    k = np.asarray(k)
    value = stats.beta.ppf(confidence, k + 1, np.maximum(n - k, 1))
    return np.where(k == n, 1.0, value)


def epsilon_lower_bound(k_d, k_d_prime, n, delta=0.0, confidence=CONFIDENCE):
    """``log((p_lo - delta) / q_hi)`` from ``k_d`` and ``k_d_prime`` hits in ``n`` runs each.

    ``-inf`` when ``p_lo <= delta`` (the event is too rare on ``D`` to say anything).
    """
    lower = float(cp_lower(k_d, n, confidence)) - delta
    if lower <= 0.0:
        return -math.inf
    return math.log(lower / float(cp_upper(k_d_prime, n, confidence)))


def power(p, q, n, epsilon, delta=0.0, confidence=CONFIDENCE):
    """Probability that :func:`epsilon_lower_bound` exceeds ``epsilon``, exactly.

    ``p`` and ``q`` are the event's probabilities on ``D`` and ``D'``; the counts
    are independent Binomial(n, p) and Binomial(n, q).
    """
    k = np.arange(n + 1)
    needed = (cp_lower(k, n, confidence) - delta) / math.exp(epsilon)
    # cp_upper increases with k': the largest k' whose bound is below ``needed``.
    largest = np.searchsorted(cp_upper(k, n, confidence), needed, side="left") - 1
    below = np.where(largest >= 0, stats.binom.cdf(np.maximum(largest, 0), n, q), 0.0)
    return float(np.sum(stats.binom.pmf(k, n, p) * below))


def expected_lower_bound(p, q, n, delta=0.0, confidence=CONFIDENCE):
    """The lower bound at the expected counts: what a typical run of the audit reports."""
    return epsilon_lower_bound(round(p * n), round(q * n), n, delta, confidence)


# -- laws of the statistic, for choosing the threshold and the sample size ---------------


def laplace_law(centre_d, centre_d_prime, scale):
    """``law(t, factor)`` of a Laplace release of the given centres and scale (times factor)."""
    def law(t, factor=1.0):
        b = scale * factor
        return (float(stats.laplace.sf(t, centre_d, b)),
                float(stats.laplace.sf(t, centre_d_prime, b)))
    return law


def gaussian_law(centre_d, centre_d_prime, sigma):
    """``law(t, factor)`` of a Gaussian release (standard deviation ``sigma * factor``)."""
    def law(t, factor=1.0):
        s = sigma * factor
        return (float(stats.norm.sf(t, centre_d, s)), float(stats.norm.sf(t, centre_d_prime, s)))
    return law


def discrete_law(probabilities_d, probabilities_d_prime, statistic):
    """``law(t, factor)`` of a finite release: ``probabilities_*(factor)`` map outcomes to mass.

    ``statistic(outcome)`` is the number the audit thresholds.
    """
    def law(t, factor=1.0):
        p_d, p_dp = probabilities_d(factor), probabilities_d_prime(factor)
        p = sum(mass for outcome, mass in p_d.items() if statistic(outcome) > t)
        q = sum(mass for outcome, mass in p_dp.items() if statistic(outcome) > t)
        return p, q
    return law


def discrete_laplace_llr_law(coordinates):
    """``law(t, factor)`` of the claimed log-likelihood ratio of an integer release.

    ``coordinates`` lists ``(j, scale)`` for every released integer that differs
    between ``D`` and ``D'``: its centres differ by ``j >= 1`` and it carries
    discrete Laplace noise of the given scale (``P[z]`` proportional to
    ``exp(-|z| / scale)``). The statistic is the claimed law's log-likelihood
    ratio of the release, ``sum (|x - c'| - |x - c|) / scale``
    (:func:`discrete_laplace_llr`); a coordinate contributes ``(2 i - j) /
    scale`` for ``i`` in ``0..j``, with exact probabilities (geometric tails)
    when every scale is ``factor`` times the claimed one. Coordinates of one
    scale are convolved on their integer grid, the groups then combined.
    """
    groups = {}
    for j, scale in coordinates:
        groups.setdefault(float(scale), []).append(int(j))
    cache = {}

    def coordinate(j, scale):
        a = math.exp(-1.0 / scale)
        middle = (1.0 - a) / (1.0 + a) * a ** np.arange(j - 1, 0, -1)
        return np.concatenate([[a**j / (1.0 + a)], middle, [1.0 / (1.0 + a)]])

    def joint(factor):
        if factor not in cache:
            values, prob_d = np.zeros(1), np.ones(1)
            for scale, shifts in groups.items():
                p = np.ones(1)
                for j in shifts:
                    p = np.convolve(p, coordinate(j, scale * factor))
                total = sum(shifts)  # index i of the group's grid is the ratio (2 i - total)
                v = (np.arange(total + 1) * 2.0 - total) / scale
                values = np.add.outer(values, v).ravel()
                prob_d = np.multiply.outer(prob_d, p).ravel()
            cache[factor] = values, prob_d
        return cache[factor]

    def law(t, factor=1.0):
        values, prob_d = joint(factor)
        # D' mirrors D coordinate by coordinate: its ratio has the law of minus D's.
        return float(np.sum(prob_d[values > t])), float(np.sum(prob_d[-values > t]))
    return law


def discrete_laplace_llr(released, centre_d, centre_d_prime, scales):
    """The claimed log-likelihood ratio ``log P_D(x) / P_D'(x)`` of released integers ``x``."""
    x, c, cp = (np.asarray(v, dtype=float) for v in (released, centre_d, centre_d_prime))
    return float(np.sum((np.abs(x - cp) - np.abs(x - c)) / np.asarray(scales, dtype=float)))


# -- the registry ------------------------------------------------------------------------


@dataclass
class Family:
    """One estimator family's audit.

    Attributes
    ----------
    name : str
    claim : (float, float)
        The claimed ``(epsilon, delta)`` of the release audited.
    sample : callable
        ``sample(which, n_runs, seed)`` with ``which`` in ``{"D", "D'"}``: the
        statistic of ``n_runs`` releases of the real mechanism on that data set,
        each with fresh noise from a seeded source.
    law : callable
        ``law(t, factor)``: ``(P[s > t | D], P[s > t | D'])`` when every noise
        scale is ``factor`` times the claimed calibration's (1: the real
        mechanism; the mutant's ``noise_factor``).
    thresholds : array-like
        Candidate thresholds; the one with the most power against the mutant
        (under ``law``) is used, fixed before any run.
    mutate : callable
        ``mutate(monkeypatch)``: scales the noise at the family's calibration point.
    mutant : str
        What the mutant changes, for the table.
    noise_factor : float
        The mutant's effective noise factor on this pair, for ``law`` (for a
        loose family: the factor times the share of the bound the pair realises).
    n_runs : int
        Runs per data set, from the power calculation.
    why : str
        Why this pair and this mutant (the docs table's note).
    seeds : (int, int)
        Seeds of the real audit; the mutant's audit uses the next two.
    """

    name: str
    claim: tuple
    sample: Callable
    law: Callable
    thresholds: object
    mutate: Callable
    mutant: str
    noise_factor: float
    n_runs: int
    why: str = ""
    seeds: tuple = (1, 2)
    _threshold: float = field(default=None, repr=False)

    @property
    def epsilon(self):
        return self.claim[0]

    @property
    def delta(self):
        return self.claim[1]

    @property
    def threshold(self):
        """The threshold with the most power against the mutant, fixed before any run."""
        if self._threshold is None:
            def score(t):
                p, q = self.law(t, self.noise_factor)
                return power(p, q, self.n_runs, self.epsilon, self.delta)
            self._threshold = float(max(np.asarray(self.thresholds, dtype=float), key=score))
        return self._threshold

    def planned(self):
        """The power calculation: expected bounds and power, real mechanism and mutant."""
        t, n = self.threshold, self.n_runs
        rows = {}
        for label, factor in (("real", 1.0), ("mutant", self.noise_factor)):
            p, q = self.law(t, factor)
            rows[label] = {"p": p, "q": q,
                           "expected_lb": expected_lower_bound(p, q, n, self.delta),
                           "power": power(p, q, n, self.epsilon, self.delta)}
        return rows


@dataclass
class AuditResult:
    family: str
    variant: str
    claim: tuple
    eps_lb: float
    k_d: int
    k_d_prime: int
    n_runs: int
    threshold: float
    seconds: float
    cpu_seconds: float

    def line(self):
        eps, delta = self.claim
        return (f"{self.family:<26} {self.variant:<34} eps={eps:g} delta={delta:g}  "
                f"eps_lb={self.eps_lb:7.3f}  hits {self.k_d}/{self.n_runs} vs "
                f"{self.k_d_prime}/{self.n_runs}  t={self.threshold:.4g}  "
                f"{self.cpu_seconds:.1f} s CPU ({self.seconds:.0f} s wall)")


def run_audit(family, variant="real", seeds=None):
    """Run ``family``'s mechanism on both neighbours and return its :class:`AuditResult`.

    The mechanism is whatever is in place when this is called: the caller
    applies ``family.mutate`` first for the mutant.
    """
    seeds = family.seeds if seeds is None else seeds
    t = family.threshold
    started, cpu_started = time.perf_counter(), time.process_time()
    s_d = np.asarray(family.sample("D", family.n_runs, seeds[0]), dtype=float)
    s_dp = np.asarray(family.sample("D'", family.n_runs, seeds[1]), dtype=float)
    assert s_d.shape == s_dp.shape == (family.n_runs,)
    k_d, k_dp = int(np.sum(s_d > t)), int(np.sum(s_dp > t))
    eps_lb = epsilon_lower_bound(k_d, k_dp, family.n_runs, family.delta)
    return AuditResult(family.name, variant, family.claim, eps_lb, k_d, k_dp, family.n_runs, t,
                       time.perf_counter() - started, time.process_time() - cpu_started)
