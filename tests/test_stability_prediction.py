"""DPStabilityPredictor and the ensemble's predict_proba: laws, sensitivity, audit, ledger.

* the exact discrete Laplace sampler has its law, with power against a scale
  10% too small;
* the predictor's released noise, end to end, has the scale the proof needs
  (``(2 / (n alpha) + 2 tol / alpha) / epsilon`` per unit of ``||z||``, up to the
  grid's 0.1%), and a scale 10% smaller is rejected;
* the score bound holds on every neighbouring pair of tiny data sets drawn
  from a grid of points (clipped rows included), and the worst of them comes
  within a factor 3 of it;
* release audit: on neighbours, fit shows the same public attributes,
  warnings and (no) spends; predict the same events, warnings, shapes and
  dtypes; answers sit on the grid; the pickle warns and holds no noise source;
* out-of-domain input is refused alike and for free; the ledger is charged per
  distinct row, all or nothing, before any score is computed;
* the ensemble's noisy vote shares: law of the count noise, cost per row.
"""

import itertools
import math
import pickle
import warnings

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from test_release_audit import (
    _defects,
    _describe_value,
    _forbidden_globals,
    loaded_globals,
    neighbour_pairs,
    pickle_globals,
)

from dpsk import (
    BudgetAccountant,
    BudgetExceededError,
    DPPredictionEnsemble,
    DPStabilityPredictor,
    PureDPEvent,
)
from dpsk._data._design import design_matrix
from dpsk.mechanisms._random import NoiseSource
from dpsk.prediction import ModelInPickleWarning, _laplace
from dpsk.prediction._laplace import GRID_STEPS, discrete_laplace, discrete_laplace_pmf

EPSILON = 0.5
QUERIES = np.random.default_rng(11).normal(size=(40, 3)) * 0.5


def _mean_abs(scale):
    """E|Z| of the discrete Laplace law of ``scale``: ``2a / (1 - a^2)``, ``a = e^{-1/scale}``."""
    a = math.exp(-1.0 / scale)
    return 2.0 * a / (1.0 - a * a)


def _assert_scale(draws, scale, rel_power=0.9):
    """Mean |Z| agrees with ``scale`` (4 standard errors), and the test has power.

    Power: the expectation at ``rel_power * scale`` lies more than 8 standard
    errors away, so noise 10% too small fails the first check with probability
    about 1 - 3e-5 (the mean would sit 4 or more standard errors beyond it).
    """
    draws = np.abs(np.asarray(draws, dtype=float))
    se = draws.std() / math.sqrt(draws.size)
    assert abs(draws.mean() - _mean_abs(scale)) < 4 * se, (draws.mean(), _mean_abs(scale))
    assert abs(_mean_abs(scale) - _mean_abs(rel_power * scale)) > 8 * se


# -- the sampler ---------------------------------------------------------------------------


def test_discrete_laplace_law_and_power():
    source = NoiseSource.seeded(5)
    scale = 5
    draws = np.array([discrete_laplace(scale, source) for _ in range(12000)])
    _assert_scale(draws, scale)
    # The whole law: chi-square over |k| <= 12 and the two tails.
    edges = np.arange(-12, 13)
    observed = np.array([np.sum(draws == k) for k in edges]
                        + [np.sum(draws < -12), np.sum(draws > 12)])
    pmf = discrete_laplace_pmf(edges, scale)
    tail = (1.0 - pmf.sum()) / 2.0
    expected = draws.size * np.r_[pmf, tail, tail]
    chi2 = np.sum((observed - expected) ** 2 / expected)
    assert chi2 < 60.0, chi2  # 26 degrees of freedom: p < 1e-4 beyond 60


def test_discrete_laplace_rational_and_small_scales():
    source = NoiseSource.seeded(6)
    for scale in (0.5, 1.0 / 0.3):  # floats are taken as exact rationals
        _assert_scale([discrete_laplace(scale, source) for _ in range(8000)], scale)
    with pytest.raises(ValueError):
        discrete_laplace(0, source)


# -- the predictor's noise, end to end -------------------------------------------------------


def _unit_rows(n, d, seed):
    X = np.random.default_rng(seed).normal(size=(n, d))
    return X / np.linalg.norm(X, axis=1, keepdims=True)


