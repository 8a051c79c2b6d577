"""Input conditions the privacy proofs need, enforced in one place.

The rows themselves (clipping to ``data_norm``, the intercept column, norm <= 1)
are built in :mod:`dpsk._data._design`; this module checks the rest of the domain.

* Labels become {-1, +1}, one binary problem per class for one-vs-rest.
* The classes are declared (``classes=[...]``), so ``classes_`` and the number
  of binary problems do not depend on which labels occur in ``y``; labels
  outside the declared classes are outside the input domain and refused before
  anything is spent.

Nothing here warns about what it finds in the data: a warning that counted
clipped rows, or named a missing class, would be a noise-free statistic.
"""

import math
import os
import sys
import warnings
from numbers import Real

import numpy as np
from sklearn.utils.multiclass import check_classification_targets

__all__ = ["check_classes", "PublicRefusal",
           "resolve_classes", "check_not_datetime", "binary_targets",
           "ClassesFromDataWarning", "values_withheld", "warn_if_classes_undeclared",
           "warn_if_column_vector", "refuse_fit_params", "check_sample_weight",
           "check_class_weight_declared", "class_weight_table", "row_weights"]


class PublicRefusal(ValueError):
    """Input outside the declared domain, refused with a message made of public facts only.

    dpsk raises it where the message names what is declared (a column of the
    schema, the number of rows or columns) and quotes no value of the data, so
    a :class:`dpsk.PrivatePipeline` shows it as it is, at fit and at predict
    time, where it hides the messages of other libraries' steps.
    """


class ClassesFromDataWarning(UserWarning):
    """Emitted by every fit with ``classes=None``: the labels of ``y`` become public.

    The text is the same whatever ``y`` holds. Declare ``classes=[...]`` to keep
    the set of labels out of the release.
    """


