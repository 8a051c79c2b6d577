"""Sphinx configuration for the dpsk documentation (``pip install .[docs]``)."""

from pathlib import Path

project = "dpsk"
author = "dpsk developers"

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]
# No generated stub pages: api.rst documents every object itself, so the build
# writes nothing into the source tree (docs/generated/ is git-ignored regardless).
autosummary_generate = False
numpydoc_show_class_members = False
html_theme = "alabaster"
exclude_patterns = ["_build"]

_ROOT = Path(__file__).resolve().parent.parent
# The gallery runs examples/plot_*.py at build time. sphinx-gallery can only write
# its generated pages inside the source tree (docs/auto_examples/, git-ignored);
# tests/test_docs.py allows that one directory.
sphinx_gallery_conf = {
    "examples_dirs": str(_ROOT / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "download_all_examples": False,
    # An example that raises fails the build instead of rendering a traceback.
    "abort_on_example_error": True,
    "show_memory": False,
}
