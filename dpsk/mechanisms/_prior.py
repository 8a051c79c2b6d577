"""The class prior: noisy class counts, and the offsets a linear model starts from.

A linear model whose intercept is a regularised, noised coordinate like any
other shrinks towards the all-zero model, whose scores say nothing about
which class is common: where the signal is too weak to beat the noise, its
predictions follow the intercept's noise rather than the class prior, and it
can err more than always predicting the majority class. dpsk therefore spends
a small share of the fit's budget on the ``K`` class counts, turns them into a
smoothed noisy prior ``p`` and centres the regulariser of the model on the
*prior model*, whose scores are the prior's log-odds (binary and one-vs-rest)
or log-probabilities (softmax), instead of on zero. A strongly regularised
model then predicts the (noisy) majority class.

Everything here is public or a release: the share is a function of ``n``,
``K``, the width, the budget and the mechanism (:func:`prior_budget`); the
counts are released by :func:`release_class_counts`; the offsets are
post-processing of that release. The derivations (sensitivity, composition
with the model's release, why each mechanism's guarantee holds with a public
centre, and the share) are in ``docs/privacy.rst``, "The class prior".

Sources: the geometric (discrete Laplace) mechanism of Ghosh, Roughgarden and
Sundararajan (2009) for pure counts, drawn exactly as in Canonne, Kamath and
Steinke (2020, Algorithm 2); the Gaussian mechanism on the release grid
(Balle and Wang 2018) for Gaussian fits, composed with the model's Gaussian
release in Gaussian differential privacy (Dong, Roth and Su 2022, Corollary
3.3).
"""

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ._discrete import discrete_laplace
from ._noise import analytic_gaussian_sigma
from ._prior_check import CHECK_SENSITIVITY
from ._samplers import add_on_grid, gaussian_noise

__all__ = ["PriorBudget", "prior_budget", "prior_share", "release_class_counts",
           "smoothed_prior", "prior_logits", "PRIOR_SHARE_RANGE", "COUNT_GRID",
           "COUNT_L1_SENSITIVITY", "COUNT_L2_SENSITIVITY"]

#: Replacing one row moves one count down by one and another up by one (or
#: nothing when the label is kept): the histogram's L1 and L2 sensitivities.
COUNT_L1_SENSITIVITY = 2
COUNT_L2_SENSITIVITY = math.sqrt(2.0)

#: The shares of the budget the counts may take (see :func:`prior_share`).
PRIOR_SHARE_RANGE = (0.005, 0.25)

#: The release grid of Gaussian counts: a power of two, far below one count.
COUNT_GRID = 2.0**-8

# The Gaussian counts get what the model leaves of the fit's Gaussian-DP parameter,
# less this relative margin, which covers the last digits of the root finder that
# calibrates the model's noise (analytic_gaussian_sigma nudges its root by 1e-12).
_GDP_MARGIN = 1e-6

_SHARE_GRID = np.geomspace(*PRIOR_SHARE_RANGE, 64)

#: With more than two classes the counts' share is at least ``COUNT_ROWS / (n
#: epsilon)`` (within :data:`PRIOR_SHARE_RANGE`): see :func:`prior_share`.
COUNT_ROWS = 100.0


@dataclass(frozen=True)
class PriorBudget:
    """How one fit's budget is shared between the class counts and the model.

    Attributes
    ----------
    share : float
        The share ``s`` of epsilon the model gives up: it runs at
        ``model_epsilon = (1 - s) epsilon`` (and the whole ``delta``).
    model_epsilon : float
    count_epsilon : float or None
        Pure counts: discrete Laplace of scale ``2 / count_epsilon`` on each.
    count_sigma : float or None
        Gaussian counts: ``N(0, count_sigma^2)`` on each, on :data:`COUNT_GRID`.
    check_share : float
        The share ``t`` of epsilon the prior check takes (0: no check).
    check_epsilon : float or None
        A pure check: Laplace noise of scale ``2 / check_epsilon``
        (:mod:`dpsk.mechanisms._prior_check`).
    check_sigma : float or None
        A Gaussian check: ``N(0, check_sigma^2)``.
    """

    share: float
    model_epsilon: float
    count_epsilon: float | None = None
    count_sigma: float | None = None
    check_share: float = 0.0
    check_epsilon: float | None = None
    check_sigma: float | None = None

    @property
    def pure_side_epsilon(self):
        """The pure releases beside the model (counts and check), or 0 for Gaussian ones."""
        return (self.count_epsilon or 0.0) + (self.check_epsilon or 0.0)


