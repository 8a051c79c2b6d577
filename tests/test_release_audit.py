"""Release audit: what leaves a fit must not depend on the private data.

The library's rule: everything observable after ``fit`` -- the fitted attributes,
the pickle, ``get_params()``, warnings, exceptions and the spend on the ledger --
is a function of the public parameters, the public metadata (n_samples,
n_features, dtypes, declared classes, declared bounds) and the noisy release.
This module checks that rule on neighbouring data sets, estimator by estimator.

Covered here (every configuration in ``AUDITED``):

* neighbours D, D' that differ in one row, three kinds: a label change, a row
  far above ``data_norm`` (clipped), and a row whose label is a declared class
  that occurs nowhere else in D';
* for each pair, ~10 fits per side with fresh noise (``random_state=None``):
  identical fitted attribute names; identical non-release attributes
  (``classes_``, ``n_features_in_``, ``privacy_spent_``, ``candidate_params_``,
  ...); release (``coef_``, ``intercept_``, ``random_weights_``, and for
  DPGridSearch the selected estimator and ``best_index_``/``best_params_``)
  compared by shape and dtype only; identical warnings (none from dpsk with
  declared classes); no exception; identical ledger entries;
* ``feature_names_in_`` with a DataFrame input, and CSR input for the linear models;
* with ``classes=None``: the ClassesFromDataWarning text is the same on D and D';
* out-of-domain input (NaN, inf, label outside the declared classes, wrong
  shapes): the same exception type and message for two different data sets
  with the same defect, and nothing charged;
* the pickle and ``get_params(deep=True)``: no numpy random generator,
  bit generator, SeedSequence, RandomState or ``dpsk.mechanisms._random.NoiseSource``
  (pickle opcodes scanned with ``pickletools.genops``, cross-checked against
  the classes an unpickler actually loads);
* randomness: ``random_state=None`` gives fresh releases, a numpy Generator is
  refused (TypeError) instead of replaying its noise, an int seed reproduces
  the release exactly (documented test mode), and with an int seed the public
  ``random_weights_`` are identical on D and D';
* a pipeline whose bounds are learned privately (``PrivateBoundsScaler`` before
  the model, one ledger): the same neighbour audit, both spends recorded, and
  its pickle scanned the same way;
* regression tests for the five attacks of the earlier audit (replayable noise
  in the saved model; ``n_iter_``; free data-dependent failures; ``classes_``
  from y; the clipping warning) and the smaller ones (DPGridSearch checking
  only the first candidate for learned pipeline steps; kernel frequencies and
  noise sharing one seed; random stopping's number of runs read off journal
  files and printed lines, issue 24, whose full tests are in
  ``tests/test_search_secrets.py``).

* answer-only estimators (``ANSWER_ONLY``: DPStabilityPredictor): fit spends
  nothing, exposes no model, and its public attributes are the same on
  neighbours; the pickle warns and holds no noise generator.

To audit a new estimator, add one ``Config`` line to ``AUDITED``.
"""

import pickle
import pickletools
import warnings
from dataclasses import dataclass, field

import numpy as np
import pytest
from sklearn.base import BaseEstimator
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer, StandardScaler

import dpsk
import dpsk.kernel._random_features as kernel_module
import dpsk.linear_model._base as linear_base
from dpsk import (
    BudgetAccountant,
    DPDecisionTreeClassifier,
    DPGridSearch,
    DPHuberSVM,
    DPKernelClassifier,
    DPLinearSVC,
    DPLogisticRegression,
    DPRandomForestClassifier,
    DPRobustLogisticRegression,
    DPTiltedLogisticRegression,
    PrivateFitError,
)
from dpsk._data._validation import ClassesFromDataWarning
from dpsk.mechanisms._random import NoiseSource
from dpsk.model_selection import SearchCannotPayWarning
from dpsk.pipeline import DataNormWarning
from dpsk.preprocessing import PrivateBoundsScaler, PrivateBoundsWarning


@dataclass(frozen=True)
class Config:
    """One audited estimator configuration.

    ``make(classes, accountant, random_state)`` builds an unfitted estimator;
    ``n_classes`` is 2 or 3 (the declared classes are ``range(n_classes)``).
    """

    name: str
    make: object
    n_classes: int = 2


def _grid(estimator, grid, refit, method="disjoint", **search_params):
    def make(classes, accountant, random_state=None):
        inner = estimator(classes)
        return DPGridSearch(inner, grid, epsilon=1.0, refit=refit, accountant=accountant,
                            random_state=random_state, method=method, **search_params)
    return make


def _pipe(classes):
    # A data-independent step in front of the private model (allowed by default).
    return Pipeline([("pre", FunctionTransformer()),
                     ("clf", DPLogisticRegression(classes=classes, alpha=0.1))])


def _simple(cls, **params):
    def make(classes, accountant, random_state=None):
        return cls(classes=classes, accountant=accountant, random_state=random_state, **params)
    return make


