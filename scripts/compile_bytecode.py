"""Write the bytecode of the modules ``make demo`` imports, once, as pip does at install.

    .venv/bin/python scripts/compile_bytecode.py

uv installs the locks without compiling bytecode, and where ``PYTHONDONTWRITEBYTECODE`` is set
(as on the machines this project is measured on) no process writes any: each one compiles every
module it imports from source, at every start. That was about 4 of the 7 s ``claimtrace serve``
took to its first page after a fresh clone's build, and as much again in each typed-claims
process and in the build (docs/benchmarks.md, "First contact"). ``make demo`` runs this beside
the build: it imports what the build and the site import, with bytecode written for this one
process, into the venv and the package's own folders (``__pycache__``, ignored by git). A module
it misses is compiled where it is imported, as before; nothing else changes.
"""

from __future__ import annotations

import importlib
import sys

#: What the build's and the site's processes import between them (the command line, the stages,
#: the three models, the site and its typed-claims processes, the server): about 2,400 modules.
ENTRY_MODULES = (
    "claimtrace.cli.main",
    "claimtrace.workdir.builder",
    "claimtrace.models.transformer",
    "claimtrace.models.intended",
    "claimtrace.models.lstm",
    "claimtrace.web.app",
    "claimtrace.web.serving",
    "claimtrace.web.typed_processes",
    "scipy.stats",
    "uvicorn.protocols.http.h11_impl",
    "uvicorn.lifespan.on",
    "anyio._backends._asyncio",
    "multiprocessing.popen_spawn_posix",
    "multiprocessing.pool",
)


def main() -> None:
    sys.dont_write_bytecode = False  # this process's imports only: the environment is left as it is
    for name in ENTRY_MODULES:
        importlib.import_module(name)


if __name__ == "__main__":
    main()
