"""Clipping bounds learned privately: one exponential-mechanism quantile per column end.

The derivation of the guarantee is in ``docs/privacy.rst`` (section "Private
bounds"); in short, every candidate bound ``c`` of a data-independent grid gets
the utility ``-dist(t, [#{x < c}, #{x <= c}])`` with ``t = q n``, which moves by
at most 1 when one row is replaced, and the exponential mechanism (McSherry and
Talwar 2007; for quantiles Smith 2011 and Gillenwater, Joseph and Kulesza 2021)
picks one candidate with probability proportional to ``exp(eps u / 2)``.
"""

import math
import sys
import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import (
    FLOAT_DTYPES,
    _num_features,
    _num_samples,
    check_is_fitted,
    validate_data,
)

from .._data._validation import check_not_datetime, finite_rows_advised, values_withheld
from .._mixin import PrivacyAccountingMixin
from ..accounting._events import ExponentialEvent
from ..accounting._ledger import BudgetAccountant
from ..mechanisms._noise import exponential_mechanism
from ..mechanisms._random import noise_source, validate_random_state
from ..pipeline._check import user_stacklevel

__all__ = ["PrivateBoundsScaler", "PrivateBoundsWarning", "bounds_epsilon_needed",
           "bounds_grid", "private_quantile", "quantile_utilities"]

#: The margin of the rule for the two-end quantiles: the far candidates' total
#: weight must be at most ``e^-5`` of the best one's (``docs/privacy.rst``).
QUANTILE_MARGIN = 5.0
#: ``method="median"``: each column's range is ``[min(0, s m), max(0, s m)]``
#: around its private median ``m`` (``[-1, 1]`` when ``m = 0``).
MEDIAN_SPAN = 1.5
#: ``method="median"`` draws from a grid at most this fine (``2^(1/4)``, 19% apart):
#: the median needs no finer, and fewer candidates need less epsilon.
MEDIAN_STEPS_PER_OCTAVE = 4


class PrivateBoundsWarning(UserWarning):
    """The rule of ``docs/privacy.rst`` says the private bounds may land far from the data.

    Emitted by :class:`PrivateBoundsScaler` before anything is read or spent,
    from public numbers only (rows, columns, epsilon, the grid); the text
    gives the epsilon the rule needs.
    """

_NOT_FINITE = ("Input X contains infinity (or NaN with missing='error'). The private "
               "bounds are learned from finite values only; the input is refused before "
               "anything is read or spent.")


def bounds_grid(magnitude_range=(2.0**-8, 2.0**32), steps_per_octave=16):
    """The data-independent candidates for a clipping bound: zero and signed log steps.

    Parameters
    ----------
    magnitude_range : (float, float), default=(2**-8, 2**32)
        Smallest and largest non-zero magnitude, both powers of two, smaller < larger.
    steps_per_octave : int, default=16
        Candidates per doubling: ``m 2^e`` with ``m = 1 + i / steps_per_octave``.

    Returns
    -------
    grid : ndarray of shape (m,)
        Sorted, symmetric about 0, containing 0 and ``±magnitude_range[1]``.
        Every value is exactly representable (a short mantissa times a power of two).

    Examples
    --------
    >>> from dpsk.preprocessing import bounds_grid
    >>> bounds_grid((1.0, 4.0), 2).tolist()
    [-4.0, -3.0, -2.0, -1.5, -1.0, 0.0, 1.0, 1.5, 2.0, 3.0, 4.0]
    """
    low, high = _check_magnitudes(magnitude_range)
    if not (isinstance(steps_per_octave, Integral) and 1 <= steps_per_octave <= 64):
        raise ValueError(f"steps_per_octave must be an integer in [1, 64], got "
                         f"{steps_per_octave!r}.")
    mantissas = 1.0 + np.arange(steps_per_octave) / steps_per_octave
    exponents = np.arange(round(math.log2(low)), round(math.log2(high)))
    magnitudes = np.append((mantissas[None, :] * np.exp2(exponents)[:, None]).ravel(), high)
    return np.concatenate([-magnitudes[::-1], [0.0], magnitudes])


