"""A pipeline that checks, before any step is fitted, that it is one budgeted release.

A dpsk estimator is handed transformed data, not the pipeline it sits in; inside
a plain :class:`~sklearn.pipeline.Pipeline` it finds the pipeline by looking at
its caller and warns as its own fit starts, after the earlier steps have been
fitted. :class:`PrivatePipeline` runs :func:`dpsk.check_pipeline` before any
step is fitted, and can refuse instead (``strict=True``). The check reads only
the steps' types and parameters, so the warning (or error) it gives depends on
nothing but public parameters.

With more than one private step (private bounds before the model), the
pipeline then runs the dry run of :func:`dpsk.pipeline.check_before_fit`:
every step's checks, and the sum of the private steps' costs against each
ledger, before the first private step spends. Every refusal is then free.

The steps before the private model are often scikit-learn's, and their
refusals can quote the data (``OneHotEncoder``: ``Found unknown categories
['<cell>'] in column 0``). The analyst sees exceptions, so
:class:`PrivatePipeline` replaces an exception raised by such a step with a
fixed one naming the step and the exception's type only, at fit and at
prediction time. dpsk's own refusals (:class:`~dpsk._data._validation.PublicRefusal`,
e.g. the schema encoder's, which name a declared column and quote no value)
and those raised inside a dpsk estimator are shown as they are. A plain
Pipeline cannot be helped: its steps fail before the dpsk model is called.
"""

import warnings

from sklearn.pipeline import Pipeline
from sklearn.utils._param_validation import InvalidParameterError
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import _num_samples

from .._data._validation import PublicRefusal
from ._budget import dry_copy, private_steps, run_dry
from ._check import (
    LeakyPipelineWarning,
    _frame_object,
    _holds_private,
    _leak_message,
    check_pipeline,
    is_private_step,
)

__all__ = ["PrivatePipeline", "make_private_pipeline"]


def _guarded(name, doc):
    """Pipeline's method ``name``, available as Pipeline's is, with a step's message
    replaced as in a fit (:meth:`PrivatePipeline._shown_or_hidden`)."""
    def available(self):
        if name == "transform" and self._final_estimator == "passthrough":
            return True
        return hasattr(self._final_estimator, name)

    def method(self, X, **params):
        return self._shown_or_hidden(getattr(super(PrivatePipeline, self), name), X, **params)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = doc
    return available_if(available)(method)


