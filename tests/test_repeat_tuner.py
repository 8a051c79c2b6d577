"""Repeat-and-select tuning (Papernot and Steinke 2022): ``DPGridSearch(method="repeat")``.

* the Renyi curve of :class:`RepeatAndSelectEvent` against dp-accounting's
  ``RepeatAndSelectDpEvent``, and the conversion against its ``compute_epsilon``;
* the law of the number of runs ``K`` and of the score noise (exact samplers),
  with power against laws 10% off;
* the planner meets the total budget for pure, Gaussian and Gaussian-objective
  candidates, and the ledger records exactly one event;
* neighbouring data sets: same event, same attribute names, same warnings;
* ``K`` leaves no trace in files, stdout or stderr;
* bad input and unsupported settings are refused for free.
"""

import math
import os
import warnings
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dpsk import BudgetAccountant, DPLogisticRegression
from dpsk.accounting._events import ApproxDPEvent, RepeatAndSelectEvent, _event_from_dict
from dpsk.accounting._renyi import (
    ORDERS,
    component_rdp,
    gaussian_objective_rdp,
    mixture_rdp,
    pure_rdp,
    rdp_to_dp,
    tnb_mean,
)
from dpsk.mechanisms._noise import gaussian_objective_delta
from dpsk.mechanisms._random import NoiseSource
from dpsk.model_selection import DPGridSearch, _repeat
from dpsk.model_selection._repeat import plan_repeat, score_noise
from dpsk.model_selection._repeat_draws import (
    bernoulli_exp,
    discrete_gaussian,
    discrete_laplace,
    truncated_negative_binomial,
)

dp_accounting = pytest.importorskip("dp_accounting")
from dp_accounting import dp_event  # noqa: E402
from dp_accounting.rdp import rdp_privacy_accountant as rdp_module  # noqa: E402


def _data(n=300, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1.0)
    y = (X[:, 0] + 0.3 * rng.normal(size=n) > 0).astype(int)
    return X, y


def _search(grid=None, **params):
    base = DPLogisticRegression(classes=[0, 1], fit_intercept=False)
    grid = grid if grid is not None else {"alpha": [0.01, 0.1, 1.0]}
    return DPGridSearch(base, grid, **{"epsilon": 1.0, "method": "repeat", "delta": 1e-6,
                                       **params})


# -- the curve -------------------------------------------------------------------------


@pytest.mark.parametrize("eta", [0.0, 0.5, 1.0])
@pytest.mark.parametrize("sigma", [0.8, 3.0])
def test_curve_matches_dp_accounting(eta, sigma):
    gamma = 0.03
    event = RepeatAndSelectEvent(candidates=((("gaussian", sigma, 1),),), eta=eta,
                                 gamma=gamma, delta=1e-6, claimed_epsilon=1e3)
    acc = rdp_module.RdpAccountant(orders=ORDERS)
    acc.compose(dp_event.RepeatAndSelectDpEvent(
        dp_event.GaussianDpEvent(sigma), tnb_mean(eta, gamma), eta))
    np.testing.assert_allclose(event.rdp(ORDERS), acc.rdp, rtol=1e-6)
    ours = rdp_to_dp(event.rdp(ORDERS), 1e-6)
    theirs = rdp_module.compute_epsilon(ORDERS, acc.rdp, 1e-6)[0]
    assert ours == pytest.approx(theirs, rel=1e-6)


def test_pure_and_mixture_curves():
    eps = 0.7
    curve = pure_rdp(eps)
    assert np.all(curve <= np.minimum(eps, ORDERS * eps**2 / 2) + 1e-12)
    # The mixture is between the smallest and the largest candidate curve.
    cands = ((("pure", 0.2, 1),), (("gaussian", 2.0, 1),))
    mix = mixture_rdp(cands)
    low = np.minimum(pure_rdp(0.2), ORDERS / 8.0)
    high = np.maximum(pure_rdp(0.2), ORDERS / 8.0)
    assert np.all(mix >= low - 1e-12) and np.all(mix <= high + 1e-12)


