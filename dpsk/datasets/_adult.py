"""The UCI Adult (census income) data set, shipped inside the package.

The two original UCI files are embedded gzip-compressed in ``data/`` so that
examples, tests and benchmarks run offline and always see the same bytes.
"""

import functools
import gzip
import hashlib
import itertools
import numbers
import zlib
from importlib import resources

import numpy as np
from sklearn.utils import Bunch

__all__ = ["load_adult", "preprocess_adult"]

# (packaged file, sha256 of the decompressed original, size of the original).
# The hashes are those of the UCI originals, so a mismatch means the shipped
# copy is damaged or was replaced, never that UCI changed the data under us.
_DATA_FILES = (
    (
        "adult.data.gz",
        "5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d",
        3974305,
    ),
    (
        "adult.test.gz",
        "a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05",
        2003153,
    ),
)

ATTRIBUTE_NAMES = (
    "age",
    "workclass",
    "fnlwgt",
    "education",
    "education-num",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
    "native-country",
)

TARGET_NAME = "income"
TARGET_NAMES = ("<=50K", ">50K")

# Largest absolute value of each numeric attribute over all 48,842 rows of
# adult.data + adult.test. They equal the maxima over the 45,222 complete rows,
# so it does not matter which of the two the paper meant. Freezing them makes
# the scaling a fixed, documented map that is identical for every split.
NUMERIC_MAX_ABS = {
    "age": 90.0,
    "fnlwgt": 1490400.0,
    "education-num": 16.0,
    "capital-gain": 99999.0,
    "capital-loss": 4356.0,
    "hours-per-week": 99.0,
}

# Every value each categorical attribute takes anywhere in adult.data +
# adult.test ("?" excluded), sorted. These are exactly the domains listed in
# adult.names. Frozen so that the one-hot layout never depends on which rows
# are encoded. "workclass=Never-worked" is always 0 after dropping incomplete
# rows (every such person has a missing occupation); it is kept anyway so the
# layout covers the full attribute domain.
CATEGORIES = {
    "workclass": (
        "Federal-gov", "Local-gov", "Never-worked", "Private", "Self-emp-inc",
        "Self-emp-not-inc", "State-gov", "Without-pay",
    ),
    "education": (
        "10th", "11th", "12th", "1st-4th", "5th-6th", "7th-8th", "9th",
        "Assoc-acdm", "Assoc-voc", "Bachelors", "Doctorate", "HS-grad",
        "Masters", "Preschool", "Prof-school", "Some-college",
    ),
    "marital-status": (
        "Divorced", "Married-AF-spouse", "Married-civ-spouse",
        "Married-spouse-absent", "Never-married", "Separated", "Widowed",
    ),
    "occupation": (
        "Adm-clerical", "Armed-Forces", "Craft-repair", "Exec-managerial",
        "Farming-fishing", "Handlers-cleaners", "Machine-op-inspct",
        "Other-service", "Priv-house-serv", "Prof-specialty",
        "Protective-serv", "Sales", "Tech-support", "Transport-moving",
    ),
    "relationship": (
        "Husband", "Not-in-family", "Other-relative", "Own-child",
        "Unmarried", "Wife",
    ),
    "race": (
        "Amer-Indian-Eskimo", "Asian-Pac-Islander", "Black", "Other", "White",
    ),
    "sex": ("Female", "Male"),
    "native-country": (
        "Cambodia", "Canada", "China", "Columbia", "Cuba",
        "Dominican-Republic", "Ecuador", "El-Salvador", "England", "France",
        "Germany", "Greece", "Guatemala", "Haiti", "Holand-Netherlands",
        "Honduras", "Hong", "Hungary", "India", "Iran", "Ireland", "Italy",
        "Jamaica", "Japan", "Laos", "Mexico", "Nicaragua",
        "Outlying-US(Guam-USVI-etc)", "Peru", "Philippines", "Poland",
        "Portugal", "Puerto-Rico", "Scotland", "South", "Taiwan", "Thailand",
        "Trinadad&Tobago", "United-States", "Vietnam", "Yugoslavia",
    ),
}


