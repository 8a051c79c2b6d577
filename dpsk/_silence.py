"""Silence warnings while any private computation runs, in every thread at once.

Whatever a private computation warns about may depend on the data (a numpy
overflow, a scikit-learn convergence note, a user's transformer checking its
inverse on sampled rows), so nothing it emits may reach the analyst.
``warnings.catch_warnings`` does not do this safely with threads in Python <
3.14: it saves and restores the process-wide filter list, so the first of two
concurrent fits to finish switches the filter back on for the other. Here one
lock-protected counter keeps an "ignore" filter in place from the first entry
to the last exit, whichever threads they come from.
"""

import threading
import warnings
from contextlib import contextmanager

import numpy as np

__all__ = ["silenced"]

_LOCK = threading.Lock()
_STATE = {"depth": 0, "filters": None}


def _filters_changed():
    # The interpreter caches filter lookups; tell it the list was replaced.
    mutated = getattr(warnings, "_filters_mutated", None)
    if mutated is not None:
        mutated()


@contextmanager
def silenced():
    """Drop every Python warning and numpy floating-point report inside the block.

    Re-entrant and thread-safe: the filters in force before the outermost
    entry are put back after the last exit.
    """
    with _LOCK:
        if _STATE["depth"] == 0:
            _STATE["filters"] = list(warnings.filters)
            warnings.simplefilter("ignore")
        _STATE["depth"] += 1
    try:
        with np.errstate(all="ignore"):
            yield
    finally:
        with _LOCK:
            _STATE["depth"] -= 1
            if _STATE["depth"] == 0:
                warnings.filters[:] = _STATE["filters"]
                _STATE["filters"] = None
                _filters_changed()
