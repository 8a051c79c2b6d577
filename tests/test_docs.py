"""The documentation: a warning-free Sphinx build, and docstrings that read as text."""

import inspect
import posixpath
import subprocess
import sys
from pathlib import Path

import pytest

import dpsk

DOCS = Path(__file__).resolve().parent.parent / "docs"
# sphinx-gallery can only write its pages inside the source tree (its gallery_dirs
# are relative to docs/): these outputs are git-ignored and the only ones allowed.
GALLERY_OUTPUTS = ("auto_examples", "sg_execution_times.rst")


def _source_tree():
    return sorted(
        p.relative_to(DOCS) for p in DOCS.rglob("*")
        if p.relative_to(DOCS).parts[0] not in GALLERY_OUTPUTS
    )


def _public_objects():
    for name in dpsk.__all__:
        obj = getattr(dpsk, name)
        yield name, obj
        if inspect.isclass(obj):
            for member, value in vars(obj).items():
                if not member.startswith("_") and callable(value):
                    yield f"{name}.{member}", value


def test_docstrings_have_no_doubled_format_braces():
    # A plain docstring written as if it were an f-string shows "{{array-like}}".
    for name, obj in _public_objects():
        doc = inspect.getdoc(obj) or ""
        assert "{{" not in doc and "}}" not in doc, name


@pytest.mark.slow
def test_sphinx_build_is_warning_free(tmp_path):
    pytest.importorskip("sphinx")
    pytest.importorskip("numpydoc")
    pytest.importorskip("sphinx_gallery")
    pytest.importorskip("matplotlib")
    pytest.importorskip("pydata_sphinx_theme")
    if not DOCS.is_dir():
        pytest.skip("no docs/ next to the tests (not a source checkout)")
    before = _source_tree()
    result = subprocess.run(
        [sys.executable, "-m", "sphinx", "-b", "html", "-W", "--keep-going", "-q",
         str(DOCS), str(tmp_path / "html"), "-d", str(tmp_path / "doctrees")],
        capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, result.stderr[-5000:]
    # The build writes nothing into the source tree (no autosummary stubs) but
    # the gallery's git-ignored pages.
    assert _source_tree() == before
    assert (tmp_path / "html" / "api.html").exists()
    assert (tmp_path / "html" / "auto_examples" / "index.html").exists()
    # Intersphinx works offline: the API page links to scikit-learn's own pages.
    api = (tmp_path / "html" / "api.html").read_text()
    assert "https://scikit-learn.org/stable/modules/generated/sklearn.pipeline.Pipeline.html" in api


def test_offline_inventories_follow_each_projects_url_scheme(tmp_path):
    inventory = pytest.importorskip("sphinx.util.inventory")
    if not DOCS.is_dir():
        pytest.skip("no docs/ next to the tests (not a source checkout)")
    sys.path.insert(0, str(DOCS))
    bytecode, sys.dont_write_bytecode = sys.dont_write_bytecode, True  # nothing into docs/
    try:
        from _inventories import write_inventories
    finally:
        sys.path.remove(str(DOCS))
        sys.dont_write_bytecode = bytecode
    mapping = write_inventories(tmp_path)
    expected = {
        "sklearn": ("py:class", "sklearn.pipeline.Pipeline",
                    "https://scikit-learn.org/stable/modules/generated/"
                    "sklearn.pipeline.Pipeline.html#sklearn.pipeline.Pipeline"),
        "numpy": ("py:function", "numpy.clip",
                  "https://numpy.org/doc/stable/reference/generated/numpy.clip.html#numpy.clip"),
        "scipy": ("py:function", "scipy.optimize.minimize",
                  "https://docs.scipy.org/doc/scipy/reference/generated/"
                  "scipy.optimize.minimize.html#scipy.optimize.minimize"),
    }
    for key, (role, name, url) in expected.items():
        base, (path,) = mapping[key]
        with open(path, "rb") as stream:
            data = inventory.InventoryFile.load(stream, base, posixpath.join)
        found = data[role][name]
        assert getattr(found, "uri", None) == url or url in tuple(found)


PUBLIC_MODULES = ("dpsk", "dpsk.preprocessing", "dpsk.model_selection", "dpsk.prediction",
                  "dpsk.utility", "dpsk.kernel", "dpsk.linear_model", "dpsk.datasets",
                  "dpsk.pipeline")


def _documented_objects():
    """The objects that docs/api.rst documents in full (autoclass, autofunction, ...)."""
    import importlib
    import re

    found = set()
    text = (DOCS / "api.rst").read_text()
    for target in re.findall(r"^\.\. auto(?:class|function|exception)::\s*(\S+)", text, re.M):
        parts = target.split(".")
        if parts[0] != "dpsk":
            parts = ["dpsk", *parts]  # relative to ``.. currentmodule:: dpsk``
        module = importlib.import_module(".".join(parts[:-1]))
        found.add(id(getattr(module, parts[-1])))
    return found


def test_api_page_documents_every_public_name():
    import importlib

    documented = _documented_objects()
    missing = [f"{module}.{name}" for module in PUBLIC_MODULES
               for name in importlib.import_module(module).__all__
               if id(getattr(importlib.import_module(module), name)) not in documented]
    assert missing == [], "add these to docs/api.rst"
