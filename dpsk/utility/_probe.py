"""Probe mode (Li et al.): extrapolate utility in epsilon from one released private model.

Everything after the probe's fit is post-processing of public things only: the
released weights, the public parameters (``epsilon``, ``delta``, ``alpha``,
``tol``, ``data_norm``, the loss), the public metadata ``n`` (the private
training-set size), the noise law's scale as a function of epsilon (public,
``dpsk.mechanisms._erm._noise_law``), and public data. The private data is read once, by
the probe's own ``fit``, which charges its ledger.
"""

import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted, check_X_y, validate_data

from .._data._design import INTERCEPT_SCALE, clip_rows, design_matrix
from .._optimize._binary import minimize_regularized_loss
from ..kernel._random_features import DPKernelClassifier, fourier_features
from ..mechanisms._erm import _noise_law, _tolerance_floor
from ._common import check_count, check_epsilons, check_estimator, describe
from ._curve import UtilityCurve

__all__ = ["probe_curve", "perturbed_optimum_derivative", "ProbeRangeWarning"]

#: How far (as a ratio) a target epsilon may lie from the probe's before the
#: extrapolation is flagged. Li et al. (Theorem 4) bound the extrapolation's
#: error by a term that grows with the distance between the two epsilons; on
#: Adult the inverse extrapolation stays within 0.01 accuracy of the Monte Carlo
#: truth for targets within a factor 10 of the probe (docs/choosing_epsilon.rst).
PROBE_RANGE = 10.0


class ProbeRangeWarning(UserWarning):
    """Some epsilons of a probe curve lie far from the probe's own epsilon.

    The extrapolation of Li et al. is accurate only when the probe and the
    target epsilons are of the same magnitude. The warning is computed from the
    public epsilons only.
    """


def _warn_if_far(eps, epsilon_probe):
    # A relative slack, so that the default grid's ends (rounded by logspace) pass.
    slack = 1.0 + 1e-9
    far = (eps > PROBE_RANGE * epsilon_probe * slack) | (eps * slack < epsilon_probe / PROBE_RANGE)
    if np.any(far):
        warnings.warn(
            f"{int(far.sum())} of the {eps.size} epsilons lie more than a factor "
            f"{PROBE_RANGE:g} from the probe's epsilon={epsilon_probe:g}; the "
            "extrapolation is accurate only near the probe (Li et al., Theorem 4). Probe "
            "at an epsilon of the magnitude you intend to use, or use the public mode.",
            ProbeRangeWarning, stacklevel=3)

EXTRAPOLATIONS = ("inverse", "tangent")

#: Relative step of the central difference of the public noise law in epsilon.
_LOG_STEP = 1e-5


