"""A server process's memory: glibc's malloc arenas capped, and freed heap memory returned to
the system every so often, so that the resident memory levels off under a stream of typed claims
(docs/benchmarks.md, "Capacity")."""

from __future__ import annotations

import ctypes
import ctypes.util
import functools

#: Typed claims between two returns of freed heap memory to the system (:func:`release_memory`).
RELEASE_EVERY = 32
#: glibc malloc arenas a server process may use (glibc's default is 8 per core): each request
#: thread would otherwise keep its own arena's freed memory.
MALLOC_ARENAS = 2


@functools.cache
def _libc():
    """The C library, found once (``find_library`` runs ``ldconfig``: too slow to repeat on
    every release)."""
    name = ctypes.util.find_library("c")
    return ctypes.CDLL(name) if name else None


def limit_malloc_arenas(arenas: int = MALLOC_ARENAS) -> bool:
    """Cap glibc's malloc arenas for the rest of the process (``mallopt(M_ARENA_MAX)``); False
    where the C library is not glibc. A server calls it at start."""
    try:
        libc = _libc()
        return bool(libc is not None and libc.mallopt(-8, arenas))  # -8: M_ARENA_MAX in malloc.h
    except (OSError, AttributeError):
        return False


def release_memory() -> None:
    """Return freed heap memory to the system (glibc's ``malloc_trim``; well under 1 ms). A trace
    allocates and frees tens of MB of small arrays and PyTorch tensors; glibc keeps what was freed
    for reuse, and under a stream of typed claims the server's resident memory climbed by 100 KB a
    claim without it (docs/benchmarks.md, "Capacity"), though nothing live grew."""
    try:
        libc = _libc()
        if libc is not None:
            libc.malloc_trim(0)
    except (OSError, AttributeError):
        pass
