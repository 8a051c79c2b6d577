"""Find the steps of a pipeline that learn from the data before a private model.

A dpsk estimator is differentially private with respect to the rows *it* sees.
If an earlier pipeline step learned something from the training data (a mean,
a scale, a minimum, a principal direction), that statistic is stored in the
fitted pipeline without noise, and it also shapes what the private model sees:
the released pipeline is not differentially private. These helpers flag such
steps before anything is fitted.

What counts as safe (learns nothing from the data):

* ``"passthrough"``, ``None`` and ``"drop"``;
* :class:`dpsk.preprocessing.RowNormClipper` and
  :class:`dpsk.preprocessing.BoundedScaler` (declared parameters);
* :class:`sklearn.preprocessing.FunctionTransformer`, on the understanding that
  its function acts on each row on its own (a function such as
  ``lambda X: X / X.max()`` reads every row and is not safe; this cannot be
  checked);
* encoders with declared categories: scikit-learn's ``OneHotEncoder`` and
  ``OrdinalEncoder`` with ``categories=[...]`` (a list, not ``"auto"``) and no
  ``min_frequency`` or ``max_categories`` (grouping infrequent categories counts
  them). ``OneHotEncoder`` must not warn from the data: ``handle_unknown="warn"``
  is reported, and so is ``drop`` together with ``handle_unknown="ignore"`` or
  ``"infrequent_if_exist"`` (scikit-learn then warns, during the pipeline's fit,
  which columns held an undeclared value). With ``handle_unknown="error"`` an
  undeclared value makes the encoder's fit raise: a refusal of input outside the
  declared domain, which happens before the private model's fit starts and so
  costs nothing;
* ``SimpleImputer(strategy="constant", keep_empty_features=True,
  add_indicator=False)``: the fill value is declared. Without
  ``keep_empty_features`` the imputer drops the columns that are missing in every
  training row, and with ``add_indicator`` it adds indicator columns only for the
  features that had missing values: both choose the output's columns from the
  data;
* ``MissingIndicator(features="all")`` (``"missing-only"`` chooses columns from
  the data);
* any transformer tagged ``requires_fit=False`` (scikit-learn's stateless
  transformers such as ``Normalizer`` and ``Binarizer``);
* pipelines and feature unions whose parts are all safe, and column
  transformers whose parts are all safe and whose ``sparse_threshold`` is 0
  (with a positive threshold the fitted transformer chooses sparse or dense
  output from the training data's density, and stores that choice).

Everything else (``StandardScaler``, ``MinMaxScaler``, ``PCA``, imputers that
learn a mean, median or mode, encoders that learn categories, feature selectors,
...) is reported. The check reads only the steps' types and parameters, never
data, so its result is public.
"""

import sys
import warnings

from sklearn.compose import ColumnTransformer
from sklearn.impute import MissingIndicator, SimpleImputer
from sklearn.pipeline import FeatureUnion, Pipeline
from sklearn.preprocessing import FunctionTransformer, OneHotEncoder, OrdinalEncoder

__all__ = ["check_pipeline", "warn_if_pipeline_leaks", "LeakyPipelineWarning"]


def is_private_step(step):
    """Whether ``step`` is a dpsk estimator (it carries the mixin's tag).

    A tag rather than ``isinstance``: this check sits below
    :class:`dpsk.PrivacyAccountingMixin` and must not import it.
    """
    return getattr(type(step), "_dpsk_private_step", False) is True


class LeakyPipelineWarning(UserWarning):
    """A step before a dpsk estimator learns from the training data.

    Emitted when a pipeline holding a dpsk estimator is fitted (a plain
    :class:`~sklearn.pipeline.Pipeline` or a :class:`dpsk.PrivatePipeline`) and
    by :func:`warn_if_pipeline_leaks`. The text names the steps and nothing of
    the data. Filter it (``warnings.filterwarnings("ignore",
    category=LeakyPipelineWarning)``) for a step you know was fitted on public
    data, such as a frozen one.
    """


_SAFE_STRINGS = ("passthrough", "drop")

_ADVICE = (
    "Declare what they would learn: scale numeric columns with "
    "dpsk.preprocessing.BoundedScaler (declared bounds) or RowNormClipper; encode "
    "categorical columns with OneHotEncoder(categories=[...declared lists...], "
    "handle_unknown='ignore') or OrdinalEncoder(categories=[...]), without "
    "min_frequency or max_categories; fill missing values with "
    "SimpleImputer(strategy='constant', fill_value=..., keep_empty_features=True) "
    "and MissingIndicator(features='all'); give a ColumnTransformer "
    "sparse_threshold=0. Or fit the steps on public data."
)


