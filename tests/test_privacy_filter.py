"""Budgets under ``composition != "basic"`` are enforced by a privacy filter that
stays valid when each release is chosen after seeing the earlier outputs.

The checks compute the *exact* hockey-stick divergence of adaptive interactions
(two-branch mixtures in closed form, and whole trees of randomised-response
releases enumerated outcome by outcome) and compare it with the budget.
"""

import math
import multiprocessing
import os
import pickle
import random

import numpy as np
import pytest

from dpsk import (
    ApproxDPEvent,
    BudgetAccountant,
    BudgetExceededError,
    ExponentialEvent,
    GaussianEvent,
    PureDPEvent,
)
from dpsk.accounting._filter import (
    ORDERS,
    RenyiFilter,
    laplace_renyi,
    randomized_response_renyi,
)
from dpsk.accounting._profiles import gaussian_delta


def _rr(eps):
    """Randomised response at ``eps``: P(output favours D) under D and under D'."""
    return math.exp(eps) / (1 + math.exp(eps)), 1 / (1 + math.exp(eps))


def _smallest_sigma(accept, lo=0.05, hi=200.0):
    """The smallest noise multiplier ``accept`` takes (``accept`` grows with sigma)."""
    assert accept(hi) and not accept(lo)
    for _ in range(80):
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if accept(mid) else (mid, hi)
    return hi


# -- the interaction of the audit ---------------------------------------------------
def _audit_divergence(sigma, second_branch_delta):
    """Exact delta at epsilon 2 of: PureDP(0.25) (randomised response, the worst
    0.25-DP mechanism); if its output favours D, a Gaussian release with noise
    multiplier ``sigma``; else an ApproxDP(0, second_branch_delta) release (the
    worst such mechanism: an atom of that mass only D can produce), or nothing
    when ``second_branch_delta`` is None.

    sup_E P(E) - e^2 Q(E) splits over the two branches. Favouring D has mass p
    under D and q under D', and the Gaussian pair at epsilon 2 - log(p/q) = 1.75
    gives p * delta_G(1.75). The other branch has mass q under D and p under D':
    only the atom counts there, q * delta. In the other direction (D' against D)
    the Gaussian branch gives q * delta_G(2.25) and the atom branch p * delta.
    """
    p, q = _rr(0.25)
    atom = second_branch_delta or 0.0
    forward = p * gaussian_delta(sigma, 1.75, 1.0) + q * atom
    backward = q * gaussian_delta(sigma, 2.25, 1.0) + p * atom
    return max(forward, backward)


def test_the_audits_adaptive_interaction_stays_within_budget():
    acc = BudgetAccountant(epsilon=2.0, delta=1e-6, composition="pld")
    acc.spend(PureDPEvent(0.25))

    def accepted(sigma):
        try:
            acc.check(GaussianEvent(sigma, 1e-6))
        except BudgetExceededError:
            return False
        return True

    # Branch "favours D": the largest Gaussian release the ledger accepts.
    sigma = _smallest_sigma(accepted)
    # Branch "favours D'": the (0, 1e-6) release must be refused, or the two
    # branches together exceed the budget (below).
    with pytest.raises(BudgetExceededError, match="Nothing was spent"):
        acc.check(ApproxDPEvent(0.0, 1e-6))
    assert acc.events == [PureDPEvent(0.25)]
    assert _audit_divergence(sigma, None) <= 1e-6

    # What the old rule allowed: the Gaussian that the exact (non-adaptive)
    # composition of RR(0.25) and the Gaussian fits at (2, 1e-6), and the
    # approximate release in the other branch. Exact divergence 1.44e-6.
    p, q = _rr(0.25)
    tight = _smallest_sigma(lambda s: p * gaussian_delta(s, 1.75, 1.0)
                            + q * gaussian_delta(s, 2.25, 1.0) <= 1e-6)
    assert _audit_divergence(tight, 1e-6) == pytest.approx(1.44e-6, abs=0.01e-6)
    # The filter's Gaussian is larger-noised than the tight one: the price of
    # validity under adaptive choice.
    assert sigma > tight


