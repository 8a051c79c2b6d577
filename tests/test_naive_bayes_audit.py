"""Release audit of DPGaussianNB and DPCategoricalNB: what leaves a fit is public or noisy.

The harness of ``tests/test_release_audit.py`` on these estimators' own releases
(noisy counts, means, variances and category probabilities), on the same
neighbouring data sets (``neighbour_pairs``: a label change, a row far outside the
declared bounds, a declared class present in one row only):

* ~10 fits per side with fresh noise: the same attribute names, the same public
  attributes (``classes_``, ``bounds_``, ``budget_split_``, ``n_categories_``,
  ``privacy_spent_``, ...), releases of the same shapes and dtypes, no warning, the
  same ledger entries; weighted fits (a row's weight a function of the row) too;
* out-of-domain input refused alike and for free, quoting no value;
* the pickle and ``get_params(deep=True)`` hold no generator or NoiseSource;
* ``random_state`` modes: fresh noise differs, generators refused for free, a seed
  reproduces.
"""

import pickle

import numpy as np
import pytest
from test_release_audit import (
    _FORBIDDEN_TYPES,
    N_FITS,
    _defects,
    _describe_value,
    _fit_record,
    _forbidden_globals,
    _leaky_defects,
    _params_objects,
    _row_weights,
    loaded_globals,
    neighbour_pairs,
    pickle_globals,
    reachable_objects,
)

from dpsk import BudgetAccountant, DPCategoricalNB, DPGaussianNB, PrivateFitError

#: The noisy release of each model: compared by shape and dtype only.
RELEASE = {"class_count_", "class_prior_", "theta_", "var_", "class_log_prior_",
           "category_count_", "feature_log_prob_"}


def _as_codes(X):
    """A fixed map of each entry to one of 3 categories (the far row lands in the top one)."""
    return np.digitize(X, [-0.2, 0.2])


def _gnb(**params):
    def make(classes, accountant, random_state=None):
        return DPGaussianNB(bounds=(-1.0, 1.0), classes=classes, accountant=accountant,
                            random_state=random_state, **params)
    return make


def _cnb(**params):
    def make(classes, accountant, random_state=None):
        return DPCategoricalNB(n_categories=3, classes=classes, accountant=accountant,
                               random_state=random_state, **params)
    return make


CONFIGS = [
    ("gnb-pure-binary", _gnb(), 2, False),
    ("gnb-gaussian-3class", _gnb(delta=1e-5), 3, False),
    ("gnb-even-split-priors", _gnb(budget_split=(1, 1, 1), priors=[0.5, 0.5]), 2, False),
    ("cnb-pure-3class", _cnb(), 3, True),
    ("cnb-gaussian-binary", _cnb(delta=1e-5, alpha=0.5), 2, True),
]
IDS = [c[0] for c in CONFIGS]


def _data(X, categorical):
    return _as_codes(X) if categorical else X


def _describe(model):
    out = {}
    for key, value in vars(model).items():
        if key in RELEASE:
            parts = value if isinstance(value, list) else [value]
            out[key] = ("release", tuple((np.shape(v), np.asarray(v).dtype.str) for v in parts))
        else:
            out[key] = _describe_value(value)
    return out


def _release_bytes(model):
    return b"".join(np.asarray(p).tobytes() for key in sorted(RELEASE) if hasattr(model, key)
                    for p in (getattr(model, key) if isinstance(getattr(model, key), list)
                              else [getattr(model, key)]))


def _assert_alike(records, context):
    reference = records[0]
    assert reference.exception is None, (context, reference.exception)
    for i, record in enumerate(records):
        where = f"{context}, fit {i}"
        assert record.exception is None, (where, record.exception)
        assert _describe(record.model) == _describe(reference.model), where
        assert record.warnings == reference.warnings == [], where
        assert record.spends == reference.spends == [record.model.privacy_spent_], where


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("name, make, n_classes, categorical", CONFIGS, ids=IDS)
def test_neighbours_look_the_same(name, make, n_classes, categorical, weighted):
    classes = list(range(n_classes))
    for pair, (X_d, y_d), (X_dp, y_dp) in neighbour_pairs(n_classes):
        records = []
        releases = set()
        for X, y in ((X_d, y_d), (X_dp, y_dp)):
            params = {"sample_weight": _row_weights(X, y)} if weighted else {}
            for _ in range(N_FITS):
                record = _fit_record(lambda acc: make(classes, acc), _data(X, categorical), y,
                                     **params)
                records.append(record)
                releases.add(_release_bytes(record.model))
        _assert_alike(records, f"{name}/{pair}")
        assert list(records[0].model.classes_) == classes
        assert len(releases) == 2 * N_FITS  # fresh noise every fit


@pytest.mark.parametrize("name, make, n_classes, categorical", CONFIGS, ids=IDS)
def test_out_of_domain_refused_alike_and_free(name, make, n_classes, categorical):
    classes = list(range(n_classes))
    first, second = _defects(n_classes, 0), _defects(n_classes, 1)
    for defect in first:
        seen = []
        for X, y in (first[defect], second[defect]):
            if categorical and defect not in ("nan", "inf", "3d-X"):
                X = _as_codes(X)
            record = _fit_record(lambda acc: make(classes, acc), X, y)
            assert record.exception is not None, defect
            assert record.exception[0] is not PrivateFitError, (defect, record.exception)
            assert record.spends == [], defect
            seen.append((record.exception, record.warnings))
        assert seen[0] == seen[1], defect
    for defect in ("1d-X", "string-cell", "complex"):
        seen = []
        for seed in (0, 1):
            record = _fit_record(lambda acc: make(classes, acc),
                                 *_leaky_defects(n_classes, seed)[defect])
            assert record.exception is not None and record.spends == []
            assert "patient" not in record.exception[1]
            seen.append(record.exception)
        assert seen[0] == seen[1], defect


@pytest.mark.parametrize("random_state", [None, 3])
@pytest.mark.parametrize("name, make, n_classes, categorical", CONFIGS, ids=IDS)
def test_saved_model_holds_no_noise_generator(name, make, n_classes, categorical, random_state):
    X, y = neighbour_pairs(n_classes)[0][1]
    model = make(list(range(n_classes)), BudgetAccountant(), random_state).fit(
        _data(X, categorical), y)
    data = pickle.dumps(model)
    found = pickle_globals(data)
    assert found == loaded_globals(data)
    assert _forbidden_globals(found) == set()
    restored = pickle.loads(data)
    for obj in reachable_objects(restored) + _params_objects(restored) + _params_objects(model):
        assert not isinstance(obj, _FORBIDDEN_TYPES), type(obj)


@pytest.mark.parametrize("name, make, n_classes, categorical", CONFIGS, ids=IDS)
def test_random_state_modes(name, make, n_classes, categorical):
    classes = list(range(n_classes))
    X, y = neighbour_pairs(n_classes)[0][1]
    X = _data(X, categorical)
    fresh = [make(classes, BudgetAccountant()).fit(X, y) for _ in range(2)]
    assert _release_bytes(fresh[0]) != _release_bytes(fresh[1])
    for make_rng in (lambda: np.random.default_rng(0), lambda: np.random.RandomState(0),
                     lambda: np.random.SeedSequence(0)):
        accountant = BudgetAccountant()
        with pytest.raises(TypeError):
            make(classes, accountant, random_state=make_rng()).fit(X, y)
        assert accountant.spends == []
    seeded = [make(classes, BudgetAccountant(), random_state=7).fit(X, y) for _ in range(2)]
    assert _release_bytes(seeded[0]) == _release_bytes(seeded[1])