def _build_layout():
    # One block per attribute, in the order of adult.names, so a column's
    # position tells which attribute it came from.
    names, slices = [], {}
    for attr in ATTRIBUTE_NAMES:
        start = len(names)
        if attr in NUMERIC_MAX_ABS:
            names.append(attr)
        else:
            names.extend(f"{attr}={value}" for value in CATEGORIES[attr])
        slices[attr] = slice(start, len(names))
    return tuple(names), slices


PREPROCESSED_FEATURE_NAMES, _BLOCKS = _build_layout()
_N_RAW_FIELDS = len(ATTRIBUTE_NAMES) + 1  # 14 attributes + the label
_MISSING = "?"

_DESCR = """\
.. _adult_dataset:

Adult (census income) data set
------------------------------

Extracted by Barry Becker from the 1994 US Census database. The task is to
predict whether a person earns more than $50K a year.

**Data set characteristics**

:Rows: 48,842 (32,561 from adult.data followed by 16,281 from adult.test);
    45,222 without missing values
:Attributes: 14 (6 numeric, 8 categorical); missing values coded "?" in the
    original files
:Target: income, "<=50K" or ">50K" (about 24% ">50K")
:Preprocessed (``preprocess=True``): 45,222 rows x {n_features} float64
    features (numeric attributes divided by their maximum absolute value,
    categorical attributes one-hot encoded, rows scaled to L2 norm <= 1) as
    in Chaudhuri, Monteleoni & Sarwate (2011), Section 6.1. Note that the
    column maxima are computed from the data, which is not a private step.

**Source and license**

Becker, B. and Kohavi, R. (1996). Adult. UCI Machine Learning Repository.
https://doi.org/10.24432/C5XW20 . Licensed under Creative Commons
Attribution 4.0 International (CC BY 4.0). The original files are shipped
unmodified, only gzip-compressed.

**References**

- Kohavi, R. (1996). Scaling up the accuracy of Naive-Bayes classifiers: a
  decision-tree hybrid. KDD-96.
- Chaudhuri, K., Monteleoni, C. and Sarwate, A. D. (2011). Differentially
  private empirical risk minimization. JMLR 12, 1069-1109.
""".format(n_features=len(PREPROCESSED_FEATURE_NAMES))


# --------------------------------------------------------------------------
# Reading the embedded files
# --------------------------------------------------------------------------


def _read_packaged_file(filename):
    """Return the bytes of ``data/<filename>`` from the installed package."""
    # importlib.resources rather than a path next to __file__: it also works
    # when the package is imported from a zip or another non-file loader.
    resource = resources.files(__package__).joinpath("data").joinpath(filename)
    try:
        return resource.read_bytes()
    except FileNotFoundError as exc:
        raise FileNotFoundError(
            f"The embedded data file {filename!r} is missing from the dpsk "
            "installation; reinstall dpsk (the Adult data ship with the "
            "package and are never downloaded)."
        ) from exc


def _read_verified(filename, expected_sha256, expected_size):
    """Decompress one embedded file and check it against its known sha256."""
    compressed = _read_packaged_file(filename)
    try:
        content = gzip.decompress(compressed)
    except (OSError, EOFError, zlib.error) as exc:
        raise OSError(
            f"The embedded data file {filename!r} is not a valid gzip file "
            f"({exc}); the dpsk installation is corrupted, reinstall it."
        ) from exc
    actual = hashlib.sha256(content).hexdigest()
    if actual != expected_sha256:
        raise OSError(
            f"sha256 checksum mismatch for the embedded data file "
            f"{filename!r}: expected {expected_sha256} "
            f"({expected_size} bytes), got {actual} ({len(content)} bytes). "
            "The dpsk installation is corrupted; reinstall it."
        )
    return content


