"""Private hyperparameter tuning.

Four methods: the safe search (the default: select on a small share of the
budget with the untuned default ahead, refit on all rows with the rest;
``_safe.py``), Algorithm 4 of Chaudhuri, Monteleoni and Sarwate (2011)
(disjoint parts and the exponential mechanism), the random stopping of Liu and
Talwar (2019) (every candidate trained on all the training rows, private
scores) and the repeated selection of Papernot and Steinke (2022)
(``_repeat.py``).
"""

import contextlib
import contextvars
import dataclasses
import math
import warnings
from numbers import Integral, Real

import numpy as np
from joblib import Parallel, delayed, effective_n_jobs
from sklearn.base import BaseEstimator, ClassifierMixin, MetaEstimatorMixin, clone
from sklearn.model_selection import ParameterGrid
from sklearn.pipeline import Pipeline
from sklearn.utils import _safe_indexing, get_tags, indexable
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import (
    _num_features,
    check_array,
    check_is_fitted,
    column_or_1d,
    has_fit_parameter,
)

from .._data._validation import (
    check_not_datetime,
    check_sample_weight,
    refuse_fit_params,
    resolve_classes,
    values_withheld,
    warn_if_classes_undeclared,
    warn_if_column_vector,
)
from .._mixin import PrivacyAccountingMixin
from .._silence import muted, one_process, silenced
from ..accounting._events import ApproxDPEvent, PureDPEvent, RepeatAndSelectEvent
from ..accounting._ledger import BudgetAccountant, _validate_cost
from ..accounting._scratch import ScratchLedger
from ..mechanisms._noise import exponential_mechanism
from ..mechanisms._random import noise_source, public_rng, validate_random_state
from ..pipeline._budget import private_steps
from ..pipeline._check import _learning_parts
from ..pipeline._dry import dry_run
from ._repeat import (
    _TimeProgress,
    plan_repeat,
    repeat_and_select,
    rule_alpha,
    rule_bound,
    rule_cache,
)
from ._safe import SAFE_MULTIPLIERS, plan_safe, select_with_bonus
from ._stopping import (
    RANDOM_STOPPING_FACTOR,
    default_stop_probability,
    noisy_count,
    random_stopping_plan,
)

__all__ = ["DPGridSearch", "SearchCannotPayWarning"]

# Parameters of the inner estimator that the search owns.
_RESERVED = ("epsilon", "accountant", "random_state", "classes")
# Relative tolerance when comparing the inner estimator's declared cost with epsilon.
_COST_RTOL = 1e-12
# Parameter names (at any depth of get_params) that ask an estimator to print.
_PRINTING_PARAMS = ("verbose", "verbosity")

#: The default grid (``param_grid=None``): these multiples of the alpha rule's
#: alpha, each computed for the fit it is used in (its own rows and epsilon).
#: Narrow on purpose: the rule is near the best alpha on the benchmark families,
#: and a factor 9 away already cost 0.02-0.06 of test error on Adult, while a
#: wide grid's bad candidates are sometimes chosen by the noisy selection
#: (``docs/grid_search.rst``, "The default grid").
DEFAULT_ALPHA_MULTIPLIERS = (1 / 3, 1.0, 3.0)


class SearchCannotPayWarning(UserWarning):
    """A safe search whose selection is too coarse to pay for its share of the budget.

    Raised before anything is spent, from public quantities only (the number of
    rows, the budget, the grid): a candidate would have to be much more
    accurate than the untuned default on the validation part to be chosen, so
    the search will almost always return the default, refitted at a little
    less than the whole budget. ``DPGridSearch(cannot_pay="fit-default")``
    fits the default at the whole budget instead (``docs/grid_search.rst``,
    "When a search cannot pay").
    """


class _RunFailed(RuntimeError):
    """An inner fit of a search failed. The cause is withheld: it could depend on
    the data, or tell which run failed."""


def _select_candidate(mistakes, epsilon, rng):
    """The selection step of Algorithm 4: the exponential mechanism on mistake counts.

    Returns index ``i`` with probability proportional to ``exp(-epsilon z_i / 2)``
    (utility ``-z_i``, sensitivity 1: replacing one held-out row changes every
    count by at most one). Only the index is returned: the counts and the
    probabilities depend on the data without noise and must not be released.

    Parameters
    ----------
    mistakes : array-like of shape (m,)
        Number of held-out mistakes of each candidate.
    epsilon : float
        Privacy parameter of the selection, > 0.
    rng : NoiseSource

    Returns
    -------
    index : int
    """
    z = np.asarray(mistakes, dtype=float)
    index, _ = exponential_mechanism(-z, epsilon, 1.0, rng)
    return index


def _split_parts(n_samples, n_parts, rng):
    """Split ``range(n_samples)`` at random into ``n_parts`` disjoint near-equal parts.

    The permutation comes from ``rng`` alone and the part sizes (``n // n_parts``
    or one more, larger parts first) depend only on ``n_samples`` and ``n_parts``:
    the split never looks at the data.

    Returns
    -------
    parts : list of ndarray of int
        ``n_parts`` index arrays that are disjoint and cover ``range(n_samples)``.
    """
    permutation = rng.permutation(n_samples)
    return np.array_split(permutation, n_parts)


def _score_split(n_samples, validation_fraction, rng):
    """Split ``range(n_samples)`` at random into a training and a validation part.

    The validation part has ``round(validation_fraction * n)`` rows, at least 1
    and at most ``n - 1``: sizes depend on ``n`` and the fraction only, and the
    permutation on ``rng`` alone (public randomness, never the data).

    Returns
    -------
    train, validation : ndarray of int
    """
    n_val = min(max(int(round(validation_fraction * n_samples)), 1), n_samples - 1)
    permutation = rng.permutation(n_samples)
    return permutation[n_val:], permutation[:n_val]


def _n_columns(X):
    """The number of columns of ``X`` (public metadata), or None if it has no shape."""
    try:
        return int(_num_features(X))
    except (TypeError, ValueError):
        return None


def _private_final_step(estimator, prefix=""):
    """Return ``(prefix, step)`` of the step of ``estimator`` that is a dpsk estimator.

    For a Pipeline that is its final step (recursively); otherwise the estimator
    itself. Raises TypeError if that step is not a dpsk estimator.
    """
    if isinstance(estimator, Pipeline):
        name, final = estimator.steps[-1]
        return _private_final_step(final, f"{prefix}{name}__")
    if not isinstance(estimator, PrivacyAccountingMixin) or not set(_RESERVED).issubset(
        estimator.get_params(deep=False)
    ):
        raise TypeError(
            "DPGridSearch needs a dpsk estimator (one with `epsilon`, `accountant` and "
            "`random_state` parameters that charges its privacy cost to a "
            "BudgetAccountant), or a sklearn Pipeline whose final step is one; got "
            f"{type(estimator).__name__}. A non-private estimator would make the "
            "search's guarantee void."
        )
    return prefix, estimator


def _check_shapes(X, y):
    """Shape checks only (empty data, 1-d X, ...); each candidate's own checks follow.

    X itself is passed on unchanged, so DataFrames keep their column names.
    """
    X, y = indexable(X, y)
    check_array(X, accept_sparse=True, dtype=None, ensure_all_finite=False)
    return X, column_or_1d(y, warn=True)


def _learned_steps(estimator, prefix=""):
    """Names of the steps before the private one that learn from the data (nested too).

    Private preprocessing (:class:`~dpsk.preprocessing.PrivateBoundsScaler`,
    also inside the schema encoder) learns with noise: it is a release, which
    every run of the search refits on its own rows and pays for
    (:meth:`DPGridSearch._preprocessing_epsilon`), not a leak.
    """
    if not isinstance(estimator, Pipeline):
        return []
    found = [part for name, step in estimator.steps[:-1]
             for part in _learning_parts(prefix + name, step, allow_private=True)]
    name, final = estimator.steps[-1]
    return found + _learned_steps(final, f"{prefix}{name}__")


def _validate_through(estimator, X, y):
    """Run ``estimator``'s own domain checks on ``(X, y)``, through its pipeline steps.

    Earlier steps are data-independent (checked before), so fitting clones of
    them learns nothing; the private step's ``_validate_input`` then refuses input
    outside its domain. Only whether the input is in the domain comes out, and
    the number of columns the private step sees (public: the steps are
    data-independent functions of the declared columns), or None. Private
    preprocessing steps run in a dry run (``dpsk.pipeline._dry``): they check
    their input and hand on public stand-ins, and spend nothing.
    """
    with dry_run():
        return _validate_through_steps(estimator, X, y)


def _validate_through_steps(estimator, X, y):
    while isinstance(estimator, Pipeline):
        for name, step in estimator.steps[:-1]:
            if step is not None and step != "passthrough":
                X = _step_withheld(name, step, X, y)
        estimator = estimator.steps[-1][1]
    clone(estimator)._validate_input(X, y)
    return _n_columns(X)


def _check_candidate(index, estimator):
    """Run a candidate's own parameter checks (free: parameters only).

    Every step with scikit-learn's ``_validate_params`` is checked, and the
    private step's extra checks (``_check_params_before_fit``) too, so that a
    bad value in the grid is refused before the search spends, not by an
    inner fit after it. The parameters are public: the message may quote them.
    """
    steps = [estimator]
    while isinstance(steps[-1], Pipeline):
        steps = steps[:-1] + [s for _, s in steps[-1].steps if s not in (None, "passthrough")]
    try:
        for step in steps:
            if hasattr(step, "_validate_params"):
                step._validate_params()
            if hasattr(step, "_check_params_before_fit"):
                step._check_params_before_fit()
    except (ValueError, TypeError) as exc:
        raise type(exc)(f"Candidate {index} of DPGridSearch has a bad parameter, refused "
                        f"before anything was spent: {exc}") from None


