"""The site's site_data: answers traces, Explore and the table over one build, caching what it
computed and scheduling the slow work. The data of every answer comes from the views
(:mod:`claimtrace.web.views.walkthrough`, :mod:`~claimtrace.web.views.explore`,
:mod:`~claimtrace.web.views.table`, :mod:`~claimtrace.web.views.status`), which read the build.

* :meth:`SiteData.trace` ``(claim_id)``: a course claim (train, dev or test) through every stage;
* :meth:`SiteData.trace_text` ``(text)``: any text, treated as a new claim (no gold, no batch);
  :meth:`SiteData.trace_text_json` the same as the JSON bytes an answer sends;
* :meth:`SiteData.explore` ``(split)``: every claim of a split, with accuracies and confusions;
* :meth:`SiteData.table` : the classifier's 5,886 x 4 table ``g`` and its bias, for the browser;
* :meth:`SiteData.build_info` : what the build holds and which stages are missing.
"""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from claimtrace.compare.run_store import RunStore
from claimtrace.constants import MAX_LEN, SPLITS
from claimtrace.course import WALKTHROUGH_CLAIM
from claimtrace.data.files import Claim
from claimtrace.errors import DataError
from claimtrace.errors import Missing as StageMissing
from claimtrace.lib.lru import LRU
from claimtrace.pipeline.preprocess import bound_stem_cache
from claimtrace.web.encoding import encode
from claimtrace.web.process_settings import RELEASE_EVERY, release_memory
from claimtrace.web.runs import Runs
from claimtrace.web.views import walkthrough
from claimtrace.web.views.explore import explore as explore_split
from claimtrace.web.views.methods import methods
from claimtrace.web.views.status import build_info, public_paths
from claimtrace.web.views.table import table_payload
from claimtrace.workdir.reader import BuildReader

#: A typed claim longer than this is refused with a clear message (the model reads 128 tokens).
MAX_TEXT_CHARS = 20_000
#: Traces kept in memory.
TRACE_CACHE = 512
#: Words the stem cache may hold in a server before it is emptied (typed claims bring new words;
#: every course claim's words fit many times over).
STEM_CACHE_WORDS = 1 << 16


__all__ = ["SiteData", "StageMissing", "UnknownClaim", "BadText", "MAX_TEXT_CHARS"]


class UnknownClaim(LookupError):
    """No claim with this id in train, dev or test."""


class BadText(ValueError):
    """A typed claim that cannot be traced (empty, too long); the message says why."""


#: Fields that hold why a piece is not shown (a file and what to run) outside a missing section.
_REASONS = frozenset({"verdicts_missing"})
#: The statuses of a section that is not shown, whose ``"reason"`` names files.
_NOT_SHOWN = ("missing", "damaged")
#: What the compact JSON of a value holds wherever :func:`public_reasons` has something to change:
#: a ``"status"`` key with a not-shown value, or a reason field holding a string. Inside a JSON
#: string a quote is escaped, so these bytes can only be a key and its value.
_REASON_MARKS = (
    *(f'"status":"{status}"'.encode() for status in _NOT_SHOWN),
    *(f'"{field}":"'.encode() for field in sorted(_REASONS)),
)


def public_reasons(value, root):
    """``value`` with every section that is not built or damaged (``{"status": "missing" |
    "damaged", "reason"}``) saying its files relative to the workdir, not where this machine
    keeps them; the rest (claim texts, passages) untouched."""
    if isinstance(value, dict):
        if value.get("status") in _NOT_SHOWN and isinstance(value.get("reason"), str):
            return {**value, "reason": public_paths(value["reason"], root)}
        return {
            key: public_paths(item, root)
            if key in _REASONS and isinstance(item, str)
            else public_reasons(item, root)
            if isinstance(item, _NESTED)
            else item
            for key, item in value.items()
        }
    if isinstance(value, list):
        # A trace holds long lists of numbers and words (ids, shares): only what nests is walked.
        return [public_reasons(item, root) if isinstance(item, _NESTED) else item for item in value]
    return value


_NESTED = (dict, list)


def encode_public(value, root) -> bytes:
    """``encode(public_reasons(value, root))``, walking ``value`` only when its JSON shows a
    section or a reason the walk would change (:data:`_REASON_MARKS`). A typed claim's trace over
    a whole build has none, and the walk through its few hundred dicts was an eighth of its
    trace (bench/bench_typed.py)."""
    body = encode(value)
    if any(mark in body for mark in _REASON_MARKS):
        return encode(public_reasons(value, root))
    return body


def build_stamp(build: BuildReader) -> tuple:
    """What changes when a build is completed or repaired: its manifest's and build.json's
    size, modification time and inode (every file the build writes is recorded in the manifest)."""
    stamp = []
    for path in (build.work.file_manifest, build.work.build_record):
        try:
            status = path.stat()
            stamp.append((status.st_size, status.st_mtime_ns, status.st_ino))
        except OSError:
            stamp.append(None)
    return tuple(stamp)