def _parse(content):
    """Split one UCI file into an object array of stripped string fields."""
    lines = content.decode("ascii").splitlines()
    # adult.test opens with "|1x3 Cross validator" and both files end with a
    # blank line; neither is a record.
    lines = [line for line in lines if line and not line.startswith("|")]
    # One split over the joined text is several times faster than splitting
    # line by line, and the verified originals never contain ", " inside a
    # field, so the flat list reshapes cleanly into records.
    flat = ", ".join(lines).split(", ")
    if len(flat) != len(lines) * _N_RAW_FIELDS:
        # Unreachable for the verified originals; guards a future edit of the
        # constants pointing at a file with a different layout.
        raise ValueError("unexpected layout of the embedded Adult data")
    return np.array(flat, dtype=object).reshape(len(lines), _N_RAW_FIELDS)


@functools.lru_cache(maxsize=1)
def _load_raw_arrays():
    """Parse both embedded files once per process.

    Returns read-only arrays; public callers get copies so that nobody can
    alter what later calls see.
    """
    fields = np.concatenate(
        [_parse(_read_verified(*spec)) for spec in _DATA_FILES], axis=0
    )
    X = np.empty((fields.shape[0], len(ATTRIBUTE_NAMES)), dtype=object)
    for j, attr in enumerate(ATTRIBUTE_NAMES):
        column = fields[:, j]
        missing = column == _MISSING
        if attr in NUMERIC_MAX_ABS:
            values = column.copy()
            values[missing] = np.nan
            X[:, j] = values.astype(np.float64)
        else:
            column = column.copy()
            column[missing] = None
            X[:, j] = column
    # Only adult.test writes the label with a trailing dot (">50K.").
    y = np.array([label.rstrip(".") for label in fields[:, -1]], dtype=object)
    X.flags.writeable = False
    y.flags.writeable = False
    return X, y


# --------------------------------------------------------------------------
# Preprocessing
# --------------------------------------------------------------------------


def _is_missing(value):
    if value is None:
        return True
    if isinstance(value, float):
        return value != value
    if isinstance(value, str):
        return value.strip() == _MISSING
    # pandas.NA, checked by name so that pandas stays an optional dependency.
    return type(value).__name__ == "NAType"


def _numeric_column(attr, column):
    """Return float values and a missing-value mask for one numeric column."""
    try:
        values = column.astype(np.float64)
    except (TypeError, ValueError):
        # Slow path only for columns holding "?" or other odd entries.
        values = np.empty(column.shape[0], dtype=np.float64)
        for i, value in enumerate(column):
            if _is_missing(value):
                values[i] = np.nan
                continue
            try:
                values[i] = float(value)
            except (TypeError, ValueError):
                raise ValueError(
                    f"Column {attr!r} must be numeric; found {value!r} in row {i}."
                ) from None
    missing = np.isnan(values)
    if np.isinf(values).any():
        raise ValueError(f"Column {attr!r} contains infinite values.")
    return values, missing


def _categorical_codes(attr, column):
    """Map one categorical column to category indices.

    Returns ``codes`` with -1 for missing values and -2 for values outside
    the fixed category list.
    """
    lookup = {value: i for i, value in enumerate(CATEGORIES[attr])}
    n_samples = column.shape[0]
    try:
        # map(dict.get) runs the per-cell loop in C; it measured faster than
        # both a generator and a searchsorted over column.astype(str).
        codes = np.fromiter(
            map(lookup.get, column, itertools.repeat(-3, n_samples)),
            dtype=np.intp,
            count=n_samples,
        )
    except TypeError:
        # Some cell is unhashable; let the per-cell pass below judge them all.
        codes = np.full(n_samples, -3, dtype=np.intp)
    # Only unmatched cells (missing values, or strings padded with spaces as
    # read_csv(sep=",") leaves them) need a closer, per-cell look.
    for i in np.flatnonzero(codes == -3):
        value = column[i]
        if _is_missing(value):
            codes[i] = -1
        elif isinstance(value, str) and value.strip() in lookup:
            codes[i] = lookup[value.strip()]
        else:
            codes[i] = -2
    return codes