AUDITED = [
    Config("logreg-objective-binary", _simple(DPLogisticRegression, alpha=0.1)),
    Config("logreg-objective-binary-nointercept",
           _simple(DPLogisticRegression, alpha=0.1, fit_intercept=False)),
    Config("logreg-output-binary", _simple(DPLogisticRegression, alpha=0.1, perturbation="output")),
    Config("logreg-output-binary-nointercept",
           _simple(DPLogisticRegression, alpha=0.1, perturbation="output", fit_intercept=False)),
    Config("logreg-objective-3class", _simple(DPLogisticRegression, alpha=0.1), 3),
    Config("logreg-objective-3class-nointercept",
           _simple(DPLogisticRegression, alpha=0.1, fit_intercept=False), 3),
    Config("logreg-output-3class",
           _simple(DPLogisticRegression, alpha=0.1, perturbation="output"), 3),
    Config("logreg-output-3class-nointercept",
           _simple(DPLogisticRegression, alpha=0.1, perturbation="output", fit_intercept=False),
           3),
    Config("huber-objective", _simple(DPHuberSVM, alpha=0.1)),
    Config("huber-output", _simple(DPHuberSVM, alpha=0.1, perturbation="output")),
    Config("kernel-logistic", _simple(DPKernelClassifier, n_components=10, loss="logistic")),
    Config("kernel-huber", _simple(DPKernelClassifier, n_components=10, loss="huber"), 3),
    Config("grid-plain-norefit",
           _grid(lambda c: DPLogisticRegression(classes=c), {"alpha": [0.01, 0.1]}, False)),
    Config("grid-plain-refit",
           _grid(lambda c: DPLogisticRegression(classes=c), {"alpha": [0.01, 0.1]}, True)),
    Config("grid-pipeline-norefit", _grid(_pipe, {"clf__alpha": [0.01, 0.1]}, False), 3),
    Config("grid-pipeline-refit", _grid(_pipe, {"clf__alpha": [0.01, 0.1]}, True)),
    # (epsilon, delta): Gaussian noise.
    Config("logreg-gaussian-output-binary",
           _simple(DPLogisticRegression, alpha=0.1, perturbation="output", delta=1e-5)),
    Config("logreg-gaussian-output-3class",
           _simple(DPLogisticRegression, alpha=0.1, perturbation="output", delta=1e-5), 3),
    Config("logreg-gaussian-objective-binary",
           _simple(DPLogisticRegression, alpha=0.1, delta=1e-5)),
    Config("huber-gaussian-objective-3class", _simple(DPHuberSVM, alpha=0.1, delta=1e-5), 3),
    Config("kernel-gaussian-output",
           _simple(DPKernelClassifier, n_components=10, perturbation="output", delta=1e-5)),
    Config("logreg-gradient-3class",
           _simple(DPLogisticRegression, alpha=0.1, perturbation="gradient", delta=1e-5), 3),
    Config("huber-gradient", _simple(DPHuberSVM, alpha=0.1, perturbation="gradient",
                                     delta=1e-5)),
    # Multinomial (the default for 3 classes above) against one-vs-rest, and the
    # softmax model with two classes.
    Config("logreg-objective-3class-ovr",
           _simple(DPLogisticRegression, alpha=0.1, multi_class="ovr"), 3),
    Config("logreg-output-3class-ovr",
           _simple(DPLogisticRegression, alpha=0.1, perturbation="output", multi_class="ovr"),
           3),
    Config("logreg-multinomial-binary",
           _simple(DPLogisticRegression, alpha=0.1, multi_class="multinomial")),
    Config("kernel-logistic-3class-multinomial",
           _simple(DPKernelClassifier, n_components=10, loss="logistic"), 3),
    Config("logreg-gaussian-objective-3class",
           _simple(DPLogisticRegression, alpha=0.1, delta=1e-5), 3),
    Config("logreg-gaussian-output-3class-ovr",
           _simple(DPLogisticRegression, alpha=0.1, perturbation="output", delta=1e-5,
                   multi_class="ovr"), 3),
    Config("logreg-gradient-3class-ovr",
           _simple(DPLogisticRegression, alpha=0.1, perturbation="gradient", delta=1e-5,
                   multi_class="ovr"), 3),
    Config("grid-stopping-norefit",
           _grid(lambda c: DPLogisticRegression(classes=c), {"alpha": [0.01, 0.1]}, False,
                 method="random-stopping", stop_probability=0.5), 3),
    Config("grid-stopping-refit", _grid(_pipe, {"clf__alpha": [0.01, 0.1]}, True,
                                        method="random-stopping", stop_probability=0.5)),
    Config("grid-gaussian-norefit",
           _grid(lambda c: DPLogisticRegression(classes=c, delta=1e-5), {"alpha": [0.01, 0.1]},
                 False)),
    # Repeat-and-select (Papernot and Steinke 2022): pure and approximate-DP candidates.
    Config("grid-repeat-pure",
           _grid(lambda c: DPLogisticRegression(classes=c), {"alpha": [0.01, 0.1]}, False,
                 method="repeat", delta=1e-5), 3),
    Config("grid-repeat-mixed",
           _grid(lambda c: DPLogisticRegression(classes=c),
                 [{"alpha": [0.01, 0.1], "delta": [0.0, 1e-5]},
                  {"alpha": [0.1], "perturbation": ["gradient", "output"], "delta": [1e-5]}],
                 False, method="repeat", delta=1e-5)),
    # The default grid (param_grid=None): multiples of the rule's alpha, resolved from
    # public sizes, so candidate_params_ is equal on neighbours.
    Config("grid-default-repeat-gaussian",
           _grid(lambda c: DPLogisticRegression(classes=c, delta=1e-5), None, False,
                 method="repeat")),
    # The safe search (the default method): its plan, share and default's index are
    # public; the selection and the refit are the release.
    Config("grid-safe-default", _grid(lambda c: DPLogisticRegression(classes=c), None, False,
                                      method="auto")),
    Config("grid-safe-mixed-3class",
           _grid(lambda c: DPLogisticRegression(classes=c),
                 {"delta": [0.0, 1e-5], "perturbation": ["objective", "output"]}, False,
                 method="safe", delta=1e-5, selection_share=0.3), 3),
    # A grid over what has no rule (the default, gamma=1, added first).
    Config("grid-safe-kernel-gamma",
           _grid(lambda c: DPKernelClassifier(n_components=10, classes=c),
                 {"gamma": [0.5, 2.0]}, False, method="safe")),
    Config("grid-safe-fit-default",
           _grid(lambda c: DPHuberSVM(classes=c), {"alpha": [0.01, 0.1]}, False,
                 method="safe", cannot_pay="fit-default")),
    Config("grid-default-disjoint-refit",
           _grid(lambda c: DPLogisticRegression(classes=c), None, True)),
    # alpha="auto": the rule reads public quantities only, so alpha_ is equal on neighbours.
    Config("logreg-auto-objective-binary", _simple(DPLogisticRegression, alpha="auto")),
    Config("logreg-auto-gaussian-output-3class-ovr",
           _simple(DPLogisticRegression, alpha="auto", perturbation="output", delta=1e-5,
                   multi_class="ovr"), 3),
    Config("logreg-auto-gradient-binary",
           _simple(DPLogisticRegression, alpha="auto", perturbation="gradient", delta=1e-5)),
    Config("huber-auto-gaussian-objective", _simple(DPHuberSVM, alpha="auto", delta=1e-5)),
    Config("robust-auto-binary", _simple(DPRobustLogisticRegression, alpha="auto", radius=0.2)),
    Config("tilted-auto-3class", _simple(DPTiltedLogisticRegression, alpha="auto", tilt=0.5), 3),
    Config("robust-pure-binary", _simple(DPRobustLogisticRegression, alpha=0.1, radius=0.2)),
    Config("robust-gaussian-3class",
           _simple(DPRobustLogisticRegression, alpha=0.1, radius=0.2, delta=1e-5), 3),
    Config("tilted-pure-3class", _simple(DPTiltedLogisticRegression, alpha=0.1, tilt=1.0), 3),
    Config("tilted-gaussian-binary",
           _simple(DPTiltedLogisticRegression, alpha=0.1, tilt=0.5, delta=1e-5)),
    Config("robust-linf-pure-binary",
           _simple(DPRobustLogisticRegression, alpha=0.1, radius=0.2, norm="inf")),
    Config("robust-linf-gaussian-3class",
           _simple(DPRobustLogisticRegression, alpha=0.1, radius=0.2, norm="inf", delta=1e-5), 3),
    Config("svc-pure-3class", _simple(DPLinearSVC, alpha=0.1), 3),
    Config("svc-gaussian-binary", _simple(DPLinearSVC, alpha=0.1, delta=1e-5)),
    # The class prior (docs/privacy.rst, "The class prior"): noisy counts released with
    # every default fit above; here a declared (public) prior, none, and the noisy
    # prior with the Gaussian counts of noisy gradient descent (binary) and one-vs-rest.
    Config("logreg-declared-prior-3class",
           _simple(DPLogisticRegression, class_prior=[0.5, 0.3, 0.2]), 3),
    Config("logreg-no-prior-binary", _simple(DPLogisticRegression, class_prior=None)),
    Config("logreg-prior-gradient-binary",
           _simple(DPLogisticRegression, perturbation="gradient", delta=1e-5)),
    Config("huber-prior-ovr-3class", _simple(DPHuberSVM, perturbation="output"), 3),
    # Trees: declared bounds (the far row is clipped to them); the structure is fresh
    # public randomness, or follows the released split statistics (split_share > 0).
    Config("tree-auto", _simple(DPDecisionTreeClassifier, bounds=(-1, 1))),
    Config("forest-auto-3class", _simple(DPRandomForestClassifier, bounds=(-1, 1)), 3),
    Config("forest-split-stats-disjoint",
           _simple(DPRandomForestClassifier, bounds=(-1, 1), split_share=0.5,
                   partition="disjoint", n_estimators=3, max_depth=2)),
]

