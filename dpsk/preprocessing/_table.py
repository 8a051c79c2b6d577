"""A data-independent encoder for mixed numeric and categorical tables, from a declared schema."""

import math
from collections.abc import Hashable, Mapping
from numbers import Integral, Real

import numpy as np
from sklearn.compose import ColumnTransformer
from sklearn.impute import SimpleImputer
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer, OneHotEncoder
from sklearn.utils.validation import _num_samples

from .._data._validation import PublicRefusal
from ._bounds import PrivateBoundsScaler
from ._data import BoundedScaler

__all__ = ["TableEncoder", "make_table_encoder", "table_norm_bound"]

_HANDLE_UNKNOWN = ("ignore", "error")


def _is_number(value):
    return isinstance(value, Real) and not isinstance(value, (bool, np.bool_))


def _is_bool(value):
    return isinstance(value, (bool, np.bool_))


def _check_keys(numeric, categorical):
    """Column keys: all strings (DataFrame names) or all integers (positions), no overlap."""
    keys = list(numeric) + list(categorical)
    if not keys:
        raise ValueError("The schema declares no columns: give at least one numeric or "
                         "categorical column.")
    if not (all(isinstance(k, str) for k in keys)
            or all(isinstance(k, Integral) and not isinstance(k, bool) for k in keys)):
        raise ValueError("Column keys must be all strings (DataFrame column names) or all "
                         f"integers (column positions), got {keys!r}.")
    both = sorted(set(numeric) & set(categorical), key=str)
    if both:
        raise ValueError(f"Columns {both} are declared both numeric and categorical.")


def _check_numeric(numeric):
    """The declared bounds as ``{column: (low, high) or None}`` with finite floats, low < high.

    ``None`` declares a numeric column without bounds: they are learned privately.
    """
    checked = {}
    for column, bounds in numeric.items():
        if bounds is None:
            checked[column] = None
            continue
        if (isinstance(bounds, (str, bytes)) or not hasattr(bounds, "__len__")
                or len(bounds) != 2 or not all(_is_number(b) for b in bounds)):
            raise ValueError(f"numeric[{column!r}] must be a pair (low, high) of numbers, "
                             f"or None to learn its bounds privately, got {bounds!r}.")
        low, high = float(bounds[0]), float(bounds[1])
        if not (math.isfinite(low) and math.isfinite(high)) or low >= high:
            raise ValueError(f"numeric[{column!r}] must have finite bounds with low < high, "
                             f"got {bounds!r}.")
        checked[column] = (low, high)
    return checked


def _check_categories(column, values, fill):
    """One column's declared categories as a list ready for ``OneHotEncoder``.

    A string ``fill`` not among them is appended (missing entries get their own
    indicator); numeric categories are sorted, as ``OneHotEncoder`` requires.
    """
    if isinstance(values, (str, bytes, Mapping)) or not hasattr(values, "__iter__"):
        raise ValueError(f"categorical[{column!r}] must be a list of categories, got "
                         f"{values!r}.")
    values = list(values)
    if not values:
        raise ValueError(f"categorical[{column!r}] declares no categories.")
    for value in values:
        if value is None or (_is_number(value) and math.isnan(value)):
            raise ValueError(f"categorical[{column!r}] contains a missing value ({value!r}); "
                             "declare how missing entries are encoded with fill_categorical "
                             "instead.")
        if not isinstance(value, Hashable):
            raise ValueError(f"categorical[{column!r}] contains an unhashable value "
                             f"{value!r}.")
    if len(set(values)) != len(values):
        raise ValueError(f"categorical[{column!r}] lists a category more than once: "
                         f"{values!r}.")
    if _coded_as_text(values, fill):
        # Booleans (a bool or pandas "boolean" column), and numeric codes next to a
        # string fill: encoded through their names ("False", "1"), so that the
        # fill value can sit beside them (_as_categories maps the entries).
        values = [_category_text(v) for v in values]
    strings = all(isinstance(v, str) for v in values)
    if not (strings or all(_is_number(v) for v in values)):
        raise ValueError(f"categorical[{column!r}] must hold only strings, only numbers or "
                         f"only booleans, got {values!r}.")
    if fill is not None:
        if strings != isinstance(fill, str):
            raise ValueError(f"fill_categorical={fill!r} does not match the type of the "
                             f"categories of {column!r} (strings or numbers); give a fill "
                             "value of that type, or None.")
        if fill not in values:
            values.append(fill)
    return values if strings else sorted(values)


