"""Regression tests for the findings of an adversarial review of the release rule.

Each test states the property that should hold, as the attacker's script would
check it; each failed on the reviewed version:

1. the release grid clipped the noise, so a huge draw left the minimiser
   readable in the release;
2. a ColumnTransformer stored a data-dependent density bit (``sparse_output_``);
3. DPGridSearch let data-dependent warnings through (its input checks, its
   worker processes);
4. at tiny epsilon the solver's point left the radius the residual noise covers;
5. the kernel model's projections could overflow on one neighbour only.
"""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

from dpsk import BudgetAccountant, DPLogisticRegression, PrivateFitError, check_pipeline
from dpsk.kernel import DPKernelClassifier
from dpsk.mechanisms._noise import _GRID_INT_LIMIT, add_on_grid
from dpsk.model_selection import DPGridSearch


def test_add_on_grid_never_clips_the_noise():
    grid = 1.0
    point = np.array([0.0, 2.0**20])  # a multiple of the float spacing at 2^61
    noise = np.array([4.0 * _GRID_INT_LIMIT, -4.0 * _GRID_INT_LIMIT])  # a tail draw
    released = add_on_grid(point, noise, grid)
    # If the noise is clipped, release - (+-limit) is exactly the rounded point.
    assert not np.array_equal(released - np.sign(noise) * _GRID_INT_LIMIT * grid, point)


def test_small_epsilon_release_hides_the_minimiser():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 1000))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = (X[:, 0] > 0).astype(int)
    # Seeded: at this epsilon the noise coordinates are themselves of the order of
    # the old clipping limit, so with fresh noise a coordinate lands within 0.1%
    # of it by chance (4 fits in 20) and the check below would be flaky.
    clf = DPLogisticRegression(epsilon=1e-7, alpha=1e-2, perturbation="output",
                               fit_intercept=False, classes=[0, 1], random_state=0,
                               accountant=BudgetAccountant()).fit(X, y)
    from dpsk.mechanisms._noise import release_grid
    limit = _GRID_INT_LIMIT * release_grid(2.0 / (200 * 1e-2), 1000)
    at_clip = np.isclose(np.abs(clf.coef_.ravel()), limit, rtol=1e-3)
    assert not at_clip.any()
    # Clipped noise could never carry a release beyond the limit; unclipped noise
    # does for most coordinates.
    assert np.sum(np.abs(clf.coef_.ravel()) > 1.01 * limit) > 500


def _ct_pipe(final):
    return make_pipeline(ColumnTransformer([("keep", "passthrough", list(range(5)))],
                                           sparse_threshold=0.3), final)


def _density_neighbours():
    rng = np.random.default_rng(0)
    dense = np.zeros((40, 5))
    idx = rng.choice(200, 60, replace=False)  # density exactly 0.30
    dense.flat[idx] = 0.5
    dense2 = dense.copy()
    dense2.flat[idx[0]] = 0.0                  # one row changed: density 0.295
    return sp.csr_matrix(dense), sp.csr_matrix(dense2), np.arange(40) % 2


def test_columntransformer_sparse_output_not_released():
    # The density bit (sparse_output_) is learned from the data: such a column
    # transformer is reported, and the search refuses it before spending.
    X, X2, y = _density_neighbours()
    pipe = _ct_pipe(DPLogisticRegression(classes=[0, 1]))
    assert check_pipeline(pipe) != []
    for data in (X, X2):
        acc = BudgetAccountant()
        with pytest.raises(ValueError, match="sparse_threshold"):
            DPGridSearch(pipe, {"dplogisticregression__alpha": [1e-2, 1e-1]},
                         refit=True, accountant=acc).fit(data, y)
        assert acc.spends == []


def test_columntransformer_no_free_data_dependent_refusal():
    X, X2, y = _density_neighbours()
    pipe = _ct_pipe(DPKernelClassifier(classes=[0, 1]))
    outcomes = []
    for data in (X, X2):
        acc = BudgetAccountant()
        try:
            DPGridSearch(pipe, {"dpkernelclassifier__alpha": [1e-2, 1e-1]},
                         accountant=acc).fit(data, y)
            outcomes.append("fitted")
        except Exception as exc:  # noqa: BLE001
            outcomes.append((type(exc).__name__, acc.total()))
    assert outcomes[0] == outcomes[1]


