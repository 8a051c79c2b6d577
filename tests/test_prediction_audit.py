"""Release audit of DPPredictionEnsemble: what an observer of fit and of the answers sees.

The harness of ``tests/test_release_audit.py`` compares fitted models; here the
release is the stream of answers, so the audit is done on its own terms, on the
same neighbouring data sets (``neighbour_pairs``: a label change, a clipped far
row, a declared class present in one row only):

* fit: identical public attributes, warnings, exceptions and (empty) spends on
  D and D'; the teachers are the one private attribute and are left out;
* predict: identical spends (one ExponentialEvent per distinct row), warnings,
  exceptions, answer shape and dtype;
* the answers' law: on a shared public split, every answer's distribution on
  D and D' differs by a factor at most e^epsilon (exact, from the vote counts);
* out-of-domain training input: refused alike for two data sets with the same
  defect, nothing spent; the pickle holds no noise generator.
"""

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

from dpsk import BudgetAccountant, DPPredictionEnsemble
from dpsk.prediction import TeachersInPickleWarning
from dpsk.prediction._vote import vote_counts, vote_probabilities

EPSILON = 0.5
N_FITS = 5
QUERIES = np.random.default_rng(11).normal(size=(40, 3)) * 0.5


def _make(n_classes, accountant, random_state=None):
    return DPPredictionEnsemble(LogisticRegression(), epsilon=EPSILON, n_teachers=5,
                                classes=list(range(n_classes)), accountant=accountant,
                                random_state=random_state)


def _observe(n_classes, X, y):
    """Everything public about one fit and one batch of answers."""
    accountant = BudgetAccountant()
    model = _make(n_classes, accountant)
    seen = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            model.fit(X, y)
            seen["fit"] = {k: _describe_value(v) for k, v in vars(model).items()
                           if k != "_teachers"}
            seen["fit_spends"] = accountant.spends
            answers = model.predict(QUERIES)
            seen["answers"] = (answers.shape, answers.dtype.str, set(answers) <= set(range(
                n_classes)))
        except Exception as exc:  # the point is to compare them
            seen["exception"] = (type(exc), str(exc))
    seen["warnings"] = [(w.category, str(w.message)) for w in caught]
    seen["events"] = accountant.events
    return seen


@pytest.mark.parametrize("n_classes", [2, 3])
def test_neighbours_look_the_same(n_classes):
    for name, (X, y), (X2, y2) in neighbour_pairs(n_classes):
        views = [_observe(n_classes, A, b) for A, b in [(X, y)] * N_FITS + [(X2, y2)] * N_FITS]
        assert "exception" not in views[0], (name, views[0])
        assert views[0]["fit_spends"] == []  # fitting releases nothing
        assert len(views[0]["events"]) == QUERIES.shape[0]
        assert views[0]["warnings"] == []
        for view in views[1:]:
            assert view == views[0], name


@pytest.mark.parametrize("n_classes", [2, 3])
def test_answer_laws_of_neighbours_within_e_epsilon(n_classes):
    # The split is public randomness: condition on it (same seed on both sides);
    # the bound then holds for the mixture over splits too.
    for name, (X, y), (X2, y2) in neighbour_pairs(n_classes):
        for seed in range(3):
            laws = []
            for A, b in ((X, y), (X2, y2)):
                model = _make(n_classes, BudgetAccountant(), random_state=seed).fit(A, b)
                counts = vote_counts(model._teachers, QUERIES, model.classes_)
                laws.append(vote_probabilities(counts, EPSILON))
            loss = np.max(np.abs(np.log(laws[0]) - np.log(laws[1])))
            assert loss <= EPSILON * (1 + 1e-12), (name, seed, loss)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_out_of_domain_refused_alike_and_free(n_classes):
    first, second = _defects(n_classes, 0), _defects(n_classes, 1)
    for defect in first:
        views = [_observe(n_classes, *data) for data in (first[defect], second[defect])]
        assert "exception" in views[0], defect
        assert views[0]["events"] == [] == views[1]["events"]
        assert views[0]["exception"] == views[1]["exception"], defect


@pytest.mark.parametrize("random_state", [None, 3])
def test_saved_model_holds_no_noise_generator(random_state):
    X, y = neighbour_pairs(2)[0][1]
    model = _make(2, BudgetAccountant(), random_state).fit(X, y)
    with pytest.warns(TeachersInPickleWarning):
        data = pickle.dumps(model)
    assert pickle_globals(data) == loaded_globals(data)
    assert _forbidden_globals(pickle_globals(data)) == set()