def _coded_as_text(values, fill):
    """Whether a column's declared categories are encoded through their names."""
    return (all(_is_bool(v) for v in values)
            or (isinstance(fill, str) and all(_is_number(v) for v in values)))


def _category_text(value):
    """The name a boolean or numeric category is encoded by: ``"True"``, ``"1"``, ``"2.5"``."""
    if _is_bool(value):
        return str(bool(value))
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _check_schema(numeric, categorical, fill_categorical=None):
    """Validate a schema; return it as ``(bounds, categories)`` dicts."""
    numeric = {} if numeric is None else numeric
    categorical = {} if categorical is None else categorical
    for name, value in (("numeric", numeric), ("categorical", categorical)):
        if not isinstance(value, Mapping):
            raise TypeError(f"{name} must be a mapping from column to its declaration, got "
                            f"{type(value).__name__}.")
    _check_keys(numeric, categorical)
    if fill_categorical is not None and not (isinstance(fill_categorical, str)
                                             or _is_number(fill_categorical)):
        raise ValueError(f"fill_categorical must be a string, a number or None, got "
                         f"{fill_categorical!r}.")
    bounds = _check_numeric(numeric)
    categories = {column: _check_categories(column, values, fill_categorical)
                  for column, values in categorical.items()}
    return bounds, categories


def _is_missing(values):
    """Elementwise: None, NaN, NaT or ``pandas.NA``, in an object array."""
    try:
        from pandas import isna
    except ImportError:  # without pandas there is no pandas.NA to find
        return np.frompyfunc(lambda v: v is None or v != v, 1, 1)(values).astype(bool)
    return np.asarray(isna(values), dtype=bool)


def _missing_to_nan(X):
    """Mark every missing entry of an object array with NaN, entry by entry.

    ``SimpleImputer`` finds missing entries of an object array by ``x != x``,
    which is true for NaN only: a None stays (pandas < 3 keeps None in object
    columns; pandas 3 stores missing strings as NaN) and ``pandas.NA`` makes it
    fail. Stateless, so the encoder still learns nothing from the data.
    """
    values = np.asarray(X)
    if values.dtype != object:  # numbers: NaN is already the only missing marker
        return values
    values = values.copy()
    values[_is_missing(values)] = np.nan
    return values


def _as_numbers(X, columns):
    """Numeric columns as float64 with NaN for missing entries, or a public refusal.

    Converting in this stateless step, rather than in ``SimpleImputer``, keeps
    the offending value out of the message: numpy's error would quote it. The
    refusals name the column (declared, public) and never the value.
    """
    values = _missing_to_nan(X)
    if values.ndim == 1:
        values = values.reshape(-1, 1)
    out = np.empty(values.shape, dtype=np.float64)
    for j, column in enumerate(columns):
        try:
            out[:, j] = values[:, j].astype(np.float64)
        except (TypeError, ValueError):
            failed = True
        else:
            failed = False
        if failed:
            raise PublicRefusal(f"Numeric column {column!r} holds a value that is not a "
                                "number. The encoder refuses it before anything is fitted "
                                "or spent.")
        if np.isinf(out[:, j]).any():
            raise PublicRefusal(f"Numeric column {column!r} holds an infinite value. The "
                                "encoder refuses it before anything is fitted or spent; "
                                "replace it by a number or a missing value (NaN).")
    return out


def _as_categories(X, columns, categories, fill, refuse_unknown, coded=None):
    """Categorical columns with NaN for missing entries, checked against the declaration.

    A column of string categories is returned as objects even when every entry
    is missing (pandas stores such a column as float64), so the string fill
    value can be put in. With ``refuse_unknown`` an undeclared value is refused
    here, by column name only: ``OneHotEncoder``'s own error would quote it.
    """
    values = _missing_to_nan(X)
    if values.dtype != object and any(isinstance(c, str) for cats in categories for c in cats):
        values = values.astype(object)
    for j, declared in (coded or {}).items():  # booleans and numeric codes: by name
        present = ~_is_missing(values[:, j])
        values[present, j] = [_declared_text(v, declared) for v in values[present, j]]
    if refuse_unknown:
        missing = _is_missing(values) if values.dtype == object else np.isnan(values)
        for j, (column, declared) in enumerate(zip(columns, categories)):
            allowed = set(declared) | ({fill} if fill is not None else set())
            if any(v not in allowed for v in values[~missing[:, j], j]):
                raise PublicRefusal(
                    f"Categorical column {column!r} holds a value outside its declared "
                    "categories (handle_unknown='error'). The encoder refuses it before "
                    "anything is fitted or spent.")
    return values


