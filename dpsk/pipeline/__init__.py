"""Private pipelines: the check that no step learns before the private model, and the budget.

:class:`PrivatePipeline` and :func:`make_private_pipeline` (``_private``) run
:func:`check_pipeline` (``_check``) before any step sees data, and, with several
private steps, :func:`check_before_fit` (``_budget``, through the dry run of
``_dry``) before the first one spends. The check reads
only the steps' types and parameters, and recognises a private step by a tag, so
this wing imports no estimator.
"""

from ._budget import PipelineCost, check_before_fit, pipeline_cost, private_steps
from ._check import (
    LeakyPipelineWarning,
    NonPrivateSelectionWarning,
    check_pipeline,
    warn_if_pipeline_leaks,
)
from ._norms import DataNormWarning, published_row_bound
from ._private import PrivatePipeline, make_private_pipeline

__all__ = [
    "PrivatePipeline",
    "make_private_pipeline",
    "check_pipeline",
    "warn_if_pipeline_leaks",
    "LeakyPipelineWarning",
    "NonPrivateSelectionWarning",
    "check_before_fit",
    "pipeline_cost",
    "private_steps",
    "PipelineCost",
    "DataNormWarning",
    "published_row_bound",
]