@pytest.mark.parametrize("sigma, eps_j", [(2.0, 0.01), (5.0, 0.1)])
def test_objective_curve_is_above_the_tight_bound(sigma, eps_j):
    # The curve's conversion can never beat the tight delta of the same loss bound.
    curve = gaussian_objective_rdp(sigma, eps_j)
    for eps in (0.5, 1.0, 2.0):
        orders = ORDERS
        log_delta = np.min((orders - 1) * (curve - eps) - np.log(orders)
                           + (orders - 1) * np.log1p(-1 / orders))
        tight = gaussian_objective_delta(sigma, eps, eps_j)
        if tight < 0.1:  # the regime where that delta is the closed form of the same bound
            assert tight <= math.exp(log_delta) * (1 + 1e-9)


def test_event_round_trip_and_claim_check():
    event = RepeatAndSelectEvent(candidates=((("pure", 0.25, 1),), (("gaussian", 3.0, 2),)),
                                 eta=0.0, gamma=0.05, delta=1e-6, claimed_epsilon=5.0)
    assert _event_from_dict(event._to_dict()) == event
    assert hash(_event_from_dict(event._to_dict())) == hash(event)
    with pytest.raises(ValueError, match="understate"):
        RepeatAndSelectEvent(candidates=event.candidates, eta=0.0, gamma=0.05, delta=1e-6,
                             claimed_epsilon=0.1)
    pure = RepeatAndSelectEvent(candidates=((("pure", 0.5, 1),),), eta=0.0, gamma=0.05,
                                delta=0.0, claimed_epsilon=1.0)
    assert pure.cost == (1.0, 0.0)


def test_ledger_composes_the_curve():
    event = RepeatAndSelectEvent(candidates=((("gaussian", 4.0, 1),),), eta=0.5, gamma=0.05,
                                 delta=1e-6, claimed_epsilon=10.0)
    acc = BudgetAccountant()
    acc.spend(event).spend(event)
    expected = rdp_to_dp(2 * event.rdp(ORDERS), 1e-6)
    assert acc.total("rdp", delta=1e-6)[0] == pytest.approx(expected, rel=1e-6)
    assert acc.total("rdp", delta=1e-6)[0] < acc.total()[0]


# -- exact draws -------------------------------------------------------------------------


def _tnb_pmf(eta, gamma, kmax):
    k = np.arange(1, kmax + 1)
    if eta == 0:
        p = (1 - gamma) ** k / k
    else:
        log_coef = np.cumsum(np.log((k - 1 + eta) / k))
        p = (1 - gamma) ** k * np.exp(log_coef)
    return p / p.sum()


def _chi2_pvalue(samples, pmf):
    kmax = len(pmf)
    counts = np.bincount(np.minimum(samples, kmax), minlength=kmax + 1)[1:]
    expected = pmf * len(samples)
    # Pool the tail so that every cell expects at least 5.
    cut = int(np.argmax(np.cumsum(expected[::-1])[::-1] < 5)) or kmax
    obs = np.append(counts[:cut - 1], counts[cut - 1:].sum())
    exp = np.append(expected[:cut - 1], expected[cut - 1:].sum())
    return stats.chisquare(obs, exp * obs.sum() / exp.sum()).pvalue


@pytest.mark.parametrize("eta", [
    Fraction(0), pytest.param(Fraction(1, 2), marks=pytest.mark.slow),
    pytest.param(Fraction(1), marks=pytest.mark.slow)])
def test_number_of_runs_law_with_power(eta):
    gamma = Fraction(1, 4)
    rng = NoiseSource.seeded(11)
    samples = np.array([truncated_negative_binomial(eta, gamma, rng) for _ in range(4000)])
    pmf = _tnb_pmf(float(eta), float(gamma), 400)
    assert _chi2_pvalue(samples, pmf) > 1e-3
    assert abs(_mean_z(samples, pmf)) < 3.3
    # Power: the law whose mean is 10% smaller is rejected (z about 7 for it).
    lo, hi = 1e-4, 0.99
    target = 0.9 * tnb_mean(float(eta), float(gamma))
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if tnb_mean(float(eta), mid) > target else (lo, mid)
    alternative = _tnb_pmf(float(eta), hi, 400)
    assert abs(_mean_z(samples, alternative)) > 3.3


