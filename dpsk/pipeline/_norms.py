"""The row bound a model reads from the step before it: ``data_norm="auto"``.

A private linear model clips every row to ``data_norm`` (its sensitivity is
computed for rows of that norm). The steps that make a raw table fit for it
know the bound of their output before they see any data: the schema encoder
(``sqrt(p + c)``), :class:`~dpsk.preprocessing.PrivateBoundsScaler` and
:class:`~dpsk.preprocessing.BoundedScaler` (``sqrt(d)`` for ``[0, 1]``
columns), :class:`~dpsk.preprocessing.RowNormClipper` (its ``data_norm``),
and scikit-learn's ``Normalizer`` and one-hot encoder. A model with
``data_norm="auto"`` takes the bound the step before it in its pipeline
publishes, so that composing the documented steps never clips a row silently.

The bound is a function of the steps' declared parameters and public
metadata (their numbers of columns), never of the values in the data: using it
costs nothing. A model with no such step before it (fitted on its own, or
after a step that publishes no bound) uses 1 and warns, with a fixed text,
that raw features clipped to norm 1 keep only their direction.
"""

import math
import sys
import warnings

from sklearn.compose import ColumnTransformer
from sklearn.impute import MissingIndicator
from sklearn.pipeline import FeatureUnion, Pipeline
from sklearn.preprocessing import Normalizer, OneHotEncoder

from ._check import _calling_context, _first_for_owner, user_stacklevel
from ._dry import dry_recorder

__all__ = ["DataNormWarning", "published_row_bound", "input_row_bound", "resolve_data_norm"]


class DataNormWarning(UserWarning):
    """``data_norm="auto"`` found no step before the model that publishes a row bound.

    The model then clips rows to L2 norm 1. The text is fixed (it names the
    model's class only): whether a row is long is never looked at.
    """


_NO_BOUND = (
    "data_norm='auto': no step before this {name} publishes a bound on the L2 norm of "
    "its rows (the model is fitted on its own, or after a step such as a passthrough, "
    "a FunctionTransformer or a scikit-learn scaler), so every row is clipped to norm "
    "1. Raw features are usually far larger: clipped to norm 1 they keep only their "
    "direction, and the model can end up predicting one class. Put "
    "dpsk.preprocessing.make_table_encoder, BoundedScaler or PrivateBoundsScaler in "
    "front of the model in a pipeline (it then reads their bound), or declare "
    "data_norm from what you know of the features (data_norm=1.0 when every row "
    "already has norm at most 1, which also silences this warning)."
)


def _skipped(step):
    return step is None or (isinstance(step, str) and step == "passthrough")


def published_row_bound(step):
    """The bound on the L2 norm of every row ``step`` outputs, or None if it publishes none.

    Read from a fitted step's declared parameters and public metadata only:
    ``row_norm_bound_`` of dpsk's transformers (the schema encoder's parts,
    :class:`~dpsk.preprocessing.PrivateBoundsScaler`,
    :class:`~dpsk.preprocessing.BoundedScaler`,
    :class:`~dpsk.preprocessing.RowNormClipper`); for scikit-learn's
    ``OneHotEncoder`` ``sqrt(number of input columns)`` (at most one 1 per
    column), ``Normalizer`` 1 (``"l1"``, ``"l2"``) or ``sqrt(d)``
    (``"max"``), ``MissingIndicator`` ``sqrt(number of indicators)``; a
    pipeline's last step's; a column transformer's or feature union's
    ``sqrt`` of the sum of its parts' squares (times their weights), when
    every part publishes one and nothing is passed through.

    Parameters
    ----------
    step : estimator, "passthrough" or None
        Fitted.

    Returns
    -------
    bound : float or None
    """
    if _skipped(step) or (isinstance(step, str) and step == "drop"):
        return None
    bound = getattr(step, "row_norm_bound_", None)
    if bound is not None:
        return float(bound)
    if isinstance(step, Pipeline):
        kept = [part for _, part in step.steps if not _skipped(part)]
        return published_row_bound(kept[-1]) if kept else None
    if isinstance(step, (ColumnTransformer, FeatureUnion)):
        return _union_bound(step)
    if isinstance(step, OneHotEncoder) and hasattr(step, "categories_"):
        return math.sqrt(len(step.categories_))
    if isinstance(step, Normalizer) and hasattr(step, "n_features_in_"):
        return 1.0 if step.norm in ("l1", "l2") else math.sqrt(step.n_features_in_)
    if isinstance(step, MissingIndicator) and hasattr(step, "features_"):
        return math.sqrt(len(step.features_))
    return None


def _union_bound(step):
    """``sqrt(sum of the parts' squared bounds)`` of a fitted column transformer or union."""
    if isinstance(step, ColumnTransformer):
        parts = getattr(step, "transformers_", None)
        if parts is None:
            return None
        parts = [(name, part) for name, part, columns in parts
                 if not (isinstance(part, str) and part == "drop") and _has_columns(columns)]
    else:
        parts = [(name, part) for name, part in step.transformer_list
                 if not (isinstance(part, str) and part == "drop")]
    weights = step.transformer_weights or {}
    total = 0.0
    for name, part in parts:
        bound = published_row_bound(part)
        if bound is None:
            return None
        total += (weights.get(name, 1.0) * bound) ** 2
    return math.sqrt(total)


def _has_columns(columns):
    try:
        return len(columns) > 0
    except TypeError:  # a slice or a callable: assume it selects something
        return True


def input_row_bound(estimator):
    """The bound the step before ``estimator`` in its calling pipelines publishes, or None.

    ``estimator`` is being fitted by a pipeline (plain or private, nested at
    any depth): the nearest step before it that is not ``"passthrough"``, in
    the innermost pipeline that has one, is asked for its bound
    (:func:`published_row_bound`). The pipelines are found as
    :func:`~dpsk.pipeline.warn_if_pipeline_leaks`'s fit-time check finds them,
    by their object identities in the call stack.
    """
    chain, _, _ = _calling_context(estimator)
    for pipeline, index in chain:  # innermost first
        before = [step for _, step in pipeline.steps[:index] if not _skipped(step)]
        if before:
            return published_row_bound(before[-1])
    return None


def resolve_data_norm(estimator):
    """The ``data_norm`` a fit of ``estimator`` uses: a float, public.

    A number is used as given. ``"auto"`` is the bound the step before the
    model publishes (:func:`input_row_bound`), else 1 with a
    :class:`DataNormWarning`, given once per model (or per pipeline, search
    or cross-validated estimator that fits it). Call it from the model's ``fit``, before its
    data is read: the warning depends on the pipeline's steps only.
    """
    value = estimator.data_norm
    if not (isinstance(value, str) and value == "auto"):
        return float(value)
    bound = input_row_bound(estimator)
    if bound is not None and math.isfinite(bound) and bound > 0:
        return float(bound)
    text = _NO_BOUND.format(name=type(estimator).__name__)
    if dry_recorder() is not None:
        return 1.0  # a dry run: the fit that follows gives the warning
    if _first_for_owner(DataNormWarning, text, estimator):  # once per model or search
        warnings.warn(text, DataNormWarning, stacklevel=user_stacklevel(sys._getframe(1), 2))
    return 1.0

