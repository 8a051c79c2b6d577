"""The certified solver's passes over the data as per-block reductions.

:func:`dpsk._optimize._solver.minimize_regularized_loss` solves a chunked design
(``dpsk._data._design.DesignRows``) or a Dask design (``dpsk._data._dask.DaskDesignRows``)
with :class:`BlockObjective`. Every pass the solver makes over the rows is a
*reduction*: a function of one block of raw rows ``X_b`` and labels ``y_b``
(the ``_*_sums`` kernels below) returns a small result (a number, a vector of
length ``d``, a ``d x d`` matrix), and the client adds the block results in
block order (:func:`dpsk._data._design.sum_in_order`). The blocks are the design's (its ``block``
rows in memory, the chunks of the Dask array on a cluster); a *row-block
executor* (``design.row_blocks(y)``) runs a kernel on every block, in this
process or on the Dask workers, and returns the results in block order.
Because the kernels and the order of the additions are the same, a Dask fit
computes the same bits as the in-memory chunked fit with the same blocks.

Inside a kernel the design rows are built in *chunks* of at most
``spec.chunk`` rows (``dpsk._data._design.design_block``, from the rows of ``X_b``
alone), so a worker holds one chunk of float64 design rows (at most 4 MiB)
whatever the size of its block, and the chunk sums are added one after another.

The passes, and what each returns per block:

* clipping factors (once): kept next to each block (8 bytes a row) and passed
  to every kernel below, so no pass recomputes the row norms of ``X_b``;
* setup (once): the largest row-norm bound and whether every label is +-1;
* value and gradient: ``sum_i l(z_i)`` and ``sum_i y_i l'(z_i) x_i`` with the
  margins ``z_i = y_i x_i.w`` computed in the kernel;
* Hessian: ``sum_i c_i x_i x_i^T`` with ``c_i = l''(z_i) / n``;
* certificate: ``sum_i r_i x_i`` and the two error sums ``sum_i D_i rho_i``
  and ``sum_i |r_i| rho_i`` of :meth:`dpsk._optimize._solver._Objective.certificate`,
  with the row norms ``rho_i``, margins and derivative errors computed in the
  kernel;
* line search and Hessian-vector products (conjugate gradients, ``d > 2000``):
  one pass *keeps* per-row vectors next to their block (the margins along the
  line; the curvatures), in this process or persisted on the workers, and
  each evaluation then returns one number or one vector per block.

Vectors of length ``n`` (margins, row norms, residuals, clipping factors)
never travel: they are recomputed inside each kernel or kept with their block.

The certificate stays rigorous. It needs a bound on the rounding error of
``sum_i r_i x_i`` that holds for the order of the additions actually used:
each chunk's sum (at most ``spec.chunk`` rows, one BLAS call) errs by at most
``gamma_chunk`` in the relative sense of Higham's bound, and the ``m`` chunk
sums are added in a tree (one after another inside a block, then the block
totals one after another on the client) whose ``m - 1`` additions touch each
chunk sum at most ``m - 1`` times: ``gamma_{m-1}``
(:func:`dpsk._optimize._solver.chunked_sum_factor`, where ``m`` counts every chunk of
every block). The other error terms are per-row bounds, and their sums are
sums of non-negative terms covered by ``dpsk._optimize._solver._BOUND_SAFETY``.
"""

import math
from dataclasses import dataclass

import numpy as np

from .._data._design import (
    block_rows,
    clip_factors_by_chunks,
    design_block,
    row_slices,
    sum_in_order,
)
from ._solver import (
    _HESSIAN_BLOCK_BYTES,
    SolverError,
    _CertifiedObjective,
    _check_scalars,
    _continuation_losses,
    _derivative_error,
    _gamma,
    certificate_chunk_rows,
    check_vectors,
    chunked_sum_factor,
    row_norm_bounds,
    weighted_gram,
)

__all__ = ["BlockObjective", "BlockSpec", "block_objective"]


@dataclass(frozen=True)
class BlockSpec:
    """What a kernel needs besides its block: public quantities only.

    ``data_norm`` and ``fit_intercept`` build the design rows, ``n`` is the
    total number of rows and ``chunk`` the most design rows built at once.
    """

    data_norm: float
    fit_intercept: bool
    n: int
    chunk: int


def _clip_factors(X_b, y_b, state, spec):
    """Kept per block: the clipping factors of ``X_b``, chunk by chunk as :func:`_chunks`.

    Every pass needs them and they depend on the rows alone, so they are
    computed once per fit (8 bytes a row, next to the block) instead of once
    per pass. Same function, same chunks: the design rows are the same bits.
    """
    return clip_factors_by_chunks(X_b, spec.data_norm, spec.chunk)


