"""dpsk.utility: utility curves, the probe derivative and the recommendation."""

import builtins
import warnings

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.preprocessing import normalize

import dpsk.mechanisms._erm as erm
from dpsk import (
    BudgetAccountant,
    DPHuberSVM,
    DPKernelClassifier,
    DPLogisticRegression,
    default_accountant,
)
from dpsk._optimize._binary import minimize_regularized_loss
from dpsk._optimize._losses import HuberLoss, LogisticLoss
from dpsk._optimize._solution_cache import reusing_solutions
from dpsk.mechanisms._random import NoiseSource
from dpsk.utility import (
    UtilityCurve,
    curve_seeds,
    perturbed_optimum_derivative,
    probe_curve,
    recommend_epsilon,
    utility_curve,
)
from dpsk.utility._common import held_out_metrics
from dpsk.utility._curve import _crossing
from dpsk.utility._probe import _design, _law, _prior_center


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(n_samples=300, n_features=6, n_informative=4,
                               random_state=0)
    return normalize(X), y


EPS = [0.3, 3.0, 30.0]


def _fits_as_in_curve(est, X, y, curve, eps, seeds):
    """Real fits with the curve's split and seeds, scored like the curve."""
    from sklearn.model_selection import train_test_split

    from dpsk.mechanisms._random import public_rng

    split_seed = int(public_rng(0).integers(2**31))
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, stratify=y,
                                          random_state=split_seed)
    out = np.empty(seeds.shape)
    for i, e in enumerate(eps):
        for j, s in enumerate(seeds[i]):
            fitted = est.set_params(epsilon=e, random_state=int(s), classes=[0, 1],
                                    accountant=BudgetAccountant()).fit(Xtr, ytr)
            out[i, j] = held_out_metrics(fitted, Xte, yte)[0]
    return out


@pytest.mark.parametrize("perturbation, delta", [("output", 0.0), ("output", 1e-5),
                                                 ("objective", 0.0)])
@pytest.mark.filterwarnings("ignore::dpsk.PrivacyBudgetWarning")
def test_monte_carlo_draws_are_the_estimators_fits(data, perturbation, delta):
    # Same seed, same release: the reused solve changes nothing in the noise law.
    X, y = data
    est = DPLogisticRegression(alpha=1e-2, perturbation=perturbation, delta=delta)
    curve = utility_curve(est, X, y, epsilons=EPS, n_draws=3, random_state=0)
    real = _fits_as_in_curve(est, X, y, curve, EPS, curve_seeds(0, len(EPS), 3))
    np.testing.assert_array_equal(curve.accuracy, real)


def test_reused_solution_releases_the_same_bits(data):
    X, y = data
    est = DPLogisticRegression(alpha=1e-2, perturbation="output", random_state=5,
                               classes=[0, 1], accountant=BudgetAccountant())
    plain = est.fit(X, y).coef_.copy()
    store = {}
    with reusing_solutions(store):
        first = est.set_params(random_state=5).fit(X, y).coef_.copy()
        again = est.fit(X, y).coef_.copy()
    assert len(store) == 1
    np.testing.assert_array_equal(plain, first)
    np.testing.assert_array_equal(plain, again)


def test_output_perturbation_solves_once(data, monkeypatch):
    # Without a noisy class prior every draw solves the same problem: one solve. With
    # it, each draw's regulariser is centred on its own noisy prior: one solve per
    # distinct centre (draws that share a seed share it).
    X, y = data
    calls = []
    real_minimize = erm._minimize
    monkeypatch.setattr(erm, "_minimize", lambda *a, **k: calls.append(1) or real_minimize(*a, **k))
    utility_curve(DPLogisticRegression(alpha=1e-2, perturbation="output", class_prior=None),
                  X, y, epsilons=EPS, n_draws=4, random_state=0)
    assert len(calls) == 1
    calls.clear()
    utility_curve(DPLogisticRegression(alpha=1e-2, perturbation="output", class_prior=[1, 3]),
                  X, y, epsilons=EPS, n_draws=4, random_state=0)
    assert len(calls) == 1


def test_nothing_is_charged_to_any_ledger(data):
    X, y = data
    before = len(default_accountant().events)
    mine = BudgetAccountant(epsilon=1.0)
    utility_curve(DPLogisticRegression(alpha=1e-2, accountant=mine), X, y, epsilons=EPS,
                  n_draws=2, random_state=0)
    recommend_epsilon(DPLogisticRegression(alpha=1e-2), X, y, target_accuracy=0.7,
                      epsilons=EPS, n_draws=2, random_state=0)
    assert len(default_accountant().events) == before
    assert mine.events == []


