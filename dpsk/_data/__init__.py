"""The input domain and the design rows (private to dpsk).

One job: turn the caller's ``X`` and ``y`` into what the proofs assume.
``_validation`` checks the domain (declared classes, labels, dtypes) and refuses
what lies outside it without quoting a value; ``_design`` builds the design rows
(clipped to ``data_norm``, with the intercept column, norm <= 1) stored or block
by block; ``_dask`` does the same for Dask arrays; ``_threads`` limits BLAS
threads inside a fit. This wing imports nothing else from dpsk.
"""