def _mean_z(samples, pmf):
    k = np.arange(1, len(pmf) + 1)
    mean = np.sum(pmf * k)
    sd = math.sqrt(np.sum(pmf * k * k) - mean**2)
    return (samples.mean() - mean) / (sd / math.sqrt(len(samples)))


def test_score_noise_law_with_power():
    rng = NoiseSource.seeded(5)
    z = np.array([discrete_laplace(Fraction(0.4), rng) for _ in range(6000)])

    def law(e):
        p = math.exp(-e)
        support = np.arange(-200, 201)
        return support, (1 - p) / (1 + p) * p ** np.abs(support)

    def chi2_pvalue(e):
        support, pmf = law(e)
        counts = np.array([(z == s).sum() for s in support])
        keep = pmf * len(z) >= 5
        obs = np.append(counts[keep], len(z) - counts[keep].sum())
        exp = np.append(pmf[keep], 1 - pmf[keep].sum()) * len(z)
        return stats.chisquare(obs, exp).pvalue

    def abs_mean_z(e):
        support, pmf = law(e)
        mean = np.sum(pmf * np.abs(support))
        sd = math.sqrt(np.sum(pmf * support**2) - mean**2)
        return (np.abs(z).mean() - mean) / (sd / math.sqrt(len(z)))

    assert chi2_pvalue(0.4) > 1e-3
    assert abs(abs_mean_z(0.4)) < 3.3
    assert abs(abs_mean_z(0.44)) > 3.3  # noise 10% too small is rejected (z about 7)


def test_gaussian_score_noise_law_with_power():
    sigma2 = Fraction(400)
    rng = NoiseSource.seeded(6)
    z = np.array([discrete_gaussian(sigma2, rng) for _ in range(6000)])
    support = np.arange(-200, 201)

    def pmf(s2):
        weights = np.exp(-support.astype(float) ** 2 / (2 * s2))
        return weights / weights.sum()

    counts = np.array([(z == s).sum() for s in support])
    law = pmf(float(sigma2))
    keep = law * len(z) >= 5
    obs = np.append(counts[keep], len(z) - counts[keep].sum())
    exp = np.append(law[keep], 1 - law[keep].sum()) * len(z)
    assert stats.chisquare(obs, exp).pvalue > 1e-3

    def variance_z(s2):
        law = pmf(s2)
        var = np.sum(law * support**2)
        fourth = np.sum(law * support**4)
        return (np.mean(z.astype(float) ** 2) - var) / math.sqrt((fourth - var**2) / len(z))

    assert abs(variance_z(float(sigma2))) < 3.3
    # Noise 10% too small (standard deviation 18 instead of 20) is rejected (z about 11).
    assert abs(variance_z(0.81 * float(sigma2))) > 3.3


@pytest.mark.parametrize("delta_c", [0.0, 1e-6])
def test_score_noise_is_free_and_as_small_as_allowed(delta_c):
    finals = [DPLogisticRegression(alpha=a, delta=delta_c) for a in (1e-3, 1e-1)]
    finals.append(DPLogisticRegression(alpha=1e-2, perturbation="output", delta=1e-6))
    plan = plan_repeat(finals, 5000, 2, 1.0, 1e-6, n_features=[10] * len(finals))
    for components, (kind, parameter) in zip(plan.event.candidates, plan.score_noises):
        assert (kind, parameter) == score_noise(components)
        if components[0][0] == "pure" and len(components) == 1:
            # A pure run: discrete Laplace at the run's own epsilon.
            assert kind == "laplace" and float(parameter) == pytest.approx(plan.run_epsilon)
            continue
        assert kind == "gaussian"
        fit = sum(component_rdp(c, ORDERS) for c in components)
        # The score's curve alpha / (2 sigma2) is below the fit's at every order (so
        # one run's curve is the fit's: the score is free) ...
        assert np.all(ORDERS / (2 * float(parameter)) <= fit)
        # ... and noise 10% smaller would not be.
        assert np.any(ORDERS / (2 * 0.81 * float(parameter)) > fit)