@pytest.mark.parametrize("est", [
    DPHuberSVM(alpha=1e-2, perturbation="objective", delta=1e-5),
    DPLogisticRegression(alpha=1e-2, perturbation="gradient", delta=1e-5),
    DPKernelClassifier(alpha=1e-2, n_components=20, perturbation="output"),
    DPKernelClassifier(alpha=1e-2, n_components=20, perturbation="objective", delta=1e-5),
])
def test_every_noise_model_gets_a_curve(data, est):
    X, y = data
    curve = utility_curve(est, X, y, epsilons=[1.0, 100.0], n_draws=2, random_state=1,
                          n_jobs=2)
    assert curve.accuracy.shape == (2, 2)
    assert np.all((curve.accuracy >= 0) & (curve.accuracy <= 1))
    assert np.all(np.isfinite(curve.loss))


def test_multiclass_curve(data):
    X, _ = data
    y = np.arange(len(X)) % 3
    curve = utility_curve(DPLogisticRegression(alpha=1e-2), X, y, epsilons=[1.0, 10.0],
                          n_draws=2, random_state=0)
    assert np.all(np.isfinite(curve.loss))


@pytest.mark.parametrize("perturbation, delta", [("objective", 0.0), ("objective", 1e-5),
                                                 ("output", 0.0), ("output", 1e-5)])
@pytest.mark.parametrize("loss", [LogisticLoss(), HuberLoss(0.5)])
@pytest.mark.parametrize("epsilon", [0.02, 0.5])
def test_derivative_matches_finite_differences(data, perturbation, delta, loss, epsilon):
    # Hold the noise draw u fixed, solve at epsilon +- h, compare with the formula.
    X, y = data
    Z = np.hstack([X, np.ones((len(X), 1))]) / np.sqrt(2)
    y_pm = np.where(y == 1, 1.0, -1.0)
    n, d = Z.shape
    u = np.random.default_rng(0).standard_normal(d)

    def law(e):
        return erm._noise_law(loss, n, d, e, 1e-2, perturbation, delta=delta)

    w_star = minimize_regularized_loss(loss, Z, y_pm, 1e-2, tol=1e-13).w

    def optimum(e):
        s, lam = law(e)
        if perturbation == "output":
            return w_star + s * u
        return minimize_regularized_loss(loss, Z, y_pm, lam, linear=s * u / n, tol=1e-13).w

    h = 1e-4 * epsilon
    numeric = (optimum(epsilon + h) - optimum(epsilon - h)) / (2 * h)
    w = optimum(epsilon)
    analytic = perturbed_optimum_derivative(
        w, Z, y_pm, loss, law, epsilon, w_star=w_star if perturbation == "output" else None)
    np.testing.assert_allclose(analytic, numeric, rtol=2e-3, atol=1e-6 * np.abs(numeric).max())

    # The paper's Eq. 6 sign (b' along +u) gives the wrong derivative.
    if perturbation == "objective":
        def flipped(e):  # scale increasing in epsilon
            return 1.0 / law(e)[0], law(e)[1]

        wrong = perturbed_optimum_derivative(w, Z, y_pm, loss, flipped, epsilon)
        assert not np.allclose(wrong, numeric, rtol=0.1)


@pytest.mark.parametrize("perturbation, delta", [("objective", 0.0), ("objective", 1e-5),
                                                 ("output", 0.0), ("output", 1e-5)])
def test_noise_law_is_the_one_private_erm_draws(monkeypatch, perturbation, delta):
    X, y = make_classification(n_samples=80, n_features=4, random_state=1)
    Z = normalize(X)
    y_pm = np.where(y == 1, 1.0, -1.0)
    seen = []
    real_gamma, real_gauss = erm.gamma_norm_noise, erm.gaussian_noise
    monkeypatch.setattr(
        erm, "gamma_norm_noise",
        lambda dim, beta, rng: seen.append(1.0 / beta) or real_gamma(dim, beta, rng))
    monkeypatch.setattr(erm, "gaussian_noise",
                        lambda dim, sigma, rng: seen.append(sigma) or real_gauss(dim, sigma, rng))
    erm.private_erm(Z, y_pm, LogisticLoss(), 0.7, 1e-2, perturbation, NoiseSource.seeded(0),
                    delta=delta)
    scale, _ = erm._noise_law(LogisticLoss(), 80, 4, 0.7, 1e-2, perturbation, delta=delta)
    assert seen[0] == pytest.approx(scale, rel=1e-12)


