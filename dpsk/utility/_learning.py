"""How many rows: held-out utility against the training-set size, on public data.

The noise of every dpsk mechanism shrinks as the training set grows (the
sensitivity of regularised ERM is ``2 / (n alpha)``; Chaudhuri et al. 2011,
Theorems 3-4, and Chaudhuri and Monteleoni 2008, Figure 2, show error against
n at a fixed epsilon). :func:`learning_curve` measures that on public data: for
each training-set size it runs the Monte Carlo of
:func:`~dpsk.utility.utility_curve` on a nested subsample of the public
training part, always scored on the same held-out part; :meth:`LearningCurve.
rows_needed` inverts it. Nothing is charged to any ledger.
"""

from dataclasses import dataclass

import numpy as np
from sklearn.pipeline import Pipeline
from sklearn.utils import _safe_indexing

from ..mechanisms._random import public_rng
from ._common import check_epsilons, check_estimator, describe
from ._curve import _check_target, _crossing
from ._public import _checked_public_split, _monte_carlo, curve_seeds

__all__ = ["learning_curve", "LearningCurve", "RowsNeeded"]


@dataclass(frozen=True)
class RowsNeeded:
    """The training-set size at which a private model reaches a target, and its interval.

    Attributes
    ----------
    metric : {"accuracy", "loss"}
    target : float
    epsilon : float
        The epsilon of one fit.
    n_samples : float
        Where the mean curve reaches the target (interpolated in ``log n``);
        nan when it does not within the sizes measured.
    low, high : float
        Where the optimistic and the pessimistic end of the confidence band
        reach the target (nan when they do not).
    confidence : float
    below_grid, above_grid : bool
        The target is met already at the smallest size, resp. not met at the
        largest (measure larger sizes, or use more public data).
    """

    metric: str
    target: float
    epsilon: float
    n_samples: float
    low: float
    high: float
    confidence: float
    below_grid: bool
    above_grid: bool

    def __str__(self):
        if self.above_grid:
            return (f"The {self.metric} target {self.target:g} is not reached at epsilon="
                    f"{self.epsilon:g} with the training-set sizes measured; measure larger "
                    "ones (more public data).")
        where = "<= " if self.below_grid else ""

        def end(value):
            return "beyond the sizes measured" if np.isnan(value) else f"{value:,.0f}"

        return (f"{where}{self.n_samples:,.0f} training rows for {self.metric} "
                f"{'>=' if self.metric == 'accuracy' else '<='} {self.target:g} at epsilon="
                f"{self.epsilon:g} (interval [{end(self.low)}, {end(self.high)}], "
                f"confidence {self.confidence:g})")