class PrivatePipeline(Pipeline):
    """A :class:`sklearn.pipeline.Pipeline` that is checked as one budgeted release.

    At the start of ``fit``, ``fit_transform`` and ``fit_predict``, before any
    step sees data:

    1. :func:`dpsk.check_pipeline` lists the steps before the last dpsk
       estimator that learn from the training data. If there are any, a
       :class:`~dpsk.LeakyPipelineWarning` names them (or, with
       ``strict=True``, a ``ValueError`` is raised and nothing is fitted or
       charged);
    2. with more than one private step (private bounds, then the model),
       :func:`dpsk.pipeline.check_before_fit` runs every step's checks on a
       copy (parameters, input domain, labels against the declared classes,
       weights) and checks the releases of all the private steps together
       against each ledger. A refusal then costs nothing, whichever step
       makes it.

    Otherwise it behaves as a :class:`~sklearn.pipeline.Pipeline`, except that
    an exception raised by a step other than a dpsk estimator, in a fit or in
    a prediction, is replaced by one of the same kind (``ValueError``,
    ``TypeError``, else ``RuntimeError``) whose message names the step and
    nothing else, with no cause or context attached: scikit-learn's messages
    can quote a training value. dpsk's own refusals (the schema encoder's:
    a value that is not a number, an infinite value, an undeclared category, a
    missing column, no rows; each names the column, never the value) and
    those of dpsk estimators are shown as they are, at fit and at predict
    time. Invalid parameters are reported as usual (their messages quote
    parameters only).

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
    dpsk.check_pipeline : the check of step 1.
    dpsk.pipeline.check_before_fit : the check of step 2.

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
        warnings.warn(_leak_message(names), LeakyPipelineWarning, stacklevel=4)

    def fit(self, X, y=None, **params):
        """Check the steps (see the class docstring), then fit as a Pipeline.

        ``sample_weight=w`` goes to the private step (the last dpsk estimator),
        as ``<its name>__sample_weight`` would; the weights are part of the rows
        (docs/privacy.rst, "Weights").
        """
        params = self._before_fit(X, y, params)
        return self._quietly(super().fit, X, y, params)

    def fit_transform(self, X, y=None, **params):
        """Check the steps (see the class docstring), then fit_transform as a Pipeline."""
        params = self._before_fit(X, y, params)
        return self._quietly(super().fit_transform, X, y, params)

    def fit_predict(self, X, y=None, **params):
        """Check the steps (see the class docstring), then fit_predict as a Pipeline."""
        params = self._before_fit(X, y, params)
        return self._quietly(super().fit_predict, X, y, params)

    def _before_fit(self, X, y, params):
        """Everything that may refuse for free: the leak check, no rows, the dry run.

        Returns the fit parameters with ``sample_weight`` routed.
        """
        self._check_private()
        params = self._route_weights(params)
        try:
            empty = _num_samples(X) == 0
        except TypeError:  # no length: the steps refuse it
            empty = False
        if empty:
            raise PublicRefusal("X has no rows: a PrivatePipeline needs at least one row "
                                "to fit. Nothing was spent.")
        if len(private_steps(self)) > 1:
            copy = dry_copy(self)
            cost = self._quietly(lambda X_, y_, **p: run_dry(copy, X_, y_, **p), X, y,
                                 params, owner=copy, dry=True)
            for ledger, events in cost.by_ledger():
                ledger.check_all(events)
        return params

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

    def _quietly(self, fit, X, y, params, owner=None, dry=False):
        """Run ``fit``; replace a step's exception by one that quotes nothing.

        Exceptions that passed through a dpsk estimator's fit are its own (it
        refuses with fixed messages, or charges and raises
        :class:`dpsk.PrivateFitError`) and go through unchanged, and so do
        :class:`~dpsk._data._validation.PublicRefusal` (re-raised without the
        traceback's context). ``owner`` is the pipeline whose steps are fitted
        (a dry-run copy, or this one); in a dry run nothing was spent.
        """
        ok, out = _run_guarded(lambda: fit(X, y, **params), _FIT_FRAMES)
        if ok:
            return out
        kind, message, traceback = out
        if message is not None:
            raise PublicRefusal(message)
        index, name = _failing_step(self if owner is None else owner, traceback)
        del traceback  # its frames hold the data
        raise kind(self._refusal(index, name, kind, spent_nothing=dry))

    def _refusal(self, index, name, kind, spent_nothing=False):
        """The fixed message for a step's exception: step name and kind only."""
        step = f"Step {name!r}" if name is not None else "A step"
        if spent_nothing:
            when = " before anything was spent"
        else:
            holder = max(i for i, (_, part) in enumerate(self.steps) if _holds_private(part))
            when = (" before the private model's fit started, so nothing was charged"
                    if index is not None and index < holder else "")
        return (f"{step} of the PrivatePipeline raised a {kind.__name__}{when}. "
                "Its message is not shown, because scikit-learn's messages can quote "
                "a training value (an undeclared category, say). Check the data "
                "against what the step declares (categories, dtypes, columns), or fit "
                "the step alone on data you may look at to see the message.")

    def _shown_or_hidden(self, method, X, **params):
        """A prediction-time call, with a step's message replaced as in a fit."""
        ok, out = _run_guarded(lambda: method(X, **params), None)
        if ok:
            return out
        kind, message, _ = out
        if message is not None:
            raise PublicRefusal(message)
        raise kind("A step of the PrivatePipeline raised a "
                   f"{kind.__name__} on the rows to predict. Its message is not shown, "
                   "because scikit-learn's messages can quote a value (an undeclared "
                   "category, say). Check the rows against what the steps declare "
                   "(categories, dtypes, columns).")

    predict = _guarded("predict", "Predict as a Pipeline; a step's message is replaced (see "
                                  "the class docstring).")
    predict_proba = _guarded("predict_proba", "Class probabilities as a Pipeline; messages "
                                              "as for :meth:`predict`.")
    predict_log_proba = _guarded("predict_log_proba", "Log probabilities as a Pipeline; "
                                                      "messages as for :meth:`predict`.")
    decision_function = _guarded("decision_function", "Decision function as a Pipeline; "
                                                      "messages as for :meth:`predict`.")
    transform = _guarded("transform", "Transform as a Pipeline; messages as for "
                                      ":meth:`predict`.")

    @available_if(lambda self: hasattr(self._final_estimator, "score"))
    def score(self, X, y=None, sample_weight=None, **params):
        """Score as a Pipeline; messages as for :meth:`predict`."""
        return self._shown_or_hidden(
            lambda X_, **p: Pipeline.score(self, X_, y, sample_weight=sample_weight, **p),
            X, **params)


def _run_guarded(call, when):
    """``(True, call())``, or ``(False, (kind, public message or None, traceback))``.

    Invalid parameters (their messages quote parameters only), and exceptions
    that passed through a dpsk estimator (:func:`_through_private` with
    ``when``) are raised as they are. A :class:`PublicRefusal` comes back with
    its message; anything else with its kind only (``ValueError``,
    ``TypeError``, else ``RuntimeError``), for the caller to raise a fixed
    message outside this ``except`` block, so that no ``__context__`` holds
    the original.
    """
    try:
        return True, call()
    except InvalidParameterError:
        raise
    except PublicRefusal as exc:
        return False, (PublicRefusal, str(exc), None)
    except Exception as exc:
        if _through_private(exc.__traceback__, when):
            raise
        kind = (ValueError if isinstance(exc, ValueError) else
                TypeError if isinstance(exc, TypeError) else RuntimeError)
        return False, (kind, None, exc.__traceback__)


#: Method names of a fit, for :func:`_through_private` at fit time.
_FIT_FRAMES = "fit"


def _through_private(traceback, when):
    """Whether an exception's traceback passes through a dpsk estimator's code.

    ``when="fit"``: through a dpsk estimator's fit (``_frame_object``). None:
    through any method of a dpsk estimator (prediction time).
    """
    while traceback is not None:
        frame = traceback.tb_frame
        if when is not None:
            obj = _frame_object(frame)
        else:
            code = frame.f_code
            obj = frame.f_locals.get("self") if code.co_varnames[:1] == ("self",) else None
        if is_private_step(obj):
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