@pytest.mark.filterwarnings("ignore::dpsk.utility.ProbeRangeWarning")
def test_probe_charges_the_probe_and_nothing_else(data):
    X, y = data
    acc = BudgetAccountant(epsilon=2.0)
    est = DPLogisticRegression(alpha=1e-2, epsilon=0.5, random_state=3, classes=[0, 1],
                               accountant=acc)
    curve = probe_curve(est, X[:150], y[:150], X_private=X[150:], y_private=y[150:],
                        epsilons=EPS)
    assert acc.total() == (0.5, 0.0)
    assert curve.mode == "probe" and curve.accuracy.shape == (3, 1)
    # Post-processing: the prefit probe with n alone gives the same curve.
    again = probe_curve(est, X[:150], y[:150], n_samples=150, epsilons=EPS)
    np.testing.assert_array_equal(curve.loss, again.loss)
    assert acc.total() == (0.5, 0.0)


@pytest.mark.parametrize("class_prior", [None, [1, 3]])
def test_probe_inverse_extrapolation_is_exact_for_output_perturbation(data, class_prior):
    # Output perturbation: w(eps) = w* + s(eps) u. With public = private data the
    # inverse extrapolation reproduces a fit at another epsilon with the same draw,
    # also with the regulariser centred on a fixed (declared) prior. A noisy prior is
    # redrawn at each epsilon, so exactness cannot hold for class_prior="auto".
    X, y = data
    est = DPLogisticRegression(alpha=1e-2, perturbation="output", epsilon=1.0,
                               random_state=4, classes=[0, 1], accountant=BudgetAccountant(),
                               class_prior=class_prior)
    curve = probe_curve(est, X, y, X_private=X, y_private=y, epsilons=[0.5, 4.0])
    for e, loss in zip([0.5, 4.0], curve.loss[:, 0]):
        other = DPLogisticRegression(**{**est.get_params(), "epsilon": e}).fit(X, y)
        Z, w = _design(other, X)
        margins = np.where(y == 1, 1.0, -1.0) * (Z @ w)
        assert loss == pytest.approx(np.mean(np.logaddexp(0, -margins)), rel=1e-4)


def test_probe_reads_the_models_share_and_centre(data):
    # class_prior="auto": a fit at epsilon runs its model at its share of epsilon, and
    # its regulariser is centred on the noisy prior's model; the probe's law and centre
    # are those (public), and without a prior the whole epsilon and no centre.
    X, y = data
    est = DPLogisticRegression(alpha=1e-2, perturbation="output", epsilon=1.0, random_state=4,
                               classes=[0, 1], accountant=BudgetAccountant()).fit(X, y)
    loss, (n, d) = LogisticLoss(), (X.shape[0], X.shape[1] + 1)
    for e in (0.5, 4.0):
        share = est._prior_budget(n, d, loss, 2, e, 0.0).model_epsilon
        assert share < e
        assert _law(est, loss, n, d, 0.0)(e) == erm._noise_law(loss, n, d, share, 1e-2,
                                                                "output")
    center = _prior_center(est, d)
    assert np.count_nonzero(center) == 1 and center[-1] != 0.0
    bare = DPLogisticRegression(**{**est.get_params(), "class_prior": None}).fit(X, y)
    assert _prior_center(bare, d) is None
    assert _law(bare, loss, n, d, 0.0)(0.5) == erm._noise_law(loss, n, d, 0.5, 1e-2, "output")


@pytest.mark.filterwarnings("ignore::dpsk.utility.ProbeRangeWarning")
def test_probe_kernel_and_refusals(data):
    X, y = data
    kernel = DPKernelClassifier(alpha=1e-2, n_components=20, epsilon=1.0, random_state=0,
                                classes=[0, 1], accountant=BudgetAccountant())
    curve = probe_curve(kernel, X, y, X_private=X, y_private=y, epsilons=EPS)
    assert np.all(np.isfinite(curve.loss))
    with pytest.raises(ValueError, match="gradient"):
        probe_curve(DPLogisticRegression(perturbation="gradient", delta=1e-5), X, y,
                    X_private=X, y_private=y)
    with pytest.raises(ValueError, match="binary"):
        probe_curve(DPLogisticRegression(accountant=BudgetAccountant(), classes=[0, 1, 2]),
                    X, y, X_private=X, y_private=np.arange(len(y)) % 3)
    with pytest.raises(ValueError, match="n_samples"):
        probe_curve(kernel, X, y)
    with pytest.raises(ValueError, match="extrapolation"):
        probe_curve(kernel, X, y, n_samples=10, extrapolation="quadratic")


