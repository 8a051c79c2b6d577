"""Runs INSIDE benchmarks/.venv-diffprivlib: diffprivlib's LogisticRegression at its defaults.

Usage: python _diffprivlib_default_worker.py <data.npz> <config.json> <out.json>

``data.npz`` holds ``X`` (rows of norm <= 1), ``y`` and ``fold_ids`` (the
test fold of each row, -1 for rows only ever trained on); ``config.json``
holds ``epsilons``, ``folds``, ``runs`` and ``seed``. The model is
diffprivlib's default (``C=1.0``, ``fit_intercept=True``, ``max_iter=100``)
with the two parameters a user must give to avoid a data-dependent warning:
``epsilon`` and ``data_norm=1``. Writes the mean test error per epsilon.
Imports nothing from dpsk: this interpreter cannot import it.
"""

import json
import sys
import warnings


def main(data_path, config_path, out_path):
    import diffprivlib
    import numpy as np
    from diffprivlib.accountant import BudgetAccountant
    from diffprivlib.models import LogisticRegression

    data = np.load(data_path)
    X, y, fold_ids = data["X"], data["y"], data["fold_ids"]
    with open(config_path) as fh:
        cfg = json.load(fh)
    errors = {}
    for eps in cfg["epsilons"]:
        values = []
        for k in cfg["folds"]:
            train, test = fold_ids != k, fold_ids == k
            for r in range(cfg["runs"]):
                seed = (cfg["seed"] * 1_000_003 + k * 10_007 + r * 101
                        + int(round(eps * 1e4))) % (2**31)
                clf = LogisticRegression(epsilon=eps, data_norm=1.0, random_state=seed,
                                         accountant=BudgetAccountant())
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    clf.fit(X[train], y[train])
                values.append(float(np.mean(clf.predict(X[test]) != y[test])))
        errors[str(eps)] = float(np.mean(values))
    with open(out_path, "w") as fh:
        json.dump({"diffprivlib": diffprivlib.__version__, "errors": errors}, fh)


if __name__ == "__main__":
    main(*sys.argv[1:4])
