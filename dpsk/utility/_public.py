"""Public-data mode: the utility curve by Monte Carlo over the mechanism's noise."""

import sys
import warnings

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import clone
from sklearn.model_selection import train_test_split
from sklearn.pipeline import Pipeline
from sklearn.utils import indexable
from sklearn.utils.validation import check_X_y, column_or_1d

from .._optimize._solution_cache import reusing_solutions
from ..accounting._ledger import BudgetAccountant
from ..mechanisms._random import public_rng, validate_random_state
from ._common import (
    check_count,
    check_epsilons,
    check_estimator,
    check_fraction,
    describe,
    held_out_metrics,
    pipeline_shares,
)
from ._curve import UtilityCurve

__all__ = ["utility_curve", "recommend_epsilon"]

#: Fits above which ``progress="auto"`` shows a bar.
_AUTO_PROGRESS_FITS = 100


def utility_curve(estimator, X, y, *, epsilons=None, n_draws=20, test_size=0.3,
                  confidence=0.9, n_jobs=None, random_state=None, progress="auto"):
    """Held-out accuracy and loss against epsilon, by Monte Carlo on public data.

    Public-data mode: ``(X, y)`` must be public (or synthetic) data that
    resembles the private data. Nothing is charged to any ledger: every fit
    here goes to a fresh, unlimited :class:`~dpsk.BudgetAccountant` of its
    own, never to the estimator's ``accountant`` or the default ledger.

    ``(X, y)`` is split once (stratified) into a training part and a held-out
    part of ``test_size``. At each epsilon, ``n_draws`` private fits of a
    clone of ``estimator`` (its parameters, with ``epsilon`` replaced) are
    trained on the training part with independent noise and scored on the
    held-out part. Each fit is the estimator's own ``fit``, so the noise law
    is the estimator's, exactly. With ``perturbation="output"`` the
    non-private minimiser does not depend on epsilon or on the noise, and it
    is computed once in all and reused by every draw (the released values are
    bit for bit those of a normal fit with the same seed); the other
    mechanisms (objective perturbation, noisy gradient descent) solve a
    problem that depends on the noise, so every draw is a full fit.

    The noise scale depends on the number of training rows (the sensitivity
    is ``2 / (n alpha)``): the curve is for ``n_train = (1 - test_size) *
    len(y)`` rows. Use public data of about the size of the private training
    set, or read the curve as a curve in ``n * epsilon``.

    Parameters
    ----------
    estimator : DPLogisticRegression, DPHuberSVM, DPKernelClassifier or Pipeline
        Unfitted or fitted; it is cloned, never refitted. Its ``classes`` is
        taken from ``y`` if not declared (the data is public). A pipeline
        ending in such a model (the quickstart's: the schema encoder with
        private bounds, then the model) is fitted whole, on the raw public
        table: the curve is then against the *total* epsilon of one fit,
        which every private step shares in the proportions of its declared
        ``epsilon`` (bounds 0.2 and model 0.8 give shares 0.2 and 0.8).
    X : array-like of shape (n_samples, n_features)
        Public features (for a pipeline, whatever its first step takes, such
        as a DataFrame).
    y : array-like of shape (n_samples,)
        Public labels.
    epsilons : array-like of shape (k,), default=np.logspace(-2, 1, 12)
        Finite and > 0; sorted and deduplicated.
    n_draws : int, default=20
        Noise draws per epsilon, >= 2.
    test_size : float in (0, 1), default=0.3
        Held-out share of ``(X, y)``.
    confidence : float in (0, 1), default=0.9
        Level of the bands (see :class:`UtilityCurve`).
    n_jobs : int or None, default=None
        joblib workers over the fits.
    random_state : int or None, default=None
        None: a fresh split and fresh secure noise for every fit. An int
        makes the split and every draw reproducible: draw ``j`` at epsilon
        ``i`` is a fit with ``random_state=curve_seeds(random_state, k,
        n_draws)[i, j]``.
    progress : bool or "auto", default="auto"
        A tqdm progress bar ("auto": when tqdm is installed and there are
        more than 100 fits). Without tqdm there is no bar.

    Returns
    -------
    UtilityCurve
        ``mode="public"``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import make_classification
    >>> from sklearn.preprocessing import normalize
    >>> from dpsk import DPLogisticRegression
    >>> from dpsk.utility import utility_curve
    >>> X, y = make_classification(n_samples=400, random_state=0)
    >>> X = normalize(X)
    >>> curve = utility_curve(DPLogisticRegression(alpha=1e-2, perturbation="output"), X, y,
    ...                       epsilons=[0.1, 1.0, 10.0], n_draws=5, random_state=0)
    >>> curve.accuracy.shape
    (3, 5)
    """
    check_estimator(estimator)
    eps = check_epsilons(epsilons)
    n_draws, confidence, classes, split = _checked_public_split(
        X, y, n_draws, test_size, confidence, random_state, progress,
        raw=isinstance(estimator, Pipeline))
    return _monte_carlo(estimator, classes, eps, n_draws, curve_seeds(random_state, len(eps),
                                                                    n_draws),
                        split, confidence, n_jobs, progress, describe(estimator, "public"))


