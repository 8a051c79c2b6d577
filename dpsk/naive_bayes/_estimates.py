"""From noisy counts and sums to model parameters: post-processing, free of charge.

Everything here reads only the noisy release and public quantities (the
number of rows ``n``, the declared classes and bounds, the noise laws), so it
changes nothing in the guarantee. It decides how accurate the model is:
``docs/naive_bayes.rst`` ("From the release to the model") explains each step
and why the plain plug-in estimates of diffprivlib lose to the majority class.
"""

import math

import numpy as np

__all__ = ["class_counts", "shrunk_class_means", "pooled_variance", "check_priors"]

#: Smallest count a class is given (in rows) before priors and means are formed:
#: a noisy count can be 0 or negative, and a class is never ruled out entirely.
MIN_COUNT = 1.0

#: Noise standard deviations of the pooled variance estimate below which a
#: variance is raised: a noise-dominated variance near 0 would let one feature
#: dominate every decision.
VARIANCE_FLOOR_SDS = 2.0


def class_counts(noisy_counts, total=None):
    """Class counts for priors and means: at least :data:`MIN_COUNT`, summing to ``total``.

    Parameters
    ----------
    noisy_counts : ndarray of shape (K,)
        The released counts.
    total : float or None
        The public number of rows (unweighted fits), to which the counts are
        rescaled; None keeps their own sum (weighted fits: the total weight is
        not public).

    Returns
    -------
    counts : ndarray of shape (K,)
    """
    counts = np.maximum(np.asarray(noisy_counts, dtype=np.float64), MIN_COUNT)
    if total is not None:
        counts = counts * (float(total) / counts.sum())
    return counts


#: The prior of the spread ``tau`` of the class means around their common mean (in
#: units of the half-width): exponential with this scale, on ``[0, 2]``. Spreads of
#: more than a third of the half-width are a priori rare; the data overrule it.
SPREAD_PRIOR_SCALE = 0.3

# The grid over tau on which the posterior is computed (public, fixed).
_TAU_GRID = np.linspace(0.0, 2.0, 401)


def shrunk_class_means(means, noise_variances):
    """Posterior means of noisy class means, shrunk toward their common mean by their noise.

    The model (random effects, as in empirical Bayes meta-analysis): feature
    ``j``'s class means are ``m_j + delta_kj``, the ``delta_kj`` independent
    ``N(0, tau^2)``, ``tau`` shared by every feature and class; the release
    adds independent noise of variance ``v_k`` to class ``k``'s means. Given
    ``tau``, the posterior mean of class ``k``'s mean is ``m_j + w_k (mu_kj -
    m_j)`` with ``w_k = tau^2 / (tau^2 + v_k)`` and ``m_j`` the average of the
    ``mu_kj`` weighted by ``1 / (tau^2 + v_k)``: a class with few rows (large
    ``v_k``) is pulled hardest. ``tau`` itself is integrated out: its
    posterior on a fixed grid over ``[0, 2]`` is the restricted likelihood of
    the observed means (the common means ``m_j`` integrated under a flat
    prior) times an exponential prior of scale :data:`SPREAD_PRIOR_SCALE`.
    When the noise swamps every difference the posterior sits at ``tau``
    near 0, all classes share one mean and the model predicts from its priors
    alone: the majority class. Unlike a point estimate of ``tau`` (which is
    often exactly 0 with two classes), the integral keeps the direction that
    many weakly informative features share.

    Parameters
    ----------
    means : ndarray of shape (K, d)
        In ``[-1, 1]``.
    noise_variances : ndarray of shape (K,)
        ``v_k > 0``.

    Returns
    -------
    shrunk : ndarray of shape (K, d)
    """
    means = np.asarray(means, dtype=np.float64)
    v = np.asarray(noise_variances, dtype=np.float64)
    d = means.shape[1]
    variance = _TAU_GRID[:, None] ** 2 + v[None, :]  # (T, K)
    precision = 1.0 / variance
    common = precision @ means / precision.sum(axis=1, keepdims=True)  # (T, d)
    resid = (precision[:, :, None] * (means[None] - common[:, None, :]) ** 2).sum(axis=(1, 2))
    log_post = (-0.5 * d * (np.log(variance).sum(axis=1) + np.log(precision.sum(axis=1)))
                - 0.5 * resid - _TAU_GRID / SPREAD_PRIOR_SCALE)
    post = np.exp(log_post - log_post.max())
    post /= post.sum()
    weight = _TAU_GRID[:, None] ** 2 * precision  # (T, K)
    given_tau = common[:, None, :] + weight[:, :, None] * (means[None] - common[:, None, :])
    return np.tensordot(post, given_tau, axes=1)


def pooled_variance(square_sums, total, priors, means, noise_variance):
    """The within-class variance of each feature, shared by the classes, with a noise floor.

    ``Q_j / N - sum_k pi_k mu_kj^2``: the second moment of all rows minus
    that of the class means (``z`` units, so in ``[0, 1]``). Using the shrunk
    means counts any between-class spread they do not explain as within-class
    variance: an error on the side of caution. The estimate is raised to
    :data:`VARIANCE_FLOOR_SDS` standard deviations of its own noise
    (``sqrt(noise_variance) / N``) and capped at 1, the largest variance a
    value in ``[-1, 1]`` can have.

    Parameters
    ----------
    square_sums : ndarray of shape (d,)
        Noisy sums of ``z^2``.
    total : float
        ``N``: rows (or total weight).
    priors, means : ndarray of shape (K,), (K, d)
    noise_variance : float
        Variance of the noise of one square sum.

    Returns
    -------
    variance : ndarray of shape (d,)
    """
    second = np.asarray(square_sums, dtype=np.float64) / total
    between = (np.asarray(priors)[:, None] * np.asarray(means) ** 2).sum(axis=0)
    floor = VARIANCE_FLOOR_SDS * math.sqrt(noise_variance) / total
    return np.clip(second - between, min(floor, 1.0), 1.0)


def check_priors(priors, n_classes):
    """Validate declared class priors (a parameter: free): length K, >= 0, summing to 1."""
    values = np.asarray(priors, dtype=np.float64)
    if values.ndim != 1 or values.shape[0] != n_classes:
        raise ValueError("The number of priors must match the number of classes.")
    if not np.all(np.isfinite(values)) or np.any(values < 0):
        raise ValueError("Priors must be finite and non-negative.")
    if not np.isclose(values.sum(), 1.0):
        raise ValueError("The sum of the priors should be 1.")
    return values
