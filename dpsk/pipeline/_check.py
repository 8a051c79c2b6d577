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
* :class:`dpsk.preprocessing.PrivateBoundsScaler`: it learns, but its fit is a
  differentially private release charged to the ledger (it is a private step,
  not the private model: a pipeline still needs a dpsk model after it);
* :class:`sklearn.preprocessing.FunctionTransformer`, on the understanding that
  its function acts on each row on its own (a function such as
  ``lambda X: X / X.max()`` reads every row and is not safe; this cannot be
  checked), unless it has both ``func`` and ``inverse_func`` and
  ``check_inverse=True``: its fit then round-trips every ``n // 100``-th row
  (row 0 always among them) and warns when one does not come back, so whether
  it warns depends on the data (``np.tanh`` and ``np.arctanh`` part for values
  above about 19). Give it ``check_inverse=False``;
* transformers whose fit reads only the shape (``n_samples``, ``n_features``)
  and the dtype, which are public: ``GaussianRandomProjection`` and
  ``SparseRandomProjection`` (``n_components="auto"`` reads ``n_samples``),
  ``PolynomialFeatures``, ``PolynomialCountSketch``, ``SkewedChi2Sampler``,
  ``RBFSampler`` with a numeric ``gamma`` (``gamma="scale"`` reads the
  variance of X) and ``SplineTransformer`` with an array of ``knots`` (string
  knots are placed from the data's range or quantiles);
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

The private model is found at any depth: in a pipeline nested in a pipeline,
in a column transformer or feature union, or inside a meta-estimator. Every
step before it is checked, at every level; a scikit-learn meta-estimator that
wraps it (``CalibratedClassifierCV``, ``GridSearchCV``, ``BaggingClassifier``,
...) is itself reported, because what it learns around the private model (a
calibrator, a choice made on noise-free scores, the classes, rows drawn with
replacement) is outside the guarantee. A dpsk estimator that wraps a pipeline
(``DPGridSearch``) checks what it wraps itself.

Everything else (``StandardScaler``, ``MinMaxScaler``, ``PCA``, imputers that
learn a mean, median or mode, encoders that learn categories, feature selectors,
...) is reported. The check reads only the steps' types and parameters, never
data, so its result is public.
"""

import sys
import threading
import warnings
import weakref

from sklearn.compose import ColumnTransformer
from sklearn.impute import MissingIndicator, SimpleImputer
from sklearn.kernel_approximation import (
    PolynomialCountSketch,
    RBFSampler,
    SkewedChi2Sampler,
)
from sklearn.pipeline import FeatureUnion, Pipeline
from sklearn.preprocessing import (
    FunctionTransformer,
    OneHotEncoder,
    OrdinalEncoder,
    PolynomialFeatures,
    SplineTransformer,
)
from sklearn.random_projection import GaussianRandomProjection, SparseRandomProjection

from ._dry import dry_recorder

__all__ = ["check_pipeline", "warn_if_pipeline_leaks", "LeakyPipelineWarning",
           "NonPrivateSelectionWarning"]


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


class NonPrivateSelectionWarning(UserWarning):
    """A scikit-learn meta-estimator fits a dpsk model and learns from the data itself.

    Emitted when a dpsk estimator's fit starts under ``GridSearchCV``,
    ``RandomizedSearchCV``, the halving searches, ``RFECV``,
    ``SequentialFeatureSelector``, ``TunedThresholdClassifierCV``,
    ``CalibratedClassifierCV``, the stacking ensembles,
    ``SelfTrainingClassifier``, or scikit-learn's cross-validation functions
    (``cross_val_score``, ``cross_validate``, ``cross_val_predict``, the
    validation and learning curves). Each fit of the dpsk model is charged, but
    what the meta-estimator computes from the data around it (scores, the
    choice made on them, calibrators, predictions for training rows) carries
    no noise and is outside the differential-privacy guarantee. The text names
    the meta-estimator and what it releases, and nothing of the data. It is
    found by looking at the callers of the fit, as for
    :class:`LeakyPipelineWarning`; a fit running in a worker process sees only
    the worker's callers (scikit-learn's ``_fit_and_score`` and the like are
    recognised there too, but a worker's warnings may not reach you), so fit
    with ``n_jobs=None`` to be told.
    """


_SAFE_STRINGS = ("passthrough", "drop")

_ADVICE = (
    "Declare what they would learn: scale numeric columns with "
    "dpsk.preprocessing.BoundedScaler (declared bounds), RowNormClipper, or "
    "PrivateBoundsScaler (bounds learned privately, charged to the ledger); encode "
    "categorical columns with OneHotEncoder(categories=[...declared lists...], "
    "handle_unknown='ignore') or OrdinalEncoder(categories=[...]), without "
    "min_frequency or max_categories; fill missing values with "
    "SimpleImputer(strategy='constant', fill_value=..., keep_empty_features=True) "
    "and MissingIndicator(features='all'); give a ColumnTransformer "
    "sparse_threshold=0 and a FunctionTransformer with an inverse "
    "check_inverse=False. Do not wrap the private model in a scikit-learn "
    "meta-estimator that learns around it (a search, a calibrator, bagging). Or fit "
    "the steps on public data."
)

#: scikit-learn transformers whose fit reads the shape and dtype only (exact
#: types: a subclass may learn). Checked against their fit source for 1.9.
_SHAPE_ONLY = (GaussianRandomProjection, SparseRandomProjection, PolynomialFeatures,
               PolynomialCountSketch, SkewedChi2Sampler)


def _is_declared_step(step):
    """Whether ``step`` is a dpsk transformer whose parameters are all declared.

    A tag (``_dpsk_declared_step``) rather than ``isinstance``, for the same
    reason as :func:`is_private_step`: ``dpsk.preprocessing`` sits above this
    check (its private scaler uses the fit protocol), so it is not imported here.
    """
    return getattr(type(step), "_dpsk_declared_step", False) is True


def _is_private_preprocessing(step):
    """Whether ``step`` is a dpsk transformer that learns privately (and charges for it).

    It may sit before the private model: what it learns is a release. It is not
    the private model itself: a pipeline whose only private part is such a step
    ends in a model that learns without noise.
    """
    return is_private_step(step) and getattr(type(step), "_dpsk_private_preprocessing",
                                             False) is True


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


def _function_is_declared(step):
    """Whether a FunctionTransformer's fit is silent whatever the data.

    Its fit round-trips sampled rows through ``func`` and ``inverse_func`` and
    warns when they differ, exactly when this condition (scikit-learn's own)
    holds: the warning would be one noise-free bit about the data.
    """
    return not (step.check_inverse and step.func is not None
                and step.inverse_func is not None)


def _reads_only_shape(step):
    """Whether ``step``'s fit reads nothing of X but its shape and dtype."""
    kind = type(step)
    if kind in _SHAPE_ONLY:
        return True
    if kind is RBFSampler:
        return not isinstance(step.gamma, str)  # "scale" reads the variance of X
    if kind is SplineTransformer:
        return not isinstance(step.knots, str)  # "uniform"/"quantile" read the data
    return False


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
    return _reads_only_shape(step)


def _learning_parts(name, step, allow_private=False):
    """Names (with ``outer__inner`` paths) of the parts of ``step`` that learn.

    With ``allow_private`` a private preprocessing step (it learns, but charges
    a ledger for it) is not reported: :func:`check_pipeline` and the fit-time
    warning pass True. Callers that fit the steps themselves (``DPGridSearch``
    fits each candidate's pipeline, and must not let a step charge a ledger
    once per candidate run) keep the default and see it reported.
    """
    if step is None or (isinstance(step, str) and step in _SAFE_STRINGS):
        return []
    if isinstance(step, Pipeline):
        return [found for inner, sub in step.steps
                for found in _learning_parts(f"{name}__{inner}", sub, allow_private)]
    if isinstance(step, ColumnTransformer):
        parts = [found for inner, sub, _ in step.transformers
                 for found in _learning_parts(f"{name}__{inner}", sub, allow_private)]
        parts += _learning_parts(f"{name}__remainder", step.remainder, allow_private)
        # With sparse_threshold > 0 the fitted transformer decides between sparse
        # and dense output from the data's density (sparse_output_): one
        # noise-free bit, which also changes what the next step accepts.
        if step.sparse_threshold != 0:
            parts.append(f"{name} (sparse_threshold > 0)")
        return parts
    if isinstance(step, FeatureUnion):
        return [found for inner, sub in step.transformer_list
                for found in _learning_parts(f"{name}__{inner}", sub, allow_private)]
    if isinstance(step, FunctionTransformer):  # tagged stateless, yet its fit may warn
        return [] if _function_is_declared(step) else [name]
    if _is_declared_step(step) or _declared_sklearn_step(step):
        return []
    if allow_private and _is_private_preprocessing(step):
        return []  # it learns, but privately: charged on the ledger like the model
    try:
        stateless = not step.__sklearn_tags__().requires_fit
    except AttributeError:  # not a scikit-learn estimator: assume it learns
        stateless = False
    return [] if stateless else [name]


# -- finding the private model at any depth ------------------------------------------


def _parts(obj):
    """``(name, part)`` for the estimators inside ``obj``, named as ``set_params`` does."""
    if isinstance(obj, Pipeline):
        return list(obj.steps)
    if isinstance(obj, ColumnTransformer):
        return [(name, part) for name, part, _ in obj.transformers] + [
            ("remainder", obj.remainder)]
    if isinstance(obj, FeatureUnion):
        return list(obj.transformer_list)
    if isinstance(obj, type) or not hasattr(obj, "get_params"):
        return []
    try:
        params = obj.get_params(deep=False)
    except Exception:  # an object that only looks like an estimator
        return []
    parts = []
    for key, value in params.items():
        if hasattr(value, "fit"):
            parts.append((key, value))
        elif isinstance(value, (list, tuple)):  # stacking and voting: (name, estimator)
            parts += [(item[0], item[1]) for item in value
                      if isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str)
                      and hasattr(item[1], "fit")]
    return parts


def _holds_private(obj):
    """Whether ``obj`` is, or holds at any depth, a private dpsk model.

    A private preprocessing step (:class:`dpsk.preprocessing.PrivateBoundsScaler`)
    does not count: the model after it must be private too.
    """
    if _is_private_preprocessing(obj):
        return False
    return is_private_step(obj) or any(_holds_private(part) for _, part in _parts(obj))


def _join(path, name):
    return f"{path}__{name}" if path else name


def _leaks_around(path, obj):
    """The learning parts of ``obj`` (which holds a dpsk estimator), at every depth.

    In a pipeline, the steps before the last one holding the private model are
    checked and that one is searched in turn. In a column transformer or
    feature union every other part sees the same rows, so each is checked. Any
    other estimator that wraps the private model and is not itself private
    learns around it (see the module docstring) and is reported by name.
    """
    if is_private_step(obj):
        return []  # a dpsk estimator answers for what it wraps (DPGridSearch checks it)
    parts = _parts(obj)
    holders = {i for i, (_, part) in enumerate(parts) if _holds_private(part)}
    if isinstance(obj, Pipeline):
        last = max(holders)
        found = [leak for name, part in parts[:last]
                 for leak in _learning_parts(_join(path, name), part, allow_private=True)]
        return found + _leaks_around(_join(path, parts[last][0]), parts[last][1])
    found = []
    if not isinstance(obj, (ColumnTransformer, FeatureUnion)):
        found.append(path or type(obj).__name__.lower())
    for i, (name, part) in enumerate(parts):
        sub = _join(path, name)
        if i in holders:
            found += _leaks_around(sub, part)
        elif isinstance(obj, (ColumnTransformer, FeatureUnion)):
            found += _learning_parts(sub, part, allow_private=True)
    if isinstance(obj, ColumnTransformer) and obj.sparse_threshold != 0:
        found.append(f"{path} (sparse_threshold > 0)")
    return found


def check_pipeline(pipeline):
    """Names of the steps around the dpsk estimator that learn from the data.

    Parameters
    ----------
    pipeline : sklearn.pipeline.Pipeline
        A pipeline (fitted or not) holding a dpsk estimator at any depth: as a
        step, in a nested pipeline, or inside a meta-estimator. Nested steps
        are reported as ``"outer__inner"``, the names ``set_params`` uses.

    Returns
    -------
    names : list of str
        Steps that learn from the training data without privacy, in pipeline
        order, and the scikit-learn meta-estimators that wrap the private model
        (they learn around it); empty when the pipeline is DP-safe as far as
        can be checked.

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
    if not _holds_private(pipeline):
        raise ValueError("The pipeline has no dpsk estimator, so none of it is "
                         "differentially private.")
    return _leaks_around("", pipeline)


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


# -- the fit-time look at the callers ------------------------------------------------

_FIT_METHODS = frozenset({"fit", "fit_transform", "fit_predict", "_fit"})

#: scikit-learn functions that fit a clone of an estimator and use it on the
#: training rows, recognised by name in a worker process where the
#: meta-estimator's own frame is absent. Each maps to a fixed text.
_CV_FUNCTIONS = {
    "_fit_and_score": (
        "scikit-learn's cross-validation (cross_val_score, cross_validate, the "
        "validation and learning curves, or a search) scores each fit of the dpsk "
        "model on held-out training rows without noise: the scores, and whatever is "
        "chosen from them, are outside the differential-privacy guarantee."),
    "_fit_and_predict": (
        "cross_val_predict (or a stacking ensemble) predicts each training row with "
        "a dpsk model fitted on the other folds, without noise: those predictions "
        "are functions of the rows themselves and are outside the guarantee."),
    "_fit_classifier_calibrator_pair": (
        "CalibratedClassifierCV fits calibrators on the dpsk model's predictions "
        "for held-out training rows, without noise: the calibrators are outside "
        "the guarantee."),
}


def _selection_kinds():
    """(types, text) for the meta-estimators that learn around a dpsk model's fit."""
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.ensemble import StackingClassifier, StackingRegressor
    from sklearn.feature_selection import RFECV, SequentialFeatureSelector
    from sklearn.model_selection import TunedThresholdClassifierCV
    from sklearn.model_selection._search import BaseSearchCV
    from sklearn.semi_supervised import SelfTrainingClassifier

    return (
        ((BaseSearchCV, RFECV, SequentialFeatureSelector, TunedThresholdClassifierCV),
         "{name} compares candidates (parameters, features or a threshold) by scores "
         "computed on the training data without noise: its choice, its scores (such "
         "as cv_results_ and best_score_) and the model refitted on that choice are "
         "outside the differential-privacy guarantee, although each fit is charged. "
         "Select with dpsk.model_selection.DPGridSearch, or score on public data."),
        ((CalibratedClassifierCV,),
         "{name} fits calibrators on the dpsk model's predictions for training rows, "
         "without noise: the calibrators are outside the differential-privacy "
         "guarantee. Calibrate a fitted model (FrozenEstimator) on public data."),
        ((StackingClassifier, StackingRegressor),
         "{name} trains its final estimator on cross-validated predictions of the "
         "dpsk model for the training rows, without noise: the final estimator is "
         "outside the differential-privacy guarantee."),
        ((SelfTrainingClassifier,),
         "{name} chooses the rows to pseudo-label from the dpsk model's predictions "
         "on them, without noise: which rows it adds, and the models fitted on "
         "them, are outside the differential-privacy guarantee."),
    )


_RESAMPLE_REFUSAL = (
    "{name}(bootstrap=True) draws rows with replacement, so the sample a dpsk model "
    "is fitted on can hold one row of your data several times. Each copy can move "
    "the model, so by group privacy a fit on k copies of a row costs up to k times "
    "its epsilon with respect to your data, which the ledger would not record. "
    "Refused before anything was read or charged. Use bootstrap=False: sampling "
    "without replacement (max_samples below 1.0 for subsamples) keeps each fit's "
    "cost at its epsilon, and the ledger charges every fit."
)


def _is_resampling(obj):
    """Whether ``obj`` is a bagging ensemble drawing rows with replacement."""
    from sklearn.ensemble._bagging import BaseBagging

    return isinstance(obj, BaseBagging) and bool(obj.bootstrap)


def _frame_object(frame):
    """The estimator a frame is fitting for (its ``self``, or bagging's ``ensemble``).

    The code object is read first: on Python 3.11, reading ``f_locals`` makes a
    snapshot that keeps the frame's locals alive, so it is read only for frames
    that can matter.
    """
    code = frame.f_code
    if code.co_name == "_parallel_build_estimators":  # bagging, also in a worker
        return frame.f_locals.get("ensemble")
    if code.co_name not in _FIT_METHODS or code.co_varnames[:1] != ("self",):
        return None
    return frame.f_locals.get("self")


def _from_sklearn(frame):
    return frame.f_globals.get("__name__", "").startswith("sklearn.")


def _calling_context(estimator):
    """What is fitting ``estimator``: the Pipelines holding it, and meta-estimators.

    A dpsk estimator is handed already-transformed data and no reference to what
    called it, so the only way to see an earlier step or a search around it is
    to look at the callers, all the way up: reading object identities, types
    and parameters, never the data. The walk stops at an enclosing dpsk fit
    (a DPGridSearch fitting its candidates), whose own look covers what is
    above it.

    Returns
    -------
    chain : list of (Pipeline, int)
        Each pipeline (innermost first) with the index of the step that holds
        ``estimator`` (itself or through the inner pipelines).
    metas : list of (object, str or None)
        Meta-estimators (or, in a worker, scikit-learn's fitting functions, as
        ``(None, function name)``) around the fit, innermost first.
    stacklevel : int
        For :func:`warnings.warn` called by this function's caller: the first
        frame above the outermost one found outside scikit-learn, joblib and
        dpsk, i.e. the user's ``fit`` call.
    """
    frame, level, outermost = sys._getframe(1), 1, None
    chain, metas, child = [], [], estimator
    while True:
        frame, level = frame.f_back, level + 1
        if frame is None:
            break
        name = frame.f_code.co_name
        if name in _CV_FUNCTIONS and _from_sklearn(frame):
            metas.append((None, name))
            outermost = (frame, level)
            continue
        caller = _frame_object(frame)
        if caller is None or caller is estimator:
            continue
        if is_private_step(caller):
            break
        if isinstance(caller, Pipeline):
            index = next((i for i, (_, step) in enumerate(caller.steps) if step is child),
                         None)
            if index is not None:
                chain.append((caller, index))
                child, outermost = caller, (frame, level)
        elif all(caller is not seen for seen, _ in metas):
            metas.append((caller, None))
            outermost = (frame, level)
    if outermost is None:
        return [], [], 0
    return chain, metas, user_stacklevel(*outermost)


#: scikit-learn's cross-validation entry points: their ``estimator`` is the user's object.
_CV_ENTRIES = ("cross_validate", "cross_val_predict", "validation_curve", "learning_curve",
               "permutation_test_score")


def _call_owner(estimator):
    """The user's object whose call is fitting ``estimator``, for warning once per object.

    The outermost pipeline, meta-estimator (a search, a calibrator) or
    cross-validated estimator (the ``estimator`` of ``cross_validate`` and the
    like) above the fit; the estimator itself for a plain fit; None in a worker
    process, where only scikit-learn's fitting function is visible. Read from
    object identities in the call stack, as :func:`_calling_context` does.
    """
    frame, owner, in_cv = sys._getframe(1), None, False
    while frame is not None:
        name = frame.f_code.co_name
        if name in _CV_ENTRIES and _from_sklearn(frame):
            owner = frame.f_locals.get("estimator", owner)
        elif name in _CV_FUNCTIONS and _from_sklearn(frame):
            in_cv = True
        else:
            caller = _frame_object(frame)
            if caller is not None and caller is not estimator:
                if is_private_step(caller):
                    break  # an enclosing dpsk fit (a search's run) answers for above
                owner = caller
        frame = frame.f_back
    if owner is None:
        return None if in_cv else estimator
    return owner


#: id(owner) -> (weak reference to it, {(category, text)} already given).
_GIVEN = {}
_GIVEN_LOCK = threading.Lock()


def _first_for_owner(category, text, estimator):
    """Whether this warning was not yet given for the same owner (and note that it was).

    Once per pipeline, search or cross-validated estimator, not once per fold:
    dpsk silences each fit's own warnings, which resets Python's once-per-line
    registry. The entry goes when the owner is collected (a weak reference), so
    the rule is the same in every run. A fit in a worker (process or thread)
    sees no owner and always warns.
    """
    owner = _call_owner(estimator)
    if owner is None:
        return True  # a worker sees no owner: every fit warns (in the worker)
    key = id(owner)
    with _GIVEN_LOCK:
        entry = _GIVEN.get(key)
        if entry is not None and entry[0]() is not owner:
            entry = None  # a dead owner's id, reused
        if entry is None:
            try:
                ref = weakref.ref(owner, lambda _, key=key: _GIVEN.pop(key, None))
            except TypeError:  # not weakly referenceable: warn every time
                return True
            entry = _GIVEN[key] = (ref, set())
        if (category, text) in entry[1]:
            return False
        entry[1].add((category, text))
    return True


#: Top-level modules whose frames are not the user's: a warning points above them.
_LIBRARIES = ("sklearn", "dpsk", "joblib")
#: Modules that run a worker's task (process and thread pools, ``python -m``).
_RUNNERS = ("multiprocessing", "concurrent", "threading", "runpy", "loky", "__main__")


def _top_module(frame):
    return frame.f_globals.get("__name__", "").split(".")[0]


def _is_runner(frame):
    """A frame of the machinery that runs a worker's task (never the user's code)."""
    name = _top_module(frame)
    if name == "__main__":  # a worker started as ``python -m ...loky...``
        return "joblib" in frame.f_code.co_filename or "loky" in frame.f_code.co_filename
    return name in _RUNNERS


def user_stacklevel(frame, level):
    """The ``stacklevel`` that points a warning at the user's line above ``frame``.

    ``frame`` sits ``level`` levels above the call to :func:`warnings.warn`.
    The first frame above it outside scikit-learn, joblib and dpsk is the
    user's. In a worker process or thread there is none: only the pool's
    machinery (``multiprocessing``, ``concurrent.futures``, loky) runs the
    task, and a warning pointed there would name ``multiprocessing/process.py``.
    The warning then points at the outermost scikit-learn or dpsk frame (other
    than scikit-learn's parallel helpers), such as scikit-learn's
    ``_fit_and_score``: it says what ran.
    """
    named = level if _is_named(frame) else None
    while frame.f_back is not None and _top_module(frame) in _LIBRARIES:
        frame, level = frame.f_back, level + 1
        if _is_named(frame):
            named = level
    if _top_module(frame) in _LIBRARIES or _only_runners(frame):
        return named if named is not None else level
    return level


def _is_named(frame):
    """A scikit-learn or dpsk frame that says what ran (not a parallel helper)."""
    name = frame.f_globals.get("__name__", "")
    return name.split(".")[0] in ("sklearn", "dpsk") and not name.startswith("sklearn.utils")


def _only_runners(frame):
    """Whether ``frame`` and everything above it belong to a worker's machinery."""
    while frame is not None:
        if not (_is_runner(frame) or _top_module(frame) in _LIBRARIES):
            return False
        frame = frame.f_back
    return True


def _leaks_in_chain(chain):
    """Learning steps before the private model, over nested pipelines, named as set_params does.

    A :class:`dpsk.pipeline.PrivatePipeline` checked its own steps before
    fitting any of them, so they are not checked (or reported) again.
    """
    names, prefix = [], ""
    for pipeline, index in reversed(chain):  # outermost first, for the name prefixes
        if not getattr(pipeline, "_checks_itself", False):
            names += [prefix + found for name, step in pipeline.steps[:index]
                      for found in _learning_parts(name, step, allow_private=True)]
        prefix += pipeline.steps[index][0] + "__"
    return names


def _selection_texts(metas):
    """The fixed texts for the meta-estimators in ``metas`` that learn around the fit."""
    texts = []
    for obj, function in metas:
        if obj is None:
            continue
        for types, text in _selection_kinds():
            if isinstance(obj, types):
                texts.append(text.format(name=type(obj).__name__))
    if not texts:  # in a worker: only scikit-learn's fitting functions are visible
        texts = [_CV_FUNCTIONS[function] for obj, function in metas if obj is None]
    return list(dict.fromkeys(texts))


def warn_from_calling_pipeline(estimator):
    """Look at what is fitting ``estimator`` and warn, or refuse, before it reads data.

    Called by every dpsk fit before it reads the data or spends anything:

    * a bagging ensemble drawing rows with replacement around it is refused
      (``ValueError``, free): a row drawn k times costs up to k epsilon;
    * Pipelines whose steps before it learn from the data give one
      :class:`LeakyPipelineWarning` naming them, at any depth;
    * scikit-learn's searches, calibrators, stacking, self-training and
      cross-validation functions give one :class:`NonPrivateSelectionWarning`
      naming what they release outside the guarantee.

    Every text is a function of types and parameters only.
    """
    chain, metas, stacklevel = _calling_context(estimator)
    for obj, _ in metas:
        if _is_resampling(obj):
            raise ValueError(_RESAMPLE_REFUSAL.format(name=type(obj).__name__))
    if dry_recorder() is not None:
        return  # a dry run refuses what the fit would; the fit itself warns
    # Once per pipeline or search, not per fold (_first_for_owner).
    names = _leaks_in_chain(chain)
    if names and _first_for_owner(LeakyPipelineWarning, _leak_message(names), estimator):
        warnings.warn(_leak_message(names), LeakyPipelineWarning, stacklevel=stacklevel)
    text = " ".join(_selection_texts(metas))
    if text and _first_for_owner(NonPrivateSelectionWarning, text, estimator):
        warnings.warn(text, NonPrivateSelectionWarning, stacklevel=stacklevel)


def _leak_message(names):
    """The warning (or error) text for the learning steps ``names``: step names only."""
    return (f"Pipeline steps {names} learn from the training data before the private "
            "model; their fitted statistics are released without noise, so the "
            "fitted pipeline is not differentially private. " + _ADVICE)
