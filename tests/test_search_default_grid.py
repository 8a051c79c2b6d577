"""DPGridSearch's default grid (``param_grid=None``): multiples of the alpha rule's alpha.

Each candidate's alpha is ``multiplier`` times the alpha ``alpha="auto"`` gives the
very fit the candidate is used in (its own rows and epsilon), so the middle one is
the rule itself; the search still spends one event; bad candidates and estimators
without a rule are refused before anything is spent.
"""

import numpy as np
import pytest
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

from dpsk import BudgetAccountant, DPLogisticRegression, DPTiltedLogisticRegression
from dpsk.model_selection import DPGridSearch
from dpsk.model_selection import _search as search_module
from dpsk.model_selection._repeat import rule_alpha
from dpsk.model_selection._search import DEFAULT_ALPHA_MULTIPLIERS, _score_split


def _data(n=400, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1.0)
    y = (X[:, 0] + 0.3 * rng.normal(size=n) > 0).astype(int)
    return X, y


def _spy_plan(monkeypatch):
    """Record the repeat plan of the next search (public: a function of the parameters)."""
    seen = []
    original = search_module.DPGridSearch._plan

    def plan(self, *args, **kwargs):
        seen.append(original(self, *args, **kwargs))
        return seen[-1]

    monkeypatch.setattr(search_module.DPGridSearch, "_plan", plan)
    return seen


@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_default_grid_is_the_rule_times_its_multipliers(monkeypatch, delta):
    X, y = _data()
    seen = _spy_plan(monkeypatch)
    acc = BudgetAccountant()
    base = DPLogisticRegression(classes=[0, 1], delta=delta)
    search = DPGridSearch(base, epsilon=1.0, accountant=acc, random_state=0,
                          method="repeat").fit(X, y)
    plan = seen[-1]
    n_train = len(_score_split(len(y), 0.1, np.random.default_rng(0))[0])
    rule = rule_alpha(base, n_train, X.shape[1], 2, plan.run_epsilon, delta)
    alphas = [p["alpha"] for p in search.candidate_params_]
    np.testing.assert_allclose(alphas, [c * rule for c in DEFAULT_ALPHA_MULTIPLIERS],
                               rtol=1e-12)
    assert search.alpha_multipliers_ == tuple(DEFAULT_ALPHA_MULTIPLIERS)
    assert search.best_alpha_multiplier_ == DEFAULT_ALPHA_MULTIPLIERS[search.best_index_]
    assert search.best_params_ == {"alpha": alphas[search.best_index_]}
    # The released model carries the alpha it was fitted with, and can be refitted.
    assert search.best_estimator_.alpha == search.best_params_["alpha"]
    assert len(acc.events) == 1 and acc.total() == (1.0, delta)
    # The multiplier 1 is the rule itself: what alpha="auto" resolves to for that fit.
    middle = DEFAULT_ALPHA_MULTIPLIERS.index(1.0)
    auto = DPLogisticRegression(classes=[0, 1], delta=delta, epsilon=plan.run_epsilon,
                                accountant=BudgetAccountant()).fit(X[:n_train], y[:n_train])
    assert alphas[middle] == pytest.approx(auto.alpha_, rel=1e-12)


@pytest.mark.parametrize("method, refit", [("disjoint", False), ("disjoint", True),
                                           ("random-stopping", False)])
def test_default_grid_with_other_methods_uses_each_fits_own_sizes(method, refit):
    X, y = _data()
    acc = BudgetAccountant()
    base = DPLogisticRegression(classes=[0, 1])
    search = DPGridSearch(base, epsilon=1.0, method=method, refit=refit, accountant=acc,
                          random_state=0).fit(X, y)
    m = len(DEFAULT_ALPHA_MULTIPLIERS)
    if method == "disjoint" and not refit:
        rows, eps = len(y) // (m + 1), 1.0  # every part has 400 // 6 or one more row
    elif refit:
        rows, eps = len(y), 1.0
    else:
        rows, eps = len(y) - 40, 1.0 / 3
    alphas = np.array([p["alpha"] for p in search.candidate_params_])
    multipliers = np.array(DEFAULT_ALPHA_MULTIPLIERS)
    rule = rule_alpha(base, rows, X.shape[1], 2, eps, 0.0)
    best = search.best_index_
    np.testing.assert_allclose(alphas[best], multipliers[best] * rule, rtol=1e-2)
    assert len(acc.events) == 1


def test_default_grid_in_a_pipeline_reads_the_models_own_width():
    X, y = _data()
    # A data-independent step that doubles the columns: the rule reads 8, not 4.
    pipe = make_pipeline(FunctionTransformer(lambda Z: np.hstack([Z, Z]) / np.sqrt(2)),
                         DPLogisticRegression(classes=[0, 1], delta=1e-6))
    search = DPGridSearch(pipe, epsilon=1.0, random_state=0,
                          accountant=BudgetAccountant()).fit(X, y)
    assert search.best_estimator_[-1].n_features_in_ == 8
    key = "dplogisticregression__alpha"
    assert all(isinstance(p[key], float) for p in search.candidate_params_)