def _step_withheld(name, step, X, y):
    """Fit a clone of a (data-independent) step and transform; refuse without quoting.

    scikit-learn's refusals can quote the offending cell (``OneHotEncoder``'s
    ``Found unknown categories [...]``), so any failure is re-raised with a fixed
    message naming the step, outside the ``except`` block (no ``__context__``).
    """
    try:
        return clone(step).fit_transform(X, y)
    except Exception as exc:  # noqa: BLE001 - every message may quote the data
        kind = TypeError if isinstance(exc, TypeError) else ValueError
    raise kind(f"Step {name!r} refused the data: it is outside the domain the step "
               "declares (categories, dtypes, columns). The offending value is not "
               "shown, and nothing was spent.")


def _derived_seed(random_state, *key):
    """A reproducible int seed for an inner fit (None stays None: fresh secure noise)."""
    if random_state is None:
        return None
    return int(np.random.SeedSequence([int(random_state), *key]).generate_state(1)[0])


def _checked_weights(estimator, sample_weight, n):
    """``sample_weight`` checked (free) for a search whose final step must take it."""
    if sample_weight is None:
        return None
    _, final = _private_final_step(estimator)
    if not has_fit_parameter(final, "sample_weight"):
        raise TypeError(f"DPGridSearch got sample_weight, but {type(final).__name__}.fit takes "
                        "no weights. Nothing was spent.")
    return check_sample_weight(sample_weight, n)


def _weights_for(estimator, weights, rows=None):
    """``fit`` keywords giving the private step of ``estimator`` the weights of ``rows``."""
    if weights is None:
        return {}
    prefix, _ = _private_final_step(estimator)
    return {prefix + "sample_weight": weights if rows is None else weights[rows]}


def _fit_and_count(candidate, X_train, y_train, X_hold, y_hold, fit_params=None):
    """Fit one candidate on its own part and count its mistakes on the held-out part.

    Silenced here too: in a joblib worker process the parent's filters do not
    apply, and a pipeline step's warning (printed to the shared stderr) could
    depend on the rows of the part.
    """
    with silenced():
        candidate.fit(X_train, y_train, **(fit_params or {}))
        mistakes = int(np.sum(candidate.predict(X_hold) != y_hold))
    return candidate, mistakes


def _quietly(function, *args):
    """``(True, function(*args))`` with warnings, output and logging silenced, in any
    process; ``(False, None)`` if it raised.

    joblib runs this in worker processes too, where the parent's silencing does
    not reach: each task silences itself. A failure is reported as a bare flag:
    the exception, its message and traceback could carry data or name the run
    that failed, so it never leaves the task (nor crosses to the parent, nor
    makes joblib tear down its workers); the search then fails, charged.
    """
    with silenced(), muted(), one_process():
        try:
            return True, function(*args)
        except Exception:  # noqa: BLE001 - the cause is dropped on purpose
            return False, None


def _fit_in_one_process(estimator, X, y, weights):
    """Fit the search's own release (one fit, or the refit) without inner joblib pools.

    It runs once whatever the number of runs, but the same rule everywhere in a
    search is the simplest one to check: no inner fit starts a pool (``one_process``).
    """
    with one_process():
        estimator.fit(X, y, **_weights_for(estimator, weights))


def _unwrap(results):
    """The results of :func:`_quietly` tasks, or :class:`_RunFailed` if any failed."""
    if not all(ok for ok, _ in results):
        raise _RunFailed("An inner fit of DPGridSearch failed; the cause is withheld.")
    return [result for _, result in results]


def _preprocessing_paths(estimator):
    """Paths of the private steps of ``estimator`` before its private model."""
    prefix, _ = _private_final_step(estimator)
    final = prefix[:-2]  # "<name>__" -> "<name>"; "" for the model itself
    return [path for path, _ in private_steps(estimator) if path != final]


def _run_settings(estimator, random_state, ledger):
    """``set_params`` keywords giving every private step of a run ``ledger`` and its seed.

    The private model gets ``random_state``; each private preprocessing step a
    seed derived from it (None stays None: fresh secure noise), so that no two
    steps share a noise stream.
    """
    prefix, _ = _private_final_step(estimator)
    settings = {prefix + "random_state": random_state, prefix + "accountant": ledger}
    for i, path in enumerate(_preprocessing_paths(estimator)):
        settings[path + "__random_state"] = _derived_seed(random_state, 5, i)
        settings[path + "__accountant"] = ledger
    return settings


def _for_run(prototype, random_state):
    """A fresh copy of ``prototype`` with its own noise seed and scratch ledger."""
    estimator = clone(prototype)
    return estimator.set_params(**_run_settings(estimator, random_state, ScratchLedger()))


def _best_of_runs(runs, prototypes, run_eps, X_train, y_train, X_val, y_val, fit_params=None):
    """Run a share of the random-stopping runs in run order; keep the first best one.

    Parameters
    ----------
    runs : list of (int, int, int or None, int or None)
        ``(j, i, fit_seed, score_seed)``: run ``j`` trains candidate ``i``, with
        its own fit noise and its own score noise (fresh secure noise for None).
    prototypes : list of estimators
        The unfitted candidates, at the per-run epsilon.
    run_eps : float
        The per-run epsilon: each fit spends it, the score is noised at it.

    Returns
    -------
    best : tuple (score, j, i, estimator) or None
        The run with the highest noisy score, the earliest on ties; None for no
        runs. Across shares, the highest score with the smallest ``j`` is then
        the first best of all runs, however the runs were shared out.
    """
    best = None
    for j, i, fit_seed, score_seed in runs:
        estimator, mistakes = _fit_and_count(_for_run(prototypes[i], fit_seed),
                                             X_train, y_train, X_val, y_val, fit_params)
        DPGridSearch._check_spent(estimator, run_eps, 0.0)
        score = noisy_count(len(y_val) - mistakes, run_eps, noise_source(score_seed))
        if best is None or score > best[0]:
            best = (score, j, i, estimator)
    return best


def _is_set(value):
    """Whether a ``verbose``-like parameter asks for output (unclear values do)."""
    try:
        return bool(value)
    except Exception:  # noqa: BLE001 - an array or an odd object: treat as set
        return True


# Within one fit, the candidate list and the cost are functions of the parameters,
# which do not change: computed once (each costs a clone per candidate).
_FIT_MEMO = contextvars.ContextVar("dpsk_search_fit_memo", default=None)


@contextlib.contextmanager
def _one_fit():
    """Within the block, :func:`_memo` keeps what it computes, and the alpha rule's
    values are computed once per fit (:func:`~._repeat.rule_cache`)."""
    token = _FIT_MEMO.set({})
    try:
        with rule_cache():  # the plan and the fits read the same rules
            yield
    finally:
        _FIT_MEMO.reset(token)


def _memo(key, compute):
    """``compute()``, once per ``key`` inside :func:`_one_fit` (always outside it)."""
    memo = _FIT_MEMO.get()
    if memo is None:
        return compute()
    if key not in memo:
        memo[key] = compute()
    return memo[key]


def _own_delta(final):
    """The ``delta`` parameter of a private step (0 if it has none)."""
    return float(final.get_params(deep=False).get("delta", 0.0) or 0.0)


def _same_value(value, own):
    """Whether a grid value leaves a parameter as the inner estimator has it.

    Estimators compare by type and parameters (a grid may swap a step for an
    equal copy); other values by equality, with anything that cannot be
    compared treated as different.
    """
    if hasattr(value, "get_params") or hasattr(own, "get_params"):
        if type(value) is not type(own):
            return False
        mine, theirs = value.get_params(deep=False), own.get_params(deep=False)
        return mine.keys() == theirs.keys() and all(
            _same_value(mine[k], theirs[k]) for k in mine)
    if isinstance(value, str) != isinstance(own, str):
        return False
    try:
        return bool(value == own)
    except Exception:  # noqa: BLE001 - arrays, odd objects: not the same
        return False


def _cannot_pay_message(plan, cannot_pay):
    """The fixed text of :class:`SearchCannotPayWarning` (public quantities only)."""
    if plan.resolution < 1:
        needs = (f"a candidate must be right on {plan.resolution:.0%} more of the "
                 "validation rows than the untuned default to be chosen half the time, "
                 "which a better hyperparameter rarely gives")
    else:
        needs = ("no candidate can be shown better than the untuned default: it would "
                 "have to be right on more validation rows than there are")
    then = ("fits the untuned default at the whole budget instead (cannot_pay="
            "'fit-default')" if cannot_pay == "fit-default" else
            "will almost always return the untuned default, refitted at "
            f"{1 - plan.share:.0%} of the budget; pass cannot_pay='fit-default' to fit "
            "it at the whole budget instead, or search with more rows or a larger epsilon")
    return (
        "DPGridSearch cannot pay for its selection here: with these rows, this budget "
        f"and {len(plan.part_sizes) - 1} candidates, {needs}. The search {then} "
        "(docs/grid_search.rst, 'When a search cannot pay').")


def _best_has(attr):
    def check(self):
        check_is_fitted(self)
        return hasattr(self.best_estimator_, attr)

    return check


