"""The budget of a whole pipeline: what its private steps cost, checked before any spends.

A pipeline may hold several private steps: private bounds
(:class:`dpsk.preprocessing.PrivateBoundsScaler`, also inside the schema
encoder) and the private model, or a private search. Each step checks its own
budget and domain before it spends, but the first step spends before the
later ones have looked at anything. :func:`check_before_fit` runs every check
of every step first, on a copy (``dpsk.pipeline._dry``), then checks the sum
of all the releases against each ledger under its own composition and filter
(:meth:`dpsk.BudgetAccountant.check_all`). Only then does a
:class:`~dpsk.PrivatePipeline` fit for real, so every refusal is free.

:func:`pipeline_cost` gives the same releases from the parameters alone (no
data): what one fit of the pipeline spends.
"""

import math
from dataclasses import dataclass

from sklearn.base import clone
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import Pipeline

from .._silence import silenced
from ._check import _parts, is_private_step
from ._dry import dry_run

__all__ = ["PipelineCost", "check_before_fit", "pipeline_cost", "private_steps"]


def _fitted_parts(obj):
    """``_parts``, but a fitted column transformer's fitted clones (``transformers_``)."""
    fitted = getattr(obj, "transformers_", None) if isinstance(obj, ColumnTransformer) else None
    if fitted is None:
        return _parts(obj)
    return [(name, part) for name, part, _ in fitted]


def private_steps(estimator, fitted=False):
    """``(path, step)`` of every private step of ``estimator``, in the order a fit runs them.

    A private step is a dpsk estimator (it charges a ledger): a private model,
    a private search, or private preprocessing such as
    :class:`~dpsk.preprocessing.PrivateBoundsScaler`, at any depth (in a
    pipeline, a column transformer, a feature union). Paths are the names
    ``set_params`` uses (``"tableencoder__numeric_private__bounds"``); a
    private ``estimator`` itself has the path ``""``. What a private step
    wraps (a search's candidates) is its own business and not listed.

    Parameters
    ----------
    estimator : estimator
    fitted : bool, default=False
        List the fitted steps (a column transformer fits clones of its parts).

    Returns
    -------
    steps : list of (str, estimator)
    """
    found = []

    def walk(path, obj):
        if is_private_step(obj):
            found.append((path, obj))
            return
        for name, part in (_fitted_parts(obj) if fitted else _parts(obj)):
            walk(f"{path}__{name}" if path else name, part)

    walk("", estimator)
    return found


@dataclass(frozen=True)
class PipelineCost:
    """The releases one fit of a pipeline makes, each with its ledger and event.

    Attributes
    ----------
    releases : tuple of (str, BudgetAccountant, PrivacyEvent)
        ``(path, ledger, event)`` per private step, in the order they spend
        (see :func:`private_steps` for the paths).
    """

    releases: tuple

    @property
    def events(self):
        """The events, in order."""
        return [event for _, _, event in self.releases]

    @property
    def epsilon(self):
        """The total epsilon by basic composition (the events' epsilons added up)."""
        return math.fsum(event.epsilon for event in self.events)

    @property
    def delta(self):
        """The total delta by basic composition."""
        return math.fsum(event.delta for event in self.events)

    def by_ledger(self):
        """``[(ledger, [events])]``: the releases grouped by the ledger they charge
        (two objects on one store or journal are one ledger)."""
        groups = {}
        for _, ledger, event in self.releases:
            key = ledger._identity() if hasattr(ledger, "_identity") else id(ledger)
            groups.setdefault(key, (ledger, []))[1].append(event)
        return list(groups.values())


def pipeline_cost(estimator):
    """What one fit of ``estimator`` spends, from its parameters alone.

    Every private step (:func:`private_steps`) validates its parameters and
    reports the event its fit records and the ledger it charges
    (``accountant=None``: the default ledger in force now). Nothing is
    fitted and no data is read. A private search's event can depend on the
    number of rows (``DPGridSearch(method="repeat")`` plans it then); here it
    is the search's ``(epsilon, delta)``. :func:`check_before_fit` gives the
    releases as the fit will make them.

    Parameters
    ----------
    estimator : estimator
        A pipeline (or any estimator) holding at least one dpsk estimator.

    Returns
    -------
    PipelineCost

    Raises
    ------
    ValueError
        If nothing in ``estimator`` is private, or a private step has a bad
        parameter (the message quotes parameters only).

    Examples
    --------
    >>> from dpsk import DPLogisticRegression
    >>> from dpsk.pipeline import make_private_pipeline, pipeline_cost
    >>> from dpsk.preprocessing import PrivateBoundsScaler
    >>> pipe = make_private_pipeline(PrivateBoundsScaler(epsilon=0.3),
    ...                              DPLogisticRegression(epsilon=0.7))
    >>> cost = pipeline_cost(pipe)
    >>> [path for path, _, _ in cost.releases], round(cost.epsilon, 12)
    (['privateboundsscaler', 'dplogisticregression'], 1.0)
    """
    steps = private_steps(estimator)
    if not steps:
        raise ValueError("The estimator has no dpsk estimator, so nothing in it is "
                         "differentially private and nothing is charged.")
    releases = []
    for path, step in steps:
        if hasattr(step, "_validate_params"):
            step._validate_params()
        releases.append((path, step._resolve_accountant(), step._privacy_event()))
    return PipelineCost(tuple(releases))


