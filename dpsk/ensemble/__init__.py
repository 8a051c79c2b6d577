"""Ensembles: a private random forest of data-blind trees with pooled noisy counts.

:class:`DPRandomForestClassifier` grows many trees of :mod:`dpsk.tree`'s kind,
sharing the rows (the budget split) or each on its own part (parallel
composition); ``docs/trees.rst`` derives which is better.
"""

from ._forest import DPRandomForestClassifier

__all__ = ["DPRandomForestClassifier"]
