"""Where a build lives when nobody says: the one rule the command line's ``--workdir`` and the
Python API's ``open_build()`` both follow."""

from __future__ import annotations

import os

#: The environment variable naming the build to read when no folder is given.
WORKDIR_VARIABLE = "CLAIMTRACE_WORKDIR"
#: The folder ``make demo`` builds into (the Makefile's ``WORKDIR``), relative to the current
#: folder, when the variable is unset or empty.
DEFAULT_WORKDIR = "work/demo"


def default_workdir() -> str:
    """``$CLAIMTRACE_WORKDIR``, else ``work/demo``."""
    return os.environ.get(WORKDIR_VARIABLE) or DEFAULT_WORKDIR
