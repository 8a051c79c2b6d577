"""Offline intersphinx inventories for scikit-learn, NumPy and SciPy.

Intersphinx normally downloads each project's ``objects.inv``. The docs are built
where only package registries are reachable (CI), so the build cannot download
them, and a failed download is a warning, which ``-W`` turns into an error. These
functions write an equivalent inventory for the versions installed next to
Sphinx instead, by walking their public API and applying each project's
documented URL scheme:

- scikit-learn: every public class and function has a page
  ``modules/generated/<qualified name>.html`` (methods are anchors on the class
  page), and every public module ``api/<module>.html``;
- NumPy: ``reference/generated/numpy.<name>.html`` for the functions and classes
  of the top-level namespace and the methods of ``ndarray``, plus the handful of
  objects we cite that live elsewhere (:data:`_NUMPY_EXTRA`);
- SciPy: ``reference/generated/scipy.<module>.<name>.html`` for the public names
  of the subpackages dpsk uses.

Only names that follow those schemes are listed, so a reference to anything else
stays plain text (as with an unreachable inventory) rather than becoming a broken
link. The build uses these files even where a network is available, so that it
is the same everywhere.
"""

import importlib
import inspect
import zlib
from pathlib import Path

__all__ = ["write_inventories"]

_SKLEARN_URL = "https://scikit-learn.org/stable/"
_NUMPY_URL = "https://numpy.org/doc/stable/"
_SCIPY_URL = "https://docs.scipy.org/doc/scipy/"

# Cited objects of NumPy whose pages do not follow reference/generated/<name>.html.
_NUMPY_EXTRA = {
    "numpy.random.Generator": ("py:class", "reference/random/generator.html#$"),
    "numpy.random.default_rng": ("py:function", "reference/random/generator.html#$"),
}

_SCIPY_MODULES = ("optimize", "sparse", "special", "stats", "linalg")


def _public_names(module):
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n in dir(module) if not n.startswith("_")]
    return [n for n in names if not n.startswith("_")]


def _member(module, name):
    # Experimental names raise ImportError until explicitly enabled: not listed.
    try:
        return getattr(module, name, None)
    except ImportError:
        return None


def _role(obj):
    if inspect.isclass(obj):
        return "py:class"
    if callable(obj):
        return "py:function"
    return None


def _methods(cls):
    return [
        name
        for name, member in vars(cls).items()
        if not name.startswith("_") and callable(member)
    ]


def _sklearn_entries():
    import sklearn

    entries = {}
    for sub in sklearn.__all__:
        try:
            module = importlib.import_module(f"sklearn.{sub}")
        except ImportError:  # experimental or optional modules
            continue
        if not inspect.ismodule(module):
            continue
        entries[module.__name__] = ("py:module", f"api/{module.__name__}.html")
        for name in _public_names(module):
            obj = _member(module, name)
            role = _role(obj)
            if role is None:
                continue
            qualified = f"{module.__name__}.{name}"
            page = f"modules/generated/{qualified}.html"
            entries[qualified] = (role, page + "#$")
            if role == "py:class":
                for method in _methods(obj):
                    entries[f"{qualified}.{method}"] = ("py:method", page + "#$")
    return entries


def _numpy_entries():
    import numpy

    entries = {}
    for name in _public_names(numpy):
        obj = _member(numpy, name)
        # Functions (plain, ufuncs and array-function dispatchers) and ndarray; the
        # scalar types are documented together on another page.
        if not (obj is numpy.ndarray or (callable(obj) and not inspect.isclass(obj))):
            continue
        role = "py:class" if obj is numpy.ndarray else "py:function"
        entries[f"numpy.{name}"] = (role, f"reference/generated/numpy.{name}.html#$")
    for method in _methods(numpy.ndarray):
        qualified = f"numpy.ndarray.{method}"
        entries[qualified] = ("py:method", f"reference/generated/{qualified}.html#$")
    entries.update(_NUMPY_EXTRA)
    return entries


def _scipy_entries():
    entries = {}
    for sub in _SCIPY_MODULES:
        module = importlib.import_module(f"scipy.{sub}")
        for name in _public_names(module):
            role = _role(_member(module, name))
            if role is None:
                continue
            qualified = f"scipy.{sub}.{name}"
            entries[qualified] = (role, f"reference/generated/{qualified}.html#$")
    return entries


def _write(path, project, version, entries):
    lines = []
    for name in sorted(entries):
        role, uri = entries[name]
        # name, role, priority, uri ("$" = the name), display name ("-" = the name)
        lines.append(f"{name} {role} 1 {uri} -")
    header = (
        "# Sphinx inventory version 2\n"
        f"# Project: {project}\n"
        f"# Version: {version}\n"
        "# The remainder of this file is compressed using zlib.\n"
    )
    body = zlib.compress("\n".join(lines).encode() + b"\n")
    Path(path).write_bytes(header.encode() + body)


def write_inventories(directory):
    """Write the three inventories into ``directory``; return the intersphinx mapping.

    Parameters
    ----------
    directory : path-like
        Where to write ``sklearn.inv``, ``numpy.inv`` and ``scipy.inv`` (outside
        the source tree: the build must not write into ``docs/``).

    Returns
    -------
    mapping : dict
        ``intersphinx_mapping``: each project's URL and its local inventory.
    """
    import numpy
    import scipy
    import sklearn

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    projects = {
        "sklearn": (_SKLEARN_URL, "scikit-learn", sklearn.__version__, _sklearn_entries),
        "numpy": (_NUMPY_URL, "NumPy", numpy.__version__, _numpy_entries),
        "scipy": (_SCIPY_URL, "SciPy", scipy.__version__, _scipy_entries),
    }
    mapping = {}
    for key, (url, project, version, entries) in projects.items():
        path = directory / f"{key}.inv"
        _write(path, project, version, entries())
        mapping[key] = (url, (str(path),))
    return mapping
