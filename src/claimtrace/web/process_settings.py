"""A server process's memory: glibc's malloc arenas capped, and freed heap memory returned to
the system every so often, so that the resident memory levels off under a stream of typed claims
(docs/benchmarks.md, "Capacity")."""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import gc

#: Typed claims between two returns of freed heap memory to the system (:func:`release_memory`).
RELEASE_EVERY = 32
#: Where a process can wait for a moment nobody waits on it (the typed-claims processes), the
#: most typed claims it lets pass before it returns freed memory anyway: it takes about 1.3 ms, so
#: done in turn it was the slowest 3% of a stream's claims, and delayed those queued behind it.
RELEASE_LATEST = 4 * RELEASE_EVERY
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


def keep_out_of_collections() -> None:
    """Keep what the process holds now out of the collector's full passes (``gc.freeze``, after
    one last collection). A warm server holds millions of objects (the build, every Explore, the
    pages kept whole); a full pass walked them all, 207 ms measured under a stream of typed claims,
    every request on that process waiting, about once in 10 s at 550 claims/s (p99 125 to 147
    ms against 41 with this; docs/benchmarks.md). Objects made later are collected as before; a
    frozen one no longer referenced is still freed by its count."""
    gc.collect()
    gc.freeze()


def collect_all_again() -> None:
    """Undo :func:`keep_out_of_collections` (a server reading a completed build again: the
    old build's objects may then be collected)."""
    gc.unfreeze()