@dataclass(frozen=True, eq=False)
class LearningCurve:
    """Held-out utility of a private estimator against the training-set size.

    Built by :func:`learning_curve`. Each entry of ``curves`` is the
    :class:`UtilityCurve` (against epsilon) of one training-set size, all
    scored on the same held-out rows.

    Attributes
    ----------
    train_sizes : ndarray of shape (s,)
        Increasing.
    curves : tuple of UtilityCurve
        One per training-set size.
    """

    train_sizes: np.ndarray
    curves: tuple

    def __repr__(self):
        return (f"LearningCurve({self.curves[0].description}; "
                f"{len(self.train_sizes)} training-set sizes from {self.train_sizes[0]:,} "
                f"to {self.train_sizes[-1]:,}, epsilons {list(map(float, self.epsilons))})")

    def __str__(self):
        """Mean held-out accuracy, one line per training-set size, one column per epsilon."""
        head = f"{'rows':>9}" + "".join(f"  {'eps=' + format(e, 'g'):>10}"
                                         for e in self.epsilons)
        lines = [repr(self), "mean held-out accuracy", head]
        means = [self.metric_at(e)[0] for e in self.epsilons]
        for i, n in enumerate(self.train_sizes):
            lines.append(f"{n:>9,}" + "".join(f"  {m[i]:>10.4f}" for m in means))
        lines.append("rows_needed(epsilon, target_accuracy=...) inverts it; plot() draws "
                     "it (pip install \"dpsk[plot]\").")
        return "\n".join(lines)

    @property
    def epsilons(self):
        """The epsilons every curve was measured at."""
        return self.curves[0].epsilons

    def metric_at(self, epsilon, metric="accuracy"):
        """``(mean, band)`` of a metric against the training-set size at one epsilon.

        Returns
        -------
        mean : ndarray of shape (s,)
        band : ndarray of shape (2, s)
        """
        i = self._epsilon_index(epsilon)
        if metric not in ("accuracy", "loss"):
            raise ValueError(f"metric must be 'accuracy' or 'loss', got {metric!r}.")
        mean = np.array([getattr(c, f"{metric}_mean")[i] for c in self.curves])
        band = np.array([getattr(c, f"{metric}_band")[:, i] for c in self.curves]).T
        return mean, band

    def rows_needed(self, epsilon, target_accuracy=None, target_loss=None):
        """Invert the curve at one epsilon: the training-set size that reaches a target.

        As :meth:`UtilityCurve.recommend`, with the training-set size in place
        of epsilon: the smallest size from which the curve meets the target at
        every larger size measured, interpolated in ``log n``.

        Parameters
        ----------
        epsilon : float
            One of :attr:`epsilons`.
        target_accuracy, target_loss : float
            Give exactly one.

        Returns
        -------
        RowsNeeded
        """
        metric, target = _check_target(target_accuracy, target_loss)
        sign = 1.0 if metric == "accuracy" else -1.0
        mean, band = self.metric_at(epsilon, metric)
        optimistic, pessimistic = (band[1], band[0]) if sign > 0 else (band[0], band[1])
        sizes = self.train_sizes
        point, below, above = _crossing(sizes, sign * mean, sign * target)
        low = _crossing(sizes, sign * optimistic, sign * target)[0]
        high = _crossing(sizes, sign * pessimistic, sign * target)[0]
        return RowsNeeded(metric=metric, target=target, epsilon=float(epsilon), n_samples=point,
                          low=low, high=high, confidence=self.curves[0].confidence,
                          below_grid=below, above_grid=above)

    def plot(self, ax=None, metric="accuracy"):
        """Draw the metric against the training-set size, one line per epsilon.

        Returns
        -------
        ax : matplotlib Axes
        """
        try:
            import matplotlib.pyplot as plt
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError("LearningCurve.plot needs matplotlib: "
                              "pip install \"dpsk[plot]\" (or matplotlib).") from exc
        if ax is None:
            _, ax = plt.subplots(figsize=(5.5, 3.8))
        for epsilon in self.epsilons:
            mean, band = self.metric_at(epsilon, metric)
            ax.fill_between(self.train_sizes, band[0], band[1], alpha=0.25)
            ax.plot(self.train_sizes, mean, marker="o", ms=3, label=f"epsilon={epsilon:g}")
        ax.set_xscale("log")
        ax.set_xlabel("training rows")
        ax.set_ylabel(f"held-out {metric}")
        ax.set_title(self.curves[0].description, fontsize=9)
        ax.legend(fontsize=8)
        return ax

    def _epsilon_index(self, epsilon):
        matches = np.flatnonzero(np.isclose(self.epsilons, float(epsilon), rtol=1e-12))
        if matches.size == 0:
            raise ValueError(f"epsilon={epsilon!r} was not measured; the curve has "
                             f"{list(map(float, self.epsilons))}.")
        return int(matches[0])