def _check_magnitudes(magnitude_range):
    try:
        low, high = (float(v) for v in magnitude_range)
    except (TypeError, ValueError):
        raise ValueError(f"magnitude_range must be a pair of powers of two, got "
                         f"{magnitude_range!r}.") from None
    for value in (low, high):
        if not (math.isfinite(value) and value > 0 and math.frexp(value)[0] == 0.5):
            raise ValueError(f"magnitude_range must be a pair of powers of two, got "
                             f"{magnitude_range!r}.")
    if not low < high:
        raise ValueError(f"magnitude_range must have smaller < larger, got "
                         f"{magnitude_range!r}.")
    return low, high


def _rule_margin(epsilon_each, q, n_samples, n_candidates):
    """``epsilon_each min(q, 1 - q) n / 2 - ln m``: how far the best candidate outweighs the
    far ones (``docs/privacy.rst``, "How much epsilon")."""
    return epsilon_each * min(q, 1.0 - q) * n_samples / 2.0 - math.log(n_candidates)


def bounds_epsilon_needed(n_samples, n_features, *, method="median", quantiles=(0.05, 0.95),
                          magnitude_range=(2.0**-8, 2.0**32), steps_per_octave=16):
    """The epsilon the rule of ``docs/privacy.rst`` asks of :class:`PrivateBoundsScaler`.

    Public numbers only. ``method="quantiles"``: each of the ``2 p`` ends
    (``epsilon / (2 p)`` each) must satisfy ``epsilon_end min(q, 1 - q) n / 2
    >= ln m + 5`` for the ``m`` candidates of the grid. ``method="median"``:
    each column's one release (``epsilon / p``) must satisfy
    ``epsilon_col n / 4 >= ln m`` on the median's grid (at most
    ``MEDIAN_STEPS_PER_OCTAVE`` steps per octave).

    Parameters
    ----------
    n_samples, n_features : int
        Training rows and columns of the scaler (public).
    method : {"median", "quantiles"}, default="median"
    quantiles, magnitude_range, steps_per_octave
        As for :class:`PrivateBoundsScaler`.

    Returns
    -------
    epsilon : float

    Examples
    --------
    >>> from dpsk.preprocessing import bounds_epsilon_needed
    >>> round(bounds_epsilon_needed(1400, 3), 3)
    0.05
    >>> round(bounds_epsilon_needed(39000, 6, method="quantiles"), 3)
    0.15
    """
    if not (isinstance(n_samples, Integral) and n_samples >= 1
            and isinstance(n_features, Integral) and n_features >= 1):
        raise ValueError(f"n_samples and n_features must be integers >= 1, got "
                         f"{n_samples!r} and {n_features!r}.")
    if method == "quantiles":
        q = min(min(qq, 1.0 - qq) for qq in _pair(quantiles, "quantiles"))
        m = bounds_grid(magnitude_range, steps_per_octave).size
        return 2 * n_features * 2.0 * (math.log(m) + QUANTILE_MARGIN) / (q * n_samples)
    if method == "median":
        m = bounds_grid(magnitude_range,
                        min(steps_per_octave, MEDIAN_STEPS_PER_OCTAVE)).size
        return n_features * 4.0 * math.log(m) / n_samples
    raise ValueError(f"method must be 'median' or 'quantiles', got {method!r}.")


def quantile_utilities(sorted_values, candidates, q):
    """Utility of each candidate as the ``q``-quantile: minus its rank distance to ``q n``.

    ``u(c) = -max(0, #{x < c} - q n, q n - #{x <= c})``: zero when ``c`` is a
    ``q``-quantile of the values (ties included), and minus the number of rows
    that would have to move across ``c`` otherwise. Replacing one row changes
    each count by at most one, and ``n`` not at all, so every utility moves by
    at most 1 (sensitivity 1; ``docs/privacy.rst`` derives it, also for rows
    that are missing on one side).

    Parameters
    ----------
    sorted_values : ndarray of shape (n,)
        The column's finite values, sorted.
    candidates : ndarray of shape (m,)
    q : float
        In (0, 1).

    Returns
    -------
    utilities : ndarray of shape (m,)
    """
    below = np.searchsorted(sorted_values, candidates, side="left")
    at_most = np.searchsorted(sorted_values, candidates, side="right")
    target = q * sorted_values.size
    return -np.maximum(0.0, np.maximum(below - target, target - at_most))