def test_released_noise_has_the_proved_scale():
    X, y = _unit_rows(200, 3, 0), np.random.default_rng(1).integers(0, 2, 200)
    alpha, epsilon, tol = 0.05, 0.7, 1e-10
    model = DPStabilityPredictor(epsilon=epsilon, alpha=alpha, classes=[0, 1], tol=tol,
                                 accountant=BudgetAccountant()).fit(X, y)
    queries = _unit_rows(10000, 3, 2)  # ||z|| = 1 with the intercept column
    released = model.decision_function(queries)
    Z = design_matrix(queries, 1.0, True)
    exact = Z @ model._weights
    noise = released - model.grid_ * np.rint(exact / model.grid_)
    # Independent of the code under test: the bound of docs/prediction.rst.
    proved = (2.0 / (200 * alpha) + 2.0 * tol / alpha) / epsilon
    _assert_scale(noise / model.grid_, proved * (1 + 1.0 / GRID_STEPS) / model.grid_)
    cells = released / model.grid_
    np.testing.assert_allclose(cells, np.rint(cells), atol=1e-6)  # on the grid


def test_short_query_rows_pay_less_noise():
    X, y = _unit_rows(100, 2, 0), np.random.default_rng(1).integers(0, 2, 100)
    model = DPStabilityPredictor(epsilon=1.0, alpha=0.1, classes=[0, 1], fit_intercept=False,
                                 accountant=BudgetAccountant()).fit(X, y)
    Z = design_matrix(np.array([[0.3, 0.4], [0.6, 0.8]]), 1.0, False)
    assert list(model._row_sensitivities(Z)) == [501, 1001]


# -- sensitivity on neighbours ---------------------------------------------------------------


def _scores(X, y, alpha, fit_intercept, queries):
    model = DPStabilityPredictor(alpha=alpha, classes=[0, 1], fit_intercept=fit_intercept,
                                 accountant=BudgetAccountant()).fit(X, y)
    Z = design_matrix(queries, 1.0, fit_intercept)
    return Z @ model._weights, np.linalg.norm(Z, axis=1), model._sensitivity


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_score_bound_on_all_neighbours_of_tiny_data(fit_intercept):
    # Every data set of n rows from a small public grid of points and labels,
    # and every replacement of row 0: the worst case is among them.
    points = np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0], [0.6, 0.8], [0.0, 0.0],
                       [30.0, 40.0]])  # the last one is clipped
    queries = np.vstack([points[:4], [[0.6, -0.8]]])
    worst = 0.0
    firsts = list(itertools.product(range(len(points)), (0, 1)))
    for n, alpha in ((2, 1.0), (3, 0.3), (3, 0.02)):
        for rest in itertools.product(range(4), repeat=n - 1):
            fits = [_scores(points[[p, *rest]], np.r_[label, [1] * (n - 1)], alpha,
                            fit_intercept, queries) for p, label in firsts]
            for (s0, norms, bound), (s1, _, _) in itertools.combinations(fits, 2):
                ratio = np.max(np.abs(s0 - s1) / (norms * bound))
                assert ratio <= 1.0, (n, alpha, rest, ratio)
                worst = max(worst, ratio)
    # The bound is not vacuous: a bound three times too small fails above. It
    # is not reached: a replaced row whose two versions both have |l'| near 1
    # needs a large ||w||, hence a small alpha, where the loss curvature adds
    # to the strong convexity (docs/prediction.rst).
    assert worst > 1.0 / 3.0, worst


# -- release audit -----------------------------------------------------------------------


def _make(n_classes, accountant, random_state=None):
    return DPStabilityPredictor(epsilon=EPSILON, alpha=0.1, classes=list(range(n_classes)),
                                accountant=accountant, random_state=random_state)


PRIVATE = {"_weights"}


def _observe(X, y, n_classes=2):
    accountant = BudgetAccountant()
    model = _make(n_classes, accountant)
    seen = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            model.fit(X, y)
            seen["fit"] = {k: _describe_value(v) for k, v in vars(model).items()
                           if k not in PRIVATE}
            seen["fit_spends"] = accountant.spends
            answers = model.predict(QUERIES)
            scores = model.decision_function(QUERIES[:5])
            proba = model.predict_proba(QUERIES[:5])
            seen["answers"] = (answers.shape, answers.dtype.str, set(answers) <= {0, 1},
                               scores.shape, scores.dtype.str, proba.shape)
        except Exception as exc:  # the point is to compare them
            seen["exception"] = (type(exc), str(exc))
    seen["warnings"] = [(w.category, str(w.message)) for w in caught]
    seen["events"] = accountant.events
    return seen


