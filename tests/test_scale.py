"""Scale: BLAS threads inside a fit, float32 input, chunked design rows, Dask."""

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from dpsk import BudgetAccountant, DPLogisticRegression
from dpsk._optimize import _losses


def _blas_threads():
    return {info["num_threads"] for info in threadpool_info()
            if info["user_api"] == "blas"}


@pytest.mark.parametrize("perturbation", ["objective", "gradient"])
def test_fit_runs_with_one_blas_thread(monkeypatch, perturbation):
    seen = []
    original = _losses.LogisticLoss.derivative

    def spy(self, z):
        seen.append(_blas_threads())
        return original(self, z)

    monkeypatch.setattr(_losses.LogisticLoss, "derivative", spy)
    rng = np.random.default_rng(0)
    X, y = rng.uniform(-0.5, 0.5, (60, 3)), rng.integers(0, 2, 60)
    with threadpool_limits(limits=2):  # the session fixture set 1; look like a default
        before = _blas_threads()
        DPLogisticRegression(epsilon=1.0, delta=1e-6 if perturbation == "gradient" else 0.0,
                             perturbation=perturbation, classes=[0, 1], random_state=0,
                             accountant=BudgetAccountant()).fit(X, y)
        after = _blas_threads()
    assert seen and all(threads == {1} for threads in seen)
    assert before == after  # restored after the fit


# ----------------------------------------------------------- float32 and chunked rows
import tracemalloc  # noqa: E402

import scipy.sparse as sp  # noqa: E402
from sklearn import config_context  # noqa: E402

from dpsk._data._design import (  # noqa: E402
    INTERCEPT_SCALE,
    DesignRows,
    clip_factors,
    design_block,
    design_matrix,
    design_rows,
)
from dpsk._optimize._binary import minimize_regularized_loss  # noqa: E402
from dpsk._optimize._losses import HuberLoss, LogisticLoss, MultinomialLoss  # noqa: E402
from dpsk._optimize._multinomial_solver import minimize_multinomial_loss  # noqa: E402
from dpsk._optimize._solver import SolverError  # noqa: E402
from dpsk.mechanisms._gradient import noisy_gradient_descent  # noqa: E402
from dpsk.mechanisms._random import noise_source  # noqa: E402


def _data(n=3000, d=7, seed=0, dtype=np.float32):
    rng = np.random.default_rng(seed)
    X = (rng.standard_normal((n, d)) * 0.6).astype(dtype)  # some rows longer than 1
    y = (X[:, 0] + 0.3 * rng.standard_normal(n) > 0).astype(int)
    return X, y