def _declared_safe_types():
    # Imported here: dpsk.preprocessing imports the core, and the core must not
    # import it back at module load.
    from ..preprocessing import BoundedScaler, RowNormClipper

    return (FunctionTransformer, RowNormClipper, BoundedScaler)


def _encoder_is_declared(encoder):
    """Whether a one-hot or ordinal encoder's fit learns nothing from the data."""
    if isinstance(encoder.categories, str):  # "auto": categories come from the data
        return False
    if encoder.min_frequency is not None or encoder.max_categories is not None:
        return False  # infrequent categories are chosen by counting
    if isinstance(encoder, OneHotEncoder):
        # scikit-learn warns (naming columns) when it meets an undeclared value
        # with handle_unknown="warn", or with "ignore"/"infrequent_if_exist" and drop.
        if encoder.handle_unknown == "warn":
            return False
        if encoder.drop is not None and encoder.handle_unknown != "error":
            return False
    return True


def _declared_sklearn_step(step):
    """Whether ``step`` is a scikit-learn transformer whose declared parameters fix
    everything its fit stores (see the module docstring for the rules)."""
    if isinstance(step, (OneHotEncoder, OrdinalEncoder)):
        return _encoder_is_declared(step)
    if isinstance(step, SimpleImputer):
        return (isinstance(step.strategy, str) and step.strategy == "constant"
                and step.keep_empty_features and not step.add_indicator)
    if isinstance(step, MissingIndicator):
        return step.features == "all"
    return False


def _learning_parts(name, step):
    """Names (with ``outer__inner`` paths) of the parts of ``step`` that learn."""
    if step is None or (isinstance(step, str) and step in _SAFE_STRINGS):
        return []
    if isinstance(step, Pipeline):
        return [found for inner, sub in step.steps
                for found in _learning_parts(f"{name}__{inner}", sub)]
    if isinstance(step, ColumnTransformer):
        parts = [found for inner, sub, _ in step.transformers
                 for found in _learning_parts(f"{name}__{inner}", sub)]
        parts += _learning_parts(f"{name}__remainder", step.remainder)
        # With sparse_threshold > 0 the fitted transformer decides between sparse
        # and dense output from the data's density (sparse_output_): one
        # noise-free bit, which also changes what the next step accepts.
        if step.sparse_threshold != 0:
            parts.append(f"{name} (sparse_threshold > 0)")
        return parts
    if isinstance(step, FeatureUnion):
        return [found for inner, sub in step.transformer_list
                for found in _learning_parts(f"{name}__{inner}", sub)]
    if isinstance(step, _declared_safe_types()) or _declared_sklearn_step(step):
        return []
    try:
        stateless = not step.__sklearn_tags__().requires_fit
    except AttributeError:  # not a scikit-learn estimator: assume it learns
        stateless = False
    return [] if stateless else [name]


def check_pipeline(pipeline):
    """Names of the steps before the final dpsk estimator that learn from the data.

    Parameters
    ----------
    pipeline : sklearn.pipeline.Pipeline
        A pipeline (fitted or not) whose last dpsk estimator is the private
        model. Steps nested in pipelines, column transformers and feature unions
        are reported as ``"outer__inner"``, the names ``set_params`` uses.

    Returns
    -------
    names : list of str
        Steps that learn from the training data without privacy, in pipeline
        order; empty when the pipeline is DP-safe as far as can be checked.

    Raises
    ------
    TypeError
        If ``pipeline`` is not a :class:`~sklearn.pipeline.Pipeline`.
    ValueError
        If it has no dpsk estimator (nothing in it is private).

    See Also
    --------
    warn_if_pipeline_leaks : the same check, as a warning.

    Examples
    --------
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from dpsk import DPLogisticRegression
    >>> from dpsk.preprocessing import RowNormClipper
    >>> check_pipeline(make_pipeline(StandardScaler(), DPLogisticRegression()))
    ['standardscaler']
    >>> check_pipeline(make_pipeline(RowNormClipper(), DPLogisticRegression()))
    []
    """
    if not isinstance(pipeline, Pipeline):
        raise TypeError(f"pipeline must be a sklearn.pipeline.Pipeline, got "
                        f"{type(pipeline).__name__}.")
    private = [i for i, (_, step) in enumerate(pipeline.steps)
               if is_private_step(step)]
    if not private:
        raise ValueError("The pipeline has no dpsk estimator, so none of it is "
                         "differentially private.")
    return [found for name, step in pipeline.steps[:private[-1]]
            for found in _learning_parts(name, step)]


