"""FINDING candidate: a CSR matrix with duplicate (non-summed) entries.
row_norms() squares entries one by one, while X @ w sums duplicates: the
clipping bound is computed on the wrong norm and the design rows exceed 1."""
import numpy as np
import scipy.sparse as sp
from dpsk._validation import row_norms, design_matrix

k = 100  # one row: k duplicate entries of 1.0 in column 0 (value k)
X = sp.csr_matrix((np.ones(k + 1), np.r_[np.zeros(k, int), 1], [0, k, k + 1]), shape=(2, 2))
print("has_canonical_format:", X.has_canonical_format)
print("true dense rows:", X.toarray().tolist())
print("row_norms (used for clipping):", row_norms(X))
Z = design_matrix(X, data_norm=1.0, fit_intercept=False)
print("norms of design rows as the solver sees them (Z @ e):",
      np.linalg.norm(Z.toarray(), axis=1), "(must be <= 1)")
from sklearn.utils.validation import check_array
Xc = check_array(X, accept_sparse="csr", dtype=np.float64)
print("after sklearn check_array: canonical?", Xc.has_canonical_format,
      "row_norms:", row_norms(Xc))
