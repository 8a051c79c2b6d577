"""DPPCA and its release (dpsk.mechanisms._second_moment): the noise law with power
against 10% too little noise and a mutation test, the sensitivities on neighbouring
data sets (bounds checked and attained), the public rule for n_components, the
estimator's conventions and refusals, and a pipeline DPPCA -> DPLogisticRegression on
one ledger with its dry run.

The noise is recovered exactly: with ``data_norm = 1`` and ``n`` a power of two the
released matrix is the integer matrix times a power of two, so ``A / scale - M`` is
the draw (the approach of tests/test_count_mechanisms.py, whose law test it reuses)."""

import math
import pickle
import warnings

import numpy as np
import pytest
import test_release_audit as audit
from _sklearn_checks import parametrize_with_checks
from sklearn.pipeline import Pipeline, make_pipeline
from test_count_mechanisms import P_THRESHOLD, SMALLER, _check_law, _pvalue

import dpsk.mechanisms._second_moment as sm
from dpsk import (
    BudgetAccountant,
    BudgetExceededError,
    DataNormWarning,
    DPLogisticRegression,
    LeakyPipelineWarning,
    check_pipeline,
)
from dpsk.mechanisms._counts import CountNoise, zcdp_rho
from dpsk.mechanisms._random import NoiseSource
from dpsk.mechanisms._second_moment import (
    RESOLUTION,
    grid_rows,
    noisy_second_moment,
    second_moment_noise,
    second_moment_sensitivity,
)
from dpsk.pipeline import check_before_fit, make_private_pipeline
from dpsk.preprocessing import DPPCA, BoundedScaler, auto_n_components
from dpsk.preprocessing._pca import above_noise

G = RESOLUTION


@parametrize_with_checks([DPPCA(data_norm=1.0), DPPCA(n_components=1, delta=1e-6,
                                                       data_norm=5.0)])
def test_sklearn_compatible(estimator, check):
    check(estimator)


# -- the law ------------------------------------------------------------------------------


def _noise(X, epsilon, delta, seed):
    """The upper triangle of the noise of one release (integers), and the release."""
    n, d = X.shape
    A, law, event = noisy_second_moment(X, 1.0, epsilon, NoiseSource.seeded(seed),
                                        delta=delta)
    scale = 1.0 / (G * G * n)  # a power of two: A / scale is exactly M + E
    m = grid_rows(X, 1.0).astype(object)  # exact Python integers
    exact = np.array((m.T @ m).tolist(), dtype=np.int64)
    released = A / scale
    np.testing.assert_array_equal(released, np.rint(released))
    np.testing.assert_array_equal(A, A.T)
    upper = np.triu_indices(d)
    return np.rint(released[upper]).astype(np.int64) - exact[upper], law, event


def _wide(seed, d=160, n=4):
    return np.random.default_rng(seed).normal(size=(n, d)) / math.sqrt(d)


@pytest.mark.parametrize("delta", [0.0, pytest.param(1e-6, marks=pytest.mark.slow)])
def test_noise_has_the_calibrated_law(delta):
    X = _wide(0)  # 160 columns: 12880 noisy entries
    noise, law, event = _noise(X, 0.7, delta, seed=21)
    d = X.shape[1]
    # The laws written out from the table of the module docstring.
    if delta == 0:
        expected = CountNoise("laplace", law.parameter)
        assert law.kind == "laplace"
        assert float(law.parameter) == pytest.approx((d + 1) * G * G / 0.7, rel=1e-15)
        assert event.epsilon == 0.7 and event.delta == 0.0
    else:
        expected = law
        assert law.kind == "gaussian"
        assert float(law.parameter) == pytest.approx(2 * G**4 / (2 * zcdp_rho(0.7, delta)),
                                                     rel=1e-15)
        assert (event.epsilon, event.delta) == (0.7, delta)
    _check_law(noise, expected)