def warn_if_pipeline_leaks(pipeline):
    """Warn with a :class:`LeakyPipelineWarning` naming the steps :func:`check_pipeline` finds.

    Parameters
    ----------
    pipeline : sklearn.pipeline.Pipeline

    Returns
    -------
    names : list of str
        The steps named in the warning (empty if there was no warning).
    """
    names = check_pipeline(pipeline)
    if names:
        warnings.warn(_leak_message(names), LeakyPipelineWarning, stacklevel=2)
    return names


#: How far up the call stack a fit looks for the Pipelines that called it: each
#: pipeline's ``fit`` and scikit-learn's ``_fit_context`` wrappers around them.
_CALLER_FRAMES = 12
_FIT_METHODS = frozenset({"fit", "fit_transform", "fit_predict"})


def _fitting_self(frame):
    """The ``self`` of a frame running a ``fit`` method, else None.

    The code object is read first: on Python 3.11, reading ``f_locals`` makes a
    snapshot that keeps the frame's locals alive, so it is read only for frames
    that can be a pipeline's ``fit``.
    """
    code = frame.f_code
    if code.co_name not in _FIT_METHODS or code.co_varnames[:1] != ("self",):
        return None
    return frame.f_locals.get("self")


def _calling_pipelines(estimator):
    """The plain Pipelines, innermost first, whose ``fit`` is fitting ``estimator``.

    A dpsk estimator is handed already-transformed data and no reference to the
    pipeline around it, so the only way to see an earlier step is to look at
    the callers: the frames of ``fit`` methods whose ``self`` is a Pipeline
    holding ``estimator`` (or the pipeline found so far) as one of its steps.
    That reads object identities and nothing of the data.

    Returns
    -------
    chain : list of (Pipeline, int)
        Each pipeline with the index of the step that holds ``estimator``
        (itself or through the inner pipelines).
    stacklevel : int
        For :func:`warnings.warn` called by this function's caller: the first
        frame above the outermost pipeline outside scikit-learn, joblib and dpsk,
        i.e. the user's ``fit`` call.
    """
    frame, level, found = sys._getframe(1), 1, None
    chain, child = [], estimator
    for _ in range(_CALLER_FRAMES):
        frame, level = frame.f_back, level + 1
        if frame is None:
            break
        caller = _fitting_self(frame)
        if not isinstance(caller, Pipeline):
            continue
        index = next((i for i, (_, step) in enumerate(caller.steps) if step is child), None)
        if index is not None:
            chain.append((caller, index))
            child, found = caller, (frame, level)
    if found is None:
        return [], 0
    frame, level = found
    while frame.f_back is not None and frame.f_globals.get("__name__", "").split(".")[0] in (
            "sklearn", "dpsk", "joblib"):
        frame, level = frame.f_back, level + 1
    return chain, level


def _leaks_in_chain(chain):
    """Learning steps before the private model, over nested pipelines, named as set_params does.

    A :class:`dpsk.pipeline.PrivatePipeline` checked its own steps before
    fitting any of them, so they are not checked (or reported) again.
    """
    names, prefix = [], ""
    for pipeline, index in reversed(chain):  # outermost first, for the name prefixes
        if not getattr(pipeline, "_checks_itself", False):
            names += [prefix + found for name, step in pipeline.steps[:index]
                      for found in _learning_parts(name, step)]
        prefix += pipeline.steps[index][0] + "__"
    return names


def warn_from_calling_pipeline(estimator):
    """Warn once, at fit time, if the Pipelines fitting ``estimator`` leak.

    Called by every dpsk fit before it reads the data. The warning names the
    learning steps (public parameters only), as :func:`warn_if_pipeline_leaks`.
    """
    chain, stacklevel = _calling_pipelines(estimator)
    names = _leaks_in_chain(chain)
    if names:
        warnings.warn(_leak_message(names), LeakyPipelineWarning, stacklevel=stacklevel)


def _leak_message(names):
    """The warning (or error) text for the learning steps ``names``: step names only."""
    return (f"Pipeline steps {names} learn from the training data before the private "
            "model; their fitted statistics are released without noise, so the "
            "fitted pipeline is not differentially private. " + _ADVICE)