def _checked_public_split(X, y, n_draws, test_size, confidence, random_state, progress,
                          raw=False):
    """The checks of the public-mode curves, then one split of the public data.

    ``raw``: ``X`` goes to a pipeline's first step as it is (a DataFrame, say).
    Returns ``(n_draws, confidence, classes, (X_train, y_train, X_test, y_test))``.
    """
    n_draws = check_count(n_draws, "n_draws", 2)
    test_size = check_fraction(test_size, "test_size")
    confidence = check_fraction(confidence, "confidence")
    validate_random_state(random_state)
    if progress not in (True, False, "auto"):
        raise ValueError(f"progress must be True, False or 'auto', got {progress!r}.")
    if raw:
        X, y = indexable(X, y)
        y = column_or_1d(y)
    else:
        X, y = check_X_y(X, y, accept_sparse="csr", dtype=np.float64)
    classes = np.unique(y)
    if classes.size < 2:
        raise ValueError("y must hold at least two classes.")
    X_train, X_test, y_train, y_test = _split(X, y, test_size, random_state)
    return n_draws, confidence, classes, (X_train, y_train, X_test, y_test)


def _split(X, y, test_size, random_state):
    """One stratified public split: ``X_train, X_test, y_train, y_test``."""
    split_seed = int(public_rng(random_state).integers(2**31))
    return train_test_split(X, y, test_size=test_size, stratify=y, random_state=split_seed)


def _monte_carlo(estimator, classes, eps, n_draws, seeds, split, confidence, n_jobs, progress,
                 description):
    """The Monte Carlo of :func:`utility_curve` on a given split: a :class:`UtilityCurve`."""
    X_train, y_train, X_test, y_test = split
    base = _template(estimator, classes)
    store = _shared_solutions(base, X_train, y_train)
    tasks = [(float(e), None if seeds is None else int(seeds[i, j]))
             for i, e in enumerate(eps) for j in range(n_draws)]
    results = Parallel(n_jobs=n_jobs, return_as="generator")(
        delayed(_one_draw)(base, e, seed, X_train, y_train, X_test, y_test, store)
        for e, seed in tasks)
    results = np.array(list(_with_progress(results, len(tasks), progress)))
    results = results.reshape(len(eps), n_draws, 4)
    return UtilityCurve(
        epsilons=eps, accuracy=results[:, :, 0], loss=results[:, :, 1],
        accuracy_row_var=results[:, :, 2].mean(axis=1),
        loss_row_var=results[:, :, 3].mean(axis=1), confidence=confidence, mode="public",
        n_train=len(y_train), n_test=len(y_test), description=description,
    )


