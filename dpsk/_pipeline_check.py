"""Find the steps of a pipeline that learn from the data before a private model.

A dpsk estimator is differentially private with respect to the rows *it* sees.
If an earlier pipeline step learned something from the training data (a mean,
a scale, a minimum, a principal direction), that statistic is stored in the
fitted pipeline without noise, and it also shapes what the private model sees:
the released pipeline is not differentially private. These helpers flag such
steps before anything is fitted.

What counts as safe (learns nothing from the data):

* ``"passthrough"``, ``None`` and ``"drop"``;
* :class:`dpsk.preprocessing.RowNormClipper` and
  :class:`dpsk.preprocessing.BoundedScaler` (declared parameters);
* :class:`sklearn.preprocessing.FunctionTransformer`, on the understanding that
  its function acts on each row on its own (a function such as
  ``lambda X: X / X.max()`` reads every row and is not safe; this cannot be
  checked);
* any transformer tagged ``requires_fit=False`` (scikit-learn's stateless
  transformers such as ``Normalizer`` and ``Binarizer``);
* pipelines and feature unions whose parts are all safe, and column
  transformers whose parts are all safe and whose ``sparse_threshold`` is 0
  (with a positive threshold the fitted transformer chooses sparse or dense
  output from the training data's density, and stores that choice).

Everything else (``StandardScaler``, ``MinMaxScaler``, ``PCA``, imputers,
encoders that learn categories, feature selectors, ...) is reported.
"""

import warnings

from sklearn.compose import ColumnTransformer
from sklearn.pipeline import FeatureUnion, Pipeline
from sklearn.preprocessing import FunctionTransformer

from ._mixin import PrivacyAccountingMixin

__all__ = ["check_pipeline", "warn_if_pipeline_leaks"]

_SAFE_STRINGS = ("passthrough", "drop")


def _declared_safe_types():
    # Imported here: dpsk.preprocessing imports the core, and the core must not
    # import it back at module load.
    from .preprocessing import BoundedScaler, RowNormClipper

    return (FunctionTransformer, RowNormClipper, BoundedScaler)


def _learning_parts(name, step):
    """Names (with ``outer__inner`` paths) of the parts of ``step`` that learn."""
    if step is None or (isinstance(step, str) and step in _SAFE_STRINGS):
        return []
    if isinstance(step, Pipeline):
        return [found for inner, sub in step.steps
                for found in _learning_parts(f"{name}__{inner}", sub)]
    if isinstance(step, ColumnTransformer):
        parts = [found for inner, sub, _ in step.transformers
                 for found in _learning_parts(f"{name}__{inner}", sub)]
        parts += _learning_parts(f"{name}__remainder", step.remainder)
        # With sparse_threshold > 0 the fitted transformer decides between sparse
        # and dense output from the data's density (sparse_output_): one
        # noise-free bit, which also changes what the next step accepts.
        if step.sparse_threshold != 0:
            parts.append(f"{name} (sparse_threshold > 0)")
        return parts
    if isinstance(step, FeatureUnion):
        return [found for inner, sub in step.transformer_list
                for found in _learning_parts(f"{name}__{inner}", sub)]
    if isinstance(step, _declared_safe_types()):
        return []
    try:
        stateless = not step.__sklearn_tags__().requires_fit
    except AttributeError:  # not a scikit-learn estimator: assume it learns
        stateless = False
    return [] if stateless else [name]


def check_pipeline(pipeline):
    """Names of the steps before the final dpsk estimator that learn from the data.

    Parameters
    ----------
    pipeline : sklearn.pipeline.Pipeline
        A pipeline (fitted or not) whose last dpsk estimator is the private
        model. Steps nested in pipelines, column transformers and feature unions
        are reported as ``"outer__inner"``, the names ``set_params`` uses.

    Returns
    -------
    names : list of str
        Steps that learn from the training data without privacy, in pipeline
        order; empty when the pipeline is DP-safe as far as can be checked.

    Raises
    ------
    TypeError
        If ``pipeline`` is not a :class:`~sklearn.pipeline.Pipeline`.
    ValueError
        If it has no dpsk estimator (nothing in it is private).

    See Also
    --------
    warn_if_pipeline_leaks : the same check, as a warning.

    Examples
    --------
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from dpsk import DPLogisticRegression
    >>> from dpsk.preprocessing import RowNormClipper
    >>> check_pipeline(make_pipeline(StandardScaler(), DPLogisticRegression()))
    ['standardscaler']
    >>> check_pipeline(make_pipeline(RowNormClipper(), DPLogisticRegression()))
    []
    """
    if not isinstance(pipeline, Pipeline):
        raise TypeError(f"pipeline must be a sklearn.pipeline.Pipeline, got "
                        f"{type(pipeline).__name__}.")
    private = [i for i, (_, step) in enumerate(pipeline.steps)
               if isinstance(step, PrivacyAccountingMixin)]
    if not private:
        raise ValueError("The pipeline has no dpsk estimator, so none of it is "
                         "differentially private.")
    return [found for name, step in pipeline.steps[:private[-1]]
            for found in _learning_parts(name, step)]


def warn_if_pipeline_leaks(pipeline):
    """Warn with a ``UserWarning`` naming the steps :func:`check_pipeline` finds.

    Parameters
    ----------
    pipeline : sklearn.pipeline.Pipeline

    Returns
    -------
    names : list of str
        The steps named in the warning (empty if there was no warning).
    """
    names = check_pipeline(pipeline)
    if names:
        warnings.warn(
            f"Pipeline steps {names} learn from the training data before the private "
            "model; their fitted statistics are released without noise, so the "
            "fitted pipeline is not differentially private. Replace them with "
            "dpsk.preprocessing.BoundedScaler or RowNormClipper (declared bounds), "
            "or fit them on public data.",
            UserWarning,
            stacklevel=2,
        )
    return names
