"""Run one of diffprivlib 0.6.6's classifiers on given folds, in its own environment.

diffprivlib 0.6.6 does not import with scikit-learn >= 1.9 (and its logistic
regression fails on 1.8), so it runs in ``benchmarks/.venv-diffprivlib``
(:func:`ensure_venv` creates it on first use, with ``python -m venv`` and ``pip
install diffprivlib==0.6.6 "scikit-learn<1.8" numpy scipy``) through a worker
script: :func:`call_worker` runs one, ``benchmarks/_diffprivlib_models_worker.py``
fits any diffprivlib classifier. The data and the test
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

__all__ = ["run_model", "versions", "ensure_venv", "call_worker", "VENV_DIR"]

VENV_DIR = C.BENCH_DIR / ".venv-diffprivlib"
REQUIREMENTS = ["diffprivlib==0.6.6", "scikit-learn<1.8", "numpy", "scipy"]
WORKER = C.BENCH_DIR / "_diffprivlib_models_worker.py"


def venv_python():
    sub = "Scripts/python.exe" if os.name == "nt" else "bin/python"
    return VENV_DIR / sub


def ensure_venv():
    """Create the diffprivlib venv on first use; return its interpreter and versions."""
    py = venv_python()
    check = [str(py), "-c", "import diffprivlib, sklearn; print(diffprivlib.__version__, "
                            "sklearn.__version__)"]
    if py.exists():
        res = subprocess.run(check, capture_output=True, text=True)
        if res.returncode == 0:
            return py, res.stdout.split()
    print(f"Creating {VENV_DIR} (diffprivlib needs scikit-learn < 1.8) ...", flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(VENV_DIR)], check=True)
    subprocess.run([str(py), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                    *REQUIREMENTS], check=True)
    res = subprocess.run(check, capture_output=True, text=True, check=True)
    return py, res.stdout.split()


def call_worker(py, worker, data_path, tmp, config):
    """Run ``worker data_path cfg out`` in the venv on one thread; its JSON payload.

    ``config`` is written to ``tmp/cfg.json``; the worker's stderr is printed and
    a RuntimeError raised if it fails.
    """
    cfg_path, out_path = os.path.join(tmp, "cfg.json"), os.path.join(tmp, "out.json")
    with open(cfg_path, "w") as fh:
        json.dump(config, fh)
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               MKL_NUM_THREADS="1", PYTHONPATH="")
    res = subprocess.run([str(py), str(worker), data_path, cfg_path, out_path],
                         capture_output=True, text=True, env=env)
    if res.returncode != 0:
        print(res.stderr, file=sys.stderr)
        raise RuntimeError("the diffprivlib worker failed (see stderr above)")
    with open(out_path) as fh:
        return json.load(fh)


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
    model : str or list
        A class of ``diffprivlib.models``, or a pipeline of them: a list of
        ``[class name, params, share of epsilon]`` steps.
    params : dict
        JSON-serialisable keyword arguments (lists arrive as tuples) of a
        single model; ``{}`` for a pipeline.
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
        return call_worker(py, WORKER, data_path, tmp, dict(
            model=model, params=params, epsilons=list(epsilons),
            folds=[int(k) for k in folds], runs=int(runs), seed=int(seed)))["records"]
