"""Shared helpers of the dpsk benchmark suite.

Data loading, cross-validation folds, evaluation of the methods of Chaudhuri,
Monteleoni and Sarwate (2011) on a fold, parallel execution with a progress bar,
CSV / PNG / table writing and a description of the machine a number was taken on.

Only the benchmark suite imports this module; ``matplotlib``, ``pandas`` and
``tqdm`` (the ``benchmarks`` extra of pyproject.toml) are optional here.
"""

import csv
import datetime
import math
import os
import platform
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
RESULTS_DIR = BENCH_DIR / "results"
#: Where ``--quick`` runs write: git-ignored, so a smoke run never replaces the
#: committed full-size results (and the README tables quoting them).
QUICK_RESULTS_DIR = RESULTS_DIR / "quick"

_quick_run = False


def set_quick(quick):
    """Send this process's outputs to ``QUICK_RESULTS_DIR`` (True) or ``RESULTS_DIR``.

    ``python -m benchmarks`` calls it from the command line of every sub-command
    (``--quick`` or not) before running it; each sub-command's ``main`` calls it
    too, so that running a module directly behaves the same.
    """
    global _quick_run
    _quick_run = bool(quick)


def results_dir():
    """The directory :func:`write_csv` and :func:`save_figure` write to (see :func:`set_quick`)."""
    return QUICK_RESULTS_DIR if _quick_run else RESULTS_DIR

#: The grid of Lambda (our ``alpha``) of Table 1 of Chaudhuri et al. (2011), as
#: exponents: alpha = 10**-e.
PAPER_LOG10_ALPHAS = (-10.0, -7.0, -4.0, -3.5, -3.0, -2.5, -2.0, -1.5)

#: Table 1 of the paper (Adult, epsilon_p = 0.1), keyed by (loss, method) then by
#: log10(alpha). Errors averaged over 10-fold CV (x 50 runs for the private ones).
PAPER_TABLE1 = {
    ("logistic", "nonprivate"): (0.1540, 0.1533, 0.1654, 0.1694, 0.1758, 0.1895, 0.2322, 0.2478),
    ("logistic", "output"): (0.5318, 0.5318, 0.5175, 0.4928, 0.4310, 0.3163, 0.2395, 0.2456),
    ("logistic", "objective"): (0.8248, 0.8248, 0.8248, 0.2694, 0.2369, 0.2161, 0.2305, 0.2475),
    ("huber", "nonprivate"): (0.1527, 0.1521, 0.1632, 0.1669, 0.1719, 0.1793, 0.2454, 0.2478),
    ("huber", "output"): (0.5318, 0.5318, 0.5211, 0.5011, 0.4464, 0.3352, 0.2376, 0.2476),
    ("huber", "objective"): (0.2585, 0.2585, 0.2585, 0.2582, 0.2559, 0.2046, 0.2319, 0.2478),
}

LOSSES = ("logistic", "huber")
METHODS = ("nonprivate", "output", "objective")
HUBER_H = 0.5

#: Tolerance of the non-private Huber solve (a reference only: no privacy noise
#: depends on it, so it need not be the 1e-10 that dpsk certifies).
NONPRIVATE_HUBER_TOL = 1e-6


# --------------------------------------------------------------------------- data
def load_adult_data():
    """Adult with the paper's preprocessing: X (45222, 105), rows of norm <= 1, y in {0, 1}."""
    from dpsk.datasets import load_adult

    X, y = load_adult(return_X_y=True, preprocess=True)
    return np.ascontiguousarray(X, dtype=np.float64), np.asarray(y)


#: scikit-learn's bundled binary tasks (offline): breast cancer, wine (cultivar 1
#: against the rest) and digits (0-4 against 5-9).
BUNDLED_TABLES = ("breast_cancer", "digits", "wine")


def unit_rows(X):
    """Scale rows to norm <= 1 by a public rule (no statistic of the data)."""
    norms = np.linalg.norm(X, axis=1)
    return X / np.maximum(norms, 1.0)[:, None]