#: The noisy release: compared by shape and dtype only (``lower_``/``upper_``:
#: the bounds PrivateBoundsScaler learns; ``class_prior_``: the noisy class prior;
#: ``components_``/``explained_variance_``: DPPCA's directions and noisy eigenvalues;
#: the trees' noisy counts and split statistics; ``prior_fallback_``: the prior check's
#: decision).
RELEASE = {"coef_", "intercept_", "lower_", "upper_", "class_prior_", "prior_fallback_",
           "components_", "explained_variance_", "leaf_counts_", "split_counts_",
           "feature_weights_"}
#: Public randomness drawn fresh at every fit (shape and dtype only).
FRESH_PUBLIC = {"random_weights_", "tree_feature_", "tree_threshold_"}
#: Fitted values of parameters (``alpha_`` for ``alpha``, resolved by the alpha rule from
#: public quantities and the parameter; ``data_norm_`` for ``data_norm``, from the
#: preceding step's public bound; ``method_`` of the private bounds, from the public
#: rule): compared exactly, except in the model DPGridSearch selected, where they are
#: part of its selection.
RESOLVED_PARAMS = {"alpha_", "data_norm_", "method_"}
#: DPGridSearch's private selection (type only; the selected model is a release).
SELECTION = {"best_index_", "best_params_", "best_estimator_", "best_score_",
             "best_alpha_multiplier_"}

N_FITS = 10
N_ROWS, N_FEATURES = 60, 3
DATA_NORM = 1.0


# -- data ---------------------------------------------------------------------------------


def _base_data(n_classes, seed=0, n=N_ROWS):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, N_FEATURES))
    X *= rng.uniform(0.1, 1.0, size=(n, 1)) / np.linalg.norm(X, axis=1, keepdims=True)
    y = rng.integers(0, n_classes, size=n)
    y[:n_classes] = np.arange(n_classes)  # every class occurs in D
    return X, y


def neighbour_pairs(n_classes, seed=0):
    """(name, D, D') pairs of neighbours that differ in row 0 only."""
    X, y = _base_data(n_classes, seed)
    pairs = []
    y_flip = y.copy()
    y_flip[0] = (y[0] + 1) % n_classes
    pairs.append(("label-change", (X, y), (X, y_flip)))
    X_far = X.copy()
    X_far[0] = 1e6 * np.ones(N_FEATURES)  # far above data_norm: clipped silently
    pairs.append(("far-row", (X, y), (X_far, y)))
    # D lacks the last declared class entirely; D' has it in row 0 only.
    new = n_classes - 1
    y_without = np.where(y == new, 0, y)
    y_with = y_without.copy()
    y_with[0] = new
    pairs.append(("new-declared-class", (X, y_without), (X, y_with)))
    return pairs


# -- the harness --------------------------------------------------------------------------


@dataclass
class FitRecord:
    """What an observer sees of one fit."""

    model: object
    description: object
    warnings: list
    exception: tuple
    spends: list = field(default_factory=list)


def _fit_record(estimator_factory, X, y, **fit_params):
    """Fit ``estimator_factory(accountant)`` on (X, y) with its own ledger; record
    the fitted description, every warning, the exception (type, text) and the spends."""
    accountant = BudgetAccountant()
    model = estimator_factory(accountant)
    exception = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            model.fit(X, y, **fit_params)
        except Exception as exc:  # the point is to compare them
            exception = (type(exc), str(exc))
    seen = [(w.category, str(w.message)) for w in caught]
    description = None if exception else describe(model)
    return FitRecord(model, description, seen, exception, accountant.spends)


def describe(obj, selected=False):
    """A comparable picture of a fitted estimator: everything an observer may compare.

    The release is reduced to shape and dtype, as is the private selection of
    DPGridSearch; every other attribute is kept exactly. ``selected`` marks the
    model DPGridSearch chose, whose hyperparameters are part of the selection.
    """
    if isinstance(obj, Pipeline):
        return ("Pipeline", [(name, describe(step, selected)) for name, step in obj.steps])
    if isinstance(obj, BaseEstimator):
        params = set(obj.get_params(deep=False))
        out = {"__class__": type(obj).__name__}
        for key, value in vars(obj).items():
            if key in RELEASE or key in FRESH_PUBLIC:
                out[key] = ("release", np.shape(value), np.asarray(value).dtype.str)
            elif key == "best_estimator_":
                out[key] = describe(value, selected=True)
            elif key in SELECTION:
                out[key] = ("selection", type(value).__name__)
            elif (key in params or key in RESOLVED_PARAMS) and selected:
                # The selected model's hyperparameters, and their resolved values, are
                # part of DPGridSearch's private selection.
                out[key] = ("selected-param", type(value).__name__)
            elif selected and key in ("privacy_spent_", "privacy_event_"):
                # A grid over mechanisms (method="repeat"): the chosen candidate's
                # own cost is a function of which candidate won, part of the release.
                out[key] = ("selected-cost",)
            else:
                out[key] = _describe_value(value)
        return out
    return _describe_value(obj)


def _describe_value(value):
    if isinstance(value, BudgetAccountant):
        return "BudgetAccountant"  # one ledger per data set: identity differs by design
    if isinstance(value, (BaseEstimator, Pipeline)):
        return describe(value)
    if isinstance(value, np.ndarray):
        return ("array", value.shape, value.dtype.str, value.tobytes()
                if value.dtype != object else tuple(map(repr, value)))
    if isinstance(value, dict):
        return {k: _describe_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_describe_value(v) for v in value))
    return (type(value).__name__, repr(value))