@pytest.mark.parametrize("sigma2", [0.3, 4.0, 250.0])
def test_discrete_gaussian_count_has_the_gaussian_curve(sigma2):
    # D_a(N_Z(0, s2) || N_Z(1, s2)) <= a / (2 s2): the bound the Gaussian score
    # relies on (docs/grid_search.rst, "One run's curve"), computed directly.
    support = np.arange(-20_000, 20_001)

    def log_pmf(shift):
        log_w = -((support - shift) ** 2) / (2 * sigma2)
        return log_w - np.logaddexp.reduce(log_w)

    p, q = log_pmf(0), log_pmf(1)
    for a in (1.1, 1.5, 2.0, 8.0, 64.0, 1024.0):
        divergence = np.logaddexp.reduce(a * p + (1 - a) * q) / (a - 1)
        assert divergence <= a / (2 * sigma2) * (1 + 1e-9)


def test_score_noise_stays_below_the_fit_off_the_grid():
    from dpsk.accounting._filter import ORDERS as FILTER_ORDERS

    fine = np.concatenate([np.linspace(1.001, 2, 400), np.geomspace(2, 1024, 2000),
                           FILTER_ORDERS])
    finals = [DPLogisticRegression(alpha=a, delta=1e-6) for a in (1e-4, 1e-2, 1.0)]
    finals += [DPLogisticRegression(alpha=1e-2, perturbation=p, delta=1e-6)
               for p in ("output", "gradient")]
    for n_classes in (2, 3):
        classes = list(range(n_classes))
        finals_k = [f.set_params(classes=classes, multi_class="ovr") for f in finals]
        plan = plan_repeat(finals_k, 2000, n_classes, 0.3, 1e-6,
                           n_features=[10] * len(finals_k))
        for components, (kind, s2) in zip(plan.event.candidates, plan.score_noises):
            if kind == "gaussian":
                fit = sum(component_rdp(c, fine) for c in components)
                assert np.all(fine / (2 * float(s2)) <= fit * (1 + 1e-12))
    # Above the grid the search's event reports no bound.
    assert np.isinf(plan.event.rdp([2048.0])).all()
    assert np.isfinite(plan.event.rdp([1024.0])).all()


def test_each_run_is_scored_with_its_own_candidate_noise(monkeypatch):
    X, y = _data()
    drawn = []
    real = _repeat.draw_score_noise
    monkeypatch.setattr(_repeat, "draw_score_noise",
                        lambda spec, rng: drawn.append(spec) or real(spec, rng))
    fitted = []
    real_fit = DPLogisticRegression.fit

    def fit(self, *args, **kwargs):
        fitted.append(self.perturbation)
        return real_fit(self, *args, **kwargs)

    monkeypatch.setattr(DPLogisticRegression, "fit", fit)
    grid = [{"alpha": [0.1], "delta": [0.0]},
            {"alpha": [0.1], "perturbation": ["output"], "delta": [1e-6]}]
    _search(grid, random_state=3).fit(X, y)
    assert len(drawn) == len(fitted) > 0
    # The pure candidate's runs get Laplace noise, the Gaussian one's Gaussian noise.
    for perturbation, (kind, _) in zip(fitted, drawn):
        assert kind == ("laplace" if perturbation == "objective" else "gaussian")


def test_bernoulli_exp_is_exact_in_law():
    rng = NoiseSource.seeded(3)
    for gamma in (Fraction(1, 3), Fraction(5, 2)):
        hits = sum(bernoulli_exp(gamma, rng) for _ in range(4000))
        assert stats.binomtest(hits, 4000, math.exp(-gamma)).pvalue > 1e-3


# -- planning and the search -------------------------------------------------------------


@pytest.mark.parametrize("perturbation, delta_c", [("objective", 0.0), ("objective", 1e-6),
                                                   ("output", 1e-6), ("gradient", 1e-6)])
