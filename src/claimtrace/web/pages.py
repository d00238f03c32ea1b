"""The site's pages, once: where each lives, the data it shows, the template that draws it and
its JSON twin. The server (:mod:`claimtrace.web.app`, its routes made from this registry by
:mod:`claimtrace.web.routes`) and the static export (:mod:`claimtrace.web.site`) both go through
:data:`PAGES`, so a page is the same wherever it is read, and a new page is one entry here.

Addresses: the export writes ``file`` (and ``twin``) relative to its folder; the server answers
the same at ``/`` + ``file`` (and ``/`` + ``twin``). A page with one file per claim or per split
answers at one route ending in ``{name}``: the key, then the format's suffix (``.json`` asks for
the twin, ``.html`` or none for the page), as ``/claim/claim-752.json``. A page's ``aliases`` are
the server's other addresses for it (``/`` for ``index.html``, ``/explore`` for dev's Explore,
``/live.json`` for a typed claim's trace, which a static site cannot hold).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from claimtrace import __version__
from claimtrace.course import WALKTHROUGH_CLAIM
from claimtrace.evaluation.scoreboard import scoreboard_rows
from claimtrace.web.render import Renderer, root_for
from claimtrace.web.runs import with_runs
from claimtrace.web.site_data import SiteData
from claimtrace.web.views.attribution import attribution_page
from claimtrace.web.views.explore import PREDICTION_SPLITS, prediction_path, row_predictions
from claimtrace.web.views.llm import AI_LOG_DATA, evaluation_data
from claimtrace.web.views.parity import parity
from claimtrace.web.views.results import results
from claimtrace.web.views.seeds import seeds_page
from claimtrace.web.views.tour import tour_view


class Asked(NamedTuple):
    """What an address asks of a page: the key (a claim id, a split...; a one-page entry's own)
    and the format, ``"html"`` (the page) or ``"json"`` (its data, the twin)."""

    key: Any
    format: str


@dataclass(frozen=True)
class Address:
    """A server address of a page: its route, and the key and format it asks for; ``format`` None
    for a keyed page's route, whose ``{name}`` tells both (:meth:`Page.asked`)."""

    route: str
    key: Any = None
    format: str | None = None


def split_name(name: str) -> Asked:
    """The last part of an address: ``"claim-752.json"`` -> ``("claim-752", "json")``; no suffix
    or ``.html`` -> ``"html"``."""
    for suffix in (".json", ".html"):
        if name.endswith(suffix):
            return Asked(name[: -len(suffix)], suffix[1:])
    return Asked(name, "html")


#: A part of a key in a file's name (``{key[0]}``): a parameter of the page's route.
_KEY_PART = re.compile(r"\{key\[(\d+)\]\}")


@dataclass(frozen=True)
class Page:
    """One kind of page (or, without a template, of JSON file).

    ``file`` and ``twin`` hold ``{key}`` (or its parts, ``{key[0]}``) where the page has one per
    claim, per split or per run; ``key`` is a one-page entry's own (the walkthrough's claim).
    ``data(site_data, key)`` is what the page shows and its twin holds; ``template(renderer, data,
    root)`` draws it (``root``: ``"../" * depth`` of its address); ``keys(site_data, claim_ids)``
    lists what an export writes of a page with a key, given the claims it writes per split."""

    name: str
    file: str
    twin: str | None
    data: Callable[[SiteData, Any], Any]
    template: Callable[[Renderer, Any, str], str] | None
    keys: Callable[[SiteData, dict[str, list[str]]], Iterable[Any]] | None = None
    key: Any = None
    aliases: tuple[Address, ...] = ()

    def path(self, key: Any = None) -> str:
        return self.file.format(key=key)

    def twin_path(self, key: Any = None) -> str | None:
        return None if self.twin is None else self.twin.format(key=key)

    def render(self, renderer: Renderer, data: Any, key: Any = None) -> str:
        """The page's HTML at its own address."""
        assert self.template is not None, self.name
        return self.template(renderer, data, root_for("/" + self.path(key)))

    @property
    def keyed(self) -> bool:
        """Whether the page has one file per key (a claim, a split, a run)."""
        return "{key" in self.file

    @property
    def formats(self) -> tuple[str, ...]:
        """What the page is offered as: the page and its twin, or a data file's JSON alone."""
        if self.template is None:
            return ("json",)
        return ("html", "json") if self.twin is not None else ("html",)

    def export_keys(self, site_data: SiteData, claim_ids: dict[str, list[str]]) -> list[Any]:
        """The keys an export writes this page for: a one-page entry's own, or :attr:`keys`."""
        return list(self.keys(site_data, claim_ids)) if self.keys is not None else [self.key]

    def routes(self) -> list[Address]:
        """The server's addresses of the page, in the order they are tried: its aliases, then its
        file and its twin (a keyed page's are one route, ``/claim/{name}``)."""
        if self.keyed:
            folder = self.file.rpartition("/")[0]
            return [*self.aliases, Address("/" + _KEY_PART.sub(r"{key\1}", folder) + "/{name}")]
        files = [Address("/" + self.file, self.key, split_name(self.file).format)]
        if self.twin is not None:
            files.append(Address("/" + self.twin, self.key, "json"))
        return [*self.aliases, *files]

    def asked(self, params: Mapping[str, str]) -> Asked:
        """What a keyed page's route asks, from its parameters: the key (its parts in order, the
        last one read off the name) and the format."""
        name = split_name(params["name"])
        parts = [params[f"key{index}"] for index in range(len(params) - 1)]
        return Asked((*parts, name.key) if parts else name.key, name.format)


def _chosen_splits(site_data: SiteData, claim_ids: dict[str, list[str]]) -> list[str]:
    return list(claim_ids)


def _chosen_claims(site_data: SiteData, claim_ids: dict[str, list[str]]) -> list[str]:
    return [claim_id for ids in claim_ids.values() for claim_id in ids]


def _row_keys(site_data: SiteData, claim_ids: dict[str, list[str]]) -> list[tuple[str, str]]:
    # one file per distinct predictions: a row whose file is another's is served but not written twice
    return [(split, row.name) for split in PREDICTION_SPLITS for row in scoreboard_rows() if row.file_row == row]


WALKTHROUGH = Page(
    "walkthrough",
    "index.html",
    "index.json",
    data=lambda site_data, claim_id: site_data.trace(claim_id),
    template=lambda renderer, trace, root: renderer.claim_page(trace, root),
    key=WALKTHROUGH_CLAIM,
    aliases=(Address("/", WALKTHROUGH_CLAIM, "html"),),
)
CLAIM = Page(
    "claim",
    "claim/{key}.html",
    "claim/{key}.json",
    data=lambda site_data, claim_id: site_data.trace(claim_id),
    template=lambda renderer, trace, root: renderer.claim_page(trace, root),
    keys=_chosen_claims,
)
EXPLORE = Page(
    "explore",
    "explore/{key}.html",
    "explore/{key}.json",
    data=lambda site_data, split: with_runs(site_data.runs, site_data.explore(split)),
    template=lambda renderer, explore, root: renderer.explore_page(explore, root),
    keys=_chosen_splits,
    aliases=(Address("/explore", "dev", "html"), Address("/explore.json", "dev", "json")),
)
#: The model-input editor, on the walkthrough's claim (a typed claim needs the server). No twin:
#: the server's ``/live.json?text=`` is a typed claim's trace, which a static site cannot hold.
LIVE = Page(
    "live",
    "live.html",
    None,
    data=lambda site_data, claim_id: site_data.trace(claim_id),
    template=lambda renderer, trace, root: renderer.live_page(root, trace, text=trace["claim"]["text"]),
    key=WALKTHROUGH_CLAIM,
    aliases=(Address("/live", WALKTHROUGH_CLAIM, "html"), Address("/live.json", WALKTHROUGH_CLAIM, "json")),
)
PREDICTIONS = Page(
    "predictions",
    "predictions/{key}.json",
    None,
    data=lambda site_data, split: site_data.build.course_predictions(split),
    template=None,
    keys=_chosen_splits,
)
ROW_PREDICTIONS = Page(
    "row-predictions",
    prediction_path("{key[0]}", "{key[1]}"),
    None,
    data=lambda site_data, key: row_predictions(site_data.build, *key),
    template=None,
    keys=_row_keys,
)


def _run_keys(site_data: SiteData, claim_ids: dict[str, list[str]]) -> list[str]:
    return [run.digest for run in site_data.runs.all()]


def run_report(site_data: SiteData, key: str) -> dict:
    """A run's page (:meth:`claimtrace.web.runs.Runs.report`); UnknownRun when no run has the key."""
    run = site_data.runs.get(key)
    if run is None:
        raise UnknownRun(key)
    return site_data.runs.report(run)


class UnknownRun(LookupError):
    """No run has this name or digest (an upload is forgotten when the server stops)."""


#: Your system beside the notebook's: every run compared, and the way to add one.
COMPARE_INDEX = Page(
    "compare-index",
    "compare/index.html",
    "compare/index.json",
    data=lambda site_data, key: site_data.runs.index(),
    template=lambda renderer, data, root: renderer.compare_index(data, root),
    aliases=(Address("/compare", None, "html"), Address("/compare/", None, "html")),
)
#: One run beside the notebook's pipeline, claim by claim.
COMPARE = Page(
    "compare",
    "compare/{key}.html",
    "compare/{key}.json",
    data=run_report,
    template=lambda renderer, data, root: renderer.compare_page(data, root),
    keys=_run_keys,
)
#: Every figure the course printed beside this build's, with its status and the reason.
PARITY = Page(
    "parity",
    "parity.html",
    "parity.json",
    data=lambda site_data, key: parity(site_data),
    template=lambda renderer, data, root: renderer.parity_page(data, root),
    aliases=(Address("/parity", None, "html"),),
)

#: The tour: three journeys as captioned screenshots (scripts/tour.py makes them).
TOUR = Page(
    "tour",
    "tour.html",
    "tour.json",
    data=lambda site_data, key: tour_view(),
    template=lambda renderer, data, root: renderer.tour_page(data, root),
    aliases=(Address("/tour", None, "html"),),
)

#: The retrieval's thresholds swept on dev: F, A, HM and the fallback share by setting, both rules.
RESULTS = Page(
    "results",
    "results.html",
    "results.json",
    data=lambda site_data, key: results(site_data),
    template=lambda renderer, data, root: renderer.results_page(data, root),
    aliases=(Address("/results", None, "html"),),
)

#: How the notebook works step by step, the data at a glance, the model cards, the data statement
#: and the decisions.
METHODS = Page(
    "methods",
    "methods.html",
    "methods.json",
    data=lambda site_data, key: site_data.methods(),
    template=lambda renderer, data, root: renderer.methods_page(data, root),
    aliases=(Address("/methods", None, "html"),),
)

#: The notebook's Transformer and its LSTM retrained under several seeds, beside the build's own
#: checkpoints: whether the difference between the two survives the seeds' spread. Read afresh on
#: every request (the file grows while the seeds train).
SEEDS = Page(
    "seeds",
    "seeds.html",
    "seeds.json",
    data=lambda site_data, key: seeds_page(site_data.build),
    template=lambda renderer, data, root: renderer.seeds_page(data, root),
    aliases=(Address("/seeds", None, "html"),),
)


def _class_keys(site_data: SiteData, claim_ids: dict[str, list[str]]) -> list[None]:
    """The class page is exported when there is a dev run to show."""
    return [None] if any(run.split == "dev" for run in site_data.runs.all()) else []


#: Every dev run together: per claim how many runs got it right, the claims nobody got right,
#: every file's audit (the leaderboard is the index's).
COMPARE_CLASS = Page(
    "compare-class",
    "compare/class.html",
    "compare/class.json",
    data=lambda site_data, key: site_data.runs.class_view(),
    template=lambda renderer, data, root: renderer.compare_class(data, root),
    keys=_class_keys,
)
#: Attribution methods graded against the exact per-token shares (``claimtrace attribute``).
ATTRIBUTION = Page(
    "attribution",
    "attribution.html",
    "attribution.json",
    data=lambda site_data, key: attribution_page(site_data.build),
    template=lambda renderer, data, root: renderer.attribution_page(data, root),
    aliases=(Address("/attribution", None, "html"),),
)
#: A visitor's own LLM on a seeded sample of dev claims, paired with the notebook's classifier:
#: the protocol, and the claims, passages and verdicts the browser runs it on.
EVALUATION = Page(
    "evaluation",
    "evaluation.html",
    "evaluation.json",
    data=lambda site_data, key: site_data.build.once(
        "evaluation", lambda: evaluation_data(site_data.build, __version__)
    ),
    template=lambda renderer, data, root: renderer.evaluation_page(data, root),
    aliases=(Address("/evaluation", None, "html"),),
)
#: Every call to a visitor's LLM this browser made (the log lives in the browser; its twin says
#: what a record holds).
AI_LOG = Page(
    "ai-log",
    "ai-log.html",
    "ai-log.json",
    data=lambda site_data, key: AI_LOG_DATA,
    template=lambda renderer, data, root: renderer.ai_log_page(data, root),
    aliases=(Address("/ai-log", None, "html"),),
)
TABLE = Page("table", "api/table.json", None, data=lambda site_data, key: site_data.table(), template=None)
BUILD = Page("build", "api/build.json", None, data=lambda site_data, key: site_data.build_info(), template=None)

#: Every page, in the order the export writes them and the server tries their routes (a page's
#: file before another's route that would also match it: compare/index.html before compare/{name}).
PAGES = (
    WALKTHROUGH,
    TABLE,
    BUILD,
    LIVE,
    ROW_PREDICTIONS,
    EXPLORE,
    PREDICTIONS,
    PARITY,
    TOUR,
    RESULTS,
    ATTRIBUTION,
    METHODS,
    SEEDS,
    EVALUATION,
    AI_LOG,
    COMPARE_INDEX,
    COMPARE_CLASS,
    COMPARE,
    CLAIM,
)