def test_each_branch_alone_still_fits_when_declared_in_the_budget():
    # With the whole delta set apart for approximate-DP releases, the (0, 1e-6)
    # branch fits, and then no Gaussian release can (its Renyi part has no delta).
    acc = BudgetAccountant(epsilon=2.0, delta=1e-6, composition="pld", approx_delta=1e-6)
    acc.spend(PureDPEvent(0.25)).check(ApproxDPEvent(0.0, 1e-6))
    with pytest.raises(BudgetExceededError):
        acc.check(GaussianEvent(50.0, 1e-6))


# -- the worst adaptive analyst, exactly ------------------------------------------------
_MENU = (PureDPEvent(0.1), PureDPEvent(0.25), PureDPEvent(0.5), ApproxDPEvent(0.0, 0.0125),
         ApproxDPEvent(0.2, 0.025))


def _outcomes(event):
    """The worst mechanism promising the event's pair, as outcomes with their
    probabilities under D and under D' (Kairouz, Oh and Viswanath 2015, Theorem
    3.2): randomised response, and for delta > 0 an atom of mass delta only D
    produces (its mirror atom, only D' produces, has no D-mass and adds nothing
    to the divergence below)."""
    p, q = _rr(event.epsilon)
    delta = event.delta
    out = [((1 - delta) * p, (1 - delta) * q), ((1 - delta) * q, (1 - delta) * p)]
    return out + [(delta, 0.0)] if delta > 0 else out


def _worst_analyst(rule, epsilon, depth):
    """max over adaptive analysts of sup_E P(E) - e^eps Q(E), computed exactly.

    An analyst picks each release from _MENU after seeing every earlier output,
    runs it if ``rule`` accepts the sequence, and stops when it likes (at most
    ``depth`` releases). Its divergence is a sum over transcripts of
    (P - e^eps Q)_+, so the best analyst is found by dynamic programming: the
    value of a node is the best of stopping and of each accepted release
    (the sum of its children's values). A node's value is Q(node) times a
    function of the releases so far and of log(P/Q), which is memoised. By
    symmetry of the menu the other direction (D' against D) gives the same.
    """
    memo = {}

    def value(key, log_ratio):
        slot = (key, round(log_ratio, 9))
        if slot in memo:
            return memo[slot]
        best = max(math.exp(log_ratio) - math.exp(epsilon), 0.0)
        events = [_MENU[i] for i in key]
        for i, event in enumerate(_MENU if len(key) < depth else ()):
            if not rule.accepts(events + [event]):
                continue
            after = tuple(sorted(key + (i,)))
            total = 0.0
            for p, q in _outcomes(event):
                # An atom only D produces counts with all its D-mass.
                total += p * math.exp(log_ratio) if q == 0 else q * value(
                    after, log_ratio + math.log(p / q))
            best = max(best, total)
        memo[slot] = best
        return best

    return value((), 0.0)


class _EitherRule:
    """The rule the filter replaced: basic composition fits, or the (here
    Renyi) bound with all of delta does."""

    def __init__(self, epsilon, delta):
        self.epsilon, self.delta = epsilon, delta
        self.renyi = RenyiFilter(epsilon, delta, 0.0)

    def accepts(self, events):
        basic = (math.fsum(e.epsilon for e in events) <= self.epsilon * (1 + 1e-9)
                 and math.fsum(e.delta for e in events) <= self.delta * (1 + 1e-9))
        return basic or self.renyi.accepts(events)


@pytest.mark.filterwarnings("ignore::dpsk.PrivacyBudgetWarning")
def test_the_worst_adaptive_analyst_stays_within_budget():
    # A large delta lets the Renyi orders accept beyond basic composition in a
    # few releases, so the exact search reaches that part of the filter.
    acc = BudgetAccountant(epsilon=1.0, delta=0.05, composition="rdp")
    worst = _worst_analyst(acc._renyi_filter(), 1.0, depth=10)
    # Measured: 0.0305. The filter is valid, with room to spare on this menu.
    assert 0.02 < worst <= 0.05


