"""Preprocessing that is safe to put in front of a private model.

A transformer that learns from the training data (``StandardScaler`` learns means
and variances, ``MinMaxScaler`` the minimum and maximum, ``PCA`` directions) puts
those statistics into the pipeline without any noise: the released pipeline is
then not differentially private, whatever the final estimator guarantees. The
transformers here never learn from data; their parameters are declared by the
user. Use :func:`dpsk.check_pipeline` to find the steps of a pipeline that do learn.
"""

from ._data import BoundedScaler, RowNormClipper
from ._table import make_table_encoder, table_norm_bound

__all__ = ["BoundedScaler", "RowNormClipper", "make_table_encoder", "table_norm_bound"]
