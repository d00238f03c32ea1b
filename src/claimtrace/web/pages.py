"""The site's pages, once: where each lives, the data it shows, the template that draws it and
its JSON twin. The server (:mod:`claimtrace.web.app`, with each page's routes in
:mod:`claimtrace.web.routes`) and the static export (:mod:`claimtrace.web.site`) both go through
:data:`PAGES`, so a page is the same wherever it is read.

Addresses: the export writes ``file`` (and ``twin``) relative to its folder; the server answers
the same at ``/`` + ``file`` (and ``/`` + ``twin``), with the aliases its routes add (``/`` for
``index.html``, ``/claim/<id>`` without a suffix, ``/explore`` for dev, ``/live``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from claimtrace.course import WALKTHROUGH_CLAIM
from claimtrace.evaluation.scoreboard import scoreboard_rows
from claimtrace.web.render import Renderer, root_for
from claimtrace.web.runs import with_runs
from claimtrace.web.tracer import Tracer
from claimtrace.web.views.explore import PREDICTION_SPLITS, prediction_path, row_predictions


@dataclass(frozen=True)
class Page:
    """One kind of page (or, without a template, of JSON file).

    ``file`` and ``twin`` hold ``{key}`` where the page has one per claim or per split;
    ``data(tracer, key)`` is what the page shows and its twin holds; ``template(renderer, data,
    root)`` draws it (``root``: ``"../" * depth`` of its address); ``keys(tracer, claim_ids)``
    lists what an export writes, given the claims it writes per split."""

    name: str
    file: str
    twin: str | None
    data: Callable[[Tracer, Any], Any]
    template: Callable[[Renderer, Any, str], str] | None
    keys: Callable[[Tracer, dict[str, list[str]]], Iterable[Any]]

    def path(self, key: Any = None) -> str:
        return self.file.format(key=key)

    def twin_path(self, key: Any = None) -> str | None:
        return None if self.twin is None else self.twin.format(key=key)

    def render(self, renderer: Renderer, data: Any, key: Any = None) -> str:
        """The page's HTML at its own address."""
        assert self.template is not None, self.name
        return self.template(renderer, data, root_for("/" + self.path(key)))


def _one(tracer: Tracer, claim_ids: dict[str, list[str]]) -> list[None]:
    return [None]


def _chosen_splits(tracer: Tracer, claim_ids: dict[str, list[str]]) -> list[str]:
    return list(claim_ids)


def _chosen_claims(tracer: Tracer, claim_ids: dict[str, list[str]]) -> list[str]:
    return [claim_id for ids in claim_ids.values() for claim_id in ids]


def _row_keys(tracer: Tracer, claim_ids: dict[str, list[str]]) -> list[tuple[str, str]]:
    return [(split, row.name) for split in PREDICTION_SPLITS for row in scoreboard_rows()]


WALKTHROUGH = Page(
    "walkthrough",
    "index.html",
    "index.json",
    data=lambda tracer, key: tracer.trace(WALKTHROUGH_CLAIM),
    template=lambda renderer, trace, root: renderer.claim_page(trace, root),
    keys=_one,
)
CLAIM = Page(
    "claim",
    "claim/{key}.html",
    "claim/{key}.json",
    data=lambda tracer, claim_id: tracer.trace(claim_id),
    template=lambda renderer, trace, root: renderer.claim_page(trace, root),
    keys=_chosen_claims,
)
EXPLORE = Page(
    "explore",
    "explore/{key}.html",
    "explore/{key}.json",
    data=lambda tracer, split: with_runs(tracer.runs, tracer.explore(split)),
    template=lambda renderer, explore, root: renderer.explore_page(explore, root),
    keys=_chosen_splits,
)
#: The model-input editor, on the walkthrough's claim (a typed claim needs the server). No twin:
#: the server's ``/live.json?text=`` is a typed claim's trace, which a static site cannot hold.
LIVE = Page(
    "live",
    "live.html",
    None,
    data=lambda tracer, key: tracer.trace(WALKTHROUGH_CLAIM),
    template=lambda renderer, trace, root: renderer.live_page(root, trace, text=trace["claim"]["text"]),
    keys=_one,
)
PREDICTIONS = Page(
    "predictions",
    "predictions/{key}.json",
    None,
    data=lambda tracer, split: tracer.build.course_predictions(split),
    template=None,
    keys=_chosen_splits,
)
ROW_PREDICTIONS = Page(
    "row-predictions",
    prediction_path("{key[0]}", "{key[1]}"),
    None,
    data=lambda tracer, key: row_predictions(tracer.build, *key),
    template=None,
    keys=_row_keys,
)


def _run_keys(tracer: Tracer, claim_ids: dict[str, list[str]]) -> list[str]:
    return [run.digest for run in tracer.runs.all()]


def run_report(tracer: Tracer, key: str) -> dict:
    """A run's page (:meth:`claimtrace.web.runs.Runs.report`); UnknownRun when no run has the key."""
    run = tracer.runs.get(key)
    if run is None:
        raise UnknownRun(key)
    return tracer.runs.report(run)


class UnknownRun(LookupError):
    """No run has this name or digest (an upload is forgotten when the server stops)."""


#: Your system beside the notebook's: every run compared, and the way to add one.
COMPARE_INDEX = Page(
    "compare-index",
    "compare/index.html",
    "compare/index.json",
    data=lambda tracer, key: tracer.runs.index(),
    template=lambda renderer, data, root: renderer.compare_index(data, root),
    keys=_one,
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
TABLE = Page("table", "api/table.json", None, data=lambda tracer, key: tracer.table(), template=None, keys=_one)
BUILD = Page("build", "api/build.json", None, data=lambda tracer, key: tracer.build_info(), template=None, keys=_one)

#: Every page, in the order the export writes them.
PAGES = (WALKTHROUGH, TABLE, BUILD, LIVE, ROW_PREDICTIONS, EXPLORE, PREDICTIONS, COMPARE_INDEX, COMPARE, CLAIM)