def test_the_worst_analyst_breaks_rules_that_are_not_filters():
    # Basic-or-tight (the old rule) and a filter paying delta twice both let
    # the best analyst past delta = 0.05 at epsilon 1 (measured: 0.0528, 0.061).
    assert _worst_analyst(_EitherRule(1.0, 0.05), 1.0, depth=10) > 0.05
    assert _worst_analyst(RenyiFilter(1.0, 0.10, 0.05), 1.0, depth=8) > 0.05


# -- random adaptive sequences: every accepted one satisfies the filter's bound -------
def test_random_adaptive_sequences_satisfy_the_filter_bound():
    rng = random.Random(0)
    for _ in range(20):
        epsilon = rng.choice([0.5, 1.0, 3.0])
        delta = rng.choice([1e-6, 1e-5])
        acc = BudgetAccountant(epsilon=epsilon, delta=delta, composition="rdp")
        filt = acc._renyi_filter()
        for _ in range(60):
            kind = rng.random()
            if kind < 0.4:
                event = PureDPEvent(rng.uniform(0.01, 0.4),
                                    mechanism=rng.choice(["generic", "laplace"]))
            elif kind < 0.7:
                event = GaussianEvent(rng.uniform(2.0, 30.0), delta)
            elif kind < 0.85:
                event = ApproxDPEvent(rng.uniform(0.0, 0.3), rng.uniform(0, delta / 4))
            else:
                event = ExponentialEvent(rng.uniform(0.01, 0.3))
            try:
                acc.spend(event)
            except BudgetExceededError:
                pass
            eps_now, pair = filt.state(acc.events)
            assert eps_now <= epsilon * (1 + 1e-9)
            assert pair <= acc.approx_delta * (1 + 1e-9)
        gaussians = [e for e in acc.events if isinstance(e, GaussianEvent)]
        if gaussians and len(gaussians) == len(acc.events):
            # Only Gaussian releases: their exact composition is one Gaussian
            # (even adaptively: Smith and Thakurta 2022), checked exactly.
            sigma = sum(e.noise_multiplier ** -2 for e in gaussians) ** -0.5
            assert gaussian_delta(sigma, epsilon, 1.0) <= delta


def test_gaussian_only_ledgers_are_checked_exactly():
    for epsilon, delta in [(1.0, 1e-6), (3.0, 1e-5), (0.5, 1e-6)]:
        acc = BudgetAccountant(epsilon=epsilon, delta=delta, composition="pld")
        while True:
            try:
                acc.spend(GaussianEvent(20.0, delta))
            except BudgetExceededError:
                break
        sigma = (len(acc.events) / 400.0) ** -0.5
        assert len(acc.events) > 1
        assert gaussian_delta(sigma, epsilon, 1.0) <= delta


# -- the filter's parts --------------------------------------------------------------
def test_renyi_curves_bound_the_known_ones():
    for eps in [0.01, 0.3, 1.0, 3.0]:
        for alpha in ORDERS:
            rr = randomized_response_renyi(eps, alpha)
            assert rr <= min(eps, alpha * eps * eps / 2) * (1 + 1e-12) + 1e-15
            assert laplace_renyi(eps, alpha) <= rr * (1 + 1e-9) + 1e-15
    # A direct sum for randomised response at one order.
    p, q = _rr(0.7)
    direct = math.log(p ** 3 * q ** -2 + q ** 3 * p ** -2) / 2
    assert randomized_response_renyi(0.7, 3.0) == pytest.approx(direct, rel=1e-12)
    # Laplace at scale 1/eps, shift 1: the integral of p^alpha q^(1-alpha).
    from scipy.integrate import quad

    eps, alpha = 0.7, 3.0
    density = lambda x, m: eps / 2 * math.exp(-eps * abs(x - m))  # noqa: E731
    integral = sum(quad(lambda x: density(x, 1) ** alpha * density(x, 0) ** (1 - alpha),
                        a, b)[0] for a, b in [(-50, 0), (0, 1), (1, 50)])
    assert laplace_renyi(eps, alpha) == pytest.approx(math.log(integral) / (alpha - 1),
                                                      rel=1e-7)


