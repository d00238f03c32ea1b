"""The process-wide settings of a server process, every one of them: what ``claimtrace serve``
changes for a whole process (the environment, PyTorch's thread count, glibc's malloc, Python's
garbage collector). Nothing else in the package changes them.

Every process ``serve`` runs calls :func:`configure_server_process` first: ``serve``'s own, each
worker of ``--workers N`` and each typed-claims process (both started afresh, by ``spawn``). Two
settings can only come later, and come from here too: what a warm process holds is kept out of
the collector's full passes once it is loaded (:func:`keep_out_of_collections`), and freed heap
memory is returned to the system every so many typed claims (:func:`release_memory`), so that
the resident memory levels off under a stream of typed claims (docs/benchmarks.md, "Capacity").
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import gc
import os
import sys

#: PyTorch threads in a server process (:func:`configure_server_process`).
TORCH_THREADS = 1
#: Typed claims between two returns of freed heap memory to the system (:func:`release_memory`).
RELEASE_EVERY = 32
#: Where a process can wait for a moment nobody waits on it (the typed-claims processes), the
#: most typed claims it lets pass before it returns freed memory anyway: done in turn it was among
#: the slowest of a stream's claims, and delayed those queued behind it (docs/benchmarks.md,
#: "Typed claims under concurrent load").
RELEASE_LATEST = 4 * RELEASE_EVERY
#: glibc malloc arenas a server process may use (glibc's default is 8 per core): each request
#: thread would otherwise keep its own arena's freed memory.
MALLOC_ARENAS = 2


def configure_server_process() -> None:
    """Set what a server process sets for its whole life, at its start:

    * PyTorch on :data:`TORCH_THREADS` CPU thread for good: ``OMP_NUM_THREADS`` and
      ``MKL_NUM_THREADS`` in the environment, which torch and MKL read when torch is imported (a
      server imports it on its first typed claim; the processes it starts inherit the
      environment), and ``torch.set_num_threads`` when torch is already imported. A server's
      forward calls are batches of one, which gain nothing from a second thread; with the count
      fixed, :meth:`~claimtrace.models.predict.Classifier.forward_alone` need not set it and put
      it back around each call (the count is the process's), which made every typed claim's calls
      wait for each other's; and N typed-claims processes on N cores do not compete for them.
    * glibc's malloc arenas capped at :data:`MALLOC_ARENAS` (:func:`limit_malloc_arenas`): each
      request thread would otherwise keep its own arena's freed memory.
    """
    os.environ["OMP_NUM_THREADS"] = os.environ["MKL_NUM_THREADS"] = str(TORCH_THREADS)
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(TORCH_THREADS)
    limit_malloc_arenas()


@functools.cache
def _libc():
    """The C library, found once (``find_library`` runs ``ldconfig``: too slow to repeat on
    every release)."""
    name = ctypes.util.find_library("c")
    return ctypes.CDLL(name) if name else None


def limit_malloc_arenas(arenas: int = MALLOC_ARENAS) -> bool:
    """Cap glibc's malloc arenas for the rest of the process (``mallopt(M_ARENA_MAX)``); False
    where the C library is not glibc."""
    try:
        libc = _libc()
        return bool(libc is not None and libc.mallopt(-8, arenas))  # -8: M_ARENA_MAX in malloc.h
    except (OSError, AttributeError):
        return False


def release_memory() -> None:
    """Return freed heap memory to the system (glibc's ``malloc_trim``). A trace allocates and
    frees many small arrays and PyTorch tensors; glibc keeps what was freed for reuse, and under a
    stream of typed claims the server's resident memory climbed claim after claim without it
    (docs/benchmarks.md, "Capacity"), though nothing live grew."""
    try:
        libc = _libc()
        if libc is not None:
            libc.malloc_trim(0)
    except (OSError, AttributeError):
        pass


def keep_out_of_collections() -> None:
    """Keep what the process holds now out of the collector's full passes (``gc.freeze``, after
    one last collection). A warm server holds millions of objects (the build, every Explore, the
    pages kept whole); a full pass walked them all while every request on that process waited, the
    slowest answers of a stream of typed claims (docs/benchmarks.md, "Typed claims under concurrent
    load"). Objects made later are collected as before; a frozen one no longer referenced is still
    freed by its count."""
    gc.collect()
    gc.freeze()


def collect_all_again() -> None:
    """Undo :func:`keep_out_of_collections` (a server reading a completed build again: the
    old build's objects may then be collected)."""
    gc.unfreeze()