#: Warnings whose fixed texts depend on public parameters and shapes only (the
#: model's class and its pipeline's steps; rows, columns and epsilon): allowed,
#: and still compared between neighbours like every other observation.
PUBLIC_WARNINGS = (DataNormWarning, PrivateBoundsWarning, SearchCannotPayWarning)


def _dpsk_warnings(record):
    # A safe search's SearchCannotPayWarning is a fixed text of public quantities,
    # said before the spend, like the two in PUBLIC_WARNINGS; the harness checks
    # they are the same on neighbours.
    return [w for w in record.warnings
            if _is_dpsk_category(w[0]) and not issubclass(w[0], PUBLIC_WARNINGS)]


def _is_dpsk_category(category):
    return category.__module__.startswith("dpsk") or category is UserWarning


def _assert_same_observation(records_d, records_d_prime, context):
    reference = records_d[0]
    assert reference.exception is None, (context, reference.exception)
    for side, records in (("D", records_d), ("D'", records_d_prime)):
        for i, record in enumerate(records):
            where = f"{context}, {side} fit {i}"
            assert record.exception is None, (where, record.exception)
            assert set(vars(record.model)) == set(vars(reference.model)), where
            assert record.description == reference.description, where
            assert record.warnings == reference.warnings, where
            assert record.spends == reference.spends, where


# -- the neighbour audit ------------------------------------------------------------------


@pytest.mark.parametrize("config", AUDITED, ids=[c.name for c in AUDITED])
def test_neighbours_look_the_same(config):
    classes = list(range(config.n_classes))

    def factory(accountant):
        return config.make(classes, accountant)

    for pair_name, (X_d, y_d), (X_dp, y_dp) in neighbour_pairs(config.n_classes):
        records_d = [_fit_record(factory, X_d, y_d) for _ in range(N_FITS)]
        records_dp = [_fit_record(factory, X_dp, y_dp) for _ in range(N_FITS)]
        _assert_same_observation(records_d, records_dp, f"{config.name}/{pair_name}")
        # Declared classes: nothing for dpsk to warn about, on either side.
        assert _dpsk_warnings(records_d[0]) == [], (pair_name, records_d[0].warnings)
        assert records_d[0].spends == [records_d[0].model.privacy_spent_]
        assert list(records_d[0].model.classes_) == classes
        # Fresh noise: ten releases on one data set are not all the same. A prior model
        # released by the prior check is a function of the integer noisy counts, which
        # two fits can share: those are told apart by their models' own noise only.
        kept = [r for r in records_d if not _released_prior_model(r.model)]
        coefs = {_release_bytes(r.model) for r in kept}
        assert len(coefs) == len(kept), pair_name


# Weighted fits (issue 26; docs/privacy.rst, "Weights"): a row's weight is part of
# the row, here a function of the row itself, so the changed row of each neighbour
# pair changes its weight too. class_weight is a parameter (public).
WEIGHTED = [
    Config("weighted-logreg-objective-binary",
           _simple(DPLogisticRegression, alpha=0.1, class_weight={0: 0.1})),
    Config("weighted-logreg-gaussian-output-3class",
           _simple(DPLogisticRegression, alpha=0.1, perturbation="output", delta=1e-5,
                   class_weight={2: 0.5}), 3),
    Config("weighted-logreg-objective-3class-ovr",
           _simple(DPLogisticRegression, alpha=0.1, multi_class="ovr"), 3),
    Config("weighted-logreg-gradient-binary",
           _simple(DPLogisticRegression, alpha=0.1, perturbation="gradient", delta=1e-5)),
    Config("weighted-huber-output", _simple(DPHuberSVM, alpha=0.1, perturbation="output",
                                            class_weight={1: 3.0})),
    Config("weighted-kernel-3class",
           _simple(DPKernelClassifier, n_components=10, class_weight={0: 0.3}), 3),
    Config("weighted-logreg-auto", _simple(DPLogisticRegression, alpha="auto")),
    Config("weighted-robust-l2", _simple(DPRobustLogisticRegression, alpha=0.1, radius=0.2,
                                         class_weight={1: 0.5})),
    Config("weighted-svc-3class", _simple(DPLinearSVC, alpha=0.1, class_weight={0: 0.4}), 3),
    Config("weighted-robust-linf-3class",
           _simple(DPRobustLogisticRegression, alpha=0.1, radius=0.2, norm="inf",
                   delta=1e-5), 3),
    Config("weighted-forest-split-stats",
           _simple(DPRandomForestClassifier, bounds=(-1, 1), split_share=0.5), 3),
]


def _row_weights(X, y):
    """A weight in [0, 1] per row, computed from that row alone (0 for some rows)."""
    return np.floor(np.abs(X[:, 0]) * 10.0 + y) % 4 / 3.0


@pytest.mark.parametrize("config", WEIGHTED, ids=[c.name for c in WEIGHTED])
def test_weighted_neighbours_look_the_same(config):
    classes = list(range(config.n_classes))

    def factory(accountant):
        return config.make(classes, accountant)

    for pair_name, (X_d, y_d), (X_dp, y_dp) in neighbour_pairs(config.n_classes):
        s_d, s_dp = _row_weights(X_d, y_d), _row_weights(X_dp, y_dp)
        assert set(np.unique(s_d)) > {0.0, 1.0}  # zeros, ones and fractions
        records_d = [_fit_record(factory, X_d, y_d, sample_weight=s_d) for _ in range(N_FITS)]
        records_dp = [_fit_record(factory, X_dp, y_dp, sample_weight=s_dp)
                      for _ in range(N_FITS)]
        _assert_same_observation(records_d, records_dp, f"{config.name}/{pair_name}")
        model = records_d[0].model
        assert _dpsk_warnings(records_d[0]) == [], (pair_name, records_d[0].warnings)
        assert records_d[0].spends == [model.privacy_spent_]
        # The parameter is carried as given; no fitted attribute holds a weight
        # statistic (the same attributes as an unweighted fit).
        assert model.get_params()["class_weight"] == config.make(classes, None).class_weight
        unweighted = _fit_record(factory, X_d, y_d).model
        assert set(vars(model)) == set(vars(unweighted))
        kept = [r for r in records_d if not _released_prior_model(r.model)]
        assert len({_release_bytes(r.model) for r in kept}) == len(kept), pair_name


def _released_model(model):
    if isinstance(model, DPGridSearch):
        model = model.best_estimator_
    if isinstance(model, Pipeline):
        model = model[-1]
    return model


def _released_prior_model(model):
    return bool(getattr(_released_model(model), "prior_fallback_", False))


def _release_bytes(model):
    model = _released_model(model)
    if hasattr(model, "leaf_counts_"):
        return model.leaf_counts_.tobytes()
    return model.coef_.tobytes() + model.intercept_.tobytes()