def test_many_small_releases_fit_beyond_basic_composition():
    acc = BudgetAccountant(epsilon=3.0, delta=1e-6, composition="pld")
    while True:
        try:
            acc.spend(0.1)
        except BudgetExceededError as exc:
            message = str(exc)
            break
    # Measured: 37 releases (basic composition stops at 30; PLD for a sequence
    # fixed in advance would allow 46, which adaptive choice does not).
    assert len(acc.events) == 37
    assert acc.total("pld")[0] <= 3.0
    assert acc.remaining()[0] < 0.1
    assert "Renyi privacy filter" in message and "Nothing was spent" in message
    assert "certified at epsilon=" in message and "Remaining: epsilon=" in message


def test_pure_releases_always_get_basic_composition():
    # The order inf of the filter is basic composition of pure releases, at no delta.
    for composition in ["advanced", "pld", "rdp"]:
        acc = BudgetAccountant(epsilon=1.0, delta=1e-6, composition=composition)
        acc.spend(0.6).spend(0.4)
        assert acc.remaining() == (0.0, 5e-7)
        with pytest.raises(BudgetExceededError):
            acc.spend(1e-3)
    pure = BudgetAccountant(epsilon=1.0, delta=0.0, composition="pld")
    for _ in range(10):
        pure.spend(0.1)
    with pytest.raises(BudgetExceededError):
        pure.spend(1e-6, 1e-12)


def test_approx_delta_is_validated_pickled_and_shown():
    with pytest.raises(ValueError, match="approx_delta"):
        BudgetAccountant(epsilon=1.0, delta=1e-6, composition="pld", approx_delta=2e-6)
    with pytest.raises(ValueError, match="approx_delta"):
        BudgetAccountant(epsilon=1.0, delta=1e-6, composition="pld", approx_delta="1")
    assert BudgetAccountant(epsilon=1.0, delta=1e-6).approx_delta is None
    acc = BudgetAccountant(epsilon=1.0, delta=1e-6, composition="rdp", approx_delta=2e-7)
    assert "approx_delta=2e-07" in repr(acc)
    acc.spend(ApproxDPEvent(0.1, 2e-7))
    copy = pickle.loads(pickle.dumps(acc))
    assert copy.approx_delta == 2e-7 and copy.composition == "rdp"
    with pytest.raises(BudgetExceededError, match="approximate-DP deltas adding up"):
        copy.spend(ApproxDPEvent(0.1, 1e-9))
    assert acc.events == [ApproxDPEvent(0.1, 2e-7)]


# -- basic composition: unchanged, with the clearer message -------------------------
def test_basic_composition_unchanged_and_its_message():
    acc = BudgetAccountant(epsilon=1.0, delta=1e-6)
    acc.spend(0.1).spend(0.2).spend(0.3)
    with pytest.raises(BudgetExceededError) as info:
        acc.spend(0.5)
    message = str(info.value)
    assert "by basic composition" in message and "epsilon=1.1" in message
    assert "Nothing was spent" in message and "Remaining: epsilon=0.4" in message
    assert "0.6000000000000001" not in message + repr(acc)
    assert "spent epsilon=0.6," in repr(acc)
    acc.spend(0.4).spend(0.0, 1e-6)
    assert acc.total() == pytest.approx((1.0, 1e-6))
    with pytest.raises(BudgetExceededError, match="a batch of 2 releases"):
        acc.spend_all([PureDPEvent(1e-3), PureDPEvent(1e-3)])


