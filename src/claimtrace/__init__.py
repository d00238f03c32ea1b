"""claimtrace: the 2024 COMP90042 fact-checking notebook, ported exactly and explained.

Stages, in the one direction data flows:
data -> preprocess -> tagging -> retrieval -> classifier -> explain -> web.

The Python API (docs/api.md) is this package's public names, :data:`__all__`, each loaded from
:mod:`claimtrace.api` when first asked for, so ``import claimtrace`` loads nothing else.
``claimtrace.compare`` is the API's function, though a subpackage has the same name: the
package's class keeps the name for the function (:class:`_Package`), and that function lends
the subpackage's attributes (:class:`_CompareFunction`), so every import statement of the
subpackage works as before (``import claimtrace.compare.runs as runs`` included).
"""

import functools
import importlib
import sys
import types

__version__ = "0.1.0"

__all__ = [
    "open_build",
    "evaluate",
    "compare",
    "preprocess",
    "Build",
    "Trace",
    "Scores",
    "Comparison",
    "Preprocessed",
    "DataError",
]


def __getattr__(name: str):
    if name in __all__:
        from claimtrace import api

        return getattr(api, name)
    raise AttributeError(f"module 'claimtrace' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


class _CompareFunction:
    """``claimtrace.compare``: the API's function when called; any other attribute is the
    subpackage's (``claimtrace.compare.runs``), so attribute paths and ``import ... as`` still
    reach the subpackage's modules."""

    def __init__(self, function):
        functools.update_wrapper(self, function)

    def __call__(self, *args, **kwargs):
        return self.__wrapped__(*args, **kwargs)

    def __getattr__(self, name: str):
        return getattr(importlib.import_module("claimtrace.compare"), name)

    def __repr__(self) -> str:
        return "<function claimtrace.compare>"


class _Package(types.ModuleType):
    """The package's module: its attribute ``compare`` is always the API's function. Importing
    the subpackage ``claimtrace.compare`` sets that attribute on its parent; the setter lets the
    import system do so and keeps the function (the subpackage stays in ``sys.modules``)."""

    @property
    def compare(self):
        from claimtrace.api import compare

        return _CompareFunction(compare)

    @compare.setter
    def compare(self, subpackage) -> None:
        pass


sys.modules[__name__].__class__ = _Package
