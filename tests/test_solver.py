"""The solver must certify the gradient-norm bound the noise is calibrated for."""

import numpy as np
import pytest
import scipy.sparse as sp

from dpsk import BudgetAccountant, DPLogisticRegression, SolverError
from dpsk._losses import HuberLoss, LogisticLoss
from dpsk._solver import _Objective, minimize_regularized_loss


def _problem(n=2000, d=20, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = np.where(X @ rng.standard_normal(d) + 0.3 * rng.standard_normal(n) > 0, 1.0, -1.0)
    return X, y


@pytest.mark.parametrize("loss", [LogisticLoss(), HuberLoss(0.5), HuberLoss(0.05)], ids=repr)
@pytest.mark.parametrize("lam", [1e-1, 1e-3, 1e-5])
def test_certified_gradient_norm(loss, lam):
    X, y = _problem()
    linear = np.random.default_rng(1).standard_normal(X.shape[1]) / X.shape[0]
    res = minimize_regularized_loss(loss, X, y, lam, linear=linear, tol=1e-10)
    _, grad = _Objective(loss, X, y, lam, linear).value_and_grad(res.w)
    assert np.linalg.norm(grad) <= 1e-10
    assert res.grad_norm == pytest.approx(np.linalg.norm(grad))


def test_gradient_matches_finite_differences():
    X, y = _problem(n=200, d=5)
    obj = _Objective(LogisticLoss(), X, y, 1e-2, np.ones(5) / 200)
    w = np.random.default_rng(2).standard_normal(5)
    _, g = obj.value_and_grad(w)
    fd = np.array([(obj.value_and_grad(w + 1e-6 * e)[0] - obj.value_and_grad(w - 1e-6 * e)[0])
                   / 2e-6 for e in np.eye(5)])
    np.testing.assert_allclose(g, fd, atol=1e-7)


def test_sparse_and_dense_agree():
    X, y = _problem(n=500, d=10)
    dense = minimize_regularized_loss(LogisticLoss(), X, y, 1e-3).w
    sparse = minimize_regularized_loss(LogisticLoss(), sp.csr_matrix(X), y, 1e-3).w
    np.testing.assert_allclose(dense, sparse, atol=1e-8)


def test_unreachable_tolerance_fails_and_spends_nothing():
    X, y = _problem(n=300, d=5)
    with pytest.raises(SolverError, match="gradient norm"):
        minimize_regularized_loss(LogisticLoss(), X, y, 1e-3, tol=1e-30)
    acc = BudgetAccountant(epsilon=1.0)
    with pytest.raises(SolverError):
        DPLogisticRegression(tol=1e-30, accountant=acc).fit(X, (y > 0).astype(int))
    assert acc.spends == []