def _toy_curve(acc, mode="public"):
    acc = np.asarray(acc, dtype=float)
    return UtilityCurve(epsilons=np.array([0.1, 1.0, 10.0]), accuracy=acc,
                        loss=1.0 - acc, accuracy_row_var=np.zeros(3),
                        loss_row_var=np.zeros(3), confidence=0.9, mode=mode, n_train=10,
                        n_test=100, description="toy")


def test_recommendation_is_an_interval_around_the_crossing():
    curve = _toy_curve([[0.5, 0.6, 0.55], [0.7, 0.8, 0.75], [0.9, 0.9, 0.9]])
    rec = curve.recommend(target_accuracy=0.75)
    assert rec.low < rec.epsilon < rec.high
    assert rec.epsilon == pytest.approx(1.0)  # the mean crosses exactly at the grid point
    loss_rec = curve.recommend(target_loss=0.25)
    assert loss_rec.epsilon == pytest.approx(1.0)
    assert curve.recommend(target_accuracy=0.95).above_grid
    below = curve.recommend(target_accuracy=0.3)
    assert below.below_grid and below.epsilon == 0.1
    assert "epsilon" in str(rec)


def test_crossing_ignores_early_lucky_points():
    eps = np.array([0.1, 1.0, 10.0, 100.0])
    value, below, above = _crossing(eps, np.array([0.9, 0.1, 0.5, 0.9]), 0.7)
    assert not below and not above
    assert 10.0 < value < 100.0


@pytest.mark.parametrize("kwargs, match", [
    ({"epsilons": [1.0]}, "at least two"),
    ({"epsilons": [0.0, 1.0]}, "> 0"),
    ({"epsilons": [1.0, np.inf]}, "finite"),
    ({"n_draws": 1}, "n_draws"),
    ({"test_size": 1.5}, "test_size"),
    ({"confidence": 0}, "confidence"),
    ({"progress": "yes"}, "progress"),
    ({"random_state": np.random.default_rng(0)}, "random_state"),
])
def test_public_mode_refuses_bad_input(data, kwargs, match):
    X, y = data
    with pytest.raises((ValueError, TypeError), match=match):
        utility_curve(DPLogisticRegression(), X, y, **kwargs)


def test_refusals_before_any_fit(data):
    X, y = data
    from sklearn.linear_model import LogisticRegression

    with pytest.raises(TypeError, match="noise model"):
        utility_curve(LogisticRegression(), X, y)
    acc = BudgetAccountant(epsilon=1.0)
    with pytest.raises(ValueError, match="exactly one"):
        recommend_epsilon(DPLogisticRegression(accountant=acc), X, y, mode="probe",
                          X_private=X, y_private=y)
    with pytest.raises(ValueError, match="target_accuracy"):
        recommend_epsilon(DPLogisticRegression(accountant=acc), X, y, target_accuracy=2,
                          mode="probe", X_private=X, y_private=y)
    assert acc.events == []
    with pytest.raises(ValueError, match="mode"):
        recommend_epsilon(DPLogisticRegression(), X, y, target_accuracy=0.8, mode="oracle")


def test_progress_without_tqdm(data, monkeypatch):
    X, y = data
    real_import = builtins.__import__

    def no_tqdm(name, *args, **kwargs):
        if name.startswith("tqdm"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_tqdm)
    curve = utility_curve(DPLogisticRegression(alpha=1e-2, perturbation="output"), X, y,
                          epsilons=EPS, n_draws=2, random_state=0, progress=True)
    assert curve.accuracy.shape == (3, 2)


def test_plot(data):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    X, y = data
    curve = utility_curve(DPLogisticRegression(alpha=1e-2), X, y, epsilons=EPS, n_draws=2,
                          random_state=0)
    axes = curve.plot()
    assert len(axes) == 2
    import matplotlib.pyplot as plt

    plt.close("all")
    with pytest.raises(ValueError, match="metrics"):
        curve.plot(metrics=("auc",))


def test_probe_warns_for_epsilons_far_from_the_probe(data):
    from dpsk.utility import ProbeRangeWarning

    X, y = data
    est = DPLogisticRegression(alpha=1e-2, epsilon=1.0, random_state=5, classes=[0, 1],
                               accountant=BudgetAccountant())
    with pytest.warns(ProbeRangeWarning, match="2 of the 3 epsilons"):
        probe_curve(est, X, y, X_private=X, y_private=y, epsilons=[0.05, 1.0, 20.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error", ProbeRangeWarning)
        near = probe_curve(est, X, y, n_samples=len(y), epsilons=[0.2, 1.0, 5.0])
        default = probe_curve(est, X, y, n_samples=len(y))
    assert near.epsilons.size == 3
    assert default.epsilons.min() == pytest.approx(0.1) and default.epsilons.max() == 10.0