_CLASSES_FROM_DATA = (
    "classes=None: the classes are read from y, so the fitted model reveals which "
    "labels occur in the training data (classes_, the number of models and the share "
    "of epsilon each gets). Declare them, e.g. classes=[0, 1], to keep that private."
)


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def _user_stacklevel():
    """Stack level of the first caller outside dpsk, so warnings point at user code."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame, level = frame.f_back, level + 1
    return level


_NOT_A_NUMBER = (
    "X contains a value that is not a real number (the argument must be a string or a "
    "number that converts to a real number). Convert such columns to numbers before "
    "fitting. The value is not shown: it is training data."
)


_NOT_FINITE = (
    "Input X contains NaN or infinity, which a dpsk model cannot use. Fill missing "
    "values with a declared constant first, for example "
    "SimpleImputer(strategy='constant', fill_value=0.0, keep_empty_features=True) in "
    "the pipeline (an imputer that learns a mean or median from the data is not "
    "private)."
)


def finite_rows_advised(check, *args, **kwargs):
    """Call ``check(*args, **kwargs)``; replace scikit-learn's advice on NaN by dpsk's.

    For rows a released model predicts on: scikit-learn's message suggests
    estimators that handle NaN natively, which a private model is not. Other
    messages are left as they are.
    """
    try:
        return check(*args, **kwargs)
    except ValueError as exc:
        if not str(exc).startswith(("Input X contains NaN", "Input X contains infinity")):
            raise
    raise ValueError(_NOT_FINITE)


def values_withheld(check, *args, **kwargs):
    """Call ``check(*args, **kwargs)``; refuse its out-of-domain input without quoting it.

    numpy's and scikit-learn's messages can quote the data: ``could not convert
    string to float: '<cell>'``, or a 1-d or complex ``X`` printed in full. A
    refusal is free only because it says no more than "outside the domain", so
    such messages are replaced by fixed ones, and messages that dump an array
    keep their first line only. The replacement is raised outside the
    ``except`` block, so the original exception is not even attached as
    ``__context__`` (a traceback would print it).

    Returns
    -------
    Whatever ``check`` returns.
    """
    try:
        return check(*args, **kwargs)
    except (ValueError, TypeError) as exc:
        text, kind = str(exc), type(exc)
        if any(key in text for key in ("could not convert", "float() argument",
                                       "invalid literal", "argument must be")):
            message = _NOT_A_NUMBER
        elif text.startswith(("Input X contains NaN", "Input X contains infinity")):
            message = _NOT_FINITE
        elif "\n" in text or "array=" in text:
            message = text.split("\n")[0].rstrip(":") + " (the data is not shown)."
        else:
            raise
    # TypeError stays TypeError (scikit-learn's checks expect it for object cells).
    raise (TypeError if issubclass(kind, TypeError) else ValueError)(message)


_SAMPLE_WEIGHT_REFUSED = (
    "{name}.fit does not support sample_weight: its privacy argument is made for "
    "unweighted rows, and a weight outside what that argument covers could change how "
    "much one row moves the model beyond what the noise is calibrated for. Use an "
    "estimator that takes sample_weight in [0, 1] (DPLogisticRegression, DPHuberSVM, "
    "DPKernelClassifier, DPRobustLogisticRegression, DPLinearSVC), or declare "
    "class_weight on it. "
    "Nothing was spent."
)


_SAMPLE_WEIGHT_DOMAIN = (
    "sample_weight must be None, a number, or a 1-d array with one real number in [0, 1] "
    "per row of X. NaN, infinity, negative weights and weights above 1 are outside the "
    "domain of the privacy proof (docs/privacy.rst, \"Weights\"); rescale weights by a "
    "declared constant to put them in [0, 1]. The weights are not shown. Nothing was spent."
)


def check_sample_weight(sample_weight, n_samples):
    """Row weights as a float vector in [0, 1] of length ``n_samples``, or None; free refusal.

    A number is one weight for every row (as in scikit-learn). The weights are
    part of each row (docs/privacy.rst, "Weights"): a value outside [0, 1] is
    outside the input domain, refused before anything is spent, with a fixed
    message that quotes neither the weights nor their shape.

    Raises
    ------
    ValueError
        For weights that are not real numbers, of the wrong shape, or outside [0, 1].
    """
    if sample_weight is None:
        return None
    try:
        weights = np.asarray(sample_weight)
        if weights.dtype.kind not in "biuf":
            raise TypeError
        weights = weights.astype(np.float64)
    except (TypeError, ValueError):
        weights = None
    if weights is not None and weights.ndim == 0:
        weights = np.full(n_samples, float(weights))
    with np.errstate(invalid="ignore"):
        valid = (weights is not None and weights.shape == (n_samples,)
                 and bool(np.all((weights >= 0.0) & (weights <= 1.0))))
    if not valid:
        raise ValueError(_SAMPLE_WEIGHT_DOMAIN)
    return weights


_BALANCED_REFUSED = (
    "class_weight='balanced' is not supported: it divides by the number of rows of each "
    "class in y, and those counts are private (the weights, and with them the model, would "
    "reveal them without noise). Declare the weights from a known or public prevalence "
    "instead, e.g. class_weight={0: 0.05, 1: 0.95} when about 5% of rows are positive; "
    "dpsk rescales them so that the largest is 1. Nothing was spent."
)


_CLASS_WEIGHT_NEEDS_CLASSES = (
    "class_weight needs declared classes (classes=[...]). With classes=None the classes "
    "are read from y, and whether each key of class_weight is among them would be a "
    "noise-free fact about the whole data set. Declare the classes. Nothing was spent."
)


def check_class_weight_declared(class_weight, classes):
    """Refuse (free) a ``class_weight`` that is not None without declared ``classes``.

    The refusal depends on the two parameters only, never on the labels: with
    ``classes=None`` every dict is refused, whichever labels ``y`` holds.
    """
    if class_weight is not None and classes is None:
        raise ValueError(_CLASS_WEIGHT_NEEDS_CLASSES)


def class_weight_table(class_weight, classes):
    """Per-class row weights for ``classes_``, largest 1; None for ``class_weight=None``.

    As in scikit-learn, a class missing from the dict gets weight 1; then every
    weight is divided by the largest, so row weights stay in [0, 1] (the
    privacy proofs' condition, docs/privacy.rst, "Weights"). The table is a
    function of the parameter and the declared classes only.

    Raises
    ------
    ValueError
        For ``"balanced"`` (it reads the class counts), a key that is not a
        class, or a weight that is not a finite number > 0. Free: nothing about
        the data is used.
    """
    if class_weight is None:
        return None
    if isinstance(class_weight, str):
        raise ValueError(_BALANCED_REFUSED)
    table = np.ones(len(classes))
    for key, value in class_weight.items():
        # Python scalars compare without numpy's elementwise-comparison warnings
        # (a string key against numeric classes is simply no match).
        matches = [i for i, label in enumerate(np.asarray(classes).tolist()) if label == key]
        if len(matches) != 1:
            raise ValueError(
                "class_weight has a key that is not one of the classes; its keys must be "
                "declared classes (classes=[...]). Nothing was spent."
            )
        if not (isinstance(value, Real) and not isinstance(value, bool)
                and math.isfinite(value) and value > 0):
            raise ValueError(
                "class_weight values must be finite numbers > 0. Nothing was spent.")
        table[matches[0]] = float(value)
    return table / table.max()


def row_weights(sample_weight, class_weight, y, classes):
    """The weight of each row: ``sample_weight`` times its class's weight, or None.

    ``sample_weight`` comes from :func:`check_sample_weight` and ``class_weight``
    from :func:`class_weight_table`; both in [0, 1], so their product is.
    None when neither is given or every weight is 1, so such a fit is bit for
    bit an unweighted one.
    """
    weights = sample_weight
    if class_weight is not None:
        per_row = class_weight[np.searchsorted(classes, y)]
        weights = per_row if sample_weight is None else sample_weight * per_row
    # All ones is the unweighted objective exactly: the unweighted path, same bits.
    if weights is not None and np.all(weights == 1.0):
        return None
    return weights


def refuse_fit_params(estimator, fit_params, reason=None):
    """Refuse ``sample_weight`` (unless None) and unknown keywords of ``fit``, for free.

    ``reason``, a fixed text, replaces the default explanation of why this
    estimator takes no weights.

    The privacy proofs bound what one unweighted row can change; a weight
    multiplies that, so a weighted fit would need its own sensitivity analysis.
    ``fit`` takes ``**fit_params`` rather than a named ``sample_weight``, so that
    scikit-learn (``has_fit_parameter``, metadata routing, ``BaggingClassifier``'s
    row sampling, ``AdaBoostClassifier``) sees an estimator without sample-weight
    support, and a weight passed anyway gets this explanation instead of a bare
    ``TypeError``. The message is fixed: it says nothing about the weights.

    Raises
    ------
    TypeError
        For a ``sample_weight`` that is not None, and for any other keyword.
    """
    name = type(estimator).__name__
    fit_params = dict(fit_params)
    if fit_params.pop("sample_weight", None) is not None:
        raise TypeError(reason or _SAMPLE_WEIGHT_REFUSED.format(name=name))
    if fit_params:
        unknown = ", ".join(repr(key) for key in sorted(fit_params))
        raise TypeError(f"{name}.fit() got unexpected keyword argument(s) {unknown}; it "
                        "takes X, y (and sample_weight=None only).")


def check_not_datetime(X):
    """Reject datetime and timedelta features with a clear error.

    scikit-learn's conversion would turn them silently into nanosecond counts,
    whose scale makes any declared ``data_norm`` meaningless: every row would be
    clipped to the same direction.
    """
    dtypes = getattr(X, "dtypes", None)  # pandas DataFrame: one dtype per column
    if dtypes is None:
        dtypes = [getattr(X, "dtype", None)]
    if any(getattr(dtype, "kind", None) in ("M", "m") for dtype in dtypes):
        raise ValueError(
            "X has datetime or timedelta features; convert them to numbers on a "
            "known scale (for example days or years since a fixed date) first."
        )


def check_classes(y):
    """Sorted distinct labels of ``y``, which must be a classification target with >= 2 classes.

    Raises
    ------
    ValueError
        For continuous or multi-output targets, or a single class.
    """
    try:
        check_classification_targets(y)
        classes = np.unique(y)
    except TypeError as exc:  # e.g. "'<' not supported between 'int' and 'str'"
        raise ValueError(
            f"y mixes label types that cannot be ordered ({exc}); use labels of one "
            "type, e.g. all strings."
        ) from None
    if classes.size < 2:
        raise ValueError(
            "y contains only one class and classes=None, so the model would have one "
            "class. Declare the classes, e.g. classes=[0, 1], to fit anyway."
        )
    return classes


def warn_if_column_vector(y):
    """scikit-learn's DataConversionWarning for a ``(n, 1)`` y, emitted from ``fit``.

    The domain checks run silenced (``dpsk._silence``), so this one warning,
    which depends on the shape of ``y`` alone, is issued before them.
    """
    from sklearn.exceptions import DataConversionWarning

    shape = np.shape(y) if hasattr(y, "shape") or isinstance(y, (list, tuple)) else ()
    if len(shape) == 2 and shape[1] == 1:
        warnings.warn(
            "A column-vector y was passed when a 1d array was expected. Please change "
            "the shape of y to (n_samples, ), for example using ravel().",
            DataConversionWarning,
            stacklevel=_user_stacklevel(),
        )


def warn_if_classes_undeclared(classes):
    """Warn, with a fixed text, that ``classes=None`` makes the labels of ``y`` public.

    Called by ``fit`` before the data is looked at: whether it warns depends on
    the parameter alone.
    """
    if classes is None:
        warnings.warn(_CLASSES_FROM_DATA, ClassesFromDataWarning, stacklevel=_user_stacklevel())


def resolve_classes(y, classes):
    """The ``classes_`` of a fit: the declared ones, or those of ``y``.

    Parameters
    ----------
    y : ndarray of shape (n,)
    classes : array-like of shape (K,) or None
        Declared labels, K >= 2 distinct values of one type. None: read them
        from ``y`` (``fit`` has warned about that already).

    Returns
    -------
    classes_ : ndarray of shape (K,)
        Sorted.

    Raises
    ------
    ValueError
        For bad declared classes, or labels of ``y`` outside them (the message
        does not name them). Both are refusals of input outside the domain,
        made before any budget is spent.
    """
    if classes is None:
        return check_classes(y)
    declared = check_declared_classes(classes)
    check_classification_targets(y)  # its messages name the target type, not values
    try:
        inside = np.isin(y, declared)
    except (TypeError, ValueError):
        inside = np.zeros(1, dtype=bool)
    if not np.all(inside):
        raise ValueError(
            "y contains labels that are not among the declared classes (or of another "
            "type). Labels outside `classes` are outside the input domain; nothing was "
            "spent."
        )
    return declared


def check_declared_classes(classes):
    """Validate a ``classes`` parameter: 1-d, >= 2 distinct labels of one type, sorted.

    Depends on the parameter only.
    """
    try:
        values = np.asarray(classes)
        declared = np.unique(values)
    except TypeError:
        raise ValueError(
            "classes mixes label types that cannot be ordered; use labels of one type."
        ) from None
    if values.ndim != 1 or declared.size != values.size or declared.size < 2:
        raise ValueError(
            "classes must be a 1-d list of at least two distinct labels, got "
            f"{classes!r}."
        )
    if declared.dtype.kind == "f" and not np.all(np.isfinite(declared)):
        raise ValueError("classes must not contain NaN or infinite values.")
    return declared


def binary_targets(y, classes):
    """The {-1, +1} label vectors of the binary problems for ``classes``.

    Two classes give one problem (``classes[1]`` is +1, as in scikit-learn);
    more give one-vs-rest, one problem per class.

    Returns
    -------
    list of ndarray of shape (n,)
    """
    if len(classes) == 2:
        return [np.where(y == classes[1], 1.0, -1.0)]
    return [np.where(y == c, 1.0, -1.0) for c in classes]