def test_tilted_model_default_grid():
    X, y = _data()
    search = DPGridSearch(DPTiltedLogisticRegression(classes=[0, 1], tilt=0.5), epsilon=1.0,
                          random_state=0, accountant=BudgetAccountant()).fit(X, y)
    assert search.best_alpha_multiplier_ in search.alpha_multipliers_


def test_explicit_grid_has_no_multiplier():
    X, y = _data()
    search = DPGridSearch(DPLogisticRegression(classes=[0, 1]), {"alpha": ["auto", 0.1]},
                          random_state=0, accountant=BudgetAccountant()).fit(X, y)
    assert search.alpha_multipliers_ is None and search.best_alpha_multiplier_ is None
    assert search.candidate_params_ == [{"alpha": "auto"}, {"alpha": 0.1}]


class _NoRule(DPLogisticRegression):
    @property
    def _resolve_alpha(self):
        raise AttributeError("no alpha rule")


@pytest.mark.parametrize("case", ["no-rule", "bad-tol", "gradient-pure", "bad-step"])
def test_refused_before_any_spend(case):
    X, y = _data()
    acc = BudgetAccountant(epsilon=10.0, delta=1e-3)
    if case == "no-rule":
        search, match = DPGridSearch(_NoRule(classes=[0, 1]), accountant=acc), "param_grid"
    elif case == "bad-tol":
        search = DPGridSearch(DPLogisticRegression(classes=[0, 1]),
                              {"alpha": [0.1], "tol": [1e-8, -1.0]}, accountant=acc,
                              method="disjoint")
        match = "Candidate 1 .* refused before anything was spent"
    elif case == "gradient-pure":
        # A check beyond the constraints (_check_params_before_fit) is run too.
        search = DPGridSearch(DPLogisticRegression(classes=[0, 1]),
                              {"perturbation": ["objective", "gradient"]}, accountant=acc,
                              method="disjoint")
        match = "Candidate 1 .*gradient"
    else:
        pipe = make_pipeline(FunctionTransformer(), DPLogisticRegression(classes=[0, 1]))
        search = DPGridSearch(pipe, {"functiontransformer__validate": [False, "yes"]},
                              accountant=acc, method="disjoint")
        match = "Candidate 1 "
    with pytest.raises((ValueError, TypeError), match=match):
        search.fit(X, y)
    assert acc.events == [] and acc.total() == (0.0, 0.0)


def test_expected_runs_rule():
    from dpsk.model_selection._repeat import default_mean_runs

    assert default_mean_runs(3) == 8.0 and default_mean_runs(5) == 8.0
    assert default_mean_runs(10) == 15.0


def test_plan_is_near_the_largest_per_run_epsilon_for_every_shape():
    """Skipping shapes that cannot win keeps the plan within the tolerance of the best."""
    from dpsk.model_selection._repeat import (
        SHAPES,
        _gamma_for_mean,
        _total_epsilon,
        default_mean_runs,
        plan_repeat,
        run_components,
    )

    finals = [DPLogisticRegression(classes=[0, 1], delta=1e-6) for _ in range(3)]
    multipliers = (1 / 3, 1.0, 3.0)
    plan = plan_repeat(finals, 900, 2, 0.5, 1e-6, n_features=4, multipliers=multipliers)
    assert plan.event.epsilon <= 0.5 * (1 + 1e-9)
    above = plan.run_epsilon * 1.02
    curves = tuple(tuple(run_components(f, 900, 2, above, 4, c))
                   for f, c in zip(finals, multipliers))
    for eta in SHAPES:
        gamma = _gamma_for_mean(eta, default_mean_runs(3))
        assert _total_epsilon(curves, eta, gamma, 1e-6) > 0.5
    np.testing.assert_allclose(
        plan.alphas, [c * rule_alpha(finals[0], 900, 4, 2, plan.run_epsilon, 1e-6)
                      for c in multipliers], rtol=1e-12)


@pytest.mark.parametrize("method", ["disjoint", "random-stopping", "safe"])
def test_progress_display_for_every_method(monkeypatch, method):
    """The elapsed-seconds display (tqdm, when installed) covers the other methods too."""
    import sys
    import types

    inits = []

    class FakeBar:
        def __init__(self, *args, **kwargs):
            inits.append(kwargs)

        def __getattr__(self, name):
            return lambda *args, **kwargs: None

    module = types.ModuleType("tqdm.auto")
    module.tqdm = FakeBar
    monkeypatch.setitem(sys.modules, "tqdm", types.ModuleType("tqdm"))
    monkeypatch.setitem(sys.modules, "tqdm.auto", module)
    X, y = _data(n=200)
    DPGridSearch(DPLogisticRegression(classes=[0, 1]), method=method, random_state=0,
                 accountant=BudgetAccountant()).fit(X, y)
    assert len(inits) == 1
    assert inits[0]["total"] is None and "{elapsed}" in inits[0]["bar_format"]
