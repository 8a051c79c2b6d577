"""The result objects of ``dpsk.utility``: a utility curve and a recommended epsilon."""

from dataclasses import dataclass

import numpy as np
from scipy.stats import norm

__all__ = ["UtilityCurve", "Recommendation"]


@dataclass(frozen=True)
class Recommendation:
    """The epsilon a curve says reaches a target, with its uncertainty.

    Attributes
    ----------
    metric : {"accuracy", "loss"}
        What the target is about (accuracy at least, or loss at most).
    target : float
    epsilon : float
        Where the curve's mean crosses the target for good (interpolated in
        log epsilon between grid points). ``nan`` if the grid never reaches it.
    low, high : float
        The interval: where the optimistic and the pessimistic end of the
        confidence band cross the target. In probe mode there is no band and
        both equal ``epsilon``.
    single_fit : float
        Public mode only (else ``nan``): where the lower ``(1 - confidence) / 2``
        quantile of one fit's metric crosses the target, so that a single fit
        at this epsilon reaches the target with probability at least ``(1 +
        confidence) / 2`` (on data like the public data).
    confidence : float
    mode : {"public", "probe"}
    below_grid, above_grid : bool
        The mean already meets the target at the smallest epsilon of the grid
        (``epsilon`` is then that epsilon, an upper bound), or never within the
        grid (``epsilon`` is ``nan``).
    """

    metric: str
    target: float
    epsilon: float
    low: float
    high: float
    single_fit: float
    confidence: float
    mode: str
    below_grid: bool
    above_grid: bool

    def __str__(self):
        if self.above_grid:
            return (f"The {self.metric} target {self.target:g} is not reached on the grid "
                    "of epsilons; extend it.")
        where = "<= " if self.below_grid else ""
        head = (f"epsilon {where}{self.epsilon:.3g} for {self.metric} "
                f"{'>=' if self.metric == 'accuracy' else '<='} {self.target:g}")
        if self.confidence == 0:
            # Probe mode extrapolates one fit: there is no band, so no interval.
            return f"{head} ({self.mode} mode: a point estimate, no confidence interval)"
        return (f"{head} (interval [{self.low:.3g}, {self.high:.3g}], {self.mode} mode, "
                f"confidence {self.confidence:g})")