def prior_budget(share, epsilon, delta, gaussian, check=0.0):
    """Split ``(epsilon, delta)`` between the counts, the prior check and the model, exactly.

    The model runs at ``((1 - share - check) epsilon, delta)``. What the counts
    and the check get depends on how the fit's cost is recorded:

    * ``gaussian=False`` (a pure fit, or Gaussian objective perturbation,
      recorded as an ``(epsilon, delta)`` pair): the counts are pure at
      ``share * epsilon`` and the check at ``check * epsilon``; by sequential
      composition the total is ``(epsilon, delta)``.
    * ``gaussian=True`` (Gaussian output perturbation and noisy gradient
      descent, recorded as one Gaussian mechanism of Gaussian-DP parameter
      ``mu = 1 / analytic_gaussian_sigma(epsilon, delta, 1)``): the model is
      ``mu_m``-GDP with ``mu_m = 1 / analytic_gaussian_sigma((1 - share -
      check) epsilon, delta, 1)``; what is left, ``mu^2 - mu_m^2`` (less a
      relative margin), is shared between the counts and the check in the
      ratio ``share : check``: the counts get noise ``sqrt(2) / mu_c``, the
      check (sensitivity 2) noise ``2 / mu_t``. Gaussian mechanisms compose to
      exactly one of parameter ``sqrt(mu_c^2 + mu_t^2 + mu_m^2) <= mu``, so
      the fit's event is unchanged.

    Returns
    -------
    PriorBudget
    """
    share, check = float(share), float(check)
    if not 0.0 < share < 1.0 or not 0.0 <= check < 1.0 - share:
        raise ValueError(f"share must be in (0, 1) and check in [0, 1 - share), got "
                         f"{share!r} and {check!r}.")
    model_epsilon = (1.0 - share - check) * epsilon
    if not gaussian:
        return PriorBudget(share, model_epsilon, count_epsilon=share * epsilon,
                           check_share=check,
                           check_epsilon=check * epsilon if check > 0 else None)
    mu = 1.0 / analytic_gaussian_sigma(epsilon, delta, 1.0)
    mu_model = (1.0 + _GDP_MARGIN) / analytic_gaussian_sigma(model_epsilon, delta, 1.0)
    left = mu**2 - mu_model**2
    if not left > 0:  # pragma: no cover - the model's share is always below the whole
        raise ValueError("The model's share leaves nothing for the class counts.")
    counts_part = left * share / (share + check)
    check_sigma = None
    if check > 0:
        check_sigma = CHECK_SENSITIVITY / math.sqrt(left - counts_part)
    return PriorBudget(share, model_epsilon,
                       count_sigma=COUNT_L2_SENSITIVITY / math.sqrt(counts_part),
                       check_share=check, check_sigma=check_sigma)


