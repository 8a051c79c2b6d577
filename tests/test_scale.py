"""Scale: BLAS threads inside a fit, float32 input, chunked design rows, Dask."""

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from dpsk import BudgetAccountant, DPLogisticRegression
from dpsk import _losses


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
