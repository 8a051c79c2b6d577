"""Preprocessing that is safe to put in front of a private model.

A transformer that learns from the training data (``StandardScaler`` learns means
and variances, ``MinMaxScaler`` the minimum and maximum, ``PCA`` directions) puts
those statistics into the pipeline without any noise: the released pipeline is
then not differentially private, whatever the final estimator guarantees. Most
transformers here never learn from data; their parameters are declared by the
user. :class:`PrivateBoundsScaler` learns clipping bounds, but privately: its
fit is an epsilon-DP release charged to the ledger. Use
:func:`dpsk.check_pipeline` to find the steps of a pipeline that learn without noise.
"""

from ._bounds import (
    PrivateBoundsScaler,
    PrivateBoundsWarning,
    bounds_epsilon_needed,
    bounds_grid,
)
from ._data import BoundedScaler, RowNormClipper
from ._table import TableEncoder, make_table_encoder, table_norm_bound

__all__ = ["BoundedScaler", "PrivateBoundsScaler", "PrivateBoundsWarning", "RowNormClipper",
           "TableEncoder", "bounds_epsilon_needed", "bounds_grid", "make_table_encoder",
           "table_norm_bound"]