def recommend_epsilon(estimator, X, y, *, target_accuracy=None, target_loss=None,
                      mode="public", **kwargs):
    """The epsilon interval at which ``estimator`` reaches a target accuracy or loss.

    Builds the curve (``mode="public"``: :func:`utility_curve` on the public
    ``(X, y)``, no privacy cost; ``mode="probe"``: :func:`probe_curve` with
    ``(X, y)`` as the public data, one private fit charged to the estimator's
    ledger) and inverts it with :meth:`UtilityCurve.recommend`.

    Parameters
    ----------
    estimator : DPLogisticRegression, DPHuberSVM or DPKernelClassifier
    X, y : array-like
        Public data.
    target_accuracy, target_loss : float, optional
        Exactly one.
    mode : {"public", "probe"}, default="public"
    **kwargs
        Passed to :func:`utility_curve` or :func:`probe_curve` (for the probe:
        ``X_private``, ``y_private`` and ``epsilons``, ``extrapolation``).

    Returns
    -------
    Recommendation
    """
    from ._curve import _check_target
    from ._probe import probe_curve

    _check_target(target_accuracy, target_loss)  # refuse before any fit, above all a private one
    if mode == "public":
        curve = utility_curve(estimator, X, y, **kwargs)
    elif mode == "probe":
        curve = probe_curve(estimator, X, y, **kwargs)
    else:
        raise ValueError(f"mode must be 'public' or 'probe', got {mode!r}.")
    return curve.recommend(target_accuracy=target_accuracy, target_loss=target_loss)


def curve_seeds(random_state, n_epsilons, n_draws):
    """The ``random_state`` of every Monte Carlo fit, shape ``(n_epsilons, n_draws)``.

    None for ``random_state=None`` (every fit then draws fresh secure noise).
    """
    if random_state is None:
        return None
    sequence = np.random.SeedSequence([int(random_state), 0x5EED])
    return sequence.generate_state(n_epsilons * n_draws).reshape(n_epsilons, n_draws) >> 1


def _template(estimator, classes):
    """What every draw is built from, holding no ledger (pickling one would share it).

    A model: ``(class, parameters)``. A pipeline: ``(None, (copy, shares))``, the
    copy's private steps without a ledger, each to get its share of a draw's
    epsilon. Undeclared classes are the public data's (its labels are no secret).
    """
    if isinstance(estimator, Pipeline):
        shares = pipeline_shares(estimator)
        copy = clone(estimator).set_params(**{f"{path}__accountant": None
                                              for path, _ in shares})
        final_path = shares[-1][0]
        if copy._final_estimator.get_params(deep=False).get("classes") is None:
            copy.set_params(**{f"{final_path}__classes": classes})
        return None, (copy, shares)
    params = estimator.get_params(deep=False)
    params.pop("accountant", None)
    if params.get("classes") is None:
        params["classes"] = classes
    return type(estimator), params


def _shared_solutions(base, X_train, y_train):
    """Solve output perturbation's non-private problem once, for all draws (else None)."""
    if base[0] is None or base[1]["perturbation"] != "output":
        return None
    store = {}
    with reusing_solutions(store):
        _fit(base, 1.0, 0, X_train, y_train)
    return store


def _fit(base, epsilon, seed, X, y):
    cls, params = base
    if cls is None:  # a pipeline: each private step its share, its own seed and ledger
        copy, shares = params
        est = clone(copy)
        for i, (path, share) in enumerate(shares):
            est.set_params(**{f"{path}__epsilon": share * epsilon,
                              f"{path}__random_state": _step_seed(seed, i),
                              f"{path}__accountant": BudgetAccountant()})
    else:
        # A fresh unlimited ledger per fit: nothing reaches the user's or the default one.
        est = cls(**{**params, "epsilon": epsilon, "random_state": seed,
                     "accountant": BudgetAccountant()})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # weak-epsilon warnings: this is a simulation
        return est.fit(X, y)


def _step_seed(seed, index):
    """The seed of a pipeline's ``index``-th private step in one draw (None stays None)."""
    if seed is None:
        return None
    return int(np.random.SeedSequence([int(seed), index]).generate_state(1)[0] >> 1)


def _one_draw(base, epsilon, seed, X_train, y_train, X_test, y_test, store):
    if store is None:
        fitted = _fit(base, epsilon, seed, X_train, y_train)
    else:
        with reusing_solutions(store):
            fitted = _fit(base, epsilon, seed, X_train, y_train)
    return held_out_metrics(fitted, X_test, y_test)


def _with_progress(iterable, total, progress):
    if progress is False or (progress == "auto" and total <= _AUTO_PROGRESS_FITS):
        return iterable
    try:
        from tqdm.auto import tqdm
    except ImportError:  # tqdm is optional (the benchmarks extra)
        return iterable
    return tqdm(iterable, total=total, desc="utility curve", leave=False, file=sys.stderr)