# -- copies in other processes enforce the same filter --------------------------------
def _spend_in_child(acc, conn):
    outcome = []
    for event in [PureDPEvent(0.5), ApproxDPEvent(0.0, 1e-6), GaussianEvent(1.0, 1e-6)]:
        try:
            acc.spend(event)
            outcome.append("ok")
        except BudgetExceededError:
            outcome.append("refused")
    conn.send(outcome)
    conn.close()


@pytest.mark.skipif(os.name != "posix", reason="journals need POSIX file locks")
def test_a_copy_in_another_process_enforces_the_same_filter():
    acc = BudgetAccountant(epsilon=2.0, delta=1e-6, composition="pld")
    acc.spend(PureDPEvent(0.25))
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_spend_in_child, args=(acc, child))
    proc.start()
    outcome = parent.recv()
    proc.join(30)
    assert outcome == ["ok", "refused", "refused"]
    assert acc.events == [PureDPEvent(0.25), PureDPEvent(0.5)]
    with pytest.raises(BudgetExceededError):
        acc.spend(ApproxDPEvent(0.0, 1e-6))


# -- a first release may use its own exact guarantee ------------------------------------
class _LedgerRule:
    """The ledger's own decision for a whole sequence (the filter, or a lone first
    release that fits by itself)."""

    def __init__(self, ledger):
        self.ledger = ledger

    def accepts(self, events):
        return self.ledger._fits(events[:-1], events[-1:])


def test_a_first_release_at_the_whole_budget_fits_and_nothing_after_it():
    from dpsk.mechanisms._noise import analytic_gaussian_sigma

    acc = BudgetAccountant(epsilon=1.0, delta=1e-6, composition="pld")
    whole = GaussianEvent(analytic_gaussian_sigma(1.0, 1e-6, 1.0), 1e-6)
    assert not acc._renyi_filter().accepts([whole])  # the filter alone would refuse it
    acc.spend(whole)
    with pytest.raises(BudgetExceededError, match="Nothing was spent"):
        acc.check(PureDPEvent(0.001))
    assert acc.remaining()[0] == 0.0
    # A second release is never a "first" one, even when it would fit alone.
    other = BudgetAccountant(epsilon=1.0, delta=1e-6, composition="pld")
    other.spend(PureDPEvent(0.001))
    with pytest.raises(BudgetExceededError):
        other.check(whole)


@pytest.mark.filterwarnings("ignore::dpsk.PrivacyBudgetWarning")
def test_the_first_release_exception_keeps_the_worst_analyst_within_budget(monkeypatch):
    import sys

    acc = BudgetAccountant(epsilon=1.0, delta=0.05, composition="rdp")
    whole = ApproxDPEvent(1.0, 0.05)
    assert not acc._renyi_filter().accepts([whole])
    monkeypatch.setattr(sys.modules[__name__], "_MENU", _MENU + (whole,))
    worst = _worst_analyst(_LedgerRule(acc), 1.0, depth=8)
    assert worst <= 0.05 * (1 + 1e-9)


def test_the_filter_composes_a_search_by_its_own_renyi_curve():
    from dpsk.accounting._events import RepeatAndSelectEvent
    from dpsk.accounting._filter import ORDERS, event_terms

    search = RepeatAndSelectEvent(candidates=((("gaussian", 3.0, 1),),), eta=0.0, gamma=0.05,
                                  delta=1e-6, claimed_epsilon=5.0)
    curve, max_div, pair = event_terms(search)
    np.testing.assert_allclose(curve, search.rdp(ORDERS))
    assert max_div == math.inf and pair == 0.0  # its pair is not a pure guarantee
    pure = RepeatAndSelectEvent(candidates=((("pure", 0.5, 1),),), eta=0.0, gamma=0.05,
                                delta=0.0, claimed_epsilon=1.0)
    assert event_terms(pure)[1] == 1.0
    acc = BudgetAccountant(epsilon=8.0, delta=1e-5, composition="rdp")
    acc.spend(search)
    assert acc.events == [search]