@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("data_norm", [1.0, 2.5])
def test_float32_design_is_the_float64_design_of_the_same_values(fit_intercept, data_norm):
    X32, _ = _data()
    Z32 = design_matrix(X32, data_norm, fit_intercept)
    Z64 = design_matrix(X32.astype(np.float64), data_norm, fit_intercept)
    assert Z32.dtype == np.float64
    np.testing.assert_array_equal(Z32, Z64)
    assert np.all(np.linalg.norm(Z32, axis=1) <= 1 + 1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("data_norm, share_clipped", [(1.0, 0.0), (1.0, 0.3), (2.5, 0.3),
                                                      (1.0, 0.9)])
def test_design_block_is_the_two_rounding_formula(dtype, fit_intercept, data_norm,
                                                  share_clipped):
    # design_block takes one pass when few rows are clipped; every row must still be
    # fl(fl(x * factor) * scale), the formula design_matrix always used.
    rng = np.random.default_rng(3)
    X = rng.standard_normal((500, 7))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    X *= data_norm * np.where(rng.random(500) < share_clipped, 1.7, rng.random(500))[:, None]
    X = X.astype(dtype)
    X[4] = -0.0
    factors = clip_factors(X, data_norm)
    scale = (INTERCEPT_SCALE if fit_intercept else 1.0) / data_norm
    expected = X.astype(np.float64) * factors[:, None]
    if scale != 1.0:
        expected = expected * scale
    Z = design_block(X, data_norm, fit_intercept)
    np.testing.assert_array_equal(Z[:, :7].view(np.uint64), expected.view(np.uint64))
    if fit_intercept:
        assert np.all(Z[:, 7] == INTERCEPT_SCALE)


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_chunked_rows_are_the_stored_rows_bit_for_bit(fit_intercept):
    X, _ = _data()
    Z = design_matrix(X, 1.3, fit_intercept)
    rows = DesignRows(X, 1.3, fit_intercept, block=256)
    assert rows.shape == Z.shape
    for sl, block in rows.blocks():
        np.testing.assert_array_equal(block, Z[sl])
    np.testing.assert_array_equal(rows[100:1100], Z[100:1100])
    w = np.random.default_rng(1).standard_normal(Z.shape[1])
    np.testing.assert_allclose(rows @ w, Z @ w, rtol=1e-13, atol=1e-15)
    r = np.random.default_rng(2).standard_normal((Z.shape[0], 3))
    np.testing.assert_allclose(rows.T @ r, Z.T @ r, rtol=1e-12, atol=1e-12)


def test_design_rows_chunks_above_the_working_memory():
    X, _ = _data(n=20_000, d=20)
    assert isinstance(design_rows(X, 1.0, True), np.ndarray)
    with config_context(working_memory=1):
        assert isinstance(design_rows(X, 1.0, True), DesignRows)
        assert sp.issparse(design_rows(sp.csr_matrix(X), 1.0, True))  # never densified
    # Stored only up to a quarter of the working memory: 369 MiB of design rows
    # (a zero-stride X, no memory) are chunked under the default 1024 MiB.
    big = np.broadcast_to(np.zeros(1, dtype=np.float32), (400_000, 120))
    assert isinstance(design_rows(big, 1.0, True), DesignRows)


@pytest.mark.parametrize("loss", [LogisticLoss(), HuberLoss(0.5)])
def test_chunked_solve_matches_stored_solve_to_tolerance(loss):
    X, y = _data()
    y = np.where(y == 1, 1.0, -1.0)
    Z = design_matrix(X, 1.0, True)
    lam, tol = 1e-3, 1e-10
    w_mem = minimize_regularized_loss(loss, Z, y, lam, tol=tol).w
    w_chunk = minimize_regularized_loss(loss, DesignRows(X, 1.0, True, block=500), y, lam,
                                        tol=tol).w
    # Both are within tol / lam of the same minimiser.
    assert np.linalg.norm(w_mem - w_chunk) <= 2 * tol / lam


@pytest.mark.parametrize("path", ["conjugate-gradients", "fallback"])
def test_chunked_solve_paths_match_stored_solve_to_tolerance(monkeypatch, path):
    # The block solver's Hessian-vector products (d > 2000 in real use) and the
    # accelerated-gradient fallback, forced here on a small problem.
    import dpsk._optimize._solver as solver

    X, y = _data(n=2000)
    y = np.where(y == 1, 1.0, -1.0)
    lam, tol = 1e-3, 1e-10
    w_mem = minimize_regularized_loss(HuberLoss(0.1), design_matrix(X, 1.0, True), y, lam,
                                      tol=tol).w
    if path == "fallback":
        monkeypatch.setattr(solver, "_fast_path", lambda obj, w, tol, it: (w, np.inf, 0))
    else:
        monkeypatch.setattr(solver, "_DENSE_HESSIAN_MAX_D", 0)
    result = minimize_regularized_loss(HuberLoss(0.1), DesignRows(X, 1.0, True, block=300), y,
                                       lam, tol=tol)
    assert result._path == ("fallback" if path == "fallback" else "newton")
    assert np.linalg.norm(w_mem - result.w) <= 2 * tol / lam


def test_chunked_solve_refuses_input_outside_the_domain():
    X, y = _data(n=600)
    rows = DesignRows(X, 1.0, True, block=100)
    with pytest.raises(SolverError, match="labels"):
        minimize_regularized_loss(LogisticLoss(), rows, np.where(y == 1, 1.0, 0.0), 1e-2)
    with pytest.raises(SolverError, match="one label per row"):
        minimize_regularized_loss(LogisticLoss(), rows, np.ones(599), 1e-2)
    X[5, 1] = np.nan
    with pytest.raises(SolverError, match="finite"):
        minimize_regularized_loss(LogisticLoss(), DesignRows(X, 1.0, True, block=100),
                                  np.where(y == 1, 1.0, -1.0), 1e-2)


def test_chunked_multinomial_solve_matches_stored_solve_to_tolerance():
    X, _ = _data()
    y = np.digitize(X[:, 1], [-0.3, 0.3])
    Z = design_matrix(X, 1.0, True)
    lam, tol = 1e-2, 1e-10
    w_mem = minimize_multinomial_loss(Z, y, 3, lam, tol=tol).w
    w_chunk = minimize_multinomial_loss(DesignRows(X, 1.0, True, block=700), y, 3, lam,
                                        tol=tol).w
    assert np.linalg.norm(w_mem - w_chunk) <= 2 * tol / lam


@pytest.mark.parametrize("loss", [LogisticLoss(), MultinomialLoss(3)])
def test_chunked_gradient_descent_matches_stored_for_the_same_noise(loss):
    X, y = _data()
    y = np.where(y == 1, 1.0, -1.0) if loss.n_outputs == 1 else np.digitize(X[:, 1], [0.0, 0.4])
    Z = design_matrix(X, 1.0, True)
    args = (loss, 1.0, 1e-6, 1e-2)
    w_mem = noisy_gradient_descent(Z, y, *args, noise_source(3))
    w_chunk = noisy_gradient_descent(DesignRows(X, 1.0, True, block=400), y, *args,
                                     noise_source(3))
    # The gradient sums differ only in summation order (about 1e-16 relative); each
    # release is rounded to a grid, so at most a rare grid step apart.
    np.testing.assert_allclose(w_chunk, w_mem, rtol=0, atol=1e-9)


def _traced_peak(fn):
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("perturbation", ["output", "gradient"])
def test_float32_fit_memory(perturbation):
    X, y = _data(n=100_000, d=30)
    z_bytes = X.shape[0] * (X.shape[1] + 1) * 8

    def fit():
        DPLogisticRegression(epsilon=1.0, alpha=0.1, perturbation=perturbation, classes=[0, 1],
                             delta=1e-6 if perturbation == "gradient" else 0.0,
                             random_state=0, accountant=BudgetAccountant()).fit(X, y)

    # Stored design: one float64 copy (Z), no float64 copy of X besides it.
    stored = _traced_peak(fit)
    assert stored < 1.4 * z_bytes
    # Chunked design: O(block x d) plus O(n) vectors, far below Z.
    with config_context(working_memory=1):
        chunked = _traced_peak(fit)
    assert chunked < 0.5 * z_bytes, (stored, chunked, z_bytes)


def test_reused_solutions_skip_a_chunked_design():
    from dpsk._optimize._solution_cache import reusing_solutions
    from dpsk.mechanisms._erm import private_erm

    X, y = _data(n=500)
    y = np.where(y == 1, 1.0, -1.0)
    with reusing_solutions({}) as store:
        w = private_erm(DesignRows(X, 1.0, True, block=100), y, LogisticLoss(), 1.0, 1e-2,
                        "output", noise_source(0))
    assert store == {} and np.all(np.isfinite(w))
