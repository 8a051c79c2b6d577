"""Runs INSIDE benchmarks/.venv-diffprivlib (diffprivlib 0.6.6, scikit-learn < 1.8).

Usage: python _diffprivlib_worker.py <data.npz> <config.json> <out.json>

``data.npz`` holds ``X``, ``y`` and ``fold_ids`` (the test fold of each row);
``config.json`` holds ``epsilons``, ``log10_alphas``, ``folds`` (fold numbers to
run), ``runs``, ``seed`` and ``max_iter``; optionally ``mode`` ("grid", the
default: one fit per alpha with ``data_norm=1``; "default": one fit of
``LogisticRegression(epsilon=eps)`` with every other parameter at its default,
as a user would) and ``fit_intercept`` (grid mode; default False). Writes a JSON list of records
(epsilon, log10_alpha, fold, run, error, fit_time, n_iter, converged) plus the
versions used. Imports nothing from dpsk: this interpreter cannot import it.
"""

import json
import sys
import time
import warnings


def main(data_path, config_path, out_path):
    import diffprivlib
    import numpy as np
    import sklearn
    from diffprivlib.accountant import BudgetAccountant
    from diffprivlib.models import LogisticRegression
    from sklearn.exceptions import ConvergenceWarning

    data = np.load(data_path)
    X, y, fold_ids = data["X"], data["y"], data["fold_ids"]
    with open(config_path) as fh:
        cfg = json.load(fh)
    records = []
    mode = cfg.get("mode", "grid")
    log10_alphas = cfg["log10_alphas"] if mode == "grid" else [None]
    for k in cfg["folds"]:
        train, test = fold_ids != k, fold_ids == k
        Xtr, ytr, Xte, yte = X[train], y[train], X[test], y[test]
        n_train = int(train.sum())
        for eps in cfg["epsilons"]:
            for la in log10_alphas:
                for r in range(cfg["runs"]):
                    seed = (cfg["seed"] * 1_000_003 + k * 10_007 + r * 101
                            + int(round(-(la or 0.0) * 10)) * 7 + int(round(eps * 1e4))) % (2**31)
                    if la is None:
                        clf = LogisticRegression(epsilon=eps, random_state=seed,
                                                 accountant=BudgetAccountant())
                    else:
                        clf = LogisticRegression(
                            epsilon=eps, C=1.0 / (n_train * 10.0 ** la), data_norm=1.0,
                            fit_intercept=cfg.get("fit_intercept", False),
                            max_iter=cfg["max_iter"], random_state=seed,
                            accountant=BudgetAccountant())
                    with warnings.catch_warnings(record=True) as caught:
                        warnings.simplefilter("always")
                        t0 = time.perf_counter()
                        clf.fit(Xtr, ytr)
                        fit_time = time.perf_counter() - t0
                    converged = not any(issubclass(w.category, ConvergenceWarning) for w in caught)
                    error = float(np.mean(clf.predict(Xte) != yte))
                    records.append(dict(epsilon=eps, log10_alpha=la, fold=int(k), run=r,
                                        error=error, fit_time=fit_time,
                                        n_iter=int(clf.n_iter_[0]), converged=converged))
    with open(out_path, "w") as fh:
        json.dump({"diffprivlib": diffprivlib.__version__, "sklearn": sklearn.__version__,
                   "numpy": np.__version__, "python": sys.version.split()[0],
                   "records": records}, fh)


if __name__ == "__main__":
    main(*sys.argv[1:4])
