"""Sphinx configuration for the dpsk documentation (``pip install .[docs]``)."""

import atexit
import shutil
import sys
import tempfile
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
html_theme = "pydata_sphinx_theme"
html_theme_options = {"navigation_with_keys": False, "show_toc_level": 2}
html_title = "dpsk"
# Parameter types in docstrings link to their definitions ("ndarray", "Pipeline").
numpydoc_xref_param_type = True
numpydoc_xref_aliases = {
    "ndarray": "numpy.ndarray",
    "Generator": "numpy.random.Generator",
    "Pipeline": "sklearn.pipeline.Pipeline",
    "BaseEstimator": "sklearn.base.BaseEstimator",
}
# numpydoc's defaults send these words to Python's and NumPy's glossaries, which
# docs/_inventories.py does not list: they stay plain words. Without an alias the
# builtins rendered as "python:float" (no Python inventory offline).
numpydoc_xref_aliases.update(
    {word: word for word in (
        "bool", "boolean", "iterable", "sequence", "generator", "array-like",
        "array_like", "scalar", "float", "int", "str", "dict", "list", "tuple",
        "callable", "object", "None", "type", "bytes", "set",
    )}
)
numpydoc_xref_ignore = "all"
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

# Links to scikit-learn, NumPy and SciPy. Their inventories are written at build time
# from the installed versions (docs/_inventories.py), outside the source tree, since
# the build runs where their sites cannot be reached.
# Imported without writing docs/__pycache__: the build writes nothing into docs/.
_bytecode, sys.dont_write_bytecode = sys.dont_write_bytecode, True
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _inventories import write_inventories  # noqa: E402

sys.path.pop(0)
sys.dont_write_bytecode = _bytecode

extensions.append("sphinx.ext.intersphinx")
_inventory_dir = tempfile.mkdtemp(prefix="dpsk-docs-inv-")
atexit.register(shutil.rmtree, _inventory_dir, True)
intersphinx_mapping = write_inventories(_inventory_dir)