@pytest.mark.parametrize("epsilon", [0.1, 1.0])
def test_plan_meets_the_budget(perturbation, delta_c, epsilon):
    finals = [DPLogisticRegression(alpha=a, perturbation=perturbation, delta=delta_c)
              for a in (1e-3, 1e-2, 1e-1)]
    plan = plan_repeat(finals, 5000, 2, epsilon, 1e-6, n_features=[10] * len(finals))
    assert plan.event.epsilon == epsilon and plan.event.delta == 1e-6
    assert plan.event._exact_epsilon() <= epsilon * (1 + 1e-9)
    assert epsilon / 4 < plan.run_epsilon <= epsilon
    # E[K] = max(1.5 m, 8) (the law's gamma is rounded so that E[K] is at most that).
    assert plan.event.mean_runs <= max(1.5 * len(finals), 8.0) * (1 + 1e-9)


def test_pure_plan_is_pure():
    finals = [DPLogisticRegression(alpha=a) for a in (1e-3, 1e-2)]
    plan = plan_repeat(finals, 5000, 2, 1.0, 0.0)
    assert plan.event.cost == (1.0, 0.0)
    assert plan.run_epsilon == pytest.approx(1.0 / (2 + float(plan.eta)))


def test_search_spends_one_event_and_releases_best_run():
    X, y = _data()
    acc = BudgetAccountant(epsilon=1.0, delta=1e-6, composition="rdp")
    search = _search(accountant=acc, random_state=0).fit(X, y)
    assert len(acc.events) == 1
    assert isinstance(acc.events[0], RepeatAndSelectEvent)
    assert search.privacy_event_ == acc.events[0]
    assert search.privacy_spent_ == (1.0, 1e-6)
    assert search.best_params_ in search.candidate_params_
    assert search.best_estimator_.accountant is acc
    assert search.score(X, y) > 0.6


def test_gaussian_candidates_can_be_tuned():
    X, y = _data()
    grid = [{"alpha": [0.1, 1.0], "delta": [1e-6]},
            {"alpha": [0.1], "perturbation": ["gradient", "output"], "delta": [1e-6]}]
    acc = BudgetAccountant(epsilon=1.0, delta=1e-6)
    search = _search(grid, accountant=acc, random_state=1).fit(X, y)
    assert acc.total() == (1.0, 1e-6)
    kinds = {c[0] for cand in acc.events[0].candidates for c in cand}
    assert kinds == {"gaussian", "gaussian-objective", "pure"}
    assert search.best_index_ in range(4)


def test_seeded_search_is_reproducible():
    X, y = _data()
    a = _search(random_state=3, accountant=BudgetAccountant()).fit(X, y)
    b = _search(random_state=3, accountant=BudgetAccountant()).fit(X, y)
    np.testing.assert_array_equal(a.best_estimator_.coef_, b.best_estimator_.coef_)
    assert a.best_score_ == b.best_score_


def test_neighbours_same_event_attributes_and_warnings():
    X, y = _data()
    X2, y2 = X.copy(), y.copy()
    X2[0], y2[0] = -X2[0], 1 - y2[0]
    records = []
    for data in ((X, y), (X2, y2)):
        acc = BudgetAccountant(delta=1e-6)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            search = _search(accountant=acc).fit(*data)
        records.append((acc.events, sorted(vars(search)), [str(w.message) for w in caught],
                        search.privacy_spent_, sorted(vars(search.best_estimator_))))
    assert records[0] == records[1]