@pytest.mark.parametrize("config", AUDITED, ids=[c.name for c in AUDITED])
def test_dataframe_feature_names(config):
    pd = pytest.importorskip("pandas")
    classes = list(range(config.n_classes))
    (_, (X_d, y_d), (X_dp, y_dp)) = neighbour_pairs(config.n_classes)[0]
    columns = [f"f{i}" for i in range(N_FEATURES)]
    records = [
        _fit_record(lambda acc: config.make(classes, acc), pd.DataFrame(X, columns=columns), y)
        for X, y in ((X_d, y_d), (X_dp, y_dp)) for _ in range(3)
    ]
    _assert_same_observation(records[:3], records[3:], config.name)
    assert list(records[0].model.feature_names_in_) == columns


@pytest.mark.parametrize("config", AUDITED[::3], ids=[c.name for c in AUDITED[::3]])
def test_classes_from_data_warning_is_fixed_text(config):
    # classes=None is the documented leak of the label set; the warning itself
    # must still not depend on the data (same text when the label set is the same).
    (_, (X_d, y_d), (X_dp, y_dp)) = neighbour_pairs(config.n_classes)[0]
    rec_d = _fit_record(lambda acc: config.make(None, acc), X_d, y_d)
    rec_dp = _fit_record(lambda acc: config.make(None, acc), X_dp, y_dp)
    assert rec_d.exception is None and rec_dp.exception is None
    assert rec_d.warnings == rec_dp.warnings
    categories = [category for category, _ in rec_d.warnings]
    assert ClassesFromDataWarning in categories
    assert rec_d.description == rec_dp.description


SPARSE_OK = [c for c in AUDITED if c.name.startswith(("logreg", "huber"))]


@pytest.mark.parametrize("config", SPARSE_OK, ids=[c.name for c in SPARSE_OK])
def test_sparse_neighbours_look_the_same(config):
    # The linear models also take CSR input, which has its own clipping path.
    sparse = pytest.importorskip("scipy.sparse")
    classes = list(range(config.n_classes))
    for pair_name, (X_d, y_d), (X_dp, y_dp) in neighbour_pairs(config.n_classes):
        records = [_fit_record(lambda acc: config.make(classes, acc), sparse.csr_matrix(X), y)
                   for X, y in ((X_d, y_d), (X_dp, y_dp)) for _ in range(3)]
        _assert_same_observation(records[:3], records[3:], f"{config.name}/{pair_name}/csr")
        assert _dpsk_warnings(records[0]) == []


# -- out-of-domain input ------------------------------------------------------------------


def _defects(n_classes, seed):
    """Out-of-domain versions of a data set; the defect sits in a seed-dependent row."""
    X, y = _base_data(n_classes, seed)
    row = 5 + seed
    out = {}
    X_nan = X.copy()
    X_nan[row, 1] = np.nan
    out["nan"] = (X_nan, y)
    X_inf = X.copy()
    X_inf[row, 0] = np.inf
    out["inf"] = (X_inf, y)
    y_bad = y.copy()
    y_bad[row] = n_classes + 7  # not a declared class
    out["undeclared-label"] = (X, y_bad)
    out["short-y"] = (X, y[:-1])
    out["3d-X"] = (X[:, :, None], y)
    out["2d-y"] = (X, np.column_stack([y, y]))
    return out


@pytest.mark.parametrize("config", AUDITED, ids=[c.name for c in AUDITED])
def test_out_of_domain_refused_alike_and_free(config):
    classes = list(range(config.n_classes))
    first, second = _defects(config.n_classes, 0), _defects(config.n_classes, 1)
    for defect in first:
        records = [_fit_record(lambda acc: config.make(classes, acc), X, y)
                   for X, y in (first[defect], second[defect])]
        for record in records:
            assert record.exception is not None, defect
            assert record.exception[0] is not PrivateFitError, (defect, record.exception)
            assert record.spends == [], defect
        assert records[0].exception == records[1].exception, defect
        assert records[0].warnings == records[1].warnings, defect


def _leaky_defects(n_classes, seed):
    """Out-of-domain inputs whose scikit-learn refusal message quotes the input."""
    X, y = _base_data(n_classes, seed)
    X_str = X.astype(object)
    X_str[3, 1] = f"patient-{seed}"  # a stray string cell, e.g. a name
    X_complex = X.astype(complex)
    X_complex[3, 1] += 1j
    return {"1d-X": (X[:, 0], y), "string-cell": (X_str, y), "complex": (X_complex, y)}


@pytest.mark.parametrize("defect", ["1d-X", "string-cell", "complex"])
@pytest.mark.parametrize("config", AUDITED, ids=[c.name for c in AUDITED])
def test_refusal_message_does_not_quote_the_data(config, defect):
    classes = list(range(config.n_classes))
    records = [_fit_record(lambda acc: config.make(classes, acc), *_leaky_defects(
        config.n_classes, seed)[defect]) for seed in (0, 1)]
    for record in records:
        assert record.exception is not None and record.spends == []
        assert "patient" not in record.exception[1]
    assert records[0].exception == records[1].exception


# -- the saved model ----------------------------------------------------------------------

_FORBIDDEN_TYPES = (np.random.Generator, np.random.BitGenerator, np.random.SeedSequence,
                    np.random.RandomState, NoiseSource)


def pickle_globals(data):
    """(module, name) of every GLOBAL / STACK_GLOBAL in a pickle, via pickletools.

    STACK_GLOBAL takes its two strings from the stack, where the pickler may
    have put them by memo reference (BINGET), so a small model of the string
    pushes and of the memo is kept.
    """
    found, memo, stack = set(), {}, []
    string_ops = {"SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "UNICODE",
                  "SHORT_BINSTRING", "BINSTRING", "STRING"}
    for op, arg, _ in pickletools.genops(data):
        if op.name in ("FRAME", "PROTO", "MARK"):
            continue
        if op.name == "GLOBAL":
            module, name = arg.split(" ", 1)
            found.add((module, name))
            stack.append(None)
        elif op.name == "STACK_GLOBAL":
            module, name = stack[-2], stack[-1]
            assert isinstance(module, str) and isinstance(name, str), "lost track of the stack"
            found.add((module, name))
            stack.append(None)
        elif op.name in string_ops:
            stack.append(arg)
        elif op.name in ("BINGET", "LONG_BINGET", "GET"):
            stack.append(memo.get(arg))
        elif op.name == "MEMOIZE":
            memo[len(memo)] = stack[-1] if stack else None
        elif op.name in ("BINPUT", "LONG_BINPUT", "PUT"):
            memo[arg] = stack[-1] if stack else None
        else:
            stack.append(None)
    return found


def loaded_globals(data):
    """The classes and functions an unpickler actually looks up (cross-check)."""
    seen = set()

    class Recorder(pickle.Unpickler):
        def find_class(self, module, name):
            seen.add((module, name))
            return super().find_class(module, name)

    import io
    Recorder(io.BytesIO(data)).load()
    return seen