def probe_curve(estimator, X, y, *, X_private=None, y_private=None, n_samples=None,
                epsilons=None, extrapolation="inverse"):
    """Extrapolate held-out utility against epsilon from one private probe fit.

    The method of Li et al. (Understanding the effect of epsilon on utility
    in private ERM): fit once at the probe epsilon ``estimator.epsilon`` on
    the private data, differentiate the perturbed optimum with respect to
    epsilon (:func:`perturbed_optimum_derivative`, with the sign of their
    Eq. 6 corrected) and extrapolate.

    Privacy. The probe's fit is a normal private fit: it charges
    ``(epsilon, delta)`` to the estimator's ledger (``accountant`` or the
    default), and the probe model is a release like any other. The curve is
    computed from that release and public inputs only (post-processing), so
    it costs nothing more: the released weights ``w``; the public
    parameters; ``n``, the private training-set size (public metadata); the
    noise scale ``s(epsilon)`` and the objective's regularisation
    ``lambda(epsilon)``, public functions of epsilon; and the public data
    ``(X, y)``, on which the gradient and Hessian that the derivative needs
    are evaluated (the private data's would leak, even the gradient at the
    released ``w``), and on which the loss and accuracy are measured.

    Parameters
    ----------
    estimator : DPLogisticRegression, DPHuberSVM or DPKernelClassifier
        Binary, ``perturbation`` "objective" or "output", pure or Gaussian.
        Fitted here on ``(X_private, y_private)`` if given (charged), else
        it must be a fitted probe and ``n_samples`` its training-set size.
    X, y : array-like
        Public data: the surrogate for the private data's gradient and
        Hessian, and the data the utility is measured on.
    X_private, y_private : array-like, optional
        The private training data for the probe's fit.
    n_samples : int, optional
        Rows of the probe's private training set, if it is already fitted.
    epsilons : array-like, default=None
        Where to extrapolate. By default 11 values from a tenth of the probe's
        epsilon to ten times it; epsilons further from the probe give a
        :class:`ProbeRangeWarning` (the extrapolation is accurate only near
        the probe, Li et al., Theorem 4).
    extrapolation : {"inverse", "tangent"}, default="inverse"
        "tangent": the paper's Eq. 8, the loss linear in epsilon with the
        slope of the derivative; the accuracy of the model moved along the
        tangent ``w + w' (epsilon - epsilon_probe)``. "inverse": the model
        moved linearly in the noise scale, ``w + (dw/ds) (s(epsilon) -
        s(epsilon_probe))`` (``s`` is proportional to ``1/epsilon`` for the
        pure mechanisms, so this is linear in ``1/epsilon``), and its loss and
        accuracy measured exactly. For output perturbation it is the exact
        path of the released draw; on Adult it is the more accurate of the
        two (docs/choosing_epsilon.rst).

    Returns
    -------
    UtilityCurve
        ``mode="probe"``: one column, no bands.
    """
    check_estimator(estimator, pipelines=False)
    eps = None if epsilons is None else check_epsilons(epsilons)
    if extrapolation not in EXTRAPOLATIONS:
        raise ValueError(f"extrapolation must be one of {EXTRAPOLATIONS}, got {extrapolation!r}.")
    if estimator.perturbation not in ("objective", "output"):
        raise ValueError(
            "Probe mode needs a perturbed optimum (perturbation='objective' or 'output'); "
            "noisy gradient descent has none. Use the public mode (utility_curve)."
        )
    if X_private is not None:
        if y_private is None:
            raise ValueError("y_private is required with X_private.")
        estimator.fit(X_private, y_private)  # the probe: charged to its ledger
        n = X_private.shape[0] if hasattr(X_private, "shape") else len(X_private)
    else:
        try:
            check_is_fitted(estimator, "coef_")
        except NotFittedError:
            raise ValueError(
                "Probe mode needs a probe: pass X_private= and y_private= (the probe fit is "
                "charged to the estimator's ledger), or an estimator already fitted on the "
                "private data together with n_samples= (its training-set size)."
            ) from None
        n = check_count(n_samples, "n_samples (the probe's training-set size)", 1)
    if len(estimator.classes_) != 2:
        raise ValueError("Probe mode supports binary models only.")
    loss = estimator._make_loss(2)
    if loss.n_outputs != 1:
        raise ValueError("Probe mode needs a margin loss (multi_class='multinomial' is not one).")
    X, y = check_X_y(X, y, accept_sparse="csr", dtype=np.float64)
    if not np.all(np.isin(y, estimator.classes_)):
        raise ValueError("y holds labels outside the probe's classes_.")
    Z, w = _design(estimator, X)
    y_pm = np.where(y == estimator.classes_[1], 1.0, -1.0)
    epsilon_probe, delta = estimator.privacy_spent_
    if eps is None:
        eps = epsilon_probe * np.logspace(-1.0, 1.0, 11)  # within PROBE_RANGE of the probe
    _warn_if_far(eps, epsilon_probe)
    law = _law(estimator, loss, n, Z.shape[1], delta)
    w_star = None
    if estimator.perturbation == "output":
        w_star = _public_minimizer(loss, Z, y_pm, _fitted_alpha(estimator), estimator.tol)
    dw = perturbed_optimum_derivative(w, Z, y_pm, loss, law, epsilon_probe, w_star=w_star)

    scale_probe = law(epsilon_probe)[0]
    accuracy, losses = np.empty(len(eps)), np.empty(len(eps))
    for i, e in enumerate(eps):
        if extrapolation == "tangent":
            w_e = w + dw * (e - epsilon_probe)
            slope = loss.mean_gradient(Z, y_pm, w) @ dw
            losses[i] = _mean_loss(loss, Z, y_pm, w) + slope * (e - epsilon_probe)
        else:
            kappa = _log_scale_derivative(law, epsilon_probe)
            w_e = w + dw / kappa * (law(e)[0] / scale_probe - 1.0)
            losses[i] = _mean_loss(loss, Z, y_pm, w_e)
        accuracy[i] = np.mean(y_pm * np.asarray(Z @ w_e).ravel() > 0)
    zeros = np.zeros(len(eps))
    return UtilityCurve(
        epsilons=eps, accuracy=accuracy[:, None], loss=losses[:, None],
        accuracy_row_var=zeros, loss_row_var=zeros, confidence=0.0, mode="probe",
        n_train=n, n_test=len(y),
        description=describe(estimator, f"probe at epsilon={epsilon_probe:g}, {extrapolation}"),
    )