def _chunks(X_b, factors_b, spec):
    """Yield ``(rows, Z)`` over chunks of the design rows of the block ``X_b``.

    ``factors_b`` are the block's clipping factors kept by :func:`_clip_factors`.
    One buffer is reused, so ``Z`` is valid until the next chunk: a fresh chunk
    each time made glibc return and re-fault the pages (58 000 page faults in a
    fit at n = 1e5, 20% of its time).
    """
    n_b = X_b.shape[0]
    buffer = np.empty((min(spec.chunk, n_b), X_b.shape[1] + int(spec.fit_intercept)))
    for rows in row_slices(n_b, spec.chunk):
        yield rows, design_block(X_b[rows], spec.data_norm, spec.fit_intercept,
                                 out=buffer[: rows.stop - rows.start], factors=factors_b[rows])


def _labels(y_b):
    return np.asarray(y_b, dtype=float)


def _setup_sums(X_b, y_b, factors, spec):
    """``(max rho_i, all labels +-1)`` of one block (NaN propagates into the max)."""
    y_b = _labels(y_b)
    rho = [row_norm_bounds(Z).max(initial=0.0) for _, Z in _chunks(X_b, factors, spec)]
    return float(np.max(rho, initial=0.0)), bool(np.all((y_b == 1.0) | (y_b == -1.0)))


def _value_and_grad_sums(X_b, y_b, factors, w, loss, spec, with_value):
    """``(sum_i l(z_i), sum_i y_i l'(z_i) x_i)`` over one block."""
    y_b = _labels(y_b)
    value, grad = 0.0, np.zeros(w.shape[0])
    for rows, Z in _chunks(X_b, factors, spec):
        z = y_b[rows] * (Z @ w)
        if with_value:
            value += float(loss.value(z).sum())
        grad += Z.T @ (y_b[rows] * loss.derivative(z))
    return value, grad


def _hessian_sums(X_b, y_b, factors, w, loss, spec):
    """``sum_i (l''(z_i) / n) x_i x_i^T`` over one block."""
    y_b = _labels(y_b)
    H = np.zeros((w.shape[0], w.shape[0]))
    for rows, Z in _chunks(X_b, factors, spec):
        c = loss.second_derivative(y_b[rows] * (Z @ w)) / spec.n
        H += weighted_gram(Z, c, Z.shape[0])
    return H


def _curvatures(X_b, y_b, factors, w, loss, spec):
    """Kept per block: ``l''(z_i) / n`` for the Hessian-vector products."""
    y_b = _labels(y_b)
    out = np.empty(X_b.shape[0])
    for rows, Z in _chunks(X_b, factors, spec):
        out[rows] = loss.second_derivative(y_b[rows] * (Z @ w)) / spec.n
    return out


def _hessian_vector_sums(X_b, y_b, kept, v, spec):
    """``sum_i c_i x_i (x_i.v)`` over one block; ``kept = (factors, c)``, ``c`` from
    :func:`_curvatures`."""
    factors, curv = kept
    out = np.zeros(v.shape[0])
    for rows, Z in _chunks(X_b, factors, spec):
        out += Z.T @ (curv[rows] * (Z @ v))
    return out


def _line_margins(X_b, y_b, factors, w, step, spec):
    """Kept per block: the margins at ``w`` and along ``step`` (two rows)."""
    y_b = _labels(y_b)
    out = np.empty((2, X_b.shape[0]))
    for rows, Z in _chunks(X_b, factors, spec):
        out[0, rows] = y_b[rows] * (Z @ w)
        out[1, rows] = y_b[rows] * (Z @ step)
    return out


def _line_slope_sums(margins, t, loss):
    """``sum_i l'(z_i + t a_i) a_i`` over one block's kept margins."""
    z0, a = margins
    return float(loss.derivative(z0 + t * a) @ a)


def _certificate_sums(X_b, y_b, factors, w, w_norm, loss, spec):
    """``(sum_i r_i x_i, sum_i D_i rho_i, sum_i |r_i| rho_i)`` over one block.

    The per-row terms of :meth:`dpsk._optimize._solver._Objective.certificate`: ``rho_i``
    bounds the row norm, ``delta_i = gamma_d rho_i ||w||`` the margin's
    rounding error, ``D_i`` the derivative's error and ``r_i = y_i
    fl(l'(z~_i))`` the computed residual.
    """
    y_b = _labels(y_b)
    d = w.shape[0]
    v, err_derivative, err_sum = np.zeros(d), 0.0, 0.0
    for rows, Z in _chunks(X_b, factors, spec):
        rho = row_norm_bounds(Z)
        z = y_b[rows] * (Z @ w)
        r = y_b[rows] * loss.derivative(z)
        delta = _gamma(max(d, 1)) * rho * w_norm
        err_derivative += float(_derivative_error(loss, z, delta) @ rho)
        err_sum += float(np.abs(r) @ rho)
        v += Z.T @ r
    return v, err_derivative, err_sum


