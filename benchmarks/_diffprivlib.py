"""Run one of diffprivlib 0.6.6's classifiers on given folds, in its own environment.

diffprivlib 0.6.6 does not import with scikit-learn >= 1.9 (and its logistic
regression fails on 1.8), so it runs in ``benchmarks/.venv-diffprivlib``
(:func:`benchmarks.bench_diffprivlib.ensure_venv` creates it on first use)
through ``benchmarks/_diffprivlib_models_worker.py``. The data and the test
fold of every row go in a temporary .npz file, the records come back as JSON.
Any benchmark that compares a dpsk model with its diffprivlib counterpart on
the same splits calls :func:`run_model`.
"""

import json
import os
import subprocess
import sys
import tempfile

import numpy as np

from . import _common as C
from .bench_diffprivlib import ensure_venv

__all__ = ["run_model", "versions"]

WORKER = C.BENCH_DIR / "_diffprivlib_models_worker.py"


def versions():
    """``(diffprivlib version, its scikit-learn version)``, creating the venv if needed."""
    _, found = ensure_venv()
    return tuple(found)


def run_model(X, y, fold_ids, model, params, epsilons, folds, runs, seed):
    """Fit ``diffprivlib.models.<model>(epsilon, **params)`` on every (fold, epsilon, run).

    Parameters
    ----------
    X, y : ndarray
    fold_ids : ndarray of int of shape (n,)
        The test fold of each row (-1: always a training row).
    model : str
        A class of ``diffprivlib.models``.
    params : dict
        JSON-serialisable keyword arguments (lists arrive as tuples).
    epsilons, folds : sequences
    runs, seed : int

    Returns
    -------
    list of dict
        ``epsilon, fold, run, error, fit_time, leak_warning, status``.
    """
    py, _ = ensure_venv()
    with tempfile.TemporaryDirectory(prefix="dpsk-dpl-") as tmp:
        data_path = os.path.join(tmp, "data.npz")
        np.savez(data_path, X=np.asarray(X, dtype=np.float64), y=np.asarray(y),
                 fold_ids=np.asarray(fold_ids))
        cfg_path, out_path = os.path.join(tmp, "cfg.json"), os.path.join(tmp, "out.json")
        with open(cfg_path, "w") as fh:
            json.dump(dict(model=model, params=params, epsilons=list(epsilons),
                           folds=[int(k) for k in folds], runs=int(runs), seed=int(seed)), fh)
        env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
                   MKL_NUM_THREADS="1", PYTHONPATH="")
        res = subprocess.run([str(py), str(WORKER), data_path, cfg_path, out_path],
                             capture_output=True, text=True, env=env)
        if res.returncode != 0:
            print(res.stderr, file=sys.stderr)
            raise RuntimeError("the diffprivlib worker failed (see stderr above)")
        with open(out_path) as fh:
            return json.load(fh)["records"]
