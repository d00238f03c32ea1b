"""The Python API: a build, its claims' traces, a predictions file's scores and a comparison,
as typed objects that render themselves in a notebook with the site's own pages (docs/api.md).

* :func:`open_build` ``(workdir=None)``: a :class:`Build` (``build.claim(id)``,
  ``build.trace(text)``: a :class:`Trace`);
* :func:`evaluate` ``(predictions, split="dev")``: the course's :class:`Scores`, their intervals
  and the file's audit;
* :func:`compare` ``(*predictions, build=None, names=None)``: a :class:`Comparison` with the build's
  pipeline;
* :func:`preprocess` ``(text)``: the notebook's preprocessing (:class:`Preprocessed`).

Each name is loaded from its module when first asked for.

May import: everything (the top layer, beside ``cli``), never the command line itself.
"""

from __future__ import annotations

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
    if name in ("open_build", "Build", "Trace"):
        from claimtrace.api import build

        return getattr(build, name)
    if name in ("evaluate", "Scores"):
        from claimtrace.api import scores

        return getattr(scores, name)
    if name in ("compare", "Comparison"):
        from claimtrace.api import comparison

        return getattr(comparison, name)
    if name in ("preprocess", "Preprocessed"):
        from claimtrace.api import words

        return getattr(words, name)
    if name == "DataError":
        from claimtrace.errors import DataError

        return DataError
    raise AttributeError(f"module 'claimtrace.api' has no attribute {name!r}")
