"""The typed-claim queue: any text traced as a new claim over one build (no gold, no batch).

* :meth:`TypedClaimQueue.submit` ``(call, *args)``: a call on the typed claims' own thread, after
  those asked before it (a server's typed claims, first come first served);
* :meth:`TypedClaimQueue.trace_text` ``(text, rule)``: the text through every stage, its passages
  retrieved under a scoring rule (the notebook's unless another is named), refused with
  :class:`BadText` where it cannot be traced; :meth:`TypedClaimQueue.trace_text_json` the same as
  the JSON bytes an answer sends;
* :meth:`TypedClaimQueue.warm`: one claim traced at start, so that the first typed claim costs
  what any other does.

A server with typed-claims processes of its own (``serve --typed-processes N``) hands typed
claims to them instead (:attr:`TypedClaimQueue.processes`, :mod:`claimtrace.web.typed_processes`).
"""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

from claimtrace.constants import MAX_LEN
from claimtrace.errors import DataError
from claimtrace.errors import Missing as StageMissing
from claimtrace.evaluation.sweep import Rule
from claimtrace.explain.retrieval import NOTEBOOK_RULE
from claimtrace.web.process_settings import RELEASE_EVERY, release_memory
from claimtrace.web.public_reasons import encode_public, public_reasons
from claimtrace.web.views import walkthrough
from claimtrace.workdir.reader import BuildReader

#: A typed claim longer than this is refused with a clear message (the model reads 128 tokens).
MAX_TEXT_CHARS = 20_000
#: Words the stem cache may hold in a server before it is emptied (typed claims bring new words;
#: every course claim's words fit many times over).
SERVER_STEM_CACHE_WORDS = 1 << 16

__all__ = ["TypedClaimQueue", "BadText", "MAX_TEXT_CHARS", "SERVER_STEM_CACHE_WORDS"]


class BadText(ValueError):
    """A typed claim that cannot be traced (empty, too long); the message says why."""


class TypedClaimQueue:
    """Typed claims over one build, traced in turn on a thread of their own (:meth:`submit`)."""

    #: What a server traces once at start so that its first typed claim costs what any other does
    #: (the classifier's PyTorch model is imported and loaded on the first, one worker at a time, in
    #: a lecture hall's first seconds: docs/benchmarks.md, "Typed claims under concurrent load").
    WARM_TEXT = "Arctic sea ice is warming the ocean."

    def __init__(self, build: BuildReader):
        self.build = build
        self._lock = threading.Lock()  # the thread made once
        self._thread: ThreadPoolExecutor | None = None  # typed claims, in turn (submit)
        #: The way to the processes tracing typed claims (``web.typed_processes.TypedClient``), where the
        #: server has them (``serve --typed-processes N``); None: typed claims are traced in turn here.
        self.processes = None
        self._traced = 0  # typed claims traced
        #: Freed memory is returned after every this many typed claims (0: the caller returns it,
        #: as a typed-claims process does when nobody waits on it).
        self.release_every = RELEASE_EVERY

    def submit(self, call, *args):
        """``call(*args)`` on the typed claims' own thread, after those asked before it (an
        awaitable). Typed claims are almost all Python, so two at once only share one core
        under the interpreter's lock, each taking as long as both; in turn, first come first
        served, each waits for those ahead and then takes what it takes alone (bench/bench_typed.py)."""
        if self._thread is None:
            with self._lock:
                if self._thread is None:
                    self._thread = ThreadPoolExecutor(1, thread_name_prefix="typed-claims")
        return asyncio.wrap_future(self._thread.submit(call, *args))

    def _assemble(self, text: str, rule: Rule = NOTEBOOK_RULE) -> dict:
        # No lock: a trace shares nothing mutable (the retrieval model's work arrays are made per
        # call), so typed claims on several threads run at once.
        return public_reasons(walkthrough.assemble(self.build, text, rule=rule), self.build.root)

    def trace_text(self, text: str, rule: Rule = NOTEBOOK_RULE) -> dict:
        """Any text as a new claim: every stage, no gold passages, no notebook batch; its passages
        retrieved under ``rule`` (:data:`claimtrace.evaluation.sweep.RULES`)."""
        return self._trace_typed(text, lambda typed: self._assemble(typed, rule))

    def trace_text_json(self, text: str, rule: Rule = NOTEBOOK_RULE) -> bytes:
        """:meth:`trace_text` as the JSON bytes an answer sends (``encode`` of it), made without
        walking the trace where it has no reason to make public (:func:`encode_public`)."""
        return self._trace_typed(
            text, lambda typed: encode_public(walkthrough.assemble(self.build, typed, rule=rule), self.build.root)
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
            self.build.preprocessor.bound_stem_cache(SERVER_STEM_CACHE_WORDS)
            self._traced += 1
            if self.release_every and self._traced % self.release_every == 0:
                release_memory()

    def warm(self) -> None:
        """The classifier loaded and :data:`WARM_TEXT` traced (nothing where the build lacks a stage)."""
        try:
            self.build.classifier().prepare_typed()  # a typed claim's forward call from the encoder's rows
            self._assemble(self.WARM_TEXT)
        except (StageMissing, DataError):
            pass
