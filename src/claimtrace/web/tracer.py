"""The site's tracer: answers traces, Explore and the table over one build, caching what it
computed and scheduling the slow work. The data of every answer comes from
:mod:`claimtrace.web.sections` and :mod:`claimtrace.web.explore`, which read the build.

* :meth:`Tracer.trace` ``(claim_id)``: a course claim (train, dev or test) through every stage;
* :meth:`Tracer.trace_text` ``(text)``: any text, treated as a new claim (no gold, no batch);
* :meth:`Tracer.explore` ``(split)``: every claim of a split, with accuracies and confusions;
* :meth:`Tracer.table` : the classifier's 5,886 x 4 table ``g`` and its bias, for the browser;
* :meth:`Tracer.build_info` : what the build holds and which stages are missing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import threading
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from .. import constants as C
from ..artifacts import Build
from ..course import WALKTHROUGH_CLAIM
from ..data import Claim
from ..errors import Missing as StageMissing
from ..preprocess import bound_stem_cache
from . import sections
from .explore import explore as explore_split

#: A typed claim longer than this is refused with a clear message (the model reads 128 tokens).
MAX_TEXT_CHARS = 20_000
#: Traces kept in memory.
TRACE_CACHE = 512
#: Words the stem cache may hold in a server before it is emptied (typed claims bring new words;
#: every course claim's words fit many times over).
STEM_CACHE_WORDS = 1 << 16
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


__all__ = ["Tracer", "StageMissing", "UnknownClaim", "BadText", "MAX_TEXT_CHARS"]


class UnknownClaim(LookupError):
    """No claim with this id in train, dev or test."""


class BadText(ValueError):
    """A typed claim that cannot be traced (empty, too long); the message says why."""


class Tracer:
    """Traces over one build, cached (a trace never changes once computed)."""

    def __init__(self, build: Build):
        self.build = build
        self._lock = threading.Lock()  # the retrieval model's scratch arrays and the model are shared
        self._traces: OrderedDict[str, dict] = OrderedDict()
        self._memo: dict[Any, Any] = {}
        self._futures: dict[str, Any] = {}
        self._executor: ThreadPoolExecutor | None = None
        self.progress: dict[str, dict] = {}
        self._typed = 0  # typed claims traced (every RELEASE_EVERY, freed memory is returned)
        #: Set once a page has been answered: the Explore warm-up waits for it, so that it does
        #: not compete with the first page for the CPU (measured: 8.5 s -> 4.9 s at 1.2M passages).
        self.first_page_served = threading.Event()

    def claims(self, split: str) -> dict[str, Claim]:
        return self.build.claims(split)

    def _assemble(self, text: str, **claim) -> dict:
        with self._lock:  # the retrieval model's scratch arrays are shared
            return sections.assemble(self.build, text, **claim)

    def trace(self, claim_id: str) -> dict:
        """A course claim through every stage. UnknownClaim when no split has it."""
        cached = self._traces.get(claim_id)
        if cached is not None:
            return cached
        found = self.build.locate(claim_id)
        if found is None:
            raise UnknownClaim(claim_id)
        split, position = found
        claim = self.build.claims(split)[claim_id]
        result = self._assemble(claim.text, claim=claim, split=split, position=position)
        with self._lock:
            self._traces[claim_id] = result
            while len(self._traces) > TRACE_CACHE:
                self._traces.popitem(last=False)
        return result

    def trace_text(self, text: str) -> dict:
        """Any text as a new claim: every stage, no gold passages, no notebook batch."""
        if not isinstance(text, str) or not text.strip():
            raise BadText("Type a claim: the text is empty.")
        if len(text) > MAX_TEXT_CHARS:
            raise BadText(
                f"That text is {len(text):,} characters; a claim here may have at most {MAX_TEXT_CHARS:,}. "
                f"(Claims in the course data are at most a few hundred characters, and the classifier reads "
                f"only its first {C.MAX_LEN} tokens anyway.)"
            )
        try:
            return self._assemble(text)
        finally:
            bound_stem_cache(STEM_CACHE_WORDS)
            self._typed += 1
            if self._typed % RELEASE_EVERY == 0:
                release_memory()

    def _once(self, key, make):
        if key not in self._memo:
            value = make()
            with self._lock:
                self._memo.setdefault(key, value)
        return self._memo[key]

    def explore(self, split: str) -> dict:
        """Every claim of a split (:func:`claimtrace.web.explore.explore`)."""
        if split not in C.SPLITS:
            raise UnknownClaim(split)
        return self._once(("explore", split), lambda: explore_split(self.build, split))

    def explore_when_ready(self, split: str, wait: float) -> dict | None:
        """:meth:`explore`, computed in the background; None when it is not ready within ``wait``
        seconds."""
        if split not in C.SPLITS:
            raise UnknownClaim(split)
        if ("explore", split) in self._memo:
            return self._memo[("explore", split)]
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="claimtrace-explore")
            future = self._futures.get(split)
            if future is None:
                future = self._futures[split] = self._executor.submit(self.explore, split)
        try:
            return future.result(timeout=wait)
        except FutureTimeout:
            return None

    def table(self) -> dict:
        return self._once("table", lambda: sections.table_payload(self.build))

    def build_info(self, brief: bool = False) -> dict:
        return sections.build_info(self.build, brief)

    def warm(self, splits=C.SPLITS, wait_for_first_page: float = 30.0) -> None:
        """Load what the front page needs; once a first page has been answered (or after
        ``wait_for_first_page`` seconds), queue every split's Explore in the background, so that
        a server's pages are ready when asked for."""
        try:
            self.trace(WALKTHROUGH_CLAIM)
        except (StageMissing, UnknownClaim):
            pass
        self.first_page_served.wait(wait_for_first_page)
        for split in splits:
            self.explore_when_ready(split, 0.0)