@dataclass(frozen=True, eq=False)
class UtilityCurve:
    """Held-out accuracy and loss of a private estimator against epsilon.

    Built by :func:`dpsk.utility.utility_curve` (public mode, Monte Carlo over
    the mechanism's noise) or :func:`dpsk.utility.probe_curve` (probe mode,
    extrapolated from one private fit). Read it through its attributes, invert
    it with :meth:`recommend`, draw it with :meth:`plot`.

    Attributes
    ----------
    epsilons : ndarray of shape (k,)
        Increasing.
    accuracy, loss : ndarray of shape (k, m)
        One column per Monte Carlo draw (``m = 1`` in probe mode).
    accuracy_mean, loss_mean : ndarray of shape (k,)
    accuracy_band, loss_band : ndarray of shape (2, k)
        Lower and upper confidence limits of the *expected* metric: the Monte
        Carlo error of the mean plus the sampling error of the finite
        held-out set (``Var_draws / m + Var_rows / n_test``, normal
        approximation). Equal to the mean in probe mode.
    accuracy_spread, loss_spread : ndarray of shape (2, k)
        The ``(1 -/+ confidence) / 2`` quantiles of a *single* fit's metric
        over the noise (public mode; the mean in probe mode).
    confidence : float
    mode : {"public", "probe"}
    n_train, n_test : int
        Rows the fits were trained on and evaluated on.
    description : str
        The estimator and the method, for plot titles and reports.
    """

    epsilons: np.ndarray
    accuracy: np.ndarray
    loss: np.ndarray
    accuracy_row_var: np.ndarray
    loss_row_var: np.ndarray
    confidence: float
    mode: str
    n_train: int
    n_test: int
    description: str

    def __repr__(self):
        return (f"UtilityCurve({self.description}; {len(self.epsilons)} epsilons from "
                f"{self.epsilons[0]:.3g} to {self.epsilons[-1]:.3g}, "
                f"{self.accuracy.shape[1]} draws each, {self.n_train:,} training rows, "
                f"{self.n_test:,} held out)")

    def __str__(self):
        """The curve as a table: one line per epsilon (what ``print(curve)`` shows)."""
        level = f"{self.confidence:.0%}"
        banded = self.mode == "public"
        head = f"{'epsilon':>9}  {'accuracy':>8}"
        if banded:
            head += f"  {level + ' band':>16}  {'one fit, ' + level:>16}"
        head += f"  {'loss':>8}"
        lines = [repr(self), head]
        band, spread = self.accuracy_band, self.accuracy_spread
        for i, epsilon in enumerate(self.epsilons):
            line = f"{epsilon:>9.3g}  {self.accuracy_mean[i]:>8.4f}"
            if banded:
                line += (f"  [{band[0, i]:.4f}, {band[1, i]:.4f}]"
                         f"  [{spread[0, i]:.4f}, {spread[1, i]:.4f}]")
            line += f"  {self.loss_mean[i]:>8.4f}"
            lines.append(line)
        lines.append("recommend(target_accuracy=...) inverts it; plot() draws it "
                     "(pip install \"dpsk[plot]\").")
        return "\n".join(lines)

    @property
    def accuracy_mean(self):
        return self.accuracy.mean(axis=1)

    @property
    def loss_mean(self):
        return self.loss.mean(axis=1)

    @property
    def accuracy_band(self):
        return self._band(self.accuracy, self.accuracy_row_var)

    @property
    def loss_band(self):
        return self._band(self.loss, self.loss_row_var)

    @property
    def accuracy_spread(self):
        return self._spread(self.accuracy)

    @property
    def loss_spread(self):
        return self._spread(self.loss)

    def _band(self, draws, row_var):
        mean = draws.mean(axis=1)
        m = draws.shape[1]
        var_mc = draws.var(axis=1, ddof=1) / m if m > 1 else np.zeros_like(mean)
        var_rows = row_var / self.n_test if self.mode == "public" else np.zeros_like(mean)
        half = norm.ppf(0.5 + self.confidence / 2.0) * np.sqrt(var_mc + var_rows)
        return np.vstack([mean - half, mean + half])

    def _spread(self, draws):
        tail = (1.0 - self.confidence) / 2.0
        return np.quantile(draws, [tail, 1.0 - tail], axis=1)

    def recommend(self, target_accuracy=None, target_loss=None):
        """Invert the curve: the epsilon interval that reaches a target.

        The crossing of a curve is the smallest epsilon from which the curve
        meets the target at every larger grid point, interpolated linearly in
        ``log(epsilon)`` between the last grid point that misses and the next.
        The point estimate is the crossing of the mean; the interval runs
        from the crossing of the optimistic end of :attr:`accuracy_band` (or
        :attr:`loss_band`) to that of the pessimistic end. It is an interval
        for the epsilon at which the *expected* metric meets the target;
        ``single_fit`` answers the stricter question for one fit.

        Parameters
        ----------
        target_accuracy : float in (0, 1], optional
            Held-out accuracy to reach (at least).
        target_loss : float > 0, optional
            Held-out loss to reach (at most). Give exactly one of the two.

        Returns
        -------
        Recommendation
        """
        metric, target = _check_target(target_accuracy, target_loss)
        sign = 1.0 if metric == "accuracy" else -1.0
        mean = getattr(self, f"{metric}_mean")
        band = getattr(self, f"{metric}_band")
        spread = getattr(self, f"{metric}_spread")
        # Accuracy must be >= target; loss <= target: flip the loss to share the code.
        optimistic, pessimistic = (band[1], band[0]) if sign > 0 else (band[0], band[1])
        single = spread[0] if sign > 0 else spread[1]
        eps = self.epsilons
        point, below, above = _crossing(eps, sign * mean, sign * target)
        low = _crossing(eps, sign * optimistic, sign * target)[0]
        high = _crossing(eps, sign * pessimistic, sign * target)[0]
        single_fit = (_crossing(eps, sign * single, sign * target)[0]
                      if self.mode == "public" else float("nan"))
        return Recommendation(metric=metric, target=float(target), epsilon=point, low=low,
                              high=high, single_fit=single_fit, confidence=self.confidence,
                              mode=self.mode, below_grid=below, above_grid=above)

    def plot(self, axes=None, metrics=("accuracy", "loss")):
        """Draw the metrics against epsilon (log axis) with their bands.

        The dark band is the confidence band of the expected metric, the light
        one the spread of a single fit (public mode).

        Parameters
        ----------
        axes : sequence of matplotlib Axes, optional
            One per metric; new figure if None.
        metrics : tuple of {"accuracy", "loss"}, default=("accuracy", "loss")

        Returns
        -------
        axes : list of matplotlib Axes
        """
        try:
            import matplotlib.pyplot as plt
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError("UtilityCurve.plot needs matplotlib: "
                              "pip install \"dpsk[plot]\" (or matplotlib).") from exc
        for metric in metrics:
            if metric not in ("accuracy", "loss"):
                raise ValueError(f"metrics must be 'accuracy' or 'loss', got {metric!r}.")
        if axes is None:
            fig, axes = plt.subplots(1, len(metrics), figsize=(5 * len(metrics), 3.6),
                                     squeeze=False)
            axes = list(axes[0])
        for ax, metric in zip(axes, metrics):
            mean = getattr(self, f"{metric}_mean")
            if self.mode == "public":
                spread = getattr(self, f"{metric}_spread")
                ax.fill_between(self.epsilons, spread[0], spread[1], alpha=0.15,
                                label=f"single fit, {self.confidence:.0%}")
                band = getattr(self, f"{metric}_band")
                ax.fill_between(self.epsilons, band[0], band[1], alpha=0.35,
                                label=f"expected, {self.confidence:.0%} band")
            ax.plot(self.epsilons, mean, marker="o", ms=3, label=f"mean ({self.mode})")
            ax.set_xscale("log")
            ax.set_xlabel("epsilon")
            ax.set_ylabel(f"held-out {metric}")
            ax.legend(fontsize=8)
        axes[0].set_title(self.description, fontsize=9)
        return axes