def bundled_rows(name):
    """A table bundled with scikit-learn as ``(X, y)``: rows of norm <= 1, labels as shipped.

    ``name`` is ``"breast_cancer"``, ``"wine"``, ``"iris"`` or ``"digits"``.
    Breast cancer, wine and iris are standardised, then divided by ``sqrt(d)``
    (the norm of a standardised row with unit features) and rows above norm 1
    are shrunk to it; the standardisation reads the whole table, a stand-in
    for feature scales a user would know. Digits' 64 pixels are in [0, 16], so
    a row has norm <= 128, a public bound.
    """
    from sklearn.datasets import load_breast_cancer, load_digits, load_iris, load_wine

    if name == "digits":
        X, y = load_digits(return_X_y=True)
        return X / 128.0, y
    loaders = {"breast_cancer": load_breast_cancer, "wine": load_wine, "iris": load_iris}
    if name not in loaders:
        raise ValueError(f"unknown bundled table {name!r}")
    X, y = loaders[name](return_X_y=True)
    return standardised_rows(X), y


def standardised_rows(X):
    """Columns standardised, divided by ``sqrt(d)``, rows above norm 1 shrunk to it.

    The standardisation reads the whole table: a stand-in for feature scales a
    user would know, used for the real tables of the benchmarks.
    """
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    return unit_rows(X / math.sqrt(X.shape[1]))


def load_bundled_table(name):
    """One of :data:`BUNDLED_TABLES` as a binary task ``(X, y)`` (:func:`bundled_rows`)."""
    if name not in BUNDLED_TABLES:
        raise ValueError(f"unknown bundled table {name!r}; one of {BUNDLED_TABLES}")
    X, y = bundled_rows(name)
    if name == "wine":
        return X, (y == 0).astype(int)
    if name == "digits":
        return X, (y >= 5).astype(int)
    return X, y


def cv_folds(y, n_splits=10, seed=0):
    """Stratified, shuffled ``n_splits``-fold CV: a list of (train_idx, test_idx)."""
    from sklearn.model_selection import StratifiedKFold

    skf = StratifiedKFold(n_splits=n_splits, shuffle=True, random_state=seed)
    return list(skf.split(np.zeros(len(y)), y))


def fold_ids(folds, n):
    """Vector giving, for each row, the fold in which it is a test row."""
    ids = np.full(n, -1, dtype=np.int64)
    for k, (_, test) in enumerate(folds):
        ids[test] = k
    return ids


def seed_for(*parts):
    """A reproducible int seed for one (seed, fold, run, config...) cell.

    dpsk takes only None or an int as ``random_state`` (a seeded model is not
    private; benchmarks seed for reproducibility only).
    """
    sequence = np.random.SeedSequence([int(p) & 0xFFFFFFFF for p in parts])
    return int(sequence.generate_state(1)[0])


def log10_label(alpha):
    """'10^-2.5' style label for an alpha on a half-decade grid."""
    e = math.log10(alpha)
    return f"10^{e:g}" if abs(e * 2 - round(e * 2)) < 1e-9 else f"{alpha:.3g}"


# --------------------------------------------------------------------- evaluation
def make_estimator(loss, method, alpha, epsilon, seed_seq, n_train, fit_intercept=False,
                   tol=1e-10):
    """The estimator of one (loss, method) cell; None for the non-private Huber solve."""
    from sklearn.linear_model import LogisticRegression

    from dpsk import BudgetAccountant, DPHuberSVM, DPLogisticRegression

    if method == "nonprivate":
        if loss == "logistic":
            return LogisticRegression(C=1.0 / (n_train * alpha), fit_intercept=fit_intercept,
                                      solver="lbfgs", max_iter=1000)
        return None
    cls = DPLogisticRegression if loss == "logistic" else DPHuberSVM
    kwargs = dict(h=HUBER_H) if loss == "huber" else {}
    # A fresh, unlimited ledger per fit: the benchmark spends far more than any
    # sensible budget, and the process-wide default ledger would grow without end.
    return cls(epsilon=epsilon, alpha=alpha, perturbation=method, fit_intercept=fit_intercept,
               tol=tol, accountant=BudgetAccountant(), random_state=seed_seq, **kwargs)


def _nonprivate_huber_fit(X, y01, alpha):
    from dpsk._optimize._binary import minimize_regularized_loss
    from dpsk._optimize._losses import HuberLoss

    y_pm = np.where(y01 > 0, 1.0, -1.0)
    res = minimize_regularized_loss(HuberLoss(HUBER_H), X, y_pm, alpha,
                                    tol=NONPRIVATE_HUBER_TOL, max_iter=5000)
    return res.w


