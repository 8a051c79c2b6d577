"""Privacy events, composition methods and budget validation."""

import dataclasses
import math
import pickle
import sys
import warnings

import numpy as np
import pytest

from dpsk import (
    ApproxDPEvent,
    BudgetAccountant,
    BudgetExceededError,
    DPLogisticRegression,
    ExponentialEvent,
    GaussianEvent,
    PrivacyBudgetWarning,
    PureDPEvent,
)

# These ledger tests fit with undeclared classes for brevity; the warning
# itself is tested in test_fit_protocol.py.
pytestmark = pytest.mark.filterwarnings("ignore::dpsk.ClassesFromDataWarning")

EVENTS = [PureDPEvent(0.5), PureDPEvent(0.2, mechanism="laplace"), ApproxDPEvent(1.0, 1e-7),
          GaussianEvent(noise_multiplier=3.0, delta=1e-7), ExponentialEvent(0.3)]


def _fifty_releases_at_01():
    acc = BudgetAccountant(delta=1e-6)
    for _ in range(50):
        acc.spend(0.1)
    return acc


def _optimal_homogeneous_epsilon(k, eps, delta):
    """Kairouz, Oh and Viswanath (2015) Theorem 3.3, in the closed form of Murtagh
    and Vadhan (2016): the exact delta of k-fold eps-DP composition at eps_total."""

    def exact_delta(eps_total):
        terms = [math.comb(k, i) * max(0.0, math.exp((k - i) * eps)
                                       - math.exp(eps_total + i * eps)) for i in range(k + 1)]
        return math.fsum(terms) / (1 + math.exp(eps)) ** k

    lo, hi = 0.0, k * eps
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if exact_delta(mid) > delta else (lo, mid)
    return hi


# -- the reference numbers ------------------------------------------------------------
def test_basic_and_advanced_reference_numbers():
    acc = _fifty_releases_at_01()
    assert acc.total() == pytest.approx((5.0, 0.0))
    eps, delta = acc.total("advanced")
    assert eps == pytest.approx(3.92, abs=0.005)
    assert delta == 1e-6
    # At a larger delta the bound is smaller, and never above basic composition.
    assert acc.total("advanced", delta=1e-3)[0] < eps
    assert acc.total("advanced", delta=0.0) == pytest.approx((5.0, 0.0))


def test_pld_and_rdp_reference_numbers():
    pytest.importorskip("dp_accounting")
    acc = _fifty_releases_at_01()
    pld = acc.total("pld")[0]
    assert pld == pytest.approx(3.17, abs=0.005)
    # PLD is near-exact: the optimal homogeneous bound sits just below it.
    optimal = _optimal_homogeneous_epsilon(50, 0.1, 1e-6)
    assert optimal <= pld <= optimal * 1.01
    rdp = acc.total("rdp")[0]
    assert pld < rdp < 5.0


def test_mechanism_specific_events_compose_tighter():
    pytest.importorskip("dp_accounting")
    laplace = BudgetAccountant(delta=1e-6)
    generic = BudgetAccountant(delta=1e-6)
    for _ in range(50):
        laplace.spend(PureDPEvent(0.1, mechanism="laplace"))
        generic.spend(PureDPEvent(0.1))
    assert laplace.total("pld")[0] < generic.total("pld")[0]
    # One Gaussian release: PLD agrees with the exact analytic epsilon (Balle-Wang).
    gauss = BudgetAccountant(delta=1e-6).spend(GaussianEvent(2.0, 1e-6))
    assert gauss.total() == pytest.approx((2.2541, 1e-6), rel=1e-4)
    assert gauss.total("pld")[0] == pytest.approx(gauss.events[0].epsilon, rel=1e-3)


def test_every_method_on_a_mixed_ledger():
    acc = BudgetAccountant(delta=1e-5)
    for event in EVENTS:
        acc.spend(event)
    basic = acc.total()
    assert basic[0] == pytest.approx(math.fsum(e.epsilon for e in EVENTS))
    assert basic[1] == pytest.approx(2e-7)  # the approximate and Gaussian deltas
    methods = ["advanced"]
    if _has_dp_accounting():
        methods += ["pld", "rdp"]
    for method in methods:
        eps, delta = acc.total(method)
        assert 0 < eps <= basic[0]
        assert delta <= 1e-5
    # Below the events' own deltas no method can state a bound.
    assert acc.total("advanced", delta=1e-8)[0] == math.inf


def _has_dp_accounting():
    try:
        import dp_accounting  # noqa: F401
    except ImportError:
        return False
    return True


def test_unknown_method_rejected():
    with pytest.raises(ValueError, match="composition method"):
        BudgetAccountant().total("magic")
    with pytest.raises(ValueError, match="composition method"):
        BudgetAccountant(composition="magic")