def test_neighbours_look_the_same():
    for name, (X, y), (X2, y2) in neighbour_pairs(2):
        views = [_observe(A, b) for A, b in [(X, y)] * 3 + [(X2, y2)] * 3]
        assert "exception" not in views[0], (name, views[0])
        assert views[0]["fit_spends"] == []  # fitting releases nothing
        assert views[0]["events"] == [PureDPEvent(EPSILON)] * (QUERIES.shape[0] + 10)
        assert views[0]["warnings"] == []
        for view in views[1:]:
            assert view == views[0], name


def test_no_model_attribute_is_exposed():
    X, y = neighbour_pairs(2)[0][1]
    model = _make(2, BudgetAccountant()).fit(X, y)
    public = {k for k in vars(model) if not k.startswith("_")}
    assert public == {"classes_", "grid_", "n_features_in_", "alpha_"} | set(model.get_params())
    assert not hasattr(model, "coef_")


def test_more_than_two_classes_refused_for_free():
    X, y = neighbour_pairs(3)[0][1]
    view = _observe(X, y, n_classes=3)
    assert view["exception"][0] is ValueError
    assert view["events"] == []


def test_out_of_domain_refused_alike_and_free():
    first, second = _defects(2, 0), _defects(2, 1)
    for defect in first:
        views = [_observe(*data) for data in (first[defect], second[defect])]
        assert "exception" in views[0], defect
        assert views[0]["events"] == [] == views[1]["events"]
        assert views[0]["exception"] == views[1]["exception"], defect


def test_bad_query_refused_for_free():
    X, y = neighbour_pairs(2)[0][1]
    accountant = BudgetAccountant()
    model = _make(2, accountant).fit(X, y)
    for bad in (np.full((2, 3), np.nan), np.ones((2, 4)), np.ones(3)):
        with pytest.raises(ValueError):
            model.predict(bad)
    assert accountant.events == []


@pytest.mark.parametrize("random_state", [None, 3])
def test_pickle_warns_and_holds_no_noise_generator(random_state):
    X, y = neighbour_pairs(2)[0][1]
    model = _make(2, BudgetAccountant(), random_state).fit(X, y)
    with pytest.warns(ModelInPickleWarning):
        data = pickle.dumps(model)
    assert pickle_globals(data) == loaded_globals(data)
    assert _forbidden_globals(pickle_globals(data)) == set()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pickle.dumps(_make(2, None))  # unfitted: silent


def test_seeded_answers_reproduce_and_fresh_ones_differ():
    X, y = neighbour_pairs(2)[0][1]
    seeded = _make(2, BudgetAccountant(), random_state=4).fit(X, y)
    a = seeded.decision_function(QUERIES)
    b = seeded.decision_function(QUERIES[::-1])[::-1]  # order does not matter
    np.testing.assert_array_equal(a, b)
    fresh = _make(2, BudgetAccountant()).fit(X, y)
    assert not np.array_equal(fresh.decision_function(QUERIES),
                              fresh.decision_function(QUERIES))


# -- the ledger ------------------------------------------------------------------------------


def test_charged_per_distinct_row_all_or_nothing(monkeypatch):
    X, y = neighbour_pairs(2)[0][1]
    accountant = BudgetAccountant(epsilon=2.0)
    model = _make(2, accountant).fit(X, y)
    assert accountant.spends == []
    batch = np.vstack([QUERIES[:3], QUERIES[:3], QUERIES[:1]])
    answers = model.predict(batch)
    assert len(accountant.events) == 3  # three distinct rows, charged once each
    assert answers[0] == answers[3] == answers[6]  # copies share the answer
    # Four more rows do not fit (1.5 + 2.0 > 2.0): refused before any score.
    calls = []
    monkeypatch.setattr(_laplace, "discrete_laplace",
                        lambda *a: calls.append(a) or 0)
    with pytest.raises(BudgetExceededError, match="Nothing was answered"):
        model.predict(QUERIES[3:7])
    assert calls == [] and len(accountant.events) == 3
    model.predict(QUERIES[3:4])  # one still fits
    assert len(accountant.events) == 4


# -- the ensemble's predict_proba --------------------------------------------------------------


def test_ensemble_predict_proba_cost_and_shape():
    X, y = neighbour_pairs(3)[0][1]
    accountant = BudgetAccountant()
    ens = DPPredictionEnsemble(LogisticRegression(), epsilon=EPSILON, n_teachers=5,
                               classes=[0, 1, 2], accountant=accountant).fit(X, y)
    proba = ens.predict_proba(np.vstack([QUERIES[:4], QUERIES[:2]]))
    assert proba.shape == (6, 3)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert np.all(proba >= 0)
    np.testing.assert_array_equal(proba[4:], proba[:2])
    assert accountant.events == [PureDPEvent(EPSILON)] * 4