def evaluate_cell(X, y, train, test, loss, method, alpha, epsilon, seed_seq, tol=1e-10):
    """Fit one model on ``train``, return a dict with test error and fit time.

    Failures (e.g. ``dpsk.PrivateFitError``) are recorded, not raised: ``error`` is
    NaN and ``status`` holds the exception.
    """
    Xtr, ytr, Xte, yte = X[train], y[train], X[test], y[test]
    status = "ok"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # clipping of rows at 1 + 2e-16, lbfgs notes
        t0 = time.perf_counter()
        try:
            if loss == "huber" and method == "nonprivate":
                w = _nonprivate_huber_fit(Xtr, ytr, alpha)
                fit_time = time.perf_counter() - t0
                pred = (Xte @ w > 0).astype(ytr.dtype)
            else:
                est = make_estimator(loss, method, alpha, epsilon, seed_seq, len(train), tol=tol)
                est.fit(Xtr, ytr)
                fit_time = time.perf_counter() - t0
                pred = est.predict(Xte)
            error = float(np.mean(pred != yte))
        except Exception as exc:  # noqa: BLE001 - recorded in the results
            fit_time = time.perf_counter() - t0
            error = float("nan")
            status = f"{type(exc).__name__}: {str(exc)[:120]}"
    return {"error": error, "fit_time": fit_time, "status": status}


# ------------------------------------------------------------------ parallel + bar
def fit_and_score(estimator, X_train, y_train, X_test, y_test):
    """Fit ``estimator`` and return ``(test error, fit seconds, status)``.

    Warnings are silenced (clipped rows); a failure is recorded in ``status``
    (``"ok"`` otherwise) with a NaN error, so that one bad cell does not stop a
    long run.
    """
    status = "ok"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        try:
            estimator.fit(X_train, y_train)
            fit_time = time.perf_counter() - t0
            error = float(np.mean(estimator.predict(X_test) != y_test))
        except Exception as exc:  # noqa: BLE001 - recorded and reported
            fit_time = time.perf_counter() - t0
            error = float("nan")
            status = f"{type(exc).__name__}: {str(exc)[:160]}"
    return error, fit_time, status


def progress(iterable, total=None, desc=""):
    """tqdm if importable, else a plain counter printed to stderr."""
    try:
        from tqdm.auto import tqdm

        return tqdm(iterable, total=total, desc=desc, leave=False, file=sys.stderr)
    except ImportError:
        return _SimpleProgress(iterable, total, desc)


