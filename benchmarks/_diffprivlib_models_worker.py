"""Runs INSIDE benchmarks/.venv-diffprivlib: any diffprivlib classifier on given folds.

Usage: python _diffprivlib_models_worker.py <data.npz> <config.json> <out.json>

``data.npz`` holds ``X``, ``y`` and ``fold_ids`` (the test fold of each row,
-1 for rows only ever trained on). ``config.json`` holds ``model`` (a class
name of ``diffprivlib.models``, e.g. ``"GaussianNB"`` or
``"RandomForestClassifier"``), ``params`` (keyword arguments besides
``epsilon``, ``random_state`` and ``accountant``; a list value is passed as a
tuple, so ``"bounds": [[0, ...], [1, ...]]`` arrives as diffprivlib expects),
``epsilons``, ``folds``, ``runs`` and ``seed``. ``model`` may instead be a list
of steps ``[class name, params, share]``: a scikit-learn ``Pipeline`` of those
diffprivlib models, step ``i`` at ``share * epsilon``, all on one ledger (a
user's ``PCA`` then ``LogisticRegression`` at half the budget each). Writes one record per (epsilon,
fold, run): the test error, the fit time, whether diffprivlib warned about a
privacy leak, and the status (``"ok"`` or the exception's type and text).
Imports nothing from dpsk: this interpreter cannot import it.
"""

import json
import sys
import time
import warnings


def _params(raw):
    return {key: tuple(value) if isinstance(value, list) else value
            for key, value in raw.items()}


def _build(models, spec, params, epsilon, seed, ledger):
    """One diffprivlib model, or a Pipeline of them (``spec`` a list of steps)."""
    if isinstance(spec, str):
        return getattr(models, spec)(epsilon=epsilon, random_state=seed, accountant=ledger,
                                     **params)
    from sklearn.pipeline import make_pipeline

    return make_pipeline(*[
        getattr(models, name)(epsilon=epsilon * share, random_state=(seed + i) % (2**31),
                              accountant=ledger, **_params(step_params))
        for i, (name, step_params, share) in enumerate(spec)])


def main(data_path, config_path, out_path):
    import diffprivlib
    import diffprivlib.models as models
    import numpy as np
    import sklearn
    from diffprivlib.accountant import BudgetAccountant
    from diffprivlib.utils import PrivacyLeakWarning

    data = np.load(data_path)
    X, y, fold_ids = data["X"], data["y"], data["fold_ids"]
    with open(config_path) as fh:
        cfg = json.load(fh)
    params = _params(cfg.get("params", {}))
    records = []
    for k in cfg["folds"]:
        train, test = fold_ids != k, fold_ids == k
        for eps in cfg["epsilons"]:
            for r in range(cfg["runs"]):
                seed = (cfg["seed"] * 1_000_003 + k * 10_007 + r * 101
                        + int(round(eps * 1e4))) % (2**31)
                clf = _build(models, cfg["model"], params, eps, seed, BudgetAccountant())
                status, error, leak = "ok", float("nan"), False
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    t0 = time.perf_counter()
                    try:
                        clf.fit(X[train], y[train])
                        fit_time = time.perf_counter() - t0
                        error = float(np.mean(clf.predict(X[test]) != y[test]))
                    except Exception as exc:  # noqa: BLE001 - recorded
                        fit_time = time.perf_counter() - t0
                        status = f"{type(exc).__name__}: {str(exc)[:160]}"
                leak = any(issubclass(w.category, PrivacyLeakWarning) for w in caught)
                records.append(dict(epsilon=eps, fold=int(k), run=r, error=error,
                                    fit_time=fit_time, leak_warning=leak, status=status))
    with open(out_path, "w") as fh:
        json.dump({"diffprivlib": diffprivlib.__version__, "sklearn": sklearn.__version__,
                   "records": records}, fh)


if __name__ == "__main__":
    main(*sys.argv[1:4])