def test_missing_dp_accounting_gives_a_clear_error(monkeypatch):
    for name in [m for m in sys.modules if m == "dp_accounting" or m.startswith("dp_accounting.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "dp_accounting", None)  # makes the import fail
    acc = BudgetAccountant(delta=1e-6).spend(0.1)
    with pytest.raises(ImportError, match=r"pip install dpsk\[accounting\]"):
        acc.total("pld")
    with pytest.raises(ImportError, match="dp-accounting"):
        BudgetAccountant(epsilon=3.0, delta=1e-6, composition="rdp")
    assert acc.total("advanced")[0] == pytest.approx(0.1)


# -- enforcing a budget under a tighter method --------------------------------------
@pytest.mark.parametrize("composition", ["advanced", "pld"])
def test_budget_enforced_under_tighter_composition(composition):
    if composition == "pld":
        pytest.importorskip("dp_accounting")
    # Advanced composition only beats basic at 3.0 for small steps.
    step = {"advanced": 0.05, "pld": 0.1}[composition]
    acc = BudgetAccountant(epsilon=3.0, delta=1e-6, composition=composition)
    spent = 0
    while True:
        try:
            acc.spend(step)
        except BudgetExceededError as exc:
            assert composition in str(exc)
            break
        spent += 1
        assert spent < 1000
    assert spent > round(3.0 / step)  # where basic composition would stop
    # The filter enforces (tests/test_privacy_filter.py); the closed-form
    # advanced total reports, and is looser than the filter for many releases.
    assert acc._renyi_filter().state(acc.events)[0] <= 3.0 * (1 + 1e-9)
    if composition == "pld":
        assert acc.total(composition)[0] <= 3.0 * (1 + 1e-9)
    assert acc.total()[0] > 3.0
    assert acc.remaining()[0] < step
    with pytest.raises(BudgetExceededError):
        acc.check(step)


def test_tighter_budget_through_estimators():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((80, 3))
    X /= np.linalg.norm(X, axis=1, keepdims=True).max()
    y = (X[:, 0] > 0).astype(int)
    acc = BudgetAccountant(epsilon=1.0, delta=1e-6, composition="advanced")
    fits = 0
    with pytest.raises(BudgetExceededError):
        for _ in range(200):
            DPLogisticRegression(epsilon=0.02, accountant=acc, random_state=0).fit(X, y)
            fits += 1
    assert fits > 50  # basic composition would allow 50


# -- events --------------------------------------------------------------------------
@pytest.mark.parametrize("event", EVENTS, ids=lambda e: type(e).__name__)
def test_events_are_immutable_picklable_and_readable(event):
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.epsilon = 0.0
    twin = pickle.loads(pickle.dumps(event))
    assert twin == event and hash(twin) == hash(event)
    assert repr(event).startswith(type(event).__name__ + "(")
    assert event.cost == (event.epsilon, event.delta)
    # Events survive the journal (pickling a ledger moves them to a file).
    acc = BudgetAccountant(delta=1e-4).spend(event)
    copy = pickle.loads(pickle.dumps(acc))
    assert copy.events == [event]


@pytest.mark.parametrize("make", [
    lambda: PureDPEvent(0.0), lambda: PureDPEvent(-1.0), lambda: PureDPEvent(math.inf),
    lambda: PureDPEvent(1.0, mechanism="gaussian"), lambda: ApproxDPEvent(1.0, 1.0),
    lambda: GaussianEvent(0.0, 1e-6), lambda: GaussianEvent(1.0, 0.0),
    lambda: ExponentialEvent(math.nan), lambda: PureDPEvent("1"),
])
def test_bad_events_rejected(make):
    with pytest.raises(ValueError):
        make()


def test_unknown_event_kinds_refused():
    @dataclasses.dataclass(frozen=True)
    class Custom(PureDPEvent):
        pass

    with pytest.raises(TypeError, match="Unsupported privacy event"):
        BudgetAccountant().spend(Custom(0.1))


def test_fitted_model_exposes_its_event():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 2)) / 4
    y = (X[:, 0] > 0).astype(int)
    acc = BudgetAccountant()
    clf = DPLogisticRegression(epsilon=0.3, accountant=acc, random_state=0).fit(X, y)
    assert clf.privacy_spent_ == (0.3, 0.0)
    # Two pure releases (the class counts and the model): one epsilon-DP event.
    assert clf.privacy_event_ == PureDPEvent(0.3, mechanism="generic")
    assert acc.events == [clf.privacy_event_]
    unprioed = DPLogisticRegression(epsilon=0.3, class_prior=None, random_state=0).fit(X, y)
    assert unprioed.privacy_event_ == PureDPEvent(0.3, mechanism="gamma-norm")
    assert pickle.loads(pickle.dumps(clf)).privacy_event_ == clf.privacy_event_


# -- budget validation -------------------------------------------------------------
@pytest.mark.parametrize("delta", [1.0, 1.5, -1e-9, math.nan])
def test_delta_budget_must_be_below_one(delta):
    with pytest.raises(ValueError, match="delta"):
        BudgetAccountant(epsilon=1.0, delta=delta)


@pytest.mark.parametrize("kwargs, match", [
    ({"epsilon": 11.0}, "epsilon=11"),
    ({"epsilon": 1.0, "delta": 2e-3}, "delta=0.002"),
])
def test_weak_budgets_warn(kwargs, match):
    with pytest.warns(PrivacyBudgetWarning, match=match):
        BudgetAccountant(**kwargs)


def test_weak_spends_warn_and_sane_ones_do_not():
    with pytest.warns(PrivacyBudgetWarning, match="delta=0.5"):
        acc = BudgetAccountant(delta=0.5)
    with pytest.warns(PrivacyBudgetWarning, match="weak"):
        acc.spend(1e300)
    with pytest.warns(PrivacyBudgetWarning, match="delta"):
        acc.spend(1.0, 0.01)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        BudgetAccountant()  # inf only records: no warning
        BudgetAccountant(epsilon=10.0, delta=1e-3).spend(10.0, 1e-3)
    assert len(acc.spends) == 2