def dry_copy(estimator):
    """A copy of ``estimator`` to dry-run: unfitted, no cache, no parallel workers.

    A dry run is a context variable of the calling thread, so the copy runs
    every step in this thread (``n_jobs=None`` at every depth); it caches
    nothing (``memory=None``), since a cached stand-in must never be reused by
    the real fit.
    """
    copy = clone(estimator)
    params = copy.get_params(deep=True)
    off = {name: None for name, value in params.items()
           if name.rpartition("__")[2] in ("n_jobs", "memory") and value is not None}
    # Deepest first: a set_params on an outer step must not undo an inner one.
    for name in sorted(off, key=lambda n: -n.count("__")):
        copy.set_params(**{name: None})
    return copy


def run_dry(copy, X, y=None, **fit_params):
    """Fit ``copy`` (from :func:`dry_copy`) in a dry run; return its :class:`PipelineCost`.

    Everything the fit would refuse before spending is refused here, with the
    same exception; warnings are dropped (the real fit gives them).
    """
    with silenced(), dry_run() as planned:
        if getattr(copy, "_checks_itself", False):
            # A PrivatePipeline: fit as a Pipeline (its own fit would dry-run again).
            Pipeline.fit(copy, X, y, **copy._route_weights(fit_params))
        else:
            copy.fit(X, y, **fit_params)
    paths = {id(step): path for path, step in private_steps(copy, fitted=True)}
    return PipelineCost(tuple((paths.get(id(r.step), type(r.step).__name__.lower()),
                               r.accountant, r.event) for r in planned))


def check_before_fit(estimator, X, y=None, **fit_params):
    """Every refusal a fit of ``estimator`` could make, made before anything is spent.

    Fits a copy of ``estimator`` in a dry run: every step runs its own checks
    (parameters; for data-independent steps their whole fit, on the copy),
    every private step its fit protocol up to the spend (its parameters, its
    budget, its input domain: finite values, shapes, labels against the
    declared classes, weights) and records the release it would make instead
    of making it, handing the next step public stand-ins (private bounds:
    ``[0, 1]`` for every column). Then the releases of all the private steps
    together are checked against each ledger they charge, under its
    composition and filter (:meth:`dpsk.BudgetAccountant.check_all`).
    Nothing is spent, released or recorded; the estimator itself is not
    touched.

    :class:`dpsk.PrivatePipeline` runs this before its fit when it holds more
    than one private step, so that, for example, a label outside the model's
    declared classes is refused before the private bounds in front of it are
    charged. A private search uses it to check the candidates' pipelines.

    Parameters
    ----------
    estimator : estimator
        A pipeline (or a single estimator) holding dpsk estimators.
    X, y
        The data the fit would get.
    **fit_params
        As for the fit (``sample_weight=...``).

    Returns
    -------
    PipelineCost
        The releases the fit will make (a search's planned event included).

    Raises
    ------
    ValueError, TypeError
        The refusal the fit would have raised, before anything is spent.
        Messages of steps other than dpsk's can quote data: a
        :class:`~dpsk.PrivatePipeline` replaces them (see its docstring).
    dpsk.BudgetExceededError
        If a ledger cannot afford its releases together.

    Examples
    --------
    >>> import numpy as np
    >>> from dpsk import BudgetAccountant, DPLogisticRegression
    >>> from dpsk.pipeline import check_before_fit, make_private_pipeline
    >>> from dpsk.preprocessing import PrivateBoundsScaler
    >>> ledger = BudgetAccountant(epsilon=0.8)
    >>> pipe = make_private_pipeline(
    ...     PrivateBoundsScaler(epsilon=0.3, accountant=ledger),
    ...     DPLogisticRegression(epsilon=0.7, classes=[0, 1], accountant=ledger))
    >>> X = np.random.default_rng(0).normal(size=(100, 2))
    >>> check_before_fit(pipe, X, (X[:, 0] > 0).astype(int))
    Traceback (most recent call last):
    ...
    dpsk.accounting._ledger.BudgetExceededError: Privacy budget exceeded: ...
    >>> ledger.spends
    []
    """
    cost = run_dry(dry_copy(estimator), X, y, **fit_params)
    for ledger, events in cost.by_ledger():
        ledger.check_all(events)
    return cost
