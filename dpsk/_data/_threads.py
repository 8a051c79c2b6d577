"""BLAS threads inside a private fit: one, always.

The solvers of dpsk (``dpsk._optimize._solver``, ``dpsk._optimize._multinomial_solver``) and noisy
gradient descent (``dpsk.mechanisms._gradient``) spend their time in many small BLAS
calls: matrix-vector products over row blocks (memory bound: more threads do
not make them faster) and, for Newton, rank-k updates of a ``d x d`` Hessian
from 4 MiB row blocks. With BLAS's default of one thread per core, each of
those calls wakes a team of threads that, on a machine whose cores are busy
(other processes, joblib workers of one-vs-rest or of a grid search), wait for
cores and spin. Measured on Adult on a loaded 2-core machine with default BLAS
threads (``python -m benchmarks fit-time --threads default``): objective
perturbation took 5.5 times scikit-learn's time before this limit and 0.2
times after it (scikit-learn's own solver also suffers from the default
threads there).

The rule: every private fit runs its numerical work with the BLAS (and OpenMP)
thread pools limited to **one** thread. Parallelism in dpsk is across
independent problems (``n_jobs`` over one-vs-rest models, model selection's
candidates, Dask workers for the row chunks of one fit), never inside one BLAS
call, so threads never multiply. The limit is set and restored by
``threadpoolctl`` around the release only; it does not change what is
released (BLAS results may differ in the last bits with the thread count, and
the solver's certificate holds for any summation order).
"""

import contextlib
import threading

from threadpoolctl import ThreadpoolController

__all__ = ["single_threaded_blas"]

#: Threads of the BLAS and OpenMP pools inside a fit (see the module docstring).
FIT_THREADS = 1


_controller = None
_controller_lock = threading.Lock()


def _get_controller():
    """One ``ThreadpoolController`` per process, made at the first fit.

    Building one scans the loaded libraries (about a millisecond); small fits
    (the utility Monte Carlo runs thousands) should not pay that each time. By
    the first fit numpy's and scipy's BLAS are loaded.
    """
    global _controller
    with _controller_lock:
        if _controller is None:
            _controller = ThreadpoolController()
        return _controller


@contextlib.contextmanager
def single_threaded_blas():
    """Limit the BLAS and OpenMP pools to :data:`FIT_THREADS` within the block.

    The limit is process-wide (a property of the BLAS library): fits running
    concurrently in threads each set and restore it, so one may briefly run
    with the other's setting; that costs time, never correctness.
    """
    with _get_controller().limit(limits=FIT_THREADS):
        yield