def test_mutation_ten_percent_less_noise_is_caught(monkeypatch):
    # The library made to calibrate its Laplace scale 10% too small: the law test fails.
    original = sm.laplace_noise
    monkeypatch.setattr(sm, "laplace_noise", lambda l1, eps: original(l1, eps / SMALLER))
    X = _wide(0)
    noise, _, _ = _noise(X, 0.7, 0.0, seed=21)
    d = X.shape[1]
    honest = CountNoise("laplace", original((d + 1) * G * G, 0.7).parameter)
    assert _pvalue(noise, honest) < P_THRESHOLD


def test_mutation_of_the_sensitivity_is_caught(monkeypatch):
    # A sensitivity 10% too small (the L1 bound of a narrower table) is caught too.
    monkeypatch.setattr(sm, "second_moment_sensitivity",
                        lambda d, resolution=G: (int(SMALLER * (d + 1) * G * G), 2 * G**4))
    X = _wide(1)
    noise, _, _ = _noise(X, 0.7, 0.0, seed=22)
    d = X.shape[1]
    honest = CountNoise("laplace", sm.laplace_noise((d + 1) * G * G, 0.7).parameter)
    assert _pvalue(noise, honest) < P_THRESHOLD


# -- sensitivities on neighbouring data sets ----------------------------------------------


def _upper(X):
    m = grid_rows(X, 1.0).astype(object)
    M = np.array((m.T @ m).tolist(), dtype=object)
    return M[np.triu_indices(X.shape[1])]


def _neighbour_rows(rng, d):
    kind = rng.integers(0, 5)
    if kind == 0:
        return rng.normal(size=d) * 1e6  # far outside: clipped
    if kind == 1:
        return np.zeros(d)
    if kind == 2:
        row = np.zeros(d)
        row[rng.integers(0, d)] = rng.choice([-1.0, 1.0]) * 3.0
        return row
    if kind == 3:
        return rng.choice([-1.0, 1.0], size=d) / math.sqrt(d)  # spread, norm 1
    return rng.normal(size=d) * rng.uniform(0.01, 2.0)


def test_release_moves_within_its_sensitivities_on_neighbours():
    rng = np.random.default_rng(7)
    worst = np.zeros(2)
    for _ in range(400):
        d = int(rng.integers(1, 9))
        X = np.array([_neighbour_rows(rng, d) for _ in range(5)])
        X2 = X.copy()
        X2[0] = _neighbour_rows(rng, d)
        diff = _upper(X) - _upper(X2)
        l1, l2sq = second_moment_sensitivity(d)
        worst = np.maximum(worst, [sum(abs(v) for v in diff) / l1,
                                   sum(v * v for v in diff) / l2sq])
    assert np.all(worst <= 1.0), worst
    assert worst[1] >= 0.99 and worst[0] >= 0.4, worst  # close to the bounds