class _SimpleProgress:
    def __init__(self, iterable, total, desc):
        self.iterable, self.total, self.desc = iterable, total, desc

    def __iter__(self):
        t0 = time.time()
        step = max(1, (self.total or 100) // 20)
        for i, item in enumerate(self.iterable, 1):
            if i % step == 0 or i == self.total:
                print(f"  {self.desc} {i}/{self.total or '?'} ({time.time() - t0:.0f}s)",
                      file=sys.stderr, flush=True)
            yield item


def run_tasks(func, tasks, n_jobs=1, desc=""):
    """``[func(*t) for t in tasks]`` over joblib workers, in order, with a progress bar."""
    tasks = list(tasks)
    if n_jobs == 1 or len(tasks) <= 1:
        return [func(*t) for t in progress(tasks, total=len(tasks), desc=desc)]
    from joblib import Parallel, delayed

    gen = Parallel(n_jobs=n_jobs, return_as="generator")(delayed(func)(*t) for t in tasks)
    return list(progress(gen, total=len(tasks), desc=desc))


def default_jobs():
    """Workers for accuracy experiments: all cores (BLAS is pinned to 1 thread each)."""
    return os.cpu_count() or 1


def limit_blas_threads():
    """One BLAS thread per process, so joblib workers do not oversubscribe the cores.

    Must run before numpy is first used in a worker; joblib's loky backend
    already does this for its workers, and this covers the parent too.
    """
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")


# ------------------------------------------------------------------ summarising
def mean_std(values):
    vals = [v for v in values if not (isinstance(v, float) and math.isnan(v))]
    if not vals:
        return float("nan"), float("nan"), 0
    m = statistics.fmean(vals)
    s = statistics.stdev(vals) if len(vals) > 1 else 0.0
    return m, s, len(vals)


def median(values):
    vals = [v for v in values if not math.isnan(v)]
    return statistics.median(vals) if vals else float("nan")


def format_table(rows, columns, floatfmt="{:.4f}"):
    """Plain-text table of ``rows`` (dicts) with the given ``columns``."""
    def fmt(v):
        if isinstance(v, float):
            return "nan" if math.isnan(v) else floatfmt.format(v)
        return str(v)

    cells = [[str(c) for c in columns]] + [[fmt(r.get(c, "")) for c in columns] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(columns))]
    lines = ["  ".join(c.rjust(w) for c, w in zip(row, widths)) for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


# ------------------------------------------------------------------ output files
def write_csv(name, rows, columns=None, comment_lines=()):
    """Write ``rows`` (dicts) to ``<results_dir()>/<name>.csv``; return the path.

    ``benchmarks/results/`` for full runs, ``benchmarks/results/quick/`` (not
    committed) for ``--quick`` ones. ``comment_lines`` are written first, each
    prefixed with ``# `` (read back with ``pandas.read_csv(path, comment="#")``).
    """
    path = results_dir() / f"{name}.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    if columns is None:
        columns = []
        for r in rows:
            for k in r:
                if k not in columns:
                    columns.append(k)
    with open(path, "w", newline="") as fh:
        for line in comment_lines:
            fh.write(f"# {line}\n")
        writer = csv.DictWriter(fh, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        for r in rows:
            writer.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in r.items()})
    return path


def read_csv(name, missing_ok=False):
    """The rows (dicts of strings) of ``<results_dir()>/<name>.csv``, as :func:`write_csv` wrote it.

    Its ``# `` comment lines are skipped. A missing file raises
    ``FileNotFoundError``, or gives ``[]`` with ``missing_ok=True``.
    """
    path = results_dir() / f"{name}.csv"
    if missing_ok and not path.exists():
        return []
    with open(path, newline="") as fh:
        return list(csv.DictReader(line for line in fh if not line.startswith("#")))


def get_pyplot():
    """``matplotlib.pyplot`` with the Agg backend, or None when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


def save_figure(fig, name):
    path = results_dir() / f"{name}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    return path


# ------------------------------------------------------------------ provenance
def machine_info():
    """nproc, CPU model, RAM, load, library versions and the date, for provenance."""
    cpu = platform.processor() or "unknown"
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    ram_gb = float("nan")
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemTotal"):
                    ram_gb = int(line.split()[1]) / 1024**2
                    break
    except OSError:
        pass
    try:
        load = os.getloadavg()
    except OSError:
        load = (float("nan"),) * 3
    import scipy
    import sklearn

    import dpsk

    return {
        "date": datetime.date.today().isoformat(),
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "ram_gb": round(ram_gb, 1),
        "loadavg_1m": round(load[0], 2),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "sklearn": sklearn.__version__,
        "dpsk": dpsk.__version__,
    }


def machine_line(info=None):
    info = info or machine_info()
    return (f"{info['date']} | nproc={info['nproc']} | cpu={info['cpu']} | "
            f"RAM={info['ram_gb']} GB | load(1m)={info['loadavg_1m']} | python {info['python']}, "
            f"numpy {info['numpy']}, scipy {info['scipy']}, sklearn {info['sklearn']}, "
            f"dpsk {info['dpsk']}")


def load_warning(info=None):
    """A warning string when the 1-minute load average suggests noisy timings."""
    info = info or machine_info()
    if info["loadavg_1m"] > 0.5 * (info["nproc"] or 1):
        return (f"WARNING: load average {info['loadavg_1m']} on {info['nproc']} cores: "
                "timings are from a loaded machine; rerun on a quiet one.")
    return ""


def command_line():
    return "python -m benchmarks " + " ".join(sys.argv[1:]) if sys.argv else ""


def header(title, info=None):
    info = info or machine_info()
    bar = "=" * len(title)
    print(f"{bar}\n{title}\n{bar}\n{machine_line(info)}", flush=True)
    w = load_warning(info)
    if w:
        print(w, flush=True)