def _as_columns(X_raw):
    """Return the 14 attributes of ``X_raw`` as a list of 1-D object arrays."""
    if hasattr(X_raw, "columns") and hasattr(X_raw, "iloc"):
        # A DataFrame is matched by column name so that column order and any
        # extra columns (such as the target in ``bunch.frame``) do not matter.
        present = set(map(str, X_raw.columns))
        absent = [attr for attr in ATTRIBUTE_NAMES if attr not in present]
        if absent:
            raise ValueError(
                f"X_raw is missing the Adult columns {absent}; expected the "
                f"14 columns {list(ATTRIBUTE_NAMES)}."
            )
        return [X_raw[attr].to_numpy(dtype=object) for attr in ATTRIBUTE_NAMES]

    X = np.asarray(X_raw, dtype=object)
    if X.ndim != 2 or X.shape[1] != len(ATTRIBUTE_NAMES):
        raise ValueError(
            "X_raw must be a 2-D array with the 14 Adult attributes as columns "
            f"in the order {list(ATTRIBUTE_NAMES)}; got shape {X.shape}."
        )
    return [X[:, j] for j in range(X.shape[1])]


def preprocess_adult(X_raw):
    """Preprocess raw Adult records as Chaudhuri et al. (2011) did.

    Applies the fixed transformation of Section 6.1 of Chaudhuri, Monteleoni
    and Sarwate (2011) to any rows of the Adult data set, so that a custom
    split gets exactly the columns that ``load_adult(preprocess=True)``
    produces:

    1. rows with at least one missing attribute are dropped;
    2. each numeric attribute is divided by its largest absolute value in the
       complete Adult data set (constants stored in this module, not
       recomputed from ``X_raw``);
    3. each categorical attribute is one-hot encoded over its full, fixed
       and sorted list of values;
    4. every row whose Euclidean norm exceeds 1 is divided by its norm.

    Parameters
    ----------
    X_raw : pandas.DataFrame or array-like of shape (n_samples, 14)
        Raw records as returned by ``load_adult(preprocess=False)``. A
        DataFrame is matched by column name (extra columns are ignored); any
        other input must hold the 14 attributes in the order of
        ``load_adult().feature_names``. Missing values may be ``None``,
        ``NaN``, ``pandas.NA`` or the UCI marker ``"?"``. Surrounding spaces
        in categorical values are ignored.

    Returns
    -------
    X : ndarray of shape (n_kept, n_features), dtype float64
        The preprocessed complete rows, in their original order. Every row
        has L2 norm at most 1. The columns are those named by
        ``load_adult(preprocess=True).feature_names``.
    mask : ndarray of shape (n_samples,), dtype bool
        ``True`` for the rows of ``X_raw`` that were kept; use it to select
        the matching labels, e.g. ``y[mask]``.

    Raises
    ------
    ValueError
        If ``X_raw`` does not have the 14 Adult attributes, a numeric
        attribute holds a non-numeric or infinite value, or a kept row has a
        categorical value that does not occur in the Adult data.

    Notes
    -----
    The paper scales by the column maxima of the data it trains on. Those
    maxima are a function of the data, so this step is not differentially
    private; here they are frozen constants taken from the whole Adult data
    set, which makes the map the same for every split but still means that
    information about the full data set went into the preprocessing. Values
    larger than the stored maxima are not clipped; the final row scaling
    keeps every norm at most 1 regardless.

    Because every complete row has one active indicator per categorical
    attribute, its norm is at least ``sqrt(8)`` before step 4, so in
    practice every row is rescaled to norm exactly 1.

    References
    ----------
    Chaudhuri, K., Monteleoni, C. and Sarwate, A. D. (2011). Differentially
    private empirical risk minimization. Journal of Machine Learning
    Research, 12, 1069-1109.

    Examples
    --------
    >>> from dpsk.datasets import load_adult, preprocess_adult
    >>> X_raw, y_raw = load_adult(return_X_y=True)
    >>> X, mask = preprocess_adult(X_raw[:100])
    >>> y = (y_raw[:100][mask] == ">50K").astype(int)
    >>> X.shape, int(mask.sum())
    ((92, 105), 92)
    """
    columns = _as_columns(X_raw)
    n_samples = columns[0].shape[0]

    encoded = {}
    keep = np.ones(n_samples, dtype=bool)
    for attr, column in zip(ATTRIBUTE_NAMES, columns):
        if attr in NUMERIC_MAX_ABS:
            values, missing = _numeric_column(attr, column)
            encoded[attr] = values
            keep &= ~missing
        else:
            codes = _categorical_codes(attr, column)
            encoded[attr] = codes
            keep &= codes != -1

    # Unknown categories are checked only now, on kept rows, so that an
    # incomplete row is dropped rather than reported.
    for attr in CATEGORIES:
        unknown = keep & (encoded[attr] == -2)
        if unknown.any():
            column = columns[ATTRIBUTE_NAMES.index(attr)]
            examples = sorted({repr(v) for v in column[unknown]})[:5]
            raise ValueError(
                f"Column {attr!r} has values outside the Adult categories: "
                f"{', '.join(examples)}. Known values: {list(CATEGORIES[attr])}."
            )

    n_kept = int(keep.sum())
    X = np.zeros((n_kept, len(PREPROCESSED_FEATURE_NAMES)), dtype=np.float64)
    rows = np.arange(n_kept)
    for attr in ATTRIBUTE_NAMES:
        block = _BLOCKS[attr]
        if attr in NUMERIC_MAX_ABS:
            X[:, block.start] = encoded[attr][keep] / NUMERIC_MAX_ABS[attr]
        else:
            X[rows, block.start + encoded[attr][keep]] = 1.0

    norms = np.sqrt(np.einsum("ij,ij->i", X, X))
    # Rows already inside the unit ball are left alone: the paper only asks
    # for norm <= 1, and shrinking is all that is needed for the sensitivity
    # bounds of the private learners.
    np.maximum(norms, 1.0, out=norms)
    X /= norms[:, np.newaxis]
    return X, keep


