"""claimtrace: the 2024 COMP90042 fact-checking notebook, ported exactly and explained.

Stages, in the one direction data flows:
data -> preprocess -> tagging -> retrieval -> classifier -> explain -> web.

The Python API (docs/api.md) is this package's public names, :data:`__all__`, each loaded from
:mod:`claimtrace.api` when first asked for, so ``import claimtrace`` loads nothing else.
``claimtrace.compare`` is the API's function, though a subpackage has the same name: the
package's class keeps the name for the function (:class:`_Package`), and the subpackage is
reached by import statements (``from claimtrace.compare.runs import compare``), which find it by
its full name.
"""

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


class _Package(types.ModuleType):
    """The package's module: its attribute ``compare`` is always the API's function. Importing
    the subpackage ``claimtrace.compare`` sets that attribute on its parent; the setter lets the
    import system do so and keeps the function (the subpackage stays in ``sys.modules``)."""

    @property
    def compare(self):
        from claimtrace.api import compare

        return compare

    @compare.setter
    def compare(self, subpackage) -> None:
        pass


sys.modules[__name__].__class__ = _Package
