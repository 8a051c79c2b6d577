"""learning_curve: held-out utility against the training-set size, on public data."""

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.preprocessing import normalize

from dpsk import BudgetAccountant, DPLogisticRegression
from dpsk.utility import LearningCurve, RowsNeeded, learning_curve


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(n_samples=3000, n_features=8, random_state=0)
    return normalize(X), y


@pytest.fixture(scope="module")
def curve(data):
    X, y = data
    # class_prior=None: the curve's numbers (which the reach tests read) are those of
    # the model alone; at 100 rows the noisy prior's share moves them (about 0.63 -> 0.51
    # at epsilon 1), which is the estimator's business, not the curve's.
    return learning_curve(DPLogisticRegression(alpha=1e-2, classes=[0, 1], class_prior=None),
                          X, y, train_sizes=[100, 400, 2100], epsilons=[0.1, 1.0], n_draws=4,
                          random_state=0)


def test_shapes_and_growth(curve):
    assert isinstance(curve, LearningCurve)
    np.testing.assert_array_equal(curve.train_sizes, [100, 400, 2100])
    assert [c.n_train for c in curve.curves] == [100, 400, 2100]
    assert len({c.n_test for c in curve.curves}) == 1  # one held-out part for every size
    mean, band = curve.metric_at(1.0)
    assert mean.shape == (3,) and band.shape == (2, 3)
    assert np.all(band[0] <= mean) and np.all(mean <= band[1])
    # More rows, less noise: at epsilon 0.1 the largest size beats the smallest clearly.
    small_eps = curve.metric_at(0.1)[0]
    assert small_eps[-1] > small_eps[0] + 0.05


def test_reproducible_with_a_seed(data, curve):
    X, y = data
    again = learning_curve(DPLogisticRegression(alpha=1e-2, classes=[0, 1], class_prior=None),
                           X, y, train_sizes=[100, 400, 2100], epsilons=[0.1, 1.0],
                           n_draws=4, random_state=0)
    for a, b in zip(curve.curves, again.curves):
        np.testing.assert_array_equal(a.accuracy, b.accuracy)


def test_charges_nothing(data):
    X, y = data
    acc = BudgetAccountant(epsilon=0.5)
    learning_curve(DPLogisticRegression(alpha=1e-2, classes=[0, 1], accountant=acc), X, y,
                   train_sizes=[200, 800], epsilons=[1.0], n_draws=2, random_state=1)
    assert acc.events == []


def test_rows_needed(curve):
    reach = curve.rows_needed(1.0, target_accuracy=0.6)
    assert isinstance(reach, RowsNeeded) and reach.below_grid
    assert "training rows" in str(reach)
    never = curve.rows_needed(0.1, target_accuracy=0.999)
    assert never.above_grid and np.isnan(never.n_samples) and "not reached" in str(never)
    mean = curve.metric_at(0.1)[0]
    target = float((mean[0] + mean[-1]) / 2)
    mid = curve.rows_needed(0.1, target_accuracy=target)
    assert 100 < mid.n_samples <= 2100


def test_default_sizes_span_a_tenth_to_all(data):
    X, y = data
    curve = learning_curve(DPLogisticRegression(alpha=1e-2, classes=[0, 1]), X, y,
                           epsilons=[1.0], n_draws=2, random_state=2)
    assert curve.train_sizes[-1] == 2100 and curve.train_sizes[0] == 210
    assert len(curve.train_sizes) == 6


@pytest.mark.parametrize("kwargs, match", [
    (dict(train_sizes=[1, 10]), "train_sizes must lie"),
    (dict(train_sizes=[10, 5000]), "train_sizes must lie"),
    (dict(train_sizes=[0.5]), "sequence of ints"),
    (dict(epsilons=[-1.0]), "epsilons"),
    (dict(n_draws=1), "n_draws"),
])
def test_bad_input_is_refused(data, kwargs, match):
    X, y = data
    with pytest.raises(ValueError, match=match):
        learning_curve(DPLogisticRegression(classes=[0, 1]), X, y, **kwargs)


def test_unmeasured_epsilon_is_refused(curve):
    with pytest.raises(ValueError, match="was not measured"):
        curve.rows_needed(0.5, target_accuracy=0.8)
    with pytest.raises(ValueError, match="exactly one"):
        curve.rows_needed(1.0)


def test_plot(curve):
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    ax = curve.plot()
    assert len(ax.get_lines()) == 2


def test_an_interval_end_beyond_the_sizes_is_said_in_words():
    needed = RowsNeeded(metric="accuracy", target=0.8, epsilon=1.0, n_samples=9286.0,
                        low=5176.0, high=float("nan"), confidence=0.9, below_grid=False,
                        above_grid=False)
    assert "[5,176, beyond the sizes measured]" in str(needed)