def _declared_text(value, declared):
    """The name of the declared category equal to ``value``, or ``value`` (undeclared)."""
    if _is_bool(value) or _is_number(value):
        for category in declared:
            if value == category:
                return _category_text(category)
    return value


def _numeric_fill(fill_numeric, low, high):
    if isinstance(fill_numeric, str) and fill_numeric == "midpoint":
        return (low + high) / 2.0
    return float(fill_numeric)


class TableEncoder(ColumnTransformer):
    """The column transformer :func:`make_table_encoder` builds: checks its columns first.

    A :class:`~sklearn.compose.ColumnTransformer` in every respect (and
    accepted by :func:`dpsk.check_pipeline` as one), except that ``fit``,
    ``fit_transform`` and ``transform`` first refuse input without rows or
    without a declared column, with a
    :class:`~dpsk._data._validation.PublicRefusal` that names the missing
    columns (they come from the schema, so the message is public) instead of
    scikit-learn's messages. Build it with :func:`make_table_encoder`.
    """

    def _declared_columns(self):
        return [column for _, _, columns in self.transformers for column in columns]

    def _check_table(self, X):
        try:
            n_rows = _num_samples(X)
        except TypeError:
            n_rows = None  # not a table: scikit-learn refuses it
        if n_rows == 0:
            raise PublicRefusal("X has no rows. The encoder refuses it before anything is "
                                "fitted or spent.")
        declared = self._declared_columns()
        if all(isinstance(c, str) for c in declared):
            if not hasattr(X, "columns"):
                raise PublicRefusal("The schema names its columns, so X must be a pandas "
                                    "DataFrame with those column names. Nothing was spent.")
            missing = [c for c in declared if c not in set(X.columns)]
        else:
            width = getattr(X, "shape", (0, None))[1:2]
            missing = ([c for c in declared if c >= width[0]] if width and width[0] is not None
                       else [])
        if missing:
            raise PublicRefusal(f"Columns {missing} of the schema are missing from X. The "
                                "encoder refuses it before anything is fitted or spent.")

    def fit(self, X, y=None, **params):
        """Check the declared columns are there, then fit as a ColumnTransformer."""
        self._check_table(X)
        return super().fit(X, y, **params)

    def fit_transform(self, X, y=None, **params):
        """Check the declared columns are there, then fit_transform as a ColumnTransformer."""
        self._check_table(X)
        return super().fit_transform(X, y, **params)

    def transform(self, X, **params):
        """Check the declared columns are there, then transform as a ColumnTransformer."""
        self._check_table(X)
        return super().transform(X, **params)


