"""The site's data: answers traces, Explore and the table over one build, caching what it
computed and scheduling the slow work. The data of every answer comes from the views
(:mod:`claimtrace.web.views.walkthrough`, :mod:`~claimtrace.web.views.explore`,
:mod:`~claimtrace.web.views.table`, :mod:`~claimtrace.web.views.status`), which read the build.

* :meth:`SiteData.trace` ``(claim_id)``: a course claim (train, dev or test) through every stage;
* :meth:`SiteData.explore` ``(split)``: every claim of a split, with accuracies and confusions;
* :meth:`SiteData.table` : the classifier's 5,886 x 4 table ``g`` and its bias, for the browser;
* :meth:`SiteData.build_info` : what the build holds and which stages are missing;
* :attr:`SiteData.typed_claims` : any text traced as a new claim, in turn
  (:class:`claimtrace.web.typed_claims.TypedClaimQueue`);
* :meth:`SiteData.text_counterfactuals` ``(text, rule)``: what would change a typed claim's
  verdict under a scoring rule, computed in the background (a second request after its live page).
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from claimtrace.compare.run_store import RunStore
from claimtrace.constants import SPLITS
from claimtrace.course import WALKTHROUGH_CLAIM
from claimtrace.data.files import Claim
from claimtrace.errors import Missing as StageMissing
from claimtrace.evaluation.sweep import Rule
from claimtrace.explain.counterfactuals.report import counterfactuals
from claimtrace.explain.retrieval import NOTEBOOK_RULE
from claimtrace.lib.lru import LRU
from claimtrace.web import previews
from claimtrace.web.public_reasons import public_reasons
from claimtrace.web.runs import Runs
from claimtrace.web.typed_claims import TypedClaimQueue
from claimtrace.web.views import walkthrough
from claimtrace.web.views.attribution import attribution_page
from claimtrace.web.views.counterfactuals import shown
from claimtrace.web.views.explore import explore as explore_split
from claimtrace.web.views.landing import example_claims, landing
from claimtrace.web.views.methods import methods, series_document
from claimtrace.web.views.seeds import seeds_page
from claimtrace.web.views.status import build_info
from claimtrace.web.views.table import table_payload
from claimtrace.web.views.tour import tour_view
from claimtrace.workdir.reader import BuildReader

#: Traces kept in memory.
TRACE_CACHE = 512
#: Typed texts' counterfactuals kept in memory (each takes seconds to compute).
COUNTERFACTUAL_CACHE = 64


__all__ = ["SiteData", "StageMissing", "UnknownClaim"]


class UnknownClaim(LookupError):
    """No claim with this id in train, dev or test."""


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
        #: Typed claims over the same build, traced in turn on a thread of their own.
        self.typed_claims = TypedClaimQueue(build)
        self.progress: dict[str, dict] = {}
        #: Set once a page has been answered: the Explore warm-up waits for it, so that it does
        #: not compete with the first page for the CPU (docs/benchmarks.md, "The site over a
        #: course-scale build").
        self.first_page_served = threading.Event()
        #: The predictions files compared with the build (serve/site --predictions, uploads), kept
        #: in ``store`` (in memory when None).
        self.runs = Runs(build, store)
        self._counterfactuals: LRU[tuple[str, str], dict] = LRU(COUNTERFACTUAL_CACHE)  # by (text, rule's name)
        self._counterfactual_futures: dict[tuple[str, str], Any] = {}  # texts being computed
        self._counterfactual_executor: ThreadPoolExecutor | None = None

    def claims(self, split: str) -> dict[str, Claim]:
        return self.build.claims(split)

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
        traced = walkthrough.assemble(self.build, claim.text, claim=claim, split=split, position=position)
        result = public_reasons(traced, self.build.root)
        self._traces.put(claim_id, result)
        return self._traces.get(claim_id) or result  # the first one kept, if two threads raced

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

    def text_counterfactuals(self, text: str, rule: Rule = NOTEBOOK_RULE) -> dict | None:
        """What would change a typed text's verdict, its passages retrieved under ``rule`` at every
        re-trace (:func:`claimtrace.explain.counterfactuals.report.counterfactuals`, as a page's
        section), computed on a thread of its own, one text at a time; None while it is computed
        (the page asks again)."""
        key = (text, rule.name)
        done = self._counterfactuals.get(key)
        if done is not None:
            return done
        with self._lock:
            if self._counterfactual_executor is None:
                self._counterfactual_executor = ThreadPoolExecutor(1, thread_name_prefix="claimtrace-counterfactuals")
            future = self._counterfactual_futures.get(key)
            if future is None:
                future = self._counterfactual_executor.submit(self._text_counterfactuals, key)
                self._counterfactual_futures[key] = future
        if not future.done():
            return None
        with self._lock:
            self._counterfactual_futures.pop(key, None)
        return future.result()  # kept in the LRU by the computation; an error is raised here

    def _text_counterfactuals(self, key: tuple[str, str]) -> dict:
        text, rule = key
        result = shown(counterfactuals(self.build, text=text, rule=rule))
        self._counterfactuals.put(key, result)
        return result

    def methods(self) -> dict:
        """The methods page (:func:`claimtrace.web.views.methods.methods`), made once per build."""
        return self.build.once(("web", "methods"), lambda: public_reasons(methods(self.build), self.build.root))

    def methods_document(self, slug: str) -> dict:
        """A statement or decision of the methods' series at its own page
        (:func:`claimtrace.web.views.methods.series_document`); UnknownDocument for another slug."""
        return series_document(self.methods(), slug)

    def tour(self) -> dict:
        """The tour's journeys and captions (:func:`claimtrace.web.views.tour.tour_view`: the
        site's own, the same over any build)."""
        return tour_view()

    def seeds(self) -> dict:
        """The seeds page (:func:`claimtrace.web.views.seeds.seeds_page`) over the build, read
        afresh: the file grows while the seeds train."""
        return seeds_page(self.build)

    def attribution(self) -> dict:
        """The attribution page (:func:`claimtrace.web.views.attribution.attribution_page`) over the build."""
        return attribution_page(self.build)

    def table(self) -> dict:
        return self.build.once(("web", "table"), lambda: table_payload(self.build))

    def landing(self) -> dict:
        """The landing page (:func:`claimtrace.web.views.landing.landing`), made once per build."""
        return self.build.once(("web", "landing"), lambda: public_reasons(landing(self.build), self.build.root))

    def preview(self, claim_id: str | None) -> bytes:
        """A page's preview picture (:mod:`claimtrace.web.previews`): a course claim's verdict
        card, or the site's card (``claim_id`` None); the site's made once per build, a claim's
        from its trace (which the trace cache keeps)."""
        if claim_id is None:
            return self.build.once(("web", "preview"), lambda: previews.site_card(self.landing()))
        return previews.verdict_card(self.trace(claim_id))

    def example_claims(self) -> list[dict]:
        """The live page's example claims, one per label (:func:`claimtrace.web.views.landing.example_claims`)."""
        return self.build.once(("web", "examples"), lambda: example_claims(self.build))

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
        self.typed_claims.warm()
        for future in list(self._futures.values()):  # warm once every Explore is computed too
            try:
                future.result()
            except Exception:  # noqa: BLE001 - a split that cannot be explored says so on its page
                pass