def _forbidden_globals(globals_):
    return {(m, n) for m, n in globals_
            if m.startswith("numpy.random") or m.startswith("dpsk.mechanisms._random")
            or n in ("NoiseSource", "Generator", "RandomState", "SeedSequence")}


def reachable_objects(root, limit=100000):
    """Every object reachable from ``root`` through attributes and containers."""
    seen, todo, out = set(), [root], []
    while todo and len(out) < limit:
        obj = todo.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        out.append(obj)
        if isinstance(obj, dict):
            todo.extend(obj.keys())
            todo.extend(obj.values())
        elif isinstance(obj, (list, tuple, set, frozenset)):
            todo.extend(obj)
        elif isinstance(obj, np.ndarray):
            if obj.dtype == object:
                todo.extend(obj.ravel().tolist())
        elif hasattr(obj, "__dict__") and not isinstance(obj, type):
            todo.extend(vars(obj).values())
    return out


def _params_objects(model):
    return reachable_objects(model.get_params(deep=True))


@pytest.mark.parametrize("config", AUDITED, ids=[c.name for c in AUDITED])
@pytest.mark.parametrize("random_state", [None, 3])
def test_saved_model_holds_no_noise_generator(config, random_state):
    # The attacker's script: pickle the released model, unpickle it, and look
    # for anything that could regenerate the noise.
    X, y = _base_data(config.n_classes)
    model = config.make(list(range(config.n_classes)), BudgetAccountant(),
                        random_state=random_state).fit(X, y)
    data = pickle.dumps(model)
    from_opcodes = pickle_globals(data)
    assert from_opcodes == loaded_globals(data)  # the opcode scan misses nothing
    assert _forbidden_globals(from_opcodes) == set()
    restored = pickle.loads(data)
    for obj in reachable_objects(restored) + _params_objects(restored) + _params_objects(model):
        assert not isinstance(obj, _FORBIDDEN_TYPES), type(obj)


def test_pickle_scan_finds_a_planted_generator():
    # Power check of the scan: a Generator (and a NoiseSource) hidden in a
    # model's __dict__ must be found by both scans.
    model = DPLogisticRegression(classes=[0, 1], accountant=BudgetAccountant())
    model._hidden = [{"g": np.random.default_rng(0)}, NoiseSource.seeded(1)]
    data = pickle.dumps(model)
    assert pickle_globals(data) == loaded_globals(data)
    found = _forbidden_globals(pickle_globals(data))
    assert any(m.startswith("numpy.random") for m, _ in found)
    assert ("dpsk.mechanisms._random", "NoiseSource") in found
    assert any(isinstance(o, np.random.Generator) for o in reachable_objects(model))


# -- randomness modes ---------------------------------------------------------------------


@pytest.mark.parametrize("config", AUDITED, ids=[c.name for c in AUDITED])
def test_random_state_modes(config):
    classes = list(range(config.n_classes))
    X, y = _base_data(config.n_classes)
    (_, _, (X_dp, y_dp)) = neighbour_pairs(config.n_classes)[0]
    # Fresh noise: two fits on the same data differ.
    fresh = [config.make(classes, BudgetAccountant()).fit(X, y) for _ in range(2)]
    assert _release_bytes(fresh[0]) != _release_bytes(fresh[1])
    # A Generator with a known state is refused, before anything is spent.
    for make_rng in (lambda: np.random.default_rng(0), lambda: np.random.RandomState(0),
                     lambda: np.random.SeedSequence(0)):
        accountant = BudgetAccountant()
        with pytest.raises(TypeError):
            config.make(classes, accountant, random_state=make_rng()).fit(X, y)
        assert accountant.spends == []
    # An int seed reproduces exactly (documented test mode, not private).
    seeded = [config.make(classes, BudgetAccountant(), random_state=7).fit(X, y)
              for _ in range(2)]
    assert _release_bytes(seeded[0]) == _release_bytes(seeded[1])
    # ... and the public randomness does not depend on the data.
    other = config.make(classes, BudgetAccountant(), random_state=7).fit(X_dp, y_dp)
    inner = [_final(m) for m in (seeded[0], other)]
    if hasattr(inner[0], "random_weights_"):
        np.testing.assert_array_equal(inner[0].random_weights_, inner[1].random_weights_)
    if getattr(inner[0], "split_share_", None) == 0:  # a tree structure from public randomness
        np.testing.assert_array_equal(inner[0].tree_threshold_, inner[1].tree_threshold_)


def _final(model):
    if isinstance(model, DPGridSearch):
        model = model.best_estimator_
    return model[-1] if isinstance(model, Pipeline) else model


# -- regression tests for the attacks of the earlier audit ----------------------------------


def _binary():
    return _base_data(2)


def test_attack_noise_replay_from_saved_model():
    # Attack 1: the saved model carried the noise generator. Fit with the
    # default (secure) noise, save, load, and try to redraw the noise from
    # anything inside: there is nothing to redraw it from.
    X, y = _binary()
    model = DPLogisticRegression(classes=[0, 1], accountant=BudgetAccountant()).fit(X, y)
    restored = pickle.loads(pickle.dumps(model))
    assert restored.get_params()["random_state"] is None
    candidates = [o for o in reachable_objects(restored)
                  if hasattr(o, "standard_normal") or hasattr(o, "bit_generator")
                  or hasattr(o, "generate_state") or hasattr(o, "gamma")
                  or hasattr(o, "randbits") or hasattr(o, "_draw")]
    assert candidates == []


def _tail_release(point, k, sigma, grid, bits):
    """Releases of ``point + sigma G`` with ``G`` conditioned on ``floor(|G|) = k``.

    Steps 3-5 of Karney's Algorithm N with ``k`` fixed draw the fraction of
    ``|G|`` given its integer part exactly, so the far tail is reached without
    waiting for it; the draw goes through the real release (add_on_grid).
    """
    import dpsk.mechanisms._samplers as samplers
    from dpsk.mechanisms._exact import URand, _bernoulli_b

    def fraction():
        while True:
            x = URand()
            if all(_bernoulli_b(k, x, bits) for _ in range(k + 1)):
                return x

    draw = samplers._GaussianDraw.__new__(samplers._GaussianDraw)
    draw.bits, draw.sigma, draw.precision = bits, float(sigma).as_integer_ratio(), 0
    draw.normals = [(False, k, fraction()) for _ in point]
    draw.refine(samplers.FIRST_PRECISION)
    noise = np.zeros(len(point)).view(samplers.ExactNoise)
    noise._draw = draw
    return samplers.add_on_grid(point, noise, grid)