def make_table_encoder(numeric=None, categorical=None, *, fill_numeric="midpoint",
                       fill_categorical="__missing__", handle_unknown="ignore",
                       bounds_epsilon=None, bounds_accountant=None):
    """Build a column transformer that encodes a mixed table from a declared schema.

    With declared bounds everything the transformer does is fixed by the schema:
    numeric columns are mapped from declared bounds to ``[0, 1]`` (clipping
    outside them), categorical columns are one-hot encoded over declared
    category lists, and missing entries get declared fill values. Its ``fit``
    then learns nothing from the values of the data, so it can sit in front of
    any dpsk estimator at no privacy cost, and :func:`dpsk.check_pipeline`
    accepts it. Columns not in the schema are dropped.

    A numeric column declared with ``None`` instead of bounds gets them from a
    :class:`PrivateBoundsScaler`: its fit releases each such column's bounds
    with ``bounds_epsilon``-differential privacy (all such columns together),
    charged to ``bounds_accountant`` (None: the default ledger, which the
    private model after it charges too). The output's norm bound is the same.

    Parameters
    ----------
    numeric : mapping of column to (low, high) or None, default=None
        Declared bounds of each numeric column (finite, ``low < high``), or
        ``None`` for a column whose bounds are learned privately
        (``dict.fromkeys(names)`` learns every bound). Keys are DataFrame column names (strings)
        or column positions (integers), the same kind for every column in the
        schema.
    categorical : mapping of column to list, default=None
        Declared categories of each categorical column: non-empty, no
        duplicates, only strings, only numbers or only booleans (a bool or
        pandas ``boolean`` column, declared ``[False, True]``; its indicator
        columns are named ``<column>_False`` and ``<column>_True``), no
        missing value. Booleans, and numeric codes (``[0, 1]``) next to a
        string ``fill_categorical``, are encoded through their names
        (``<column>_1``), so that missing entries get their own indicator. Values
        outside the list are handled as ``handle_unknown`` says.
    fill_numeric : "midpoint" or float, default="midpoint"
        Value put in place of a missing (NaN) numeric entry, before scaling:
        the midpoint of the column's bounds, or one number for every column
        (a number outside a column's bounds is clipped to them).
    fill_categorical : str, float or None, default="__missing__"
        Category put in place of a missing categorical entry (NaN, None or
        ``pandas.NA``, whatever the column's dtype and the pandas version). If
        it is not in a column's declared list it is added to it, so missing
        entries get their own indicator column. With None, a missing entry is
        treated as an undeclared value (see ``handle_unknown``).
    handle_unknown : {"ignore", "error"}, default="ignore"
        What a value outside the declared categories becomes: a block of zeros
        (``"ignore"``), or an error when the encoder is fitted or used
        (``"error"``): a refusal of input outside the declared domain, which
        happens before the private model's fit and so costs nothing. The
        message names the column, never the value.
    bounds_epsilon : float or None, default=None
        Privacy parameter of the private bounds (all ``None`` columns
        together, split evenly over their ends), > 0. Required when a numeric
        column has no declared bounds; refused otherwise.
    bounds_accountant : BudgetAccountant or None, default=None
        The ledger the private bounds are charged to.

    Returns
    -------
    encoder : TableEncoder
        A :class:`~sklearn.compose.ColumnTransformer` that first checks the
        declared columns are present (refusals name the column). Unfitted,
        with ``sparse_threshold=0`` and ``remainder="drop"``. Its output has,
        in this order, one column per numeric column with declared bounds,
        one per numeric column without (values in ``[0, 1]``), then the one-hot
        columns of each categorical column. Every output row has
        L2 norm at most :func:`table_norm_bound` of the same schema.

    Raises
    ------
    ValueError, TypeError
        If the schema is malformed. Messages quote the schema (public), never data;
        so do the refusals at fit or transform time (a non-number in a numeric
        column, an undeclared category with ``handle_unknown="error"``).

    See Also
    --------
    table_norm_bound : the bound on the output's row norms, for ``data_norm``.
    BoundedScaler : the numeric part, declared bounds.
    PrivateBoundsScaler : the numeric part, private bounds.

    Notes
    -----
    The schema must come from knowledge of the domain (a data dictionary, a code
    book), never from the training data: a category list or bound read off the
    data reveals which values occur.

    Examples
    --------
    >>> import pandas as pd
    >>> from dpsk.preprocessing import make_table_encoder, table_norm_bound
    >>> numeric = {"age": (17, 90)}
    >>> categorical = {"sex": ["F", "M"]}
    >>> encoder = make_table_encoder(numeric, categorical)
    >>> frame = pd.DataFrame({"age": [17.0, None, 120.0], "sex": ["M", None, "F"]})
    >>> encoder.fit_transform(frame)
    array([[0. , 0. , 1. , 0. ],
           [0.5, 0. , 0. , 1. ],
           [1. , 1. , 0. , 0. ]])
    >>> float(table_norm_bound(numeric, categorical))
    1.414...
    """
    bounds, categories = _check_schema(numeric, categorical, fill_categorical)
    if not ((isinstance(fill_numeric, str) and fill_numeric == "midpoint")
            or (_is_number(fill_numeric) and math.isfinite(fill_numeric))):
        raise ValueError(f"fill_numeric must be 'midpoint' or a finite number, got "
                         f"{fill_numeric!r}.")
    if not (isinstance(handle_unknown, str) and handle_unknown in _HANDLE_UNKNOWN):
        raise ValueError(f"handle_unknown must be one of {_HANDLE_UNKNOWN}, got "
                         f"{handle_unknown!r}.")
    learned = [column for column, pair in bounds.items() if pair is None]
    _check_bounds_epsilon(bounds_epsilon, learned)
    bounds = {column: pair for column, pair in bounds.items() if pair is not None}
    # One small pipeline per numeric column: SimpleImputer takes one fill value, and
    # the midpoint differs from column to column. Numbers in an object column can
    # hold None or pandas.NA too, hence the same marking step as for categories.
    transformers = [
        (f"numeric{i}",
         Pipeline([
             ("mark_missing", FunctionTransformer(
                 _as_numbers, kw_args={"columns": [column]},
                 feature_names_out="one-to-one")),
             ("impute", SimpleImputer(strategy="constant",
                                      fill_value=_numeric_fill(fill_numeric, low, high),
                                      keep_empty_features=True)),
             ("scale", BoundedScaler(lower=low, upper=high)),
         ]),
         [column])
        for i, (column, (low, high)) in enumerate(bounds.items())
    ]
    if learned:
        transformers.append(("numeric_private",
                             _private_numeric(learned, fill_numeric, bounds_epsilon,
                                              bounds_accountant),
                             learned))
    if categories:
        onehot = OneHotEncoder(categories=list(categories.values()),
                               handle_unknown=handle_unknown, sparse_output=False)
        # Missing entries are marked the same way even without a fill, so that
        # None, NaN and pandas.NA are all the same undeclared value to OneHotEncoder.
        mark = FunctionTransformer(
            _as_categories, feature_names_out="one-to-one",
            kw_args={"columns": list(categories), "categories": list(categories.values()),
                     "fill": fill_categorical, "refuse_unknown": handle_unknown == "error",
                     "coded": {j: list(categorical[column])
                               for j, column in enumerate(categorical or {})
                               if _coded_as_text(list(categorical[column]),
                                                 fill_categorical)}})
        steps = [("mark_missing", mark), ("onehot", onehot)]
        if fill_categorical is not None:
            steps.insert(1, ("impute", SimpleImputer(strategy="constant",
                                                     fill_value=fill_categorical,
                                                     keep_empty_features=True)))
        transformers.append(("categorical", Pipeline(steps), list(categories)))
    return TableEncoder(transformers, remainder="drop", sparse_threshold=0,
                        verbose_feature_names_out=False)