def test_bounds_are_attained():
    d = 6
    l1, l2sq = second_moment_sensitivity(d)
    # Squared L2: a row on one axis replaced by a row on another.
    a, b = np.eye(d)[:1], np.eye(d)[1:2]
    diff = _upper(a) - _upper(b)
    assert sum(v * v for v in diff) == l2sq
    # L1: rows spread over disjoint halves reach (d / 2 + 1) G^2, half the bound's
    # leading term (docs/privacy.rst says where the bound is loose).
    half = np.zeros((1, d))
    half[0, :d // 2] = 1.0
    other = np.roll(half, d // 2, axis=1)
    diff = _upper(half / np.linalg.norm(half)) - _upper(other / np.linalg.norm(other))
    assert sum(abs(v) for v in diff) / l1 >= (d / 2 + 1) / (d + 1) - 1e-3


@pytest.mark.parametrize("d", [1, 3, 64, 500])
def test_grid_rows_have_norm_at_most_G(d):
    rng = np.random.default_rng(d)
    X = np.vstack([rng.normal(size=(50, d)) * 10.0 ** rng.integers(-3, 300, size=(50, 1)),
                   np.ones((1, d)) / math.sqrt(d), np.eye(1, d), np.zeros((1, d))])
    m = grid_rows(X, 1.0)
    assert m.dtype == np.int64
    assert max(int(sum(int(v) ** 2 for v in row)) for row in m) <= G * G
    np.testing.assert_array_equal(grid_rows(np.eye(1, d) * 5, 5.0), np.eye(1, d) * G)


# -- the public rule for n_components -----------------------------------------------------


def test_auto_rule_is_the_trace_over_the_noise_edge():
    n, d, epsilon, delta = 1437, 64, 1.0, 1e-5
    s = math.sqrt(second_moment_noise(d, epsilon, delta).variance) / (G * G * n)
    assert auto_n_components(n, d, epsilon, delta) == math.floor(1 / (2 * math.sqrt(d) * s))
    # More rows or more epsilon: as many directions or more; never 0, never above d.
    ks = [auto_n_components(n, d, eps, delta) for eps in (0.1, 0.5, 1, 2, 8)]
    assert ks == sorted(ks) and ks[0] >= 1
    assert auto_n_components(10**6, 5, 10.0, 1e-5) == 5
    assert auto_n_components(10, 500, 0.1) == 1
    # Pure noise grows with d: a wide table keeps fewer directions than with delta.
    assert auto_n_components(n, d, epsilon) < auto_n_components(n, d, epsilon, delta)


# -- the estimator ------------------------------------------------------------------------


def _spiked(seed, n=4096, d=8):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * 0.05
    X[:, 2] += rng.choice([-1.0, 1.0], size=n) * 0.7
    return X


def test_finds_the_leading_direction_and_charges_once():
    ledger = BudgetAccountant()
    pca = DPPCA(n_components=2, epsilon=2.0, delta=1e-6, data_norm=1.0,
                accountant=ledger, random_state=0).fit(_spiked(0))
    assert abs(pca.components_[0, 2]) > 0.99
    np.testing.assert_allclose(pca.components_ @ pca.components_.T, np.eye(2), atol=1e-12)
    assert pca.explained_variance_[0] == pytest.approx(0.49, abs=0.05)
    assert len(ledger.events) == 1 and ledger.total() == (2.0, 1e-6)
    assert pca.privacy_spent_ == (2.0, 1e-6)
    assert pca.get_feature_names_out().tolist() == ["dppca0", "dppca1"]


def test_output_rows_are_within_the_published_bound():
    pca = DPPCA(n_components=3, epsilon=1.0, data_norm=2.0, random_state=1,
                accountant=BudgetAccountant()).fit(_spiked(1, n=256))
    assert pca.row_norm_bound_ == 2.0 == pca.data_norm_
    Z = pca.transform(_spiked(2, n=100) * 100.0)
    assert np.linalg.norm(Z, axis=1).max() <= 2.0 * (1 + 1e-12)


def test_data_norm_auto_reads_the_step_before_and_warns_alone():
    X = np.random.default_rng(3).random((64, 4)) * 10
    pipe = make_pipeline(BoundedScaler(0, 10), DPPCA(epsilon=1.0,
                                                     accountant=BudgetAccountant()))
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataNormWarning)
        pipe.fit(X)
    assert pipe[-1].data_norm_ == pytest.approx(2.0)
    with pytest.warns(DataNormWarning):
        DPPCA(accountant=BudgetAccountant()).fit(X)


def _refusals():
    X = np.random.default_rng(4).random((20, 3))
    nan, inf = X.copy(), X.copy()
    nan[3, 1], inf[5, 2] = np.nan, np.inf
    words = X.astype(object)
    words[2, 0] = "secret-cell"
    return {"NaN": nan, "inf": inf, "text": words, "1-d": X[:, 0], "3-d": X[None]}


@pytest.mark.parametrize("case", list(_refusals()))
def test_out_of_domain_input_is_refused_free_and_unquoted(case):
    ledger = BudgetAccountant()
    with pytest.raises((ValueError, TypeError)) as info:
        DPPCA(data_norm=1.0, accountant=ledger).fit(_refusals()[case])
    assert ledger.events == []
    text = str(info.value)
    assert "secret-cell" not in text and "nan," not in text.lower() and "[" not in text


def test_too_many_components_and_bad_parameters_are_refused_free():
    ledger = BudgetAccountant()
    X = np.random.default_rng(5).random((20, 3))
    with pytest.raises(ValueError, match="at most n_features=3"):
        DPPCA(n_components=4, data_norm=1.0, accountant=ledger).fit(X)
    for params in ({"epsilon": 0}, {"delta": 1.0}, {"data_norm": -1.0},
                   {"n_components": 0}, {"random_state": np.random.default_rng(0)}):
        with pytest.raises((ValueError, TypeError)):
            DPPCA(accountant=ledger, **{"data_norm": 1.0, **params}).fit(X)
    with pytest.raises(BudgetExceededError):
        DPPCA(epsilon=2.0, data_norm=1.0, accountant=BudgetAccountant(epsilon=1.0)).fit(X)
    assert ledger.events == []


def test_transform_refuses_wrong_shapes_and_nan():
    pca = DPPCA(n_components=2, data_norm=1.0, accountant=BudgetAccountant(),
                random_state=0).fit(np.random.default_rng(6).random((30, 4)))
    with pytest.raises(ValueError, match="features"):
        pca.transform(np.ones((2, 5)))
    with pytest.raises(ValueError):
        pca.transform(np.full((2, 4), np.nan))


# -- in a pipeline: one ledger, the dry run -----------------------------------------------


def _digits_like(seed, n=300, d=16):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, size=n)
    X = rng.random((n, d)) * 0.2
    X[np.arange(n), y] += 1.0
    return X / np.linalg.norm(X, axis=1, keepdims=True), y