@pytest.mark.parametrize("k", [5, 8])
def test_attack_unreachable_tail_cells(k):
    # The audit's attack: with noise from inverted 52-bit uniforms, a Gaussian
    # coordinate beyond ~4.5 sigma lands on only some of the release grid's
    # cells (consecutive noise values are sigma 2^-52 / phi(z) apart, 2^-4.5
    # sigma at 8 sigma), so an attacker who knows both neighbours' solver
    # points checks whether release - k_D' is a cell the sampler can produce.
    # With exact noise every cell is reached at its rate: the residues of
    # release - k_D' modulo 256, at the release grid's relative fineness, are
    # uniform under D, in the far tail.
    from scipy import stats

    from dpsk.mechanisms._exact import BitStream
    from dpsk.mechanisms._noise import GRID_FRACTION

    sigma, shift = 1.0, 0.37  # the neighbours' solver points, 0.37 sigma apart
    grid = GRID_FRACTION * sigma
    point = np.full(2000, 0.123456789)
    released = _tail_release(point, k, sigma, grid, BitStream(NoiseSource.seeded(50 + k)))
    k_d_prime = round((0.123456789 + shift) / grid)
    residues = (np.rint(released / grid).astype(np.int64) - k_d_prime) % 256
    assert stats.chisquare(np.bincount(residues, minlength=256)).pvalue > 1e-3


def test_attack_iteration_count_is_gone():
    # Attack 2: n_iter_ was a noise-free function of the data.
    X, y = _binary()
    for make in (DPLogisticRegression, DPHuberSVM, DPKernelClassifier):
        model = make(classes=[0, 1], accountant=BudgetAccountant()).fit(X, y)
        assert not hasattr(model, "n_iter_")
        assert "max_iter" not in model.get_params()
        assert not any(k.startswith("n_iter") for k in vars(model))


@pytest.mark.parametrize("perturbation", [
    "output",
    "objective",
])
def test_attack_data_dependent_failure_hard_huber(perturbation):
    # Attack 3: a hard problem (tiny h and alpha) failed on D' but not on D, and
    # the failure was free. Both must succeed now and look alike.
    (_, (X_d, y_d), (X_dp, y_dp)) = neighbour_pairs(2)[0]

    def factory(acc):
        return DPHuberSVM(h=1e-4, alpha=1e-4, perturbation=perturbation, classes=[0, 1],
                          accountant=acc)

    _assert_same_observation([_fit_record(factory, X_d, y_d) for _ in range(3)],
                             [_fit_record(factory, X_dp, y_dp) for _ in range(3)],
                             "hard Huber")


def test_attack_failure_after_spend_is_charged_and_opaque(monkeypatch):
    # Attack 3, the other half: if the release fails anyway, the observer learns
    # only a fixed message, and the budget is charged.
    X, y = _binary()

    def failing(Z, *args, **kwargs):
        raise ArithmeticError(f"secret margin {float(Z[0, 0])!r}")

    monkeypatch.setattr(linear_base, "private_erm", failing)
    messages = []
    for X_used in (X, X[::-1].copy()):
        accountant = BudgetAccountant()
        model = DPLogisticRegression(classes=[0, 1], accountant=accountant, epsilon=0.5)
        with pytest.raises(PrivateFitError) as info:
            model.fit(X_used, y)
        assert info.value.__cause__ is None and info.value.__context__ is None
        assert "secret" not in str(info.value)
        assert accountant.spends == [(0.5, 0.0)]
        assert not hasattr(model, "coef_")
        messages.append(str(info.value))
    assert messages[0] == messages[1]


def test_attack_classes_from_labels():
    # Attack 4: one row's label becoming a new (declared) class changed classes_
    # and the number of one-vs-rest models.
    (_, (X_d, y_d), (X_dp, y_dp)) = neighbour_pairs(3)[2]
    assert 2 not in y_d and list(y_dp).count(2) == 1
    shapes = set()
    for X, y in ((X_d, y_d), (X_dp, y_dp)):
        model = DPLogisticRegression(classes=[0, 1, 2], accountant=BudgetAccountant()).fit(X, y)
        shapes.add((tuple(model.classes_), model.coef_.shape, model.intercept_.shape))
    assert shapes == {((0, 1, 2), (3, N_FEATURES), (3,))}


def test_attack_clipping_warning():
    # Attack 5: the clipping warning counted clipped rows. No warning text may
    # differ between D and a D' with one row far outside data_norm.
    (_, (X_d, y_d), (X_dp, y_dp)) = neighbour_pairs(2)[1]
    for make in (DPLogisticRegression, DPHuberSVM, DPKernelClassifier):
        seen = [_dpsk_warnings(_fit_record(
                    lambda acc: make(classes=[0, 1], accountant=acc), X, y))
                for X, y in ((X_d, y_d), (X_dp, y_dp))]
        assert seen == [[], []]


def test_attack_grid_learned_step_in_later_candidate():
    # Only the first candidate used to be checked for learned pipeline steps.
    X, y = _binary()
    accountant = BudgetAccountant()
    search = DPGridSearch(
        Pipeline([("pre", FunctionTransformer()), ("clf", DPLogisticRegression(classes=[0, 1]))]),
        {"pre": [FunctionTransformer(), StandardScaler()]}, accountant=accountant,
    )
    with pytest.raises(ValueError, match="learn"):
        search.fit(X, y)
    assert accountant.spends == []
    assert not hasattr(search, "best_estimator_")


def _stopping_search_sees(monkeypatch, n_runs, estimator, journal_dir):
    """Fit a random-stopping search made to run ``n_runs`` times in worker processes;
    return the journal files it created and what it printed or logged."""
    import logging

    import joblib

    import dpsk.accounting._journal as journal_module
    from dpsk.model_selection import _search

    monkeypatch.setattr(_search, "random_stopping_plan",
                        lambda m, gamma, rng: np.arange(n_runs) % m)
    created = []
    real = journal_module._Journal.create.__func__
    monkeypatch.setattr(journal_module._Journal, "create",
                        classmethod(lambda cls, events: created.append(1) or real(cls, events)))
    monkeypatch.setenv("DPSK_JOURNAL_DIR", str(journal_dir))
    X, y = _binary()
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    logging.getLogger().addHandler(handler)
    try:
        with joblib.parallel_config(backend="loky"):
            DPGridSearch(estimator, {"clf__alpha": [0.01, 0.1]}, method="random-stopping",
                         n_jobs=2, accountant=BudgetAccountant()).fit(X, y)
    finally:
        logging.getLogger().removeHandler(handler)
    return len(created), sorted(journal_dir.iterdir()), records