def private_quantile(sorted_values, candidates, q, epsilon, rng):
    """One ``epsilon``-DP ``q``-quantile: a candidate drawn by the exponential mechanism.

    Guarantee (McSherry and Talwar 2007, Theorem 6; the quantile utility of
    Smith 2011 on a finite, data-independent grid): the index returned is
    ``epsilon``-DP under replace-one neighbours, because the utilities of
    :func:`quantile_utilities` have sensitivity 1. Condition: ``candidates``
    must not depend on the data (they may depend on earlier private releases).

    Returns
    -------
    index : int
        Index into ``candidates``.
    """
    utilities = quantile_utilities(sorted_values, candidates, q)
    index, _ = exponential_mechanism(utilities, epsilon, 1.0, rng)  # probabilities stay here
    return index


def median_bounds(sorted_values, grid, epsilon, rng):
    """``(lower, upper)`` of one column from its ``epsilon``-DP median alone.

    One release (:func:`private_quantile` at ``q = 0.5``) instead of two: a
    median needs far less epsilon than a tail quantile (every candidate beyond
    the data scores ``-n / 2`` instead of ``-q n``). The range is then
    ``[min(0, s m), max(0, s m)]`` with ``s = MEDIAN_SPAN``, or ``[-1, 1]``
    for ``m = 0``: post-processing of the release, so ``epsilon``-DP.
    """
    median = float(grid[private_quantile(sorted_values, grid, 0.5, epsilon, rng)])
    if median == 0.0:
        return -1.0, 1.0
    end = MEDIAN_SPAN * median
    return min(0.0, end), max(0.0, end)


def private_bounds(sorted_values, grid, quantiles, epsilon, rng):
    """``(lower, upper)`` of one column, each end ``epsilon / 2``-DP, so ``epsilon``-DP.

    The lower end is drawn from every candidate but the largest, the upper from
    the candidates above the released lower end: ``lower < upper`` always, and
    the second choice depends on the data only through the first release
    (adaptive basic composition).
    """
    low = grid[private_quantile(sorted_values, grid[:-1], quantiles[0], epsilon / 2, rng)]
    above = grid[grid > low]
    high = above[private_quantile(sorted_values, above, quantiles[1], epsilon / 2, rng)]
    return float(low), float(high)