def prior_share(model_bound, n, n_classes, epsilon, delta, gaussian):
    """The share of the budget the class counts get: balance two excess risks.

    Giving the counts a share ``s`` costs the model ``(1 - s)`` of its
    epsilon; the model's excess-risk bound (:mod:`dpsk.mechanisms._alpha`,
    ``model_bound`` at the whole budget) grows about like ``1 / (1 - s)``
    (exactly so for pure objective perturbation at the rule's alpha, slower
    for the Gaussian mechanisms). The noisy prior ``p^`` costs the prior model
    the Kullback-Leibler divergence ``KL(p || p^) ~ sum_k v / (2 n^2 p_k)``
    with ``v`` the variance of one count's noise, ``K^2 v / (2 n^2)`` at the
    uniform prior (public: the true prior is not). The share minimises the sum
    over :data:`PRIOR_SHARE_RANGE`: a few per cent of epsilon where ``n
    epsilon`` is large, up to a quarter where it is small and the model can
    gain little over the prior anyway.

    With more than two classes the share is at least ``COUNT_ROWS / (n
    epsilon)`` (clipped to the range): the pure counts' noise then has a
    standard deviation of at most ``2 sqrt(2) / COUNT_ROWS`` (2.8%) of the
    rows. The noisy majority class is the constant the prior check
    (:mod:`dpsk.mechanisms._prior_check`) may release, and with several
    classes of similar size a noisier count picks the wrong one often
    enough to make the fallback worse than the true majority class; with two
    classes a wrong pick needs nearly balanced classes, where the constant's
    error is near one half and the model wins the check. Public quantities
    only.

    Returns
    -------
    share : float
    """
    n, k = int(n), int(n_classes)
    values = []
    for s in _SHARE_GRID:
        budget = prior_budget(s, epsilon, delta, gaussian)
        if budget.count_sigma is not None:
            variance = budget.count_sigma**2
        else:  # discrete Laplace of scale t: variance 2 e^(1/t) / (e^(1/t) - 1)^2 <= 2 t^2
            variance = 2.0 * (COUNT_L1_SENSITIVITY / budget.count_epsilon) ** 2
        values.append(model_bound / (1.0 - s) + k**2 * variance / (2.0 * n**2))
    share = float(_SHARE_GRID[int(np.argmin(values))])
    if COUNT_ROWS and k > 2:
        share = max(share, min(COUNT_ROWS / (n * epsilon), PRIOR_SHARE_RANGE[1]))
    return share


def release_class_counts(counts, budget, rng):
    """The noisy class counts: the only release that reads the labels here.

    Guarantee: with ``counts`` the histogram of the declared classes over the
    ``n`` rows (replace-one sensitivity 2 in L1, ``sqrt(2)`` in L2), the
    release is ``budget.count_epsilon``-DP (independent discrete Laplace of
    scale ``2 / count_epsilon`` on each count: the geometric mechanism, exact,
    Canonne, Kamath and Steinke 2020, Algorithm 2), or ``sqrt(2) /
    count_sigma``-GDP (exact Gaussian noise, the cell of the exact sum on
    :data:`COUNT_GRID`: post-processing of the Gaussian mechanism). The
    number of classes ``K`` is declared, hence public.

    Parameters
    ----------
    counts : array-like of int, shape (K,)
    budget : PriorBudget
    rng : NoiseSource
        This release's own noise.

    Returns
    -------
    noisy : ndarray of float, shape (K,)
    """
    counts = [int(c) for c in np.asarray(counts).ravel()]
    if budget.count_sigma is not None:
        return add_on_grid(np.asarray(counts, dtype=float),
                           gaussian_noise(len(counts), budget.count_sigma, rng), COUNT_GRID)
    scale = Fraction(COUNT_L1_SENSITIVITY) / Fraction(budget.count_epsilon)
    return np.array([float(c + discrete_laplace(scale, rng)) for c in counts])


def smoothed_prior(noisy_counts):
    """``p_k = (max(c_k, 0) + 1) / sum_j (max(c_j, 0) + 1)``: post-processing.

    Negative noisy counts are set to 0 and every class gets one pseudo-row
    (Laplace's rule of succession), so every ``p_k`` lies in ``(0, 1)`` and the
    log-odds are finite.
    """
    kept = np.maximum(np.asarray(noisy_counts, dtype=float), 0.0) + 1.0
    return kept / kept.sum()


def prior_logits(prior, n_outputs):
    """The prior model's scores: what each released weight vector is centred on.

    * one binary model (two classes): ``log(p_1 / p_0)``;
    * one-vs-rest (``K`` binary models): ``log(p_k / (1 - p_k))`` for each ``k``;
    * the softmax (``n_outputs == K``): ``log p_k`` less their mean (a softmax
      ignores a common shift, and the regularised minimiser is centred).

    Returns
    -------
    ndarray of shape (1,) or (K,)
    """
    prior = np.asarray(prior, dtype=float)
    if n_outputs > 1:
        logs = np.log(prior)
        return logs - logs.mean()
    if len(prior) == 2:
        return np.array([math.log(prior[1] / prior[0])])
    return np.log(prior / (1.0 - prior))
