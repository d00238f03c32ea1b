"""The site's pages, once: where each lives, the data it shows, the template that draws it and
its JSON twin. The server (:mod:`claimtrace.web.app`, its routes made from this registry by
:mod:`claimtrace.web.routes`) and the static export (:mod:`claimtrace.web.site`) both go through
:data:`PAGES`, so a page is the same wherever it is read, and a new page is one entry here.

Addresses: the export writes ``file`` (and ``twin``) relative to its folder; the server answers
the same at ``/`` + ``file`` (and ``/`` + ``twin``). A page with one file per claim or per split
answers at one route ending in ``{name}``: the key, then the format's suffix (``.json`` asks for
the twin, ``.html`` or none for the page), as ``/claim/claim-752.json``. A page's ``aliases`` are
the server's other addresses for it (``/`` for the landing's ``index.html``, ``/walkthrough``, ``/explore``
for dev's Explore, ``/live.json`` for a typed claim's trace, which a static site cannot hold).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from claimtrace import __version__
from claimtrace.course import WALKTHROUGH_CLAIM
from claimtrace.evaluation.scoreboard import scoreboard_rows
from claimtrace.web.live_page import live_context
from claimtrace.web.render import Renderer, claim_context, evaluation_context, root_for
from claimtrace.web.runs import with_runs
from claimtrace.web.site_data import SiteData
from claimtrace.web.views.explore import PREDICTION_SPLITS, prediction_path, row_predictions
from claimtrace.web.views.llm import AI_LOG_DATA, evaluation_data
from claimtrace.web.views.methods import series_slugs
from claimtrace.web.views.parity import parity
from claimtrace.web.views.results import results


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
    """One kind of page (or, without a template, of JSON file), as data: where it lives, the
    function its data comes from, and the template, title and names that draw it.

    ``file`` and ``twin`` hold ``{key}`` (or its parts, ``{key[0]}``) where the page has one per
    claim, per split or per run; ``key`` is a one-page entry's own (the walkthrough's claim).
    ``data_function`` gives what the page shows and its twin holds (:meth:`data`).
    ``template`` is its file in ``web/templates`` (None: a JSON file alone), which reads the data
    as ``data_name``; ``title`` is a format string of the data (``"Explore: every {data[split]}
    claim"``); ``section`` is the part of the site it belongs to (the navigation's current link,
    ``<body data-page>``; the page's name when None); ``context(renderer, data, **given)`` makes
    what else the template reads, from the data and what a route gives (a claim page's run);
    a ``kept`` page is rendered once per data and address (:meth:`Renderer.page
    <claimtrace.web.render.Renderer.page>`). ``keys(site_data, claim_ids)`` lists what an export
    writes of a page with a key, given the claims it writes per split."""

    name: str
    file: str
    twin: str | None
    data_function: Callable[..., Any]
    template: str | None
    title: str = ""
    data_name: str = "data"
    section: str | None = None
    context: Callable[..., dict] | None = None
    kept: bool = False
    keys: Callable[[SiteData, dict[str, list[str]]], Iterable[Any]] | None = None
    key: Any = None
    aliases: tuple[Address, ...] = ()

    def path(self, key: Any = None) -> str:
        return self.file.format(key=key)

    def twin_path(self, key: Any = None) -> str | None:
        return None if self.twin is None else self.twin.format(key=key)

    def data(self, site_data: SiteData, key: Any = None) -> Any:
        """What the page shows and its twin holds: ``data_function(site_data, key)`` for a page
        with a key (one per claim, split or run, or a one-page entry's own), else
        ``data_function(site_data)``."""
        if self.keyed or self.key is not None:
            return self.data_function(site_data, key)
        return self.data_function(site_data)

    def render(self, renderer: Renderer, data: Any, key: Any = None) -> str:
        """The page's HTML at its own address."""
        assert self.template is not None, self.name
        return renderer.page(self, data, root_for("/" + self.path(key)))

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


# -- the pages ----------------------------------------------------------------------------------------

#: The front door: what claimtrace is, the notebook's findings over dev, the three ways in.
LANDING = Page(
    "landing",
    "index.html",
    "index.json",
    data_function=SiteData.landing,
    template="landing.html",
    title="One climate claim through every stage of a fact-checking notebook",
    data_name="l",
    section="home",
    aliases=(Address("/", None, "html"),),
)
#: The walkthrough: claim-752 through every stage, at its own address.
WALKTHROUGH = Page(
    "walkthrough",
    "walkthrough.html",
    "walkthrough.json",
    data_function=SiteData.trace,
    template="claim.html",
    title="{data[claim][id]}: one claim through every stage",
    data_name="t",
    section="claim",
    context=claim_context,
    kept=True,
    key=WALKTHROUGH_CLAIM,
    aliases=(Address("/walkthrough", WALKTHROUGH_CLAIM, "html"),),
)
CLAIM = Page(
    "claim",
    "claim/{key}.html",
    "claim/{key}.json",
    data_function=SiteData.trace,
    template="claim.html",
    title="{data[claim][id]}: one claim through every stage",
    data_name="t",
    context=claim_context,
    kept=True,
    keys=_chosen_claims,
)


def explore_with_runs(site_data: SiteData, split: str) -> dict:
    """A split's Explore with each run of the split beside the notebook's (:func:`with_runs`)."""
    return with_runs(site_data.runs, site_data.explore(split))


EXPLORE = Page(
    "explore",
    "explore/{key}.html",
    "explore/{key}.json",
    data_function=explore_with_runs,
    template="explore.html",
    title="Explore: every {data[split]} claim",
    data_name="x",
    kept=True,
    keys=_chosen_splits,
    aliases=(Address("/explore", "dev", "html"), Address("/explore.json", "dev", "json")),
)
#: The model-input editor, on the walkthrough's claim (a typed claim needs the server). No twin:
#: the server's ``/live.json?text=`` is a typed claim's trace, which a static site cannot hold.
LIVE = Page(
    "live",
    "live.html",
    None,
    data_function=SiteData.trace,
    template="live.html",
    title="Live: trace your own claim",
    data_name="t",
    context=live_context,
    key=WALKTHROUGH_CLAIM,
    aliases=(Address("/live", WALKTHROUGH_CLAIM, "html"), Address("/live.json", WALKTHROUGH_CLAIM, "json")),
)


def course_predictions(site_data: SiteData, split: str) -> dict:
    """The build's predictions for a split, in the course's shape."""
    return site_data.build.course_predictions(split)


def scoreboard_row_predictions(site_data: SiteData, key: tuple[str, str]) -> dict:
    """A scoreboard row's predictions for a split (``key``: the split and the row's name)."""
    return row_predictions(site_data.build, *key)


PREDICTIONS = Page(
    "predictions",
    "predictions/{key}.json",
    None,
    data_function=course_predictions,
    template=None,
    keys=_chosen_splits,
)
ROW_PREDICTIONS = Page(
    "row-predictions",
    prediction_path("{key[0]}", "{key[1]}"),
    None,
    data_function=scoreboard_row_predictions,
    template=None,
    keys=_row_keys,
)


def _run_keys(site_data: SiteData, claim_ids: dict[str, list[str]]) -> list[str]:
    return [run.digest for run in site_data.runs.all()]


def run_index(site_data: SiteData) -> dict:
    """Every run compared (:meth:`claimtrace.web.runs.Runs.index`)."""
    return site_data.runs.index()


def run_report(site_data: SiteData, key: str) -> dict:
    """A run's page (:meth:`claimtrace.web.runs.Runs.report`); UnknownRun when no run has the key."""
    run = site_data.runs.get(key)
    if run is None:
        raise UnknownRun(key)
    return site_data.runs.report(run)


def class_view(site_data: SiteData) -> dict:
    """Every dev run together (:meth:`claimtrace.web.runs.Runs.class_view`)."""
    return site_data.runs.class_view()


class UnknownRun(LookupError):
    """No run has this name or digest (an upload is forgotten when the server stops)."""


#: Your system beside the notebook's: every run compared, and the way to add one.
COMPARE_INDEX = Page(
    "compare-index",
    "compare/index.html",
    "compare/index.json",
    data_function=run_index,
    template="compare_index.html",
    title="Your system beside the notebook’s",
    data_name="c",
    section="compare",
    aliases=(Address("/compare", None, "html"), Address("/compare/", None, "html")),
)
#: One run beside the notebook's pipeline, claim by claim.
COMPARE = Page(
    "compare",
    "compare/{key}.html",
    "compare/{key}.json",
    data_function=run_report,
    template="compare.html",
    title="{data[run][name]} beside the notebook’s pipeline",
    data_name="c",
    keys=_run_keys,
)
#: Every figure the course printed beside this build's, with its status and the reason.
PARITY = Page(
    "parity",
    "parity.html",
    "parity.json",
    data_function=parity,
    template="parity.html",
    title="Parity: the course’s figures beside this build’s",
    data_name="p",
    aliases=(Address("/parity", None, "html"),),
)


#: The tour: three journeys as captioned screenshots (scripts/tour.py makes them).
TOUR = Page(
    "tour",
    "tour.html",
    "tour.json",
    data_function=SiteData.tour,
    template="tour.html",
    title="The tour: three journeys, in pictures",
    data_name="tour",
    aliases=(Address("/tour", None, "html"),),
)

#: The retrieval's thresholds swept on dev: F, A, HM and the fallback share by setting, both rules.
RESULTS = Page(
    "results",
    "results.html",
    "results.json",
    data_function=results,
    template="results.html",
    title="Results: the thresholds swept on dev",
    data_name="r",
    aliases=(Address("/results", None, "html"),),
)

#: How the notebook works step by step, the data at a glance, the model cards, the data statement,
#: and the list of the statements and decisions.
METHODS = Page(
    "methods",
    "methods.html",
    "methods.json",
    data_function=SiteData.methods,
    template="methods.html",
    title="Methods: the pipeline, the models, the data",
    data_name="m",
    aliases=(Address("/methods", None, "html"),),
)


def _series_keys(site_data: SiteData, claim_ids: dict[str, list[str]]) -> list[str]:
    return series_slugs()


#: A statement (what the port assumes, its limitations, where a language model enters) or a design
#: decision, each at its own address, chained to its neighbours and back to the methods page.
METHODS_DOCUMENT = Page(
    "methods-document",
    "methods/{key}.html",
    "methods/{key}.json",
    data_function=SiteData.methods_document,
    template="methods_document.html",
    title="{data[title]}",
    data_name="d",
    section="methods",
    keys=_series_keys,
)


#: The notebook's Transformer and its LSTM retrained under several seeds, beside the build's own
#: checkpoints: whether the difference between the two survives the seeds' spread. Read afresh on
#: every request (the file grows while the seeds train).
SEEDS = Page(
    "seeds",
    "seeds.html",
    "seeds.json",
    data_function=SiteData.seeds,
    template="seeds.html",
    title="Seeds: one training run is not the model",
    data_name="s",
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
    data_function=class_view,
    template="compare_class.html",
    title="The class together",
    data_name="c",
    section="compare",
    keys=_class_keys,
)


#: Attribution methods graded against the exact per-token shares (``claimtrace attribute``).
ATTRIBUTION = Page(
    "attribution",
    "attribution.html",
    "attribution.json",
    data_function=SiteData.attribution,
    template="attribution.html",
    title="Attribution methods, graded",
    data_name="a",
    aliases=(Address("/attribution", None, "html"),),
)


def llm_evaluation(site_data: SiteData) -> dict:
    """The LLM evaluation's protocol and sample (:func:`claimtrace.web.views.llm.evaluation_data`),
    made once per build."""
    return site_data.build.once("evaluation", lambda: evaluation_data(site_data.build, __version__))


def ai_log_data(site_data: SiteData) -> dict:
    """What a record of the browser's LLM log holds (the same over any build)."""
    return AI_LOG_DATA


#: A visitor's own LLM on a seeded sample of dev claims, paired with the notebook's classifier:
#: the protocol, and the claims, passages and verdicts the browser runs it on.
EVALUATION = Page(
    "evaluation",
    "evaluation.html",
    "evaluation.json",
    data_function=llm_evaluation,
    template="evaluation.html",
    title="Would an LLM do better? Your model, paired",
    data_name="e",
    context=evaluation_context,
    aliases=(Address("/evaluation", None, "html"),),
)
#: Every call to a visitor's LLM this browser made (the log lives in the browser; its twin says
#: what a record holds).
AI_LOG = Page(
    "ai-log",
    "ai-log.html",
    "ai-log.json",
    data_function=ai_log_data,
    template="ai_log.html",
    title="Your LLM calls, kept in this browser",
    data_name="a",
    aliases=(Address("/ai-log", None, "html"),),
)
TABLE = Page("table", "api/table.json", None, data_function=SiteData.table, template=None)
BUILD = Page("build", "api/build.json", None, data_function=SiteData.build_info, template=None)

#: Every page, in the order the export writes them and the server tries their routes (a page's
#: file before another's route that would also match it: compare/index.html before compare/{name}).
PAGES = (
    LANDING,
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
    METHODS_DOCUMENT,
    SEEDS,
    EVALUATION,
    AI_LOG,
    COMPARE_INDEX,
    COMPARE_CLASS,
    COMPARE,
    CLAIM,
)