def learning_curve(estimator, X, y, *, train_sizes=None, epsilons=(0.1, 1.0), n_draws=10,
                   test_size=0.3, confidence=0.9, n_jobs=None, random_state=None,
                   progress="auto"):
    """Held-out accuracy and loss against the training-set size, on public data.

    Public-data mode, like :func:`~dpsk.utility.utility_curve`: ``(X, y)`` must
    be public (or synthetic) data that resembles the private data, and nothing
    is charged to any ledger. ``(X, y)`` is split once (stratified) into a
    training part and a held-out part of ``test_size``; the training part is
    put in a public random order, and the fits at size ``n`` use its first
    ``n`` rows, so the subsamples are nested. At every size and epsilon,
    ``n_draws`` private fits with independent noise are scored on the
    held-out part.

    A curve measured on public data answers "how many rows of data like this
    do I need": a private data set of ``n`` rows at epsilon gets about the
    accuracy the curve shows at ``n``.

    Parameters
    ----------
    estimator : DPLogisticRegression, DPHuberSVM, DPKernelClassifier or Pipeline
        Cloned, never refitted. A pipeline ending in such a model is fitted
        whole, its private steps sharing each epsilon as their declared
        epsilons do (:func:`~dpsk.utility.utility_curve`).
    X : array-like of shape (n_samples, n_features)
    y : array-like of shape (n_samples,)
        Public features and labels.
    train_sizes : array-like of int, default=None
        Training-set sizes, each at most the size of the training part. By
        default 6 sizes spaced evenly in ``log n`` from a tenth of the training
        part to all of it.
    epsilons : array-like, default=(0.1, 1.0)
        The epsilon of one fit; at least one value.
    n_draws : int, default=10
        Noise draws per size and epsilon, >= 2.
    test_size, confidence, n_jobs, random_state, progress
        As in :func:`~dpsk.utility.utility_curve`.

    Returns
    -------
    LearningCurve

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklearn.preprocessing import normalize
    >>> from dpsk import DPLogisticRegression
    >>> from dpsk.utility import learning_curve
    >>> X, y = make_classification(n_samples=2000, random_state=0)
    >>> curve = learning_curve(DPLogisticRegression(alpha=1e-2), normalize(X), y,
    ...                        train_sizes=[200, 1400], epsilons=[1.0], n_draws=3,
    ...                        random_state=0)
    >>> curve.metric_at(1.0)[0].shape
    (2,)
    """
    check_estimator(estimator)
    eps = _check_learning_epsilons(epsilons)
    n_draws, confidence, classes, (X_train, y_train, X_test, y_test) = _checked_public_split(
        X, y, n_draws, test_size, confidence, random_state, progress,
        raw=isinstance(estimator, Pipeline))
    sizes = _check_train_sizes(train_sizes, len(y_train))
    order = public_rng(random_state).permutation(len(y_train))
    X_train, y_train = _safe_indexing(X_train, order), y_train[order]
    curves = []
    for k, n in enumerate(sizes):
        seeds = None if random_state is None else curve_seeds(random_state + k + 1, len(eps),
                                                              n_draws)
        curves.append(_monte_carlo(
            estimator, classes, eps, n_draws, seeds,
            (_safe_indexing(X_train, np.arange(n)), y_train[:n], X_test, y_test), confidence,
            n_jobs, progress,
            describe(estimator, "public, learning curve")))
    return LearningCurve(train_sizes=sizes, curves=tuple(curves))


def _check_learning_epsilons(epsilons):
    values = np.atleast_1d(np.asarray(epsilons, dtype=float))
    if values.size == 1:
        if not (np.isfinite(values[0]) and values[0] > 0):
            raise ValueError(f"epsilons must be finite and > 0, got {epsilons!r}.")
        return values
    return check_epsilons(values)


def _check_train_sizes(train_sizes, n_available):
    if train_sizes is None:
        low = max(20, n_available // 10)
        return np.unique(np.geomspace(low, n_available, 6).round().astype(int))
    sizes = np.unique(np.asarray(train_sizes))
    if sizes.ndim != 1 or sizes.size == 0 or not np.issubdtype(sizes.dtype, np.integer):
        raise ValueError("train_sizes must be a non-empty sequence of ints.")
    if sizes[0] < 2 or sizes[-1] > n_available:
        raise ValueError(f"train_sizes must lie in [2, {n_available}] (the public training "
                         f"part), got {sizes[0]} to {sizes[-1]}.")
    return sizes

