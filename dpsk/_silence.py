"""Silence warnings while any private computation runs, in every thread at once.

Whatever a private computation warns about may depend on the data (a numpy
overflow, a scikit-learn convergence note, a user's transformer checking its
inverse on sampled rows), so nothing it emits may reach the analyst.
``warnings.catch_warnings`` does not do this safely with threads in Python <
3.14: it saves and restores the process-wide filter list, so the first of two
concurrent fits to finish switches the filter back on for the other. Here one
lock-protected counter keeps an "ignore" filter in place from the first entry
to the last exit, whichever threads they come from.

:func:`muted` does the same for output: stdout, stderr and logging. A search
uses it around its inner fits, whose printed lines could count its secret
number of runs. :func:`one_process` keeps those fits from starting joblib
pools of their own, whose folders and workers could count the runs too.
"""

import logging
import os
import sys
import threading
import warnings
from contextlib import contextmanager

import numpy as np
from joblib import parallel_config

__all__ = ["silenced", "muted", "one_process"]

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


# -- output: stdout, stderr (Python and file-descriptor level) and logging ---------
_MUTE_LOCK = threading.Lock()
_MUTE_STATE = {"depth": 0, "saved": None}
# A level above every level logging knows of (custom ones included).
_ALL_LEVELS = 2**31 - 1


def _flush_c_stdio():
    """Flush the C library's stdout/stderr buffers (output of compiled code)."""
    try:
        import ctypes

        ctypes.CDLL(None).fflush(None)
    except Exception:  # noqa: BLE001 - no libc handle (Windows): nothing buffered there
        pass


def _flush(stream):
    try:
        stream.flush()
    except Exception:  # noqa: BLE001 - a closed or odd stream: nothing to keep
        pass


def _mute():
    """Point stdout, stderr (objects and descriptors 1, 2) at the null device, and
    disable logging; return what is needed to undo it."""
    streams = (sys.stdout, sys.stderr)
    for stream in streams:
        _flush(stream)  # what was printed before the block still gets out
    _flush_c_stdio()
    sink = open(os.devnull, "w")  # noqa: SIM115 - closed in _unmute
    descriptors = []
    for fd in (1, 2):
        try:
            saved = os.dup(fd)
        except OSError:  # closed (a daemon): nothing can reach it anyway
            continue
        os.dup2(sink.fileno(), fd)
        descriptors.append((fd, saved))
    sys.stdout = sys.stderr = sink
    logging_level = logging.root.manager.disable
    logging.disable(_ALL_LEVELS)
    return streams, sink, descriptors, logging_level


def _unmute(saved):
    streams, sink, descriptors, logging_level = saved
    # Whatever was buffered inside the block goes to the null device, now.
    _flush(sink)
    _flush_c_stdio()
    for fd, copy in descriptors:
        os.dup2(copy, fd)
        os.close(copy)
    sys.stdout, sys.stderr = streams
    sink.close()
    logging.disable(logging_level)


@contextmanager
def muted():
    """Send everything printed or logged inside the block nowhere.

    ``sys.stdout`` and ``sys.stderr``, file descriptors 1 and 2 (what compiled
    code and child processes write to) and the :mod:`logging` system are
    silenced, process-wide, from the first entry to the last exit (re-entrant
    and thread-safe, like :func:`silenced`). What a search's inner fits print
    could reveal its secrets (the number of runs), so nothing gets out.
    Output of other threads of the process during the block is lost too.
    """
    with _MUTE_LOCK:
        if _MUTE_STATE["depth"] == 0:
            _MUTE_STATE["saved"] = _mute()
        _MUTE_STATE["depth"] += 1
    try:
        yield
    finally:
        with _MUTE_LOCK:
            _MUTE_STATE["depth"] -= 1
            if _MUTE_STATE["depth"] == 0:
                _unmute(_MUTE_STATE["saved"])
                _MUTE_STATE["saved"] = None


def console_stderr():
    """A new text stream to the process's standard error as it was before :func:`muted`.

    Inside a muted block descriptor 2 points at the null device; this stream
    writes to the copy :func:`muted` kept of the original, so a display that
    reveals nothing secret (a search's elapsed seconds) still reaches the
    console. Outside a muted block it writes to descriptor 2. The caller closes
    it before the block ends.
    """
    with _MUTE_LOCK:
        saved = _MUTE_STATE["saved"]
        fd = 2
        if saved is not None:
            fd = dict(saved[2]).get(2)
            if fd is None:  # descriptor 2 was closed: nothing can reach a console
                return open(os.devnull, "w")  # noqa: SIM115 - the caller closes it
        return os.fdopen(os.dup(fd), "w", buffering=1)


@contextmanager
def one_process():
    """Run every joblib call inside the block sequentially, in this thread.

    A search's inner fits may ask for parallelism of their own (a candidate's
    ``n_jobs=2``, or ``joblib.parallel_config(n_jobs=2)`` around the search).
    Each such ``joblib.Parallel`` call would start its own pool, and with a
    design over joblib's ``max_nbytes`` its own memory-mapping folder (under
    ``/dev/shm``, named with the process id, readable by other local users),
    once per run: a listing would count the search's secret number of runs.
    Under the ``"sequential"`` backend the same calls run in the calling
    thread and create nothing. The setting is thread-local, so the search's
    own pool (entered outside the block) keeps the user's backend. A step that
    names a backend explicitly (``Parallel(backend="loky")``) is not covered;
    none of dpsk's does.
    """
    with parallel_config(backend="sequential"):
        yield