def perturbed_optimum_derivative(w, Z, y, loss, law, epsilon, w_star=None):
    """``dw/depsilon`` of the perturbed optimum, with the noise draw held fixed.

    Objective perturbation releases the minimiser of ``L(w) + (lambda/2)
    ||w||^2 + b.w / n`` with ``b = s(epsilon) u``, ``u`` a draw whose law does
    not depend on epsilon, and ``lambda(epsilon) = alpha + extra_alpha``. At
    the minimiser ``grad L(w) + lambda w + b / n = 0``; differentiating in
    epsilon (``u`` fixed)::

        (H + lambda I) w' + lambda' w + (s'/s) b / n = 0,
        w' = -(H + lambda I)^-1 (lambda' w - (s'/s) (grad L(w) + lambda w)),

    using the optimality condition to replace ``b / n`` by ``-(grad L(w) +
    lambda w)``. Since ``s`` decreases in epsilon, ``s' < 0``: Li et al.'s Eq.
    6 writes ``b'`` with a positive coefficient, the sign slip. Output
    perturbation releases ``w* + s(epsilon) u``, so ``w' = (s'/s) (w - w*)``.

    Parameters
    ----------
    w : ndarray of shape (d,)
        The released weights (design space).
    Z : ndarray or sparse matrix of shape (n_rows, d)
        Rows on which ``L``, its gradient and Hessian ``H`` are evaluated
        (public data in probe mode).
    y : ndarray of shape (n_rows,)
        Labels in {-1, +1}.
    loss : margin loss from ``dpsk._optimize._losses``
    law : callable
        ``law(epsilon) -> (s, lambda)``, the public noise scale and
        regularisation (``dpsk.mechanisms._erm._noise_law``).
    epsilon : float
        Where to differentiate.
    w_star : ndarray of shape (d,), optional
        The non-private minimiser: given for output perturbation.

    Returns
    -------
    ndarray of shape (d,)
    """
    kappa = _log_scale_derivative(law, epsilon)
    if w_star is not None:
        return kappa * (w - w_star)
    lam = law(epsilon)[1]
    lam_prime = _central_difference(lambda e: law(e)[1], epsilon)
    residual = loss.mean_gradient(Z, y, w) + lam * w  # = -b / n at the optimum
    margins = y * np.asarray(Z @ w).ravel()
    curv = loss.second_derivative(margins) / Z.shape[0]
    if sp.issparse(Z):
        hessian = np.asarray((Z.T @ Z.multiply(curv[:, None])).todense())
    else:
        hessian = Z.T @ (Z * curv[:, None])
    hessian[np.diag_indices_from(hessian)] += lam
    return -np.linalg.solve(hessian, lam_prime * w - kappa * residual)


def _fitted_alpha(estimator):
    """The alpha the probe fit used: ``alpha_`` (``alpha="auto"`` resolved), else ``alpha``.

    With ``alpha="auto"`` the curve holds the probe's alpha fixed across
    epsilon: it extrapolates the model that was fitted, whose noise law is
    then the one :func:`_noise_law` gives at that alpha (models pickled
    before ``alpha_`` existed carry a numeric ``alpha``).
    """
    return float(getattr(estimator, "alpha_", estimator.alpha))


def _law(estimator, loss, n, d, delta):
    alpha = _fitted_alpha(estimator)

    def law(epsilon):
        return _noise_law(loss, n, d, epsilon, alpha, estimator.perturbation,
                          tol=estimator.tol, delta=delta)
    return law


def _central_difference(f, epsilon):
    hi, lo = epsilon * np.exp(_LOG_STEP), epsilon * np.exp(-_LOG_STEP)
    return (f(hi) - f(lo)) / (hi - lo)


def _log_scale_derivative(law, epsilon):
    """``s'(epsilon) / s(epsilon)`` of the public noise scale."""
    return _central_difference(lambda e: np.log(law(e)[0]), epsilon)


def _mean_loss(loss, Z, y, w):
    return float(np.mean(loss.value(y * np.asarray(Z @ w).ravel())))


def _public_minimizer(loss, Z, y, alpha, tol):
    """The non-private minimiser on public data: output perturbation's centre, estimated."""
    tol = max(tol, _tolerance_floor(loss, Z.shape[1], alpha))
    return minimize_regularized_loss(loss, Z, y, alpha, tol=tol).w


def _design(estimator, X):
    """The design rows of ``X`` and the released weights on them (the fit's space)."""
    if isinstance(estimator, DPKernelClassifier):
        X = validate_data(estimator, X, dtype=np.float64, reset=False)
        Z = fourier_features(clip_rows(X, estimator.data_norm), estimator.random_weights_,
                             n_components=estimator.coef_.shape[1],
                             fit_intercept=estimator.fit_intercept)
        data_norm = 1.0
    else:
        X = validate_data(estimator, X, accept_sparse="csr", dtype=np.float64, reset=False)
        data_norm = estimator._row_norm()
        Z = design_matrix(X, data_norm, estimator.fit_intercept)
    coef = estimator.coef_[0]
    if estimator.fit_intercept:  # the inverse of dpsk._data._validation.unscale_coef
        w = np.append(coef * (data_norm / INTERCEPT_SCALE),
                      estimator.intercept_[0] / INTERCEPT_SCALE)
    else:
        w = coef * data_norm
    return Z, w