def _check_bounds_epsilon(bounds_epsilon, learned):
    if learned and bounds_epsilon is None:
        raise ValueError(f"Numeric columns {learned} have no declared bounds: give "
                         "bounds_epsilon (> 0) to learn them privately, or declare "
                         "(low, high) for each.")
    if not learned and bounds_epsilon is not None:
        raise ValueError("bounds_epsilon is given but every numeric column has declared "
                         "bounds; nothing would be learned. Declare a column with None to "
                         "learn its bounds privately.")
    if learned and not (_is_number(bounds_epsilon) and 0 < bounds_epsilon < math.inf):
        raise ValueError(f"bounds_epsilon must be a finite number > 0, got "
                         f"{bounds_epsilon!r}.")


def _private_numeric(columns, fill_numeric, epsilon, accountant):
    """The block of numeric columns whose bounds are learned privately.

    A missing entry is left out of the quantiles and mapped to the middle of
    ``[0, 1]`` (the midpoint of the learned bounds) with ``fill_numeric="midpoint"``;
    a declared number is put in before the bounds are learned, as for declared bounds.
    """
    steps = [("mark_missing", FunctionTransformer(_as_numbers, kw_args={"columns": columns},
                                                  feature_names_out="one-to-one"))]
    midpoint = isinstance(fill_numeric, str) and fill_numeric == "midpoint"
    if not midpoint:
        steps.append(("impute", SimpleImputer(strategy="constant", fill_value=float(fill_numeric),
                                              keep_empty_features=True)))
    steps.append(("bounds", PrivateBoundsScaler(epsilon=epsilon, accountant=accountant,
                                                missing="midpoint" if midpoint else "error")))
    return Pipeline(steps)


def table_norm_bound(numeric=None, categorical=None):
    """Bound on the L2 norm of a row encoded by :func:`make_table_encoder`.

    Each numeric column becomes one value in ``[0, 1]`` and adds at most 1 to
    the squared norm; each categorical column becomes a one-hot block with at
    most one entry equal to 1 (none for an ignored undeclared value) and adds at
    most 1. With ``p`` numeric and ``c`` categorical columns the bound is
    ``sqrt(p + c)``, whatever the data; give it to the private model as
    ``data_norm`` (no row is then clipped) or give a smaller value.

    Parameters
    ----------
    numeric, categorical : mapping, default=None
        The schema, as for :func:`make_table_encoder` (validated the same way).
        A numeric column without declared bounds counts the same: the private
        bounds map it into ``[0, 1]`` too, so the bound is known before fitting.

    Returns
    -------
    bound : float
        ``sqrt(p + c)``.

    Examples
    --------
    >>> from dpsk.preprocessing import table_norm_bound
    >>> table_norm_bound({"age": (17, 90), "hours": (1, 99)}, {"sex": ["F", "M"]})
    1.7320508075688772
    """
    bounds, categories = _check_schema(numeric, categorical)
    return math.sqrt(len(bounds) + len(categories))