def test_attack_search_run_count_through_journal_files(monkeypatch, tmp_path, capfd):
    # Issue 24, break 3: each run's throwaway ledger, pickled to a worker, made a
    # journal file, so counting new files gave random stopping's secret K. And
    # break 4: an inner Pipeline(verbose=True) printed one line per run.
    # Each observation is read on its own, so a message from outside the search (a
    # library warning from a pool process an earlier test started) shows up in the
    # failure rather than as an unexplained mismatch. The leak is a difference between
    # one run and six; journal files and dpsk's or the pipeline's lines are leaks alone.
    # Worker processes an earlier test left running print when they stop (coverage's
    # exit report in CI's coverage stage), at a time of their choosing, so the pool is
    # shut down first and warmed by one unmeasured search: both measured searches then
    # use the same workers, and only the search's own output can tell them apart.
    from joblib.externals.loky import get_reusable_executor

    get_reusable_executor().shutdown(wait=True)
    (tmp_path / "warm-up").mkdir()
    _stopping_search_sees(monkeypatch, 1, _pipe([0, 1]), tmp_path / "warm-up")
    capfd.readouterr()
    seen = []
    for n_runs in (1, 6):
        journal_dir = tmp_path / f"runs-{n_runs}"
        journal_dir.mkdir()
        created, files, records = _stopping_search_sees(
            monkeypatch, n_runs, _pipe([0, 1]), journal_dir)
        out, err = capfd.readouterr()
        seen.append((created, files, [(r.name, r.getMessage()) for r in records], out, err))
    assert seen[0] == seen[1], seen
    created, files, records, out, err = seen[1]
    assert (created, files) == (0, []), seen
    assert not [name for name, _ in records if name.split(".")[0] in ("dpsk", "sklearn")], seen
    assert "Pipeline" not in out + err and "dpsk" not in out + err, seen
    verbose = _pipe([0, 1]).set_params(verbose=True)
    accountant = BudgetAccountant()
    with pytest.raises(ValueError, match="print"):
        DPGridSearch(verbose, {"clf__alpha": [0.01, 0.1]}, accountant=accountant).fit(*_binary())
    assert accountant.spends == []


def test_attack_kernel_frequencies_independent_of_noise(monkeypatch):
    # The frequencies and the noise shared one seed, so publishing the
    # frequencies published the noise stream. Swap the noise source: the
    # frequencies must not move, the release must.
    X, y = _binary()
    releases = []
    for noise_seed in (1, 2):
        # The kernel's noise comes from the shared linear fit (_fit_linear).
        monkeypatch.setattr(linear_base, "noise_source",
                            lambda random_state, s=noise_seed: NoiseSource.seeded(s))
        # Without the prior check, which may release the same prior model for both.
        model = DPKernelClassifier(n_components=10, classes=[0, 1], random_state=5,
                                   accountant=BudgetAccountant(), class_prior=None).fit(X, y)
        releases.append(model)
    np.testing.assert_array_equal(releases[0].random_weights_, releases[1].random_weights_)
    assert not np.array_equal(releases[0].coef_, releases[1].coef_)
    expected = kernel_module.sample_frequencies(
        "rbf", 1.0, 5, N_FEATURES, dpsk.mechanisms._random.public_rng(5))
    np.testing.assert_array_equal(releases[0].random_weights_, expected)


# -- private bounds before the model --------------------------------------------------


def _bounds_pipeline(classes, accountant, random_state=None, method="quantiles"):
    return Pipeline([
        ("bounds", PrivateBoundsScaler(epsilon=0.5, accountant=accountant, method=method,
                                       random_state=random_state)),
        ("clf", DPLogisticRegression(classes=classes, alpha=0.1, accountant=accountant,
                                     data_norm=np.sqrt(N_FEATURES), random_state=random_state)),
    ])


@pytest.mark.parametrize("method", ["quantiles", "median"])
@pytest.mark.parametrize("n_classes", [2, 3])
def test_private_bounds_pipeline_neighbours_look_the_same(n_classes, method):
    classes = list(range(n_classes))
    for pair_name, (X_d, y_d), (X_dp, y_dp) in neighbour_pairs(n_classes):
        records = [[_fit_record(lambda acc: _bounds_pipeline(classes, acc, method=method),
                                X, y)
                    for _ in range(N_FITS)] for X, y in ((X_d, y_d), (X_dp, y_dp))]
        _assert_same_observation(*records, f"bounds-pipeline/{method}/{pair_name}")
        first = records[0][0]
        # Only the rule's warning (public numbers: rows, columns, epsilon), if any.
        assert {category for category, _ in first.warnings} <= {PrivateBoundsWarning}, (
            pair_name, first.warnings)
        assert first.spends == [(0.5, 0.0), (1.0, 0.0)]
        bounds = {r.model[0].lower_.tobytes() + r.model[0].upper_.tobytes() +
                  r.model[-1].coef_.tobytes() for r in records[0]}
        assert len(bounds) == N_FITS, pair_name


@pytest.mark.parametrize("random_state", [None, 3])
def test_private_bounds_pipeline_saved_holds_no_noise_generator(random_state):
    X, y = _base_data(2)
    model = _bounds_pipeline([0, 1], BudgetAccountant(), random_state).fit(X, y)
    data = pickle.dumps(model)
    assert pickle_globals(data) == loaded_globals(data)
    assert _forbidden_globals(pickle_globals(data)) == set()
    for obj in reachable_objects(pickle.loads(data)) + _params_objects(model):
        assert not isinstance(obj, _FORBIDDEN_TYPES), type(obj)


# -- answer-only estimators ---------------------------------------------------------------
#
# DPStabilityPredictor and DPPredictionEnsemble release answers, not a model:
# ``fit`` spends nothing and keeps its model in one private attribute. Their
# answer audits (laws on neighbours, spends per row, refusals) are in
# tests/test_prediction_audit.py and tests/test_stability_prediction.py; this
# entry holds them to the fitted-model part of the rule above.

ANSWER_ONLY = {
    "stability": (lambda acc: dpsk.DPStabilityPredictor(alpha=0.1, classes=[0, 1],
                                                        accountant=acc), "_weights"),
    "stability-nointercept": (lambda acc: dpsk.DPStabilityPredictor(
        alpha=0.1, classes=[0, 1], fit_intercept=False, accountant=acc), "_weights"),
}


@pytest.mark.parametrize("name", sorted(ANSWER_ONLY))
def test_answer_only_fit_looks_the_same_on_neighbours(name):
    factory, secret = ANSWER_ONLY[name]
    for pair_name, (X_d, y_d), (X_dp, y_dp) in neighbour_pairs(2):
        records = [_fit_record(factory, X, y) for X, y in ((X_d, y_d), (X_dp, y_dp))]
        for record in records:
            assert record.exception is None, (pair_name, record.exception)
            assert record.spends == []  # fit releases nothing
            assert _dpsk_warnings(record) == []
            assert not hasattr(record.model, "coef_")
            record.description.pop(secret)
        assert records[0].description == records[1].description, pair_name
        with pytest.warns(UserWarning, match="Pickling a fitted"):
            data = pickle.dumps(records[0].model)
        assert _forbidden_globals(pickle_globals(data)) == set()
