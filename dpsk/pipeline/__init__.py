"""Private pipelines and the check that no step learns before the private model.

:class:`PrivatePipeline` and :func:`make_private_pipeline` (``_private``) run
:func:`check_pipeline` (``_check``) before any step sees data. The check reads
only the steps' types and parameters, and recognises a private step by a tag, so
this wing imports no estimator.
"""

from ._check import (
    LeakyPipelineWarning,
    NonPrivateSelectionWarning,
    check_pipeline,
    warn_if_pipeline_leaks,
)
from ._private import PrivatePipeline, make_private_pipeline

__all__ = [
    "PrivatePipeline",
    "make_private_pipeline",
    "check_pipeline",
    "warn_if_pipeline_leaks",
    "LeakyPipelineWarning",
    "NonPrivateSelectionWarning",
]
