"""The prior check: is the released model better than always predicting one class?

A private linear model centred on the class prior's model (:mod:`._prior`)
still errs more than the best constant where ``n epsilon`` is too small for
its signal: its noise then moves the decisions of many rows away from the
majority class without moving them towards their labels. After the model is
released, the fit therefore asks one more private question of the training
rows: by how much (in weighted rows) does the released model classify more of
them correctly than the prior model does, which predicts the noisy majority
class ``k*`` for every row? If the noisy answer is negative, the fit releases
the prior model instead of the model (post-processing of the two releases).

The margin
    ``M = sum_i s_i ([model predicts y_i] - [y_i = k*])`` with ``s_i`` the row
    weight in ``[0, 1]`` (1 without weights) quantised down to a multiple of
    ``2^-WEIGHT_BITS`` so that the sum is an exact integer multiple of that
    (no floating-point rounding enters the sensitivity). The released model and
    ``k*`` are fixed by earlier releases. Replacing one row (and its weight)
    changes one term, each in ``[-1, 1]``: the sensitivity is 2 in L1 and L2.

The release
    ``M`` plus exact Laplace noise of scale ``2 / check_epsilon`` (pure fits;
    :func:`dpsk.mechanisms._samplers.gamma_norm_noise` in one dimension) or
    exact Gaussian noise of standard deviation ``check_sigma`` (fits recorded
    as one Gaussian mechanism), the exact sum's cell on :data:`CHECK_GRID`
    (:func:`dpsk.mechanisms._samplers.add_on_grid`): the Laplace mechanism
    (Dwork, McSherry, Nissim and Smith 2006) is ``check_epsilon``-DP, the
    Gaussian one ``2 / check_sigma``-GDP (Dong, Roth and Su 2022, Theorem
    2.7). With the counts and the model it composes sequentially (pure) or
    in Gaussian differential privacy (Corollary 3.3 there); the budget split
    is :func:`dpsk.mechanisms._prior.prior_budget`'s. Derivation, the share
    rule and measurements: docs/privacy.rst, "The prior check".

Everything here is public or a release: the share (:func:`check_share`) is a
function of ``n`` and ``epsilon`` only.
"""

import numpy as np

from ._samplers import add_on_grid, gamma_norm_noise, gaussian_noise

__all__ = ["CHECK_ROWS", "CHECK_SHARE_RANGE", "CHECK_GRID", "CHECK_SENSITIVITY",
           "WEIGHT_BITS", "check_share", "release_prior_check", "prior_wins"]

#: Replacing one row moves one term of the margin, each in [-1, 1].
CHECK_SENSITIVITY = 2

#: The share of the budget the check takes is ``CHECK_ROWS / (n epsilon)``,
#: clipped to :data:`CHECK_SHARE_RANGE` (docs/privacy.rst, "The prior check").
CHECK_ROWS = 100.0
CHECK_SHARE_RANGE = (0.01, 0.2)

#: The release grid of the noisy margin: a power of two, far below one row.
CHECK_GRID = 2.0**-8

#: Row weights are quantised down to multiples of ``2^-WEIGHT_BITS``.
WEIGHT_BITS = 20


def check_share(n, epsilon):
    """The share of the fit's epsilon the prior check takes: public, ``n`` and ``epsilon`` only.

    With share ``t`` the pure check's noise has standard deviation
    ``2 sqrt(2) / (t epsilon)`` rows, i.e. ``2 sqrt(2) / CHECK_ROWS`` (2.8%)
    of the ``n`` rows wherever the clip does not bind: the check then tells
    apart a model that errs 3% more than the constant from one that errs 3%
    less, at any size, and costs the model ``t`` of its budget, which is
    large only where ``n epsilon`` is small and the model is weak anyway.
    The lower clip (1%) makes the noise a smaller fraction of the rows where
    ``n epsilon`` is large, so that the Laplace noise's heavy tail almost
    never replaces a clearly better model by the constant, at a cost the
    model does not feel there.
    """
    n, epsilon = int(n), float(epsilon)
    if n < 1 or not epsilon > 0:
        raise ValueError("n must be >= 1 and epsilon > 0.")
    low, high = CHECK_SHARE_RANGE
    return float(min(max(CHECK_ROWS / (n * epsilon), low), high))


def release_prior_check(margin, budget, rng):
    """The noisy margin of the released model over the prior model, on :data:`CHECK_GRID`.

    Guarantee: for a margin of sensitivity :data:`CHECK_SENSITIVITY` (module
    docstring), ``budget.check_epsilon``-DP (exact Laplace noise of scale
    ``2 / check_epsilon``) or ``2 / budget.check_sigma``-GDP (exact Gaussian
    noise), the release being the grid cell of the exact sum (post-processing).

    Parameters
    ----------
    margin : float
        The exact margin (a multiple of ``2^-WEIGHT_BITS``, far below ``2^53``).
    budget : PriorBudget
        With ``check_epsilon`` or ``check_sigma`` set.
    rng : NoiseSource
        This release's own noise.

    Returns
    -------
    noisy_margin : float
    """
    point = np.array([float(margin)])
    if budget.check_sigma is not None:
        noise = gaussian_noise(1, budget.check_sigma, rng)
    elif budget.check_epsilon is not None:
        noise = gamma_norm_noise(1, budget.check_epsilon / CHECK_SENSITIVITY, rng)
    else:
        raise ValueError("This budget has no share for the prior check.")
    return float(add_on_grid(point, noise, CHECK_GRID)[0])


def prior_wins(noisy_margin):
    """Release the prior model when the noisy margin is negative (post-processing)."""
    return bool(noisy_margin < 0)
