"""Decision trees: a private tree whose structure reads no data, labelled by noisy counts.

:class:`DPDecisionTreeClassifier` is one random tree; the shared shell
:class:`~dpsk.tree._classes.BaseRandomTreesClassifier` also carries
:class:`~dpsk.DPRandomForestClassifier` (``dpsk.ensemble``). The release is
:func:`dpsk.mechanisms._forest.forest_release`; ``docs/trees.rst`` derives it.
"""

from ._classes import DPDecisionTreeClassifier

__all__ = ["DPDecisionTreeClassifier"]
