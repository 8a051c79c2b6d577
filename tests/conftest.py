"""Test-session settings shared by every test module."""

import pytest
from threadpoolctl import threadpool_limits


@pytest.fixture(autouse=True, scope="session")
def _single_threaded_blas():
    # The tests fit thousands of tiny models; multithreaded BLAS spends more time
    # handing work between threads than computing (20-100 ms per solve instead
    # of ~1 ms on a loaded 2-core machine).
    with threadpool_limits(limits=1):
        yield


@pytest.fixture(autouse=True)
def _no_progress_display(monkeypatch):
    # A search shows elapsed seconds once it has run for PROGRESS_DELAY seconds (with
    # tqdm). On a loaded machine a test's search can take that long, and tests that
    # check that nothing is printed would then depend on the machine's speed.
    from dpsk.model_selection import _repeat

    monkeypatch.setattr(_repeat, "PROGRESS_DELAY", float("inf"))