def test_grid_search_emits_no_data_dependent_warning():
    rng = np.random.default_rng(0)
    X = np.abs(rng.normal(size=(60, 2)))
    y = np.arange(60) % 2
    X2 = X.copy()
    X2[0, 0] = -1.0
    pipe = make_pipeline(FunctionTransformer(np.square, inverse_func=np.sqrt),
                         DPLogisticRegression(classes=[0, 1], data_norm=10.0))
    seen = []
    for data in (X, X2):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            try:
                DPGridSearch(pipe, {"dplogisticregression__alpha": [1e-2, 1e-1]},
                             accountant=BudgetAccountant()).fit(data, y)
                outcome = "fitted"
            except ValueError as exc:  # the inverse check is a learning step: refused
                outcome = str(exc)
        seen.append((outcome, sorted(str(x.message) for x in w)))
    assert seen[0] == seen[1]


def test_kernel_does_not_fail_on_one_neighbour_only():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(20, 2))
    y = np.arange(20) % 2
    X2 = X.copy()
    X2[0] = [1e200, 0.0]
    outcomes = []
    for data in (X, X2):
        acc = BudgetAccountant()
        try:
            DPKernelClassifier(gamma=1e300, data_norm=1e200, classes=[0, 1],
                               accountant=acc).fit(data, y)
            outcomes.append("fitted")
        except (PrivateFitError, ValueError) as exc:
            outcomes.append((type(exc).__name__, str(exc), acc.spends))
    # Refused for its parameters, before the data is read, on both neighbours.
    assert outcomes[0] == outcomes[1] and outcomes[0][0] == "ValueError"


_WORKER_SCRIPT = r"""
import warnings
import numpy as np
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer
from dpsk import BudgetAccountant, DPLogisticRegression
from dpsk.model_selection import DPGridSearch
warnings.simplefilter("ignore")
rng = np.random.default_rng(0)
X = -np.abs(rng.normal(size=(60, 2))); y = np.arange(60) % 2
DPGridSearch(make_pipeline(FunctionTransformer(np.square, inverse_func=np.sqrt),
                           DPLogisticRegression(classes=[0, 1], data_norm=10.0)),
             {"dplogisticregression__alpha": [1e-2, 1e-1]}, n_jobs=2,
             accountant=BudgetAccountant(), allow_learned_steps=True).fit(X, y)
"""


def test_grid_search_workers_print_no_warnings():
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-c", _WORKER_SCRIPT], capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0
    assert "not strictly inverse" not in out.stderr


def test_tiny_epsilon_point_within_covered_radius():
    mp = pytest.importorskip("mpmath")
    import dpsk.mechanisms._erm as erm
    from dpsk._optimize._binary import minimize_regularized_loss as solve

    calls = []

    def spy(loss, Z, y, lam, linear=None, tol=1e-10, **kw):
        r = solve(loss, Z, y, lam, linear=linear, tol=tol, **kw)
        calls.append((np.asarray(Z), np.asarray(y), lam, np.asarray(linear), tol, r.w.copy()))
        return r

    rng = np.random.default_rng(0)
    X = rng.normal(size=(10, 2))
    y = (X[:, 0] > 0).astype(int)
    with pytest.MonkeyPatch.context() as mpatch:
        mpatch.setattr(erm, "minimize_regularized_loss", spy)
        DPLogisticRegression(epsilon=1e-9, classes=[0, 1], random_state=0,
                             accountant=BudgetAccountant()).fit(X, y)
    Z, yy, lam, lin, tol, w = calls[0]
    mp.mp.dps = 60
    n, d = Z.shape
    Zm = [[mp.mpf(float(v)) for v in row] for row in Z]
    we = [mp.mpf(float(v)) for v in w]
    for _ in range(40):  # Newton in 60 digits on the exact objective
        g = [lam * we[j] + mp.mpf(float(lin[j])) for j in range(d)]
        H = [[(lam if i == j else 0) for j in range(d)] for i in range(d)]
        for i in range(n):
            s = 1 / (1 + mp.exp(yy[i] * sum(Zm[i][j] * we[j] for j in range(d))))
            for j in range(d):
                g[j] -= yy[i] * s * Zm[i][j] / n
                for k in range(d):
                    H[j][k] += s * (1 - s) * Zm[i][j] * Zm[i][k] / n
        step = mp.lu_solve(mp.matrix(H), mp.matrix(g))
        we = [we[j] - step[j] for j in range(d)]
    dist = float(mp.sqrt(sum((mp.mpf(float(w[j])) - we[j]) ** 2 for j in range(d))))
    assert dist <= tol / lam