class PrivateBoundsScaler(PrivacyAccountingMixin, OneToOneFeatureMixin, TransformerMixin,
                          BaseEstimator):
    """Learn each column's clipping range privately, then clip and scale to a declared range.

    For a table whose columns come without declared bounds. With
    ``method="quantiles"``, ``fit`` releases, for each of the ``p`` columns, a
    lower bound near its ``quantiles[0]`` quantile and an upper bound near its
    ``quantiles[1]`` quantile, each drawn by the exponential mechanism from a
    data-independent grid of candidates (:func:`bounds_grid`: zero and signed
    steps of ``2^(1/steps_per_octave)`` between the declared magnitudes). With
    ``method="median"`` it releases each column's median ``m`` only (one
    release per column, far cheaper) and takes ``[min(0, 1.5 m), max(0, 1.5
    m)]`` (``[-1, 1]`` for ``m = 0``). ``method="auto"`` (the default) applies
    the rule of ``docs/privacy.rst`` to the public numbers (rows, columns,
    epsilon, grid) before anything is read: the quantiles when it says their
    ends will land near the data, else the median, and then ``fit`` warns
    (:class:`PrivateBoundsWarning`) before spending, with the epsilon the
    quantiles would need (and, where even the median's rule fails, what that
    needs). ``transform`` clips each column to its learned ``[lower_,
    upper_]`` and maps it linearly onto ``feature_range``. Every output row
    then has L2 norm at most ``row_norm_bound_ = sqrt(p) * max(|a|, |b|)`` for
    ``feature_range = (a, b)``, which is known before fitting: a private model
    after the scaler reads it (``data_norm="auto"``).

    Guarantee: the learned bounds (``lower_``, ``upper_``) are
    ``epsilon``-differentially private under replace-one neighbours (McSherry
    and Talwar 2007 with the quantile utility of Smith 2011; see
    ``docs/privacy.rst``, "Private bounds", for the sensitivity-1 derivation).
    Each of the ``2 p`` ends spends ``epsilon / (2 p)`` (each median
    ``epsilon / p``); by basic composition one fit spends ``epsilon``,
    recorded as one :class:`~dpsk.ExponentialEvent`. Which method ``"auto"``
    takes depends on public numbers only. Conditions, enforced: finite values (inf
    refused for free; NaN refused unless ``missing="midpoint"``), the grid
    fixed by public parameters. Everything downstream (``transform``, a
    private model fitted on its output) is post-processing of the release
    plus that model's own charge, on the same ledger by default.

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy parameter of the whole fit (all columns), > 0.
    quantiles : (float, float), default=(0.05, 0.95)
        Target quantiles of the two ends (``method="quantiles"``), ``0 < q_low
        < q_high < 1``. Ends far in the tails need much more epsilon: with
        ``n`` rows a candidate beyond the data has utility ``-min(q, 1 - q)
        n``, and the grid has hundreds of them. Rule (``docs/privacy.rst``):
        each end needs ``epsilon / (2 p) >= 2 (ln m + 5) / (min(q, 1 - q) n)``
        for ``m`` candidates, or its bound may land far outside the data
        (:func:`bounds_epsilon_needed`).
    method : {"auto", "quantiles", "median"}, default="auto"
        How each column's range is found (see above). ``"auto"``: the
        quantiles when their rule holds for ``n_samples`` rows, else the
        median; ``method_`` records the choice.
    magnitude_range : (float, float), default=(2**-8, 2**32)
        Smallest and largest non-zero candidate magnitude (powers of two).
        Values beyond ``±magnitude_range[1]`` are clipped to it.
    steps_per_octave : int, default=16
        Candidates per doubling: the bounds' resolution (``2^(1/16)``, about 4.4%,
        at 16). It must be finer than the spread of the data around a
        quantile, or every candidate near it scores like one beyond the data.
    feature_range : (float, float), default=(0.0, 1.0)
        Declared output range, finite, ``a < b``.
    missing : {"error", "midpoint"}, default="error"
        ``"error"`` refuses NaN (free). ``"midpoint"`` leaves NaN entries out
        of the quantiles (``n`` is then the column's number of present
        values) and maps them to the middle of ``feature_range``.
    accountant : BudgetAccountant or None, default=None
        The ledger to charge (None: the default ledger, shared with the
        private model of the same pipeline).
    random_state : int or None, default=None
        None draws from the operating system's secure source. An int seeds the
        draws, for tests and documentation only: seeded draws are not private.

    Attributes
    ----------
    lower_, upper_ : ndarray of shape (`n_features_in_`,)
        The learned bounds (the private release; ``lower_ < upper_``).
    row_norm_bound_ : float
        ``sqrt(n_features_in_) * max(|a|, |b|)``: a public bound on every
        output row's L2 norm (a private model after the scaler with
        ``data_norm="auto"`` reads it).
    method_ : {"quantiles", "median"}
        The method used (``"auto"`` resolved from public numbers).
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        When ``X`` has string column names.
    privacy_spent_ : (float, float)
        ``(epsilon, 0.0)``.
    privacy_event_ : ExponentialEvent

    See Also
    --------
    BoundedScaler : the same map from bounds you declare (no privacy cost).
    make_table_encoder : uses this scaler for numeric columns declared without bounds.

    Examples
    --------
    >>> import numpy as np
    >>> from dpsk import BudgetAccountant
    >>> from dpsk.preprocessing import PrivateBoundsScaler
    >>> X = np.random.default_rng(0).normal(100.0, 10.0, size=(5000, 1))
    >>> ledger = BudgetAccountant()
    >>> scaler = PrivateBoundsScaler(epsilon=1.0, accountant=ledger).fit(X)
    >>> bool(60.0 < scaler.lower_[0] < 100.0 < scaler.upper_[0] < 140.0)
    True
    >>> ledger.total()
    (1.0, 0.0)
    """

    #: Read by :func:`dpsk.check_pipeline`: a private step that may precede the
    #: private model, not the private model itself.
    _dpsk_private_preprocessing = True

    _parameter_constraints = {
        "epsilon": [Interval(Real, 0, np.inf, closed="neither")],
        "quantiles": [tuple, list],
        "magnitude_range": [tuple, list],
        "steps_per_octave": [Interval(Integral, 1, 64, closed="both")],
        "feature_range": [tuple, list],
        "missing": [StrOptions({"error", "midpoint"})],
        "method": [StrOptions({"auto", "quantiles", "median"})],
        "accountant": [BudgetAccountant, None],
        "random_state": [Interval(Integral, 0, None, closed="left"), None],
    }

    def __init__(self, epsilon=1.0, *, quantiles=(0.05, 0.95),
                 magnitude_range=(2.0**-8, 2.0**32), steps_per_octave=16,
                 feature_range=(0.0, 1.0), missing="error", method="auto", accountant=None,
                 random_state=None):
        self.epsilon = epsilon
        self.quantiles = quantiles
        self.magnitude_range = magnitude_range
        self.steps_per_octave = steps_per_octave
        self.feature_range = feature_range
        self.missing = missing
        self.method = method
        self.accountant = accountant
        self.random_state = random_state

    def _privacy_event(self):
        epsilon, _ = self._privacy_cost()
        return ExponentialEvent(epsilon)

    def _check_public_params(self):
        """Checks beyond the constraints; parameters only, so free."""
        q = _pair(self.quantiles, "quantiles")
        if not 0.0 < q[0] < q[1] < 1.0:
            raise ValueError(f"quantiles must satisfy 0 < low < high < 1, got "
                             f"{self.quantiles!r}.")
        a, b = _pair(self.feature_range, "feature_range")
        if not a < b:
            raise ValueError(f"feature_range must have a < b, got {self.feature_range!r}.")
        return q, bounds_grid(self.magnitude_range, self.steps_per_octave)

    def fit(self, X, y=None):
        """Learn the bounds privately and charge ``epsilon`` (check, validate, spend, release).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : None
            Ignored.

        Returns
        -------
        self : object

        Raises
        ------
        ValueError, TypeError
            Before anything is spent: bad parameters, non-numeric or infinite
            values (NaN too with ``missing="error"``). Messages quote no value.
        dpsk.BudgetExceededError
            Before anything is spent.
        """
        validate_random_state(self.random_state)
        self._validate_params()
        quantiles, grid = self._check_public_params()
        method = self._choose_method(X, quantiles, grid)

        def release(columns, *, epsilon, delta):
            return self._release(columns, quantiles, grid, epsilon, method)

        return self._fit_with_budget(self._validate_input, release, X)

    def _choose_method(self, X, quantiles, grid):
        """``"quantiles"`` or ``"median"``, by the rule on public numbers; warn if it fails.

        Reads the shape of ``X`` only (``n_samples`` and ``n_features``:
        public metadata), before anything is validated or spent.
        """
        try:
            n, p = int(_num_samples(X)), int(_num_features(X))
        except (TypeError, ValueError):
            n = p = 0  # not a table: the domain checks refuse it
        epsilon = float(self.epsilon)
        q = min(min(qq, 1.0 - qq) for qq in quantiles)
        if n < 1 or p < 1:
            return "quantiles" if self.method == "quantiles" else "median"
        tails = _rule_margin(epsilon / (2 * p), q, n, grid.size) >= QUANTILE_MARGIN
        method = self.method if self.method != "auto" else ("quantiles" if tails else "median")
        if method == "quantiles":
            holds = tails
        else:
            holds = _rule_margin(epsilon / p, 0.5, n, self._median_grid().size) >= 0
        needed = {m: bounds_epsilon_needed(n, p, method=m, quantiles=quantiles,
                                           magnitude_range=self.magnitude_range,
                                           steps_per_octave=self.steps_per_octave)
                  for m in ("quantiles", "median")}
        head = (f"PrivateBoundsScaler(epsilon={epsilon:g}, method={self.method!r}) on {n} "
                f"rows and {p} columns: ")
        advice = ("Declare the bounds you know (make_table_encoder: (low, high) per column, "
                  "free), give the bounds more epsilon, or narrow magnitude_range. Nothing "
                  "has been read or spent yet.")
        if not holds:
            text = (f"by the rule of docs/privacy.rst ('Private bounds') the bounds may land "
                    f"far from the data, and the columns then carry little for the model. The "
                    f"rule asks for epsilon >= {needed[method]:.3g} here. " + advice)
        elif self.method == "auto" and not tails:
            text = (f"the 5th/95th-percentile bounds would need epsilon >= "
                    f"{needed['quantiles']:.3g} by the rule of docs/privacy.rst ('Private "
                    "bounds'), so each column gets one private median instead (cheaper, "
                    "cruder: its range is [0, 1.5 median]). Expect lower accuracy than with "
                    "declared bounds (python -m benchmarks raw-tables measures it). " + advice)
        else:
            return method
        warnings.warn(head + text, PrivateBoundsWarning,
                      stacklevel=user_stacklevel(sys._getframe(1), 2))
        return method

    def _median_grid(self):
        return bounds_grid(self.magnitude_range,
                           min(self.steps_per_octave, MEDIAN_STEPS_PER_OCTAVE))

    def _validate_input(self, X):
        check_not_datetime(X)
        X = _finite_or_refused(values_withheld, validate_data, self, X, dtype=FLOAT_DTYPES,
                               ensure_all_finite="allow-nan" if self.missing == "midpoint"
                               else True)
        if np.isinf(X).any():
            raise ValueError(_NOT_FINITE)
        # Sorted present values per column: the counts the utilities need.
        return [np.sort(column[~np.isnan(column)]) for column in X.T.astype(np.float64)]

    def _release(self, columns, quantiles, grid, epsilon, method="quantiles"):
        rng = noise_source(self.random_state)
        per_column = epsilon / len(columns)
        if method == "median":
            median_grid = self._median_grid()
            pairs = [median_bounds(values, median_grid, per_column, rng) for values in columns]
        else:
            pairs = [private_bounds(values, grid, quantiles, per_column, rng)
                     for values in columns]
        lower, upper = (np.array(v, dtype=np.float64) for v in zip(*pairs))
        a, b = _pair(self.feature_range, "feature_range")
        return {"lower_": lower, "upper_": upper, "method_": method,
                "row_norm_bound_": math.sqrt(len(columns)) * max(abs(a), abs(b))}

    def _stand_in(self, columns):
        """Public stand-ins for the bounds, for a dry run (``dpsk.pipeline._dry``).

        ``[0, 1]`` for every column and the true ``row_norm_bound_``: the steps
        after the scaler check their input on values of the right shape and
        range, and nothing is drawn or spent.
        """
        p = len(columns)
        a, b = _pair(self.feature_range, "feature_range")
        return {"lower_": np.zeros(p), "upper_": np.ones(p),
                "row_norm_bound_": math.sqrt(p) * max(abs(a), abs(b))}

    def transform(self, X):
        """Clip each column to ``[lower_, upper_]`` and map it onto ``feature_range``.

        Row by row, with the released bounds only: post-processing, no charge.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        X_scaled : ndarray of shape (n_samples, n_features)
            In ``feature_range``; NaN entries (``missing="midpoint"``) at its middle.
        """
        check_is_fitted(self, "lower_")
        check_not_datetime(X)
        X = _finite_or_refused(finite_rows_advised, validate_data, self, X, reset=False,
                               dtype=FLOAT_DTYPES,
                               ensure_all_finite="allow-nan" if self.missing == "midpoint"
                               else True)
        a, b = _pair(self.feature_range, "feature_range")
        unit = (np.clip(X, self.lower_, self.upper_) - self.lower_) / (self.upper_ - self.lower_)
        out = a + (b - a) * np.clip(unit, 0.0, 1.0)  # rounding must not leave the range
        out[np.isnan(out)] = (a + b) / 2.0
        return out

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = self.missing == "midpoint"
        tags.transformer_tags.preserves_dtype = ["float64"]
        # Bounds drawn with noise from a coarse grid: not the exact scaling the
        # common checks compare against.
        tags.non_deterministic = True
        return tags


def _pair(value, name):
    try:
        a, b = (float(v) for v in value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a pair of numbers, got {value!r}.") from None
    if not (math.isfinite(a) and math.isfinite(b)):
        raise ValueError(f"{name} must be finite, got {value!r}.")
    return a, b


def _finite_or_refused(wrapper, *args, **kwargs):
    """``wrapper(*args, **kwargs)`` with any non-finite refusal replaced by one fixed text."""
    try:
        return wrapper(*args, **kwargs)
    except ValueError as exc:
        text = str(exc)
        if "infinity" not in text and "NaN" not in text and "not finite" not in text:
            raise
    raise ValueError(_NOT_FINITE)
