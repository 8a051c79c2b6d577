"""Sphinx configuration for the dpsk documentation (``pip install .[docs]``)."""

project = "dpsk"
author = "dpsk developers"
extensions = ["sphinx.ext.autodoc", "sphinx.ext.autosummary", "numpydoc"]
# No generated stub pages: api.rst documents every object itself, so the build
# writes nothing into the source tree (docs/generated/ is git-ignored regardless).
autosummary_generate = False
numpydoc_show_class_members = False
html_theme = "alabaster"
exclude_patterns = ["_build"]