def _pipeline(ledger, classes=(0, 1, 2), model_epsilon=1.0):
    return make_private_pipeline(
        DPPCA(n_components=3, epsilon=1.0, delta=1e-6, data_norm=1.0, accountant=ledger),
        DPLogisticRegression(epsilon=model_epsilon, classes=list(classes), accountant=ledger))


def test_pipeline_charges_both_releases_on_one_ledger():
    X, y = _digits_like(0)
    ledger = BudgetAccountant()
    with warnings.catch_warnings():
        warnings.simplefilter("error", LeakyPipelineWarning)
        warnings.simplefilter("error", DataNormWarning)
        pipe = _pipeline(ledger).fit(X, y)
    assert [(e.epsilon, e.delta) for e in ledger.events] == [(1.0, 1e-6), (1.0, 0.0)]
    assert pipe[-1].data_norm_ == 1.0  # read from DPPCA's row_norm_bound_
    assert pipe[-1].n_features_in_ == 3
    assert check_pipeline(pipe) == []
    cost = check_before_fit(_pipeline(BudgetAccountant()), X, y)
    assert [path for path, _, _ in cost.releases] == ["dppca", "dplogisticregression"]


@pytest.mark.parametrize("refusal", ["undeclared label", "model over the budget"])
def test_a_refused_model_after_dppca_costs_nothing(refusal):
    X, y = _digits_like(1)
    ledger = BudgetAccountant(epsilon=2.5, delta=1e-5)
    if refusal == "undeclared label":
        pipe, y = _pipeline(ledger), np.where(y == 2, 7, y)
    else:
        pipe = _pipeline(ledger, model_epsilon=2.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises((ValueError, BudgetExceededError)):
            pipe.fit(X, y)
    assert ledger.events == []
    assert not hasattr(pipe[0], "components_")


def test_dry_run_stand_in_has_the_real_shape_and_bound():
    X, y = _digits_like(2, d=20)
    ledger = BudgetAccountant()
    pipe = make_private_pipeline(DPPCA(epsilon=1.0, delta=1e-6, data_norm=1.0,
                                       accountant=ledger),
                                 DPLogisticRegression(classes=[0, 1, 2], accountant=ledger))
    check_before_fit(pipe, X, y)
    assert ledger.events == []
    pipe.fit(X, y)
    assert 1 <= pipe[0].n_components_ <= auto_n_components(300, 20, 1.0, 1e-6)
    assert not np.array_equal(pipe[0].components_, np.eye(pipe[0].n_components_, 20))
    # The stand-in's width is the public cap (nothing drawn in the dry run).
    stand_in = DPPCA(epsilon=1.0, delta=1e-6, data_norm=1.0)._stand_in((X, 1.0))
    assert stand_in["components_"].shape == (auto_n_components(300, 20, 1.0, 1e-6), 20)


def test_auto_keeps_the_directions_above_the_noise_edge():
    # Three strong directions, the rest weak: "auto" finds three, the cap allows more.
    rng = np.random.default_rng(8)
    n, d = 8192, 20
    X = rng.normal(size=(n, d)) * 0.02
    X[:, :3] += rng.normal(size=(n, 3)) * [0.5, 0.4, 0.3]
    pca = DPPCA(epsilon=2.0, delta=1e-6, data_norm=2.0, random_state=0,
                accountant=BudgetAccountant()).fit(X)
    assert pca.n_components_ == 3 < auto_n_components(n, d, 2.0, 1e-6)
    tau = sm.noise_spectral_norm(n, d, 2.0, 2.0, 1e-6)
    assert above_noise([5 * tau, 2 * tau, 0.5 * tau], tau, 10) == 2
    assert above_noise([0.5 * tau], tau, 10) == 1  # at least one
    assert above_noise([5 * tau] * 4, tau, 3) == 3  # at most the cap


# -- release audit (the harness of tests/test_release_audit.py) ---------------------------


def _audit_pipeline(classes, accountant, random_state=None, delta=0.0):
    return Pipeline([
        ("pca", DPPCA(n_components=2, epsilon=0.5, delta=delta, data_norm=1.0,
                      accountant=accountant, random_state=random_state)),
        ("clf", DPLogisticRegression(classes=classes, alpha=0.1, accountant=accountant,
                                     random_state=random_state)),
    ])


@pytest.mark.parametrize("delta", [0.0, 1e-6])
@pytest.mark.parametrize("n_classes", [2, 3])
def test_pca_pipeline_neighbours_look_the_same(n_classes, delta):
    classes = list(range(n_classes))
    for pair_name, (X_d, y_d), (X_dp, y_dp) in audit.neighbour_pairs(n_classes):
        records = [[audit._fit_record(lambda acc: _audit_pipeline(classes, acc, delta=delta),
                                      X, y)
                    for _ in range(audit.N_FITS)] for X, y in ((X_d, y_d), (X_dp, y_dp))]
        audit._assert_same_observation(*records, f"pca-pipeline/{delta}/{pair_name}")
        first = records[0][0]
        assert first.warnings == [], (pair_name, first.warnings)  # data_norm declared, read
        assert first.spends == [(0.5, delta), (1.0, 0.0)]
        releases = {r.model[0].components_.tobytes() + r.model[-1].coef_.tobytes()
                    for r in records[0]}
        assert len(releases) == audit.N_FITS, pair_name


@pytest.mark.parametrize("random_state", [None, 3])
def test_pca_pipeline_saved_holds_no_noise_generator(random_state):
    X, y = audit._base_data(2)
    model = _audit_pipeline([0, 1], BudgetAccountant(), random_state).fit(X, y)
    data = pickle.dumps(model)
    assert audit.pickle_globals(data) == audit.loaded_globals(data)
    assert audit._forbidden_globals(audit.pickle_globals(data)) == set()
    for obj in audit.reachable_objects(pickle.loads(data)) + audit._params_objects(model):
        assert not isinstance(obj, audit._FORBIDDEN_TYPES), type(obj)


def test_pca_refusals_are_alike_on_neighbours_and_free():
    # Out-of-domain input: the same refusal, whatever the rest of the rows, and free.
    texts = set()
    for seed in range(3):
        X, _ = audit._base_data(2, seed=seed)
        X[seed] = np.nan
        ledger = BudgetAccountant()
        with pytest.raises(ValueError) as info:
            DPPCA(data_norm=1.0, accountant=ledger).fit(X)
        texts.add(str(info.value))
        assert ledger.events == []
    assert len(texts) == 1


def test_too_many_rows_is_refused_before_the_spend(monkeypatch):
    # The exactness limit n G^2 < 2^53 depends on n only: refused for free.
    monkeypatch.setattr(sm, "_FLOAT_EXACT", 2**30)
    ledger = BudgetAccountant()
    with pytest.raises(ValueError, match="nothing was spent"):
        DPPCA(data_norm=1.0, accountant=ledger).fit(np.zeros((100, 2)))
    assert ledger.events == []