def test_number_of_runs_leaves_no_trace(tmp_path, monkeypatch, capfd):
    X, y = _data(n=200)
    monkeypatch.setenv("DPSK_JOURNAL_DIR", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    seen = []
    for k in (1, 9):
        monkeypatch.setattr(_repeat, "truncated_negative_binomial", lambda *a, k=k: k)
        before = sorted(os.listdir(tmp_path))
        acc = BudgetAccountant(delta=1e-6)
        search = _search(accountant=acc).fit(X, y)
        out, err = capfd.readouterr()
        after = sorted(os.listdir(tmp_path))
        state = {key: type(v).__name__ for key, v in vars(search).items()}
        seen.append((before == after, out, err, acc.events, state))
    assert seen[0] == seen[1]
    assert seen[0][0] and seen[0][1] == "" and seen[0][2] == ""


# -- refusals -----------------------------------------------------------------------------


class _ApproxOnly(DPLogisticRegression):
    def _privacy_event(self):
        return ApproxDPEvent(self.epsilon, self.delta)


@pytest.mark.parametrize("case", ["nan", "label", "refit", "delta0", "approx-only", "one-row"])
def test_refused_for_free(case):
    X, y = _data(n=60)
    acc = BudgetAccountant(delta=1e-6)
    params = {"accountant": acc}
    grid = None
    if case == "nan":
        X = X.copy()
        X[3, 1] = np.nan
    elif case == "label":
        y = y.copy()
        y[5] = 7
    elif case == "refit":
        params["refit"] = True
    elif case == "delta0":
        params["delta"] = 0.0
        grid = {"alpha": [0.1, 1.0], "delta": [1e-6]}
    elif case == "one-row":
        X, y = X[:1], y[:1]
    search = _search(grid, **params)
    if case == "approx-only":
        search.set_params(estimator=_ApproxOnly(classes=[0, 1], perturbation="output",
                                                delta=1e-6))
    with pytest.raises(ValueError):
        search.fit(X, y)
    assert acc.events == []


def test_progress_counts_seconds_not_runs(monkeypatch):
    import sys
    import types

    calls = []

    class FakeBar:
        def __init__(self, *args, **kwargs):
            calls.append(("init", args, tuple(sorted(kwargs.items()))))

        def __getattr__(self, name):
            def record(*args, **kwargs):
                calls.append((name, args, kwargs))
            return record

    module = types.ModuleType("tqdm.auto")
    module.tqdm = FakeBar
    monkeypatch.setitem(sys.modules, "tqdm", types.ModuleType("tqdm"))
    monkeypatch.setitem(sys.modules, "tqdm.auto", module)
    X, y = _data(n=200)
    seen = []
    for k in (1, 9):
        calls.clear()
        monkeypatch.setattr(_repeat, "truncated_negative_binomial", lambda *a, k=k: k)
        _search(accountant=BudgetAccountant()).fit(X, y)
        seen.append([(name, args, tuple(kv for kv in kwargs if kv[0] != "file"))
                     if name == "init" else (name, args, kwargs)
                     for name, args, kwargs in calls if name != "refresh"])
    assert seen[0] == seen[1]
    init = dict(seen[0][0][2])
    assert init["total"] is None and "{elapsed}" in init["bar_format"]
    assert {c[0] for c in seen[0]} <= {"init", "close"}


def test_alpha_auto_gaussian_objective_candidates_are_planned_with_their_own_alpha():
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer

    from dpsk.model_selection._repeat import run_components

    X, y = _data(n=400)
    final = DPLogisticRegression(classes=[0, 1], delta=1e-6)  # alpha="auto"
    planned = run_components(final, 360, 2, 0.5, n_features=X.shape[1])
    numeric = final._resolve_alpha(360, X.shape[1] + 1, final._make_loss(2), 2, 0.5, 1e-6)
    assert planned == run_components(final.set_params(alpha=numeric), 360, 2, 0.5,
                                     n_features=X.shape[1])
    acc = BudgetAccountant()
    search = _search(grid={"fit_intercept": [True, False]}, accountant=acc)
    search.set_params(estimator=DPLogisticRegression(classes=[0, 1], delta=1e-6)).fit(X, y)
    assert len(acc.events) == 1
    # Inside a pipeline the model's own number of features is unknown: refused for free.
    piped = _search(grid={"dplogisticregression__fit_intercept": [True, False]},
                    accountant=(acc := BudgetAccountant()))
    piped.set_params(estimator=make_pipeline(FunctionTransformer(),
                                             DPLogisticRegression(classes=[0, 1], delta=1e-6)))
    with pytest.raises(ValueError, match="numeric alpha"):
        piped.fit(X, y)
    assert acc.events == []