class BlockObjective(_CertifiedObjective):
    """F of a margin loss on a chunked or Dask design, every pass a block reduction.

    The methods are those of :class:`dpsk._optimize._solver._Objective` (same formulas,
    module docstring for the passes); ``X`` is the design (for its shape) and
    ``blocks`` the row-block executor of ``(X, y)``.
    """

    def __init__(self, loss, X, blocks, spec, lam, linear, max_row_norm=None, factors=None):
        super().__init__(X, lam, linear)
        self.loss, self.blocks, self.spec = loss, blocks, spec
        self._max_row_norm = max_row_norm
        # Per-block clipping factors, kept next to the blocks for the whole fit.
        self.factors = blocks.keep(_clip_factors, spec) if factors is None else factors

    @property
    def curvature(self):
        return self.loss.curvature

    def continuation_stages(self):
        """Huber of small width: wider stages first.

        As ``dpsk._optimize._solver._continuation_losses``.
        """
        return [BlockObjective(stage, self.X, self.blocks, self.spec, self.lam, self.linear,
                               self._max_row_norm, self.factors)
                for stage in _continuation_losses(self.loss)[:-1]] + [self]

    def setup(self):
        """The setup pass: ``(max rho_i, all labels +-1)``; keeps the max."""
        parts = self.blocks.map(_setup_sums, self.spec, state=self.factors)
        self._max_row_norm = float(np.max([rho for rho, _ in parts]))
        return self._max_row_norm, all(ok for _, ok in parts)

    def max_row_norm(self):
        if self._max_row_norm is None:
            self.setup()
        return self._max_row_norm

    def _value_and_grad(self, w, with_value):
        value, grad = sum_in_order(self.blocks.map(_value_and_grad_sums, w, self.loss, self.spec,
                                                with_value, state=self.factors))
        return value / self.n, grad / self.n + self._regulariser_gradient(w)[0]

    def grad(self, w):
        return self._value_and_grad(w, False)[1]

    def value_and_grad(self, w):
        value, grad = self._value_and_grad(w, True)
        value += 0.5 * self.lam * (w @ w)
        if self.linear is not None:
            value += self.linear @ w
        return value, grad

    def hessian_at(self, w):
        H = sum_in_order(self.blocks.map(_hessian_sums, w, self.loss, self.spec,
                                      state=self.factors))
        H[np.diag_indices_from(H)] += self.lam
        return H

    def hessp_at(self, w):
        curv = self.blocks.keep(_curvatures, w, self.loss, self.spec, state=self.factors)
        kept = list(zip(self.factors, curv))
        blocks, spec, lam = self.blocks, self.spec, self.lam

        def hessp(v):
            v = np.asarray(v, dtype=float).ravel()
            return sum_in_order(blocks.map(_hessian_vector_sums, v, spec, state=kept)) + lam * v

        return hessp

    def line_derivative(self, w, step):
        """``phi'(t)`` as in ``_Objective.line_derivative``; margins kept per block."""
        margins = self.blocks.keep(_line_margins, w, step, self.spec, state=self.factors)
        c0 = self.lam * (w @ step) + (0.0 if self.linear is None else self.linear @ step)
        c1 = self.lam * (step @ step)
        blocks, loss, n = self.blocks, self.loss, self.n

        def dphi(t):
            return sum_in_order(blocks.map_state(_line_slope_sums, margins, t, loss)) / n \
                + c0 + t * c1

        return dphi

    def certificate(self, w):
        """``(g, E)`` with ``||grad F(w)|| <= g + E``; see the module docstring.

        The derivation is that of ``_Objective.certificate``; only the sum
        ``X^T r`` is grouped differently (chunks of at most ``spec.chunk`` rows
        in every block), and :func:`dpsk._optimize._solver.chunked_sum_factor` with ``m``
        the number of chunks of all blocks bounds it for that grouping.
        """
        d = w.shape[0]
        w_norm = float(np.linalg.norm(w)) * (1.0 + 2.0 * _gamma(d + 2))
        v, err_derivative, err_sum = sum_in_order(
            self.blocks.map(_certificate_sums, w, w_norm, self.loss, self.spec,
                            state=self.factors))
        m = sum(math.ceil(length / self.spec.chunk) for length in self.blocks.lengths)
        err = err_derivative / self.n
        err += chunked_sum_factor(self.spec.chunk, m) * err_sum / self.n
        return self._certificate_tail(v / self.n, w, err)


def block_objective(loss, X, y, lam, linear, w0, tol):
    """The :class:`BlockObjective` of a chunked or Dask design, its domain checked.

    Raises ``SolverError`` for input outside the solver's domain (as
    ``dpsk._optimize._solver._check_domain``): the setup pass answers only whether the
    rows are finite and the labels +-1.
    """
    n, d = X.shape
    if not (n >= 1 and getattr(y, "ndim", None) == 1 and y.shape[0] == n):
        raise SolverError("X must be a matrix with at least one row, and y a vector "
                          "with one label per row of X.")
    _check_scalars(lam, tol)
    check_vectors(d, linear, w0)
    chunk = min(certificate_chunk_rows(n), block_rows(d, _HESSIAN_BLOCK_BYTES))
    spec = BlockSpec(X.data_norm, X.fit_intercept, n, chunk)
    obj = BlockObjective(loss, X, X.row_blocks(y), spec, lam, linear)
    rho_max, labels_ok = obj.setup()
    if not math.isfinite(rho_max):
        raise SolverError("X must contain only finite values, with rows of moderate norm.")
    if not labels_ok:
        raise SolverError("y must contain only the labels -1 and +1.")
    return obj