# --------------------------------------------------------------------------
# Public loader
# --------------------------------------------------------------------------


def _check_flag(name, value):
    """Accept bool, numpy.bool_ or the integers 0/1; reject anything else."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, numbers.Integral):
        if value in (0, 1):
            return bool(value)
        raise ValueError(f"{name} must be True or False, got {value!r}.")
    raise TypeError(
        f"{name} must be a bool, got {value!r} of type {type(value).__name__}."
    )


def _import_pandas():
    try:
        import pandas as pd
    except ImportError as exc:
        raise ImportError(
            "load_adult(as_frame=True) requires pandas, which is not "
            "installed. Install it (pip install pandas) or call "
            "load_adult(as_frame=False) to get numpy arrays."
        ) from exc
    return pd


def _raw_frame(pd, X, y):
    data = {}
    for j, attr in enumerate(ATTRIBUTE_NAMES):
        if attr in NUMERIC_MAX_ABS:
            data[attr] = pd.Series(X[:, j].astype(np.float64), dtype=np.float64)
        else:
            data[attr] = pd.Series(X[:, j], dtype=object)
    return pd.DataFrame(data), pd.Series(y, name=TARGET_NAME, dtype=object)


def load_adult(*, return_X_y=False, as_frame=False, preprocess=False):
    """Load the UCI Adult (census income) data set.

    The data are read from a gzip-compressed copy of the original UCI files
    that ships with dpsk; nothing is downloaded. On the first call in a
    process the decompressed files are checked against the sha256 of the UCI
    originals and parsed; the parsed records are then cached in memory, and
    every call returns fresh copies.

    =================  ===================  ====================
    preprocess         False                True
    =================  ===================  ====================
    rows               48,842               45,222
    columns            14 (raw attributes)  105 (float64)
    target             "<=50K" / ">50K"     0 / 1 (1 = ">50K")
    =================  ===================  ====================

    Read more in the data set description, ``load_adult().DESCR``.

    Parameters
    ----------
    return_X_y : bool, default=False
        If True, return ``(data, target)`` instead of a Bunch.
    as_frame : bool, default=False
        If True, ``data`` is a pandas DataFrame and ``target`` a pandas
        Series named ``"income"``, and ``frame`` holds both. Requires pandas.
    preprocess : bool, default=False
        If False, return the raw records: the rows of ``adult.data`` followed
        by those of ``adult.test``. If True, return them after the
        preprocessing of Chaudhuri, Monteleoni and Sarwate (2011),
        Section 6.1, as implemented by :func:`preprocess_adult`.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        Dictionary-like object with the attributes:

        data : ndarray or DataFrame
            Raw (``preprocess=False``): shape (48842, 14). As an ndarray it
            has dtype object, numeric attributes as floats and missing
            values as ``NaN`` (numeric) or ``None`` (categorical); as a
            DataFrame the numeric columns are float64 and the categorical
            ones hold strings or ``None``.
            Preprocessed: float64 of shape (45222, 105), every row with L2
            norm at most 1.
        target : ndarray or Series of shape (n_samples,)
            Raw: the strings ``"<=50K"`` and ``">50K"`` (the trailing dot of
            ``adult.test`` is removed). Preprocessed: int64, 1 for ``">50K"``
            and 0 for ``"<=50K"``.
        feature_names : list of str
            Raw: the 14 attribute names of ``adult.names``. Preprocessed:
            the numeric attribute names and one ``"attribute=value"`` name
            per one-hot column, e.g. ``"workclass=Private"``.
        target_names : ndarray of str
            ``["<=50K", ">50K"]``; for the preprocessed target, class ``k``
            is ``target_names[k]``.
        frame : DataFrame or None
            With ``as_frame=True``, ``data`` and ``target`` in one DataFrame
            (the target in column ``"income"``); otherwise None.
        DESCR : str
            Description of the data set, its source and its license.

    (data, target) : tuple
        If ``return_X_y`` is True.

    Raises
    ------
    TypeError, ValueError
        If an argument is not a boolean.
    ImportError
        If ``as_frame=True`` and pandas is not installed.
    OSError
        If the embedded files fail their checksum check.

    See Also
    --------
    preprocess_adult : The preprocessing, for applying to your own split.

    Notes
    -----
    The data set comes from the UCI Machine Learning Repository: Becker, B.
    and Kohavi, R. (1996). Adult. https://doi.org/10.24432/C5XW20 . It is
    licensed under CC BY 4.0.

    The preprocessing divides each numeric column by its maximum absolute
    value over the full data set, as the paper does. This uses the data and
    is therefore not a differentially private step; the maxima are fixed
    constants, see :func:`preprocess_adult`.

    Examples
    --------
    >>> from dpsk.datasets import load_adult
    >>> X, y = load_adult(return_X_y=True, preprocess=True)
    >>> X.shape
    (45222, 105)
    >>> round(float(y.mean()), 3)
    0.248
    """
    return_X_y = _check_flag("return_X_y", return_X_y)
    as_frame = _check_flag("as_frame", as_frame)
    preprocess = _check_flag("preprocess", preprocess)
    pd = _import_pandas() if as_frame else None

    X_cached, y_cached = _load_raw_arrays()
    if preprocess:
        X, mask = preprocess_adult(X_cached)
        y = (y_cached[mask] == TARGET_NAMES[1]).astype(np.int64)
        feature_names = list(PREPROCESSED_FEATURE_NAMES)
    else:
        X, y = X_cached.copy(), y_cached.copy()
        feature_names = list(ATTRIBUTE_NAMES)

    frame = None
    if as_frame:
        if preprocess:
            X = pd.DataFrame(X, columns=feature_names)
            y = pd.Series(y, name=TARGET_NAME)
        else:
            X, y = _raw_frame(pd, X, y)
        frame = pd.concat([X, y], axis=1)

    if return_X_y:
        return X, y
    return Bunch(
        data=X,
        target=y,
        feature_names=feature_names,
        target_names=np.array(TARGET_NAMES),
        frame=frame,
        DESCR=_DESCR,
    )