def _check_target(target_accuracy, target_loss):
    if (target_accuracy is None) == (target_loss is None):
        raise ValueError("Give exactly one of target_accuracy and target_loss.")
    if target_accuracy is not None:
        if not (np.isscalar(target_accuracy) and 0 < float(target_accuracy) <= 1):
            raise ValueError(f"target_accuracy must be in (0, 1], got {target_accuracy!r}.")
        return "accuracy", float(target_accuracy)
    if not (np.isscalar(target_loss) and 0 < float(target_loss) < np.inf):
        raise ValueError(f"target_loss must be finite and > 0, got {target_loss!r}.")
    return "loss", float(target_loss)


def _crossing(epsilons, values, target):
    """Smallest epsilon from which ``values >= target`` at every later grid point.

    Returns ``(epsilon, below_grid, above_grid)``; interpolated in log epsilon.
    """
    values = np.asarray(values, dtype=float)
    misses = np.flatnonzero(~(values >= target))
    if misses.size == 0:
        return float(epsilons[0]), True, False
    i = misses[-1]
    if i == len(values) - 1:
        return float("nan"), False, True
    v0, v1 = values[i], values[i + 1]
    frac = 1.0 if not np.isfinite(v0) or v1 == v0 else (target - v0) / (v1 - v0)
    log_eps = np.log(epsilons[i]) + frac * (np.log(epsilons[i + 1]) - np.log(epsilons[i]))
    return float(np.exp(log_eps)), False, False