class DPGridSearch(MetaEstimatorMixin, PrivacyAccountingMixin, ClassifierMixin, BaseEstimator):
    """Differentially private hyperparameter search.

    The default, ``method="auto"``, is ``"safe"`` (with ``refit=True``:
    ``"random-stopping"``, or ``"disjoint"`` when a candidate has ``delta >
    0``), described first: the untuned default is always a candidate, and the
    search is never worse than not searching beyond noise. ``"disjoint"`` is
    Algorithm 4 of Chaudhuri et al. (2011); ``"random-stopping"`` the random
    stopping of Liu and Talwar (2019); ``"repeat"`` the repeated selection of
    Papernot and Steinke (2022). ``epsilon`` is the cost of the search with
    every method, and ``refit=True`` adds one more ``epsilon`` (not with
    ``"safe"`` or ``"repeat"``).

    **method="safe".** The untuned default is a candidate: the rule's alpha of
    the default grid (multiples 0.1, 1, 10 of the alpha rule's alpha), or the
    inner estimator as given, added first to a given grid that lacks it. A
    public plan (``_safe.plan_safe``) sets the selection's share ``s`` of the
    budget from the alpha rule's excess-risk bound for the default (so that
    the refit's bound grows by at most a tenth, or 0.005 nats where it is
    small), and the default's head start ``b``. The rows are split at random
    into ``m + 1`` parts; candidate ``i`` is fitted on part ``i`` at ``(s
    epsilon, s delta)``, its alpha a multiple of the rule for that fit so that
    the choice transfers; the exponential mechanism at ``s epsilon`` picks
    index ``k`` with probability proportional to ``exp(s epsilon (-z_k + b
    [k = default]) / 2)``, ``z`` the mistakes on the last part; candidate
    ``k`` is refitted on all rows at ``((1 - s) epsilon, (1 - s) delta)`` and
    released.

    Privacy guarantee: ``(epsilon, delta)``-DP for the whole release (``delta``:
    the search's, by default the largest candidate ``delta``), recorded as one
    ledger event (``PureDPEvent(epsilon)``, or ``ApproxDPEvent(epsilon, delta)``
    when a candidate has ``delta > 0``; inner fits spend on scratch ledgers).
    Conditions, enforced before anything is spent: at least ``m + 1`` rows; no
    ``refit=True``; a total ``delta > 0`` when a candidate has one; the default
    grid needs the alpha rule; no learned pipeline steps or printing candidates
    (as for every method). Why: the plan reads public quantities only; the
    selection is ``(s epsilon, s delta)``-DP by the parallel composition of
    Algorithm 4 (Chaudhuri, Monteleoni and Sarwate 2011, Theorem 8: a changed
    row is in one training part, whose fit is private, or in the validation
    part, where every count moves by at most one and the exponential mechanism
    is ``s epsilon``-DP, McSherry and Talwar 2007; the head start is public);
    the refit is ``((1 - s) epsilon, (1 - s) delta)``-DP for every ``k``; basic
    adaptive composition (Dwork and Roth 2014, Theorem 3.16) adds them. The head
    start: with no candidate better than the default on the validation part,
    another is chosen with probability at most 0.05, plus the selection fits'
    own noise (the rule's bound at their budget, capped). When the selection
    cannot pay (a better candidate must beat the default by more than 0.03 of
    validation error to be found half the time, 0.2 for grids over more than
    alpha), the search warns before spending (:class:`SearchCannotPayWarning`,
    fixed text of public quantities), runs at the smallest share (1%), or with
    ``cannot_pay="fit-default"`` fits the default at the whole budget.
    ``docs/grid_search.rst``, "The safe search", derives every step.

    **method="disjoint".** The rows are split at random into ``m + 1`` disjoint
    parts, ``m`` being the number of candidates of ``param_grid``. Candidate
    ``i`` is trained on part ``i`` alone, privately at ``epsilon``; each
    candidate counts its mistakes
    ``z_i`` on the last part, and one candidate is chosen with probability
    proportional to ``exp(-epsilon z_i / 2)`` (the exponential mechanism of
    McSherry and Talwar 2007). With ``refit=False`` (the paper's algorithm) the
    chosen candidate's model is released; with ``refit=True`` the chosen
    parameters are retrained on all rows at ``epsilon``.

    Privacy guarantee: with ``refit=False`` the whole run, i.e. ``best_params_``,
    ``best_index_`` and ``best_estimator_`` together, is ``epsilon``-differentially
    private (replace-one neighbours), and the search charges ``epsilon`` to the
    accountant once. Why (Theorem 8 of Chaudhuri, Monteleoni and Sarwate 2011,
    "Differentially private empirical risk minimization", JMLR 12): the split is
    drawn from the search's own randomness, not from the data, and its part sizes
    depend only on ``n`` and ``m`` (both treated as public), so a changed row
    lands in exactly one part. If it is in training part ``j``, only candidate
    ``j`` sees it, and that fit is ``epsilon``-DP with noise independent of the
    other fits (parallel composition); the held-out counts see the same part
    ``m + 1``. If it is in the held-out part, the candidate models do not change
    and every ``z_i`` moves by at most one, so the exponential mechanism with
    sensitivity 1 is ``epsilon``-DP. Either way the row is covered once, by
    ``epsilon``. Releasing a function of the candidates and the index (the chosen
    model) costs nothing more. With ``refit=True`` the retrained model reads every
    row again: by sequential composition the cost is ``2 * epsilon``. Theorem 9
    of the same paper bounds the utility of the selection: with probability
    ``1 - delta``, the chosen candidate makes at most ``z_min + 2 log(m / delta) /
    epsilon`` mistakes on the held-out part. (If the inner estimator has a
    ``delta``, the search's cost is ``(epsilon, delta)`` per run, resp. twice that
    with ``refit=True``.)

    **method="repeat".** Papernot and Steinke (2022, "Hyperparameter tuning
    with Renyi differential privacy", ICLR, Theorem 2). A public split sets
    aside ``validation_fraction`` of the rows. A secret number of runs ``K``
    is drawn exactly from a truncated negative binomial law with ``E[K] =
    max(1.5 m, 8)``; each run fits a uniformly drawn candidate on the training part at a
    planned per-run epsilon (and the candidate's own ``delta``) and scores it
    by a count of correct validation predictions plus exact integer noise
    (discrete Laplace for pure candidates, discrete Gaussian for the others,
    each as large as one run's own Renyi curve allows for free); the
    best run is released, with ``best_score_``. Privacy guarantee: the whole
    search is ``(epsilon, delta)``-DP, ``delta`` being the search's ``delta``
    (default: the largest candidate ``delta``); it is recorded as one
    :class:`~dpsk.accounting._events.RepeatAndSelectEvent` whose Renyi curve
    the ledger composes. Conditions, enforced: every candidate is pure, a
    Gaussian mechanism or Gaussian objective perturbation (each has a Renyi
    curve); ``delta = 0`` needs pure candidates; no ``refit``. The per-run
    epsilon is the largest at which the Renyi bound of the theorem, converted
    to ``(epsilon, delta)``, meets the budget (``docs/grid_search.rst``
    derives every step). ``K`` stays secret (never stored or shown; a
    progress display, with tqdm, counts seconds only).

    **method="random-stopping".** Every run trains a candidate on all the
    training rows. A public random split sets aside ``validation_fraction`` of
    the rows for scoring. Then the search draws, from its noise source and before
    reading any data, a secret number of runs ``K ~ Geometric(gamma)`` (``P[K =
    k] = gamma (1 - gamma)^(k - 1)``, ``gamma = stop_probability``, by default
    ``1 / (10 m)``) and a uniformly random candidate for each run. Run ``j``
    trains its candidate on the training part at ``eps0 = epsilon / 3`` and
    scores it by its number of correct predictions on the validation part plus
    discrete Laplace noise at ``eps0`` (:func:`~dpsk.model_selection._stopping.noisy_count`).
    The search releases the run with the highest noisy score (the earliest on
    ties), its model and its noisy score.

    Privacy guarantee: ``epsilon``-DP (``2 epsilon`` with ``refit=True``). One
    run is ``eps0``-DP: a changed row is either in the training part (the fit
    is ``eps0``-DP and the count a function of the model) or in the validation
    part (the model does not change and the count moves by at most one), the
    split being public. Theorem 3.4 of Liu and Talwar (2019, "Private selection
    from private candidates", STOC; no cap, ``T = infinity``): the best of
    ``K ~ Geometric(gamma)`` independent ``eps0``-DP runs is ``3 eps0``-DP, for
    every ``gamma``. ``docs/grid_search.rst`` derives it. The guarantee needs
    ``K`` to stay secret. It is never stored or reported, and nothing else but
    time depends on it: inner fits spend on scratch ledgers that write no file,
    the runs are dealt into a fixed number of joblib tasks (so the same threads
    and processes), and their output, logging and failures are discarded (see
    "What a search reveals" in ``docs/grid_search.rst``). A fit's duration, and
    its workers' CPU time, grow with ``K``: an observer who times the fit learns
    about ``K`` (nothing in dpsk hides timing). Inner estimators must be pure
    ``epsilon``-DP (``delta = 0``); others are refused before anything is spent.

    The candidate list must not depend on the private data. Nothing that depends
    on the data without noise is exposed: no per-candidate scores, mistake
    counts or selection probabilities (there is no ``cv_results_``); with
    ``method="random-stopping"``, ``best_score_`` is the chosen run's noisy
    score, part of the private release.

    Parameters
    ----------
    estimator : dpsk estimator or Pipeline
        A dpsk estimator (``DPLogisticRegression``, ``DPHuberSVM``, ...) or a
        :class:`~sklearn.pipeline.Pipeline` whose final step is one. The search
        overrides the inner ``epsilon`` (whatever it was) with its own
        ``epsilon``, gives every inner fit its own scratch ledger, in memory and
        never written to a file (so the search is charged once, here) and its own
        noise (fresh secure
        noise, or a seed derived from ``random_state``). Its ``classes`` are
        used by every candidate; if they are None, the search reads them from
        ``y`` once (with a :class:`~dpsk.ClassesFromDataWarning`) and declares
        them to every candidate, so a part that lacks a class fits anyway.
        Earlier pipeline steps must be data-independent
        (``FunctionTransformer``, ``Normalizer``, ...) or private
        preprocessing (``PrivateBoundsScaler``, the schema encoder with
        ``bounds_epsilon``): every run refits those at their own epsilon, on
        its own rows, and the search's one charge covers them too (``+ b`` for
        ``"disjoint"``, ``+ 3 b`` for ``"random-stopping"``, a pure component of
        every run's curve for ``"repeat"``; ``b`` their epsilon). If any
        candidate has a step that learns from the data without noise
        (``StandardScaler``), the search refuses to run unless
        ``allow_learned_steps=True``.
        Inner estimators must not print: a truthy ``verbose`` (or
        ``verbosity``) parameter anywhere in a candidate is refused before
        anything is spent, and everything inner fits print or log is discarded
        (process-wide while the search runs, other threads' output included).
    param_grid : dict, list of dicts or None, default=None
        As in :class:`~sklearn.model_selection.ParameterGrid`; for a Pipeline use
        ``<step>__<param>`` keys. It must not set ``epsilon``, ``accountant``,
        ``random_state`` or ``classes`` of the private step (ValueError). Fixed in advance, not
        chosen by looking at the private data.

        None (the default grid): the candidates are ``c`` times the alpha the
        alpha rule (``alpha="auto"``) gives the very fit the candidate is used
        in, for ``c`` in ``SAFE_MULTIPLIERS = (0.1, 1, 10)`` with ``"safe"``
        (``DEFAULT_ALPHA_MULTIPLIERS = (1/3, 1, 3)`` with the other methods): its
        own training rows, the model's own number of features (after
        data-independent pipeline steps) and its own epsilon (the per-run
        epsilon of ``"repeat"``, ``epsilon / 3`` of ``"random-stopping"``, the
        part's rows of ``"disjoint"``), all public. ``c = 1`` is the rule
        itself. Only the private step's alpha changes; its other parameters
        are the estimator's. ``candidate_params_`` and ``best_params_`` hold the
        numeric alphas (so ``best_params_`` can be passed to ``set_params``),
        ``alpha_multipliers_`` and ``best_alpha_multiplier_`` the factors.
        Refused (free) for a private step without the alpha rule. What to
        expect: the safe search keeps the rule's alpha unless another is far
        better, and its public plan says before spending when it cannot tell
        (for a grid of alphas, nearly always below ``n epsilon`` in the hundreds
        of thousands). With the other methods, ``m`` candidates pay for their
        selection with about half the epsilon per run, and the rule is already near the best alpha
        on the benchmark families, so at equal total budget the default search
        was *less* accurate than one fit of the rule in most cells of ``python
        -m benchmarks defaults``. The rule's own bound says why: a budget
        split by 2 doubles it, while an alpha 3 times off costs a factor 1.67,
        so even a perfect selection wins only where the best alpha is about 4
        times from the rule's (4.7 with this grid, whose outer candidates are
        then off themselves; 2.2 to 3.8 for output perturbation). Search with
        a wide grid when the rule may be that far off for your data
        (``docs/grid_search.rst``, "What a search can gain: the rule's bound").
    epsilon : float, default=1.0
        Privacy cost of the search, > 0 and finite. ``"disjoint"``: each candidate
        is trained at ``epsilon`` and the selection is made at ``epsilon``.
        ``"random-stopping"``: every run trains and scores at ``epsilon / 3``.
    refit : bool, default=False
        False: release the chosen model (``"disjoint"``: trained on ``n / (m +
        1)`` rows; ``"random-stopping"``: on the training part), total cost
        ``epsilon``. True: retrain the chosen parameters on all rows at
        ``epsilon`` (total cost ``2 * epsilon``). ``"safe"`` always refits
        within ``epsilon`` and refuses ``True`` (free); ``"auto"`` with ``True``
        is random stopping (or Algorithm 4).
    accountant : BudgetAccountant or None, default=None
        Ledger charged once per search; None means
        :func:`dpsk.default_accountant` at fit time. The budget is checked before
        any data is read, and spent once the input has passed the domain checks:
        a search that fails after that has still read the data, and is charged.
    n_jobs : int or None, default=None
        joblib workers. ``"disjoint"``: one task per candidate fit.
        ``"random-stopping"``: the runs are dealt into exactly
        ``joblib.effective_n_jobs(n_jobs)`` tasks, whatever their number.
    random_state : int or None, default=None
        None: the split comes from a public generator with its own fresh OS
        entropy, and the selection and every candidate's noise from the operating
        system's secure generator. An int makes everything reproducible, for
        tests and documentation only: a search whose seed is known is not
        private. Generators, ``RandomState`` and ``SeedSequence`` objects are
        refused, because the fitted search would carry them.
    allow_learned_steps : bool, default=False
        Run even if a candidate pipeline has a step before the private one that
        learns from the data (reported by :func:`dpsk.check_pipeline`). Such a
        step's statistics are released without noise, so the search is then not
        differentially private; the default refuses before reading any data.
    method : {"auto", "safe", "disjoint", "random-stopping", "repeat"}, default="auto"
        The tuning algorithm (see above); ``"auto"`` is ``"safe"`` without
        ``refit``. The benchmarks (``python -m benchmarks search``, ``tuning``
        and ``repeat``, ``benchmarks/README.md``) compare them at equal total
        cost.
    stop_probability : float in (0, 1] or None, default=None
        ``gamma`` of ``"random-stopping"``: the expected number of runs is
        ``1 / gamma``. None means ``1 / (10 m)``. The guarantee does not depend
        on it. Ignored by ``"disjoint"``.
    validation_fraction : float in (0, 1), default=0.1
        Share of the rows ``"random-stopping"`` and ``"repeat"`` score on (at
        least one row, at most ``n - 1``); the runs train on the others.
        Ignored by ``"safe"`` and ``"disjoint"``, whose validation part is one
        of ``m + 1`` equal parts.
    delta : float in [0, 1) or None, default=None
        ``"repeat"`` and ``"safe"``: the total delta of the search (None: the
        largest candidate ``delta``). ``"repeat"``: with ``delta > 0`` pure
        candidates are accounted with Renyi DP too, which can allow a larger
        per-run epsilon. ``"safe"``: candidates with ``delta > 0`` run at the
        share of it their fit gets; pure candidates stay pure.
    cannot_pay : {"warn", "fit-default"}, default="warn"
        ``"safe"`` only: what to do when the public plan says the selection
        cannot pay (a :class:`SearchCannotPayWarning` is issued before anything
        is spent either way). ``"warn"``: search anyway at the smallest share
        (1%), so the search returns the default refitted at 99% of the budget
        unless a candidate is far better. ``"fit-default"``: fit the untuned
        default on all rows at the whole budget.
    selection_share : float in (0, 1) or None, default=None
        ``"safe"`` only: the share of the budget the selection gets. None: the
        plan's public rule (``_safe.plan_safe``).

    Attributes
    ----------
    best_estimator_ : estimator
        The released model: the chosen candidate (``refit=False``) or its
        retrained version (``refit=True``; ``"safe"``: always the chosen
        candidate refitted on all rows at ``(1 - s) epsilon``). Its ``accountant`` is reset to this
        search's ``accountant``, so refitting it charges the user's ledger, and its
        ``random_state`` and ``classes`` to the inner estimator's own values.
    best_params_ : dict
        Parameters of the chosen candidate (with the default grid: the numeric
        ``alpha`` the released model was fitted with).
    best_index_ : int
        Index of the chosen candidate in ``candidate_params_``.
    candidate_params_ : list of dict
        All candidates, in ``ParameterGrid`` order (public: fixed before the
        data; with the default grid, the numeric alphas, functions of the
        public sizes and budget).
    alpha_multipliers_ : tuple of float or None
        The default grid's multiples of the rule's alpha (None for a given grid).
    best_alpha_multiplier_ : float or None
        The chosen candidate's multiple (None for a given grid); part of the
        private selection, like ``best_index_``.
    classes_ : ndarray of shape (n_classes,)
        Class labels of ``best_estimator_``.
    n_features_in_ : int
        Number of features seen in fit.
    best_score_ : float
        ``"random-stopping"`` and ``"repeat"``: the chosen run's noisy validation accuracy
        (noisy count of correct predictions divided by the validation size; it
        can fall outside [0, 1]). Private, part of the release; an optimistic
        estimate, being the best of several noisy scores.
    selection_share_ : float
        ``"safe"``: the selection's share of the budget (0 when the default was
        fitted instead, ``cannot_pay="fit-default"``). Public.
    default_index_ : int
        ``"safe"``: the untuned default's index in ``candidate_params_``. Public.
    privacy_spent_ : tuple of (float, float)
        ``(epsilon, 0.0)``, or ``(2 * epsilon, 0.0)`` with ``refit=True`` and more
        than one candidate; ``(epsilon, delta)`` with ``"repeat"``, and with
        ``"safe"`` when a candidate has ``delta > 0`` (one event for the
        selection and the refit together).
    privacy_event_ : PrivacyEvent
        What the ledger recorded (a ``RepeatAndSelectEvent`` with ``"repeat"``).

    Notes
    -----
    * One candidate: there is nothing to select. The search warns and trains it
      on all rows at ``epsilon`` (cost ``epsilon``, whatever ``refit`` says).
    * Size check: ``"disjoint"`` and ``"safe"`` need at least ``m + 1`` rows and
      ``"random-stopping"`` at least 2 (checks on ``n`` and ``m`` only, made
      before anything is spent). Parts are not checked for
      classes: the classes are declared to every candidate, so a part without
      some class still fits (its model of that class is mostly noise).
    * No stratification. A split that balances labels across parts is a function
      of the labels, so which part a row falls into would depend on other rows'
      labels: changing one row's label could move several other rows between
      parts, and the parts of two neighbouring data sets would differ in more
      than one row, which the parallel-composition argument above does not cover.
      The random split is data-independent and keeps the guarantee exact.

    See Also
    --------
    sklearn.model_selection.GridSearchCV : the non-private search. Used with dpsk
        estimators it charges every fit (``m * cv + 1`` fits) and its selection
        by the best cross-validated score is not private at all.

    Examples
    --------
    >>> from dpsk import BudgetAccountant, DPLogisticRegression
    >>> from dpsk.datasets import load_adult
    >>> from dpsk.model_selection import DPGridSearch
    >>> X, y = load_adult(return_X_y=True, preprocess=True)
    >>> acc = BudgetAccountant(epsilon=1.0)
    >>> search = DPGridSearch(DPLogisticRegression(fit_intercept=False, classes=[0, 1]),
    ...                       {"alpha": [1e-4, 1e-3, 1e-2, 1e-1]}, epsilon=1.0,
    ...                       accountant=acc, random_state=0).fit(X, y)
    >>> acc.total()
    (1.0, 0.0)

    The default grid, around the alpha rule (a second search, a second epsilon):

    >>> default = DPGridSearch(DPLogisticRegression(classes=[0, 1]), epsilon=1.0,
    ...                        random_state=0, accountant=BudgetAccountant()).fit(X, y)
    >>> default.alpha_multipliers_
    (0.1, 1.0, 10.0)
    >>> default.default_index_
    1
    """

    _parameter_constraints = {
        "estimator": [HasMethods(["fit", "predict"])],
        "param_grid": [dict, list, None],
        "epsilon": [Interval(Real, 0, np.inf, closed="neither")],
        "refit": ["boolean"],
        "accountant": [BudgetAccountant, None],
        "n_jobs": [Integral, None],
        "random_state": [Interval(Integral, 0, None, closed="left"), None],
        "allow_learned_steps": ["boolean"],
        "method": [StrOptions({"auto", "safe", "disjoint", "random-stopping", "repeat"})],
        "delta": [Interval(Real, 0, 1, closed="left"), None],
        "stop_probability": [Interval(Real, 0, 1, closed="right"), None],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither")],
        "cannot_pay": [StrOptions({"warn", "fit-default"})],
        "selection_share": [Interval(Real, 0, 1, closed="neither"), None],
    }

    def __init__(self, estimator, param_grid=None, *, epsilon=1.0, refit=False, accountant=None,
                 n_jobs=None, random_state=None, allow_learned_steps=False,
                 method="auto", stop_probability=None, validation_fraction=0.1,
                 delta=None, cannot_pay="warn", selection_share=None):
        self.estimator = estimator
        self.param_grid = param_grid
        self.epsilon = epsilon
        self.refit = refit
        self.accountant = accountant
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.allow_learned_steps = allow_learned_steps
        self.method = method
        self.stop_probability = stop_probability
        self.validation_fraction = validation_fraction
        self.delta = delta
        self.cannot_pay = cannot_pay
        self.selection_share = selection_share

    # -- candidates -----------------------------------------------------------------
    def _multipliers(self):
        """The default grid's multipliers of the rule's alpha, or None for a given grid."""
        if self.param_grid is not None:
            return None
        return SAFE_MULTIPLIERS if self._is_safe() else DEFAULT_ALPHA_MULTIPLIERS

    def _is_safe(self):
        """Whether the method is the safe search (``"auto"`` without ``refit``); reads
        the parameters only, not the candidates."""
        return self.method == "safe" or (self.method == "auto" and not self.refit)

    def _default_candidates(self, prefix, final):
        """``param_grid=None``: the rule's alpha (``"auto"``) once per multiplier.

        The numeric alpha of each candidate is set for each fit by
        :meth:`_concrete`. Refused (free) for a private step with no alpha rule.
        """
        params = final.get_params(deep=False)
        if not ("alpha" in params and hasattr(final, "_resolve_alpha")
                and hasattr(final, "_make_loss") and "fit_intercept" in params):
            raise ValueError(
                f"param_grid=None tunes the multiple of the alpha rule's alpha (alpha="
                f"'auto'), which {type(final).__name__} does not have. Pass a param_grid.")
        return [{prefix + "alpha": "auto"} for _ in self._multipliers()]

    def _default_index(self, candidates):
        """The untuned default's index among ``candidates`` (safe search).

        The default grid's is the rule itself (multiplier 1). In a given grid it
        is the first candidate that leaves the inner estimator as it is; the
        safe search puts the estimator itself first when no candidate does
        (:meth:`_candidate_params`). Parameters only.
        """
        if self.param_grid is None:
            return self._multipliers().index(1.0)
        own = self.estimator.get_params(deep=True)
        for index, params in enumerate(candidates):
            if all(name in own and _same_value(value, own[name])
                   for name, value in params.items()):
                return index
        return None

    def _concrete(self, candidates, n_rows, epsilon, classes, widths, alphas=None):
        """The parameters the candidates are fitted with, on ``n_rows`` rows at
        ``epsilon``: a given grid's as they are; the default grid's with the
        numeric alpha, ``multiplier`` times the rule's for this very fit (public
        sizes and budget only; ``alphas``: already computed, by the repeat plan).

        ``n_rows`` is an int or one per candidate.
        """
        multipliers = self._multipliers()
        if multipliers is None:
            return [dict(p) for p in candidates]
        rows = [n_rows] * len(candidates) if np.isscalar(n_rows) else list(n_rows)
        out = []
        with rule_cache():  # the candidates differ by their multiplier only
            for i, params in enumerate(candidates):
                prefix, final = _private_final_step(
                    self._candidate(params))
                delta = final.get_params(deep=False).get("delta", 0.0)
                alpha = alphas[i] if alphas else rule_alpha(
                    final, rows[i], widths[i], len(classes), epsilon, delta, multipliers[i])
                out.append({**params, prefix + "alpha": alpha})
        return out

    def _candidate_params(self):
        """The candidate list, after rejecting grids that set the search's own parameters."""
        memo = _memo((id(self), "candidates"), self._candidate_params_uncached)
        return [dict(p) for p in memo]

    def _candidate_params_uncached(self):
        prefix, final = _private_final_step(self.estimator)
        if self.param_grid is None:
            return self._default_candidates(prefix, final)
        candidates = list(ParameterGrid(self.param_grid))
        if not candidates:
            raise ValueError("param_grid yields no candidates.")
        reserved = {prefix + name for name in _RESERVED}
        for params in candidates:
            bad = sorted(reserved.intersection(params))
            if bad:
                raise ValueError(
                    f"param_grid must not set {bad}: DPGridSearch sets the inner "
                    "estimator's epsilon, accountant, random_state and classes itself "
                    "(tune the search's epsilon by choosing it, not by searching over it)."
                )
        if self._is_safe() and self._default_index(candidates) is None:
            # The untuned default is always a candidate of the safe search: the
            # estimator as given, first.
            candidates = [{}] + candidates
        return candidates

    def _candidate(self, params):
        """A copy of the inner estimator with ``params``; estimators in ``params`` (a
        grid may swap a step) are copied too, so that nothing the search sets on
        its candidates reaches the objects of the user's grid."""
        return clone(self.estimator).set_params(**{
            name: clone(value) if hasattr(value, "get_params") and not isinstance(value, type)
            else value for name, value in params.items()})

    def _make_candidate(self, params, random_state, classes=None, epsilon=None, delta=None):
        """A fresh inner estimator with ``params``, ``epsilon`` (default: the
        search's), a throwaway ledger, ``random_state`` and (when given) the
        declared ``classes``; ``delta`` (when given) replaces the private step's
        own delta if that is positive (the safe search shares its delta)."""
        estimator = self._candidate(params)
        prefix, final = _private_final_step(estimator)  # the grid may replace the step
        if delta is not None and _own_delta(final) > 0:
            estimator.set_params(**{prefix + "delta": delta})
        # In memory only: pickled to a worker it writes no journal file.
        settings = _run_settings(estimator, random_state, ScratchLedger())
        settings[prefix + "epsilon"] = self.epsilon if epsilon is None else epsilon
        if classes is not None:
            settings[prefix + "classes"] = classes
        return estimator.set_params(**settings)

    def _refuse_learned_steps(self, candidates):
        """Refuse (free: parameters only) candidates whose pipeline learns before the
        private step, unless the user opted out."""
        if self.allow_learned_steps:
            return
        for index, params in enumerate(candidates):
            learned = _learned_steps(self._candidate(params))
            if learned:
                raise ValueError(
                    f"Candidate {index} ({params}) has pipeline steps that learn from the "
                    f"data before the private step: {learned}. Their fitted statistics "
                    "would be released without noise, so DPGridSearch refuses to run. "
                    "Replace them with data-independent steps (dpsk.preprocessing), or "
                    "pass allow_learned_steps=True to run without a guarantee for them."
                )

    def _refuse_printing(self, candidates):
        """Refuse (free: parameters only) candidates that are set to print as they fit.

        Lines printed by inner fits would count the runs of random stopping (a
        secret) and can depend on the data. Everything an inner fit prints is
        also discarded (:func:`dpsk._silence.muted`); a ``verbose`` setting is
        refused so that the user learns why nothing appears.
        """
        for index, params in enumerate(candidates):
            estimator = self._candidate(params)
            printing = sorted(
                name for name, value in estimator.get_params(deep=True).items()
                if name.rpartition("__")[2] in _PRINTING_PARAMS and _is_set(value)
            )
            if printing:
                raise ValueError(
                    f"Candidate {index} has {printing} set: DPGridSearch refuses inner "
                    "estimators that print as they fit, because the lines printed would "
                    "reveal how many runs the search made (a secret its guarantee needs) "
                    "and can depend on the data. Set them to 0 or False."
                )

    def _inner_cost(self, estimator):
        """The (epsilon, delta) one fit of ``estimator`` declares, checked against ours."""
        _, final = _private_final_step(estimator)
        inner_eps, inner_delta = final._privacy_cost()
        if not math.isclose(inner_eps, self.epsilon, rel_tol=_COST_RTOL):
            raise ValueError(
                f"The inner estimator {type(final).__name__} declares a cost of "
                f"epsilon={inner_eps!r} per fit at epsilon={self.epsilon!r}; DPGridSearch "
                "needs inner estimators whose cost is their epsilon parameter."
            )
        return inner_eps, inner_delta

    def _preprocessing_epsilon(self):
        """Per candidate, the epsilon its private preprocessing spends in one run.

        Every run (every part of ``"disjoint"``, every run of the others, the
        refit) refits the candidate's whole pipeline, private bounds included,
        on its own rows, at the steps' own epsilons. Pure steps only (their
        events are pure): a step with ``delta > 0`` is refused (free).
        """
        out = []
        for params in self._candidate_params():
            estimator = self._candidate(params)
            steps = dict(private_steps(estimator))
            total = 0.0
            for path in _preprocessing_paths(estimator):
                event = steps[path]._privacy_event()
                if event.delta > 0:
                    raise ValueError(
                        f"Step {path!r} has delta > 0: DPGridSearch accounts for private "
                        "preprocessing with pure epsilon only. Nothing was spent.")
                total += event.epsilon
            out.append(total)
        return out

    def _privacy_cost(self):
        """The search's cost with its private preprocessing: ``epsilon`` plus what the
        runs' private bounds spend, composed as the method composes its runs.

        ``"safe"``: a row of a training part changes its candidate's fit, bounds
        included (``s epsilon + b``), a row of the validation part only the
        selection's counts (``s epsilon``), and the refit refits the bounds on all
        rows: ``+ 2 b`` (``+ b`` when it fits the default alone, see
        :meth:`_validate_input`). ``"disjoint"``: the parts are disjoint, so the
        bounds of all the parts cost what one part's do (``+ b``), and a refit
        refits them (``+ 2 b``).
        ``"random-stopping"``: a run with the bounds is ``(eps0 + b)``-DP, and
        the theorem triples it (``+ 3 b``; a refit adds ``b``). ``"repeat"``:
        each candidate's run curve gets the bounds' pure component; the plan
        (after validation, when ``n`` is known) gives the event, see
        :meth:`_plan`. ``b`` is the largest over the candidates.
        """
        return _memo((id(self), "cost"), self._privacy_cost_uncached)

    def _privacy_cost_uncached(self):
        epsilon, delta = self._search_cost()
        extra = max(self._preprocessing_epsilon())
        if extra == 0 or len(self._candidate_params()) == 1:
            return epsilon + extra, delta
        method = self._method()
        if method == "safe":
            return epsilon + 2.0 * extra, delta
        if method == "disjoint":
            return epsilon + (2.0 if self.refit else 1.0) * extra, delta
        if method == "random-stopping":
            return epsilon + (4.0 if self.refit else 3.0) * extra, delta
        return epsilon, delta  # repeat: the planned event (see _plan)

    def _search_cost(self):
        """The search's own ``(epsilon, delta)``, without private preprocessing."""
        epsilon, _ = _validate_cost(self.epsilon, 0.0)
        if epsilon == 0:
            raise ValueError("epsilon must be > 0, got 0.")
        candidates = self._candidate_params()
        delta = max(self._inner_cost(self._make_candidate(p, None))[1] for p in candidates)
        if self._method() == "repeat" and len(candidates) > 1:
            return self._repeat_cost(epsilon, delta)
        if self._method() == "safe":
            return epsilon, self._safe_delta(delta)
        if self._method() == "random-stopping" and delta > 0:
            raise ValueError(
                "method='random-stopping' needs pure epsilon-DP inner estimators (delta=0): "
                "its guarantee (Liu and Talwar 2019, Theorem 3.4 without a cap) holds for "
                f"pure DP runs only; the inner estimator declares delta={delta!r}. Use "
                "method='disjoint' or an inner estimator with delta=0."
            )
        if self.refit and len(candidates) > 1:
            return 2.0 * epsilon, min(2.0 * delta, 1.0)
        return epsilon, delta

    def _safe_delta(self, inner_delta):
        """``method="safe"``: the search's total delta, checked for free.

        Candidates with ``delta > 0`` run at the share of it their fit gets;
        pure candidates stay pure.
        """
        return self._total_delta(
            "safe", inner_delta, "always refits the chosen candidate on all rows, within "
            "epsilon; use refit=False (refit=True would spend a second epsilon).")

    def _total_delta(self, method, inner_delta, no_refit):
        """The total delta of a method whose release spends one ``epsilon`` whatever
        ``refit`` (``"repeat"``, ``"safe"``): the search's ``delta`` if given, else
        the largest candidate delta. Refused for free: ``refit=True`` (the reason
        is ``no_refit``) and a total ``delta=0`` with an approximate candidate."""
        if self.refit:
            raise ValueError(f"method={method!r} {no_refit}")
        delta = inner_delta if self.delta is None else float(self.delta)
        if delta == 0 and inner_delta > 0:
            raise ValueError(
                f"method={method!r} with delta=0 needs pure candidates (delta=0); some "
                "candidate has delta > 0. Give the search a total delta > 0.")
        return delta

    def _method(self):
        """The method ``"auto"`` stands for: a public rule of the parameters.

        Without ``refit``: ``"safe"``. The untuned default is one of its
        candidates and is kept unless the validation part shows another one
        clearly better, the selection takes a small share of the budget and the
        chosen candidate is refitted on all rows with the rest: at equal
        budget it stays within noise of the untuned default where the other
        methods lost to it in most cells of the benchmarks, for their
        selection halved the budget of the released fit
        (``docs/grid_search.rst``, "The safe search").

        With ``refit=True`` (a search at ``epsilon``, then a refit at a second
        ``epsilon``), the earlier rule: random stopping, or Algorithm 4 when a
        candidate has ``delta > 0`` (random stopping needs pure runs).
        """
        if self.method != "auto":
            return self.method
        if not self.refit:
            return "safe"
        pure = all(
            _private_final_step(self._candidate(p))[1]
            .get_params(deep=False).get("delta", 0.0) == 0
            for p in self._candidate_params())
        return "random-stopping" if pure else "disjoint"

    def _repeat_cost(self, epsilon, inner_delta):
        """``method="repeat"``: the search's total ``(epsilon, delta)``, checked for free."""
        return epsilon, self._total_delta(
            "repeat", inner_delta, "releases the best run's model and does not refit; use "
            "refit=False (the runs train on all but the validation rows).")

    def _spend(self, accountant, event):
        # The safe search says, before anything is spent, when it cannot pay (a
        # fixed text of public quantities: its plan, made after validation).
        safe = self.__dict__.get("_pending_safe")
        if safe is not None and not safe.pays:
            warnings.warn(_cannot_pay_message(safe, self.cannot_pay),
                          SearchCannotPayWarning, stacklevel=5)
        # The repeat plan depends on n (public), known only after validation: its
        # event replaces the (epsilon, delta) placeholder checked before.
        planned = self.__dict__.pop("_planned_event", None)
        super()._spend(accountant, event if planned is None else planned)
        self._spent_event = event if planned is None else planned

    # -- fit ------------------------------------------------------------------------
    def fit(self, X, y, sample_weight=None, **fit_params):
        """Run the private search and charge its cost to the accountant once.

        The budget is checked before any data is read, and spent once ``X`` and
        ``y`` have passed the domain checks of every candidate.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,) or None, default=None
            Row weights in [0, 1] for a final step that takes them
            (docs/privacy.rst, "Weights"), split with the rows and passed to
            every candidate's fit; the held-out scores count rows unweighted.
            Refused for free when the final step takes no weights.
        **fit_params : dict
            None accepted: any other keyword is refused (``TypeError``, nothing
            spent).

        Returns
        -------
        self : object

        Raises
        ------
        ValueError, TypeError
            Before anything is spent: bad parameters, candidates with learned
            pipeline steps or set to print (``verbose``), fewer than ``m + 1``
            rows, input outside the domain.
        dpsk.BudgetExceededError
            Before anything is spent.
        dpsk.PrivateFitError
            If the search fails after the data was read (charged).
        """
        refuse_fit_params(self, fit_params)
        validate_random_state(self.random_state)
        self._validate_params()
        with _one_fit():
            return self._fit(X, y, sample_weight)

    def _fit(self, X, y, sample_weight):
        """:meth:`fit` once the parameters are valid."""
        # The released model gets the inner estimator's own random_state back, so
        # it must obey the same rule (no Generator riding along in the pickle).
        _, final = _private_final_step(self.estimator)
        validate_random_state(final.get_params(deep=False)["random_state"],
                              name="the inner estimator's random_state")
        candidates = self._candidate_params()
        for index, params in enumerate(candidates):
            _check_candidate(index, self._make_candidate(params, None))
        self._refuse_learned_steps(candidates)
        self._refuse_printing(candidates)
        warn_if_classes_undeclared(final.get_params(deep=False)["classes"])
        warn_if_column_vector(y)
        if len(candidates) == 1:  # depends on the grid only
            warnings.warn(
                "param_grid has a single candidate: there is nothing to select, so "
                "DPGridSearch trains it on all rows at epsilon (cost epsilon).",
                UserWarning,
                stacklevel=2,
            )
        self._fit_with_budget(self._validate_input, self._release, X, y, sample_weight)
        self.privacy_event_ = self.__dict__.pop("_spent_event")
        # A planned event (repeat, a safe search that fits the default) may differ
        # from the placeholder pair the budget was checked with.
        self.privacy_spent_ = (self.privacy_event_.epsilon, self.privacy_event_.delta)
        return self

    def _validate_input(self, X, y, sample_weight=None):
        """Domain checks, free: shapes, then each candidate's own checks; the classes.

        Muted: the checks fit clones of the earlier pipeline steps, and what they
        print or log could depend on the data.
        """
        with muted():
            return self._validate_input_muted(X, y, sample_weight)

    def _validate_input_muted(self, X, y, sample_weight=None):
        candidates = self._candidate_params()
        check_not_datetime(X)
        X, y = values_withheld(_check_shapes, X, y)
        _, final = _private_final_step(self.estimator)
        classes = resolve_classes(y, final.get_params(deep=False)["classes"])
        n, m = y.shape[0], len(candidates)
        if m > 1 and self._method() == "random-stopping" and n < 2:  # n only
            raise ValueError(
                "DPGridSearch with method='random-stopping' splits the data into a "
                f"training and a validation part and needs at least 2 rows; got {n}."
            )
        if m > 1 and self._method() in ("disjoint", "safe") and n < m + 1:  # n and m only
            raise ValueError(
                f"DPGridSearch with {m} candidates splits the data into {m + 1} parts "
                f"and needs at least {m + 1} rows; got {n}. Use fewer candidates."
            )
        # The number of columns each candidate's private step sees (public metadata).
        widths = [values_withheld(_validate_through, self._make_candidate(p, None, classes),
                                  X, y) for p in candidates]
        if self._multipliers() is not None and None in widths:
            raise ValueError("param_grid=None needs the number of columns of X.")
        if m > 1 and self._method() == "repeat":
            # Kept until the release (planning solves for the per-run epsilon).
            self._pending_plan = self._plan(n, classes, candidates, widths)
            self._planned_event = self._pending_plan.event
        if m > 1 and self._method() == "safe":
            # Public (n, the widths, the budget, the grid): kept for the warning
            # before the spend (see _spend) and for the release.
            self._pending_safe = self._plan_safe(n, classes, candidates, widths)
            if not self._pending_safe.pays and self.cannot_pay == "fit-default":
                self._planned_event = self._default_fit_event(
                    candidates, self._pending_safe.default_index, classes)
        return X, y, classes, widths, _checked_weights(self.estimator, sample_weight, n)

    # -- the safe search ----------------------------------------------------------
    def _default_fit_event(self, candidates, index, classes):
        """The event of ``cannot_pay="fit-default"``: the default's model
        (``candidates[index]``) at the search's own budget, and once its private
        preprocessing (``+ b``, pure)."""
        epsilon, delta = self._search_cost()
        _, final = _private_final_step(self._make_candidate(
            candidates[index], None, classes, epsilon=epsilon, delta=delta))
        event = final._privacy_event()
        extra = self._preprocessing_epsilon()[index]
        if extra == 0:
            return event
        if event.delta == 0:
            return PureDPEvent(event.epsilon + extra)
        return ApproxDPEvent(event.epsilon + extra, event.delta)

    def _plan_safe(self, n, classes, candidates, widths):
        """The public plan of ``method="safe"`` (``_safe.plan_safe``): the selection's
        share of the budget from the default's rule bound on all ``n`` rows, the
        default's head start, and whether the selection can pay. The model's own
        budget is shared; private preprocessing runs at its own epsilon."""
        epsilon, delta = self._search_cost()
        index = self._default_index(candidates)
        prefix, final = _private_final_step(self._candidate(candidates[index]))
        gaussian = _own_delta(final) > 0

        def bound(rows, eps, dlt, alpha):
            return rule_bound(final, rows, widths[index], len(classes), eps,
                              dlt if gaussian else 0.0, alpha)

        alpha_only = self.param_grid is None or all(
            set(p) <= {prefix + "alpha"} for p in candidates)
        return plan_safe(n, len(candidates), index, epsilon, delta, bound, alpha_only,
                         self.selection_share)

    def _safe_multipliers(self, steps, classes, widths, plan, n):
        """Per candidate, the multiple of its rule its selection fit runs at.

        The default grid's own multipliers. A given candidate with a numeric
        alpha ``a`` (its own or the estimator's) is refitted at ``a``, which is
        ``a / rule`` times the rule of the refit (``n`` rows at the refit's
        budget); its selection fit runs at that multiple of the rule of *its*
        fit, so that the choice made on a part at a share of the budget
        transfers to the refit (``docs/grid_search.rst``, "The safe search").
        ``alpha="auto"`` is the multiple 1. None: fitted as given (a step
        without a rule, or without a known width).
        """
        if self.param_grid is None:
            return list(self._multipliers())
        out = []
        for (_, final, gaussian), width in zip(steps, widths):
            alpha = final.get_params(deep=False).get("alpha")
            if width is None or not hasattr(final, "_resolve_alpha") or alpha is None:
                out.append(None)
            elif isinstance(alpha, str):
                out.append(1.0)
            else:
                rule = rule_alpha(final, n, width, len(classes), plan.refit_epsilon,
                                  plan.refit_delta if gaussian else 0.0)
                out.append(float(alpha) / rule)
        return out

    @staticmethod
    def _with_alphas(candidates, steps, multipliers, n_rows, epsilon, delta, classes, widths):
        """The candidates' parameters for a fit on ``n_rows`` rows at ``(epsilon,
        delta)``: ``multiplier`` times the rule's alpha of that fit (public sizes
        only), or the parameters as given for a None multiplier."""
        out = []
        for params, (prefix, final, gaussian), multiplier, width in zip(
                candidates, steps, multipliers, widths):
            if multiplier is None:
                out.append(dict(params))
                continue
            alpha = rule_alpha(final, n_rows, width, len(classes), epsilon,
                               delta if gaussian else 0.0, multiplier)
            out.append({**params, prefix + "alpha": alpha})
        return out

    def _release_safe(self, X, y, classes, candidates, widths, weights=None):
        """The safe search (``_safe.py``): the selection at ``s epsilon`` on disjoint
        parts, the default ahead, then the chosen candidate refitted on all rows at
        ``(1 - s) epsilon``."""
        plan = self.__dict__.pop("_pending_safe", None) or self._plan_safe(
            y.shape[0], classes, candidates, widths)
        steps = [(prefix, final, _own_delta(final) > 0) for prefix, final in (
            _private_final_step(self._candidate(p)) for p in candidates)]
        with _TimeProgress("DPGridSearch"):  # elapsed seconds only, when tqdm is installed
            multipliers = self._safe_multipliers(steps, classes, widths, plan, y.shape[0])
            if not plan.pays and self.cannot_pay == "fit-default":
                # Announced before the spend (SearchCannotPayWarning): no selection.
                return self._fit_safe_default(X, y, classes, candidates, steps, multipliers,
                                              widths, plan, weights)
            index = self._safe_selection(X, y, classes, candidates, steps, multipliers,
                                         widths, plan, weights)
            # The refit: a given grid's parameters as they are, the default grid's
            # multiple of the rule of this fit.
            refit = self._with_alphas(
                candidates, steps, multipliers if self.param_grid is None
                else [None] * len(candidates), y.shape[0], plan.refit_epsilon,
                plan.refit_delta, classes, widths)
            best = self._make_candidate(refit[index], _derived_seed(self.random_state, 7),
                                        classes, epsilon=plan.refit_epsilon,
                                        delta=plan.refit_delta)
            _fit_in_one_process(best, X, y, weights)
        self._check_spent(best, plan.refit_epsilon, plan.refit_delta)
        fitted = self._fitted(best, refit, index)
        fitted.update(selection_share_=plan.share, default_index_=plan.default_index)
        return fitted

    def _safe_selection(self, X, y, classes, candidates, steps, multipliers, widths, plan,
                        weights):
        """The index the safe search refits: Algorithm 4's selection at the plan's share.

        Candidate ``i`` is fitted on part ``i`` at ``(s epsilon, s delta)``, at its
        multiple of the rule for ``n // (m + 1)`` rows (every part has that size
        or one more), and counts its mistakes on the last part; the exponential
        mechanism at ``s epsilon`` picks one, the default ``plan.bonus`` ahead.
        """
        seed = self.random_state
        # The split is public randomness (its own generator); sizes: plan.part_sizes.
        parts = _split_parts(y.shape[0], len(candidates) + 1, public_rng(seed))
        X_hold, y_hold = _safe_indexing(X, parts[-1]), y[parts[-1]]
        select = self._with_alphas(candidates, steps, multipliers, plan.part_sizes[-1],
                                   plan.select_epsilon, plan.select_delta, classes, widths)
        estimators = [self._make_candidate(p, _derived_seed(seed, 6, i), classes,
                                           epsilon=plan.select_epsilon,
                                           delta=plan.select_delta)
                      for i, p in enumerate(select)]
        results = _unwrap(Parallel(n_jobs=self.n_jobs)(
            delayed(_quietly)(
                _fit_and_count, est, _safe_indexing(X, part), y[part], X_hold, y_hold,
                _weights_for(est, weights, part))
            for est, part in zip(estimators, parts[:-1])
        ))
        for est, _ in results:
            self._check_spent(est, plan.select_epsilon, plan.select_delta)
        index = select_with_bonus([z for _, z in results], plan.default_index, plan.bonus,
                                  plan.select_epsilon, noise_source(seed))
        del results, estimators  # the counts and the parts' models are not released
        return index

    def _fit_safe_default(self, X, y, classes, candidates, steps, multipliers, widths, plan,
                          weights):
        """``cannot_pay="fit-default"`` where the plan cannot pay: the untuned default on
        all rows at the whole budget (the event was the default's, see _validate_input)."""
        epsilon, delta = self._search_cost()
        whole = self._with_alphas(candidates, steps, multipliers if self.param_grid is None
                                  else [None] * len(candidates), y.shape[0], epsilon, delta,
                                  classes, widths)
        index = plan.default_index
        best = self._make_candidate(whole[index], _derived_seed(self.random_state, 8), classes,
                                    epsilon=epsilon, delta=delta)
        _fit_in_one_process(best, X, y, weights)
        self._check_spent(best, epsilon, delta)
        fitted = self._fitted(best, whole, index)
        fitted.update(selection_share_=0.0, default_index_=index)
        return fitted

    def _plan(self, n, classes, candidates, widths):
        """The public plan of ``method="repeat"`` (sizes, budget and grid only)."""
        if n < 2:
            raise ValueError(
                "DPGridSearch with method='repeat' splits the data into a training and "
                f"a validation part and needs at least 2 rows; got {n}.")
        epsilon, delta = self._search_cost()
        n_val = min(max(int(round(self.validation_fraction * n)), 1), n - 1)
        steps = [_private_final_step(self._make_candidate(p, None, classes))
                 for p in candidates]
        if self._multipliers() is None:
            # A given grid may vary pipeline steps, and the plan's curves (in the
            # ledger) would then carry the width each candidate's steps make of X,
            # chosen or not: only a model's own X is read. The default grid varies
            # alpha alone, so its width is the released model's n_features_in_.
            widths = [w if not path else None for (path, _), w in zip(steps, widths)]
        plan = plan_repeat([final for _, final in steps], n - n_val, len(classes), epsilon,
                           delta, n_features=widths, multipliers=self._multipliers())
        return self._with_preprocessing(plan)

    def _with_preprocessing(self, plan):
        """The plan, its event charging each run's private preprocessing too.

        A run of candidate ``i`` refits its private bounds (pure, ``b_i``) before
        its model: its Renyi curve gains the pure component ``("pure", b_i)``.
        The scores' noise stays as planned (its curve was below the model's
        alone, so it is below the run's). The search's epsilon grows to what
        the augmented curves give at its delta.
        """
        extras = self._preprocessing_epsilon()
        if not any(extras):
            return plan
        candidates = tuple(comps + ((("pure", b, 1),) if b > 0 else ())
                           for comps, b in zip(plan.event.candidates, extras))
        old = plan.event
        epsilon = RepeatAndSelectEvent._epsilon_of(candidates, old.eta, old.gamma, old.delta)
        event = RepeatAndSelectEvent(candidates=candidates, eta=old.eta, gamma=old.gamma,
                                     delta=old.delta, claimed_epsilon=epsilon)
        return dataclasses.replace(plan, event=event)

    def _release_repeat(self, X, y, classes, candidates, widths, weights=None):
        """Papernot and Steinke's repeat-and-select (``_repeat.py``)."""
        seed = self.random_state
        plan = self.__dict__.pop("_pending_plan", None) or self._plan(
            y.shape[0], classes, candidates, widths)
        train, val = _score_split(y.shape[0], self.validation_fraction, public_rng(seed))
        X_val, y_val = _safe_indexing(X, val), y[val]
        # Each run of a candidate uses the same parameters: set them once.
        concrete = self._concrete(candidates, len(train), plan.run_epsilon, classes, widths,
                                  plan.alphas)

        def make(i, j):
            return self._make_candidate(concrete[i], _derived_seed(seed, 4, j), classes,
                                        epsilon=plan.run_epsilon)

        best, index, score = repeat_and_select(
            plan, make, (_safe_indexing(X, train), y[train],
                         _weights_for(self.estimator, weights, train)), (X_val, y_val),
            noise_source(seed))
        self._check_spent(best, plan.run_epsilon, 1.0)
        fitted = self._fitted(best, concrete, index)
        fitted["best_score_"] = score / len(val)
        return fitted

    def _release(self, data, *, epsilon, delta):
        """Run the search with everything printed or logged discarded (see ``_quietly``).

        The runs split the search's own budget (:meth:`_search_cost`); the
        charged ``epsilon`` also covers their private preprocessing.
        """
        epsilon, delta = self._search_cost()
        with muted():
            return self._release_muted(data, epsilon=epsilon, delta=delta)

    def _release_muted(self, data, *, epsilon, delta):
        X, y, classes, widths, weights = data
        candidates = self._candidate_params()
        m = len(candidates)
        seed = self.random_state

        def candidate(params, *key):
            return self._make_candidate(params, _derived_seed(seed, *key), classes)

        def concrete(n_rows, eps):
            return self._concrete(candidates, n_rows, eps, classes, widths)

        if m == 1:
            params = concrete(y.shape[0], epsilon)
            best = candidate(params[0], 0)
            _fit_in_one_process(best, X, y, weights)
            self._check_spent(best, epsilon, delta)
            return self._fitted(best, params, 0)
        if self._method() == "random-stopping":
            return self._release_random_stopping(X, y, classes, candidates, epsilon, delta,
                                                 widths, weights)
        if self._method() == "repeat":
            return self._release_repeat(X, y, classes, candidates, widths, weights)
        if self._method() == "safe":
            return self._release_safe(X, y, classes, candidates, widths, weights)

        # The split is public randomness: its own generator, never the noise source.
        parts = _split_parts(y.shape[0], m + 1, public_rng(seed))
        held_out = parts[-1]
        X_hold, y_hold = _safe_indexing(X, held_out), y[held_out]
        fit_eps, fit_delta = (epsilon / 2.0, delta / 2.0) if self.refit else (epsilon, delta)
        # Part i's size is public (a function of n and m).
        params = concrete([len(part) for part in parts[:-1]], fit_eps)
        estimators = [candidate(p, 1, i) for i, p in enumerate(params)]
        with _TimeProgress("DPGridSearch"):  # elapsed seconds only, when tqdm is installed
            results = _unwrap(Parallel(n_jobs=self.n_jobs)(
                delayed(_quietly)(
                    _fit_and_count, est, _safe_indexing(X, part), y[part], X_hold, y_hold,
                    _weights_for(est, weights, part)
                )
                for est, part in zip(estimators, parts[:-1])
            ))
        # ``epsilon`` is the search's total cost; each step (the parallel fits, the
        # selection, a refit) runs at the per-step epsilon, half of it with refit.
        fitted = [est for est, _ in results]
        for est in fitted:
            self._check_spent(est, fit_eps, fit_delta)
        index = _select_candidate([z for _, z in results], fit_eps, noise_source(seed))
        del results  # the counts are not private: keep them out of reach

        if self.refit:
            params = concrete(y.shape[0], fit_eps)
            best = candidate(params[index], 2)
            _fit_in_one_process(best, X, y, weights)
            self._check_spent(best, fit_eps, fit_delta)
        else:
            best = fitted[index]
        return self._fitted(best, params, index)

    def _release_random_stopping(self, X, y, classes, candidates, epsilon, delta, widths,
                                 weights=None):
        """Liu and Talwar's random stopping; ``epsilon`` is the total charged."""
        seed = self.random_state
        m = len(candidates)
        search_eps = epsilon / 2.0 if self.refit else epsilon
        run_eps = search_eps / RANDOM_STOPPING_FACTOR
        gamma = (default_stop_probability(m) if self.stop_probability is None
                 else float(self.stop_probability))
        noise = noise_source(seed)
        # Secret: the number of runs and their candidates (never stored).
        plan = random_stopping_plan(m, gamma, noise)
        # Public: which rows train and which score (its own generator).
        train, val = _score_split(y.shape[0], self.validation_fraction, public_rng(seed))
        X_train, y_train = _safe_indexing(X, train), y[train]
        X_val, y_val = _safe_indexing(X, val), y[val]
        concrete = self._concrete(candidates, len(train), run_eps, classes, widths)
        prototypes = [self._make_candidate(p, None, classes, epsilon=run_eps)
                      for p in concrete]
        # The runs are dealt round-robin into one task per worker, a number that
        # does not depend on K: joblib sees as many tasks, and starts as many
        # threads or processes, whatever the number of runs.
        n_tasks = max(int(effective_n_jobs(self.n_jobs)), 1)
        shares = [[] for _ in range(n_tasks)]
        for j, i in enumerate(plan):
            shares[j % n_tasks].append(
                (j, int(i), _derived_seed(seed, 3, j), _derived_seed(seed, 4, j)))
        del plan  # K and the candidates of the runs are secret
        # Elapsed seconds only (never a count of runs), when tqdm is installed.
        with _TimeProgress("DPGridSearch"):
            results = _unwrap(Parallel(n_jobs=self.n_jobs)(
                delayed(_quietly)(_best_of_runs, share, prototypes, run_eps,
                                  X_train, y_train, X_val, y_val,
                                  _weights_for(self.estimator, weights, train))
                for share in shares
            ))
        del shares
        # The first best over all runs: the highest score, then the earliest run.
        best_score, _, index, best = max((r for r in results if r is not None),
                                         key=lambda r: (r[0], -r[1]))
        del results  # the other runs' models and scores are not released
        self._check_spent(best, run_eps, 0.0)

        if self.refit:
            concrete = self._concrete(candidates, y.shape[0], search_eps, classes, widths)
            best = self._make_candidate(concrete[index], _derived_seed(seed, 2), classes)
            _fit_in_one_process(best, X, y, weights)
            self._check_spent(best, search_eps, delta)
        fitted = self._fitted(best, concrete, index)
        fitted["best_score_"] = best_score / len(val)
        return fitted

    @staticmethod
    def _check_spent(estimator, epsilon, delta):
        """Refuse to release if an inner fit spent more than the search charges for it."""
        _, final = _private_final_step(estimator)
        spent_eps, spent_delta = final.privacy_spent_
        if spent_eps > epsilon * (1 + 1e-9) or spent_delta > delta * (1 + 1e-9) + 1e-15:
            raise RuntimeError(
                f"An inner fit spent {final.privacy_spent_}, more than the "
                f"({epsilon}, {delta}) DPGridSearch accounts for it; nothing was released."
            )

    def _fitted(self, best, candidates, index):
        prefix, _ = _private_final_step(best)
        _, user_final = _private_final_step(self._candidate(candidates[index]))
        user_params = self._candidate(candidates[index]).get_params(deep=True)
        for path in _preprocessing_paths(best):  # the user's own ledger and seed back
            best.set_params(**{path + "__accountant": user_params[path + "__accountant"],
                               path + "__random_state": user_params[path + "__random_state"]})
        best.set_params(**{
            # Refitting the released model must charge the user's ledger, not the
            # throwaway one.
            prefix + "accountant": self.accountant,
            # The derived seed of a seeded search must not travel with the model;
            # put back the user's own settings.
            prefix + "random_state": user_final.get_params(deep=False)["random_state"],
            prefix + "classes": user_final.get_params(deep=False)["classes"],
        })
        multipliers = self._multipliers()
        fitted = {
            "best_estimator_": best,
            "best_index_": int(index),
            "best_params_": dict(candidates[index]),
            "candidate_params_": [dict(p) for p in candidates],
            "alpha_multipliers_": None if multipliers is None else tuple(multipliers),
            "best_alpha_multiplier_": None if multipliers is None else multipliers[index],
            "classes_": best.classes_,
            "n_features_in_": best.n_features_in_,
        }
        if hasattr(best, "feature_names_in_"):
            fitted["feature_names_in_"] = best.feature_names_in_
        return fitted

    # -- delegation -----------------------------------------------------------------
    def __sklearn_is_fitted__(self):
        return hasattr(self, "best_estimator_")

    def predict(self, X):
        """Predict with ``best_estimator_``."""
        check_is_fitted(self)
        return self.best_estimator_.predict(X)

    @available_if(_best_has("predict_proba"))
    def predict_proba(self, X):
        """Class probabilities of ``best_estimator_``."""
        return self.best_estimator_.predict_proba(X)

    @available_if(_best_has("predict_log_proba"))
    def predict_log_proba(self, X):
        """Log class probabilities of ``best_estimator_``."""
        return self.best_estimator_.predict_log_proba(X)

    @available_if(_best_has("decision_function"))
    def decision_function(self, X):
        """Decision function of ``best_estimator_``."""
        return self.best_estimator_.decision_function(X)

    def score(self, X, y, sample_weight=None):
        """Score of ``best_estimator_`` on ``(X, y)`` (accuracy for dpsk classifiers)."""
        check_is_fitted(self)
        if sample_weight is None:
            return self.best_estimator_.score(X, y)
        return self.best_estimator_.score(X, y, sample_weight=sample_weight)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        inner = get_tags(self.estimator)
        tags.input_tags.sparse = inner.input_tags.sparse
        tags.classifier_tags.poor_score = True
        return tags
