"""A pipeline that checks, when it is fitted, that no step learns before the private model.

A dpsk estimator is handed transformed data, not the pipeline it sits in; inside
a plain :class:`~sklearn.pipeline.Pipeline` it finds the pipeline by looking at
its caller and warns as its own fit starts, after the earlier steps have been
fitted. :class:`PrivatePipeline` runs :func:`dpsk.check_pipeline` before any
step is fitted, and can refuse instead (``strict=True``). The check reads only
the steps' types and parameters, so the warning (or error) it gives depends on
nothing but public parameters.
"""

import warnings

from sklearn.pipeline import Pipeline

from ._check import LeakyPipelineWarning, _leak_message, check_pipeline

__all__ = ["PrivatePipeline", "make_private_pipeline"]


class PrivatePipeline(Pipeline):
    """A :class:`sklearn.pipeline.Pipeline` that warns when it is not DP-safe.

    At the start of ``fit``, ``fit_transform`` and ``fit_predict``, before any
    step sees data, :func:`dpsk.check_pipeline` lists the steps before the last
    dpsk estimator that learn from the training data. If there are any, a
    ``UserWarning`` names them (or, with ``strict=True``, a ``ValueError`` is
    raised and nothing is fitted or charged). Otherwise it behaves exactly as a
    :class:`~sklearn.pipeline.Pipeline`.

    Parameters
    ----------
    steps : list of (str, estimator) tuples
        As for :class:`~sklearn.pipeline.Pipeline`; one step must be a dpsk
        estimator.
    strict : bool, default=False
        Raise instead of warning when a step learns from the data.
    transform_input, memory, verbose
        As for :class:`~sklearn.pipeline.Pipeline`.

    See Also
    --------
    make_private_pipeline : build one from estimators, naming the steps.
    dpsk.check_pipeline : the check itself.

    Examples
    --------
    >>> from sklearn.preprocessing import StandardScaler
    >>> from dpsk import DPLogisticRegression
    >>> from dpsk.pipeline import make_private_pipeline
    >>> pipe = make_private_pipeline(StandardScaler(), DPLogisticRegression(), strict=True)
    >>> pipe.fit([[0.0], [1.0]], [0, 1])
    Traceback (most recent call last):
    ...
    ValueError: Pipeline steps ['standardscaler'] learn from the training data ...
    """

    _parameter_constraints = {**Pipeline._parameter_constraints, "strict": ["boolean"]}
    # It checks itself before any step is fitted, so its dpsk steps need not warn again.
    _checks_itself = True

    def __init__(self, steps, *, strict=False, transform_input=None, memory=None,
                 verbose=False):
        super().__init__(steps, transform_input=transform_input, memory=memory,
                         verbose=verbose)
        self.strict = strict

    def _check_private(self):
        """Warn (or raise) before fitting; parameters only, so free and public."""
        names = check_pipeline(self)
        if not names:
            return
        if self.strict:
            raise ValueError(_leak_message(names))
        warnings.warn(_leak_message(names), LeakyPipelineWarning, stacklevel=3)

    def fit(self, X, y=None, **params):
        """Check the steps (see the class docstring), then fit as a Pipeline."""
        self._check_private()
        return super().fit(X, y, **params)

    def fit_transform(self, X, y=None, **params):
        """Check the steps (see the class docstring), then fit_transform as a Pipeline."""
        self._check_private()
        return super().fit_transform(X, y, **params)

    def fit_predict(self, X, y=None, **params):
        """Check the steps (see the class docstring), then fit_predict as a Pipeline."""
        self._check_private()
        return super().fit_predict(X, y, **params)


def make_private_pipeline(*steps, strict=False, memory=None, transform_input=None,
                          verbose=False):
    """Build a :class:`PrivatePipeline` from estimators, naming steps as
    :func:`sklearn.pipeline.make_pipeline` does.

    Parameters
    ----------
    *steps : estimators
        The steps; one must be a dpsk estimator.
    strict : bool, default=False
        Raise instead of warning at fit time when a step learns from the data.
    memory, transform_input, verbose
        As for :func:`sklearn.pipeline.make_pipeline`.

    Returns
    -------
    pipeline : PrivatePipeline
    """
    from sklearn.pipeline import _name_estimators

    return PrivatePipeline(_name_estimators(steps), strict=strict, memory=memory,
                           transform_input=transform_input, verbose=verbose)