class SiteData:
    """Traces over one build, cached (a trace never changes once computed)."""

    def __init__(self, build: BuildReader, store: RunStore | None = None):
        self.build = build
        self._lock = threading.Lock()  # the caches' bookkeeping
        self._traces: LRU[str, dict] = LRU(TRACE_CACHE)
        self._explored: set[str] = set()  # the splits whose Explore is computed
        self._futures: dict[str, Any] = {}
        self._executor: ThreadPoolExecutor | None = None
        self._typed_thread: ThreadPoolExecutor | None = None  # typed claims, in turn (submit)
        #: The way to the processes tracing typed claims (``web.typed_processes.TypedClient``), where the
        #: server has them (``serve --typed-processes N``); None: typed claims are traced in turn here.
        self.typed_processes = None
        self.progress: dict[str, dict] = {}
        self._typed = 0  # typed claims traced
        #: Freed memory is returned after every this many typed claims (0: the caller returns it,
        #: as a typed-claims process does when nobody waits on it).
        self.release_every = RELEASE_EVERY
        #: Set once a page has been answered: the Explore warm-up waits for it, so that it does
        #: not compete with the first page for the CPU (measured: 8.5 s -> 4.9 s at 1.2M passages).
        self.first_page_served = threading.Event()
        #: The predictions files compared with the build (serve/site --predictions, uploads), kept
        #: in ``store`` (in memory when None).
        self.runs = Runs(build, store)

    def claims(self, split: str) -> dict[str, Claim]:
        return self.build.claims(split)

    def _assemble(self, text: str, **claim) -> dict:
        # No lock: a trace shares nothing mutable (the retrieval model's work arrays are made per
        # call), so typed claims on several threads run at once.
        return public_reasons(walkthrough.assemble(self.build, text, **claim), self.build.root)

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
        self._traces.put(claim_id, result)
        return self._traces.get(claim_id) or result  # the first one kept, if two threads raced

    def submit(self, call, *args):
        """``call(*args)`` on the typed claims' own thread, after those asked before it (an
        awaitable). Typed claims are almost all Python, so two at once only share one core
        under the interpreter's lock, each taking as long as both; in turn, first come first
        served, each waits for those ahead and then takes what it takes alone (bench/bench_typed.py)."""
        if self._typed_thread is None:
            with self._lock:
                if self._typed_thread is None:
                    self._typed_thread = ThreadPoolExecutor(1, thread_name_prefix="typed-claims")
        return asyncio.wrap_future(self._typed_thread.submit(call, *args))

    def trace_text(self, text: str) -> dict:
        """Any text as a new claim: every stage, no gold passages, no notebook batch."""
        return self._trace_typed(text, self._assemble)

    def trace_text_json(self, text: str) -> bytes:
        """:meth:`trace_text` as the JSON bytes an answer sends (``encode`` of it), made without
        walking the trace where it has no reason to make public (:func:`encode_public`)."""
        return self._trace_typed(
            text, lambda typed: encode_public(walkthrough.assemble(self.build, typed), self.build.root)
        )

    def _trace_typed(self, text: str, trace):
        """``trace(text)`` for a typed text that can be traced (else BadText), and the bookkeeping
        after each: the stem cache bounded, freed memory returned now and then."""
        if not isinstance(text, str) or not text.strip():
            raise BadText("Type a claim: the text is empty.")
        if len(text) > MAX_TEXT_CHARS:
            raise BadText(
                f"That text is {len(text):,} characters; a claim here may have at most {MAX_TEXT_CHARS:,}. "
                f"(Claims in the course data are at most a few hundred characters, and the classifier reads "
                f"only its first {MAX_LEN} tokens anyway.)"
            )
        try:
            return trace(text)
        finally:
            bound_stem_cache(STEM_CACHE_WORDS)
            self._typed += 1
            if self.release_every and self._typed % self.release_every == 0:
                release_memory()

    def explore(self, split: str) -> dict:
        """Every claim of a split (:func:`claimtrace.web.views.explore.explore`)."""
        if split not in SPLITS:
            raise UnknownClaim(split)
        explored = self.build.once(
            ("web", "explore", split), lambda: public_reasons(explore_split(self.build, split), self.build.root)
        )
        self._explored.add(split)
        return explored

    def explore_when_ready(self, split: str, wait: float) -> dict | None:
        """:meth:`explore`, computed in the background; None when it is not ready within ``wait``
        seconds."""
        if split not in SPLITS:
            raise UnknownClaim(split)
        if split in self._explored:
            return self.explore(split)
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

    def methods(self) -> dict:
        """The methods page (:func:`claimtrace.web.views.methods.methods`), made once per build."""
        return self.build.once(("web", "methods"), lambda: public_reasons(methods(self.build), self.build.root))

    def table(self) -> dict:
        return self.build.once(("web", "table"), lambda: table_payload(self.build))

    def build_info(self, brief: bool = False) -> dict:
        return build_info(self.build, brief)

    def warm(self, splits=SPLITS, wait_for_first_page: float = 30.0) -> None:
        """Load what the front page needs; once a first page has been answered (or after
        ``wait_for_first_page`` seconds), queue every split's Explore in the background, so that
        a server's pages are ready when asked for, trace a first typed claim, and return when
        every Explore is computed (a server then says ``"typed_ready"``: warm)."""
        try:
            self.trace(WALKTHROUGH_CLAIM)
        except (StageMissing, UnknownClaim):
            pass
        self.first_page_served.wait(wait_for_first_page)
        for split in splits:
            self.explore_when_ready(split, 0.0)
        self.warm_typed()
        for future in list(self._futures.values()):  # warm once every Explore is computed too
            try:
                future.result()
            except Exception:  # noqa: BLE001 - a split that cannot be explored says so on its page
                pass

    #: What a server traces once at start so that its first typed claim costs what any other does
    #: (the classifier's PyTorch model is imported and loaded on the first: 2-12 s, one worker at a
    #: time, in a lecture hall's first seconds).
    WARM_TEXT = "Arctic sea ice is warming the ocean."

    def warm_typed(self) -> None:
        try:
            self.build.classifier().prepare_typed()  # a typed claim's forward call from the encoder's rows
            self._assemble(self.WARM_TEXT)
        except (StageMissing, DataError):
            pass
