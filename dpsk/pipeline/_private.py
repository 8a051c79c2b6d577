"""A pipeline that checks, when it is fitted, that no step learns before the private model.

A dpsk estimator is handed transformed data, not the pipeline it sits in; inside
a plain :class:`~sklearn.pipeline.Pipeline` it finds the pipeline by looking at
its caller and warns as its own fit starts, after the earlier steps have been
fitted. :class:`PrivatePipeline` runs :func:`dpsk.check_pipeline` before any
step is fitted, and can refuse instead (``strict=True``). The check reads only
the steps' types and parameters, so the warning (or error) it gives depends on
nothing but public parameters.

The steps before the private model are scikit-learn's, and their refusals can
quote the data (``OneHotEncoder``: ``Found unknown categories ['<cell>'] in
column 0``). The analyst sees exceptions, so :class:`PrivatePipeline` replaces
an exception raised by such a step with a fixed one naming the step and the
exception's type only. A plain Pipeline cannot be helped: its steps fail before
the dpsk model is called.
"""

import warnings

from sklearn.pipeline import Pipeline
from sklearn.utils._param_validation import InvalidParameterError

from ._check import (
    LeakyPipelineWarning,
    _frame_object,
    _holds_private,
    _leak_message,
    check_pipeline,
    is_private_step,
)

__all__ = ["PrivatePipeline", "make_private_pipeline"]


class PrivatePipeline(Pipeline):
    """A :class:`sklearn.pipeline.Pipeline` that warns when it is not DP-safe.

    At the start of ``fit``, ``fit_transform`` and ``fit_predict``, before any
    step sees data, :func:`dpsk.check_pipeline` lists the steps before the last
    dpsk estimator that learn from the training data. If there are any, a
    ``UserWarning`` names them (or, with ``strict=True``, a ``ValueError`` is
    raised and nothing is fitted or charged). Otherwise it behaves as a
    :class:`~sklearn.pipeline.Pipeline`, except that an exception raised by a
    step other than the dpsk estimator is replaced by one of the same kind
    (``ValueError``, ``TypeError``, else ``RuntimeError``) whose message names
    the step and nothing else, with no cause or context attached: scikit-learn's
    messages can quote a training value. Invalid parameters are reported as
    usual (their messages quote parameters only).

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
        """Check the steps (see the class docstring), then fit as a Pipeline.

        ``sample_weight=w`` goes to the private step (the last dpsk estimator),
        as ``<its name>__sample_weight`` would; the weights are part of the rows
        (docs/privacy.rst, "Weights").
        """
        self._check_private()
        return self._quietly(super().fit, X, y, self._route_weights(params))

    def fit_transform(self, X, y=None, **params):
        """Check the steps (see the class docstring), then fit_transform as a Pipeline."""
        self._check_private()
        return self._quietly(super().fit_transform, X, y, self._route_weights(params))

    def fit_predict(self, X, y=None, **params):
        """Check the steps (see the class docstring), then fit_predict as a Pipeline."""
        self._check_private()
        return self._quietly(super().fit_predict, X, y, self._route_weights(params))

    def _route_weights(self, params):
        """``sample_weight`` renamed ``<private step>__sample_weight``; other params as given."""
        if "sample_weight" not in params:
            return params
        params = dict(params)
        weights = params.pop("sample_weight")
        holders = [name for name, part in self.steps if _holds_private(part)]
        if not holders:
            raise TypeError("PrivatePipeline.fit got sample_weight but has no dpsk step "
                            "to pass it to.")
        params[f"{holders[-1]}__sample_weight"] = weights
        return params

    def _quietly(self, fit, X, y, params):
        """Run ``fit``; replace a step's exception by one that quotes nothing.

        Exceptions that passed through a dpsk estimator's fit are its own (it
        refuses with fixed messages, or charges and raises
        :class:`dpsk.PrivateFitError`) and go through unchanged.
        """
        try:
            return fit(X, y, **params)
        except InvalidParameterError:
            raise
        except Exception as exc:
            if _through_private_fit(exc.__traceback__):
                raise
            kind = (ValueError if isinstance(exc, ValueError) else
                    TypeError if isinstance(exc, TypeError) else RuntimeError)
            index, name = _failing_step(self, exc.__traceback__)
        # Raised outside the except block: no __context__ holds the original.
        raise kind(self._refusal(index, name, kind))

    def _refusal(self, index, name, kind):
        """The fixed message for a step's exception: step name and kind only."""
        step = f"Step {name!r}" if name is not None else "A step"
        holder = max(i for i, (_, part) in enumerate(self.steps) if _holds_private(part))
        when = (" before the private model's fit started, so nothing was charged"
                if index is not None and index < holder else "")
        return (f"{step} of the PrivatePipeline raised a {kind.__name__}{when}. "
                "Its message is not shown, because scikit-learn's messages can quote "
                "a training value (an undeclared category, say). Check the data "
                "against what the step declares (categories, dtypes, columns), or fit "
                "the step alone on data you may look at to see the message.")


def _through_private_fit(traceback):
    """Whether an exception's traceback passes through a dpsk estimator's fit."""
    while traceback is not None:
        if is_private_step(_frame_object(traceback.tb_frame)):
            return True
        traceback = traceback.tb_next
    return False


def _failing_step(pipeline, traceback):
    """``(index, name)`` of the step of ``pipeline`` being fitted when it raised.

    Read from scikit-learn's ``Pipeline._fit`` loop, whose locals hold the
    step's index and name; ``(None, None)`` when no such frame is found.
    """
    while traceback is not None:
        frame = traceback.tb_frame
        if frame.f_code.co_name == "_fit" and frame.f_locals.get("self") is pipeline:
            index, name = frame.f_locals.get("step_idx"), frame.f_locals.get("name")
            if isinstance(index, int) and isinstance(name, str):
                return index, name
        traceback = traceback.tb_next
    return None, None


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
