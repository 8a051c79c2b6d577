"""Old module paths of 0.1.0.dev0, kept so that its pickles still load.

Before the wing layout every module sat directly in ``dpsk/``; a pickle names
a class by the module it was defined in (``dpsk._events.PureDPEvent``). Each old
path is registered here as an alias of the module that now holds the same
classes, so :func:`pickle.load` finds them. Nothing in dpsk imports these names.
"""

import importlib
import sys

__all__ = []

_OLD_PATHS = {
    "dpsk._accounting": "dpsk.accounting._ledger",
    "dpsk._events": "dpsk.accounting._events",
    "dpsk._composition": "dpsk.accounting._composition",
    "dpsk._journal": "dpsk.accounting._journal",
    "dpsk._context": "dpsk.accounting._context",
    "dpsk._mechanisms": "dpsk.mechanisms._noise",
    "dpsk._random": "dpsk.mechanisms._random",
    "dpsk._erm": "dpsk.mechanisms._erm",
    "dpsk._gradient": "dpsk.mechanisms._gradient",
    "dpsk._beyond_erm": "dpsk.mechanisms._beyond_erm",
    "dpsk._solver": "dpsk._optimize._solver",
    "dpsk._block_solver": "dpsk._optimize._block_solver",
    "dpsk._multinomial_solver": "dpsk._optimize._multinomial_solver",
    "dpsk._robust_solver": "dpsk._optimize._robust_solver",
    "dpsk._tilted_solver": "dpsk._optimize._tilted_solver",
    "dpsk._losses": "dpsk._optimize._losses",
    "dpsk._validation": "dpsk._data._validation",
    "dpsk._design": "dpsk._data._design",
    "dpsk._dask": "dpsk._data._dask",
    "dpsk._pipeline_check": "dpsk.pipeline._check",
}


def _register():
    for old, new in _OLD_PATHS.items():
        sys.modules.setdefault(old, importlib.import_module(new))


_register()