def test_ensemble_share_noise_law(monkeypatch):
    # The counts' noise has scale 2 / epsilon (L1 sensitivity 2), exactly.
    from dpsk.prediction import _vote

    draws = []
    real = _vote.discrete_laplace

    def record(scale, source):
        value = real(scale, source)
        draws.append((float(scale), value))
        return value

    monkeypatch.setattr(_vote, "discrete_laplace", record)
    counts = np.tile([3, 1], (5000, 1))
    _vote.noisy_vote_shares(counts, 0.8, np.zeros((5000, 1)), None)
    scales = {s for s, _ in draws}
    assert scales == {2.0 / 0.8}
    _assert_scale([v for _, v in draws], 2.0 / 0.8)


def test_ensemble_predict_proba_all_or_nothing_and_free_refusal():
    X, y = neighbour_pairs(2)[0][1]
    accountant = BudgetAccountant(epsilon=1.0)
    ens = DPPredictionEnsemble(LogisticRegression(), epsilon=EPSILON, n_teachers=5,
                               classes=[0, 1], accountant=accountant).fit(X, y)
    with pytest.raises(ValueError):
        ens.predict_proba(np.full((2, 3), np.nan))
    with pytest.raises(BudgetExceededError, match="Nothing was answered"):
        ens.predict_proba(QUERIES[:3])
    assert accountant.events == []
    ens.predict_proba(QUERIES[:2])
    assert accountant.events == [PureDPEvent(EPSILON)] * 2


# -- the agnostic averaging of Corollary 4.7 ---------------------------------------------------


def _average_law(c1, r, epsilon, width=400):
    """Exact P(answer = 1) of ``averaged_answers`` for ``c1`` votes of ``r``."""
    z = np.arange(-width, width + 1)
    pmf = discrete_laplace_pmf(z, 1.0 / epsilon)
    return float(np.sum(pmf * np.clip(c1 + z, 0, r)) / r)


def test_averaging_neighbours_within_e_epsilon():
    epsilon, r = 0.7, 12
    for c1 in range(r):  # one teacher's vote moves c1 by at most 1
        p, q = _average_law(c1, r, epsilon), _average_law(c1 + 1, r, epsilon)
        assert abs(math.log(p / q)) <= epsilon * (1 + 1e-9)
        assert abs(math.log((1 - p) / (1 - q))) <= epsilon * (1 + 1e-9)


def test_averaging_noise_and_rounding_law(monkeypatch):
    from dpsk.prediction import _vote

    draws = []
    real = _vote.discrete_laplace

    def record(scale, source):
        draws.append(float(scale))
        return real(scale, source)

    monkeypatch.setattr(_vote, "discrete_laplace", record)
    counts = np.tile([7, 3], (2000, 1))
    answers = _vote.averaged_answers(counts, 10, 0.5, np.zeros((2000, 1)), None)
    assert set(draws) == {2.0}  # scale 1 / epsilon: the count moves by 1
    p = _average_law(3, 10, 0.5)
    assert abs(answers.mean() - p) < 4 * math.sqrt(p * (1 - p) / 2000)
    # Without noise the rounding answers 1 with probability c1 / r exactly.
    monkeypatch.setattr(_vote, "discrete_laplace", lambda scale, source: 0)
    answers = _vote.averaged_answers(counts, 10, 0.5, np.zeros((2000, 1)), None)
    assert abs(answers.mean() - 0.3) < 4 * math.sqrt(0.21 / 2000)


def test_averaging_ensemble_cost_rule_and_refusal():
    X, y = neighbour_pairs(2)[0][1]
    accountant = BudgetAccountant()
    ens = DPPredictionEnsemble(LogisticRegression(), epsilon=EPSILON, n_teachers=5,
                               classes=[0, 1], accountant=accountant,
                               aggregation="average").fit(X, y)
    answers = ens.predict(np.vstack([QUERIES[:4], QUERIES[:2]]))
    assert set(answers) <= {0, 1}
    assert accountant.events == [PureDPEvent(EPSILON)] * 4
    from dpsk.prediction._vote import averaging_n_teachers

    assert averaging_n_teachers(0.1, 0.05) == 200
    X3, y3 = neighbour_pairs(3)[0][1]
    accountant = BudgetAccountant()
    with pytest.raises(ValueError, match="Only binary"):
        DPPredictionEnsemble(LogisticRegression(), classes=[0, 1, 2], accountant=accountant,
                             aggregation="average").fit(X3, y3)
    assert accountant.events == []
